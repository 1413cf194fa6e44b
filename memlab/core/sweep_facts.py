"""What one chunk of the sweep knows, kept small, and the per-configuration columns counted from it.

A configuration is a (bonus, tau) pair, a threshold, a candidates value and an inject value.
Everything a criterion or a metric reads about a question depends on the pair and the candidates
value alone, except through two comparisons: a memory is injected when its final score is at or
above the threshold and its place in the re-sort is below ``inject``
(``memlab.core.ranking.injected``). So a chunk keeps, per (pair, candidates, question), only the
top ``max(inject)`` finals and each tracked memory's final and place (``pair_facts``), and the
columns come from those few values:

- sums over questions (memories injected per question kind, stale and wrong injections) by
  counting, per pair, which values clear each threshold: a histogram over the sorted thresholds and
  one cumulative sum (``count_injected``), never an array of configurations x questions;
- a criterion's reduction over questions (``SweepSummary``: ``any``, ``max``, ``min``) by reducing
  over the questions first and comparing with the thresholds after.

``SweepSummary.full`` lays every field out per configuration and question, the plain way; the
tests hold each shortcut equal to it, and the sweep equal to the one-config reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memlab.core.criteria import masked_max
from memlab.core.ranking import NOT_CANDIDATE, injected, placed_before


def count_dtype(most: int) -> type[np.signedinteger]:
    """The integer type of a count column whose values lie within +-``most``: int32 when it fits,
    half the bytes of int64 (ten count columns are about a sixth of a wide table's bytes)."""
    return np.int32 if most < 2**31 else np.int64


def _count_bound(facts: PairFacts) -> int:
    """The largest count of one group: every question's top finals and every tracked memory."""
    _, _, n_q, n_j = facts.tops.shape
    return n_q * n_j + facts.t_final.shape[2]


@dataclass(frozen=True)
class Thresholds:
    """A chunk's thresholds, sorted once (highest first) so that a value is compared with all of
    them by one binary search: ``start(v)`` is how many thresholds lie above ``v`` (all of them
    for NaN), so ``v >= threshold`` holds exactly from sorted place ``start(v)`` on. Counts over
    the sorted places are then cumulative sums, laid out in the grid's order by ``accumulate``."""

    values: np.ndarray  # (H,) in grid order
    descending: np.ndarray  # (H,) highest first
    layout: str  # "ascending" or "descending" (the grid's order, a view of the sorted one) or "other"
    place: np.ndarray  # each grid threshold's index in ``descending``

    @classmethod
    def of(cls, values: np.ndarray) -> Thresholds:
        values = np.asarray(values, dtype=np.float64)
        order = np.argsort(-values, kind="stable")
        place = np.empty_like(order)
        place[order] = np.arange(len(order))
        if bool(np.all(values[1:] <= values[:-1])):
            layout = "descending"
        elif bool(np.all(values[1:] >= values[:-1])):
            layout = "ascending"
        else:
            layout = "other"
        return cls(values, values[order], layout, place)

    def start(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=np.float64)
        above = len(self.ascending_values) - np.searchsorted(self.ascending_values, v, side="right")
        return np.where(np.isnan(v), len(self.values), above)

    @property
    def ascending_values(self) -> np.ndarray:
        return self.descending[::-1]

    def sorted_args(self) -> tuple[np.ndarray, np.ndarray]:
        """(the thresholds highest first, the grid index of each sorted place)."""
        order = np.empty_like(self.place)
        order[self.place] = np.arange(len(self.place))
        return np.ascontiguousarray(self.descending), order

    def accumulate(self, ufunc: np.ufunc, a: np.ndarray) -> np.ndarray:
        """``ufunc.accumulate`` along axis 1 of ``a`` (its first H places indexed by sorted
        threshold), written straight into an array in the grid's threshold order."""
        n_h = len(self.values)
        a = a[:, :n_h]
        out = np.empty(a.shape, dtype=a.dtype)
        if self.layout == "descending":
            ufunc.accumulate(a, axis=1, out=out)
        elif self.layout == "ascending":
            ufunc.accumulate(a, axis=1, out=out[:, ::-1])
        else:
            np.take(ufunc.accumulate(a, axis=1), self.place, axis=1, out=out)
        return out


@dataclass(frozen=True)
class PairFacts:
    """Per (bonus, tau) pair ``n`` and candidates value ``K``: all a chunk's columns need."""

    tops: np.ndarray  # (n, K, Q, J) each question's J best finals among its candidates (-inf: fewer)
    # (n, K, L + 1) each tracked memory's final (NaN: not a candidate) and its place in the
    # re-sort (NOT_CANDIDATE: not a candidate); the last one is an empty memory (NaN,
    # NOT_CANDIDATE) for questions without a current or a stale memory
    t_final: np.ndarray
    t_rank: np.ndarray


def pair_facts_numpy(
    final: np.ndarray, known: np.ndarray, k_vals: np.ndarray, n_top: int, tq: np.ndarray, tpos: np.ndarray
) -> PairFacts:
    """From the finals at each candidate position (P, Q, n) and which positions hold a memory
    (P, Q): the top ``n_top`` finals per candidates value (an insertion over positions), and the
    tracked memories' (question ``tq``, position ``tpos``, -1 when not among the first P) finals
    and places in the re-sort (``memlab.core.ranking.placed_before``)."""
    n_p, n_q, n = final.shape
    pos = np.arange(n_p)
    valid = known[:, :, None] & (pos[:, None, None] < k_vals[None, None, :])  # (P, Q, K)
    tops = [np.full((n, len(k_vals), n_q), -np.inf) for _ in range(n_top)]
    for p in range(n_p):
        x = np.where(valid[p].T[None], final[p].T[:, None, :], -np.inf)  # (n, K, Q)
        for j in range(n_top):
            higher = np.maximum(tops[j], x)
            np.minimum(tops[j], x, out=x)
            tops[j] = higher
    present = tpos >= 0
    at = np.maximum(tpos, 0)
    f_t = final[at, tq].T  # (n, L)
    rank = np.zeros((n, len(k_vals), len(tq)), dtype=np.int64)
    for p in range(n_p):
        fp = final[p, tq].T  # (n, L)
        ahead = placed_before(fp, p, f_t, tpos)
        rank += ahead[:, None, :] & valid[p, tq].T[None]
    in_cand = (present[:, None] & valid[at, tq]).T[None]  # (1, K, L)
    empty = np.zeros((1, len(k_vals), 1), dtype=bool)
    return PairFacts(
        np.stack(tops, axis=-1) if n_top else np.full((n, len(k_vals), n_q, 0), -np.inf),
        np.where(np.concatenate([in_cand, empty], -1), np.pad(f_t, ((0, 0), (0, 1)))[:, None, :], np.nan),
        np.where(np.concatenate([in_cand, empty], -1), np.pad(rank, ((0, 0), (0, 0), (0, 1))), NOT_CANDIDATE),
    )


def count_injected(
    values: np.ndarray, ranks: np.ndarray, weights: np.ndarray, thresholds: Thresholds, inject: np.ndarray
) -> np.ndarray:
    """``sum_m weights[m] * [values[m] >= threshold] * [ranks[m] < inject]`` for every
    configuration, shaped (n, H, K, I): ``values`` and ``ranks`` are (n, K, M) (ranks may
    broadcast), ``weights`` (M,) +1 or -1. Each value falls in the bin of the first sorted
    threshold it clears (``Thresholds.start``); a cumulative sum over the bins counts, for each
    threshold, the values at or above it."""
    n, n_k, _ = values.shape
    n_h, n_i = len(thresholds.values), len(inject)
    start = thresholds.start(values)  # (n, K, M)
    ranks = np.broadcast_to(ranks, values.shape)
    # bins laid out (n, H + 1, K, I): each value's bin for the first inject value
    at = (np.arange(n)[:, None, None] * (n_h + 1) * n_k + start * n_k + np.arange(n_k)[None, :, None]) * n_i
    size = n * (n_h + 1) * n_k * n_i
    hist = None
    for sign in (1, -1):
        for ii, i_val in enumerate(inject):
            keep = (ranks < i_val) & (start < n_h) & (weights == sign)
            if not keep.any():
                continue
            part = np.bincount(at[keep] + ii, minlength=size)
            if hist is None:
                hist = part if sign == 1 else -part
            elif sign == 1:
                hist += part
            else:
                hist -= part
    if hist is None:
        return np.zeros((n, n_h, n_k, n_i), dtype=np.int64)
    return thresholds.accumulate(np.add, hist.reshape(n, n_h + 1, n_k, n_i))


def count_numpy(
    facts: PairFacts, q_weights: np.ndarray, l_weights: np.ndarray, thresholds: Thresholds, inject: np.ndarray
) -> np.ndarray:
    """Injected memories per configuration for each group g, shaped (G, n, H, K, I): every
    memory question q injects (its top finals that reach the threshold, at most inject of them)
    times ``q_weights[g, q]``, plus each tracked memory l's injection times ``l_weights[g, l]``."""
    n, n_k, _, n_j = facts.tops.shape
    shape = (len(q_weights), n, len(thresholds.values), n_k, len(inject))
    out = np.empty(shape, dtype=count_dtype(_count_bound(facts)))
    for g, (wq, wl) in enumerate(zip(q_weights, l_weights, strict=True)):
        qs, ls = np.flatnonzero(wq), np.flatnonzero(wl)
        values = np.concatenate([facts.tops[:, :, qs].reshape(n, n_k, -1), facts.t_final[:, :, ls]], axis=-1)
        ranks = np.concatenate(
            [
                np.broadcast_to(np.tile(np.arange(n_j), len(qs)), (n, n_k, len(qs) * n_j)),
                facts.t_rank[:, :, ls],
            ],
            axis=-1,
        )
        weights = np.concatenate([np.repeat(wq[qs], n_j), wl[ls]])
        out[g] = count_injected(values, ranks, weights, thresholds, inject)
    return out


def min_gap_numpy(
    sf: np.ndarray, rs: np.ndarray, cf: np.ndarray, rc: np.ndarray, thresholds: Thresholds, inject: np.ndarray
) -> np.ndarray:
    """The smallest stale gap over S questions, per configuration (n, H, K, I), from each
    question's best stale final and place (``sf``, ``rs``) and current final and place (``cf``,
    ``rc``), all (n, K, S).

    Over the thresholds sorted highest first, a question's best stale memory is injected from
    place ``start(stale)`` on when it is placed below inject. There its gap is current minus
    stale, except on the places where the current memory is not injected: up to
    ``start(current)`` (the current final is below those thresholds), or all of them when the
    current memory is placed at or past inject. Those runs of -inf are marked +1/-1 at their ends
    and summed cumulatively; each finite gap enters at its first place and a running minimum
    carries it on.
    """
    n, n_k, n_s = sf.shape
    n_h, n_i = len(thresholds.values), len(inject)
    shape = (n, n_k, n_i, n_s)
    sf, rs, cf, rc = (np.broadcast_to(a[:, :, None, :], shape) for a in (sf, rs, cf, rc))
    inj = inject[None, None, :, None]
    first = thresholds.start(sf)
    placed = (rs < inj) & (first < n_h)
    until = np.where(rc >= inj, n_h, thresholds.start(cf))
    index = np.arange(n)[:, None, None, None] * (n_h + 1) * n_k * n_i + (
        np.arange(n_k)[None, :, None, None] * n_i + np.arange(n_i)[None, None, :, None]
    )
    size = n * (n_h + 1) * n_k * n_i

    def at(b: np.ndarray, keep: np.ndarray) -> np.ndarray:
        return (index + b * n_k * n_i)[keep]

    run = placed & (first < until)
    ends = np.bincount(at(first, run), minlength=size) - np.bincount(at(until, run), minlength=size)
    lost = thresholds.accumulate(np.add, ends.reshape(n, n_h + 1, n_k, n_i)) > 0
    with np.errstate(invalid="ignore"):
        gap = np.where(np.isnan(cf), -np.inf, cf - sf)
    best = np.full(size, np.inf)
    np.minimum.at(best, at(first, placed), gap[placed])
    best = thresholds.accumulate(np.minimum, best.reshape(n, n_h + 1, n_k, n_i))
    np.copyto(best, -np.inf, where=lost)
    return best


class NumpyKernels:
    """The chunk kernels in numpy: the plain form the compiled ones are held equal to."""

    @staticmethod
    def pair_facts(final, known, k_vals, n_top, tq, tpos) -> PairFacts:
        return pair_facts_numpy(final, known, k_vals, n_top, tq, tpos)

    @staticmethod
    def count(facts, q_weights, l_weights, thresholds, inject) -> np.ndarray:
        return count_numpy(facts, q_weights, l_weights, thresholds, inject)

    @staticmethod
    def min_gap(sf, rs, cf, rc, thresholds, inject) -> np.ndarray:
        return min_gap_numpy(sf, rs, cf, rc, thresholds, inject)

    @staticmethod
    def question_facts(facts, current, stale) -> tuple[np.ndarray, ...]:
        return question_facts_numpy(facts, current, stale)

    @staticmethod
    def answered(facts, relevant_of, nohit, thresholds, inject) -> np.ndarray:
        return answered_numpy(facts, relevant_of, nohit, thresholds, inject)


class CompiledKernels:
    """The chunk kernels compiled by numba (``memlab.core.sweep_kernels``): one pass over each
    (pair, candidates) with the threshold counts in a small local histogram."""

    @staticmethod
    def pair_facts(final, known, k_vals, n_top, tq, tpos) -> PairFacts:
        from memlab.core import sweep_kernels

        n_q, n = final.shape[1:]
        facts = PairFacts(
            np.empty((n, len(k_vals), n_q, n_top)),
            np.empty((n, len(k_vals), len(tq) + 1)),
            np.empty((n, len(k_vals), len(tq) + 1), dtype=np.int64),
        )
        sweep_kernels.pair_facts(final, known, k_vals, tq, tpos, facts.tops, facts.t_final, facts.t_rank)
        return facts

    @staticmethod
    def count(facts, q_weights, l_weights, thresholds, inject) -> np.ndarray:
        from memlab.core import sweep_kernels

        n, n_k = facts.tops.shape[:2]
        shape = (len(q_weights), n, len(thresholds.values), n_k, len(inject))
        out = np.empty(shape, dtype=count_dtype(_count_bound(facts)))
        sweep_kernels.count(
            facts.tops,
            *_sparse(q_weights),
            facts.t_final,
            facts.t_rank,
            *_sparse(l_weights),
            *thresholds.sorted_args(),
            inject,
            out,
        )
        return out

    @staticmethod
    def min_gap(sf, rs, cf, rc, thresholds, inject) -> np.ndarray:
        from memlab.core import sweep_kernels

        n, n_k, _ = sf.shape
        out = np.empty((n, len(thresholds.values), n_k, len(inject)))
        sweep_kernels.min_gap(sf, rs, cf, rc, *thresholds.sorted_args(), inject, out)
        return out

    @staticmethod
    def question_facts(facts, current, stale) -> tuple[np.ndarray, ...]:
        from memlab.core import sweep_kernels

        n, n_k, n_q, _ = facts.tops.shape
        out = tuple(
            np.empty((n_q, n, n_k), dtype=t) for t in (np.float64, np.float64, np.int64, np.float64, np.int64)
        )
        sweep_kernels.question_facts(
            facts.t_final, facts.t_rank, facts.tops, current.astype(np.int64), stale.astype(np.int64), *out
        )
        return out

    @staticmethod
    def answered(facts, relevant_of, nohit, thresholds, inject) -> np.ndarray:
        from memlab.core import sweep_kernels

        start = np.cumsum([0, *(len(r) for r in relevant_of)]).astype(np.int64)
        member = np.array([li for r in relevant_of for li in r], dtype=np.int64)
        n, n_k, n_q = facts.tops.shape[:3]
        out = np.empty((3, n, len(thresholds.values), n_k, len(inject)), dtype=count_dtype(n_q))
        sweep_kernels.answered(
            facts.t_final,
            facts.t_rank,
            facts.tops,
            start,
            member,
            np.asarray(nohit, dtype=np.bool_),
            *thresholds.sorted_args(),
            inject,
            out,
        )
        return out


def _sparse(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(G, M) weights as rows per column m: (start offsets (M + 1,), groups, weights)."""
    m_idx, g_idx = np.nonzero(weights.T)
    start = np.searchsorted(m_idx, np.arange(weights.shape[1] + 1))
    return start.astype(np.int64), g_idx.astype(np.int64), weights[g_idx, m_idx].astype(np.int64)


# a sweep of at least this many configurations runs the compiled kernels; a smaller one numpy's,
# which need no compiler: loading the compiled kernels costs about a second a process (compiling
# them, once per machine, about 5-13 s), which numpy's take to cost only from about 10^6
# configurations on (bench/bench_sweep.py)
COMPILED_CONFIGS = 1 << 19


def kernels(configs: int) -> type[NumpyKernels] | type[CompiledKernels]:
    """The kernels for a sweep of ``configs`` configurations (all its chunks)."""
    return CompiledKernels if configs >= COMPILED_CONFIGS else NumpyKernels


COMPACT = ("best_final", "current_final", "stale_final")  # the fields that do not depend on threshold, inject


@dataclass(frozen=True)
class SweepSummary:
    """A chunk's per-question facts in the form the criterion kernels read
    (``memlab.core.criteria.QuestionSummary``: ``question``, ``max``, ``min``, ``any``), kept per
    (pair, candidates): finals and places of each question's best candidate, current memory and
    best stale memory, question first, (Q, n, 1, K, 1). The fields that depend on the threshold and
    inject (``current_injected``, ``stale_injected``, ``stale_over_current``, ``stale_gap``) are
    derived where a kernel asks, shaped (n, H, K, I).

    The best stale memory (the stale candidate placed first) decides every stale field: if any
    stale memory is injected, it is; it has the highest stale final; and an injected stale memory
    is placed before the current one exactly when it is placed before the current one.
    """

    best_final: np.ndarray
    current_final: np.ndarray
    current_rank: np.ndarray
    has_stale: np.ndarray  # (Q,)
    stale_final: np.ndarray
    stale_rank: np.ndarray
    thresholds: Thresholds
    inject: np.ndarray  # (I,)
    kernels: type[NumpyKernels] | type[CompiledKernels] = NumpyKernels

    @property
    def threshold(self) -> np.ndarray:
        return self.thresholds.values[None, :, None, None]

    def _inject(self) -> np.ndarray:
        return self.inject[None, None, None, :]

    # -- each field per configuration and question, the plain way ------------------------------

    def full(self, field: str) -> np.ndarray:
        """``field`` laid out per configuration and question, (n, H, K, I, Q), as a
        ``QuestionSummary`` of the whole chunk holds it."""
        thr, inj = self.threshold, self._inject()
        cur = injected(self.current_final, self.current_rank, thr, inj)
        stale = injected(self.stale_final, self.stale_rank, thr, inj)
        if field in COMPACT:
            out = getattr(self, field)
        elif field == "current_injected":
            out = cur
        elif field == "stale_injected":
            out = stale
        elif field == "stale_over_current":
            out = stale & (self.stale_rank < self.current_rank)
        elif field == "stale_gap":
            with np.errstate(invalid="ignore"):
                gap = np.where(cur, self.current_final - self.stale_final, -np.inf)
            out = np.where(stale, gap, np.inf)
        else:
            raise KeyError(field)
        shape = np.broadcast_shapes(out.shape, (1, *thr.shape[:2], *inj.shape[2:]))
        return np.moveaxis(np.broadcast_to(out, shape), 0, -1)

    # -- what the kernels call --------------------------------------------------------------------

    def _placed(self, field: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
        """For an injected field: (the final, the place, what else must hold) of the memory it is
        about, or None for another field."""
        if field == "current_injected":
            return self.current_final, self.current_rank, None
        if field == "stale_injected":
            return self.stale_final, self.stale_rank, None
        if field == "stale_over_current":
            return self.stale_final, self.stale_rank, self.stale_rank < self.current_rank
        return None

    def question(self, field: str, q: int) -> np.ndarray:
        if field in COMPACT:
            return getattr(self, field)[q]
        placed = self._placed(field)
        if placed is None:
            return self.full(field)[..., q]
        final, rank, also = placed
        keep = rank[q] < self._inject()
        if also is not None:
            keep = keep & also[q]
        return np.where(keep, final[q], np.nan) >= self.threshold

    def max(self, field: str, cols: np.ndarray) -> np.ndarray:
        if field not in COMPACT:
            return masked_max(self.full(field), cols)
        a = getattr(self, field)
        keep = np.asarray(cols, dtype=bool).reshape(-1, *(1,) * (a.ndim - 1))
        return np.where(keep & ~np.isnan(a), a, -np.inf).max(axis=0, initial=-np.inf)

    def any(self, field: str, cols: np.ndarray) -> np.ndarray:
        """For the injected fields: the best final, over the questions in ``cols`` whose memory is
        placed below inject, against each threshold."""
        placed = self._placed(field)
        if placed is None:
            return np.any(self.full(field) & cols, axis=-1)
        final, rank, also = placed
        keep = np.asarray(cols, dtype=bool).reshape(-1, 1, 1, 1, 1) & (rank < self._inject())
        if also is not None:
            keep = keep & also
        best = np.where(keep & ~np.isnan(final), final, -np.inf).max(axis=0, initial=-np.inf)
        return best >= self.threshold  # (n, H, K, I)

    def min(self, field: str, cols: np.ndarray) -> np.ndarray:
        if field != "stale_gap":
            return np.where(cols, self.full(field), np.inf).min(axis=-1, initial=np.inf)
        sel = np.flatnonzero(cols)

        def of(a: np.ndarray) -> np.ndarray:  # (Q, n, 1, K, 1) -> (n, K, selected)
            return np.ascontiguousarray(a[sel][:, :, 0, :, 0].transpose(1, 2, 0))

        return self.kernels.min_gap(
            of(self.stale_final),
            of(self.stale_rank),
            of(self.current_final),
            of(self.current_rank),
            self.thresholds,
            self.inject,
        )


def question_facts_numpy(
    facts: PairFacts, current: np.ndarray, stale: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per question, pair and candidates value (Q, n, K): its best final (NaN without a
    candidate), its current memory's final and place (tracked ``current[q]``, the empty memory
    when none) and those of its best stale memory: of the tracked ``stale[q]`` (Q, S), padded
    with the empty memory, the one placed first (the first of equal places)."""
    n, n_k, _ = facts.t_final.shape
    final, rank = facts.t_final, facts.t_rank
    first = np.argmin(rank[:, :, stale], axis=-1)  # (n, K, Q): which stale memory is placed first
    stale_at = stale[np.arange(len(stale)), first]
    pair, k = np.arange(n)[:, None, None], np.arange(n_k)[None, :, None]

    def per_question(a: np.ndarray) -> np.ndarray:  # (n, K, Q) -> (Q, n, K)
        return np.ascontiguousarray(a.transpose(2, 0, 1))

    best = facts.tops[..., 0] if facts.tops.shape[-1] else np.full(facts.tops.shape[:-1], -np.inf)
    return (
        per_question(np.where(np.isneginf(best), np.nan, best)),
        per_question(final[:, :, current]),
        per_question(rank[:, :, current]),
        per_question(final[pair, k, stale_at]),
        per_question(rank[pair, k, stale_at]),
    )


def answered_numpy(
    facts: PairFacts,
    relevant_of: tuple[tuple[int, ...], ...],
    nohit: np.ndarray,
    thresholds: Thresholds,
    inject: np.ndarray,
) -> np.ndarray:
    """Per configuration (3, n, H, K, I): the questions with a relevant memory injected (any),
    with every one of them injected (all), and the no-hit questions with any memory injected.
    A memory is injected when its final reaches the threshold and its place is below inject
    (``memlab.core.ranking.injected``), so per (pair, candidates, inject) a question's relevant
    memories (``relevant_of[q]``, tracked indices) reduce to one value each for "any" (their best
    injectable final) and "all" (their worst), counted against every threshold at once
    (``reaching``); a no-hit question injects a memory exactly when its best final reaches the
    threshold (inject >= 1)."""
    n, n_k, _ = facts.t_final.shape
    shape = (n, len(thresholds.values), n_k, len(inject))
    out = np.zeros((3, *shape), dtype=count_dtype(facts.tops.shape[2]))
    groups = [ls for ls in relevant_of if ls]
    if groups:
        flat = np.concatenate([np.asarray(g, dtype=np.intp) for g in groups])
        starts = np.cumsum([0, *[len(g) for g in groups[:-1]]])
        fin = facts.t_final[:, :, flat].transpose(2, 0, 1)[..., None]  # (R, n, K, 1)
        rank = facts.t_rank[:, :, flat].transpose(2, 0, 1)[..., None]
        placed = rank < inject  # (R, n, K, I)
        value = np.where(placed & ~np.isnan(fin), fin, -np.inf)
        out[0] = reaching(np.maximum.reduceat(value, starts, axis=0), thresholds)
        out[1] = reaching(np.minimum.reduceat(value, starts, axis=0), thresholds)
    if facts.tops.shape[-1]:
        best = facts.tops[:, :, np.asarray(nohit, dtype=bool), 0].transpose(2, 0, 1)[
            ..., None
        ]  # (Q, n, K, 1)
        out[2] = reaching(best, thresholds)  # -inf without a candidate reaches none
    return out


def reaching(values: np.ndarray, thresholds: Thresholds) -> np.ndarray:
    """How many of ``values`` (G, n, K, I) reach each threshold: (n, H, K, I), in the grid's
    threshold order; NaN and -inf reach none. One histogram of each value's sorted place
    (``Thresholds.start``) and a cumulative sum, not a comparison per threshold. The histogram
    is laid out sorted place first, so the sum runs over whole (n, K, I) slices at once."""
    _, n, n_k, n_i = values.shape
    n_h = len(thresholds.values)
    cells = n * n_k * n_i
    start = thresholds.start(values)  # (G, n, K, I): v >= threshold from this sorted place on
    key = start * cells + np.arange(cells).reshape(n, n_k, n_i)
    hist = np.bincount(key.ravel(), minlength=(n_h + 1) * cells).reshape(n_h + 1, n, n_k, n_i)
    counts = np.cumsum(hist[:n_h], axis=0)  # (H, ...) by sorted place, highest threshold first
    return np.moveaxis(counts[thresholds.place], 0, 1)  # each grid threshold's sorted place


def summary_of(facts: PairFacts, prep, thresholds: Thresholds, inject: np.ndarray, kernels) -> SweepSummary:
    """The chunk's ``SweepSummary``: each question's best final, current memory and best stale
    memory (the stale one placed first) from the tracked memories (``prep``:
    ``memlab.core.sweep.Prepared``), through the kernels' ``question_facts``."""
    empty = facts.t_final.shape[2] - 1
    current = np.where(prep.current_l >= 0, prep.current_l, empty)
    stale = np.where(prep.stale_pad >= 0, prep.stale_pad, empty)  # (Q, S)
    best, cf, cr, sf, sr = (a[:, :, None, :, None] for a in kernels.question_facts(facts, current, stale))
    return SweepSummary(
        best, cf, cr, np.array([bool(s) for s in prep.stale_of]), sf, sr, thresholds, inject, kernels
    )
