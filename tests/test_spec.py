"""The spec's formulas and the one-config reference, on cases small enough to check on paper."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pytest

from memlab.core.spec import (
    RetrievalSpec,
    age_days,
    final_score,
    recency_bonus,
    recency_weight,
    retrieve,
)


def test_bonus_figures_from_the_seed():
    # "+0.047 for a one-day-old memory, +0.018 at two weeks, and +0.006 at one month"
    b = recency_bonus(np.array([1.0, 14.0, 30.0]), 0.05, 14.0)
    assert np.round(b, 3).tolist() == [0.047, 0.018, 0.006]
    assert b[1] == pytest.approx(0.05 / math.e)


def test_weight_is_one_at_age_zero_and_one_over_e_at_tau():
    assert recency_weight(0.0, 14.0) == 1.0
    assert recency_weight(30.0, 30.0) == pytest.approx(1 / math.e)


def test_final_score_adds_the_bonus():
    assert final_score(0.441, 9.0, 0.05, 14.0) == pytest.approx(0.441 + 0.05 * math.exp(-9 / 14))


def test_age_is_fractional_days():
    dates = np.array(["2026-09-09T12:00:00", "2026-09-01", "2026-09-10"], dtype="datetime64[s]")
    ref = datetime(2026, 9, 10, tzinfo=UTC)
    assert age_days(dates, ref).tolist() == [0.5, 9.0, 0.0]


IDS = ("a", "b", "c", "d")


def test_candidates_limit_applies_before_the_bonus():
    # d has the largest bonus but is 4th by raw: with candidates=3 it is never seen.
    raw = np.array([0.50, 0.49, 0.48, 0.47])
    ages = np.array([30.0, 30.0, 30.0, 0.0])
    spec = RetrievalSpec(candidates=3, inject=3, threshold=0.0, bonus=0.1, tau_days=1.0)
    assert [c.memory_id for c in retrieve(raw, ages, IDS, spec)] == ["a", "b", "c"]
    spec4 = RetrievalSpec(candidates=4, inject=3, threshold=0.0, bonus=0.1, tau_days=1.0)
    got = retrieve(raw, ages, IDS, spec4)
    assert [c.memory_id for c in got] == ["d", "a", "b", "c"]
    assert got[0].final == pytest.approx(0.57)
    assert [c.injected for c in got] == [True, True, True, False]


def test_threshold_is_inclusive_and_inject_caps():
    raw = np.array([0.45, 0.46, 0.44, 0.47])
    spec = RetrievalSpec(candidates=4, inject=2, threshold=0.45, bonus=0.0)
    got = retrieve(raw, np.zeros(4), IDS, spec)
    assert [(c.memory_id, c.reaches, c.injected) for c in got] == [
        ("d", True, True),
        ("b", True, True),
        ("a", True, False),
        ("c", False, False),
    ]


def test_ties_raw_then_fixture_order():
    # equal raw: fixture order decides which become candidates
    raw = np.array([0.40, 0.40, 0.40, 0.30])
    spec = RetrievalSpec(candidates=2, inject=2, threshold=0.0, bonus=0.0)
    assert [c.memory_id for c in retrieve(raw, np.zeros(4), IDS, spec)] == ["a", "b"]
    # equal final (0.5 = 0.5 + 0 = 0.25 + 0.25, exact in binary): the higher raw score first
    raw = np.array([0.125, 0.5, 0.25, 0.25])
    ages = np.array([np.inf, np.inf, np.inf, 0.0])
    spec = RetrievalSpec(candidates=4, inject=4, threshold=0.0, bonus=0.25, tau_days=1.0)
    got = retrieve(raw, ages, IDS, spec)
    assert [(c.memory_id, c.final) for c in got] == [("b", 0.5), ("d", 0.5), ("c", 0.25), ("a", 0.125)]
    # equal final and equal raw: fixture order
    got = retrieve(
        np.array([0.5, 0.5, 0.25, 0.25]),
        np.zeros(4),
        IDS,
        RetrievalSpec(candidates=4, inject=4, threshold=0.0, bonus=0.0),
    )
    assert [c.memory_id for c in got] == ["a", "b", "c", "d"]


def test_unknown_scores_are_never_candidates():
    raw = np.array([np.nan, 0.2, np.nan, 0.1])
    spec = RetrievalSpec(candidates=8, inject=3, threshold=0.0, bonus=0.0)
    assert [c.memory_id for c in retrieve(raw, np.zeros(4), IDS, spec)] == ["b", "d"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"candidates": 0}, "candidates: expected an integer in [1, 2147483647], got 0"),
        ({"inject": 2.5}, "inject: expected an integer in [1, 2147483647], got 2.5"),
        ({"tau_days": 0}, "tau_days: expected a finite number > 0, got 0"),
        ({"bonus": -0.01}, "bonus: expected a finite number >= 0, got -0.01"),
        ({"threshold": float("nan")}, "threshold: expected a finite number, got nan"),
    ],
)
def test_spec_rejects_bad_values(kwargs, message):
    with pytest.raises(ValueError) as e:
        RetrievalSpec(**kwargs)
    assert str(e.value) == message
