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
