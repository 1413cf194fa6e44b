"""Issue 39, second pass: the recency term and the sweep's re-sort each computed in one place
(``RetrievalSpec.scored``, ``memlab.core.ranking.candidate_resort``), held to values on paper and
to the rule they stand for."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memlab.core.ranking import candidate_order, candidate_resort, resort_order
from memlab.core.spec import RetrievalSpec


@pytest.mark.parametrize(
    ("decay", "combine", "weight"),
    [("exp", "add", math.exp(-1)), ("gauss", "add", math.exp(-1)), ("lin", "mult", math.exp(-1))],
)
def test_scored_at_age_tau_adds_bonus_over_e(decay, combine, weight):
    # every decay family weighs a memory tau days old by 1/e
    spec = RetrievalSpec(bonus=0.05, tau_days=14.0, decay=decay, combine=combine)
    final, added = spec.scored(np.array([0.5, 0.8]), np.array([14.0, 0.0]))
    if combine == "add":
        expect = [0.5 + 0.05 * weight, 0.8 + 0.05]
        assert added.tolist() == pytest.approx([0.05 * weight, 0.05], abs=1e-15)
    else:
        expect = [0.5 * (1 + 0.05 * weight), 0.8 * 1.05]
        assert added.tolist() == pytest.approx([0.5 * 0.05 * weight, 0.8 * 0.05], abs=1e-15)
    assert final.tolist() == pytest.approx(expect, abs=1e-15)
    assert np.array_equal(final, spec.final(np.array([0.5, 0.8]), np.array([14.0, 0.0])))


def test_a_memory_from_the_future_gets_no_bonus():
    final, added = RetrievalSpec().scored(np.array([0.6]), np.array([np.inf]))
    assert final.tolist() == [0.6] and added.tolist() == [0.0]


def test_candidate_resort_is_the_resort_of_candidates_in_candidate_order():
    rng = np.random.default_rng(7)
    for _ in range(200):
        # coarse scores, so raw and final scores tie often
        raw = rng.integers(0, 4, 9) / 4
        final = raw + rng.integers(0, 3, 9) / 8
        order = candidate_order(raw)
        in_order_raw, in_order_final = raw[order], final[order]
        assert np.array_equal(candidate_resort(in_order_final), resort_order(in_order_raw, in_order_final))


def test_candidate_resort_on_paper():
    # candidates in candidate order; the 2nd and 3rd tie on their final: the earlier stays first
    assert candidate_resort(np.array([0.50, 0.70, 0.70, 0.60])).tolist() == [1, 2, 3, 0]
