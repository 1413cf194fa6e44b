"""The sweep over a candidate pool (``memlab.core.sweep_pool``) equals the reference over the
same pool (``evaluate(..., pool=...)``), configuration by configuration, on random tables with
ties, unknown scores, a random tenant filter and 1 to 3 shards; one shard and no filter is the
plain sweep, bit for bit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers import criteria_for
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sweep import PROPERTY, cases, same

from memlab.core.grid import Grid
from memlab.core.labels import Labels
from memlab.core.shards import Pool
from memlab.core.sweep import sweep
from memlab.core.sweep_pool import pooled_sweep_chunks
from memlab.tuning.evaluate import evaluate


def pooled(dataset, raw, grid, criteria, pool, long=False):
    labels, raw = Labels.from_dataset(dataset), np.where(dataset.visible(), raw, np.nan)
    return pd.concat(list(pooled_sweep_chunks(raw, dataset.ages(), labels, grid, criteria, pool, long=long)))


@pytest.mark.slow
@settings(PROPERTY, max_examples=120)
@given(cases(), st.integers(0, 2**32 - 1), st.integers(1, 3), st.booleans())
def test_the_pooled_sweep_equals_the_pooled_reference(case, seed, shards, filtered):
    dataset, scores, grid = case
    rng = np.random.default_rng(seed)
    n = len(dataset.memories)
    allowed = rng.random(n) < 0.7 if filtered else None
    pool = Pool(allowed, rng.integers(0, shards, n), shards)
    criteria = criteria_for(dataset)
    wide = pooled(dataset, scores.raw, grid, criteria, pool)
    long = pooled(dataset, scores.raw, grid, criteria, pool, long=True)
    assert wide.index.tolist() == list(range(grid.size))
    slots = [c for c in long.columns if c.startswith("slot_") and not c.endswith("_final")]
    n_q = len(dataset.questions)
    for i in range(grid.size):
        spec = grid.spec(i)
        ev = evaluate(dataset, scores, spec, criteria, pool=pool)
        row = wide.iloc[i]
        assert int(row["candidates"]) == spec.candidates
        for c in ev.criteria:
            assert same(c.value, float(row[f"{c.name}_value"])), (i, c)
            assert c.passed == bool(row[f"{c.name}_pass"]), (i, c)
        assert same(ev.headroom, float(row["headroom"]))
        for kind in ("hit", "contradiction", "nohit"):
            assert sum(len(r.injected) for r in ev.results if r.kind == kind) == row[f"injected_{kind}"]
        for j, r in enumerate(ev.results):
            lrow = long.iloc[i * n_q + j]
            assert lrow["config"] == i and lrow["question"] == r.question_id
            assert [int(lrow[s]) for s in slots if lrow[s] >= 0] == [c.index for c in r.injected], (i, j)


def test_one_shard_without_a_filter_is_the_plain_sweep(seed, published):
    from memlab.core.criteria import SEED_CRITERIA

    grid = Grid(bonus=(0.0, 0.05), tau_days=(7.0, 14.0), threshold=(0.45,), candidates=(2, 8))
    labels = Labels.from_dataset(seed)
    raw = published.retrievable(seed)
    plain = sweep(raw, seed.ages(), labels, grid, SEED_CRITERIA)
    same_pool = pd.concat(list(pooled_sweep_chunks(raw, seed.ages(), labels, grid, SEED_CRITERIA, Pool())))
    pd.testing.assert_frame_equal(plain, same_pool)


def test_shards_widen_the_pool_on_the_seed(seed, published):
    """candidates=2 on 4 shards: up to 8 candidates per question; the seed's injected count grows
    or stays, never shrinks (the pool only gains memories and the threshold is the same)."""
    from memlab.core.criteria import SEED_CRITERIA
    from memlab.qdrant.sharding import Scope

    grid = Grid(bonus=(0.05,), tau_days=(14.0,), threshold=(0.45,), candidates=(2,), inject=(3,))
    labels = Labels.from_dataset(seed)
    raw = published.retrievable(seed)
    one = sweep(raw, seed.ages(), labels, grid, SEED_CRITERIA).iloc[0]
    pool = Scope(shards=4).pool(seed.memories)
    four = pd.concat(list(pooled_sweep_chunks(raw, seed.ages(), labels, grid, SEED_CRITERIA, pool))).iloc[0]
    kinds = ("hit", "contradiction", "nohit")
    assert sum(four[f"injected_{k}"] for k in kinds) >= sum(one[f"injected_{k}"] for k in kinds)
