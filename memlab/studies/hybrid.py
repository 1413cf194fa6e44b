"""Retrieval policies that combine a vector route, a keyword route and time, compared on one footing.

A policy (``POLICIES``) turns the routes' scores into one final score per question and memory;
the spec's own machinery then does the rest, so every policy is tuned by the same vectorised
sweep, with the same criteria, selection and metrics as the seed's recency bonus:

- ``vector``: raw cosine, top ``candidates``, threshold (the spec with bonus 0);
- ``vector-decay``: the seed's spec, ``cosine + bonus * exp(-age / tau)``;
- ``hybrid-weighted``: ``alpha * norm(cosine) + (1 - alpha) * norm(BM25)`` over the union of
  both routes' candidates (``memlab.retrieval.fusion``; min-max or z-score, an axis of the sweep);
- ``hybrid-rrf``: reciprocal rank fusion of the two routes, ``k`` an axis;
- ``rrf-time``: RRF with time as a third route (the ``candidates`` newest memories, newest first),
  the design the seed 002 argues against;
- ``gate-decay``: the seed 002's recommendation. A question that names a time ("the day before
  yesterday", 先週) is gated: only memories dated inside that range are candidates, before any
  ranking; when the range holds none it widens by one day on each side, once. Inside the gate
  (or ungated, when no time is named) the hybrid weighted fusion runs, plus the decay term;
- ``gate-vector-decay``: the gate in front of the seed's spec, to separate what the gate does
  from what the fusion does.

A fused score has no absolute scale (min-max puts every question's best candidate at 1), so a
policy's threshold is calibrated on its own scores: the threshold axis spans the range of final
scores the policy produces (``threshold_steps`` evenly spaced values, 201 by default), and the sweep picks it
with the criteria, like bonus and tau. Headroom is then in the policy's own units.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core import criteria as crit
from memlab.core.grid import Grid
from memlab.core.labels import Labels
from memlab.core.sweep import sweep
from memlab.datasets.timeparse import DateRange, parse_time
from memlab.retrieval.fusion import (
    alpha_weights,
    normalize,
    ranks,
    route_candidates,
    rrf_fusion,
    weighted_fusion,
)

if TYPE_CHECKING:
    import pandas as pd

    from memlab.datasets.model import Dataset

ROUTES = ("vector", "keyword", "time")


@dataclass(frozen=True)
class Policy:
    name: str
    routes: tuple[str, ...]
    fusion: str  # none | weighted | rrf
    decay: bool
    gate: bool
    meaning: str


POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        Policy("vector", ("vector",), "none", False, False, "cosine only"),
        Policy(
            "vector-decay",
            ("vector",),
            "none",
            True,
            False,
            "cosine plus the recency bonus (the seed's spec)",
        ),
        Policy(
            "hybrid-weighted",
            ("vector", "keyword"),
            "weighted",
            False,
            False,
            "weighted fusion of cosine and BM25",
        ),
        Policy(
            "hybrid-rrf",
            ("vector", "keyword"),
            "rrf",
            False,
            False,
            "reciprocal rank fusion of cosine and BM25",
        ),
        Policy(
            "rrf-time", ("vector", "keyword", "time"), "rrf", False, False, "RRF with time as a third route"
        ),
        Policy(
            "gate-decay",
            ("vector", "keyword"),
            "weighted",
            True,
            True,
            "time expression as a gate, weighted fusion, plus the recency bonus",
        ),
        Policy(
            "gate-vector-decay",
            ("vector",),
            "none",
            True,
            True,
            "time expression as a gate, cosine plus the recency bonus",
        ),
    )
}


def check_policies(names: Sequence[str] | None) -> tuple[Policy, ...]:
    """The named policies in the order given; None: all of them."""
    if names is None:
        return tuple(POLICIES.values())
    names = list(names)
    if not names:
        raise ValueError(f"no policy named; available: {', '.join(POLICIES)}")
    unknown = [n for n in names if n not in POLICIES]
    if unknown:
        raise ValueError(f"unknown policy(ies) {', '.join(unknown)}; available: {', '.join(POLICIES)}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"policy(ies) named twice: {', '.join(repeated)}")
    return tuple(POLICIES[n] for n in names)


def uses_keywords(policies: Sequence[str] | None) -> bool:
    return any("keyword" in p.routes for p in check_policies(policies))


@dataclass(frozen=True)
class HybridInputs:
    """Everything the policies read, per question (Q) and memory (M)."""

    question_ids: tuple[str, ...]
    vector: np.ndarray  # (Q, M) cosine, NaN where not retrievable
    keyword: np.ndarray | None  # (Q, M) BM25, 0 = no shared term, NaN where not retrievable
    ages: np.ndarray  # (Q, M) days from the memory to when the question is asked, inf if later
    memory_dates: tuple[date, ...]  # (M,) calendar day of each memory
    time_ranges: tuple[DateRange | None, ...]  # (Q,) the time each question names, if any
    labels: Labels
    criteria: tuple[crit.Criterion, ...]
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def visible(self) -> np.ndarray:
        return np.isfinite(self.ages)


def question_time_ranges(dataset: Dataset, lang: str, explicit: dict[str, DateRange] | None = None):
    """Each question's time range. An explicit one skips the parser: ``explicit[qid]`` (what an
    application's tool call passes), else the question's own ``time_range`` field; otherwise
    ``parse_time`` on the question's text, relative to when it is asked."""
    explicit = explicit or {}
    out = []
    for q in dataset.questions:
        if q.id in explicit:
            out.append(explicit[q.id])
        elif q.time_range is not None:
            out.append(DateRange(*q.time_range, "time_range"))
        else:
            out.append(parse_time(q.text(lang), (q.date or dataset.reference_date).date()))
    return tuple(out)


def visible_keyword_scores(dataset: Dataset, lang: str) -> np.ndarray:
    """BM25 of every memory for every question, (Q, M), NaN where not retrievable. A question
    asked before some memories were written is scored against an index of only the memories it
    can see, so later memories change neither its term statistics (IDF, mean length) nor its
    candidates."""
    from memlab.retrieval.keyword import KeywordIndex

    visible = dataset.visible()
    texts = [m.text(lang) for m in dataset.memories]
    out = np.full(visible.shape, np.nan)
    masks: dict[bytes, list[int]] = {}
    for q in range(len(dataset.questions)):
        masks.setdefault(visible[q].tobytes(), []).append(q)
    for rows in masks.values():
        seen = np.flatnonzero(visible[rows[0]])
        if seen.size == 0:
            continue
        index = KeywordIndex.build([texts[i] for i in seen], lang)
        scores = index.scores([dataset.questions[q].text(lang) for q in rows])
        out[np.ix_(rows, seen)] = scores
    return out


def build_inputs(
    dataset: Dataset,
    vector: np.ndarray,
    *,
    lang: str = "en",
    time_ranges: dict[str, DateRange] | None = None,
    criteria: tuple[crit.Criterion, ...] | None = None,
    keyword: bool = True,
) -> HybridInputs:
    """Inputs for a dataset: ``vector`` is its (Q, M) cosine table (from any score source); BM25
    is computed here over the memory texts in ``lang`` (``keyword=False`` skips it, for the
    vector-only policies, e.g. in a language without a keyword tokenizer)."""
    visible = dataset.visible()
    return HybridInputs(
        dataset.question_ids,
        np.where(visible, np.asarray(vector, dtype=np.float64), np.nan),
        visible_keyword_scores(dataset, lang) if keyword else None,
        dataset.ages(),
        tuple(m.date.date() for m in dataset.memories),
        question_time_ranges(dataset, lang, time_ranges),
        Labels.from_dataset(dataset),
        crit.dataset_criteria(dataset) if criteria is None else criteria,
        {"dataset": dataset.name, "lang": lang},
    )


@dataclass(frozen=True)
class Gate:
    mask: np.ndarray  # (Q, M) memories that may be candidates
    gated: np.ndarray  # (Q,) the question named a time
    widened: np.ndarray  # (Q,) its window held nothing and was widened by one day each side


def time_gate(inputs: HybridInputs) -> Gate:
    """Only memories dated inside a question's named range; an empty window widens once by a day."""
    days = np.array([d.toordinal() for d in inputs.memory_dates])
    visible = inputs.visible
    mask = visible.copy()
    gated = np.zeros(len(inputs.question_ids), dtype=bool)
    widened = np.zeros_like(gated)
    for q, rng in enumerate(inputs.time_ranges):
        if rng is None:
            continue
        gated[q] = True
        lo, hi = rng.start.toordinal(), rng.end.toordinal()
        inside = (days >= lo) & (days <= hi) & visible[q]
        if not inside.any():
            widened[q] = True
            inside = (days >= lo - 1) & (days <= hi + 1) & visible[q]
        mask[q] = inside
    return Gate(mask, gated, widened)


@dataclass(frozen=True)
class FusionSettings:
    """One value of the fusion axes, and the final (pre-bonus) scores it gives, (Q, M)."""

    params: dict[str, Any]
    scores: np.ndarray


def policy_scores(
    policy: Policy,
    inputs: HybridInputs,
    *,
    candidates: int = 8,
    alphas: Sequence[float] = (0.5,),
    norms: Sequence[str] = ("min-max",),
    rrf_ks: Sequence[float] = (60,),
) -> list[FusionSettings]:
    """The policy's pre-bonus scores for every value of its fusion axes (alpha x norm, or k).

    NaN marks a memory that is no candidate. For ``none`` fusion the cosine table is returned
    whole (the sweep takes its top ``candidates``, as the spec does).
    """
    if "keyword" in policy.routes and inputs.keyword is None:
        raise ValueError(f"policy {policy.name!r} needs keyword scores: build the inputs with keyword=True")
    mask = time_gate(inputs).mask if policy.gate else inputs.visible
    vector = np.where(mask, inputs.vector, np.nan)
    if policy.fusion == "none":
        return [FusionSettings({}, vector)]
    routes = {
        "vector": lambda: route_candidates(vector, candidates),
        "keyword": lambda: route_candidates(
            np.where(mask, inputs.keyword, np.nan), candidates, positive_only=True
        ),
        # newest first: the time route always has a full list, whatever the question asks
        "time": lambda: route_candidates(np.where(mask, -inputs.ages, np.nan), candidates),
    }
    used = [routes[r]() for r in policy.routes]
    if policy.fusion == "weighted":
        out = []
        for norm in norms:
            normed = [normalize(x, norm) for x in used]
            fused = weighted_fusion(normed, alpha_weights(np.asarray(alphas)))  # (A, Q, M)
            out += [FusionSettings({"norm": norm, "alpha": float(a)}, fused[i]) for i, a in enumerate(alphas)]
        return out
    fused = rrf_fusion([ranks(x) for x in used], np.asarray(rrf_ks))  # (K, Q, M)
    return [FusionSettings({"rrf_k": float(k)}, fused[i]) for i, k in enumerate(rrf_ks)]


@dataclass(frozen=True)
class PolicyGrid:
    """The axes a comparison sweeps; each policy uses the ones it has."""

    alphas: tuple[float, ...] = tuple(np.round(np.linspace(0, 1, 11), 2).tolist())
    norms: tuple[str, ...] = ("min-max", "z-score", "none")
    rrf_ks: tuple[float, ...] = (1, 2, 10, 60)
    bonus: tuple[float, ...] = tuple(np.round(np.linspace(0, 0.3, 31), 3).tolist())
    tau_days: tuple[float, ...] = (1, 3, 7, 14, 30, 60)
    threshold_steps: int = 201
    candidates: int = 8
    inject: int = 3

    def __post_init__(self) -> None:
        for name in ("alphas", "norms", "rrf_ks", "bonus", "tau_days"):
            if not getattr(self, name):
                raise ValueError(f"policy grid axis {name!r} is empty")
        if self.threshold_steps < 2:
            raise ValueError(f"threshold_steps must be >= 2, got {self.threshold_steps}")


def calibrated_thresholds(scores: np.ndarray, max_bonus: float, steps: int) -> tuple[float, ...]:
    """``steps`` evenly spaced thresholds from the lowest candidate score to the highest plus
    the largest bonus, plus one above everything (the inject-nothing setting)."""
    finite = scores[np.isfinite(scores)]
    if finite.size == 0:
        return (0.0,)
    lo, hi = float(finite.min()), float(finite.max()) + max_bonus
    values = np.linspace(lo, hi, steps) if hi > lo else np.array([lo])
    return tuple(np.round(np.append(values, hi + max(1e-3, 0.01 * (hi - lo))), 9).tolist())


def sweep_policy(policy: Policy, inputs: HybridInputs, grid: PolicyGrid = PolicyGrid()) -> pd.DataFrame:
    """Every configuration of a policy: its fusion axes x bonus x tau x calibrated thresholds."""
    import pandas as pd

    settings = policy_scores(
        policy, inputs, candidates=grid.candidates, alphas=grid.alphas, norms=grid.norms, rrf_ks=grid.rrf_ks
    )
    bonus = grid.bonus if policy.decay else (0.0,)
    taus = grid.tau_days if policy.decay else (1.0,)
    n_mem = inputs.vector.shape[1]
    frames = []
    for s in settings:
        # fused policies have already chosen their candidates (the routes' union): keep them all
        k = grid.candidates if policy.fusion == "none" else n_mem
        g = Grid(
            bonus=bonus,
            tau_days=taus,
            threshold=calibrated_thresholds(s.scores, max(bonus), grid.threshold_steps),
            candidates=(k,),
            inject=(grid.inject,),
        )
        frame = sweep(s.scores, inputs.ages, inputs.labels, g, inputs.criteria)
        frames.append(frame.assign(policy=policy.name, **s.params))
    out = pd.concat(frames, ignore_index=True)
    for col in ("norm", "alpha", "rrf_k"):
        if col not in out:
            out[col] = None
    return out


def utility(table: pd.DataFrame, labels: Labels) -> np.ndarray:
    """Per configuration: current memories injected, minus memories injected on no-hit
    questions, minus stale memories injected (each right memory in the prompt +1, each wrong -1)."""
    with_current = [q for q, c in zip(labels.question_ids, labels.current, strict=True) if c >= 0]
    hits = table[[f"injected_{q}" for q in with_current]].to_numpy(dtype=np.int64).sum(axis=1)
    return (
        hits
        - table["injected_nohit"].to_numpy(dtype=np.int64)
        - table["stale_injected"].to_numpy(dtype=np.int64)
    )


def choose(table: pd.DataFrame, value: np.ndarray) -> int:
    """The configuration a comparison reports: the highest ``value`` (the table's ``utility``),
    then feasible before not, then the largest smallest criterion margin, then smaller bonus,
    then smaller tau, then table order. Every policy is judged by the same rule, at its best."""
    keys = (
        np.arange(len(table)),
        table["tau_days"].to_numpy(dtype=float),
        table["bonus"].to_numpy(dtype=float),
        -np.nan_to_num(table["min_margin"].to_numpy(dtype=float), nan=-np.inf),
        ~table["feasible"].to_numpy(dtype=bool),
        -value,
    )
    return int(np.lexsort(keys)[0])


def per_question(policy: Policy, inputs: HybridInputs, row: pd.Series, grid: PolicyGrid) -> pd.DataFrame:
    """The chosen configuration, question by question (the sweep's long form for one config)."""
    params = {k: row[k] for k in ("norm", "alpha", "rrf_k") if row.get(k) is not None and row[k] == row[k]}
    (setting,) = policy_scores(
        policy,
        inputs,
        candidates=grid.candidates,
        alphas=(params.get("alpha", 0.5),),
        norms=(params.get("norm", "min-max"),),
        rrf_ks=(params.get("rrf_k", 60),),
    )
    g = Grid(
        bonus=(float(row["bonus"]),),
        tau_days=(float(row["tau_days"]),),
        threshold=(float(row["threshold"]),),
        candidates=(int(row["candidates"]),),
        inject=(int(row["inject"]),),
    )
    return sweep(setting.scores, inputs.ages, inputs.labels, g, inputs.criteria, long=True)


def summarize(policy: Policy, row: pd.Series, long: pd.DataFrame) -> list[dict[str, Any]]:
    """Per question kind: hit@inject of the current memory, false injections (memories injected on
    no-hit questions), stale injections, and the headroom (threshold minus the best no-hit final).
    ``long`` is ``per_question``'s frame with a ``names_time`` column (the question names a time,
    so a gated policy gates it)."""
    out = []
    for kind in [k for k in ("hit", "contradiction", "time", "nohit") if (long["kind"] == k).any()]:
        rows = long[long["kind"] == kind]
        has_current = rows["has_current"].to_numpy(dtype=bool)
        out.append(
            {
                "policy": policy.name,
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
    chosen: pd.DataFrame  # one row per policy: its chosen configuration and totals
    by_kind: pd.DataFrame  # one row per policy and question kind
    questions: pd.DataFrame  # one row per policy and question, at the chosen configuration
    configs: int  # configurations evaluated in all
    landscape: pd.DataFrame | None = None  # best utility at each value of a fusion axis


def fusion_landscape(policy: Policy, table: pd.DataFrame, u: np.ndarray) -> list[dict[str, Any]]:
    """For a fused policy: the best utility ``u`` (per row of ``table``) reachable at each value of
    its fusion axis (alpha per normalisation, or RRF k), over every other axis. Shows how sharply
    the choice matters."""
    if policy.fusion == "none":
        return []
    axis = "alpha" if policy.fusion == "weighted" else "rrf_k"
    norms = table["norm"].to_numpy() if policy.fusion == "weighted" else np.full(len(table), "")
    values = table[axis].to_numpy(dtype=float)
    feasible = table["feasible"].to_numpy(dtype=bool)
    out = []
    for norm in dict.fromkeys(norms):
        for value in dict.fromkeys(values[norms == norm]):
            at = (norms == norm) & (values == value)
            out.append(
                {
                    "policy": policy.name,
                    "axis": axis,
                    "norm": norm or None,
                    "value": float(value),
                    "best_utility": int(u[at].max()),
                    "any_feasible": bool(feasible[at].any()),
                }
            )
    return out


def compare(
    inputs: HybridInputs,
    policies: Sequence[str] | None = None,
    grid: PolicyGrid = PolicyGrid(),
    *,
    progress: bool = False,
) -> Comparison:
    """Tune each policy with the sweep on these questions and report it at its chosen configuration."""
    import pandas as pd

    chosen_rows, kinds, questions, landscape, configs = [], [], [], [], 0
    gate = time_gate(inputs)
    chosen_policies = check_policies(policies)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(chosen_policies), unit="policy", disable=None)
    for policy in chosen_policies:
        table = sweep_policy(policy, inputs, grid)
        configs += len(table)
        u = utility(table, inputs.labels)
        landscape += fusion_landscape(policy, table, u)
        row = table.iloc[choose(table, u)]
        long = per_question(policy, inputs, row, grid).assign(
            names_time=gate.gated, has_current=inputs.labels.current >= 0
        )
        summary = summarize(policy, row, long)
        kinds += summary
        nohit = [s for s in summary if s["kind"] == "nohit"]
        chosen_rows.append(
            {
                "policy": policy.name,
                "meaning": policy.meaning,
                "norm": row["norm"],
                "alpha": row["alpha"],
                "rrf_k": row["rrf_k"],
                "bonus": float(row["bonus"]),
                "tau_days": float(row["tau_days"]),
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
        questions.append(long.assign(policy=policy.name))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return Comparison(
        pd.DataFrame(chosen_rows),
        pd.DataFrame(kinds),
        pd.concat(questions, ignore_index=True),
        configs,
        pd.DataFrame(landscape, columns=["policy", "axis", "norm", "value", "best_utility", "any_feasible"]),
    )


def compare_datasets(
    names: Sequence[str],
    *,
    source: str = "embedded",
    lang: str = "en",
    model: str | None = None,
    policies: Sequence[str] | None = None,
    grid: PolicyGrid = PolicyGrid(),
) -> dict[str, Comparison]:
    """``compare`` on several datasets (keyed by their names, which must differ). ``source``
    applies where the dataset has such scores; the
    seed's published numbers exist only for seed16, so other datasets are embedded (the
    comparison's ``chosen`` table records which source each used)."""
    from memlab.datasets.model import load_dataset
    from memlab.scoring.sources import load_scores

    check_policies(policies)
    datasets = [load_dataset(given) for given in names]  # every name checked before any embedding
    seen: dict[str, str] = {}
    for given, dataset in zip(names, datasets, strict=True):
        if dataset.name in seen:
            raise ValueError(
                f"two datasets are named {dataset.name!r} ({seen[dataset.name]!r} and {given!r}): "
                "rename one in its dataset.json"
            )
        seen[dataset.name] = given
    out: dict[str, Comparison] = {}
    for dataset in datasets:
        has_published = dataset.path is not None and (dataset.path / "published_scores.jsonl").is_file()
        used = source if source != "published" or has_published else "embedded"
        scores = load_scores(used, dataset, lang=lang, model=model)
        inputs = build_inputs(dataset, scores.raw, lang=lang, keyword=uses_keywords(policies))
        result = compare(inputs, policies, grid)
        for frame in (result.chosen, result.by_kind, result.questions, result.landscape):
            frame.insert(0, "dataset", dataset.name)
        result.chosen.insert(1, "source", used)
        out[dataset.name] = result
    return out
