"""The vectorised sweep: every (decay, combine, bonus, tau, threshold, candidates, inject) at once.

``sweep`` is a pure function over arrays. It never loops over configurations in Python; it uses
the structure of the spec instead:

- which memories are candidates depends only on ``candidates`` (top-k by raw score), so each
  question's candidates are the first k of one sorted list;
- a candidate's final score depends only on (decay, combine, bonus, tau):
  ``rescore(raw, weight(age, tau, decay), bonus, combine)``, the functions the one-config
  reference calls;
- threshold and inject only enter through comparisons, broadcast last.

Configurations are laid out in C order over ``AXES`` (decay slowest, inject fastest); row ``i``
of the result is configuration ``i`` of ``Grid.values``. The order is recorded in
``DataFrame.attrs``. Large grids are evaluated in chunks within one (decay, combine) family
(``sweep_chunks``, planned by ``memlab.core.chunks`` to a budget in bytes), so memory stays
bounded whatever the grid size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING

import numpy as np

from memlab.core import criteria as crit
from memlab.core.chunks import CHUNK_BYTES, Chunk, first_row, pair_bytes, plan_chunks, row_bytes
from memlab.core.errors import InputError
from memlab.core.grid import AXES, Grid
from memlab.core.labels import QUESTION_KINDS, Labels
from memlab.core.numbers import check_work
from memlab.core.ranking import select_candidates
from memlab.core.registry import check_names
from memlab.core.spec import recency_weight, rescore

if TYPE_CHECKING:
    import pandas as pd

SWEEP_WORK = 3 * 10**10  # configuration-questions a sweep may check: about an hour at 9e6 a second


@dataclass(frozen=True)
class Prepared:
    """Everything about the scores that does not depend on the grid's (bonus, tau) chunk.

    Arrays are laid out candidate-position first (P), so reductions over the few positions are
    element-wise operations across P slices instead of reductions along a short last axis.
    """

    cand: np.ndarray  # (Q, P) memory index at each candidate position, -1 if none
    raw: np.ndarray  # (P, Q) raw score at each position (NaN if none)
    age: np.ndarray  # (P, Q) age in days of the memory at each position (weights per chunk of taus)
    known: np.ndarray  # (P, Q) the position holds a memory
    # tracked memories: currents, then stale ones, then the other labelled ones (relevant)
    tracked_q: np.ndarray  # (L,) question of each tracked memory
    tracked_pos: np.ndarray  # (L,) its candidate position, -1 if not among the top P
    current_l: np.ndarray  # (Q,) index into tracked of the question's current memory, -1 if none
    stale_l: np.ndarray  # (S,) indices into tracked of the stale memories
    stale_of: tuple[tuple[int, ...], ...]  # per question, indices into tracked of its stale memories
    labelled_of: tuple[tuple[int, ...], ...]  # per question, indices into tracked of every labelled memory
    # per question, indices into tracked of its relevant memories (``relevant`` and ``current``)
    relevant_of: tuple[tuple[int, ...], ...] = ()


def prepare_candidates(raw: np.ndarray, ages: np.ndarray, labels: Labels, grid: Grid) -> Prepared:
    """Candidate lists (top max(candidates) by raw, the reference's own order) and their ages;
    the weights of each decay family and tau are computed per chunk."""
    raw = np.asarray(raw, dtype=np.float64)
    n_q = raw.shape[0]
    kmax = max(1, min(max(grid.candidates), raw.shape[1]))
    cand = np.full((n_q, kmax), -1)
    for q in range(n_q):  # one sort per question, shared by every configuration
        top = select_candidates(raw[q], kmax)
        cand[q, : len(top)] = top
    known = cand >= 0
    raw_c = np.where(known, raw[np.arange(n_q)[:, None], np.maximum(cand, 0)], np.nan)
    ages = np.broadcast_to(np.asarray(ages, dtype=np.float64), raw.shape)  # (M,) or per question (Q, M)
    ages_c = ages[np.arange(n_q)[:, None], np.maximum(cand, 0)]

    tracked_q, tracked_mem, current_l, stale_l = [], [], np.full(n_q, -1), []
    stale_of: list[list[int]] = [[] for _ in range(n_q)]
    labelled_of: list[list[int]] = [[] for _ in range(n_q)]
    for q in range(n_q):
        if labels.current[q] >= 0:
            current_l[q] = len(tracked_q)
            labelled_of[q].append(len(tracked_q))
            tracked_q.append(q)
            tracked_mem.append(labels.current[q])
    for q in range(n_q):
        for m in labels.stale[q]:
            if m == labels.current[q]:
                continue
            stale_l.append(len(tracked_q))
            stale_of[q].append(len(tracked_q))
            labelled_of[q].append(len(tracked_q))
            tracked_q.append(q)
            tracked_mem.append(m)
    for q in range(n_q):
        seen = {int(labels.current[q]), *labels.stale[q]}
        for m in labels.labelled(q):
            if m not in seen:
                labelled_of[q].append(len(tracked_q))
                tracked_q.append(q)
                tracked_mem.append(m)
    relevant = labels.relevant or tuple(() for _ in range(n_q))
    at = {(q, m): i for i, (q, m) in enumerate(zip(tracked_q, tracked_mem, strict=True))}
    own = [((int(labels.current[q]),) if labels.current[q] >= 0 else ()) for q in range(n_q)]
    relevant_of = tuple(tuple(at[(q, m)] for m in dict.fromkeys((*own[q], *relevant[q]))) for q in range(n_q))
    if not tracked_q:  # no labels at all: track one absent memory
        tracked_q, tracked_mem = [0], [-2]
    tq = np.array(tracked_q, dtype=int)
    pos = np.array(
        [
            int(np.flatnonzero(cand[q] == m)[0]) if m >= 0 and (cand[q] == m).any() else -1
            for q, m in zip(tq, tracked_mem, strict=True)
        ],
        dtype=int,
    )
    return Prepared(
        cand,
        np.ascontiguousarray(raw_c.T),
        np.ascontiguousarray(ages_c.T),
        np.ascontiguousarray(known.T),
        tq,
        pos,
        current_l,
        np.array(stale_l, dtype=int),
        tuple(tuple(s) for s in stale_of),
        tuple(tuple(s) for s in labelled_of),
        relevant_of,
    )


WRONG_KINDS = ("hit", "contradiction")  # the kinds whose injections outside the labels are wrong


def stale_summary(
    prep: Prepared,
    t_final: np.ndarray,
    t_injected: np.ndarray,
    rank: np.ndarray,
    current_final: np.ndarray,
    current_inj: np.ndarray,
    labels: Labels,
) -> tuple[np.ndarray, ...]:
    """The stale fields of ``QuestionSummary``, shaped (n, H|1, K, I|1, Q) like the others.

    ``t_final`` (L, n, K) is each tracked memory's final score (NaN: no candidate),
    ``t_injected`` (L, n, H, K, I) whether it is injected, ``rank`` (L, n, K) its place after the
    re-sort. An injected stale memory is over the current one when the current one is not
    injected, or is ranked after it.
    """
    n, n_h, n_k, n_i = t_injected.shape[1:]
    n_q = len(labels.question_ids)
    has_stale = np.array([bool(s) for s in prep.stale_of])
    stale_final = np.full((n, 1, n_k, 1, n_q), np.nan)
    stale_inj = np.zeros((n, n_h, n_k, n_i, n_q), dtype=bool)
    over = np.zeros_like(stale_inj)
    gap = np.full((n, n_h, n_k, n_i, n_q), np.inf)
    for q, ls in enumerate(prep.stale_of):
        if not ls:
            continue
        finals = t_final[list(ls)]  # (S, n, K)
        with np.errstate(invalid="ignore"):
            known = ~np.isnan(finals).all(axis=0)
            stale_final[:, 0, :, 0, q] = np.where(
                known, np.nanmax(np.where(np.isnan(finals), -np.inf, finals), axis=0), np.nan
            )
        c = prep.current_l[q]
        inj = t_injected[list(ls)]  # (S, n, H, K, I)
        stale_inj[..., q] = inj.any(axis=0)
        if c >= 0:
            before = rank[list(ls)] < rank[c]  # (S, n, K)
            over[..., q] = (inj & (before[:, :, None, :, None] | ~current_inj[None, ..., q])).any(axis=0)
        else:
            over[..., q] = stale_inj[..., q]
        best_inj = np.where(inj, finals[:, :, None, :, None], -np.inf).max(axis=0)  # (n, H, K, I)
        cur = np.where(current_inj[..., q], np.broadcast_to(current_final[..., q], best_inj.shape), -np.inf)
        with np.errstate(invalid="ignore"):  # -inf - -inf where nothing stale is injected: masked
            gap[..., q] = np.where(stale_inj[..., q], cur - best_inj, np.inf)
    return has_stale, stale_final, stale_inj, over, gap


def _evaluate_chunk(
    prep: Prepared,
    labels: Labels,
    grid: Grid,
    criteria: tuple[crit.Criterion, ...],
    chunk: Chunk,
    long: bool,
    metrics: tuple[str, ...] = tuple(),
) -> dict[str, np.ndarray]:
    """Columns for the configurations of one chunk.

    Array axes: P candidate positions, n = (bonus, tau) pairs of the chunk, H thresholds,
    K candidates values, I inject values, Q questions, L tracked memories.
    """
    bonus = grid.bonus.array(chunk.b0, chunk.b1).astype(np.float64)
    taus = grid.tau_days.array(chunk.t0, chunk.t1).astype(np.float64)
    thr = grid.threshold.array(chunk.h0, chunk.h1).astype(np.float64)
    k_vals = np.asarray(grid.candidates)
    i_vals = np.asarray(grid.inject)
    n_b, n_t = len(bonus), len(taus)
    n, n_h, n_k, n_i = n_b * n_t, len(thr), len(k_vals), len(i_vals)
    n_p, n_q = prep.raw.shape

    # (P, Q, n): every candidate's final score, through the reference's own formula.
    # Questions come before configurations so that each question's slices are contiguous.
    weight = recency_weight(prep.age[:, :, None], taus[None, None, :], chunk.decay)  # (P, Q, T of the chunk)
    final = rescore(
        prep.raw[:, :, None, None],
        weight[:, :, None, :],
        bonus[None, None, :, None],
        chunk.combine,
    ).reshape(n_p, n_q, n)
    pos = np.arange(n_p)
    valid = prep.known[:, :, None] & (pos[:, None, None] < k_vals[None, None, :])  # (P, Q, K)
    masked = np.where(valid[:, :, None, :], final[..., None], -np.inf)  # (P, Q, n, K)

    # the top max(inject) finals of each question, best first, by insertion over positions
    i_max = int(min(i_vals.max(), n_p))
    tops = [np.full((n_q, n, n_k), -np.inf) for _ in range(i_max)]
    for p in range(n_p):
        x = masked[p]
        for j in range(i_max):
            higher = np.maximum(tops[j], x)
            x = np.minimum(tops[j], x)
            tops[j] = higher
    best = tops[0].copy()  # (Q, n, K)
    best[np.isneginf(best)] = np.nan  # no candidate at all

    # tracked memories (current and stale): final score, whether a candidate, and rank after
    # the re-sort (final desc; ties by raw desc, then fixture order = candidate-position order)
    tq, tpos = prep.tracked_q, prep.tracked_pos
    present = tpos >= 0
    f_t = np.where(present[:, None], final[np.maximum(tpos, 0), tq], np.nan)[:, :, None]  # (L, n, 1)
    in_cand = present[:, None] & (tpos[:, None] < k_vals[None, :])  # (L, K)
    rank = np.zeros((len(tq), n, n_k), dtype=np.int64)
    for p in range(n_p):
        fp = masked[p][tq]  # (L, n, K)
        rank += (fp > f_t) | ((fp == f_t) & (p < tpos)[:, None, None])
    t_final = np.where(in_cand[:, None, :], f_t, np.nan)  # (L, n, K)
    t_reach = t_final[:, :, None, :] >= thr[None, None, :, None]  # (L, n, H, K)
    t_injected = t_reach[..., None] & (rank[:, :, None, :, None] < i_vals)  # (L, n, H, K, I)

    # how many memories each question injects: min(inject, candidates at or above threshold);
    # only the top max(inject) finals can matter
    kind_of = np.array([QUESTION_KINDS.index(k) for k in labels.kinds])
    injected_by_kind = np.zeros((len(QUESTION_KINDS), n, n_h, n_k, n_i), dtype=np.int64)
    # injected memories labelled neither relevant, current nor stale, on hit and contradiction
    # questions (a no-hit question's injections are false ones; time questions label by day)
    wrong = np.zeros((n, n_h, n_k, n_i), dtype=np.int64)
    n_injected = np.empty((n_q, n, n_h, n_k, n_i), dtype=np.int64) if long else None
    for q in range(n_q):
        count = np.zeros((n, n_h, n_k), dtype=np.int64)
        for j in range(i_max):
            count += tops[j][q][:, None, :] >= thr[None, :, None]
        per_inject = np.minimum(count[..., None], i_vals)  # (n, H, K, I)
        injected_by_kind[kind_of[q]] += per_inject
        if labels.kinds[q] in WRONG_KINDS:
            wrong += per_inject - sum((t_injected[i] for i in prep.labelled_of[q]), np.zeros((), np.int64))
        if n_injected is not None:
            n_injected[q] = per_inject

    # per-question summary for the criteria kernels, shaped (n, H|1, K, I|1, Q)
    has_current = prep.current_l >= 0
    cl = np.maximum(prep.current_l, 0)
    current_final = np.where(has_current, np.moveaxis(t_final[cl], 0, -1), np.nan)[:, None, :, None, :]
    current_inj = np.where(has_current, np.moveaxis(t_injected[cl], 0, -1), False)  # (n, H, K, I, Q)
    stale = stale_summary(prep, t_final, t_injected, rank, current_final, current_inj, labels)
    summary = crit.QuestionSummary(
        np.moveaxis(best, 0, -1)[:, None, :, None, :], current_final, current_inj, *stale
    )
    thr_b = thr[None, :, None, None]
    verdicts = crit.check(criteria, summary, labels.question_ids, labels.kinds, thr_b)
    nohit = np.array([k == "nohit" for k in labels.kinds])
    room = crit.headroom(summary.best_final, nohit, thr_b)

    shape = (n, n_h, n_k, n_i)

    def flat(a: np.ndarray) -> np.ndarray:
        return np.broadcast_to(a, shape).ravel()

    cols: dict[str, np.ndarray] = {
        "decay": np.full(n * n_h * n_k * n_i, chunk.decay, dtype=object),
        "combine": np.full(n * n_h * n_k * n_i, chunk.combine, dtype=object),
        "bonus": flat(np.repeat(bonus, n_t)[:, None, None, None]),
        "tau_days": flat(np.tile(taus, n_b)[:, None, None, None]),
        "threshold": flat(thr[None, :, None, None]),
        "candidates": flat(k_vals[None, None, :, None]),
        "inject": flat(i_vals[None, None, None, :]),
    }
    margins = []
    for c in criteria:
        value, passed, margin = verdicts[c.name]
        cols[f"{c.name}_value"] = flat(value)
        cols[f"{c.name}_pass"] = flat(passed)
        cols[f"{c.name}_margin"] = flat(margin)
        margins.append(cols[f"{c.name}_margin"])
    facts = ChunkFacts(
        flat=flat,
        room=room,
        labels=labels,
        has_current=has_current,
        threshold=thr_b,
        current_final=current_final,
        current_injected=current_inj,
        injected_by_kind=injected_by_kind,
        tracked_injected=t_injected,
        stale_tracked=prep.stale_l,
        wrong_injected=wrong,
        shape=shape,
        relevant_of=prep.relevant_of,
        best_final=summary.best_final,
    )
    for name in metrics:
        cols.update(METRICS[name].columns(facts))
    rows = n * n_h * n_k * n_i
    cols["min_margin"] = reduce(np.minimum, margins) if margins else np.full(rows, np.inf)
    # no criteria at all: nothing to fail
    cols["feasible"] = reduce(np.logical_and, [cols[f"{c.name}_pass"] for c in criteria], np.ones(rows, bool))

    if long:
        cols = _long_columns(
            cols,
            prep,
            labels,
            masked,
            i_max,
            n_injected,
            summary,
            current_final,
            current_inj,
            t_injected,
            thr_b,
            shape,
            first_row(grid, chunk),
        )
    return cols


@dataclass(frozen=True)
class ChunkFacts:
    """What the metric groups read about one chunk of configurations; arrays are shaped
    (bonus x tau pairs, threshold, candidates, inject[, question])."""

    flat: Callable[[np.ndarray], np.ndarray]  # a chunk array as one value per configuration row
    room: np.ndarray  # headroom per configuration
    labels: Labels
    has_current: np.ndarray  # (Q,) the question has a current memory
    threshold: np.ndarray  # the threshold, broadcast to the configuration axes
    current_final: np.ndarray  # post-bonus score of each question's current memory (NaN: no candidate)
    current_injected: np.ndarray  # each question's current memory is injected
    injected_by_kind: np.ndarray  # (kinds, ...) memories injected over the questions of each kind
    tracked_injected: np.ndarray  # (L, ...) each tracked memory (currents, then stale) is injected
    stale_tracked: np.ndarray  # (S,) indices into the tracked memories of the stale ones
    wrong_injected: np.ndarray  # injected memories outside each hit/contradiction question's labels
    shape: tuple[int, ...]  # the configuration axes of the chunk
    relevant_of: tuple[tuple[int, ...], ...] = ()  # per question, tracked indices of its relevant memories
    best_final: np.ndarray | None = None  # (n, 1, K, 1, Q) each question's best final (NaN: no candidate)


@dataclass(frozen=True)
class Metric:
    """A group of output columns, computed from the chunk's per-question facts."""

    name: str
    meaning: str
    columns: Callable[[ChunkFacts], dict[str, np.ndarray]]


def _headroom(f: ChunkFacts) -> dict[str, np.ndarray]:
    return {"headroom": f.flat(f.room)}


def _current(f: ChunkFacts) -> dict[str, np.ndarray]:
    out = {}
    for q in np.flatnonzero(f.has_current):
        qid = f.labels.question_ids[q]
        out[f"margin_{qid}"] = f.flat(f.current_final[..., q] - f.threshold)
        out[f"injected_{qid}"] = f.flat(f.current_injected[..., q])
    return out


def _injected(f: ChunkFacts) -> dict[str, np.ndarray]:
    out = {f"injected_{kind}": f.injected_by_kind[k].ravel() for k, kind in enumerate(QUESTION_KINDS)}
    out["current_injected"] = f.current_injected.sum(axis=-1).ravel()  # False without a current memory
    return out


def _stale(f: ChunkFacts) -> dict[str, np.ndarray]:
    count = np.zeros(f.shape, dtype=np.int64)
    for l_idx in f.stale_tracked:
        count += f.tracked_injected[l_idx]
    return {"stale_injected": count.ravel()}


def _wrong(f: ChunkFacts) -> dict[str, np.ndarray]:
    return {"wrong_injected": f.wrong_injected.ravel()}


def _answered(f: ChunkFacts) -> dict[str, np.ndarray]:
    """Questions with a relevant memory injected (any, all of them), over the questions that have
    relevant memories; no-hit questions with any memory injected (inject >= 1, so: their best
    final reaches the threshold)."""
    groups = [ls for ls in f.relevant_of if ls]
    any_count = np.zeros(f.shape, dtype=np.int64)
    all_count = np.zeros(f.shape, dtype=np.int64)
    if groups:
        flat = np.concatenate([np.asarray(g, dtype=np.intp) for g in groups])
        starts = np.cumsum([0, *[len(g) for g in groups[:-1]]])
        inj = f.tracked_injected[flat].astype(np.uint8)  # (R, n, H, K, I)
        any_count = np.maximum.reduceat(inj, starts, axis=0).sum(axis=0, dtype=np.int64)
        all_count = np.minimum.reduceat(inj, starts, axis=0).sum(axis=0, dtype=np.int64)
    nohit = np.array([k == "nohit" for k in f.labels.kinds])
    best = f.best_final[..., nohit]  # (n, 1, K, 1, Q_nohit)
    with np.errstate(invalid="ignore"):
        reached = (best >= f.threshold[..., None]).sum(axis=-1)  # NaN (no candidate) never reaches
    return {
        "answered_any": any_count.ravel(),
        "answered_all": all_count.ravel(),
        "nohit_injected_questions": np.broadcast_to(reached, f.shape).ravel(),
    }


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("headroom", "threshold minus the best post-bonus score over the no-hit questions", _headroom),
        Metric(
            "current",
            "per question with a current memory: margin_<id> (final minus threshold, NaN "
            "when not a candidate) and injected_<id>",
            _current,
        ),
        Metric(
            "injected",
            "memories injected over the questions of each kind: injected_<kind>; questions whose "
            "current memory is injected: current_injected",
            _injected,
        ),
        Metric("stale", "stale memories injected: stale_injected", _stale),
        Metric(
            "wrong",
            "memories injected on hit and contradiction questions that are labelled neither relevant, "
            "current nor stale: wrong_injected",
            _wrong,
        ),
        Metric(
            "answered",
            "questions with a relevant (or current) memory injected: answered_any, answered_all (every "
            "one of them); no-hit questions with any memory injected: nohit_injected_questions",
            _answered,
        ),
    )
}


def check_metrics(names: Sequence[str] | None) -> tuple[str, ...]:
    """The metric groups to compute (all when None), in registry order; unknown names are an error."""
    if names is None:
        return tuple(METRICS)
    check_names(METRICS, names, "metric")
    return tuple(m for m in METRICS if m in names)


def _long_columns(
    cols,
    prep,
    labels,
    masked,
    i_max,
    n_injected,
    summary,
    current_final,
    current_inj,
    t_injected,
    thr_b,
    shape,
    first_row,
) -> dict[str, np.ndarray]:
    """One row per configuration and question, with the injected memories slot by slot."""
    n_q = len(labels.question_ids)
    full = (*shape, n_q)
    stale_per_q = np.zeros(full, dtype=np.int64)
    for l_idx in prep.stale_l:
        stale_per_q[..., prep.tracked_q[l_idx]] += t_injected[l_idx]
    rows = int(np.prod(shape))
    config = np.arange(first_row, first_row + rows)
    out = {
        "config": np.repeat(config, n_q),
        "question": np.tile(np.asarray(labels.question_ids, dtype=object), rows),
        "kind": np.tile(np.asarray(labels.kinds, dtype=object), rows),
        **{a: np.repeat(cols[a], n_q) for a in AXES},
        "best_final": np.broadcast_to(summary.best_final, full).ravel(),
        "current_final": np.broadcast_to(current_final, full).ravel(),
        "current_margin": np.broadcast_to(current_final - thr_b[..., None], full).ravel(),
        "current_injected": np.broadcast_to(current_inj, full).ravel(),
        "injected": np.moveaxis(n_injected, 0, -1).ravel(),
        "stale_injected": stale_per_q.ravel(),
    }
    # which memories, slot by slot (memory index in dataset order, -1 when empty): a stable sort
    # on -final keeps candidate order among equal finals, the reference's tie rule
    by_pos = masked.transpose(2, 3, 1, 0)  # (n, K, Q, P)
    order = np.argsort(-by_pos, axis=-1, kind="stable")[..., :i_max]
    top = np.take_along_axis(by_pos, order, axis=-1)
    top_mem = prep.cand[np.arange(n_q)[None, None, :, None], order]  # (n, K, Q, i_max)
    n_inj = np.moveaxis(n_injected, 0, -1)  # (n, H, K, I, Q)
    for j in range(i_max):
        filled = j < n_inj
        out[f"slot_{j + 1}"] = np.where(filled, top_mem[:, None, :, None, :, j], -1).ravel()
        out[f"slot_{j + 1}_final"] = np.where(filled, top[:, None, :, None, :, j], np.nan).ravel()
    return out


def _frame(cols: dict[str, np.ndarray], grid: Grid, index_start: int, long: bool) -> pd.DataFrame:
    import pandas as pd

    df = pd.DataFrame(cols, copy=False)
    if not long:
        df.index = pd.RangeIndex(index_start, index_start + len(df), name="config")
    df.attrs.update({"axes": list(AXES), "shape": list(grid.shape), "order": "C (inject fastest)"})
    return df


def sweep_chunks(
    raw: np.ndarray,
    ages: np.ndarray,
    labels: Labels,
    grid: Grid,
    criteria: tuple[crit.Criterion, ...] | None = None,
    *,
    long: bool = False,
    chunk_rows: int | None = None,
    progress: bool = False,
    metrics: Sequence[str] | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> Iterator[pd.DataFrame]:
    """The sweep as consecutive DataFrames, each computed within about ``chunk_bytes`` of
    working memory (questions x candidates x configurations decide how many configurations
    that is), and at most ``chunk_rows`` configurations when given."""
    n_mem = np.shape(ages)[-1]
    if raw.ndim != 2 or raw.shape != (len(labels.question_ids), n_mem):
        raise InputError(f"score table has shape {raw.shape}, expected ({len(labels.question_ids)}, {n_mem})")
    criteria = labels.criteria() if criteria is None else criteria
    chosen = check_metrics(metrics)
    n_questions = max(1, len(labels.question_ids))
    check_work(
        grid.size,
        "grid",
        SWEEP_WORK // n_questions,
        f"configurations of {n_questions} questions each",
        "the sweep checks about 9 million configuration-questions a second: 10^8 configurations of 80 "
        "questions took 904 s; a narrower axis or a coarser step finishes",
    )
    prep = prepare_candidates(raw, ages, labels, grid)
    n_q, n_p = len(labels.question_ids), prep.cand.shape[1]
    n_columns = (
        len(AXES) + 3 * len(criteria) + 2 * int((prep.current_l >= 0).sum()) + len(QUESTION_KINDS) + 10
    )
    chunks = plan_chunks(
        grid,
        chunk_rows,
        row_cost=row_bytes(n_q, len(prep.tracked_q), n_columns, long),
        pair_cost=pair_bytes(n_q, n_p, len(grid.candidates), len(grid.inject)),
        budget=chunk_bytes,
    )
    bar = None
    if progress and len(chunks) > 1:
        from tqdm import tqdm

        # disable=None: tqdm stays quiet when stderr is not a terminal (CI logs, papermill)
        bar = tqdm(total=grid.size, unit="config", unit_scale=True, disable=None)
    try:
        for chunk in chunks:
            cols = _evaluate_chunk(prep, labels, grid, criteria, chunk, long, chosen)
            yield _frame(cols, grid, first_row(grid, chunk), long)
            if bar is not None:
                bar.update(chunk.rows(grid))
    finally:
        if bar is not None:
            bar.close()


def sweep(
    raw: np.ndarray,
    ages: np.ndarray,
    labels: Labels,
    grid: Grid,
    criteria: tuple[crit.Criterion, ...] | None = None,
    *,
    long: bool = False,
    chunk_rows: int | None = None,
    metrics: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Every configuration of the grid: one row each (or one per configuration and question).

    Columns: the axes; per criterion ``<name>_value``, ``<name>_pass``, ``<name>_margin``;
    ``headroom``; per question with a current memory ``margin_<id>`` (its final score minus the
    threshold, NaN when it is not a candidate) and ``injected_<id>``; ``injected_<kind>`` (memories
    injected over the questions of each kind); ``current_injected`` (questions whose current memory
    is injected); ``stale_injected``; ``wrong_injected``; ``min_margin`` (the smallest criterion
    margin); ``feasible``.
    """
    import pandas as pd

    frames = list(
        sweep_chunks(raw, ages, labels, grid, criteria, long=long, chunk_rows=chunk_rows, metrics=metrics)
    )
    if len(frames) == 1:
        return frames[0]
    out = pd.concat(frames, ignore_index=long)
    out.attrs.update(frames[0].attrs)
    return out
