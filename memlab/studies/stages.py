"""The rerank stage held out: ``+ rerank`` beside the held-out study's systems
(``memlab.studies.heldout``), per LoCoMo category and overall, with the same paired bootstrap.

Per fold of the held-out study, on top of that fold's tuned recency spec (the ``recency`` system,
tuned on the other folds' questions):

- the pool is each question's top ``depth`` memories by raw cosine over its own conversation (the
  study's compacted inputs), their post-bonus scores under the fold's tuned spec, the reranker's
  score of every (question, memory) pair (asked once for every fold: the pool's order and the
  pairs depend on raw cosine only);
- the stage (depth, blend > 0, threshold) is tuned on the fold's training questions by
  ``memlab.studies.rerank.fold_stage`` (the stage's sweep and ``choose``, thresholds spanning the
  training rows' blended scores) and applied to the fold's questions;
- the stage is kept only when its training objective (answered minus no-hit questions injected)
  is strictly above the tuned spec's own on the same training questions; otherwise the fold's
  ``+ rerank`` is the tuned spec unchanged (depth = its candidates, blend 0, its threshold).

Why blend 0 is not a stage of the grid: at blend 0 the stage's score is the spec's final score,
and a blend-0 stage with its own threshold or depth is the vector spec re-tuned (its threshold
on the stage's grid, its candidates), not anything the reranker said; the tuned spec already
chose those on the same training questions. Measuring the reranker means crediting it only with
what its score changes, so a grid of blend 0 alone gives exactly the tuned spec's row.

Reranking is slow on a small local model, so ``subset`` reranks only ``subset`` questions of
each conversation, drawn at random with ``subset_seed`` (``subset_rows``): the stage is tuned
on the training folds' subset questions and evaluated on the fold's, and the table (every
system of the held-out study) is computed over the subset questions only, named in ``details["subset"]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core.errors import InputError
from memlab.core.numbers import check_number
from memlab.core.ranking import candidate_lists, resort_order
from memlab.core.rerank_stage import blend_scores, check_blend, check_depth, stage_injected, stage_sweep
from memlab.core.spec import RetrievalSpec
from memlab.retrieval.inputs import build_inputs, compact
from memlab.studies.heldout import (
    HeldOut,
    compare_systems,
    fold_split,
    haystack_units,
    question_values,
    tuned_folds,
)
from memlab.studies.rerank import BLENDS, DEPTHS, RerankPool, fold_stage

if TYPE_CHECKING:
    import pandas as pd

    from memlab.rerank.cache import ScoreCache
    from memlab.rerank.clients import Reranker
    from memlab.scores.problem import RetrievalProblem

SYSTEM = "+ rerank"  # the system's name in the held-out table
MEANING = (
    "the tuned recency spec with the rerank stage tuned on the other folds (kept when it beats the "
    "spec there)"
)


def subset_rows(units: Sequence[str], first: int | None, seed: int = 0) -> np.ndarray:
    """``first`` questions of each haystack drawn at random without replacement (a seeded choice,
    the haystacks in first-seen order; all of a haystack's when it has fewer), in dataset order
    (None: every question). Random rather than the first ones: LoCoMo lists each conversation's
    adversarial questions last, so its first questions hold none."""
    if first is None:
        return np.arange(len(units))
    check_number(first, "--rerank-subset", integer=True, minimum=1)
    check_number(seed, "--rerank-subset-seed", integer=True, minimum=0)
    rng = np.random.default_rng(seed)
    by: dict[str, list[int]] = {}
    for i, u in enumerate(units):
        by.setdefault(u, []).append(i)
    rows = [int(r) for mine in by.values() for r in rng.permutation(mine)[:first]]
    return np.array(sorted(rows), dtype=np.int64)


def subset_name(first: int | None, rows: np.ndarray, total: int, seed: int = 0) -> str:
    if first is None:
        return f"every question ({total})"
    return (
        f"{first} questions of each conversation drawn at random (seed {seed}) "
        f"({len(rows)} of {total} questions)"
    )


@dataclass(frozen=True)
class HeldPool:
    """The pool of some questions over their own conversations: ``index`` (Q, P) memory indices
    in candidate order (-1 past the known ones), ``raw`` and ``ages`` there (NaN / inf past)."""

    index: np.ndarray
    raw: np.ndarray
    ages: np.ndarray
    relevant: np.ndarray
    nohit: np.ndarray

    def under(self, spec: RetrievalSpec) -> RerankPool:
        """The pool with its post-bonus scores under ``spec`` (a fold's tuned spec)."""
        known = self.index >= 0
        final = np.where(known, spec.final(np.where(known, self.raw, 0.0), self.ages), np.nan)
        return RerankPool(self.index, self.raw, final, self.relevant, self.nohit)


def held_pool(problem: RetrievalProblem, rows: np.ndarray, depth: int) -> HeldPool:
    """The top ``depth`` memories of each of ``rows``' questions by raw cosine, over the memories
    the held-out study ranks for it (``compact(build_inputs(...))``: its conversation, written by
    the time it is asked), with the ages the study uses."""
    depth = check_depth(depth, "--rerank-depth")
    dataset = problem.dataset
    inputs = compact(build_inputs(dataset, problem.scores.raw, lang=problem.lang, keyword=False))
    vector, ages, slots = inputs.vector[rows], inputs.ages[rows], inputs.slots[rows]
    cols = candidate_lists(vector, depth)
    if cols.shape[1] < depth:
        cols = np.pad(cols, ((0, 0), (0, depth - cols.shape[1])), constant_values=-1)
    known = cols >= 0
    safe = np.where(known, cols, 0)
    index = np.where(known, np.take_along_axis(slots, safe, axis=1), -1)
    raw = np.where(known, np.take_along_axis(vector, safe, axis=1), np.nan)
    age = np.where(known, np.take_along_axis(ages, safe, axis=1), np.inf)
    ids = {m: i for i, m in enumerate(dataset.memory_ids)}
    relevant = np.zeros(index.shape, dtype=bool)
    for r, q in enumerate(rows):
        question = dataset.questions[int(q)]
        wanted = [ids[m] for m in (*((question.current,) if question.current else ()), *question.relevant)]
        relevant[r] = known[r] & np.isin(index[r], wanted)
    nohit = np.array([dataset.questions[int(q)].kind == "nohit" for q in rows], dtype=bool)
    return HeldPool(index, raw, age, relevant, nohit)


def injected_order(
    pool: RerankPool, rerank: np.ndarray, blend: float, mask: np.ndarray
) -> list[tuple[int, ...]]:
    """Per row: the injected memories (``mask``) in the stage's re-sort order (blended score, then
    raw, then candidate order)."""
    blended = blend_scores(pool.final, np.where(pool.index >= 0, rerank, 0.0), blend)
    key = np.where(mask, blended, -np.inf)
    order = resort_order(np.where(mask, pool.raw, -np.inf), key)
    out = []
    for r in range(mask.shape[0]):
        places = [int(p) for p in order[r] if mask[r, p]]
        out.append(tuple(int(pool.index[r, p]) for p in places))
    return out


@dataclass(frozen=True)
class FoldPool:
    """One fold's pool for a rerank stage: every row's places in the pool's order (``pool``), the
    reranker's score there (``rerank``), and the pipeline the stage sits on as a stage at blend 0
    (``candidates``: its depth, ``threshold``, ``inject``), which ``stage_folds`` keeps when the
    stage does not beat it on the fold's training rows."""

    pool: RerankPool
    rerank: np.ndarray
    candidates: int
    threshold: float
    inject: int


def stage_folds(
    pools: dict[int, FoldPool],
    fold: np.ndarray,
    *,
    depths: Sequence[int] = DEPTHS,
    blends: Sequence[float] = BLENDS,
) -> tuple[list[dict[str, Any]], list[tuple[int, ...]], dict[int, list[tuple[int, ...]]]]:
    """Every fold's rerank stage, tuned on the other folds' rows of its pool and applied to its own
    (see the module): (one record per fold: the stage chosen or none, the training objectives; per
    row, its injected memories in order; per fold, every row's injected memories under the fold's
    stage, kept or not: what the best combination compares on the training rows). ``fold`` (Q,)
    per row; ``pools``: each fold's (``FoldPool``), whatever pipeline made it (the tuned spec's
    raw-cosine pool, MMR's picks, a hybrid's candidates)."""
    depths = sorted({check_depth(d, "--rerank-depth") for d in depths})
    blends = sorted({check_blend(b, "--rerank-blend") for b in blends})
    if not depths or not blends:
        raise InputError("--rerank-depth and --rerank-blend: give at least one value each")
    staged = [b for b in blends if b > 0]
    lists: list[tuple[int, ...]] = [()] * len(fold)
    stages: dict[int, list[tuple[int, ...]]] = {}
    records = []
    for f in sorted(pools):
        train, test = fold_split(fold, f)
        if not len(test):
            continue
        fp = pools[f]
        pool, rerank = fp.pool, fp.rerank
        tr = pool.rows(train)
        spec_value = int(
            stage_sweep(
                tr.raw, tr.final, rerank[train], tr.relevant, tr.nohit,
                [fp.candidates], [0.0], [fp.threshold], fp.inject,
            )["utility"].iloc[0]
        )  # fmt: skip
        record: dict[str, Any] = {
            "fold": f,
            "tuning_questions": len(train),
            "spec_objective": spec_value,
            "spec_candidates": fp.candidates,
            "spec_threshold": fp.threshold,
        }
        chosen = None
        if staged and len(train):
            chosen, mask = fold_stage(pool, rerank, train, test, fp.inject, depths=depths, blends=staged)
            record.update(
                stage_depth=int(chosen["depth"]),
                stage_blend=float(chosen["blend"]),
                stage_threshold=float(chosen["threshold"]),
                stage_objective=int(chosen["utility"]),
            )
            _, every = stage_injected(
                pool.raw, pool.final, rerank, int(chosen["depth"]), float(chosen["blend"]),
                float(chosen["threshold"]), fp.inject,
            )  # fmt: skip
            stages[f] = injected_order(pool, rerank, float(chosen["blend"]), every)
        kept = chosen is not None and int(chosen["utility"]) > spec_value
        record["kept"] = kept
        held = pool.rows(test)
        if kept:
            blend = float(chosen["blend"])
        else:
            blend = 0.0
            _, mask = stage_injected(
                held.raw, held.final, rerank[test], fp.candidates, 0.0, fp.threshold, fp.inject
            )
        for r, order in zip(test, injected_order(held, rerank[test], blend, mask), strict=True):
            lists[int(r)] = order
        records.append(record)
    return records, lists, stages


def rerank_folds(
    base: HeldPool,
    rerank: np.ndarray,
    fold: np.ndarray,
    specs: dict[int, RetrievalSpec],
    *,
    depths: Sequence[int] = DEPTHS,
    blends: Sequence[float] = BLENDS,
) -> tuple[list[dict[str, Any]], list[tuple[int, ...]], dict[int, list[tuple[int, ...]]]]:
    """``stage_folds`` on the raw-cosine pool ``base`` under each fold's tuned spec (``specs``:
    candidates, inject, bonus, tau, threshold): ``+ rerank``."""
    pools = {
        f: FoldPool(base.under(spec), rerank, spec.candidates, spec.threshold, spec.inject)
        for f, spec, _, _ in tuned_folds(fold, specs)
    }
    return stage_folds(pools, fold, depths=depths, blends=blends)


@dataclass(frozen=True)
class RerankHeldOut:
    questions: pd.DataFrame  # the held-out study's rows of the subset questions, + rerank's after
    table: pd.DataFrame  # compare_systems over the subset: every system, + rerank among them
    chosen: pd.DataFrame  # per fold: the stage tuned there, whether it was kept
    details: dict[str, Any]
    rows: np.ndarray | None = None  # the subset's questions (dataset indices)
    fold: np.ndarray | None = None  # their folds
    # per fold, every subset row's injected memories under the fold's stage (kept or not)
    stages: dict[int, list[tuple[int, ...]]] | None = None
    pool: HeldPool | None = None  # the subset's pool and the reranker's scores there
    rerank: np.ndarray | None = None


def fold_specs(held: HeldOut) -> dict[int, RetrievalSpec]:
    """Each fold's tuned recency spec, as the held-out study chose it."""
    d = held.details
    rows = held.chosen[held.chosen["system"] == "recency"]
    return {
        int(r["fold"]): RetrievalSpec(
            candidates=int(d["candidates"]),
            inject=int(d["inject"]),
            threshold=float(r["threshold"]),
            bonus=float(r["bonus"]),
            tau_days=float(r["tau_days"]),
            decay=str(r["decay"]),
            combine=str(r["combine"]),
        )
        for r in rows.to_dict("records")
    }


def rerank_held_out(
    problem: RetrievalProblem,
    held: HeldOut,
    reranker: Reranker | None = None,
    *,
    rerank: np.ndarray | None = None,
    depths: Sequence[int] = DEPTHS,
    blends: Sequence[float] = BLENDS,
    subset: int | None = None,
    subset_seed: int = 0,
    cache: ScoreCache | None = None,
    concurrency: int = 1,
    bar: Any = None,
) -> RerankHeldOut:
    """``+ rerank`` beside ``held``'s systems over the subset (see the module). The reranker's
    scores: asked of ``reranker``, or given as ``rerank`` ((subset rows, max depth) in the pool's
    order, as a test changes them)."""
    import pandas as pd

    from memlab.rerank.scoring import score_pairs

    dataset = problem.dataset
    units = haystack_units(problem)
    rows = subset_rows(units, subset, subset_seed)
    specs = fold_specs(held)
    depth = max(max(depths), *(s.candidates for s in specs.values()))
    base = held_pool(problem, rows, depth)
    if rerank is None:
        if reranker is None:
            raise InputError("rerank_held_out: give a reranker or its scores")
        lang = problem.lang
        r, p = np.nonzero(base.index >= 0)  # row-major, the order the scores are put back in
        pairs = [
            (dataset.questions[int(rows[i])].text(lang), dataset.memories[int(base.index[i, j])].text(lang))
            for i, j in zip(r, p, strict=True)
        ]
        scores = np.full(base.index.shape, np.nan)
        scores[r, p] = score_pairs(reranker, pairs, cache, concurrency, bar)
        rerank = scores
    elif rerank.shape != base.index.shape:
        raise InputError(f"rerank scores: expected shape {base.index.shape}, got {rerank.shape}")
    cos = held.questions[held.questions["system"] == "cosine"].set_index("question")["fold"]
    fold_all = np.array([int(cos[q.id]) for q in dataset.questions])
    records, lists, stages = rerank_folds(base, rerank, fold_all[rows], specs, depths=depths, blends=blends)
    injected = {SYSTEM: dict(zip(rows.tolist(), lists, strict=True))}
    ours = question_values(problem, injected, fold_all, units)
    ids = {dataset.questions[int(i)].id for i in rows}
    theirs = held.questions[held.questions["question"].isin(ids)]
    questions = pd.concat([theirs, ours], ignore_index=True)
    table = compare_systems(questions, int(held.details["boot"]), int(held.details["seed"]))
    details = {
        "subset": subset_name(subset, rows, len(dataset.questions), subset_seed),
        "subset_first": subset,
        "subset_seed": subset_seed,
        "subset_questions": len(rows),
        "depths": sorted(set(depths)),
        "blends": sorted(set(blends)),
        "pairs": int((base.index >= 0).sum()),
    }
    if reranker is not None:
        details.update(
            reranker=reranker.config.kind,
            endpoint=reranker.config.shown,
            model=reranker.model,
            requests=reranker.requests,
            cache_hits=cache.hits if cache is not None else 0,
        )
    return RerankHeldOut(
        questions, table, pd.DataFrame(records), details, rows, fold_all[rows], stages, base, rerank
    )
