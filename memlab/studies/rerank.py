"""The rerank stage applied to a dataset: the pool the exported query returns, each pair scored by
a reranker, and every (depth, blend, threshold) of a grid measured beside the spec as it is.

- ``rerank_pool``: per question, the top ``depth`` memories by raw cosine (the candidate rule,
  after the tenant filter), in candidate order, with their raw and post-bonus (``final``) scores
  and which are relevant (the question's current memory and its ``relevant`` labels);
- ``score_pool``: the reranker's score of every pair of the pool (cached, concurrent:
  ``memlab.rerank.scoring``);
- ``rerank_study``: both, then the sweep (``memlab.core.rerank_stage.stage_sweep``) over depths x
  blends x thresholds, with the spec as it is (no stage) measured by the same sweep at its own
  candidates, blend 0 and its threshold, and the best configuration by the held-out study's
  objective (questions answered minus no-hit questions injected; ties: the smaller depth, the
  smaller blend, the higher threshold: the cheaper and stricter stage).

Held-out tuning (``memlab.studies.heldout``) calls the same three on its folds: ``rerank_pool``
and ``score_pool`` once over every question (scores do not depend on the fold), then
``stage_sweep`` on each fold's rows of the arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core.errors import InputError
from memlab.core.ranking import candidate_lists
from memlab.core.rerank_stage import RerankStage, check_blend, check_depth, stage_sweep
from memlab.core.shards import narrow
from memlab.rerank.cache import ScoreCache
from memlab.rerank.clients import Reranker
from memlab.rerank.scoring import score_pairs

if TYPE_CHECKING:
    import pandas as pd

    from memlab.scores.problem import RetrievalProblem

DEPTHS = (8, 16, 32)
BLENDS = (0.0, 0.25, 0.5, 0.75, 1.0)
THRESHOLD_STEPS = 41  # thresholds per (depth, blend): the blended scores' range in equal steps


@dataclass(frozen=True)
class RerankPool:
    """Every question's pool, one row per question, one column per place in candidate order."""

    index: np.ndarray  # (Q, P) memory indices, -1 past a question's known scores
    raw: np.ndarray  # (Q, P) raw cosines, NaN past the known ones
    final: np.ndarray  # (Q, P) post-bonus scores under the problem's spec
    relevant: np.ndarray  # (Q, P) whether the memory there is relevant to the question
    nohit: np.ndarray  # (Q,) no-hit questions

    @property
    def depth(self) -> int:
        return int(self.index.shape[1])

    def rows(self, rows: np.ndarray) -> RerankPool:
        """The pool of some questions (a held-out fold)."""
        return RerankPool(
            self.index[rows], self.raw[rows], self.final[rows], self.relevant[rows], self.nohit[rows]
        )


def rerank_pool(problem: RetrievalProblem, depth: int) -> RerankPool:
    """The top ``depth`` memories of each question by raw cosine, as the exported query with a
    rerank stage returns them (prefetch and limit ``depth``). A sharded collection is refused:
    its prefetch takes ``depth`` per shard, and the pool is then no prefix of a deeper one."""
    depth = check_depth(depth, "--rerank-depth")
    if problem.pool is not None and problem.pool.shards > 1:
        raise InputError("the rerank stage is measured on one shard: tune it without --shards")
    dataset, spec = problem.dataset, problem.spec
    raw_all = narrow(problem.scores.retrievable(dataset, spec.reference_date), problem.pool)
    ages = dataset.ages(spec.reference_date)
    final_all = spec.final(raw_all, ages)
    index = candidate_lists(raw_all, depth)
    if index.shape[1] < depth:  # a store smaller than the depth: pad to the depth asked for
        index = np.pad(index, ((0, 0), (0, depth - index.shape[1])), constant_values=-1)
    known = index >= 0
    safe = np.where(known, index, 0)
    raw = np.where(known, np.take_along_axis(raw_all, safe, axis=1), np.nan)
    final = np.where(known, np.take_along_axis(final_all, safe, axis=1), np.nan)
    ids = {m: i for i, m in enumerate(dataset.memory_ids)}
    relevant = np.zeros(index.shape, dtype=bool)
    for q, question in enumerate(dataset.questions):
        wanted = {ids[m] for m in (*((question.current,) if question.current else ()), *question.relevant)}
        relevant[q] = known[q] & np.isin(index[q], list(wanted))
    nohit = np.array([q.kind == "nohit" for q in dataset.questions], dtype=bool)
    return RerankPool(index, raw, final, relevant, nohit)


def pool_pairs(problem: RetrievalProblem, pool: RerankPool) -> list[tuple[str, str]]:
    """The (question, memory) texts of every known place of the pool, row by row."""
    lang = problem.lang
    questions = [q.text(lang) for q in problem.dataset.questions]
    memories = [m.text(lang) for m in problem.dataset.memories]
    rows, places = np.nonzero(pool.index >= 0)  # row-major: the order ``score_pool`` fills them in
    return [(questions[q], memories[int(pool.index[q, p])]) for q, p in zip(rows, places, strict=True)]


def score_pool(
    problem: RetrievalProblem,
    pool: RerankPool,
    reranker: Reranker,
    cache: ScoreCache | None = None,
    concurrency: int = 1,
    bar: Any = None,
) -> np.ndarray:
    """(Q, P) the reranker's score of every known place of the pool (NaN past them)."""
    pairs = pool_pairs(problem, pool)
    scores = score_pairs(reranker, pairs, cache, concurrency, bar)
    out = np.full(pool.index.shape, np.nan)
    out[pool.index >= 0] = scores
    return out


def thresholds_for(pool: RerankPool, rerank: np.ndarray, blends: Sequence[float], steps: int) -> np.ndarray:
    """``steps`` thresholds spanning every blended score the grid can make (its lowest to its
    highest), so the sweep reaches from injecting every candidate to injecting none."""
    w = np.asarray(blends, dtype=np.float64)[:, None, None]
    known = pool.index >= 0
    if not known.any():
        return np.zeros(1)
    blended = ((1 - w) * pool.final + w * np.where(known, rerank, 0.0))[:, known]
    return np.linspace(float(blended.min()), float(blended.max()), steps)


def choose(table: pd.DataFrame) -> int:
    """The best row by utility; ties: the smaller depth, the smaller blend, the higher threshold."""
    order = np.lexsort(
        (
            -table["threshold"].to_numpy(),
            table["blend"].to_numpy(),
            table["depth"].to_numpy(),
            -table["utility"].to_numpy(),
        )
    )
    return int(order[0])


@dataclass(frozen=True)
class RerankStudy:
    table: pd.DataFrame  # one row per (depth, blend, threshold)
    baseline: dict[str, Any]  # the spec as it is: its candidates, no reranking, its threshold
    chosen: dict[str, Any]  # the best row
    stage: RerankStage  # the chosen configuration as a stage
    pool: RerankPool
    rerank: np.ndarray  # (Q, P) the reranker's scores
    details: dict[str, Any]  # the reranker, the requests sent, the cache's hits and misses


def rerank_study(
    problem: RetrievalProblem,
    reranker: Reranker,
    *,
    depths: Sequence[int] = DEPTHS,
    blends: Sequence[float] = BLENDS,
    thresholds: Sequence[float] | None = None,
    cache: ScoreCache | None = None,
    concurrency: int = 1,
    bar: Any = None,
) -> RerankStudy:
    """The rerank stage over a grid on ``problem``'s dataset, beside the spec as it is."""
    depths = sorted({check_depth(d, "--rerank-depth") for d in depths})
    blends = sorted({check_blend(b, "--rerank-blend") for b in blends})
    if not depths or not blends:
        raise InputError("--rerank-depth and --rerank-blend: give at least one value each")
    spec = problem.spec
    pool = rerank_pool(problem, max(*depths, spec.candidates))
    scores = score_pool(problem, pool, reranker, cache, concurrency, bar)
    ts = (
        thresholds_for(pool, scores, blends, THRESHOLD_STEPS)
        if thresholds is None
        else np.asarray(thresholds)
    )
    args = (pool.raw, pool.final, scores, pool.relevant, pool.nohit)
    table = stage_sweep(*args, depths, blends, ts, spec.inject)
    base = stage_sweep(*args, [spec.candidates], [0.0], [spec.threshold], spec.inject).iloc[0].to_dict()
    i = choose(table)
    chosen = table.iloc[i].to_dict()
    stage = RerankStage.from_row(chosen, reranker.config.kind, reranker.model)
    details = {
        "reranker": reranker.config.kind,
        "endpoint": reranker.config.shown,
        "model": reranker.model,
        "pairs": int((pool.index >= 0).sum()),
        "requests": reranker.requests,
        "cache_hits": cache.hits if cache is not None else 0,
        "cache_misses": cache.misses if cache is not None else 0,
        "questions": int(pool.index.shape[0]),
    }
    return RerankStudy(table, base, chosen, stage, pool, scores, details)


def fold_stage(
    pool: RerankPool,
    rerank: np.ndarray,
    tune_rows: np.ndarray,
    eval_rows: np.ndarray,
    inject: int,
    *,
    depths: Sequence[int] = DEPTHS,
    blends: Sequence[float] = BLENDS,
    thresholds: Sequence[float] | None = None,
) -> tuple[dict[str, Any], np.ndarray]:
    """One held-out fold: the stage tuned on ``tune_rows`` (the sweep, ``choose``; thresholds
    spanning the tuning rows' blended scores when not given) and applied to ``eval_rows`` by the
    one-config reference: (the chosen row, the evaluated rows' injected mask, (len(eval_rows), P))."""
    from memlab.core.rerank_stage import stage_injected

    tune, held = pool.rows(tune_rows), pool.rows(eval_rows)
    ts = (
        thresholds_for(tune, rerank[tune_rows], blends, THRESHOLD_STEPS) if thresholds is None else thresholds
    )
    table = stage_sweep(
        tune.raw, tune.final, rerank[tune_rows], tune.relevant, tune.nohit, depths, blends, ts, inject
    )
    chosen = table.iloc[choose(table)].to_dict()
    _, injected = stage_injected(
        held.raw,
        held.final,
        rerank[eval_rows],
        int(chosen["depth"]),
        float(chosen["blend"]),
        float(chosen["threshold"]),
        inject,
    )
    return chosen, injected
