"""Explicit time expressions, English and Japanese, against ranges worked out by hand.

The reference date 2026-09-10 is a Thursday: this week runs Mon 09-07 .. Sun 09-13, last week
Mon 08-31 .. Sun 09-06.
"""

from __future__ import annotations

import json
from datetime import date

import pytest

from memlab.app.cli import main
from memlab.datasets.timeparse import parse_time

THU = date(2026, 9, 10)
MON = date(2026, 9, 7)
SUN = date(2026, 9, 13)
JAN = date(2026, 1, 5)  # a Monday in January

CASES = [
    # (reference, text, expected start, expected end) with None for "no gate"
    (THU, "What did I eat yesterday?", "2026-09-09", "2026-09-09"),
    (THU, "Where was I last night?", "2026-09-09", "2026-09-09"),
    (THU, "what did I cook the day before yesterday?", "2026-09-08", "2026-09-08"),
    (THU, "the night before last, what did we talk about", "2026-09-08", "2026-09-08"),
    (THU, "day before yesterday", "2026-09-08", "2026-09-08"),
    (THU, "3 days ago", "2026-09-07", "2026-09-07"),
    (THU, "three days ago", "2026-09-07", "2026-09-07"),
    (THU, "a day ago", "2026-09-09", "2026-09-09"),
    (THU, "10 days ago", "2026-08-31", "2026-08-31"),
    (THU, "what was I doing last week?", "2026-08-31", "2026-09-06"),
    (THU, "two weeks ago", "2026-08-24", "2026-08-30"),
    (THU, "anything new this week?", "2026-09-07", "2026-09-10"),
    (THU, "last month", "2026-08-01", "2026-08-31"),
    (THU, "this month", "2026-09-01", "2026-09-10"),
    (THU, "how was last weekend?", "2026-09-05", "2026-09-06"),
    (THU, "last Friday", "2026-09-04", "2026-09-04"),
    (THU, "last Monday", "2026-09-07", "2026-09-07"),
    (THU, "last Thursday", "2026-09-03", "2026-09-03"),
    (THU, "what did I buy on Saturday?", "2026-09-05", "2026-09-05"),
    (THU, "Sep 1", "2026-09-01", "2026-09-01"),
    (THU, "on September 1st", "2026-09-01", "2026-09-01"),
    (THU, "the 1st of September", "2026-09-01", "2026-09-01"),
    (THU, "on 9/1", "2026-09-01", "2026-09-01"),
    (THU, "2026-09-01", "2026-09-01", "2026-09-01"),
    (THU, "Sep 20", "2025-09-20", "2025-09-20"),  # not yet this year: last year's
    (THU, "Aug. 28", "2026-08-28", "2026-08-28"),
    (THU, "this morning", "2026-09-10", "2026-09-10"),
    (THU, "tonight", "2026-09-10", "2026-09-10"),
    (THU, "What's on today?", "2026-09-10", "2026-09-10"),
    (THU, "what have I been drinking recently?", None, None),
    (THU, "lately", None, None),
    (THU, "How do I take my coffee again?", None, None),
    (THU, "what about 2/30?", None, None),  # no such date
    (THU, "and on 2026-02-30?", None, None),  # no such date, written in full
    # Japanese
    (THU, "昨日なに食べたっけ", "2026-09-09", "2026-09-09"),
    (THU, "一昨日の夜", "2026-09-08", "2026-09-08"),
    (THU, "おとといの話", "2026-09-08", "2026-09-08"),
    (THU, "3日前", "2026-09-07", "2026-09-07"),
    (THU, "３日前に何してた？", "2026-09-07", "2026-09-07"),  # full-width digit
    (THU, "先週なにしてたっけ", "2026-08-31", "2026-09-06"),
    (THU, "今週", "2026-09-07", "2026-09-10"),
    (THU, "先月", "2026-08-01", "2026-08-31"),
    (THU, "今月", "2026-09-01", "2026-09-10"),
    (THU, "先週末どこ行った？", "2026-09-05", "2026-09-06"),
    (THU, "先週の金曜", "2026-09-04", "2026-09-04"),
    (THU, "先週の月曜日", "2026-08-31", "2026-08-31"),
    (THU, "金曜日に買ったもの", "2026-09-04", "2026-09-04"),
    (THU, "9月1日", "2026-09-01", "2026-09-01"),
    (THU, "今朝", "2026-09-10", "2026-09-10"),
    (THU, "今夜", "2026-09-10", "2026-09-10"),
    (THU, "昨夜", "2026-09-09", "2026-09-09"),
    (THU, "2週間前", "2026-08-24", "2026-08-30"),
    (THU, "最近なに飲んでる？", None, None),
    (THU, "私コーヒーどうやって飲むんだっけ", None, None),
    # other reference days: the edges of weeks, months and years
    (MON, "this week", "2026-09-07", "2026-09-07"),
    (MON, "last Monday", "2026-08-31", "2026-08-31"),  # strictly before the reference
    (MON, "yesterday", "2026-09-06", "2026-09-06"),
    (SUN, "last weekend", "2026-09-05", "2026-09-06"),
    (SUN, "last week", "2026-08-31", "2026-09-06"),
    (JAN, "last month", "2025-12-01", "2025-12-31"),
    (JAN, "Dec 31", "2025-12-31", "2025-12-31"),
    (JAN, "先週", "2025-12-29", "2026-01-04"),
]


@pytest.mark.parametrize(("ref", "text", "start", "end"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_expression(ref, text, start, end):
    got = parse_time(text, ref)
    if start is None:
        assert got is None
    else:
        assert got is not None, text
        assert (got.start.isoformat(), got.end.isoformat()) == (start, end)


def test_timeparse_command(capsys):
    assert main(["timeparse", "what did I eat the day before yesterday?"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "start": "2026-09-08",
        "end": "2026-09-08",
        "matched": "the day before yesterday",
    }
    assert main(["timeparse", "最近", "--ref", "2026-09-10"]) == 0
    assert capsys.readouterr().out == "null\n"
    assert main(["timeparse", "先週末", "--ref", "2026-09-13"]) == 0
    assert json.loads(capsys.readouterr().out)["start"] == "2026-09-05"
