"""The feasible region and MMR: with diversity the region has no closed form and is refused in one
line; at diversity 0 MMR picks by relevance alone, so the region is the plain spec's."""

from __future__ import annotations

import pytest

from memlab.core.criteria import SEED_CRITERIA
from memlab.core.errors import InputError
from memlab.core.feasible import criterion_regions, feasible_bonus
from memlab.core.labels import Labels
from memlab.core.spec import RetrievalSpec, age_days


def test_diversity_is_refused_and_names_the_way_out(seed, published):
    ages = age_days(seed.memory_dates(), seed.reference_date)
    spec = RetrievalSpec(tau_days=14, threshold=0.45, mmr_pool=8, diversity=0.5)
    for solve in (feasible_bonus, criterion_regions):
        with pytest.raises(InputError, match=r"no exact feasible region under MMR.*--mmr-pool"):
            solve(published.raw, ages, Labels.from_dataset(seed), SEED_CRITERIA, spec=spec)


def test_diversity_zero_is_the_plain_region(seed, published):
    ages = age_days(seed.memory_dates(), seed.reference_date)
    labels = Labels.from_dataset(seed)
    plain = feasible_bonus(
        published.raw, ages, labels, SEED_CRITERIA, spec=RetrievalSpec(tau_days=14, threshold=0.45)
    )
    mmr = RetrievalSpec(tau_days=14, threshold=0.45, mmr_pool=8, diversity=0.0)
    assert feasible_bonus(published.raw, ages, labels, SEED_CRITERIA, spec=mmr) == plain
    assert not plain.empty  # the seed's region at 14 days, [0.0451097, 0.0758412) by hand
