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
