"""Counts in messages: the noun agrees with its number."""

from __future__ import annotations

import json

import pytest

from memlab.app.cli import main
from memlab.core.numbers import counted, plural


@pytest.mark.parametrize(
    ("count", "noun", "said"),
    [
        (1, "probe", "1 probe"),
        (0, "probe", "0 probes"),
        (3, "probe", "3 probes"),
        (1, "memory", "1 memory"),
        (2, "memory", "2 memories"),
        (2, "reply", "2 replies"),
        (2, "query", "2 queries"),
        (2, "day", "2 days"),  # a vowel before the y: just s
        (1, "question", "1 question"),
    ],
)
def test_the_noun_agrees_with_the_count(count, noun, said):
    assert counted(count, noun) == said
    assert plural(count, noun) == said.split(" ", 1)[1]


def test_validate_says_one_memory_and_one_question(tmp_path, capsys):
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / "dataset.json").write_text(json.dumps({"name": "one", "reference_date": "2026-09-10"}))
    (folder / "memories.jsonl").write_text(
        json.dumps({"id": "m1", "date": "2026-09-01", "text": "2026-09-01: The user drinks café au lait."}) + "\n"
    )
    (folder / "questions.jsonl").write_text(
        json.dumps({"id": "q1", "kind": "hit", "text": "What does the user drink?", "relevant": ["m1"]}) + "\n"
    )
    assert main(["validate", str(folder)]) == 0
    assert capsys.readouterr().out.startswith(f"{folder}: ok: 1 memory, 1 question (1 hit, 0 contradiction")
