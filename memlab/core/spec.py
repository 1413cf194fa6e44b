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

Ties are broken deterministically:
- candidate selection: higher raw score first, then fixture order (earlier memory first);
- re-sort: higher final score first, then higher raw score, then fixture order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import NamedTuple

import numpy as np

from memlab.core.errors import UnknownNameError
from memlab.core.numbers import check_number
from memlab.core.registry import lookup, unknown_message

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


# the decay families: name -> weight(age, tau); Qdrant's expression is ``<name>_decay``
DECAYS = {"exp": exp_decay, "gauss": gauss_decay, "lin": lin_decay}
# how the bonus enters the score: name -> meaning
COMBINES = {"add": "raw + bonus * w", "mult": "raw * (1 + bonus * w)"}


def recency_weight(age: np.ndarray | float, tau_days: np.ndarray | float, decay: str = "exp") -> np.ndarray:
    """The decay family's weight: 1 for a memory written at the reference time, 1/e after tau
    days; 0 for a memory written after it (age +inf)."""
    return lookup(DECAYS, decay, "decay")(age, tau_days)


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

    The reference, the sweep and the feasible region all score through this function, so they
    round alike. Both forms are linear in the bonus (mult with slope ``raw * weight``).
    """
    if combine == "add":
        return raw + bonus * weight
    if combine == "mult":
        return raw * (1.0 + bonus * weight)
    raise UnknownNameError(unknown_message("combine", [combine], COMBINES))


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
    "candidates": {"minimum": 1},
    "inject": {"minimum": 1},
    "threshold": {},
    "bonus": {"minimum": 0.0},
    "tau_days": {"above": 0.0},
}


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

    def __post_init__(self) -> None:
        for name, bounds in SPEC_BOUNDS.items():
            check_number(getattr(self, name), name, integer=name in ("candidates", "inject"), **bounds)
        lookup(DECAYS, self.decay, "decay")
        lookup(COMBINES, self.combine, "combine")

    def with_reference(self, reference: datetime) -> RetrievalSpec:
        return self if self.reference_date is not None else replace(self, reference_date=reference)

    def as_dict(self) -> dict[str, object]:
        return {
            "candidates": self.candidates,
            "inject": self.inject,
            "threshold": self.threshold,
            "bonus": self.bonus,
            "tau_days": self.tau_days,
            "decay": self.decay,
            "combine": self.combine,
            "reference_date": None if self.reference_date is None else self.reference_date.isoformat(),
        }


class Candidate(NamedTuple):
    """One memory among a question's candidates, in re-sorted order."""

    index: int  # position of the memory in the dataset
    memory_id: str
    raw: float
    bonus: float
    final: float
    reaches: bool  # final >= threshold
    injected: bool  # reaches and among the first `inject` after the re-sort


def candidate_order(raw: np.ndarray) -> np.ndarray:
    """Indices along the last axis by raw score, highest first, ties in dataset order; unknown
    (non-finite) scores last. The candidate rule of the spec, for one question or a whole batch."""
    raw = np.asarray(raw, dtype=np.float64)
    return np.argsort(np.where(np.isfinite(raw), -raw, np.inf), axis=-1, kind="stable")


def resort_order(raw: np.ndarray, final: np.ndarray) -> np.ndarray:
    """Indices along the last axis by final score, then raw score, then dataset order (the
    spec's re-sort). ``np.lexsort`` is stable, so the last tie-break is the position."""
    raw, final = np.broadcast_arrays(np.asarray(raw, dtype=np.float64), np.asarray(final, dtype=np.float64))
    return np.lexsort((-raw, -final), axis=-1)


def rank_of(order: np.ndarray) -> np.ndarray:
    """Each element's position in ``order`` (the inverse permutation along the last axis)."""
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(order.shape[-1]), order.shape), axis=-1)
    return ranks


def select_candidates(raw: np.ndarray, k: int) -> np.ndarray:
    """Indices of the top ``k`` finite raw scores, highest first, ties in fixture order."""
    raw = np.asarray(raw, dtype=np.float64)
    order = candidate_order(raw)
    return order[: min(k, int(np.isfinite(raw).sum()))]


def rerank(raw: np.ndarray, final: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Re-sort candidate indices by final score, then raw score, then fixture order.

    ``idx`` comes from ``select_candidates``: where final and raw tie, candidate order is
    dataset order, so the stable re-sort keeps it.
    """
    return idx[resort_order(raw[idx], final[idx])]


def retrieve(
    raw: np.ndarray, ages: np.ndarray, memory_ids: tuple[str, ...], spec: RetrievalSpec
) -> list[Candidate]:
    """The one-config reference: one question's raw scores (NaN = unknown) -> its candidates."""
    raw = np.asarray(raw, dtype=np.float64)
    idx = select_candidates(raw, spec.candidates)
    weight = recency_weight(ages, spec.tau_days, spec.decay)
    final = rescore(raw, weight, spec.bonus, spec.combine)
    # what the recency term added: the same product rescore adds, or (mult) the difference it made
    bonus = spec.bonus * weight if spec.combine == "add" else final - raw
    out = []
    for rank, i in enumerate(rerank(raw, final, idx)):
        reaches = bool(final[i] >= spec.threshold)
        out.append(
            Candidate(
                int(i),
                memory_ids[i],
                float(raw[i]),
                float(bonus[i]),
                float(final[i]),
                reaches,
                reaches and rank < spec.inject,
            )
        )
    return out
