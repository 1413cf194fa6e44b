"""Explicit time expressions in English and Japanese, turned into a date range (standard library only).

``parse_time(text, reference)`` finds the first explicit time expression in a question and
returns the inclusive date range it names relative to the reference date, or None when the
question names no time ("recently" / 最近 name no time either: freshness stays a decay term).

Conventions (stated, because everyday speech differs):
- weeks run Monday to Sunday; "last week" / 先週 is the previous calendar week, "this week" / 今週
  runs from this week's Monday to the reference date;
- "last weekend" / 先週末 is the Saturday and Sunday of the previous calendar week;
- "last Friday", "on Friday", 金曜日: the most recent Friday strictly before the reference date;
  先週の金曜 (last week's Friday): the Friday of the previous calendar week;
- a date without a year (Sep 1, 9/1, 9月1日) is the most recent such date not after the reference;
- "this morning", "tonight", "today", 今朝, 今夜, 今日: the reference date; "last night": yesterday.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta


@dataclass(frozen=True)
class DateRange:
    start: date
    end: date  # inclusive
    matched: str

    def as_dict(self) -> dict[str, str]:
        return {"start": self.start.isoformat(), "end": self.end.isoformat(), "matched": self.matched}


WEEKDAYS_EN = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
WEEKDAYS_JA = ("月", "火", "水", "木", "金", "土", "日")
MONTHS_EN = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a": 1,
    "an": 1,
}


def _monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _last_weekday_before(ref: date, weekday: int) -> date:
    back = (ref.weekday() - weekday) % 7 or 7
    return ref - timedelta(days=back)


def _month_day(ref: date, month: int, day: int) -> date | None:
    for year in (ref.year, ref.year - 1):
        try:
            d = date(year, month, day)
        except ValueError:
            return None
        if d <= ref:
            return d
    return None


def _calendar(year: int, month: int, day: int) -> date | None:
    """A date, or None when there is no such day (2026-02-30), as for 2/30."""
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _one(d: date | None) -> tuple[date, date] | None:
    return None if d is None else (d, d)


def _number(token: str) -> int:
    return int(token) if token.isdigit() else NUMBER_WORDS[token]


_NUM = r"(\d{1,3}|one|two|three|four|five|six|seven|eight|nine|ten|an?)"
_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"  # noqa: E501
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_WEEKDAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"


def _month_index(token: str) -> int:
    return next(i for i, m in enumerate(MONTHS_EN, start=1) if m.startswith(token[:3].lower()))


Resolver = Callable[[re.Match[str], date], "tuple[date, date] | None"]

# Most specific first: the first pattern that matches anywhere in the text wins.
RULES: tuple[tuple[str, Resolver], ...] = (
    (r"\b(\d{4})-(\d{2})-(\d{2})\b", lambda m, r: _one(_calendar(int(m[1]), int(m[2]), int(m[3])))),
    (
        r"(?:\b(?:the )?day before yesterday\b|\bthe night before last\b|一昨日|おととい)",
        lambda m, r: _one(r - timedelta(days=2)),
    ),
    (r"\b(?:yesterday|last night)\b|昨日|昨夜|ゆうべ", lambda m, r: _one(r - timedelta(days=1))),
    (rf"\b{_NUM} days? ago\b", lambda m, r: _one(r - timedelta(days=_number(m[1])))),
    (r"(?<!\d)(\d{1,3})日前", lambda m, r: _one(r - timedelta(days=int(m[1])))),
    (
        rf"\b{_NUM} weeks? ago\b",
        lambda m, r: (
            _monday(r) - timedelta(weeks=_number(m[1])),
            _monday(r) - timedelta(weeks=_number(m[1])) + timedelta(days=6),
        ),
    ),
    (
        r"(?<!\d)(\d{1,2})週間前",
        lambda m, r: (
            _monday(r) - timedelta(weeks=int(m[1])),
            _monday(r) - timedelta(weeks=int(m[1]), days=-6),
        ),
    ),
    (
        r"\blast weekend\b|先週末",
        lambda m, r: (_monday(r) - timedelta(days=2), _monday(r) - timedelta(days=1)),
    ),
    (
        r"先週の([月火水木金土日])(?:曜日?)?",
        lambda m, r: _one(_monday(r) - timedelta(days=7 - WEEKDAYS_JA.index(m[1]))),
    ),
    (
        rf"\blast {_WEEKDAY}\b|\bon {_WEEKDAY}\b",
        lambda m, r: _one(_last_weekday_before(r, WEEKDAYS_EN.index((m[1] or m[2]).lower()))),
    ),
    (r"([月火水木金土日])曜日?", lambda m, r: _one(_last_weekday_before(r, WEEKDAYS_JA.index(m[1])))),
    (r"\blast week\b|先週", lambda m, r: (_monday(r) - timedelta(days=7), _monday(r) - timedelta(days=1))),
    (r"\bthis week\b|今週", lambda m, r: (_monday(r), r)),
    (
        r"\blast month\b|先月",
        lambda m, r: (
            (r.replace(day=1) - timedelta(days=1)).replace(day=1),
            r.replace(day=1) - timedelta(days=1),
        ),
    ),
    (r"\bthis month\b|今月", lambda m, r: (r.replace(day=1), r)),
    (rf"\b{_MONTH}\.? {_DAY}\b", lambda m, r: _one(_month_day(r, _month_index(m[1]), int(m[2])))),
    (rf"\b{_DAY} (?:of )?{_MONTH}\b", lambda m, r: _one(_month_day(r, _month_index(m[2]), int(m[1])))),
    (r"(?<!\d)(\d{1,2})月(\d{1,2})日", lambda m, r: _one(_month_day(r, int(m[1]), int(m[2])))),
    (r"(?<![\d/])(\d{1,2})/(\d{1,2})(?![\d/])", lambda m, r: _one(_month_day(r, int(m[1]), int(m[2])))),
    (r"\b(?:this morning|tonight|this evening|today)\b|今朝|今夜|今晩|今日", lambda m, r: _one(r)),
)
_COMPILED = tuple((re.compile(p, re.IGNORECASE), f) for p, f in RULES)


def parse_time(text: str, reference: date | datetime) -> DateRange | None:
    """The date range the first explicit time expression in ``text`` names, or None."""
    ref = reference.date() if isinstance(reference, datetime) else reference
    normal = unicodedata.normalize("NFKC", text)  # full-width digits and spaces
    for pattern, resolve in _COMPILED:
        m = pattern.search(normal)
        if m is None:
            continue
        try:
            span = resolve(m, ref)
        except OverflowError:  # before year 1 (999日前 of 0001-01-05): no date names it
            span = None
        if span is None:  # an impossible date such as 2/30
            return None
        return DateRange(span[0], span[1], m.group(0))
    return None  # no explicit time: "recently", 最近 and the like are no gate
