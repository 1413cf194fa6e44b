"""Held-out tuning on a benchmark: tune on some haystacks (LoCoMo's conversations), evaluate on
the others, and compare with paired bootstrap intervals.

The questions are split by haystack into ``folds`` folds (a seeded permutation of the haystacks,
dealt round-robin), so no conversation is both tuned on and evaluated. For each fold every system
below is tuned on the other folds' questions by the sweep (``memlab.studies.hybrid.sweep_retriever``,
thresholds spanning the system's own scores) and run on the fold's questions; every question is
evaluated once, by systems tuned without it.

The tuning objective, per configuration, over the tuning questions: the questions answered (a
relevant memory injected: ``answered_any`` of the sweep's ``answered`` group) minus the no-hit
questions with any memory injected (``nohit_injected_questions``). Each question counts +1, 0 or
-1; ties go to the sweep's ``max-utility`` order with the objective for the utility
(``memlab.core.selection.select``: feasible, then the largest margin, smaller bonus, smaller tau,
grid order).

Systems (``SYSTEMS``):

- ``cosine``: plain cosine top-k, the first ``inject`` memories by raw cosine, no bonus, no
  threshold (nothing to tune);
- ``cosine+threshold``: cosine with the threshold tuned (retriever ``vector``);
- ``recency``: the recency spec tuned, bonus, tau and threshold (retriever ``vector-decay``);
- ``recency+calibrated``: the tuned recency spec with the threshold that calibration chooses
  without labels on each evaluated conversation's own memories (``memlab.studies.calibration``:
  off-topic probes, at most ``false_rate`` of them injecting);
- ``bm25``: BM25 top-k with the threshold tuned (retriever ``vector`` over the BM25 table);
- ``hybrid``: of the hybrid retrievers (``HYBRIDS``: hybrid-weighted, hybrid-rrf, rrf-time,
  gate-vector-decay; gate-decay when asked for), the one whose tuned objective is best on the
  tuning folds (the first listed among equals), tuned.

Per question: ``recall_any`` of the injected list (1 when a relevant memory is injected) for a
question with relevant memories, ``injects`` (any memory injected) for a no-hit one, and its
``utility`` (+recall_any, or -injects). The table reports per category (and over all questions)
the mean, and the paired bootstrap interval of its difference to each reference system
(``memlab.drift.intervals.paired_bootstrap_ci``, questions resampled).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core.errors import InputError
from memlab.core.labels import Labels
from memlab.core.numbers import check_fits, check_number
from memlab.core.selection import select
from memlab.core.spec import RetrievalSpec, age_days
from memlab.drift.intervals import paired_bootstrap_ci
from memlab.retrieval.inputs import RetrievalInputs, build_inputs, compact
from memlab.retrieval.retrievers import RETRIEVERS, Retriever
from memlab.studies.calibration import calibrated_threshold, probe_best
from memlab.studies.hybrid import RetrieverGrid, per_question, sweep_retriever

if TYPE_CHECKING:
    import pandas as pd

    from memlab.scores.problem import RetrievalProblem

# the hybrid retrievers the best is chosen from by default; gate-decay (fusion axes x bonus x tau x
# thresholds: 266,640 configurations per fold at the default grid) only when named
HYBRIDS = ("hybrid-weighted", "hybrid-rrf", "rrf-time", "gate-vector-decay")
REFERENCES = ("cosine", "recency")  # the systems every other is differenced against
OBJECTIVE = (
    "questions answered (a relevant memory injected) minus no-hit questions with any memory "
    "injected, over the tuning folds"
)


@dataclass(frozen=True)
class System:
    name: str
    meaning: str


SYSTEMS: dict[str, System] = {
    s.name: s
    for s in (
        System("cosine", "plain cosine top-k: the first inject memories by raw cosine, no threshold"),
        System("cosine+threshold", "cosine with a tuned threshold (retriever vector)"),
        System("recency", "the recency spec tuned: bonus, tau, threshold (retriever vector-decay)"),
        System(
            "recency+calibrated",
            "the tuned recency spec, threshold from calibration on each evaluated conversation's memories",
        ),
        System("bm25", "BM25 top-k with a tuned threshold"),
        System("hybrid", "the hybrid retriever with the best objective on the tuning folds, tuned"),
    )
}


DEFAULT_FOLDS = 5  # folds by haystack when the caller names none (fewer haystacks: one each)


def haystack_units(problem: RetrievalProblem) -> list[str]:
    """Each question's haystack as one label (its conversation; ``+``-joined sessions)."""
    return ["+".join(q.haystack) if q.haystack else "" for q in problem.dataset.questions]


def assign_folds(
    units: Sequence[str], folds: int, seed: int, haystacks: Sequence[str] | None = None
) -> np.ndarray:
    """(Q,) the fold of each question: its haystack's, from a seeded permutation of the
    haystacks (in first-seen order, or in the order ``haystacks`` gives: several datasets of one
    benchmark then share their folds) dealt round-robin over ``folds``."""
    check_number(folds, "folds", integer=True, minimum=2)
    check_number(seed, "seed", integer=True, minimum=0)
    names = list(dict.fromkeys(units if haystacks is None else haystacks))
    unknown = sorted(set(units) - set(names))
    if unknown:
        raise InputError(f"haystacks: {unknown[0]!r} is a question's haystack but not in the order given")
    if names == [""]:
        raise InputError(
            "held-out tuning splits the questions by haystack, and this dataset's questions carry "
            "none: import a benchmark (memlab import-locomo, import-longmemeval), whose questions "
            "carry their conversation or sessions"
        )
    if len(names) < 2:
        raise InputError(
            f"held-out tuning splits the questions by haystack, and every question of this dataset "
            f"searches the same one ({names[0]}): it needs two or more (a LoCoMo import of every "
            "conversation, not --conversation; a LongMemEval file with several questions)"
        )
    if folds > len(names):
        raise InputError(
            f"--folds {folds}: the dataset has only {len(names)} haystacks; use --folds {len(names)} "
            "or fewer (one fold per haystack at most)"
        )
    perm = np.random.default_rng(seed).permutation(len(names))
    fold_of = {names[j]: i % folds for i, j in enumerate(perm)}
    return np.array([fold_of[u] for u in units])


def fold_split(fold: np.ndarray, f: int) -> tuple[np.ndarray, np.ndarray]:
    """(the rows fold ``f`` is tuned on: every other fold's; the rows it is evaluated on: its own)."""
    return np.flatnonzero(fold != f), np.flatnonzero(fold == f)


def tuned_folds(
    fold: np.ndarray, specs: Mapping[int, RetrievalSpec]
) -> Iterator[tuple[int, RetrievalSpec, np.ndarray, np.ndarray]]:
    """Each fold that has a tuned spec and rows of its own, in fold order: (the fold, its spec,
    ``fold_split``): what a stage held out on top of the tuned specs walks."""
    for f in sorted(specs):
        train, test = fold_split(fold, f)
        if len(test):
            yield f, specs[f], train, test


def subset(inputs: RetrievalInputs, rows: np.ndarray) -> RetrievalInputs:
    """The inputs of some questions (every memory kept); no criteria: the objective decides."""
    lab = inputs.labels
    labels = Labels(
        tuple(lab.question_ids[i] for i in rows),
        tuple(lab.kinds[i] for i in rows),
        lab.current[rows],
        tuple(lab.stale[i] for i in rows),
        None if lab.relevant is None else tuple(lab.relevant[i] for i in rows),
    )
    return RetrievalInputs(
        labels.question_ids,
        inputs.vector[rows],
        None if inputs.keyword is None else inputs.keyword[rows],
        inputs.ages[rows],
        inputs.memory_dates,
        tuple(inputs.time_ranges[i] for i in rows),
        labels,
        (),
        inputs.meta,
        None if inputs.slots is None else inputs.slots[rows],
    )


def objective(table: pd.DataFrame) -> np.ndarray:
    """Per configuration: questions answered minus no-hit questions with a memory injected."""
    return table["answered_any"].to_numpy(dtype=np.int64) - table["nohit_injected_questions"].to_numpy(
        dtype=np.int64
    )


def tune(retriever: Retriever, inputs: RetrievalInputs, grid: RetrieverGrid) -> tuple[pd.Series, int]:
    """The retriever's configuration with the best objective on ``inputs``, and that objective."""
    table = sweep_retriever(retriever, inputs, grid, metrics=("answered",))
    value = objective(table)
    i = select(table, "max-utility", value=value)  # the objective in the utility's place
    return table.iloc[i], int(value[i])


def injected_lists(long: pd.DataFrame, n_inject: int) -> list[tuple[int, ...]]:
    """Per question of a one-configuration long frame: the injected memory indices, in order."""
    slots = [f"slot_{j + 1}" for j in range(n_inject) if f"slot_{j + 1}" in long]
    values = long[slots].to_numpy(dtype=np.int64) if slots else np.zeros((len(long), 0), np.int64)
    return [tuple(int(m) for m in row if m >= 0) for row in values]


def fixed_row(grid: RetrieverGrid, threshold: float, spec: RetrievalSpec | None = None) -> dict[str, Any]:
    """A configuration as a sweep row (for ``per_question``): the spec's bonus and family, or none."""
    spec = spec or RetrievalSpec(bonus=0.0, tau_days=1.0)
    return {
        "candidates": grid.candidates,
        "inject": grid.inject,
        "threshold": threshold,
        "bonus": spec.bonus,
        "tau_days": spec.tau_days,
        "decay": spec.decay,
        "combine": spec.combine,
    }


@dataclass(frozen=True)
class HeldOut:
    questions: pd.DataFrame  # one row per system and question: fold, category, kind, the values
    table: pd.DataFrame  # per category and system: mean and paired differences to the references
    chosen: pd.DataFrame  # per fold and tuned system: its configuration and tuning objective
    details: dict[str, Any]
    # what the stages held out (``memlab.studies.pipeline``) tune on: the study's compacted inputs
    # (BM25 included) and its grid
    inputs: RetrievalInputs | None = field(default=None, compare=False, repr=False)
    grid: RetrieverGrid | None = field(default=None, compare=False, repr=False)


def held_out(
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
    progress: bool = False,
    haystacks: Sequence[str] | None = None,
) -> HeldOut:
    """Tune every system on the other folds and evaluate it on each fold (see the module);
    ``folds`` None: ``DEFAULT_FOLDS``, or one per haystack when there are fewer; ``progress``: a
    bar over the folds' tunings (on a terminal); ``haystacks``: the order the folds deal them in
    (``assign_folds``; None: first seen)."""
    import pandas as pd
    from tqdm.auto import tqdm

    check_number(false_rate, "false_rate", minimum=0, below=1)
    check_number(n_boot, "n_boot", integer=True, minimum=1)
    grid = grid or RetrieverGrid()
    dataset = problem.dataset
    # each resample draws one index per question (int64) and sums it: before, 10**30 resamples were
    # numpy's "Maximum allowed dimension exceeded" traceback
    check_fits(n_boot, "n_boot", 16 * max(len(dataset.questions), 1), "bootstrap resamples")
    units = haystack_units(problem)
    if folds is None:  # at least 2: with one haystack, assign_folds says what is missing
        folds = max(2, min(DEFAULT_FOLDS, len(set(units if haystacks is None else haystacks))))
    fold = assign_folds(units, folds, seed, haystacks)
    # each question over its own conversation's memories: the same choices, a tenth of the width
    # a tenant filter: the other tenants' memories in no route and in no calibration
    allowed = problem.pool.allowed
    inputs = compact(
        build_inputs(dataset, problem.scores.raw, lang=problem.lang, keyword=True, allowed=allowed)
    )
    # BM25 as the vector route's table; a memory sharing no term with the question (BM25 0) is
    # no match, as the keyword route has it
    keyword = replace(inputs, vector=np.where(inputs.keyword > 0, inputs.keyword, np.nan))
    if probe_vectors is None:
        from memlab.datasets.probes import load_probes

        probe_vectors = problem.embed_queries(load_probes(probes).texts(problem.lang))
    memory_vectors = problem.memory_vectors()
    groups = np.array([m.group for m in dataset.memories], dtype=object)
    memory_dates = dataset.memory_dates()
    asked = dataset.question_references()

    injected: dict[str, dict[int, tuple[int, ...]]] = {name: {} for name in SYSTEMS}
    chosen = []
    bar = tqdm(total=folds * (3 + len(hybrids)), desc="tuning", unit="system", disable=not progress)
    for f in range(folds):
        train, test = fold_split(fold, f)
        tr, te = subset(inputs, train), subset(inputs, test)
        floor = float(np.nanmin(np.where(np.isfinite(te.vector), te.vector, np.inf))) - 1.0
        lists = injected_lists(
            per_question(RETRIEVERS["vector"], te, fixed_row(grid, floor), grid), grid.inject
        )
        injected["cosine"].update(zip(test, lists, strict=True))
        tuned: dict[str, tuple[Retriever, RetrievalInputs, RetrievalInputs, Any, int]] = {}
        for system, name, source in (
            ("cosine+threshold", "vector", inputs),
            ("recency", "vector-decay", inputs),
            ("bm25", "vector", keyword),
        ):
            r = RETRIEVERS[name]
            row, value = tune(r, subset(source, train), grid)
            tuned[system] = (r, subset(source, train), subset(source, test), row, value)
            bar.update(1)
        best = None
        for name in hybrids:
            r = RETRIEVERS[name]
            row, value = tune(r, tr, grid)
            bar.update(1)
            if best is None or value > best[4]:
                best = (r, tr, te, row, value)
        if best is not None:
            tuned["hybrid"] = best
        for system, (r, _, test_inputs, row, value) in tuned.items():
            lists = injected_lists(per_question(r, test_inputs, row, grid), grid.inject)
            injected[system].update(zip(test, lists, strict=True))
            chosen.append(
                {
                    "fold": f,
                    "system": system,
                    "retriever": r.name,
                    **{k: row.get(k) for k in ("norm", "alpha", "rrf_k")},
                    **{k: row[k] for k in ("bonus", "tau_days", "decay", "combine", "threshold")},
                    "objective": value,
                    "tuning_questions": len(train),
                }
            )
        # the tuned recency spec, its threshold calibrated on each evaluated haystack's memories
        spec = RetrievalSpec.from_row(tuned["recency"][3])
        for unit in dict.fromkeys(units[i] for i in test):
            rows = test[[units[i] == unit for i in test]]
            when = asked[rows].max()
            mine = np.flatnonzero(
                ((groups == "") | np.isin(groups, unit.split("+")))
                & (memory_dates <= when)
                & (True if allowed is None else allowed)
            )
            ages = age_days(memory_dates[mine], when)
            best_probe = probe_best(probe_vectors, memory_vectors[mine], ages, spec)
            t_cal = calibrated_threshold(best_probe.final, false_rate)
            row = fixed_row(grid, t_cal, spec)
            lists = injected_lists(
                per_question(RETRIEVERS["vector-decay"], subset(inputs, rows), row, grid), grid.inject
            )
            injected["recency+calibrated"].update(zip(rows, lists, strict=True))
            chosen.append(
                {
                    "fold": f,
                    "system": "recency+calibrated",
                    "retriever": "vector-decay",
                    "haystack": unit,
                    **{k: row[k] for k in ("bonus", "tau_days", "decay", "combine", "threshold")},
                    "tuning_questions": len(train),
                }
            )
    bar.close()
    questions = question_values(problem, injected, fold, units)
    table = compare_systems(questions, n_boot, seed)
    details = {
        **({} if problem.scope.trivial else {"scope": problem.scope.describe()}),
        "dataset": dataset.name,
        "benchmark": dataset.benchmark,
        "questions": len(dataset.questions),
        "haystacks": len(set(units)),
        "folds": folds,
        "fold_haystacks": {
            f: sorted(dict.fromkeys(u for u, g in zip(units, fold, strict=True) if g == f))
            for f in range(folds)
        },
        "seed": seed,
        "boot": n_boot,
        "objective": OBJECTIVE,
        "candidates": grid.candidates,
        "inject": grid.inject,
        "false_rate": false_rate,
        "probes": probes,
        "model": problem.model_id,
        "source": problem.source,
    }
    return HeldOut(questions, table, pd.DataFrame(chosen), details, inputs, grid)


def question_values(problem: RetrievalProblem, injected: dict[str, dict[int, tuple[int, ...]]], fold, units):
    """One row per system and question: ``recall_any`` (and recall_all, ndcg_any, mrr) of its
    injected list for a question with relevant memories, ``injects`` for a no-hit one, and the
    ``utility`` (+recall_any or -injects; NaN for a question with neither)."""
    import pandas as pd

    from memlab.tuning.ir_metrics import lme_ndcg, trec_scores

    dataset = problem.dataset
    ids = dataset.memory_ids
    k = max(1, max((len(v) for per in injected.values() for v in per.values()), default=1))
    qrels = {}
    for q in dataset.questions:
        rel = tuple(dict.fromkeys((*((q.current,) if q.current else ()), *q.relevant)))
        if rel and q.kind != "nohit":
            qrels[q.id] = rel
    rows = []
    for system, per in injected.items():
        lists = {dataset.questions[i].id: [ids[m] for m in per[i]] for i in sorted(per)}
        trec = trec_scores(lists, qrels, (k,))
        for i in sorted(per):
            q = dataset.questions[i]
            row = {
                "system": system,
                "question": q.id,
                "fold": int(fold[i]),
                "haystack": units[i],
                "kind": q.kind,
                "category": q.category or q.kind,
                "injected": len(per[i]),
                "memories": tuple(ids[m] for m in per[i]),  # the injected memories' ids, in order
                "injects": float(bool(per[i])) if q.kind == "nohit" else np.nan,
                "recall_any": np.nan,
                "recall_all": np.nan,
                "ndcg_any": np.nan,
                "mrr": np.nan,
            }
            if q.id in qrels:
                got = trec[q.id]
                row.update(
                    recall_any=got[f"recall_any@{k}"],
                    recall_all=got[f"recall_all@{k}"],
                    ndcg_any=lme_ndcg(lists[q.id], qrels[q.id], k),
                    mrr=got["mrr"],
                )
            row["utility"] = (
                row["recall_any"] if q.id in qrels else (-row["injects"] if q.kind == "nohit" else np.nan)
            )
            rows.append(row)
    return pd.DataFrame(rows)


def compare_systems(
    questions: pd.DataFrame,
    n_boot: int,
    seed: int,
    *,
    by: str = "system",
    references: Sequence[str] = REFERENCES,
    costs: Sequence[str] = (),
) -> pd.DataFrame:
    """Per group (``all``: the utility over every question; each category: recall_any of the
    injected list, or the false-injection rate of a no-hit category) and each value of ``by``
    (the system; the memory unit in ``memlab.studies.units``): the mean and, to each reference,
    the mean paired difference with its 95% bootstrap interval (the same resampled questions for
    both), and the questions where it does better (``wins_<ref>``) and worse (``losses_<ref>``).
    Each column of ``costs`` (the injected tokens) gets its mean over the group's questions and
    its paired difference the same way."""
    import pandas as pd

    systems = list(dict.fromkeys(questions[by]))
    base = questions[questions[by] == systems[0]]
    groups: list[tuple[str, str, np.ndarray]] = [("all", "utility", base["utility"].notna().to_numpy())]
    for cat in dict.fromkeys(base["category"]):
        rows = (base["category"] == cat).to_numpy()
        nohit = (base.loc[rows, "kind"] == "nohit").all()
        groups.append((str(cat), "false_injection_rate" if nohit else "recall_any", rows))
    column = {"utility": "utility", "recall_any": "recall_any", "false_injection_rate": "injects"}
    out = []
    for group, measure, rows in groups:
        values, spent = {}, {}
        for s in systems:
            mine = questions[questions[by] == s]
            v = mine[column[measure]].to_numpy(dtype=float)[rows]
            keep = ~np.isnan(v) if measure != "utility" else np.ones(len(v), bool)
            values[s] = v[keep]
            spent[s] = {c: mine[c].to_numpy(dtype=float)[rows][keep] for c in costs}
        for s in systems:
            v = values[s]
            row: dict[str, Any] = {"group": group, "measure": measure, by: s, "n": len(v)}
            row["value"] = float(v.mean()) if len(v) else np.nan
            for c in costs:
                row[c] = float(spent[s][c].mean()) if len(v) else np.nan
            for ref in references:
                pairs = [("diff", v, values.get(ref))] + [
                    (f"{c}_diff", spent[s][c], spent.get(ref, {}).get(c)) for c in costs
                ]
                for name, mine, theirs in pairs:
                    if theirs is None or ref == s or not len(v):
                        row[f"{name}_{ref}"] = row[f"{name}_{ref}_lo"] = row[f"{name}_{ref}_hi"] = np.nan
                        continue
                    lo, hi = paired_bootstrap_ci(mine[:, None], theirs[:, None], n_boot, seed)[:, 0]
                    row[f"{name}_{ref}"] = float((mine - theirs).mean())
                    row[f"{name}_{ref}_lo"], row[f"{name}_{ref}_hi"] = float(lo), float(hi)
                if ref in values and ref != s:
                    # a false-injection rate: lower is better (a win keeps a question clean)
                    sign = -1.0 if measure == "false_injection_rate" else 1.0
                    row[f"wins_{ref}"] = int((sign * (v - values[ref]) > 0).sum())
                    row[f"losses_{ref}"] = int((sign * (v - values[ref]) < 0).sum())
            out.append(row)
    return pd.DataFrame(out)
