"""The candidate pool (``memlab.core.shards``): the tenant filter, then the shards, once.

Cases small enough to check on paper; a property test against a brute force over each shard;
one shard and no filter equal to the unsharded rule bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.core.errors import InputError
from memlab.core.ranking import candidate_mask, select_candidates
from memlab.core.shards import Pool, narrow, pool_candidates, pool_mask, pool_size, shard_rank
from memlab.core.spec import RetrievalSpec, retrieve

RAW = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
SHARD = np.array([0, 0, 0, 1, 1, 1])  # the three best memories all on shard 0


def test_two_shards_take_each_shards_top_k():
    """Unsharded, the top 2 are m0 and m1; on two shards each shard gives its own top 2, so m3
    and m4 (shard 1) are candidates too: a pool of 4."""
    assert pool_candidates(RAW, 2).tolist() == [0, 1]
    pool = Pool(shard=SHARD, shards=2)
    assert pool_candidates(RAW, 2, pool).tolist() == [0, 1, 3, 4]
    assert shard_rank(RAW, SHARD).tolist() == [0, 1, 2, 0, 1, 2]
    assert int(pool_size(RAW, 2, pool)) == 4


def test_the_filter_comes_before_the_shards():
    """The filter leaves out m0 and m3: shard 0's top 2 are then m1 and m2, shard 1's m4, m5."""
    pool = Pool(allowed=np.array([False, True, True, False, True, True]), shard=SHARD, shards=2)
    assert pool_candidates(RAW, 2, pool).tolist() == [1, 2, 4, 5]
    assert np.isnan(narrow(RAW, pool)[[0, 3]]).all()
    # the filter alone: the collection's top 2 among what it keeps
    assert pool_candidates(RAW, 2, Pool(allowed=pool.allowed)).tolist() == [1, 2]


def test_ties_and_unknown_scores_follow_the_candidate_rule():
    """Equal raw scores in one shard: the earlier memory first; an unknown score never counts."""
    raw = np.array([0.5, np.nan, 0.5, 0.5, 0.2])
    shard = np.array([0, 0, 0, 1, 0])
    assert pool_candidates(raw, 1, Pool(shard=shard, shards=2)).tolist() == [0, 3]
    assert pool_candidates(raw, 3, Pool(shard=shard, shards=2)).tolist() == [0, 2, 3, 4]


def test_the_reference_ranks_the_pool():
    """retrieve over two shards: the pool of 4, re-sorted, the threshold and inject as always."""
    ages = np.array([30.0, 30.0, 30.0, 0.0, 0.0, 0.0])
    spec = RetrievalSpec(candidates=2, inject=3, threshold=0.6, bonus=0.3, tau_days=10.0)
    ids = tuple(f"m{i}" for i in range(6))
    one = retrieve(RAW, ages, ids, spec)
    two = retrieve(RAW, ages, ids, spec, Pool(shard=SHARD, shards=2))
    assert [c.memory_id for c in one] == ["m0", "m1"]
    # finals: m3 0.9, m4 0.8, m0 0.9 + 0.3 e^-3 = 0.9149, m1 0.8149
    assert [c.memory_id for c in two] == ["m0", "m3", "m1", "m4"]
    assert [c.injected for c in two] == [True, True, True, False]


def test_a_shard_number_outside_the_count_is_refused():
    with pytest.raises(InputError, match=r"shard numbers must lie in 0\.\.1"):
        Pool(shard=np.array([0, 2]), shards=2)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.integers(1, 24).flatmap(
        lambda n: st.tuples(
            st.lists(
                st.sampled_from([0.1, 0.2, 0.3, 0.4, float("nan")]) | st.floats(-1, 1), min_size=n, max_size=n
            ),
            st.lists(st.integers(0, 3), min_size=n, max_size=n),
            st.lists(st.booleans(), min_size=n, max_size=n),
        )
    ),
    st.integers(1, 8),
)
def test_the_pool_is_each_shards_top_k_among_what_the_filter_keeps(case, k):
    values, shards, keep = case
    raw, shard, allowed = np.array(values), np.array(shards), np.array(keep)
    pool = Pool(allowed=allowed, shard=shard, shards=4)
    expected = set()
    for s in range(4):
        mine = [i for i in range(len(raw)) if shard[i] == s and allowed[i] and np.isfinite(raw[i])]
        expected |= set(sorted(mine, key=lambda i: (-raw[i], i))[:k])
    got = pool_candidates(raw, k, pool)
    assert set(got.tolist()) == expected
    assert got.tolist() == sorted(expected, key=lambda i: (-raw[i], i))  # candidate order
    # one shard, every memory kept: the unsharded rule, bit for bit, through the general path
    every = Pool(allowed=np.ones(len(raw), dtype=bool))
    assert (pool_mask(raw[None], k, every) == candidate_mask(raw[None], k)).all()
    assert pool_candidates(raw, k, every).tolist() == select_candidates(raw, k).tolist()


def test_candidate_lists_are_each_rows_select_candidates():
    """By hand: ties keep dataset order, unknown scores are never candidates, a row with fewer
    known scores than k is padded with -1; and on random rows with ties, every row equals the
    one-question rule."""
    from memlab.core.ranking import candidate_lists

    raw = np.array([[0.5, 0.9, 0.5, np.nan, 0.5], [np.nan, 0.2, np.nan, np.nan, np.nan]])
    assert candidate_lists(raw, 3).tolist() == [[1, 0, 2], [1, -1, -1]]
    rng = np.random.default_rng(4)
    for n in (5, 80, 300):  # below and above top_k's full-sort size
        raw = rng.integers(0, 6, size=(40, n)).astype(float) / 5
        raw[rng.random(raw.shape) < 0.3] = np.nan
        for k in (1, 4, n):
            got = candidate_lists(raw, k)
            for q in range(len(raw)):
                want = select_candidates(raw[q], k).tolist()
                assert got[q].tolist() == want + [-1] * (got.shape[1] - len(want))
