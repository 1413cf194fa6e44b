"""Score fusion of retrieval routes, vectorised over questions and fusion parameters.

A route's result for a question is its candidate list: a (Q, M) table with the route's score
for its candidates and NaN elsewhere (``route_candidates``). Fusion follows ranx's conventions
(Bassani, ECIR 2022), which the tests check it against, so numbers here mean what they mean
in ranx:

- normalisation is per question over the route's own candidates: ``min-max`` maps them to
  [0, 1], ``(x - min) / max(max - min, 1e-9)``; ``z-score`` (ranx's "zmuv") is
  ``(x - mean) / max(std, 1e-9)`` with the population standard deviation; ``none`` keeps the
  raw scores (cosine and BM25 on their own scales), the one choice with an absolute meaning;
- weighted fusion sums ``weight_r * normalised_r`` over the routes that returned the memory
  (a route that did not return it adds 0); with two routes the weights are ``alpha, 1 - alpha``;
- reciprocal rank fusion sums ``1 / (k + rank_r)`` with ranks from 1 (Cormack et al. 2009,
  ranx, Elasticsearch). Qdrant's ``Rrf(k)`` uses ``1 / (k + rank - 1)``, so Qdrant's k is this
  k plus one (``memlab.qdrant.store`` converts). Equal scores share a rank (competition ranking), and
  a route keeps every memory tied with its last candidate: no tie is broken by position.
  Qdrant breaks ties in its own order, so its native query agrees with memlab where scores differ.

Neither fused score has an absolute meaning: a min-max score of 1 means "the best this route
found for this question", however poor that was. A threshold on a fused score is therefore
calibrated by the sweep against the same criteria as the raw score (``memlab.studies.hybrid``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from memlab.core.errors import InputError
from memlab.core.ranking import candidate_lists
from memlab.core.registry import lookup


def route_candidates(scores: np.ndarray, n: int, *, positive_only: bool = False) -> np.ndarray:
    """Keep each question's top ``n`` scores (NaN elsewhere), and every score tied with the n-th.

    A route cannot tell tied memories apart (fifty lunches share one BM25 score), so none of them
    is dropped by position: cutting ties in memory order would favour the oldest, in date order
    the newest. ``positive_only``: a score of 0 or less is no match (BM25: no shared term).
    """
    scores = np.asarray(scores, dtype=np.float64)
    if positive_only:
        scores = np.where(scores > 0, scores, np.nan)
    top = candidate_lists(scores, n)
    if top.shape[-1] == 0:
        return np.full_like(scores, np.nan)
    # the n-th known score of each question (its last candidate; -inf: none known)
    last = np.take_along_axis(scores, np.maximum(top, 0), axis=-1)
    nth = np.where(top >= 0, last, np.inf).min(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        keep = np.isfinite(scores) & (scores >= nth)
    return np.where(keep, scores, np.nan)


def _min_max(x: np.ndarray) -> np.ndarray:
    lo = np.nanmin(x, axis=-1, keepdims=True)
    hi = np.nanmax(x, axis=-1, keepdims=True)
    return (x - lo) / np.maximum(hi - lo, 1e-9)


def _z_score(x: np.ndarray) -> np.ndarray:
    mean = np.nanmean(x, axis=-1, keepdims=True)
    std = np.nanstd(x, axis=-1, keepdims=True)
    return (x - mean) / np.maximum(std, 1e-9)


NORMALIZATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "min-max": _min_max,
    "z-score": _z_score,
    # raw scores: keeps the absolute scale per-question normalisation throws away (ranx norm=None)
    "none": lambda x: x,
}


def normalize(scores: np.ndarray, method: str) -> np.ndarray:
    """Per question over its finite entries; a question with no candidates stays all NaN."""
    fn = lookup(NORMALIZATIONS, method, "normalisation")
    scores = np.asarray(scores, dtype=np.float64)
    out = np.full_like(scores, np.nan)
    rows = np.isfinite(scores).any(axis=-1)
    if rows.any():
        with np.errstate(invalid="ignore"):
            out[rows] = fn(scores[rows])
    return out


def weighted_fusion(normalized: Sequence[np.ndarray], weights: np.ndarray) -> np.ndarray:
    """``sum_r weights[..., r] * normalized[r]`` with a missing entry adding 0; NaN where no route
    returned the memory. ``weights`` has shape (..., R); the result (..., Q, M)."""
    weights = np.asarray(weights, dtype=np.float64)
    stacked = np.stack([np.asarray(x, dtype=np.float64) for x in normalized])  # (R, Q, M)
    present = np.isfinite(stacked)
    w = weights[..., :, None, None]  # (..., R, 1, 1)
    fused = (w * np.where(present, stacked, 0.0)).sum(axis=-3)
    return np.where(present.any(axis=0), fused, np.nan)


def alpha_weights(alphas: np.ndarray | float) -> np.ndarray:
    """(A, 2): weight alpha on the first route (vector), 1 - alpha on the second (keyword)."""
    a = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
    if ((a < 0) | (a > 1)).any():
        raise InputError(f"alpha must lie in [0, 1], got {a[(a < 0) | (a > 1)].tolist()}")
    return np.stack([a, 1.0 - a], axis=-1)


def ranks(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each candidate within its question, score descending; tied scores share
    the best rank among them (competition ranking: 1, 1, 3), so no tie is broken by position.
    NaN (no candidate) stays NaN. This is ``scipy.stats.rankdata(method="min")``."""
    from scipy.stats import rankdata

    scores = np.asarray(scores, dtype=np.float64)
    return rankdata(-scores, method="min", axis=-1, nan_policy="omit").astype(np.float64)


def rrf_fusion(route_ranks: Sequence[np.ndarray], k: np.ndarray | float) -> np.ndarray:
    """``sum_r 1 / (k + rank_r)`` over the routes that returned the memory; (K, Q, M) for K values."""
    k = np.atleast_1d(np.asarray(k, dtype=np.float64))
    if (k < 0).any():
        raise InputError(f"RRF k must be >= 0, got {k[k < 0].tolist()}")
    stacked = np.stack([np.asarray(r, dtype=np.float64) for r in route_ranks])  # (R, Q, M)
    present = np.isfinite(stacked)
    contrib = np.where(present, 1.0 / (k[:, None, None, None] + np.where(present, stacked, 1.0)), 0.0)
    return np.where(present.any(axis=0), contrib.sum(axis=1), np.nan)
