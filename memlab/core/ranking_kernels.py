"""The candidate rule of ``memlab.core.ranking`` compiled with numba, fused with the visibility
cut-off, for a block of queries scored against a whole store: ``memlab explain`` on a log of
10^5 queries against 10^5 memories would otherwise hold each block as float64 copies, masks and
sort keys (ten passes over a (queries, memories) array) only to keep ten memories per query.

``visible_top_k`` reads each score once: a memory dated after the query is not seen (counted
apart), a non-finite score is never a candidate, and the ``k`` kept are the first ``k`` of
``memlab.core.ranking.candidate_order`` over the seen ones (higher score first, ties in dataset
order): the tie rule of ``top_k``, which the tests hold it equal to. Compiled once and cached
beside this file (numba's ``cache=True``).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, parallel=True)
def visible_top_k(
    scores: np.ndarray, dates: np.ndarray, times: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each row ``b`` of ``scores`` (queries, memories), over the memories with
    ``dates[j] <= times[b]`` (int64 instants): the positions of the top ``k`` finite scores in
    candidate order, -1 past the last (fewer than ``k``), their scores (float64; NaN past the
    last), and how many memories the row sees."""
    n_rows, n = scores.shape
    idx = np.full((n_rows, k), -1, dtype=np.int64)
    val = np.full((n_rows, k), np.nan)
    seen = np.zeros(n_rows, dtype=np.int64)
    for b in numba.prange(n_rows):
        t = times[b]
        count = 0
        for j in range(n):
            count += dates[j] <= t
        seen[b] = count
        # the first k seen, finite scores, in candidate order
        kept, j = 0, 0
        while j < n and kept < k:
            v = np.float64(scores[b, j])
            if dates[j] <= t and np.isfinite(v):
                p = kept
                while p > 0 and val[b, p - 1] < v:  # an equal score earlier stays before
                    val[b, p] = val[b, p - 1]
                    idx[b, p] = idx[b, p - 1]
                    p -= 1
                val[b, p] = v
                idx[b, p] = j
                kept += 1
            j += 1
        # then only a score above the k-th can enter (strict: an equal one came later); most
        # fail that one comparison (NaN fails it too), and only those that pass are dated
        floor = val[b, k - 1]
        for i in range(j, n):
            v = np.float64(scores[b, i])
            if v > floor and dates[i] <= t and v != np.inf:
                p = k - 1
                while p > 0 and val[b, p - 1] < v:
                    val[b, p] = val[b, p - 1]
                    idx[b, p] = idx[b, p - 1]
                    p -= 1
                val[b, p] = v
                idx[b, p] = i
                floor = val[b, k - 1]
    return idx, val, seen
