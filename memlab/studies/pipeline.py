"""The whole pipeline held out: what ``memlab tune-benchmark`` does, as one function
(``benchmark_study``) that the command and notebook 08 call.

- the held-out study (``memlab.studies.heldout.held_out``): cosine top-k, the tuned vector spec
  (``recency``), the best hybrid and the others, per fold tuned on the other conversations;
- with a reranker, ``+ rerank`` (``memlab.studies.stages``) over a seeded subset;
- with MMR, ``+ MMR`` (``memlab.studies.mmr_held``);
- with MMR, ``hybrid + MMR``; with a reranker, ``hybrid + rerank``; with both, ``+ MMR + rerank``
  (``memlab.studies.combos``: the stages on top of the fold's hybrid, and rerank over MMR's pool);
- with either stage, the **best combination**: per fold, of the pipelines the stages form
  (``COMBINATIONS``: the tuned spec; + MMR; + rerank; the best hybrid; + MMR + rerank; hybrid +
  MMR; hybrid + rerank), the one with the best objective on the fold's training questions (ties:
  the first listed, the simpler), evaluated on the fold's questions. Each pipeline's training
  objective is counted from its injected lists on the same training questions (the rerank
  subset's when a reranker is given), by ``mmr_held.list_objective``. The pipeline table sets it
  (and each combination's row) beside cosine top-k, the tuned spec and the **best single stage**:
  of the tuned spec, the hybrid, + MMR and + rerank, the one with the highest held-out utility
  over all questions, chosen in hindsight (so the combination's d to it is the hardest
  reference, not a fair choice);
- ``save``: the pipeline chosen the same way on every conversation (each stage tuned on all of
  them, after the held-out evaluation), as a tuned file (``memlab.tuning.tuned``): MMR as the
  spec's ``mmr_pool``/``diversity``, the rerank stage as the application-side stage
  ``memlab rerank --save`` writes. A hybrid is no vector spec, so a tuned file cannot hold it:
  when it is best, the file holds the best pipeline a spec can hold and says so.

Not modelled: MMR over a hybrid's fused list (MMR diversifies its vector route, before the fusion:
what Qdrant's query can express), MMR and reranking together on a hybrid, and a tuned file holding
a combination other than + MMR or + rerank (``save`` chooses among the tuned spec, + MMR, + rerank
and the hybrid).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core.rerank_stage import RerankStage
from memlab.core.spec import RetrievalSpec
from memlab.retrieval.retrievers import RETRIEVERS
from memlab.studies import combos, mmr_held
from memlab.studies.combos import HYBRID_MMR, HYBRID_RERANK, MMR_RERANK, every_row, hybrid_row
from memlab.studies.heldout import HYBRIDS, HeldOut, compare_systems, haystack_units, held_out, tune
from memlab.studies.hybrid import RetrieverGrid, per_question

if TYPE_CHECKING:
    import pandas as pd

    from memlab.rerank.cache import ScoreCache
    from memlab.rerank.clients import RerankerConfig
    from memlab.scores.problem import RetrievalProblem
    from memlab.studies.stages import RerankHeldOut
    from memlab.tuning.tuned import TunedSpec

COMBINED = "best combination"  # the system's name in the pipeline table
SPEC_SYSTEM = "recency"  # the tuned vector spec
SINGLES = ("recency", "hybrid", mmr_held.SYSTEM, "+ rerank")  # the single stages, tie order
# the pipelines the best combination chooses from, in tie order (the simpler first)
COMBINATIONS = ("recency", mmr_held.SYSTEM, "+ rerank", "hybrid", MMR_RERANK, HYBRID_MMR, HYBRID_RERANK)
COMBINED_MEANING = (
    "per fold, of the tuned spec, + MMR, + rerank, the best hybrid and the stages combined (+ MMR + "
    "rerank, hybrid + MMR, hybrid + rerank), the pipeline with the best objective on the other folds "
    "(ties: that order)"
)
NOT_MODELLED = "MMR over a hybrid's fused list (MMR is on its vector route), MMR with rerank on a hybrid"
SAVED_NOTE = (
    "tuned on every conversation after the held-out evaluation (each stage on all of them, the "
    "pipeline chosen by the same objective); the held-out table measures the per-fold tunings"
)


@dataclass(frozen=True)
class MmrPlan:
    pools: tuple[int, ...] = mmr_held.POOLS
    diversities: tuple[float, ...] = mmr_held.DIVERSITIES


@dataclass(frozen=True)
class RerankPlan:
    config: RerankerConfig
    depths: tuple[int, ...]
    blends: tuple[float, ...]
    subset: int | None = None
    subset_seed: int = 0
    cache: ScoreCache | None = field(default=None, compare=False)
    concurrency: int = 1


@dataclass(frozen=True)
class Pipeline:
    questions: pd.DataFrame  # per system and question (over the subset with a reranker)
    table: pd.DataFrame  # compare_systems; diff_best*: to the best single stage
    chosen: pd.DataFrame  # per fold: every pipeline's training objective, the one chosen
    details: dict[str, Any]


@dataclass(frozen=True)
class Saved:
    tuned: TunedSpec  # what --save writes
    pipeline: str  # the pipeline it holds
    best: str  # the best on every conversation (a hybrid when no file can hold it)
    objectives: dict[str, int]
    questions: int  # the questions the objectives count
    # every question's injected memories (dataset indices) under the saved pipeline, as the
    # study computed them: what a command reading the file must inject again
    lists: dict[int, tuple[int, ...]]


@dataclass(frozen=True)
class Outcome:
    held: HeldOut
    seconds: float  # the held-out study's
    staged: RerankHeldOut | None = None
    rerank_seconds: float = 0.0
    mmr: mmr_held.MmrHeldOut | None = None
    pipeline: Pipeline | None = None
    pipeline_seconds: float = 0.0
    saved: Saved | None = None


def lists_of(problem: RetrievalProblem, questions: pd.DataFrame, system: str) -> dict[int, tuple[int, ...]]:
    """A system's held-out injected memories per question (dataset indices), from its rows."""
    ids = {m: i for i, m in enumerate(problem.dataset.memory_ids)}
    place = {q.id: i for i, q in enumerate(problem.dataset.questions)}
    rows = questions[questions["system"] == system]
    return {
        place[q]: tuple(ids[m] for m in mem)
        for q, mem in zip(rows["question"], rows["memories"], strict=True)
    }


def choose_pipeline(objectives: dict[str, int]) -> str:
    """The pipeline with the best objective; ties: ``COMBINATIONS``' order."""
    return max(
        (n for n in COMBINATIONS if n in objectives), key=lambda n: (objectives[n], -COMBINATIONS.index(n))
    )


def combine(
    problem: RetrievalProblem,
    held: HeldOut,
    specs: dict[int, RetrievalSpec],
    mmr: mmr_held.MmrHeldOut | None,
    staged: RerankHeldOut | None,
    n_boot: int,
    seed: int,
    combined: dict[str, combos.Combo] | None = None,
) -> Pipeline:
    """The best combination per fold and the pipeline table (see the module)."""
    import pandas as pd

    from memlab.studies.heldout import question_values

    inputs, grid = held.inputs, held.grid
    fold = mmr_held.fold_of(held)
    relevant, nohit = mmr_held.targets(problem)
    units = haystack_units(problem)
    rows = np.arange(len(fold)) if staged is None else np.asarray(staged.rows)
    place = {int(r): i for i, r in enumerate(rows)}  # a subset row's place in the rerank arrays
    hyb = held.chosen[held.chosen["system"] == "hybrid"].set_index("fold")
    singles = {s: lists_of(problem, held.questions, s) for s in ("cosine", SPEC_SYSTEM, "hybrid")}
    if not singles["hybrid"]:  # --hybrids "": no hybrid tuned
        del singles["hybrid"]
    if mmr is not None:
        singles[mmr_held.SYSTEM] = mmr.lists
    if staged is not None:
        singles["+ rerank"] = lists_of(problem, staged.questions, "+ rerank")
    combined = combined or {}
    for name, combo in combined.items():
        singles[name] = combo.lists
    best_of: dict[int, tuple[int, ...]] = {}
    records = []
    for f in sorted(specs):
        train, test = rows[fold[rows] != f], rows[fold[rows] == f]
        if not len(test):
            continue
        every = {SPEC_SYSTEM: mmr.spec[f] if mmr is not None else mmr_held.spec_lists(inputs, specs[f])}
        if mmr is not None:
            every[mmr_held.SYSTEM] = mmr.stage[f]
        if staged is not None and f in staged.stages:
            mine = staged.stages[f]
            every["+ rerank"] = {int(r): mine[place[int(r)]] for r in rows}
        if f in hyb.index:
            rec = hyb.loc[f].to_dict()
            every["hybrid"] = every_row(inputs, rec["retriever"], hybrid_row(rec, grid), grid)
        for name, combo in combined.items():
            if f in combo.stage:
                every[name] = combo.stage[f]
        objectives = {n: mmr_held.list_objective(relevant, nohit, train, got) for n, got in every.items()}
        best = choose_pipeline(objectives)
        for r in test:
            best_of[int(r)] = every[best][int(r)]
        records.append(
            {
                "fold": f,
                "tuning_questions": len(train),
                "chosen": best,
                **{f"objective {n}": v for n, v in objectives.items()},
            }
        )
    order = [s for s in ("cosine", *COMBINATIONS) if s in singles]  # the table's order
    injected = {s: {int(r): singles[s][int(r)] for r in rows} for s in order}
    injected[COMBINED] = best_of
    questions = question_values(problem, injected, fold, units)
    first = compare_systems(questions, n_boot, seed)
    overall = first[first["group"] == "all"].set_index("system")["value"]
    present = [s for s in SINGLES if s in overall.index]
    best_single = max(present, key=lambda s: (overall[s], -SINGLES.index(s)))
    table = compare_systems(
        questions, n_boot, seed, references=tuple(dict.fromkeys(("cosine", SPEC_SYSTEM, best_single)))
    )
    for suffix in ("", "_lo", "_hi"):
        table[f"diff_best{suffix}"] = table[f"diff_{best_single}{suffix}"]
    details = {
        "best_single": best_single,
        "combinations": [n for n in COMBINATIONS if n in singles],
        "combined": {n: c.chosen.to_dict("records") for n, c in combined.items()},
        "not_modelled": NOT_MODELLED,
        "questions": len(rows),
    }
    return Pipeline(questions, table, pd.DataFrame(records), details)


def save_choice(
    problem: RetrievalProblem,
    held: HeldOut,
    mmr_plan: MmrPlan | None,
    staged: RerankHeldOut | None,
    reranker: Any,
    rerank_plan: RerankPlan | None,
    hybrids: Sequence[str] = HYBRIDS,
) -> Saved:
    """The pipeline tuned on every conversation (see the module), as a tuned file's record."""
    from memlab.core.rerank_stage import check_blend
    from memlab.studies.heldout import injected_lists
    from memlab.studies.rerank import fold_stage
    from memlab.studies.stages import injected_order
    from memlab.tuning.tuned import tuned_spec

    inputs, grid = held.inputs, held.grid
    relevant, nohit = mmr_held.targets(problem)
    everyone = np.arange(len(problem.dataset.questions))
    rows = everyone if staged is None else np.asarray(staged.rows)
    row, _ = tune(RETRIEVERS["vector-decay"], inputs, grid)
    spec = RetrievalSpec.from_row(row)
    every: dict[str, dict[int, tuple[int, ...]] | list[tuple[int, ...]]] = {
        SPEC_SYSTEM: mmr_held.spec_lists(inputs, spec)
    }
    specs: dict[str, RetrievalSpec] = {SPEC_SYSTEM: spec}
    stage = None
    if mmr_plan is not None:
        vectors = problem.memory_vectors() if max(mmr_plan.diversities) > 0 else None
        picked = mmr_held.picked_inputs(
            inputs, vectors, mmr_plan.pools, mmr_plan.diversities, spec.candidates
        )
        p, d, _, got = mmr_held.best_stage(picked, spec, rows, relevant, nohit)
        every[mmr_held.SYSTEM] = got
        specs[mmr_held.SYSTEM] = replace(spec, mmr_pool=p, diversity=d)
    blends = [b for b in (rerank_plan.blends if rerank_plan else ()) if check_blend(b, "--rerank-blend") > 0]
    if staged is not None and blends:
        pool = staged.pool.under(spec)
        at = np.arange(len(rows))
        chosen, mask = fold_stage(
            pool, staged.rerank, at, at, spec.inject, depths=rerank_plan.depths, blends=blends
        )
        got = injected_order(pool, staged.rerank, float(chosen["blend"]), mask)
        every["+ rerank"] = {int(r): got[i] for i, r in enumerate(rows)}
        specs["+ rerank"] = spec
        stage = RerankStage.from_row(chosen, reranker.config.kind, reranker.model)
    best_h = None
    for name in hybrids:
        r, value = tune(RETRIEVERS[name], inputs, grid)
        if best_h is None or value > best_h[1]:
            best_h = (name, value, r)
    if best_h is not None:
        every["hybrid"] = injected_lists(
            per_question(RETRIEVERS[best_h[0]], inputs, best_h[2], grid), grid.inject
        )
    objectives = {n: mmr_held.list_objective(relevant, nohit, rows, got) for n, got in every.items()}
    best = choose_pipeline(objectives)
    held_in_file = choose_pipeline({n: v for n, v in objectives.items() if n != "hybrid"})
    saved_spec = specs[held_in_file]
    selection = {
        "rule": "tune-benchmark: the pipeline with the best objective (answered minus no-hit injected)",
        "pipeline": held_in_file,
        "best_on_every_conversation": best,
        "objectives": objectives,
        "questions": len(rows),
        "note": SAVED_NOTE
        + (
            ""
            if best == held_in_file
            else f"; the best was {best}, which a tuned file cannot hold (no vector spec)"
        ),
    }
    tuned = tuned_spec(
        problem, saved_spec, selection=selection, rerank=stage if held_in_file == "+ rerank" else None
    )
    got = every[held_in_file]
    lists = {int(r): got[int(r)] for r in rows}
    return Saved(tuned, held_in_file, best, objectives, len(rows), lists)


def benchmark_study(
    problem: RetrievalProblem,
    *,
    folds: int | None = None,
    seed: int = 0,
    grid: RetrieverGrid | None = None,
    n_boot: int = 1000,
    false_rate: float = 0.01,
    probes: str = "offtopic",
    probe_vectors: np.ndarray | None = None,
    hybrids: Sequence[str] = HYBRIDS,
    mmr: MmrPlan | None = None,
    rerank: RerankPlan | None = None,
    save: bool = False,
    progress: bool = False,
) -> Outcome:
    """The held-out study with its stages (see the module): what ``memlab tune-benchmark`` prints."""
    t0 = time.perf_counter()
    held = held_out(
        problem,
        folds=folds,
        seed=seed,
        grid=grid,
        n_boot=n_boot,
        false_rate=false_rate,
        probes=probes,
        probe_vectors=probe_vectors,
        hybrids=hybrids,
        progress=progress,
    )
    seconds = time.perf_counter() - t0
    from memlab.studies.stages import fold_specs

    specs = fold_specs(held) if (mmr is not None or rerank is not None or save) else {}
    t2 = time.perf_counter()
    mmr_result = (
        None
        if mmr is None
        else mmr_held.mmr_held_out(problem, held, specs, pools=mmr.pools, diversities=mmr.diversities)
    )
    combined: dict[str, combos.Combo] = {}
    has_hybrid = bool((held.chosen["system"] == "hybrid").any())
    if mmr_result is not None and has_hybrid:
        combined[HYBRID_MMR] = combos.hybrid_mmr(problem, held, mmr_result.picked)
    pipeline_seconds = time.perf_counter() - t2
    staged, rerank_seconds, reranker = None, 0.0, None
    if rerank is not None:
        from memlab.rerank.clients import Reranker
        from memlab.studies.stages import rerank_held_out

        reranker = Reranker(rerank.config)
        t1 = time.perf_counter()
        try:
            staged = rerank_held_out(
                problem,
                held,
                reranker,
                depths=rerank.depths,
                blends=rerank.blends,
                subset=rerank.subset,
                subset_seed=rerank.subset_seed,
                cache=rerank.cache,
                concurrency=rerank.concurrency,
            )
            rows = np.asarray(staged.rows)
            pools = {}
            if mmr_result is not None:
                pools[MMR_RERANK] = combos.mmr_pools(
                    problem, held, specs, mmr_result.chosen, rows, max(rerank.depths)
                )
            if has_hybrid:
                pools[HYBRID_RERANK] = combos.hybrid_pools(problem, held, rows, max(rerank.depths))
            scores = combos.known_scores(rows, staged.pool.index, staged.rerank)
            missing = [pair for mine in pools.values() for pair in combos.missing_pairs(mine, rows, scores)]
            scores.update(
                combos.score_missing(
                    problem, list(dict.fromkeys(missing)), reranker, rerank.cache, rerank.concurrency
                )
            )
            for name, mine in pools.items():
                combined[name] = combos.rerank_combo(
                    mine, rows, staged.fold, scores, depths=rerank.depths, blends=rerank.blends
                )
        finally:
            reranker.close()
        rerank_seconds = time.perf_counter() - t1
    if mmr is None and staged is None and not save:
        return Outcome(held, seconds, staged, rerank_seconds)
    t2 = time.perf_counter()
    pipeline = combine(problem, held, specs, mmr_result, staged, n_boot, seed, combined)
    pipeline = replace(
        pipeline,
        details={**pipeline.details, **({"mmr": mmr_result.details} if mmr_result is not None else {})},
    )
    saved = save_choice(problem, held, mmr, staged, reranker, rerank, hybrids) if save else None
    return Outcome(
        held,
        seconds,
        staged,
        rerank_seconds,
        mmr_result,
        pipeline,
        pipeline_seconds + time.perf_counter() - t2,
        saved,
    )
