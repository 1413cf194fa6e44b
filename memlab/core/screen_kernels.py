"""A low-precision screen for ``memlab explain``'s top ``k``, with a proven bound, and the exact
float32 rescoring of what it keeps: the same positions and the same float32 scores as the
whole-block product followed by ``memlab.core.ranking_kernels.visible_top_k``.

The screen scores int8 vectors: each vector ``x`` is stored as ``s_x * X`` (``X`` int8, one scale
``s_x = max|x_i| / 127`` per vector), and ``X . Q`` is exact in int32 (384 * 127^2 < 2^31). With
``e_x = x - s_x X`` (its norm measured exactly, per vector, in float64), for the float32 vectors
as real numbers ``|x . q - s_x s_q X . Q| <= |x| |e_q| + |e_x| |s_q Q|`` (Cauchy-Schwarz, twice),
and the float32 product itself is within ``gamma_d |x| |q|`` of ``x . q`` (``gamma_d = d u /
(1 - d u)``, ``u = 2^-24``: any summation order, FMA or not). So with ``B`` the sum of the two
bounds, every memory whose float32 score can reach the ``k``-th best has a screen score of at
least the ``k``-th best screen score minus ``2 B`` (``screen_candidates`` keeps exactly those).

``rescore_top_k`` then scores those few in float32 as one FMA after another along the
dimensions, which is how OpenBLAS's gemm kernel accumulates each entry of a large product (the
bits agree; ``memlab.tuning.explain`` checks them against the real product on its first block and
falls back to the product if they do not), and keeps the top ``k`` with ``visible_top_k``'s tie
rule.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

ROUNDING = 2.0**-24  # float32's unit roundoff
LEVELS = 127  # int8's symmetric range


@intrinsic
def _fma32(typingctx, a, b, c):
    """``a * b + c`` in float32 with one rounding (LLVM's fma: fused on every target)."""
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return sig, codegen


@numba.njit(cache=True, nogil=True, parallel=True)
def quantize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each row of ``x`` (float32) as ``scale * q`` (``q`` int8 in [-127, 127]): ``q``, the
    scales, the rows' norms and the norms of ``x - scale * q`` (float64, from the float32 values
    exactly). A zero row has scale 1 and ``q`` 0."""
    n, d = x.shape
    q = np.zeros((n, d), dtype=np.int8)
    scale = np.ones(n)
    norm = np.zeros(n)
    err = np.zeros(n)
    for i in numba.prange(n):
        top = 0.0
        for j in range(d):
            top = max(top, abs(np.float64(x[i, j])))
        s = top / LEVELS if top > 0 else 1.0
        scale[i] = s
        nn, ee = 0.0, 0.0
        for j in range(d):
            v = np.float64(x[i, j])
            r = min(max(np.round(v / s), -LEVELS), LEVELS)
            q[i, j] = np.int8(r)
            e = v - s * r
            nn += v * v
            ee += e * e
        norm[i], err[i] = np.sqrt(nn), np.sqrt(ee)
    return q, scale, norm, err


@numba.njit(cache=True, nogil=True, parallel=True)
def screen_candidates(
    products: np.ndarray,
    mem_scale: np.ndarray,
    query_scale: np.ndarray,
    margin: np.ndarray,
    dates: np.ndarray,
    times: np.ndarray,
    k: int,
    cap: int,
) -> tuple[np.ndarray, np.ndarray]:
    """For each row ``b`` of the int32 ``products`` (queries, memories), the screen score of
    memory ``j`` being ``query_scale[b] * mem_scale[j] * products[b, j]``: the positions, in
    dataset order, of the memories written by ``times[b]`` whose screen score is at least the row's
    ``k``-th best minus ``margin[b]`` (every written memory when the row sees fewer than ``k``),
    and how many (-1: more than ``cap``, the row is not screened)."""
    n_rows, n = products.shape
    keep = np.full((n_rows, cap), -1, dtype=np.int64)
    count = np.zeros(n_rows, dtype=np.int64)
    for b in numba.prange(n_rows):
        t, sq, m = times[b], query_scale[b], margin[b]
        top = np.full(k, -np.inf)  # the k best screen scores so far, descending
        kept = 0
        for j in range(n):
            if dates[j] > t:
                continue
            v = sq * mem_scale[j] * products[b, j]
            if v > top[k - 1]:
                p = k - 1
                while p > 0 and top[p - 1] < v:
                    top[p] = top[p - 1]
                    p -= 1
                top[p] = v
            if v >= top[k - 1] - m:  # the floor only rises: a memory let out now stays out
                if kept == cap:  # drop those the risen floor has left behind
                    floor, w = top[k - 1] - m, 0
                    for i in range(kept):
                        jj = keep[b, i]
                        if sq * mem_scale[jj] * products[b, jj] >= floor:
                            keep[b, w] = jj
                            w += 1
                    kept = w
                    if kept == cap:
                        kept = -1
                        break
                keep[b, kept] = j
                kept += 1
        if kept > 0:
            floor, w = top[k - 1] - m, 0
            for i in range(kept):
                jj = keep[b, i]
                if sq * mem_scale[jj] * products[b, jj] >= floor:
                    keep[b, w] = jj
                    w += 1
            keep[b, w:kept] = -1
            kept = w
        count[b] = kept
    return keep, count


@numba.njit(cache=True, nogil=True)
def fma_dot(a: np.ndarray, b: np.ndarray) -> np.float32:
    """``a . b`` (float32) accumulated as OpenBLAS's gemm kernel does: one FMA per dimension, in
    order, from zero."""
    acc = np.float32(0.0)
    for i in range(a.shape[0]):
        acc = _fma32(a[i], b[i], acc)
    return acc


@numba.njit(cache=True, nogil=True, parallel=True)
def rescore_top_k(
    queries: np.ndarray, memories: np.ndarray, keep: np.ndarray, count: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """For each row with ``count[b] >= 0``: the top ``k`` of the memories ``keep[b, :count[b]]``
    (in dataset order) by their float32 score (``fma_dot``), in ``visible_top_k``'s candidate order
    (higher first, ties in dataset order), positions (-1 past the last) and scores (float64, NaN
    past the last). A non-finite score is never a candidate."""
    n_rows = keep.shape[0]
    idx = np.full((n_rows, k), -1, dtype=np.int64)
    val = np.full((n_rows, k), np.nan)
    for b in numba.prange(n_rows):
        kept = 0
        for i in range(max(count[b], 0)):
            j = keep[b, i]
            v = np.float64(fma_dot(queries[b], memories[j]))
            if not np.isfinite(v):
                continue
            if kept < k:
                p = kept
                kept += 1
            elif v > val[b, k - 1]:  # strict: an equal score came later in dataset order
                p = k - 1
            else:
                continue
            while p > 0 and val[b, p - 1] < v:
                val[b, p] = val[b, p - 1]
                idx[b, p] = idx[b, p - 1]
                p -= 1
            val[b, p] = v
            idx[b, p] = j
    return idx, val


def screen_margin(
    query_norm: np.ndarray, query_err: np.ndarray, mem_norm: float, mem_err: float, d: int
) -> np.ndarray:
    """``2 B`` per query: twice the bound on |float32 score - screen score| for any memory of norm
    at most ``mem_norm`` and quantisation error at most ``mem_err`` (the store's largest), the
    quantised query's norm bounded by ``query_norm + query_err``; with a relative and an absolute
    slack for the float64 arithmetic of the screen scores and of the bound, and for products
    that underflow."""
    gamma = d * ROUNDING / (1 - d * ROUNDING)
    bound = mem_norm * query_err + mem_err * (query_norm + query_err) + gamma * mem_norm * query_norm
    return 2 * (bound * (1 + 1e-9) + 1e-12)
