"""The hybrid comparison: every retriever tuned by the same sweep, criteria and utility, then compared.

A fused score has no absolute scale (min-max puts every question's best candidate at 1), so a
retriever's threshold is calibrated on its own scores: the threshold axis spans the range of final
scores the retriever produces (``threshold_steps`` evenly spaced values, 201 by default), and the
sweep picks it with the criteria, like bonus and tau. Headroom is then in the retriever's own units.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core.errors import InputError
from memlab.core.grid import Grid
from memlab.core.numbers import check_fits, check_number, check_work
from memlab.core.registry import check_names
from memlab.core.selection import select, utility
from memlab.core.spec import COMBINES, DECAYS, SPEC_BOUNDS, RetrievalSpec
from memlab.core.sweep import sweep
from memlab.retrieval.gate import time_gate
from memlab.retrieval.inputs import RetrievalInputs, build_inputs, compact
from memlab.retrieval.retrievers import Retriever, check_retrievers, retriever_scores, uses_keywords
from memlab.scores.sources import ScoreOptions

if TYPE_CHECKING:
    import pandas as pd

    from memlab.scores.problem import RetrievalProblem

# The comparison judges each retriever by what it reports (current memories injected, stale
# injections, no-hit injections), so its utility counts no wrong injections: the sweep's utility
# (memlab.core.selection.utility) with wrong_weight 0. Its measured tables (docs/hybrid.md) rest
# on this; with wrong_weight 1, seed16-time's choices move (daily-lunch's do not).
WRONG_WEIGHT = 0.0


MAX_AXIS = 10_000  # values of one axis of a comparison


@dataclass(frozen=True)
class RetrieverGrid:
    """The axes a comparison sweeps; each retriever uses the ones it has."""

    alphas: tuple[float, ...] = tuple(np.round(np.linspace(0, 1, 11), 2).tolist())
    norms: tuple[str, ...] = ("min-max", "z-score", "none")
    rrf_ks: tuple[float, ...] = (1, 2, 10, 60)
    bonus: tuple[float, ...] = tuple(np.round(np.linspace(0, 0.3, 31), 3).tolist())
    tau_days: tuple[float, ...] = (1, 3, 7, 14, 30, 60)
    decay: tuple[str, ...] = (RetrievalSpec.decay,)  # the decay retrievers' families (axes)
    combine: tuple[str, ...] = (RetrievalSpec.combine,)
    threshold_steps: int = 201
    candidates: int = 8
    inject: int = 3

    def __post_init__(self) -> None:
        for name in ("alphas", "norms", "rrf_ks", "bonus", "tau_days"):
            if not getattr(self, name):
                raise InputError(f"retriever grid axis {name!r} is empty")
        bounds = {"alphas": {"minimum": 0, "maximum": 1}, "rrf_ks": {"above": 0}, **SPEC_BOUNDS}
        for name in ("alphas", "rrf_ks", "bonus", "tau_days"):  # each value checked like the spec's
            # counted before any value is generated: a range of 10^9 values is refused, not built
            check_work(len(getattr(self, name)), name, MAX_AXIS, "values", "each multiplies the table")
            values = tuple(check_number(v, name, **bounds[name]) for v in getattr(self, name))
            object.__setattr__(self, name, values)
        for name, registry in (("decay", DECAYS), ("combine", COMBINES)):
            values = (getattr(self, name),) if isinstance(getattr(self, name), str) else getattr(self, name)
            object.__setattr__(self, name, check_names(registry, tuple(values), name))
            if not getattr(self, name):
                raise InputError(f"retriever grid axis {name!r} is empty")
        check_number(self.threshold_steps, "threshold_steps", integer=True, minimum=2)
        for name in ("candidates", "inject"):
            check_number(getattr(self, name), name, integer=True, **SPEC_BOUNDS[name])


def calibrated_thresholds(scores: np.ndarray, max_bonus: float, steps: int) -> tuple[float, ...]:
    """``steps`` evenly spaced thresholds from the lowest candidate score to the highest plus
    the largest bonus, plus one above everything (the inject-nothing setting)."""
    finite = scores[np.isfinite(scores)]
    if finite.size == 0:
        return (0.0,)
    lo, hi = float(finite.min()), float(finite.max()) + max_bonus
    values = np.linspace(lo, hi, steps) if hi > lo else np.array([lo])
    return tuple(np.round(np.append(values, hi + max(1e-3, 0.01 * (hi - lo))), 9).tolist())


def settings_per_threshold(retriever: Retriever, grid: RetrieverGrid) -> int:
    """How many rows of a retriever's table share one threshold: its fusion settings times, for a
    decay retriever, the bonus, tau and family values."""
    fusion = {"none": 1, "weighted": len(grid.alphas) * len(grid.norms)}.get(
        retriever.fusion, len(grid.rrf_ks)
    )
    families = len(grid.decay) * len(grid.combine) if retriever.decay else 1
    return fusion * (len(grid.bonus) * len(grid.tau_days) * families if retriever.decay else 1)


def check_table(
    retriever: Retriever,
    inputs: RetrievalInputs,
    grid: RetrieverGrid,
    metrics: Sequence[str] | None = None,
) -> None:
    """A retriever's whole table (every configuration, one row each) is held in memory at once:
    refuse a grid whose table would not fit the memory budget, before anything is swept, saying
    how many threshold steps would. A row's bytes are measured on a one-row sweep of the same
    columns (``metrics``, as ``sweep_retriever`` is asked for them)."""
    per_step = settings_per_threshold(retriever, grid)
    one = sweep(
        inputs.vector,
        inputs.ages,
        inputs.labels,
        Grid(
            bonus=(0.0,),
            tau_days=(1.0,),
            threshold=(0.5,),
            candidates=(grid.candidates,),
            inject=(grid.inject,),
        ),
        inputs.criteria,
        metrics=metrics,
    )
    row_bytes = int(one.memory_usage(index=True, deep=True).sum()) + 64 * 4  # + retriever, norm, alpha, rrf_k
    check_fits(
        grid.threshold_steps,
        "threshold_steps",
        per_step * row_bytes,
        f"threshold steps of retriever {retriever.name!r} (each one table row for every one of its "
        f"{per_step:,} other settings)",
    )


def sweep_retriever(
    retriever: Retriever,
    inputs: RetrievalInputs,
    grid: RetrieverGrid = RetrieverGrid(),
    metrics: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Every configuration of a retriever: its fusion axes x bonus x tau x calibrated thresholds;
    ``metrics``: the sweep's metric groups to compute (None: all)."""
    import pandas as pd

    settings = retriever_scores(
        retriever,
        inputs,
        candidates=grid.candidates,
        alphas=grid.alphas,
        norms=grid.norms,
        rrf_ks=grid.rrf_ks,
    )
    bonus = grid.bonus if retriever.decay else (0.0,)
    taus = grid.tau_days if retriever.decay else (1.0,)
    n_mem = inputs.vector.shape[1]
    check_table(retriever, inputs, grid, metrics)
    frames = []
    for s in settings:
        # fused retrievers have already chosen their candidates (the routes' union, NaN elsewhere):
        # keep them all; no question has more than the widest row's known scores
        known = int(np.isfinite(s.scores).sum(axis=-1).max(initial=0)) if s.scores.size else 0
        k = grid.candidates if retriever.fusion == "none" else max(1, min(n_mem, known))
        g = Grid(
            bonus=bonus,
            tau_days=taus,
            threshold=calibrated_thresholds(s.scores, max(bonus), grid.threshold_steps),
            candidates=(k,),
            inject=(grid.inject,),
            decay=grid.decay if retriever.decay else (RetrievalSpec.decay,),
            combine=grid.combine if retriever.decay else (RetrievalSpec.combine,),
        )
        frame = sweep(s.scores, inputs.ages, inputs.labels, g, inputs.criteria, metrics=metrics)
        # one concat instead of column inserts: the sweep's frame has many column blocks
        extra = pd.DataFrame({"retriever": retriever.name, **s.params}, index=frame.index)
        frames.append(pd.concat([frame, extra], axis=1))
    out = pd.concat(frames, ignore_index=True)
    missing = [c for c in ("norm", "alpha", "rrf_k") if c not in out]
    return out.reindex(columns=[*out.columns, *missing]) if missing else out


def configured_scores(
    retriever: Retriever, inputs: RetrievalInputs, row: pd.Series, grid: RetrieverGrid
) -> tuple[np.ndarray, int]:
    """One configuration's pre-bonus scores (Q, M) (its fusion axes' values from ``row``, NaN off
    its candidates) and its candidates: the row's for an unfused retriever, every candidate of
    its routes for a fused one (as ``sweep_retriever`` keeps them)."""
    params = {k: row[k] for k in ("norm", "alpha", "rrf_k") if row.get(k) is not None and row[k] == row[k]}
    (setting,) = retriever_scores(
        retriever,
        inputs,
        candidates=grid.candidates,
        alphas=(params.get("alpha", 0.5),),
        norms=(params.get("norm", "min-max"),),
        rrf_ks=(params.get("rrf_k", 60),),
    )
    if retriever.fusion == "none":
        return setting.scores, int(row["candidates"])
    known = int(np.isfinite(setting.scores).sum(axis=-1).max(initial=0)) if setting.scores.size else 0
    return setting.scores, max(1, known)


def per_question(
    retriever: Retriever, inputs: RetrievalInputs, row: pd.Series, grid: RetrieverGrid
) -> pd.DataFrame:
    """The chosen configuration, question by question (the sweep's long form for one config; its
    ``slot_j`` columns name memories by their index in the dataset, compacted inputs or not)."""
    scores, candidates = configured_scores(retriever, inputs, row, grid)
    g = Grid.of(RetrievalSpec.from_row(row, candidates=candidates))
    long = sweep(scores, inputs.ages, inputs.labels, g, inputs.criteria, long=True)
    return inputs.memory_slots(long)


def retriever_rows(retriever: Retriever, row: pd.Series, long: pd.DataFrame) -> list[dict[str, Any]]:
    """Per question kind: hit@inject of the current memory, false injections (memories injected on
    no-hit questions), stale injections, and the headroom (threshold minus the best no-hit final).
    ``long`` is ``per_question``'s frame with a ``names_time`` column (the question names a time,
    so a gated retriever gates it)."""
    out = []
    for kind in [k for k in ("hit", "contradiction", "time", "nohit") if (long["kind"] == k).any()]:
        rows = long[long["kind"] == kind]
        has_current = rows["has_current"].to_numpy(dtype=bool)
        out.append(
            {
                "retriever": retriever.name,
                "kind": kind,
                "questions": len(rows),
                "naming_time": int(rows["names_time"].sum()),
                # over the questions that have a current memory to inject
                "hit_at_inject": (
                    float(rows.loc[has_current, "current_injected"].mean())
                    if kind != "nohit" and has_current.any()
                    else np.nan
                ),
                "false_injections": int(rows["injected"].sum()) if kind == "nohit" else 0,
                "stale_injections": int(rows["stale_injected"].sum()),
                "headroom": float(row["headroom"]) if kind == "nohit" else np.nan,
            }
        )
    return out


@dataclass(frozen=True)
class Comparison:
    chosen: pd.DataFrame  # one row per retriever: its chosen configuration and totals
    by_kind: pd.DataFrame  # one row per retriever and question kind
    questions: pd.DataFrame  # one row per retriever and question, at the chosen configuration
    configs: int  # configurations evaluated in all
    landscape: pd.DataFrame | None = None  # best utility at each value of a fusion axis
    time_questions: int = 0  # questions naming a time (the gate's)


def fusion_landscape_rows(retriever: Retriever, table: pd.DataFrame, u: np.ndarray) -> list[dict[str, Any]]:
    """For a fused retriever: the best utility ``u`` (per row of ``table``) reachable at each value of
    its fusion axis (alpha per normalisation, or RRF k), over every other axis. Shows how sharply
    the choice matters."""
    if retriever.fusion == "none":
        return []
    axis = "alpha" if retriever.fusion == "weighted" else "rrf_k"
    norms = table["norm"].to_numpy() if retriever.fusion == "weighted" else np.full(len(table), "")
    values = table[axis].to_numpy(dtype=float)
    feasible = table["feasible"].to_numpy(dtype=bool)
    out = []
    for norm in dict.fromkeys(norms):
        for value in dict.fromkeys(values[norms == norm]):
            at = (norms == norm) & (values == value)
            out.append(
                {
                    "retriever": retriever.name,
                    "axis": axis,
                    "norm": norm or None,
                    "value": float(value),
                    "best_utility": int(u[at].max()),
                    "any_feasible": bool(feasible[at].any()),
                }
            )
    return out


def compare(
    inputs: RetrievalInputs,
    retrievers: Sequence[str] | None = None,
    grid: RetrieverGrid = RetrieverGrid(),
    *,
    progress: bool = False,
) -> Comparison:
    """Tune each retriever with the sweep on these questions and report it at its chosen configuration."""
    import pandas as pd

    chosen_rows, kinds, questions, landscape, configs = [], [], [], [], 0
    inputs = compact(inputs)  # each question over its own memories: the same choices, narrower tables
    gate = time_gate(inputs)
    chosen_policies = check_retrievers(retrievers)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(chosen_policies), unit="retriever", disable=None)
    for retriever in sorted(chosen_policies, key=lambda r: -settings_per_threshold(r, grid)):  # largest first
        check_table(retriever, inputs, grid)
    for retriever in chosen_policies:
        table = sweep_retriever(retriever, inputs, grid)
        configs += len(table)
        u = utility(table, wrong_weight=WRONG_WEIGHT)
        landscape += fusion_landscape_rows(retriever, table, u)
        # the sweep's own rule and utility: the highest utility, then feasible, then min_margin
        row = table.iloc[select(table, "max-utility", wrong_weight=WRONG_WEIGHT)]
        long = per_question(retriever, inputs, row, grid).assign(
            names_time=gate.gated, has_current=inputs.labels.current >= 0
        )
        summary = retriever_rows(retriever, row, long)
        kinds += summary
        nohit = [s for s in summary if s["kind"] == "nohit"]
        chosen_rows.append(
            {
                "retriever": retriever.name,
                "meaning": retriever.meaning,
                "norm": row["norm"],
                "alpha": row["alpha"],
                "rrf_k": row["rrf_k"],
                "bonus": float(row["bonus"]),
                "tau_days": float(row["tau_days"]),
                "decay": str(row["decay"]),
                "combine": str(row["combine"]),
                "threshold": float(row["threshold"]),
                "feasible": bool(row["feasible"]),
                "feasible_configs": int(table["feasible"].sum()),
                "configs": len(table),
                "min_margin": float(row["min_margin"]),
                # over every question with a current memory to inject
                "hit_at_inject": (
                    float(long.loc[long["has_current"], "current_injected"].mean())
                    if long["has_current"].any()
                    else np.nan
                ),
                "false_injections": sum(s["false_injections"] for s in nohit),
                "stale_injections": sum(s["stale_injections"] for s in summary),
                "headroom": nohit[0]["headroom"] if nohit else np.nan,
            }
        )
        questions.append(long.assign(retriever=retriever.name))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return Comparison(
        pd.DataFrame(chosen_rows),
        pd.DataFrame(kinds),
        pd.concat(questions, ignore_index=True),
        configs,
        pd.DataFrame(
            landscape, columns=["retriever", "axis", "norm", "value", "best_utility", "any_feasible"]
        ),
        int(gate.gated.sum()),
    )


def compare_problem(
    problem: RetrievalProblem,
    retrievers: Sequence[str] | None = None,
    grid: RetrieverGrid = RetrieverGrid(),
    *,
    progress: bool = False,
) -> Comparison:
    """``compare`` on one retrieval problem (what ``memlab compare`` prints and notebook 06 shows
    per dataset): the routes from its scores, in its language, BM25 only where a retriever reads
    it; a tenant filter leaves the other tenants' memories out of every route."""
    inputs = build_inputs(
        problem.dataset,
        problem.scores.raw,
        lang=problem.lang,
        keyword=uses_keywords(retrievers),
        allowed=problem.pool.allowed,
    )
    return compare(inputs, retrievers, grid, progress=progress)


def compare_datasets(
    names: Sequence[str],
    options: ScoreOptions | None = None,
    *,
    retrievers: Sequence[str] | None = None,
    grid: RetrieverGrid = RetrieverGrid(),
) -> dict[str, Comparison]:
    """``compare`` on several datasets (keyed by their names, which must differ), each scored as
    ``options`` says (``memlab.scores.sources.ScoreOptions``: source, language, model, server).
    The source applies where the dataset has such scores: the seed's published numbers exist only
    for seed16, so other datasets are embedded (the comparison's ``chosen`` table records which
    source each used)."""
    from dataclasses import replace

    from memlab.datasets.schema import load_dataset
    from memlab.scores.problem import build_problem
    from memlab.scores.sources import available_sources

    options = options or ScoreOptions()
    check_retrievers(retrievers)
    datasets = [load_dataset(given) for given in names]  # every name checked before any embedding
    seen: dict[str, str] = {}
    for given, dataset in zip(names, datasets, strict=True):
        if dataset.name in seen:
            raise InputError(
                f"two datasets are named {dataset.name!r} ({seen[dataset.name]!r} and {given!r}): "
                "rename one in its dataset.json"
            )
        seen[dataset.name] = given
    out: dict[str, Comparison] = {}
    for dataset in datasets:
        used = options.source if options.source in available_sources(dataset) else "embedded"
        result = compare_problem(build_problem(dataset, replace(options, source=used)), retrievers, grid)
        for frame in (result.chosen, result.by_kind, result.questions, result.landscape):
            frame.insert(0, "dataset", dataset.name)
        result.chosen.insert(1, "source", used)
        out[dataset.name] = result
    return out
