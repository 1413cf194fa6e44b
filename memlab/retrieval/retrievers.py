"""Retrieval retrievers that combine a vector route, a keyword route and time, compared on one footing.

A retriever (``RETRIEVERS``) turns the routes' scores into one final score per question and memory;
the spec's own machinery then does the rest, so every retriever is tuned by the same vectorised
sweep, with the same criteria, selection and metrics as the seed's recency bonus:

- ``vector``: raw cosine, top ``candidates``, threshold (the spec with bonus 0);
- ``vector-decay``: the spec, ``cosine + bonus * decay(age, tau)`` in its decay family and combine;
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

The comparison that tunes and compares them is ``memlab.studies.hybrid``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memlab.core.errors import InputError
from memlab.core.registry import check_names
from memlab.retrieval.fusion import (
    alpha_weights,
    normalize,
    ranks,
    route_candidates,
    rrf_fusion,
    weighted_fusion,
)
from memlab.retrieval.gate import time_gate
from memlab.retrieval.inputs import RetrievalInputs

ROUTES = ("vector", "keyword", "time")


@dataclass(frozen=True)
class Retriever:
    name: str
    routes: tuple[str, ...]
    fusion: str  # none | weighted | rrf
    decay: bool
    gate: bool
    meaning: str


RETRIEVERS: dict[str, Retriever] = {
    p.name: p
    for p in (
        Retriever("vector", ("vector",), "none", False, False, "cosine only"),
        Retriever(
            "vector-decay",
            ("vector",),
            "none",
            True,
            False,
            "cosine plus the recency bonus (the seed's spec)",
        ),
        Retriever(
            "hybrid-weighted",
            ("vector", "keyword"),
            "weighted",
            False,
            False,
            "weighted fusion of cosine and BM25",
        ),
        Retriever(
            "hybrid-rrf",
            ("vector", "keyword"),
            "rrf",
            False,
            False,
            "reciprocal rank fusion of cosine and BM25",
        ),
        Retriever(
            "rrf-time", ("vector", "keyword", "time"), "rrf", False, False, "RRF with time as a third route"
        ),
        Retriever(
            "gate-decay",
            ("vector", "keyword"),
            "weighted",
            True,
            True,
            "time expression as a gate, weighted fusion, plus the recency bonus",
        ),
        Retriever(
            "gate-vector-decay",
            ("vector",),
            "none",
            True,
            True,
            "time expression as a gate, cosine plus the recency bonus",
        ),
    )
}


def check_retrievers(names: Sequence[str] | None) -> tuple[Retriever, ...]:
    """The named retrievers in the order given; None: all of them."""
    if names is None:
        return tuple(RETRIEVERS.values())
    names = list(names)
    if not names:
        raise InputError(f"no retriever named; available: {', '.join(RETRIEVERS)}")
    check_names(RETRIEVERS, names, "retriever")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InputError(f"retriever(ies) named twice: {', '.join(repeated)}")
    return tuple(RETRIEVERS[n] for n in names)


def uses_keywords(retrievers: Sequence[str] | None) -> bool:
    return any("keyword" in p.routes for p in check_retrievers(retrievers))


@dataclass(frozen=True)
class FusionSettings:
    """One value of the fusion axes, and the final (pre-bonus) scores it gives, (Q, M)."""

    params: dict[str, Any]
    scores: np.ndarray


def retriever_scores(
    retriever: Retriever,
    inputs: RetrievalInputs,
    *,
    candidates: int = 8,
    alphas: Sequence[float] = (0.5,),
    norms: Sequence[str] = ("min-max",),
    rrf_ks: Sequence[float] = (60,),
) -> list[FusionSettings]:
    """The retriever's pre-bonus scores for every value of its fusion axes (alpha x norm, or k).

    NaN marks a memory that is no candidate. For ``none`` fusion the cosine table is returned
    whole (the sweep takes its top ``candidates``, as the spec does).
    """
    if "keyword" in retriever.routes and inputs.keyword is None:
        raise InputError(
            f"retriever {retriever.name!r} needs keyword scores: build the inputs with keyword=True"
        )
    mask = time_gate(inputs).mask if retriever.gate else inputs.visible
    vector = np.where(mask, inputs.vector, np.nan)
    if retriever.fusion == "none":
        return [FusionSettings({}, vector)]
    routes = {
        "vector": lambda: route_candidates(vector, candidates),
        "keyword": lambda: route_candidates(
            np.where(mask, inputs.keyword, np.nan), candidates, positive_only=True
        ),
        # newest first: the time route always has a full list, whatever the question asks
        "time": lambda: route_candidates(np.where(mask, -inputs.ages, np.nan), candidates),
    }
    used = [routes[r]() for r in retriever.routes]
    if retriever.fusion == "weighted":
        out = []
        for norm in norms:
            normed = [normalize(x, norm) for x in used]
            fused = weighted_fusion(normed, alpha_weights(np.asarray(alphas)))  # (A, Q, M)
            out += [FusionSettings({"norm": norm, "alpha": float(a)}, fused[i]) for i, a in enumerate(alphas)]
        return out
    fused = rrf_fusion([ranks(x) for x in used], np.asarray(rrf_ks))  # (K, Q, M)
    return [FusionSettings({"rrf_k": float(k)}, fused[i]) for i, k in enumerate(rrf_ks)]
