"""Counts in messages: the noun agrees with its number."""

from __future__ import annotations

import pytest

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


@pytest.mark.parametrize(
    ("value", "threshold", "shown"),
    [
        (0.87461, 0.875, "0.8746"),  # rounded to 3 it would read as the threshold, which it is below
        (0.87541, 0.875, "0.8754"),
        (0.875, 0.875, "0.875"),  # on the threshold: reaches it, and reads so
        (0.8, 0.875, "0.800"),
        (0.874996, 0.875, "0.874996"),
        (float("inf"), 0.875, "inf"),
        (None, 0.875, "-"),
    ],
)
def test_a_score_beside_its_threshold_shows_which_side_it_is_on(value, threshold, shown):
    from memlab.app.cli.options import fmt

    assert fmt(value, beside=threshold) == shown
    assert fmt(value) == ("-" if value is None else f"{value:.3f}")


def test_one_mistake_on_every_record_is_said_once_with_the_lines_counted():
    from memlab.datasets.records import collapse_repeats

    problems = [
        "memories.jsonl:1: text_ja: unknown field",
        "memories.jsonl:1: text_en: missing",
        "memories.jsonl:2: text_ja: unknown field",
        "memories.jsonl:2: text_en: missing",
        "memories.jsonl:3: text_ja: unknown field",
        "memories.jsonl:3: date: not a date",
        "memories.jsonl:5: text_ja: unknown field",
        "questions.jsonl:1: kind: unknown",
    ]
    assert collapse_repeats(problems) == [
        "memories.jsonl:1: text_ja: unknown field (and on 3 more lines: 2, 3, 5)",
        "memories.jsonl:1: text_en: missing",  # twice only: both kept
        "memories.jsonl:2: text_en: missing",
        "memories.jsonl:3: date: not a date",
        "questions.jsonl:1: kind: unknown",
    ]
    assert collapse_repeats([f"q.jsonl:{i}: id: missing" for i in range(4, 9)]) == [
        "q.jsonl:4: id: missing (and on 4 more lines: 5-8)"
    ]


def test_a_missing_dataset_json_is_one_line(tmp_path, capsys):
    from memlab.app.cli import main

    folder = tmp_path / "nojson"
    folder.mkdir()
    (folder / "memories.jsonl").write_text(
        "".join(f'{{"id": "m{i}", "date": "2026-09-01", "text_ja": "2026-09-01: x"}}\n' for i in range(5))
    )
    (folder / "questions.jsonl").write_text("")
    assert main(["validate", str(folder)]) == 2
    assert (
        capsys.readouterr().err
        == f"memlab: invalid dataset:\n{folder}/dataset.json: file missing in {folder}\n"
    )
