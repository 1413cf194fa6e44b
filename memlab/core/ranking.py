"""The spec's ranking rules, once: candidate order, re-sort order, exact top-k and its merge across
chunks, and the threshold-and-inject rule. Every path calls these: the one-config reference
(``memlab.core.spec.retrieve``), the sweep, the feasible region, the scale and calibration
studies, the retrievers and the drift study's read systems.

The tie rule, stated once:

- candidates: higher raw score first, then dataset order (the earlier memory first); unknown
  (non-finite) scores are never candidates;
- re-sort: higher final score first, then higher raw score, then dataset order;
- injected: a candidate whose final score is at or above the threshold (inclusive) and whose place
  in the re-sort is among the first ``inject``. The re-sort puts every candidate that reaches the
  threshold before every one that does not, so the injected ones are the first
  ``min(inject, reaching)``.

Functions work along the last axis and broadcast over leading ones.
"""

from __future__ import annotations

import numpy as np

NOT_CANDIDATE = np.iinfo(np.int64).max // 2  # the place (re-sort rank) of a memory that is no candidate


def _key(raw: np.ndarray) -> np.ndarray:
    """The candidate sort key: -raw, with unknown (non-finite) scores last."""
    raw = np.asarray(raw, dtype=np.float64)
    return np.where(np.isfinite(raw), -raw, np.inf)


def candidate_order(raw: np.ndarray) -> np.ndarray:
    """Indices along the last axis by raw score, highest first, ties in dataset order; unknown
    (non-finite) scores last."""
    return np.argsort(_key(raw), axis=-1, kind="stable")


def resort_order(raw: np.ndarray, final: np.ndarray) -> np.ndarray:
    """Indices along the last axis by final score, then raw score, then position (the re-sort).
    ``np.lexsort`` is stable, so the last tie-break is the position."""
    raw, final = np.broadcast_arrays(np.asarray(raw, dtype=np.float64), np.asarray(final, dtype=np.float64))
    return np.lexsort((-raw, -final), axis=-1)


def candidate_resort(final: np.ndarray) -> np.ndarray:
    """The re-sort (``resort_order``) of candidates listed in candidate order, from their final
    scores alone: that order already breaks ties as the re-sort does (higher raw, then dataset
    order), so a stable sort on the final score keeps it among equal ones. For the sweep, which
    holds each question's candidates in that order and not their raw scores per slot."""
    return np.argsort(-np.asarray(final), axis=-1, kind="stable")


def placed_before(final_a, pos_a, final_b, pos_b):
    """The re-sort's order between two candidates of one question, given their final scores and
    their places in candidate order (raw descending, then dataset order): ``a`` comes first when
    its final is higher, or equal with ``a`` the earlier candidate. The rule of ``resort_order``
    for code that walks the candidates one by one (the sweep's kernels); arrays broadcast."""
    return (final_a > final_b) | ((final_a == final_b) & (pos_a < pos_b))


def rank_of(order: np.ndarray) -> np.ndarray:
    """Each element's place in ``order`` (the inverse permutation along the last axis)."""
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(order.shape[-1]), order.shape), axis=-1)
    return ranks


def top_k(raw: np.ndarray, k: int) -> np.ndarray:
    """The first ``min(k, n)`` indices of ``candidate_order(raw)`` along the last axis, without
    sorting everything: a partition finds the k-th score, and only rows where memories tie
    exactly on it (which the partition would cut arbitrarily) are sorted whole. Unknown scores
    sort last, as in ``candidate_order``; callers drop them by their score."""
    key = _key(raw)
    n = key.shape[-1]
    k = max(0, min(int(k), n))
    if k == 0:
        return np.zeros((*key.shape[:-1], 0), dtype=np.intp)
    if k == n or n <= 64:
        return np.argsort(key, axis=-1, kind="stable")[..., :k]
    part = np.argpartition(key, k - 1, axis=-1)[..., :k]
    kth = np.take_along_axis(key, part, axis=-1).max(axis=-1, keepdims=True)
    # the partition is exact unless memories tie on the k-th score: then which of them it kept is
    # arbitrary, and the rule wants the earliest
    picked = np.take_along_axis(key, part, axis=-1)
    ambiguous = (key == kth).sum(axis=-1) > (picked == kth).sum(axis=-1)
    # order the kept k by score, then position
    out = np.take_along_axis(part, np.lexsort((part, picked), axis=-1), axis=-1)
    if ambiguous.any() and key.ndim == 1:  # one row (a 0-d verdict)
        return np.argsort(key, kind="stable")[:k]
    if ambiguous.any():
        rows = np.nonzero(ambiguous)
        out[rows] = np.argsort(key[rows], axis=-1, kind="stable")[..., :k]
    return out


def select_candidates(raw: np.ndarray, k: int) -> np.ndarray:
    """One question's candidates: indices of its top ``k`` known raw scores, in candidate order."""
    raw = np.asarray(raw, dtype=np.float64)
    return top_k(raw, min(k, int(np.isfinite(raw).sum())))


def candidate_lists(raw: np.ndarray, k: int) -> np.ndarray:
    """Every question's ``select_candidates`` at once: (..., min(k, n)) indices in candidate
    order, -1 in the places past a question's known scores (fewer than ``k``)."""
    raw = np.asarray(raw, dtype=np.float64)
    idx = top_k(raw, k)
    known = np.isfinite(np.take_along_axis(raw, idx, axis=-1))
    return np.where(known, idx, -1)


def merge_top_k(
    raw_a: np.ndarray, pos_a: np.ndarray, raw_b: np.ndarray, pos_b: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The top ``k`` of two candidate lists, by the candidate rule: (indices into the
    concatenation ``[a, b]`` along the last axis, in candidate order, and their positions).

    ``pos_*`` are the memories' positions in the whole store (dataset order), so a running top-k
    over chunks keeps the earliest memory among equal scores, exactly as one sort over the whole
    store would.
    """
    raw = np.concatenate([raw_a, raw_b], axis=-1)
    pos = np.concatenate([np.broadcast_to(pos_a, raw_a.shape), np.broadcast_to(pos_b, raw_b.shape)], axis=-1)
    order = np.lexsort((pos, _key(raw)), axis=-1)[..., : min(k, raw.shape[-1])]
    return order, np.take_along_axis(pos, order, axis=-1)


def rerank(raw: np.ndarray, final: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """One question's candidate indices (from ``select_candidates``) in re-sort order."""
    return idx[resort_order(raw[idx], final[idx])]


def injected(final: np.ndarray, rank: np.ndarray, threshold, inject) -> np.ndarray:
    """The threshold-and-inject rule: a candidate is injected when its final score is at or above
    ``threshold`` and its place in the re-sort (0-based) is below ``inject``."""
    return (final >= threshold) & (rank < inject)


def injected_mask(raw: np.ndarray, final: np.ndarray, candidate: np.ndarray, threshold, inject) -> np.ndarray:
    """Which memories are injected, along the last axis: among ``candidate`` (a mask), re-sorted,
    the rule of ``injected``. Every argument broadcasts."""
    reaches = candidate & (final >= threshold)
    order = resort_order(np.where(reaches, raw, -np.inf), np.where(reaches, final, -np.inf))
    return reaches & injected(final, rank_of(order), threshold, inject)


def candidate_mask(raw: np.ndarray, k) -> np.ndarray:
    """Which memories are among the top ``k`` known raw scores (``k`` broadcasts)."""
    return np.isfinite(raw) & (rank_of(candidate_order(raw)) < k)
