"""Stages on top of each other, held out in the held-out study's folds: the pipelines the best
combination (``memlab.studies.pipeline``) chooses among besides the single stages.

- ``+ MMR + rerank``: the rerank stage over an MMR-diversified pool. Per fold, the fold's tuned MMR
  stage (its pool ``p`` and diversity ``d``, ``memlab.studies.mmr_held``, kept there or not) picks
  each question's first ``min(p, D)`` memories among its top ``p`` by raw cosine, in MMR's greedy
  order (``D``: the largest rerank depth). MMR's first ``k`` picks do not depend on how many are
  asked for, so the pool's first ``depth`` places are the query ``nearest`` + ``mmr`` (diversity
  ``d``, candidates_limit ``p``) with limit ``depth`` (a depth past ``p`` takes the whole pool).
  The stage (depth, blend > 0, threshold) is tuned over that pool on the training questions as
  ``+ rerank``'s is over the raw-cosine pool (``memlab.studies.stages.stage_folds``), each place's
  final score its post-bonus score under the fold's tuned spec, and kept only when it beats, on
  the same questions, the pipeline under it: the pool's first ``candidates`` picks, re-sorted and
  thresholded by the tuned spec (the MMR stage).
- ``hybrid + MMR``: per fold, the fold's best hybrid (its retriever and configuration as the
  held-out study tuned them) with MMR diversifying its vector route: the route's ``candidates``
  are MMR's picks among the top ``p`` by raw cosine (a ``nearest`` + ``mmr`` prefetch fused with
  the keyword prefetch: a query Qdrant's API can express; MMR over the fused list it cannot). Every
  (p, d) of the MMR grid is measured on the training questions by the held-out objective (ties:
  the grid's order, the smaller pool, then the smaller diversity), the best kept only when it
  beats the hybrid there. For ``gate-vector-decay`` the time gate then narrows MMR's picks.
- ``hybrid + rerank``: per fold, the rerank stage over the fold's hybrid's candidates, in the
  hybrid's candidate order (its pre-bonus score, then dataset order): a fused hybrid's are its
  routes' union (so a depth past it takes the union), ``gate-vector-decay``'s the top ``depth`` by
  gated cosine. The stage's final score is the hybrid's post-bonus score, which sits on its own
  scale (RRF's sums of 1 / (k + rank), a weighted fusion's normalised sums): the stage's threshold
  is tuned with the blend, as over cosine. Kept only when it beats the hybrid on the training
  questions (the stage at blend 0 with the hybrid's candidates and threshold is the hybrid).

Every pipeline here is tuned on the other folds only: MMR's and the stage's fields, on top of the
fold's tuned spec or hybrid, never a re-tuned threshold of those (as ``+ MMR`` and ``+ rerank``).
A rerank combination is measured on the rerank subset's questions; the pairs its pools hold that
the raw-cosine pool did not are scored by the same reranker (and cache).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core.ranking import candidate_lists
from memlab.core.spec import RetrievalSpec
from memlab.core.sweep_mmr import mmr_picks
from memlab.retrieval.retrievers import RETRIEVERS
from memlab.studies import mmr_held
from memlab.studies.heldout import HeldOut, fold_split, injected_lists, subset
from memlab.studies.hybrid import RetrieverGrid, configured_scores, per_question
from memlab.studies.rerank import RerankPool

if TYPE_CHECKING:
    import pandas as pd

    from memlab.retrieval.inputs import RetrievalInputs
    from memlab.scores.problem import RetrievalProblem

MMR_RERANK = "+ MMR + rerank"
HYBRID_MMR = "hybrid + MMR"
HYBRID_RERANK = "hybrid + rerank"
MEANINGS = {
    MMR_RERANK: "the rerank stage over the fold's MMR picks (kept when it beats the MMR stage there)",
    HYBRID_MMR: "the fold's hybrid with MMR on its vector route (kept when it beats the hybrid there)",
    HYBRID_RERANK: "the rerank stage over the fold's hybrid's candidates (kept when it beats the hybrid)",
}


@dataclass(frozen=True)
class Combo:
    """A combination held out: its injected memories per question (dataset indices; the keep
    rule), per fold every question's under the fold's stage (kept or not: what the best
    combination compares on the training questions), and what each fold chose."""

    lists: dict[int, tuple[int, ...]]
    stage: dict[int, dict[int, tuple[int, ...]]]
    chosen: pd.DataFrame


def hybrid_row(record: dict[str, Any], grid: RetrieverGrid) -> pd.Series:
    """A hybrid's tuned configuration (a ``held.chosen`` record) as the sweep row ``per_question``
    reads."""
    import pandas as pd

    return pd.Series({**record, "candidates": grid.candidates, "inject": grid.inject})


def every_row(
    inputs: RetrievalInputs, retriever: str, row: pd.Series, grid: RetrieverGrid
) -> list[tuple[int, ...]]:
    """Every question's injected memories under one tuned configuration of a retriever."""
    return injected_lists(per_question(RETRIEVERS[retriever], inputs, row, grid), grid.inject)


def hybrid_records(held: HeldOut) -> dict[int, dict[str, Any]]:
    """Each fold's best hybrid, as the held-out study chose it."""
    hyb = held.chosen[held.chosen["system"] == "hybrid"]
    return {int(r["fold"]): r for r in hyb.to_dict("records")}


def hybrid_mmr(
    problem: RetrievalProblem, held: HeldOut, picked: dict[tuple[int, float], RetrievalInputs]
) -> Combo:
    """``hybrid + MMR`` on every fold (see the module); ``picked``: the inputs with MMR's picks
    on the vector route per (pool, diversity), ``mmr_held.picked_inputs`` at the study's
    candidates (``MmrHeldOut.picked``)."""
    import pandas as pd

    inputs, grid = held.inputs, held.grid
    fold = mmr_held.fold_of(held)
    relevant, nohit = mmr_held.targets(problem)
    lists: dict[int, tuple[int, ...]] = {}
    stage: dict[int, dict[int, tuple[int, ...]]] = {}
    records = []
    for f, rec in sorted(hybrid_records(held).items()):
        train, test = fold_split(fold, f)
        if not len(test):
            continue
        row = hybrid_row(rec, grid)
        plain = every_row(inputs, rec["retriever"], row, grid)
        base = mmr_held.list_objective(relevant, nohit, train, plain)
        best = None
        for (p, d), where in picked.items():
            got = every_row(where, rec["retriever"], row, grid)
            value = mmr_held.list_objective(relevant, nohit, train, got)
            if best is None or value > best[2]:
                best = (p, d, value, got)
        p, d, value, got = best
        kept = value > base
        stage[f] = dict(enumerate(got))
        for r in test:
            lists[int(r)] = (got if kept else plain)[r]
        records.append(
            {
                "fold": f,
                "retriever": rec["retriever"],
                "tuning_questions": len(train),
                "hybrid_objective": base,
                "mmr_pool": p,
                "diversity": d,
                "stage_objective": value,
                "kept": kept,
            }
        )
    return Combo(lists, stage, pd.DataFrame(records))


def pool_of(
    inputs: RetrievalInputs,
    rows: np.ndarray,
    cols: np.ndarray,
    order_scores: np.ndarray,
    spec: RetrievalSpec,
    relevant: Sequence[frozenset[int]],
    nohit: np.ndarray,
) -> RerankPool:
    """The pool of ``rows``' questions at ``cols`` ((R, P) columns of ``inputs``, in the pool's
    order, -1 past): memory indices, ``order_scores`` there as the pool's raw score (the re-sort's
    first tie-break), the post-bonus score under ``spec``, which are relevant."""
    known = cols >= 0
    safe = np.where(known, cols, 0)
    slots = (
        inputs.slots[rows]
        if inputs.slots is not None
        else np.broadcast_to(np.arange(inputs.vector.shape[1]), (len(rows), inputs.vector.shape[1]))
    )
    index = np.where(known, np.take_along_axis(slots, safe, axis=1), -1)
    raw = np.where(known, np.take_along_axis(order_scores, safe, axis=1), np.nan)
    ages = np.where(known, np.take_along_axis(inputs.ages[rows], safe, axis=1), np.inf)
    final = np.where(known, spec.final(np.where(known, raw, 0.0), ages), np.nan)
    rel = np.zeros(index.shape, dtype=bool)
    for i, q in enumerate(rows):
        rel[i] = known[i] & np.isin(index[i], list(relevant[int(q)]))
    return RerankPool(index, raw, final, rel, nohit[rows])


def mmr_pools(
    problem: RetrievalProblem,
    held: HeldOut,
    specs: dict[int, RetrievalSpec],
    chosen: pd.DataFrame,
    rows: np.ndarray,
    depth: int,
) -> dict[int, tuple[RerankPool, RetrievalSpec]]:
    """Per fold: ``rows``' MMR pool, ``depth`` deep at most, under the fold's MMR stage
    (``chosen``: ``MmrHeldOut.chosen``) and the fold's tuned spec (see the module)."""
    inputs = held.inputs
    relevant, nohit = mmr_held.targets(problem)
    vectors = problem.memory_vectors() if (chosen["diversity"] > 0).any() else None
    vector = inputs.vector[rows]
    slots = None if inputs.slots is None else inputs.slots[rows]
    out = {}
    for c in chosen.to_dict("records"):
        f, p, d = int(c["fold"]), int(c["mmr_pool"]), float(c["diversity"])
        cols = mmr_picks(vector, vectors, p, d, max(min(p, depth), specs[f].candidates), slots=slots)
        out[f] = (pool_of(inputs, rows, cols, inputs.vector[rows], specs[f], relevant, nohit), specs[f])
    return out


def hybrid_pools(
    problem: RetrievalProblem, held: HeldOut, rows: np.ndarray, depth: int
) -> dict[int, tuple[RerankPool, RetrievalSpec]]:
    """Per fold: ``rows``' pool over the fold's best hybrid's candidates (see the module), at most
    ``depth`` deep (or the hybrid's own candidates when more), with the hybrid's configuration as
    a spec (its bonus, family, threshold, its candidates: a fused hybrid's the routes' union)."""
    inputs, grid = held.inputs, held.grid
    relevant, nohit = mmr_held.targets(problem)
    sub = subset(inputs, rows)
    out = {}
    for f, rec in sorted(hybrid_records(held).items()):
        retriever = RETRIEVERS[rec["retriever"]]
        row = hybrid_row(rec, grid)
        scores, candidates = configured_scores(retriever, sub, row, grid)
        spec = RetrievalSpec.from_row(row, candidates=candidates)
        cols = candidate_lists(scores, max(depth, candidates))
        out[f] = (pool_of(inputs, rows, cols, scores, spec, relevant, nohit), spec)
    return out


def known_scores(rows: np.ndarray, index: np.ndarray, rerank: np.ndarray) -> dict[tuple[int, int], float]:
    """The reranker's scores by (question, memory), dataset indices, from a pool's arrays."""
    r, p = np.nonzero(index >= 0)
    return {(int(rows[i]), int(index[i, j])): float(rerank[i, j]) for i, j in zip(r, p, strict=True)}


def missing_pairs(
    pools: dict[int, tuple[RerankPool, RetrievalSpec]], rows: np.ndarray, scores: dict[tuple[int, int], float]
) -> list[tuple[int, int]]:
    """The (question, memory) pairs some pool holds and ``scores`` does not, in first-seen order."""
    out: dict[tuple[int, int], None] = {}
    for f in sorted(pools):
        index = pools[f][0].index
        for i, q in enumerate(rows):
            for m in index[i][index[i] >= 0]:
                if (int(q), int(m)) not in scores:
                    out[int(q), int(m)] = None
    return list(out)


def score_missing(
    problem: RetrievalProblem,
    pairs: Sequence[tuple[int, int]],
    reranker: Any,
    cache: Any = None,
    concurrency: int = 1,
) -> dict[tuple[int, int], float]:
    """The reranker's score of each (question, memory) pair (dataset indices), cached as every
    other pair is (``memlab.rerank.scoring``)."""
    from memlab.rerank.scoring import score_pairs

    if not pairs:
        return {}
    lang, dataset = problem.lang, problem.dataset
    texts = [(dataset.questions[q].text(lang), dataset.memories[m].text(lang)) for q, m in pairs]
    got = score_pairs(reranker, texts, cache, concurrency, None)
    return {pair: float(s) for pair, s in zip(pairs, got, strict=True)}


def rerank_combo(
    pools: dict[int, tuple[RerankPool, RetrievalSpec]],
    rows: np.ndarray,
    fold: np.ndarray,
    scores: dict[tuple[int, int], float],
    *,
    depths: Sequence[int],
    blends: Sequence[float],
) -> Combo:
    """The rerank stage over each fold's pool (``pools``: the pool and the pipeline under it as a
    spec), held out by ``memlab.studies.stages.stage_folds`` over ``rows`` (``fold``: theirs);
    ``scores``: the reranker's, by (question, memory): every pair of every pool."""
    import pandas as pd

    from memlab.studies.stages import FoldPool, stage_folds

    fold_pools = {}
    for f, (pool, spec) in pools.items():
        rerank = np.full(pool.index.shape, np.nan)
        for i, q in enumerate(rows):
            for j, m in enumerate(pool.index[i]):
                if m >= 0:
                    rerank[i, j] = scores[int(q), int(m)]
        fold_pools[f] = FoldPool(pool, rerank, spec.candidates, spec.threshold, spec.inject)
    records, lists, stages = stage_folds(fold_pools, fold, depths=depths, blends=blends)
    held = {int(rows[i]): got for i, got in enumerate(lists) if fold[i] in fold_pools}
    every = {f: {int(rows[i]): got for i, got in enumerate(mine)} for f, mine in stages.items()}
    return Combo(held, every, pd.DataFrame(records))
