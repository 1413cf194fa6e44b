"""The rerank stage's formula (memlab.core.rerank_stage): a case worked on paper, the vectorised
sweep held equal to the one-config reference on random pools with ties, and the stage at blend 0
held equal to the spec's own reference (memlab.tuning.evaluate) on a packaged dataset."""

from __future__ import annotations

import numpy as np
import pytest

from memlab.core.errors import InputError
from memlab.core.rerank_stage import (
    RerankStage,
    blend_scores,
    stage_injected,
    stage_sweep,
    stage_sweep_injected,
)
from memlab.core.spec import RetrievalSpec
from memlab.scores.problem import build_problem
from memlab.studies.rerank import choose, rerank_pool
from memlab.tuning.evaluate import evaluate


def test_blend_is_the_convex_combination():
    assert blend_scores(0.8, 0.2, 0.0) == pytest.approx(0.8)
    assert blend_scores(0.8, 0.2, 1.0) == pytest.approx(0.2)
    assert blend_scores(0.8, 0.2, 0.25) == pytest.approx(0.75 * 0.8 + 0.25 * 0.2)  # 0.65


def test_a_pool_worked_on_paper():
    # one question, pool in candidate order; finals 0.9, 0.8, 0.7; the reranker prefers the third
    raw = np.array([[0.85, 0.8, 0.7, np.nan]])
    final = np.array([[0.9, 0.8, 0.7, np.nan]])
    rerank = np.array([[0.1, 0.5, 0.9, np.nan]])
    # blend 0.5: 0.5, 0.65, 0.8 -> order 2, 1, 0; threshold 0.6 keeps 2 and 1; inject 1 -> place 2
    blended, injected = stage_injected(raw, final, rerank, depth=3, blend=0.5, threshold=0.6, inject=1)
    assert blended[0, :3] == pytest.approx([0.5, 0.65, 0.8])
    assert np.isnan(blended[0, 3])
    assert injected.tolist() == [[False, False, True, False]]
    # depth 2: place 2 is outside the pool; 0.65 >= 0.6 -> place 1
    _, injected = stage_injected(raw, final, rerank, depth=2, blend=0.5, threshold=0.6, inject=1)
    assert injected.tolist() == [[False, True, False, False]]
    # blend 0: the spec's own order (0.9 first)
    _, injected = stage_injected(raw, final, rerank, depth=3, blend=0.0, threshold=0.6, inject=2)
    assert injected.tolist() == [[True, True, False, False]]


def test_ties_on_the_blended_score_go_to_the_higher_raw_then_the_earlier_place():
    raw = np.array([[0.7, 0.7, 0.9]])
    final = np.array([[0.5, 0.5, 0.3]])
    rerank = np.array([[0.5, 0.5, 0.7]])  # blend 0.5: 0.5, 0.5, 0.5: all tie
    _, injected = stage_injected(raw, final, rerank, 3, 0.5, 0.0, 1)
    assert injected.tolist() == [[False, False, True]]  # the highest raw
    raw = np.array([[0.7, 0.7, 0.6]])
    _, injected = stage_injected(raw, final, rerank, 3, 0.5, 0.0, 1)
    assert injected.tolist() == [[True, False, False]]  # equal raw: the earlier place


def random_pools(rng, q=7, p=9):
    # coarse values so ties happen on raw, final and the blended score
    raw = -np.sort(-rng.integers(0, 6, size=(q, p)) / 5.0, axis=1)
    final = raw + rng.integers(0, 3, size=(q, p)) / 10.0
    rerank = rng.integers(0, 5, size=(q, p)) / 4.0
    short = rng.integers(0, p + 1, size=q)  # some questions know fewer memories
    for i, n in enumerate(short):
        raw[i, n:] = final[i, n:] = rerank[i, n:] = np.nan
    return raw, final, rerank


@pytest.mark.parametrize("seed", range(6))
def test_the_sweep_equals_the_reference_config_by_config(seed):
    rng = np.random.default_rng(seed)
    raw, final, rerank = random_pools(rng)
    depths, blends, thresholds = [1, 3, 9], [0.0, 0.25, 0.5, 1.0], [-1.0, 0.3, 0.5, 0.75, 2.0]
    inject = int(rng.integers(1, 4))
    swept = stage_sweep_injected(raw, final, rerank, depths, blends, thresholds, inject)
    assert swept.shape == (3, 4, 5, *raw.shape)
    for a, d in enumerate(depths):
        for b, w in enumerate(blends):
            for c, t in enumerate(thresholds):
                _, ref = stage_injected(raw, final, rerank, d, w, t, inject)
                assert (swept[a, b, c] == ref).all(), (d, w, t)


def test_the_sweep_table_counts_what_the_masks_say():
    raw = np.array([[0.9, 0.8], [0.7, 0.6], [0.5, np.nan]])
    final = raw.copy()
    rerank = np.array([[0.0, 1.0], [0.0, 0.0], [1.0, np.nan]])
    relevant = np.array([[False, True], [True, False], [False, False]])
    nohit = np.array([False, False, True])
    table = stage_sweep(raw, final, rerank, relevant, nohit, [2], [0.0, 1.0], [0.55], 1)
    # blend 0: q0 injects place 0 (not relevant), q1 injects place 0 (relevant), q2 nothing (0.5)
    # blend 1: q0 place 1 (relevant, 1.0), q1 none (0 < 0.55), q2 injects (1.0 >= 0.55): a no-hit injection
    assert table[["answered", "nohit_injected", "utility"]].values.tolist() == [[1, 0, 1], [1, 1, 0]]
    assert table["recall_any"].tolist() == [0.5, 0.5]


def test_choose_prefers_utility_then_the_cheaper_stricter_stage():
    import pandas as pd

    table = pd.DataFrame(
        {
            "depth": [16, 8, 8, 8],
            "blend": [0.0, 0.5, 0.25, 0.25],
            "threshold": [0.1, 0.1, 0.1, 0.3],
            "utility": [3, 3, 3, 2],
        }
    )
    assert choose(table) == 2


def test_a_pool_place_without_a_reranker_score_is_refused():
    raw, final = np.array([[0.9, 0.8]]), np.array([[0.9, 0.8]])
    with pytest.raises(InputError, match="no reranker score"):
        stage_injected(raw, final, np.array([[0.5, np.nan]]), 2, 0.5, 0.0, 1)
    with pytest.raises(InputError, match="no reranker score"):
        stage_sweep_injected(raw, final, np.array([[0.5, np.nan]]), [1, 2], [0.5], [0.0], 1)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"reranker": "llm"}, "reranker: expected one of chat, endpoint"),
        ({"depth": 0}, "depth"),
        ({"blend": 1.5}, "blend"),
        ({"threshold": float("nan")}, "threshold"),
    ],
)
def test_a_bad_stage_is_one_line(kwargs, message):
    fields = {"reranker": "chat", "depth": 8, "blend": 0.5, "threshold": 0.5, **kwargs}
    with pytest.raises(InputError, match=message):
        RerankStage(**fields)


@pytest.mark.parametrize("dataset", ["seed16", "daily-lunch"])
def test_blend_zero_at_the_specs_candidates_is_the_spec_itself(dataset):
    # the study's pool through the stage at blend 0, depth = candidates, the spec's threshold,
    # against memlab.tuning.evaluate (the one-config reference of the spec)
    problem = build_problem(dataset, spec=RetrievalSpec(candidates=5, inject=2, threshold=0.45))
    ev = evaluate(problem)
    pool = rerank_pool(problem, 12)
    noise = np.random.default_rng(0).random(pool.index.shape)  # any reranker: weight 0
    spec = problem.spec
    _, injected = stage_injected(
        pool.raw, pool.final, noise, spec.candidates, 0.0, spec.threshold, spec.inject
    )
    for q, result in enumerate(ev.results):
        # the reference's injection order is its re-sort; the mask gives the set
        want = sorted(c.index for c in result.injected)
        got = sorted(int(pool.index[q, p]) for p in np.flatnonzero(injected[q]))
        assert got == want, result.question_id
    assert sum(len(r.injected) for r in ev.results) > 0  # the case injects something


def test_the_exported_pool_query_returns_the_stages_pool_in_qdrant_local_mode():
    # the query memlab spec prints for a spec with a rerank stage (prefetch and limit = depth, no
    # score threshold), run through qdrant-client's local mode, against the study's pool: the same
    # memories, with the post-bonus scores the stage blends
    from datetime import UTC, datetime, timedelta

    from memlab.core.ranking import candidate_lists
    from memlab.core.spec import age_days
    from memlab.qdrant.query import spec_body
    from memlab.qdrant.store import MemoryStore

    ref = datetime(2026, 9, 10, tzinfo=UTC)
    rng = np.random.default_rng(3)
    n, dim, depth = 120, 16, 20
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    dates = [ref - timedelta(seconds=int(s)) for s in rng.integers(0, 60 * 86400, size=n)]
    store = MemoryStore(dim)
    store.add([f"m{i}" for i in range(n)], vecs, dates)
    ages = age_days(np.array([d.replace(tzinfo=None) for d in dates], dtype="datetime64[s]"), ref)
    spec = RetrievalSpec(candidates=5, inject=3, threshold=0.9, bonus=0.2, tau_days=7, reference_date=ref)
    queries = vecs[rng.integers(0, n, 10)] + rng.normal(scale=0.5, size=(10, dim))
    raw = store.score_table(queries)
    pool = candidate_lists(raw, depth)
    for q, vec in enumerate(queries):
        body = spec_body(spec, store.schema, vec.tolist(), ref, pool=depth)
        got = dict(store.run(body))
        assert set(got) == {int(i) for i in pool[q]}  # every candidate of the pool, none thresholded
        want = spec.final(raw[q, pool[q]], ages[pool[q]])
        np.testing.assert_allclose([got[int(i)] for i in pool[q]], want, atol=1e-6)


def test_a_held_out_fold_applies_the_stage_tuned_on_the_other_rows():
    from memlab.studies.rerank import RerankPool, fold_stage

    rng = np.random.default_rng(5)
    raw, final, rerank = random_pools(rng, q=12, p=6)
    relevant = np.isfinite(raw) & (rng.random(raw.shape) < 0.3)
    pool = RerankPool(np.where(np.isfinite(raw), 0, -1), raw, final, relevant, rng.random(12) < 0.3)
    tune, held = np.arange(8), np.arange(8, 12)
    chosen, injected = fold_stage(pool, rerank, tune, held, 2, depths=[2, 6], blends=[0.0, 1.0])
    # the chosen row is the best of the tuning rows' sweep, and the held-out mask is that
    # configuration through the reference on the held-out rows alone
    sub = pool.rows(tune)
    ts = [chosen["threshold"]]
    table = stage_sweep(sub.raw, sub.final, rerank[tune], sub.relevant, sub.nohit, [2, 6], [0.0, 1.0], ts, 2)
    assert chosen["utility"] == table["utility"].max()
    _, want = stage_injected(
        raw[held], final[held], rerank[held], int(chosen["depth"]), chosen["blend"], chosen["threshold"], 2
    )
    assert (injected == want).all()


def test_the_printed_python_pool_query_returns_the_pool_unthresholded():
    from datetime import UTC, datetime, timedelta

    from memlab.core.ranking import candidate_lists
    from memlab.qdrant.query import python_snippet
    from memlab.qdrant.store import MemoryStore

    ref = datetime(2026, 9, 10, tzinfo=UTC)
    rng = np.random.default_rng(4)
    n, dim, depth = 50, 8, 12
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    store = MemoryStore(dim)
    store.add(
        [f"m{i}" for i in range(n)], vecs, [ref - timedelta(days=int(d)) for d in rng.integers(0, 30, n)]
    )
    spec = RetrievalSpec(candidates=4, inject=2, threshold=5.0, bonus=0.1, tau_days=7)  # no cosine reaches 5
    namespace: dict = {}
    exec(python_snippet(spec, store.schema, pool=depth), namespace)  # the very text memlab prints
    vec = rng.normal(size=dim)
    got = namespace["recall"](store.client, store.collection, vec, now=ref)
    pool = candidate_lists(store.score_table(np.asarray([vec])), depth)[0]
    assert sorted(int(p.id) for p in got) == sorted(int(i) for i in pool)
    plain: dict = {}
    exec(python_snippet(spec, store.schema), plain)
    assert plain["recall"](store.client, store.collection, vec, now=ref) == []  # the spec thresholds all
