"""The retrieval spec and its one-config reference implementation.

The spec (from the seed write-up): take the top ``candidates`` memories by raw cosine, add a
recency bonus ``bonus * exp(-age_days / tau_days)``, re-sort on the post-bonus score, keep those
at or above ``threshold`` and inject the first ``inject`` of them into the prompt.

The decay family is a spec field (``decay``: Qdrant's ``exp_decay``, ``gauss_decay`` and
``lin_decay``), all with one midpoint convention: the weight is 1 at age 0 and ``1/e`` at age
``tau_days`` (so the seed's ``exp(-age / tau)`` is ``exp`` with midpoint 1/e at scale tau). The
bonus is added (``combine="add"``: ``raw + bonus * w``) or multiplies the raw score
(``combine="mult"``: ``raw * (1 + bonus * w)``).

Every formula is one small function over arrays. The reference here, the sweep and the tests
call the same functions, so the spec cannot drift between them.

Which memories are candidates, how they are re-sorted and which are injected (the tie rule
included) is ``memlab.core.ranking``, the one module every path ranks with.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, NamedTuple

import numpy as np

from memlab.core.errors import InputError
from memlab.core.numbers import check_number
from memlab.core.ranking import candidate_order, injected, rerank, select_candidates, top_k
from memlab.core.registry import lookup
from memlab.core.shards import Pool, narrow, pool_candidates

SECONDS_PER_DAY = 86_400.0


def age_days(dates: np.ndarray, reference: np.ndarray | np.datetime64 | datetime) -> np.ndarray:
    """Fractional days from each date (``datetime64``) to the reference (broadcast).

    The one place memlab turns two instants into an age: the dataset's ages, the scale study's
    question offsets and the store's decay scale all count days with it.
    """
    if isinstance(reference, datetime) and reference.tzinfo is not None:  # the same instant in UTC
        reference = reference.astimezone(UTC).replace(tzinfo=None)
    ref = np.asarray(reference, dtype="datetime64[s]")
    return (ref - np.asarray(dates).astype("datetime64[s]")).astype(np.float64) / SECONDS_PER_DAY


MIDPOINT = math.exp(-1.0)  # every decay family's weight at age tau_days (Qdrant's ``midpoint``)


def exp_decay(age: np.ndarray | float, tau_days: np.ndarray | float) -> np.ndarray:
    """Qdrant's ``exp_decay`` with midpoint 1/e at scale tau: ``exp(-age / tau)``."""
    return np.exp(-np.asarray(age, dtype=np.float64) / tau_days)


def gauss_decay(age: np.ndarray | float, tau_days: np.ndarray | float) -> np.ndarray:
    """Qdrant's ``gauss_decay`` with midpoint 1/e at scale tau: ``exp(-(age / tau)^2)``."""
    return np.exp(-np.square(np.asarray(age, dtype=np.float64) / tau_days))


def lin_decay(age: np.ndarray | float, tau_days: np.ndarray | float) -> np.ndarray:
    """Qdrant's ``lin_decay`` with midpoint 1/e at scale tau: ``max(0, 1 - (1 - 1/e) age / tau)``,
    zero from ``age = tau / (1 - 1/e)`` (about 1.58 tau) on."""
    return np.maximum(0.0, 1.0 - (1.0 - MIDPOINT) * (np.asarray(age, dtype=np.float64) / tau_days))


@dataclass(frozen=True)
class Decay:
    """A decay family, whole: its weight, the Qdrant expression that computes the same weight
    (``{qdrant: {x, target, scale, midpoint}}``), and its formula for titles (``{tau}`` is the
    scale in words)."""

    name: str
    weight: Callable[[np.ndarray | float, np.ndarray | float], np.ndarray]
    qdrant: str
    title: str


@dataclass(frozen=True)
class Combine:
    """How the bonus enters the score: the function (in the order Qdrant's formula evaluates it),
    its slope in the bonus (both forms are linear in it), the formula in words, and the Qdrant
    formula around ``$score`` given the bonus and the decay expression."""

    name: str
    score: Callable[[np.ndarray | float, np.ndarray | float, np.ndarray | float], np.ndarray]
    slope: Callable[[np.ndarray | float, np.ndarray | float], np.ndarray]
    formula: str
    qdrant: Callable[[float, Any], dict[str, Any]]


DECAYS: dict[str, Decay] = {
    d.name: d
    for d in (
        Decay("exp", exp_decay, "exp_decay", "exp(−age / {tau})"),
        Decay("gauss", gauss_decay, "gauss_decay", "exp(−(age / {tau})²)"),
        Decay("lin", lin_decay, "lin_decay", "max(0, 1 − (1 − 1/e) age / {tau})"),
    )
}
COMBINES: dict[str, Combine] = {
    c.name: c
    for c in (
        Combine(
            "add",
            lambda raw, weight, bonus: raw + bonus * weight,
            lambda raw, weight: weight,
            "raw + bonus * w",
            lambda bonus, decay: {"sum": ["$score", {"mult": [bonus, decay]}]},
        ),
        Combine(
            "mult",
            lambda raw, weight, bonus: raw * (1.0 + bonus * weight),
            lambda raw, weight: raw * weight,
            "raw * (1 + bonus * w)",
            lambda bonus, decay: {"mult": ["$score", {"sum": [1.0, {"mult": [bonus, decay]}]}]},
        ),
    )
}


def recency_weight(age: np.ndarray | float, tau_days: np.ndarray | float, decay: str = "exp") -> np.ndarray:
    """The decay family's weight: 1 for a memory written at the reference time, 1/e after tau
    days; 0 for a memory written after it (age +inf)."""
    return lookup(DECAYS, decay, "decay").weight(age, tau_days)


def recency_bonus(
    age: np.ndarray | float, bonus: np.ndarray | float, tau_days: np.ndarray | float, decay: str = "exp"
) -> np.ndarray:
    """``bonus * weight(age, tau)``: the weight the bonus multiplies (added to the raw cosine)."""
    return bonus * recency_weight(age, tau_days, decay)


def rescore(
    raw: np.ndarray | float, weight: np.ndarray | float, bonus: np.ndarray | float, combine: str = "add"
) -> np.ndarray:
    """Post-bonus score from a precomputed recency weight: ``raw + bonus * weight`` (add) or
    ``raw * (1 + bonus * weight)`` (mult), in the order Qdrant's formula evaluates them.

    The reference, the sweep, the feasible region and every study score through this function,
    so they round alike.
    """
    return lookup(COMBINES, combine, "combine").score(raw, weight, bonus)


def unscore(
    final: np.ndarray | float, weight: np.ndarray | float, bonus: np.ndarray | float, combine: str = "add"
) -> np.ndarray:
    """The raw cosine behind a post-bonus score: ``rescore`` inverted. Every combine is affine in
    the raw score (``raw + bonus * w``, ``raw * (1 + bonus * w)``), so ``final = a * raw + b``
    with ``b`` its score at raw 0 and ``a`` its rise to raw 1 (``a >= 1``: the bonus and the
    weight are never negative). What a Qdrant formula query returns is the final score alone;
    this gives back the raw one (``memlab.Retriever``)."""
    score = lookup(COMBINES, combine, "combine").score
    b = score(0.0, weight, bonus)
    a = score(1.0, weight, bonus) - b
    return (np.asarray(final, dtype=np.float64) - b) / a


def final_score(
    raw: np.ndarray | float,
    age: np.ndarray | float,
    bonus: np.ndarray | float,
    tau_days: np.ndarray | float,
    decay: str = "exp",
    combine: str = "add",
) -> np.ndarray:
    """Post-bonus score: ``raw + bonus * exp(-age / tau)`` for the seed's exp/add spec."""
    return rescore(raw, recency_weight(age, tau_days, decay), bonus, combine)


# each field's range, checked by memlab.core.numbers.check_number (the grid's axes use the same)
SPEC_BOUNDS: dict[str, dict[str, float]] = {
    # a count past a 32-bit integer is no count of memories: the exported query's limit would be
    # a number Qdrant's clients cannot all hold (10**30 was exported as is, issue 37's walk)
    "candidates": {"minimum": 1, "maximum": 2**31 - 1},
    "inject": {"minimum": 1, "maximum": 2**31 - 1},
    "threshold": {},
    "bonus": {"minimum": 0.0},
    "tau_days": {"above": 0.0},
    "mmr_pool": {"minimum": 0, "maximum": 16_384},  # Qdrant's own cap on candidates_limit
    "diversity": {"minimum": 0.0, "maximum": 1.0},  # Qdrant's range for Mmr.diversity
}
INTEGER_FIELDS = ("candidates", "inject", "mmr_pool")
NAME_FIELDS = ("decay", "combine")  # fields holding a registry name, not a number
# the fields of a stage that is off by default: a row, a tuned file or a command may leave them
# out, and ``as_row`` writes them only when the stage is on, so every output made before the
# stage existed is unchanged
STAGE_FIELDS = ("mmr_pool", "diversity")
DEFAULT_FAMILY = ("exp", "add")  # the seed's decay family: (decay, combine)


@dataclass(frozen=True)
class RetrievalSpec:
    """How memories are recalled. Defaults are the values the seed write-up adopted."""

    candidates: int = 8
    inject: int = 3
    threshold: float = 0.45
    bonus: float = 0.05
    tau_days: float = 14.0
    reference_date: datetime | None = None  # None: the dataset's reference date
    decay: str = "exp"  # exp | gauss | lin (weight 1/e at age tau_days)
    combine: str = "add"  # add: raw + bonus*w; mult: raw * (1 + bonus*w)
    # maximal marginal relevance (Qdrant's ``mmr``, memlab.core.mmr), before the bonus: the top
    # ``mmr_pool`` by raw cosine, of which MMR picks ``candidates`` one by one; 0: no MMR stage
    mmr_pool: int = 0
    diversity: float = 0.0  # Qdrant's Mmr.diversity: 0 picks by relevance alone, 1 by diversity

    def __post_init__(self) -> None:
        for name, bounds in SPEC_BOUNDS.items():
            check_number(getattr(self, name), name, integer=name in INTEGER_FIELDS, **bounds)
        lookup(DECAYS, self.decay, "decay")
        lookup(COMBINES, self.combine, "combine")
        if self.diversity > 0 and self.mmr_pool == 0:
            raise InputError(f"diversity {self.diversity:g} needs an MMR pool (mmr_pool >= 1)")

    @property
    def mmr(self) -> bool:
        """Whether the spec has an MMR stage (a pool to diversify)."""
        return self.mmr_pool > 0

    @property
    def default_family(self) -> bool:
        """Whether the decay family is the seed's (exp, add)."""
        return (self.decay, self.combine) == DEFAULT_FAMILY

    @classmethod
    def from_row(cls, row: Any, **overrides: Any) -> RetrievalSpec:
        """The spec of a sweep row, a tuned file's ``spec`` or any mapping of spec fields (a
        pandas row too); a field it lacks takes the spec's default. ``overrides`` win."""
        values: dict[str, Any] = {}
        for name in SPEC_FIELDS:
            value = overrides.get(name, row.get(name) if hasattr(row, "get") else row[name])
            if value is None or (isinstance(value, float) and value != value):  # absent, or NaN
                continue
            values[name] = str(value) if name in NAME_FIELDS else _number(value, name in INTEGER_FIELDS)
        return cls(**values, reference_date=overrides.get("reference_date"))

    def as_row(self) -> dict[str, Any]:
        """The spec's fields (``SPEC_FIELDS``), an off stage's left out: what a tuned file and
        a sweep row hold."""
        return {name: getattr(self, name) for name in SPEC_FIELDS if name not in STAGE_FIELDS or self.mmr}

    def weight(self, age: np.ndarray | float) -> np.ndarray:
        """The recency weight of memories of these ages, in this spec's decay family."""
        return recency_weight(age, self.tau_days, self.decay)

    def final(self, raw: np.ndarray | float, age: np.ndarray | float) -> np.ndarray:
        """Post-bonus scores of memories with these raw scores and ages, under this spec."""
        return rescore(raw, self.weight(age), self.bonus, self.combine)

    def scored(self, raw: np.ndarray, age: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the post-bonus scores, what the recency term added to each raw one) of memories with
        these raw scores and ages: the reference's candidates and explain's rows show both. What
        was added is the product ``rescore`` adds (``bonus * w``, combine add, bit for bit), or
        the difference it made (mult)."""
        weight = self.weight(age)
        final = rescore(raw, weight, self.bonus, self.combine)
        return final, self.bonus * weight if self.combine == "add" else final - raw

    def with_reference(self, reference: datetime) -> RetrievalSpec:
        return self if self.reference_date is not None else replace(self, reference_date=reference)

    def as_dict(self) -> dict[str, object]:
        return {
            **self.as_row(),
            "reference_date": None if self.reference_date is None else self.reference_date.isoformat(),
        }


# the tunable fields, in the order files and tables write them (the reference date is no field:
# it follows the dataset)
SPEC_FIELDS = ("candidates", "inject", "threshold", "bonus", "tau_days", "decay", "combine", *STAGE_FIELDS)


def _number(value: Any, integer: bool) -> int | float:
    """A row's number as the spec holds it (numpy scalars too; 8.0 from a float column is 8)."""
    if integer and isinstance(value, float | np.floating) and float(value).is_integer():
        return int(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


class Candidate(NamedTuple):
    """One memory among a question's candidates, in re-sorted order."""

    index: int  # position of the memory in the dataset
    memory_id: str
    raw: float
    bonus: float
    final: float
    reaches: bool  # final >= threshold
    injected: bool  # reaches and among the first `inject` after the re-sort


MMR_NEEDS_VECTORS = (
    "MMR with diversity > 0 needs the memories' vectors, and these scores have none "
    "(score with --source embedded)"
)


# why no decision margin (memlab.core.decisions) is given under MMR with diversity: the margin is how
# far one final score can move before an injection changes, and MMR's picks are decided by other
# numbers too, lambda * raw - (1 - lambda) * the similarity to earlier picks. A move of a final
# score moves the MMR score by lambda times it if the raw score moved, by nothing if the bonus
# did, and a move of the raw score is a move of the vector every similarity is computed from:
# each reading gives another margin, so none is the margin
MMR_NO_MARGIN = (
    "no exact decision margin under MMR with diversity > 0: MMR's picks are decided by "
    "lambda*raw - (1-lambda)*similarity to earlier picks, which a move of a final score changes "
    "by lambda times it, by nothing or through the vectors depending on what moved "
    "(docs/sweep.md, MMR as axes)"
)


def check_mmr(spec: RetrievalSpec, vectors: np.ndarray | None, pool: Pool | None = None) -> None:
    """Refuse, in one line, an MMR stage the inputs cannot run: diversity without vectors (the
    seed's published scores). Several shards are modelled as Qdrant runs them: MMR on each shard
    apart (``mmr_pool_candidates``)."""
    if spec.mmr and spec.diversity > 0 and vectors is None:
        raise InputError(MMR_NEEDS_VECTORS)


def mmr_candidates(
    raw: np.ndarray, spec: RetrievalSpec, vectors: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The MMR stage for one question on one shard: (its pool, the top ``mmr_pool`` by raw score
    in candidate order; the places in the pool MMR picks, in pick order:
    ``memlab.core.mmr.select``, relevance the raw cosine, similarity the memories' cosine)."""
    from memlab.core import mmr

    pool_idx = select_candidates(raw, spec.mmr_pool)
    sim = mmr.similarities(vectors if spec.diversity > 0 else None, pool_idx)
    return pool_idx, mmr.select(raw[pool_idx], sim, spec.diversity, spec.candidates)


def mmr_pool_candidates(
    raw: np.ndarray, spec: RetrievalSpec, vectors: np.ndarray | None, pool: Pool | None = None
) -> np.ndarray:
    """One question's candidates under the MMR stage, in candidate order (higher raw first, ties
    in dataset order): the memories MMR picks on each shard of ``pool`` apart, among that shard's
    memories the filter keeps. Qdrant runs an ``mmr`` prefetch with its own nested prefetch as a
    shard-level rescore (``lib/shard/src/query/planned_query.rs``, ``recurse_prefetches``): each
    shard diversifies its own top ``mmr_pool`` down to ``candidates``, and the collection only
    merges what the formula above it returns, so the candidates are the union of the shards'
    picks (at most ``shards * candidates``)."""
    raw = narrow(np.asarray(raw, dtype=np.float64), pool)
    if pool is None or pool.shards == 1:
        shards = [raw]
    else:
        shard = np.asarray(pool.shard)
        shards = [np.where(shard == s, raw, np.nan) for s in np.unique(shard)]
    chosen = []
    for part in shards:
        pool_idx, picks = mmr_candidates(part, spec, vectors)
        chosen.append(pool_idx[picks])
    # MMR only chooses the candidates; the re-sort then orders them by its own rule, which breaks
    # ties by candidate order (raw, then dataset order), so they are kept in it
    keep = np.zeros(raw.shape[-1], dtype=bool)
    keep[np.concatenate(chosen).astype(np.intp)] = True
    order = candidate_order(raw)
    return order[keep[order]]


def retrieve(
    raw: np.ndarray,
    ages: np.ndarray,
    memory_ids: tuple[str, ...],
    spec: RetrievalSpec,
    pool: Pool | None = None,
    vectors: np.ndarray | None = None,
) -> list[Candidate]:
    """The one-config reference: one question's raw scores (NaN = unknown) -> its candidates, in
    re-sort order, through ``memlab.core.ranking``. ``pool``: the tenant filter and the shards
    (``memlab.core.shards``; None: every memory, one shard); ``vectors``: the memories' (for an
    MMR stage with diversity), row i memory i."""
    raw = np.asarray(raw, dtype=np.float64)
    if spec.mmr:
        check_mmr(spec, vectors, pool)
        idx = mmr_pool_candidates(raw, spec, vectors, pool)
    else:
        idx = pool_candidates(raw, spec.candidates, pool)
    final, bonus = spec.scored(raw, ages)
    out = []
    for rank, i in enumerate(rerank(raw, final, idx)):
        out.append(
            Candidate(
                int(i),
                memory_ids[i],
                float(raw[i]),
                float(bonus[i]),
                float(final[i]),
                bool(final[i] >= spec.threshold),
                bool(injected(final[i], rank, spec.threshold, spec.inject)),
            )
        )
    return out


def best_final(raw: np.ndarray, ages: np.ndarray, spec: RetrievalSpec) -> np.ndarray:
    """What the spec puts first, per row (leading axes broadcast): the highest post-bonus score
    among the top ``candidates`` by raw score, with the candidate rule's ties; -inf for a row
    without a known score. The vectorised form of ``retrieve(...)[0].final``."""
    raw = np.asarray(raw, dtype=np.float64)
    ages = np.broadcast_to(np.asarray(ages, dtype=np.float64), raw.shape)
    top = top_k(raw, spec.candidates)
    top_raw = np.take_along_axis(raw, top, axis=-1)
    final = spec.final(top_raw, np.take_along_axis(ages, top, axis=-1))
    final = np.where(np.isfinite(top_raw), final, -np.inf)
    return final.max(axis=-1, initial=-np.inf)
