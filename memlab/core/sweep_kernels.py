"""The sweep's chunk kernels compiled with numba: the same facts and counts as the numpy forms in
``memlab.core.sweep_facts`` (the tests hold them equal, value for value), in one pass per
(bonus, tau) pair and candidates value instead of one numpy pass per position, question or group.

They compare and count only: every final score comes in computed by numpy through the reference's
own formula (``memlab.core.spec.rescore``), so nothing here can round differently. Compiled once
and cached beside this file (numba's ``cache=True``); the sweep calls them only for sweeps of
``memlab.core.sweep_facts.COMPILED_CONFIGS`` configurations or more.
"""

from __future__ import annotations

import numba
import numpy as np

from memlab.core.ranking import NOT_CANDIDATE, placed_before

jit = numba.njit(cache=True, nogil=True)
_placed_before = jit(placed_before)  # the re-sort's rule, compiled from memlab.core.ranking


@jit
def _above(descending: np.ndarray, v: float) -> int:
    """How many of the thresholds (highest first) lie above ``v``; all of them for NaN. ``v``
    reaches exactly the thresholds from this sorted place on."""
    n = descending.shape[0]
    if v != v or v < descending[n - 1]:
        return n
    if v >= descending[0]:  # most values sit above or below every threshold
        return 0
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if descending[mid] > v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True, inline="always")  # inlined: as a call it cost the count 15%
def _running_sums(hist, order, out, pair, ki):
    """A histogram over the sorted thresholds (G, H + 1, I) summed cumulatively, written into
    ``out[:, pair, :, ki]`` in the grid's threshold order (``order``: each sorted place's index)."""
    n_g, n_h, n_i = hist.shape[0], order.shape[0], hist.shape[2]
    for g in range(n_g):
        for ii in range(n_i):
            acc = 0
            for hs in range(n_h):
                acc += hist[g, hs, ii]
                out[g, pair, order[hs], ki, ii] = acc


@jit
def pair_facts(final, known, k_vals, tq, tpos, tops, t_final, t_rank):
    """Fills tops (n, K, Q, J), t_final (n, K, L + 1) and t_rank (n, K, L + 1) from the finals
    (P, Q, n): per question and pair, the known positions in re-sort order
    (``memlab.core.ranking.placed_before``) by insertion, then the first J of them below each
    candidates value; a tracked memory's place is how many candidates come before it in that
    order. (The outputs come allocated by numpy, which asks the kernel for huge pages: numba's
    own allocations fault page by page, a third of a kernel's time at 10^6 configurations.)"""
    n_p, n_q, n = final.shape
    n_k, n_l, n_top = k_vals.shape[0], tq.shape[0], tops.shape[3]
    tops[:] = -np.inf
    t_final[:] = np.nan  # the last one: the empty memory
    t_rank[:] = NOT_CANDIDATE
    order = np.empty(n_p, dtype=np.int64)
    for pair in range(n):
        for q in range(n_q):
            m = 0
            for p in range(n_p):
                if not known[p, q]:
                    continue
                f = final[p, q, pair]
                j = m
                while j > 0 and _placed_before(f, p, final[order[j - 1], q, pair], order[j - 1]):
                    order[j] = order[j - 1]
                    j -= 1
                order[j] = p
                m += 1
            for ki in range(n_k):
                k, j = k_vals[ki], 0
                for r in range(m):
                    if j >= n_top:
                        break
                    if order[r] < k:
                        tops[pair, ki, q, j] = final[order[r], q, pair]
                        j += 1
    for pair in range(n):
        for li in range(n_l):
            q, p0 = tq[li], tpos[li]
            if p0 < 0 or not known[p0, q]:
                continue
            f0 = final[p0, q, pair]
            for ki in range(n_k):
                k = k_vals[ki]
                if p0 >= k:
                    continue
                ahead = 0
                for p in range(min(k, n_p)):
                    if known[p, q] and _placed_before(final[p, q, pair], p, f0, p0):
                        ahead += 1
                t_final[pair, ki, li] = f0
                t_rank[pair, ki, li] = ahead


@jit
def count(
    tops,
    q_start,
    q_group,
    q_weight,
    t_final,
    t_rank,
    l_start,
    l_group,
    l_weight,
    descending,
    order,
    inject,
    out,
):
    """Fills ``out`` (G, n, H, K, I): per group g and configuration, the memories each question
    injects (its top finals that reach the threshold, at most inject) times its weight in g, plus each tracked
    memory's injection times its weight; injected as ``memlab.core.ranking.injected`` says: at or
    above the threshold, placed below inject. Weights come as sparse rows: question q's groups are
    ``q_group[q_start[q]:q_start[q + 1]]`` with ``q_weight`` (likewise the tracked memories'). Each
    value enters a histogram over the sorted thresholds at the first one it reaches; a running sum
    writes the counts in grid order."""
    n, n_k, n_q, n_j = tops.shape
    n_l = t_final.shape[2]
    n_h, n_i, n_g = descending.shape[0], inject.shape[0], out.shape[0]
    hist = np.zeros((n_g, n_h + 1, n_i), dtype=np.int64)
    for pair in range(n):
        for ki in range(n_k):
            hist[:] = 0
            for q in range(n_q):
                if q_start[q] == q_start[q + 1]:
                    continue
                for j in range(n_j):
                    b = _above(descending, tops[pair, ki, q, j])  # -inf: no candidate, below all
                    if b == n_h:
                        break  # the tops are best first: the rest reach no threshold either
                    for e in range(q_start[q], q_start[q + 1]):
                        g, w = q_group[e], q_weight[e]
                        for ii in range(n_i):
                            if j < inject[ii]:
                                hist[g, b, ii] += w
            for li in range(n_l):
                if l_start[li] == l_start[li + 1]:
                    continue
                b = _above(descending, t_final[pair, ki, li])
                if b == n_h:
                    continue
                r = t_rank[pair, ki, li]
                for e in range(l_start[li], l_start[li + 1]):
                    g, w = l_group[e], l_weight[e]
                    for ii in range(n_i):
                        if r < inject[ii]:
                            hist[g, b, ii] += w
            _running_sums(hist, order, out, pair, ki)


@jit
def min_gap(sf, rs, cf, rc, descending, order, inject, out):
    """The smallest stale gap over S questions per configuration (n, H, K, I), from each
    question's best stale (``sf``, ``rs``) and current (``cf``, ``rc``) final and place, (n, K, S):
    over the thresholds highest first, +1/-1 at the ends of each run where a stale memory is
    injected and the current one is not (-inf), and each finite gap (current minus stale) at the
    first threshold it holds for, carried on by a running minimum; into ``out``."""
    n, n_k, n_s = sf.shape
    n_h, n_i = descending.shape[0], inject.shape[0]
    ends = np.zeros(n_h + 1, dtype=np.int64)
    best = np.empty(n_h + 1)
    for pair in range(n):
        for ki in range(n_k):
            for ii in range(n_i):
                iv = inject[ii]
                ends[:] = 0
                best[:] = np.inf
                for s in range(n_s):
                    if rs[pair, ki, s] >= iv:
                        continue
                    first = _above(descending, sf[pair, ki, s])
                    if first == n_h:
                        continue
                    c = cf[pair, ki, s]
                    until = n_h if rc[pair, ki, s] >= iv else _above(descending, c)
                    if first < until:
                        ends[first] += 1
                        ends[until] -= 1
                    gap = -np.inf if c != c else c - sf[pair, ki, s]
                    if gap < best[first]:
                        best[first] = gap
                lost, low = 0, np.inf
                for hs in range(n_h):
                    lost += ends[hs]
                    if best[hs] < low:
                        low = best[hs]
                    out[pair, order[hs], ki, ii] = -np.inf if lost > 0 else low


@jit
def answered(t_final, t_rank, tops, r_start, r_member, nohit, descending, order, inject, out):
    """Fills ``out`` (3, n, H, K, I): per configuration, three counts over questions: those with a
    relevant memory injected (any), with all of them injected, and no-hit questions with any memory injected.
    Question q's relevant memories are the tracked ``r_member[r_start[q]:r_start[q + 1]]``; per
    inject value each reduces to its best and its worst injectable final (-inf when placed at or
    past inject or not a candidate), which enters a histogram over the sorted thresholds at the
    first one it reaches; a no-hit question's best final (inject >= 1) likewise. A running sum
    writes the counts in grid order."""
    n, n_k, n_q, n_j = tops.shape
    n_h, n_i = descending.shape[0], inject.shape[0]
    hist = np.zeros((3, n_h + 1, n_i), dtype=np.int64)
    for pair in range(n):
        for ki in range(n_k):
            hist[:] = 0
            for q in range(n_q):
                if r_start[q] < r_start[q + 1]:
                    for ii in range(n_i):
                        best, worst = -np.inf, np.inf
                        for e in range(r_start[q], r_start[q + 1]):
                            li = r_member[e]
                            f = t_final[pair, ki, li]
                            v = f if t_rank[pair, ki, li] < inject[ii] and f == f else -np.inf
                            best = max(best, v)
                            worst = min(worst, v)
                        hist[0, _above(descending, best), ii] += 1
                        hist[1, _above(descending, worst), ii] += 1
                if nohit[q] and n_j > 0:
                    b = _above(descending, tops[pair, ki, q, 0])  # -inf: no candidate
                    for ii in range(n_i):
                        hist[2, b, ii] += 1
            _running_sums(hist, order, out, pair, ki)


@jit
def question_facts(
    t_final, t_rank, tops, current, stale, best, current_final, current_rank, stale_final, stale_rank
):
    """Per question, pair and candidates value (Q, n, K): its best final (NaN without a
    candidate), its current memory's final and place (``current[q]``: the empty memory when it
    has none), and those of its best stale memory: of the tracked ``stale[q]`` (padded with the
    empty memory) the one placed first, the first of equal places; into the last five arrays."""
    n, n_k, n_q, n_j = tops.shape
    for q in range(n_q):
        c = current[q]
        for pair in range(n):
            for ki in range(n_k):
                top = tops[pair, ki, q, 0] if n_j > 0 else -np.inf
                best[q, pair, ki] = np.nan if top == -np.inf else top
                current_final[q, pair, ki] = t_final[pair, ki, c]
                current_rank[q, pair, ki] = t_rank[pair, ki, c]
                at = stale[q, 0]
                for e in range(1, stale.shape[1]):
                    if t_rank[pair, ki, stale[q, e]] < t_rank[pair, ki, at]:
                        at = stale[q, e]
                stale_final[q, pair, ki] = t_final[pair, ki, at]
                stale_rank[q, pair, ki] = t_rank[pair, ki, at]


@jit
def mmr_select(rel, sim, counts, lam, mu, out):
    """``memlab.core.mmr.select`` for every question (rel (Q, P), sim (Q, P, P), both float32;
    counts (Q,); lam and mu float32), into ``out`` (Q, limit), -1 past a row's picks: Qdrant's
    maximal marginal relevance, its ``swap_remove`` order and last-of-equal-maxima ties kept."""
    n_q, n_p = rel.shape
    limit = out.shape[1]
    remaining = np.empty(n_p, dtype=np.int64)
    max_sim = np.empty(n_p, dtype=np.float32)
    for q in range(n_q):
        n = counts[q]
        for j in range(limit):
            out[q, j] = -1
        if n < 2:
            if n == 1 and limit > 0:
                out[q, 0] = 0
            continue
        if limit == 0:
            continue
        for p in range(n):
            remaining[p] = p
        length = n
        best_at = 0
        for p in range(1, length):
            if rel[q, remaining[p]] >= rel[q, remaining[best_at]]:
                best_at = p
        picks = 0
        while True:
            best = remaining[best_at]
            out[q, picks] = best
            picks += 1
            remaining[best_at] = remaining[length - 1]
            length -= 1
            for p in range(n):
                s = sim[q, p, best]
                if picks == 1 or s > max_sim[p]:
                    max_sim[p] = s
            if picks >= limit or length == 0:
                break
            best_at = 0
            best_score = lam * rel[q, remaining[0]] - mu * max_sim[remaining[0]]
            for p in range(1, length):
                c = remaining[p]
                score = lam * rel[q, c] - mu * max_sim[c]
                if score >= best_score:
                    best_at, best_score = p, score
