"""JSON lines read by orjson where json would read them the same, by json elsewhere: every line
of a hostile table gives the same objects and the same located problems as json alone."""

from __future__ import annotations

import pytest

from memlab.core.errors import InputError
from memlab.datasets import records
from memlab.datasets.querylog import load_log

LINES = [
    '{"id": "a", "vector": [0.5, -0.25, 1e-300, 3], "time": "2026-09-01"}',
    '{"id": 18446744073709551616, "vector": [1, 0], "time": 1}',  # past 64 bits: json keeps an int
    '{"id": "b", "vector": [1, 0], "time": -9223372036854775809}',
    '{"id": "c", "vector": [9223372036854775808, 1], "time": 5}',
    '{"id": "d", "vector": [NaN, 1], "time": 5}',
    '{"id": "e", "vector": [1e400, 1], "time": 5}',
    '{"id": "f\\ud800", "vector": [1, 0], "time": 5}',
    '{"id": "g", "vector": [1, 0], "time": 5, "extra": ' + "[" * 300 + "]" * 300 + "}",
    '{"id": "h", "vector": [1, 0], "time": 5, "extra": ' + "[" * 5000 + "]" * 5000 + "}",
    '{"id": "i", "vector": [1, 0], "time": 5, "id": "i2"}',
    '{"id": "j", "vector": [1, 0], "time": 5} trailing',
    '{"id": "k", "vector": [], "time": "2026-09-01T10:00:00+02:00", "extra": {"n": [1e18, "x", [2]]}}',
    "[1, 2]",
    '"text"',
    "",
    "   ",
    '{"id": "l", "text": "caf\\u00e9 \\u0000", "time": 5}',
    '{"id": "m", "vector": [1, 0], "time": 5, "extra": {"big": 9.3e18}}',
]


def read(path):
    problems: list[str] = []
    return [*records.read_jsonl(path, problems)], problems


@pytest.mark.hostile
@pytest.mark.parametrize("line", LINES)
def test_each_line_reads_as_json_reads_it(tmp_path, monkeypatch, line):
    path = tmp_path / "log.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    fast = read(path)
    monkeypatch.setattr(records, "fast_object", lambda raw: None)
    slow = read(path)
    assert repr(fast) == repr(slow)  # repr: NaN equal to itself, int apart from float


@pytest.mark.hostile
def test_the_fast_reader_is_used_and_numbers_keep_their_type(tmp_path):
    assert records.fast_object(b'{"a": [0.1, 2]}') == {"a": [0.1, 2]}
    assert records.fast_object(b'{"a": 18446744073709551616}') is None  # json's int, not orjson's float
    assert records.fast_object(b'{"a": [' + b"[" * 250 + b"]" * 250 + b"]}") is None
    assert records.fast_object(b'{"a": NaN}') is None


@pytest.mark.hostile
def test_a_log_of_the_table_gives_json_s_first_problem(tmp_path, monkeypatch):
    path = tmp_path / "log.jsonl"
    path.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    with pytest.raises(InputError) as fast:
        load_log(path)
    monkeypatch.setattr(records, "fast_object", lambda raw: None)
    with pytest.raises(InputError) as slow:
        load_log(path)
    assert str(fast.value) == str(slow.value)
    assert "more problems in the log" in str(fast.value)
