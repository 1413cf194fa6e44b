"""The MMR stage held out: ``+ MMR`` beside the held-out study's systems
(``memlab.studies.heldout``), per LoCoMo category and overall, with the same paired bootstrap.

Per fold of the held-out study, on top of that fold's tuned recency spec (the ``recency`` system:
its bonus, tau, family, threshold, candidates and inject, tuned on the other folds):

- MMR (``memlab.core.mmr``, Qdrant's ``mmr`` query) picks each question's ``candidates`` among
  its top ``pool`` memories by raw cosine over its own conversation (the study's compacted
  inputs), relevance the raw cosine, similarity the memories' cosine; the bonus, the re-sort,
  the threshold and inject then read those candidates as the spec reads its own (MMR sits
  before the bonus: the only place Qdrant's query API can put it);
- every (pool, diversity) of a small grid is measured on the fold's training questions by the
  held-out objective (answered minus no-hit questions injected); the best (ties: the smaller
  pool, then the smaller diversity: the stage closest to no MMR) is the fold's stage;
- the stage is kept only when that training objective is strictly above the tuned spec's own on
  the same questions; otherwise the fold's ``+ MMR`` is the tuned spec unchanged.

Only MMR's two fields are tuned, the rest is the fold's tuned spec: a stage credited with a
re-tuned threshold would be measuring the threshold, not the diversification (as ``+ rerank``
does, ``memlab.studies.stages``). The picks depend on raw cosine and the vectors only, so each
(pool, diversity) is picked once for every question (``memlab.core.sweep_mmr.mmr_picks``) and
each fold's spec then runs the one-configuration sweep over the picked memories.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core.errors import InputError
from memlab.core.grid import Axis, Grid
from memlab.core.spec import MMR_NEEDS_VECTORS, SPEC_BOUNDS, RetrievalSpec
from memlab.core.sweep import sweep
from memlab.core.sweep_mmr import mmr_picks, picked_only
from memlab.studies.heldout import HeldOut, injected_lists, tuned_folds

if TYPE_CHECKING:
    import pandas as pd

    from memlab.retrieval.inputs import RetrievalInputs
    from memlab.scores.problem import RetrievalProblem

SYSTEM = "+ MMR"  # the system's name in the held-out tables
MEANING = (
    "the tuned recency spec with MMR's pool and diversity tuned on the other folds (kept when it "
    "beats the spec there)"
)
POOLS = (16, 32)  # MMR's pools tried per fold (the default candidates is 8: two and four times it)
DIVERSITIES = (0.1, 0.25, 0.5)  # diversity 0 is the spec itself (relevance alone), so not tried


def check_grid(
    pools: Sequence[int], diversities: Sequence[float]
) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The grid sorted, each value checked as the spec's field is (one line naming the flag)."""
    p = Axis.of(tuple(pools), integer=True).check("--mmr-pools", **SPEC_BOUNDS["mmr_pool"])
    d = Axis.of(tuple(diversities)).check("--mmr-diversities", **SPEC_BOUNDS["diversity"])
    if not len(p) or not len(d):
        raise InputError("--mmr-pools and --mmr-diversities: give at least one value each")
    if min(p) < 1:
        raise InputError("--mmr-pools: an MMR pool is 1 or more (0 is the spec without MMR)")
    return tuple(sorted({int(x) for x in p})), tuple(sorted({float(x) for x in d}))


def spec_lists(inputs: RetrievalInputs, spec: RetrievalSpec) -> list[tuple[int, ...]]:
    """Every question's injected memories (dataset indices, in order) under one vector spec: the
    sweep's one-configuration long form over ``inputs``' vector table (as ``per_question`` runs
    the ``vector-decay`` retriever)."""
    long = sweep(inputs.vector, inputs.ages, inputs.labels, Grid.of(spec), (), long=True)
    return injected_lists(inputs.memory_slots(long), spec.inject)


def targets(problem: RetrievalProblem) -> tuple[list[frozenset[int]], np.ndarray]:
    """Per question: its relevant memories' indices (its current memory and its labels), and
    whether it is a no-hit question."""
    dataset = problem.dataset
    ids = {m: i for i, m in enumerate(dataset.memory_ids)}
    relevant = [
        frozenset(ids[m] for m in (*((q.current,) if q.current else ()), *q.relevant) if m in ids)
        for q in dataset.questions
    ]
    return relevant, np.array([q.kind == "nohit" for q in dataset.questions], dtype=bool)


def list_objective(
    relevant: Sequence[frozenset[int]], nohit: np.ndarray, rows: np.ndarray, lists: Sequence[Sequence[int]]
) -> int:
    """The held-out objective of some questions' injected lists: the answered ones (a relevant
    memory injected) minus the no-hit ones with any memory injected (``heldout.objective``, counted
    from the lists)."""
    answered = sum(1 for r in rows if not nohit[r] and relevant[r].intersection(lists[r]))
    polluted = sum(1 for r in rows if nohit[r] and len(lists[r]))
    return int(answered - polluted)


def fold_of(held: HeldOut) -> np.ndarray:
    """(Q,) each question's fold, as the held-out study dealt them."""
    cos = held.questions[held.questions["system"] == "cosine"]
    return cos["fold"].to_numpy(dtype=np.int64)


def picked_inputs(
    inputs: RetrievalInputs,
    vectors: np.ndarray | None,
    pools: Sequence[int],
    diversities: Sequence[float],
    limit: int,
) -> dict[tuple[int, float], RetrievalInputs]:
    """Per (pool, diversity): the inputs with every memory MMR did not pick (its first ``limit``
    picks) unknown, for every question at once."""
    return {
        (p, d): replace(
            inputs,
            vector=picked_only(
                inputs.vector, mmr_picks(inputs.vector, vectors, p, d, limit, slots=inputs.slots)
            ),
        )
        for p in pools
        for d in diversities
    }


def best_stage(
    picked: dict[tuple[int, float], RetrievalInputs],
    spec: RetrievalSpec,
    rows: np.ndarray,
    relevant: Sequence[frozenset[int]],
    nohit: np.ndarray,
) -> tuple[int, float, int, list[tuple[int, ...]]]:
    """The (pool, diversity) with the best objective on ``rows`` under ``spec``: (pool, diversity,
    that objective, every question's injected memories). Ties: the first in (pool, diversity)
    order, the smaller pool, then the smaller diversity."""
    best = None
    for (p, d), where in picked.items():
        got = spec_lists(where, spec)
        value = list_objective(relevant, nohit, rows, got)
        if best is None or value > best[2]:
            best = (p, d, value, got)
    return best


@dataclass(frozen=True)
class MmrHeldOut:
    lists: dict[int, tuple[int, ...]]  # + MMR's injected memories per question (the keep rule)
    # per fold: every question's injected memories under that fold's tuned stage (kept or not)
    # and under its tuned spec: what the best combination compares on the training questions
    stage: dict[int, list[tuple[int, ...]]]
    spec: dict[int, list[tuple[int, ...]]]
    chosen: pd.DataFrame  # per fold: the stage tuned there, both training objectives, kept or not
    details: dict[str, Any]
    # per (pool, diversity): the study's inputs with MMR's picks alone on the vector route (at the
    # specs' candidates), which hybrid + MMR reads (``memlab.studies.combos``)
    picked: dict[tuple[int, float], RetrievalInputs] = field(default_factory=dict, compare=False, repr=False)


def mmr_held_out(
    problem: RetrievalProblem,
    held: HeldOut,
    specs: dict[int, RetrievalSpec],
    *,
    pools: Sequence[int] = POOLS,
    diversities: Sequence[float] = DIVERSITIES,
    vectors: np.ndarray | None = None,
) -> MmrHeldOut:
    """``+ MMR`` on every fold of ``held`` (see the module); ``specs``: each fold's tuned recency
    spec (``memlab.studies.stages.fold_specs``); ``vectors``: the memories' (None: the problem's)."""
    import pandas as pd

    pools, diversities = check_grid(pools, diversities)
    inputs = held.inputs
    if inputs is None:
        raise InputError("mmr_held_out: the held-out study's inputs are missing (run held_out first)")
    if vectors is None and max(diversities) > 0:
        if problem.scores.vectors is None:
            raise InputError(MMR_NEEDS_VECTORS)
        vectors = problem.memory_vectors()
    fold = fold_of(held)
    relevant, nohit = targets(problem)
    picked = picked_inputs(inputs, vectors, pools, diversities, max(s.candidates for s in specs.values()))
    lists: dict[int, tuple[int, ...]] = {}
    stage: dict[int, list[tuple[int, ...]]] = {}
    plain: dict[int, list[tuple[int, ...]]] = {}
    records = []
    for f, spec, train, test in tuned_folds(fold, specs):
        plain[f] = spec_lists(inputs, spec)
        spec_value = list_objective(relevant, nohit, train, plain[f])
        p, d, value, got = best_stage(picked, spec, train, relevant, nohit)
        kept = value > spec_value
        stage[f] = got
        for r in test:
            lists[int(r)] = (got if kept else plain[f])[r]
        records.append(
            {
                "fold": f,
                "tuning_questions": len(train),
                "spec_objective": spec_value,
                "mmr_pool": p,
                "diversity": d,
                "stage_objective": value,
                "kept": kept,
            }
        )
    details = {"pools": list(pools), "diversities": list(diversities)}
    return MmrHeldOut(lists, stage, plain, pd.DataFrame(records), details, picked)
