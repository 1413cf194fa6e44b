"""Seeded generators for datasets that the seed fixture cannot test.

``daily_lunch``: many near-duplicate daily events. One lunch a day for ``days`` days (the same
few dishes, so many memories differ only by their date) and a few other daily memories, with
questions that name a day ("yesterday", "on August 14", 3日前, 先週の金曜) and questions nothing
answers. Only time can tell the lunches apart: the seed 002's "you ate lunch fifty times"
case. A lunch question's ``current`` is that day's lunch and its ``stale`` list every other
lunch the question can see, so a wrong day's lunch in the prompt counts as a stale injection.

The packaged ``memlab/datasets/packaged/daily-lunch`` is ``daily_lunch()`` with its defaults (a test checks
that they agree); ``memlab generate daily-lunch OUT --seed S --days N`` writes other variants.
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import numpy as np

from memlab.core.errors import InputError
from memlab.core.numbers import check_number
from memlab.core.registry import lookup
from memlab.datasets.timeparse import parse_time

# (English, Japanese): dishes and places are drawn with replacement, so dishes repeat
DISHES = (
    ("ramen", "ラーメン"),
    ("udon", "うどん"),
    ("soba", "そば"),
    ("curry rice", "カレーライス"),
    ("sushi", "寿司"),
    ("onigiri", "おにぎり"),
    ("a sandwich", "サンドイッチ"),
    ("pasta", "パスタ"),
    ("a bento", "弁当"),
    ("gyudon", "牛丼"),
    ("fried rice", "チャーハン"),
    ("gyoza", "餃子"),
)
PLACES = (
    ("at the office", "会社で"),
    ("at home", "家で"),
    ("near the station", "駅の近くで"),
    ("at a café", "カフェで"),
)
OTHER_EVENTS = (
    ("went for an evening walk", "夜に散歩した"),
    ("worked on the voice device", "音声デバイスの作業をした"),
    ("watched an episode of an anime", "アニメを一話見た"),
    ("went to the gym", "ジムに行った"),
)


def _lunch_questions(
    reference: date, asked_on: dict[str, date]
) -> list[tuple[str, str, str, date, date | None]]:
    """(id, English, Japanese, the lunch's day, the day asked if not the reference)."""
    r = reference
    return [
        ("L1", "What did I have for lunch yesterday?", "昨日の昼ごはんは何だった？", r - timedelta(1), None),
        (
            "L2",
            "What did I eat for lunch the day before yesterday?",
            "一昨日のお昼は何を食べた？",
            r - timedelta(2),
            None,
        ),
        (
            "L3",
            "What did I have for lunch 3 days ago?",
            "3日前の昼は何を食べたっけ？",
            r - timedelta(3),
            None,
        ),
        # 金曜日 (not 先週の金曜, the previous calendar week's): the last Friday, as in English
        ("L4", "What did I have for lunch last Friday?", "金曜日の昼ごはんは？", _last_friday(r), None),
        (
            "L5",
            "What did I have for lunch on August 14?",
            "8月14日のお昼は何だった？",
            _recent(r, 8, 14),
            None,
        ),
        ("L6", "What did I have for lunch on 8/3?", "8月3日の昼ごはんは？", _recent(r, 8, 3), None),
        (
            "L7",
            "What did I eat for lunch on July 25th?",
            "7月25日のお昼は何を食べた？",
            _recent(r, 7, 25),
            None,
        ),
        (
            "L8",
            "What did I have for lunch yesterday?",
            "昨日の昼ごはんは何だった？",
            asked_on["L8"] - timedelta(1),
            asked_on["L8"],
        ),
    ]


def _recent(reference: date, month: int, day: int) -> date:
    """The most recent such day not after the reference (a date named without a year)."""
    this_year = date(reference.year, month, day)
    return this_year if this_year <= reference else date(reference.year - 1, month, day)


def _last_friday(reference: date) -> date:
    back = (reference.weekday() - 4) % 7 or 7
    return reference - timedelta(back)


NOHIT_QUESTIONS = (
    ("LN1", "What did I have for dinner yesterday?", "昨日の晩ごはんは何だった？", "no dinner is stored"),
    (
        "LN2",
        "What did I have for breakfast this morning?",
        "今朝の朝ごはんは何だった？",
        "no breakfast is stored",
    ),
    (
        "LN3",
        "How do quantum computers work?",
        "量子コンピュータってどういう仕組み？",
        "no time named, nothing related",
    ),
)


MAX_DAYS = 36_525  # a century of lunches: about 55,000 memories


def daily_lunch(seed: int = 0, days: int = 50, reference: date = date(2026, 9, 10)) -> dict[str, str]:
    """The dataset's files (dataset.json, memories.jsonl, questions.jsonl) as text."""
    check_number(seed, "seed", integer=True, minimum=0)
    check_number(days, "days", integer=True, minimum=1, maximum=MAX_DAYS)  # one memory or two a day
    if reference.year < 2 or reference - date.min < timedelta(
        days=days
    ):  # questions name days up to a year back
        raise InputError(
            f"--reference {reference}: the questions and {days} days of lunches would reach back before "
            "year 1: pick a later day"
        )
    lunch_questions = _lunch_questions(reference, {"L8": reference - timedelta(20)})
    oldest = min(day for *_, day, _ in lunch_questions)
    if reference - timedelta(days) > oldest:
        raise InputError(
            f"days must be >= {(reference - oldest).days} so every question's day holds a lunch "
            f"(the oldest asked about is {oldest}), got {days}"
        )
    rng = np.random.default_rng(seed)
    memories = []
    lunch_of: dict[date, str] = {}
    first = reference - timedelta(days)
    for i in range(days):
        day = first + timedelta(i)
        dish, dish_ja = DISHES[rng.integers(len(DISHES))]
        place, place_ja = PLACES[rng.integers(len(PLACES))]
        mid = f"d{i + 1:03d}"
        lunch_of[day] = mid
        memories.append(
            {
                "id": mid,
                "date": f"{day.isoformat()}T12:30:00",
                "text": f"{day.isoformat()}: The user had {dish} for lunch {place}.",
                "text_ja": f"{day.isoformat()}: ユーザーは昼に{place_ja}{dish_ja}を食べた",
                "topic": "lunch",
                "type": "event",
                "provenance": "synthetic",
            }
        )
        if rng.random() < 0.3:  # some evenings hold another event, never a meal
            what, what_ja = OTHER_EVENTS[rng.integers(len(OTHER_EVENTS))]
            memories.append(
                {
                    "id": f"e{i + 1:03d}",
                    "date": f"{day.isoformat()}T20:00:00",
                    "text": f"{day.isoformat()}: The user {what}.",
                    "text_ja": f"{day.isoformat()}: ユーザーは{what_ja}",
                    "topic": "evening",
                    "type": "event",
                    "provenance": "synthetic",
                }
            )
    questions = []
    for qid, en, ja, day, asked in lunch_questions:
        # a guard, not the source of the labels: both wordings must name the labelled day
        for text in (en, ja):
            named = parse_time(text, asked or reference)
            if named is None or not named.start <= day <= named.end:
                raise InputError(
                    f"question {qid} {text!r} asked on {asked or reference} names {named}, not {day}"
                )
        current = lunch_of[day]
        when = asked or reference
        stale = [m for d, m in sorted(lunch_of.items()) if m != current and d <= when]
        q = {
            "id": qid,
            "kind": "time",
            "text": en,
            "text_ja": ja,
            "relevant": [current],
            "current": current,
            "stale": stale,
            "provenance": "synthetic",
            "note": f"the lunch of {day.isoformat()}",
        }
        if asked is not None:
            q["date"] = f"{asked.isoformat()}T21:00:00"
        questions.append(q)
    for qid, en, ja, note in NOHIT_QUESTIONS:
        questions.append(
            {
                "id": qid,
                "kind": "nohit",
                "text": en,
                "text_ja": ja,
                "relevant": [],
                "stale": [],
                "provenance": "synthetic",
                "note": note,
            }
        )
    meta = {
        "name": "daily-lunch",
        "reference_date": f"{reference.isoformat()}T21:00:00",
        "language": "en",
        "languages": ["en", "ja"],
        "description": (
            f"{days} daily lunches from {first.isoformat()} to {reference - timedelta(1)} drawn from "
            f"{len(DISHES)} dishes (so many differ only by date), some evening events, questions naming a "
            "day (L1-L8; L8 is asked 20 days earlier) and questions nothing answers (LN1-LN3)."
        ),
        "provenance": (
            f"memlab.datasets.generate.daily_lunch(seed={seed}, days={days}, reference={reference})"
        ),
    }

    def jsonl(rows: list[dict]) -> str:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)

    return {
        "dataset.json": json.dumps(meta, indent=2, ensure_ascii=False) + "\n",
        "memories.jsonl": jsonl(memories),
        "questions.jsonl": jsonl(questions),
    }


GENERATORS = {"daily-lunch": daily_lunch}


def write_generated(name: str, out: str | Path, **options) -> Path:
    """Generate a dataset and write its folder atomically, checked by the loader first."""
    from memlab.core.files import write_folder_atomically
    from memlab.datasets.schema import load_dataset

    generator = lookup(GENERATORS, name, "generator")
    files = generator(**options)
    # the dataset is named after its folder, so a variant never passes for the packaged one
    meta = json.loads(files["dataset.json"])
    files["dataset.json"] = json.dumps({**meta, "name": Path(out).name}, indent=2, ensure_ascii=False) + "\n"
    return write_folder_atomically(out, files, check=load_dataset)
