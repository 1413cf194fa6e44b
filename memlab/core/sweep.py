"""The vectorised sweep: every (decay, combine, bonus, tau, threshold, candidates, inject) at once.

``sweep`` is a pure function over arrays. It never loops over configurations in Python; it uses
the structure of the spec instead:

- which memories are candidates depends only on ``candidates`` (top-k by raw score), so each
  question's candidates are the first k of one sorted list;
- a candidate's final score depends only on (decay, combine, bonus, tau):
  ``rescore(raw, weight(age, tau, decay), bonus, combine)``, the functions the one-config
  reference calls;
- threshold and inject only enter through comparisons: a chunk keeps, per (pair, candidates),
  each question's top finals and its tracked memories' finals and places, and the columns are
  counted from those against the thresholds (``memlab.core.sweep_facts``; numba kernels for large
  sweeps, ``memlab.core.sweep_kernels``).

Configurations are laid out in C order over ``AXES`` (decay slowest, inject fastest); row ``i``
of the result is configuration ``i`` of ``Grid.values``. The order is recorded in
``DataFrame.attrs``. Large grids are evaluated in chunks within one (decay, combine) family
(``sweep_chunks``, planned by ``memlab.core.chunks`` to a budget in bytes), so memory stays
bounded whatever the grid size.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from memlab.core import criteria as crit
from memlab.core.chunks import (
    CHUNK_BYTES,
    Chunk,
    ChunkPlan,
    chunk_workers,
    column_bytes,
    first_row,
    ordered_map,
    pair_bytes,
    plan_chunks,
    row_bytes,
)
from memlab.core.errors import InputError
from memlab.core.grid import AXES, Grid
from memlab.core.labels import QUESTION_KINDS, Labels
from memlab.core.numbers import check_work
from memlab.core.ranking import candidate_lists, candidate_resort, injected
from memlab.core.spec import recency_weight, rescore
from memlab.core.sweep_facts import SweepSummary, Thresholds, kernels, summary_of
from memlab.core.sweep_metrics import METRICS, ChunkFacts, Counts, check_metrics

if TYPE_CHECKING:
    import pandas as pd

# the working memory of a chunk of a table filled in memory by several threads (measured on
# seed16's 10^6 grid with two threads: 0.10-0.11 s in chunks of 16 MB, 0.12 s in chunks of
# 96 MB, 0.14 s in one chunk)
FILL_CHUNK_BYTES = 16 << 20
# configuration-questions a sweep may check: about an hour at 1e8 to 1.6e8 a second (two cores)
SWEEP_WORK = 5 * 10**11


def check_sweep_work(configs: int, questions: int) -> int:
    """``configs`` when a sweep of them over ``questions`` questions finishes in reasonable time
    (``SWEEP_WORK`` configuration-questions); otherwise one line naming the largest grid that does."""
    n_questions = max(1, questions)
    return check_work(
        configs,
        "grid",
        SWEEP_WORK // n_questions,
        f"configurations of {n_questions} questions each",
        "the sweep checks 100 to 160 million configuration-questions a second on two cores: 10^8 "
        "configurations of 80 questions took 50 s; a narrower axis or a coarser step finishes",
    )


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
    stale_pad: np.ndarray  # (Q, S) stale_of as an array, padded with -1
    # per question, indices into tracked of its relevant memories (``relevant`` and ``current``)
    relevant_of: tuple[tuple[int, ...], ...] = ()


def prepare_candidates(raw: np.ndarray, ages: np.ndarray, labels: Labels, grid: Grid) -> Prepared:
    """Candidate lists (top max(candidates) by raw, the reference's own order) and their ages;
    the weights of each decay family and tau are computed per chunk."""
    raw = np.asarray(raw, dtype=np.float64)
    n_q = raw.shape[0]
    kmax = max(1, min(max(grid.candidates), raw.shape[1]))
    cand = candidate_lists(raw, kmax)  # one sort per question, shared by every configuration
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
        _padded(stale_of),
        relevant_of,
    )


def _padded(rows: list[list[int]]) -> np.ndarray:
    out = np.full((len(rows), max(1, *(len(r) for r in rows))), -1, dtype=np.int64)
    for q, r in enumerate(rows):
        out[q, : len(r)] = r
    return out


def _finals(prep: Prepared, grid: Grid, chunk: Chunk) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chunk's bonus and tau values and every candidate's final score (P, Q, n), through the
    reference's own formula; ``n`` runs over (bonus, tau) pairs, tau fastest."""
    bonus = grid.bonus.array(chunk.b0, chunk.b1).astype(np.float64)
    taus = grid.tau_days.array(chunk.t0, chunk.t1).astype(np.float64)
    n_p, n_q = prep.raw.shape
    weight = recency_weight(prep.age[:, :, None], taus[None, None, :], chunk.decay)  # (P, Q, T)
    final = rescore(
        prep.raw[:, :, None, None], weight[:, :, None, :], bonus[None, None, :, None], chunk.combine
    ).reshape(n_p, n_q, len(bonus) * len(taus))
    return bonus, taus, final


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
    bonus, taus, final = _finals(prep, grid, chunk)
    thr = grid.threshold.array(chunk.h0, chunk.h1).astype(np.float64)
    k_vals = np.asarray(grid.candidates)
    i_vals = np.asarray(grid.inject)
    n_b, n_t = len(bonus), len(taus)
    n, n_h, n_k, n_i = n_b * n_t, len(thr), len(k_vals), len(i_vals)
    n_top = int(min(i_vals.max(), final.shape[0]))
    shape = (n, n_h, n_k, n_i)
    run = kernels(grid.size)
    facts = run.pair_facts(final, prep.known, k_vals, n_top, prep.tracked_q, prep.tracked_pos)
    thresholds = Thresholds.of(thr)
    summary = summary_of(facts, prep, thresholds, i_vals, run)
    thr_b = summary.threshold

    def flat(a: np.ndarray) -> np.ndarray:
        return np.broadcast_to(a, shape)

    cols: dict[str, np.ndarray] = {
        "decay": flat(np.int8(grid.decay.index(chunk.decay))),
        "combine": flat(np.int8(grid.combine.index(chunk.combine))),
        "bonus": flat(np.repeat(bonus, n_t)[:, None, None, None]),
        "tau_days": flat(np.tile(taus, n_b)[:, None, None, None]),
        "threshold": flat(thr[None, :, None, None]),
        "candidates": flat(k_vals[None, None, :, None]),
        "inject": flat(i_vals[None, None, None, :]),
    }
    verdicts = crit.check(criteria, summary, labels.question_ids, labels.kinds, thr_b)
    margins = []
    for c in criteria:
        value, passed, margin = verdicts[c.name]
        cols[f"{c.name}_value"] = flat(value)
        cols[f"{c.name}_pass"] = flat(passed)
        cols[f"{c.name}_margin"] = flat(margin)
        margins.append(cols[f"{c.name}_margin"])
    chunk_facts = ChunkFacts(
        flat=flat,
        summary=summary,
        labels=labels,
        counts=Counts(prep, labels, facts, thresholds, i_vals, run, metrics),
        threshold=thr_b,
    )
    for name in metrics:
        cols.update(METRICS[name].columns(chunk_facts))
    # one array each, reduced in place (a criterion per current memory makes a dozen of them);
    # no criteria at all: nothing to fail
    low, feasible = np.full(shape, np.inf), np.ones(shape, dtype=bool)
    for c, m in zip(criteria, margins, strict=True):
        np.minimum(low, m, out=low)
        np.logical_and(feasible, cols[f"{c.name}_pass"], out=feasible)
    cols["min_margin"], cols["feasible"] = low, feasible
    if long:
        cols = _long_columns(
            {k: v.ravel() for k, v in cols.items()},
            prep,
            labels,
            final,
            k_vals,
            n_top,
            summary,
            chunk_facts.counts,
            shape,
            first_row(grid, chunk),
        )
    return cols


def _long_columns(
    cols: dict[str, np.ndarray],
    prep: Prepared,
    labels: Labels,
    final: np.ndarray,
    k_vals: np.ndarray,
    n_top: int,
    summary: SweepSummary,
    counts: Counts,
    shape: tuple[int, ...],
    first_row: int,
) -> dict[str, np.ndarray]:
    """One row per configuration and question, with the injected memories slot by slot."""
    n_q = len(labels.question_ids)
    full = (*shape, n_q)
    thr = summary.threshold[..., None]
    inj = summary.inject[None, None, None, :, None]
    # each question injects its top finals that reach the threshold, at most inject of them
    tops = counts.facts.tops[:, None, :, None]  # (n, 1, K, 1, Q, J)
    n_injected = np.minimum((tops >= thr[..., None]).sum(axis=-1), inj)  # (n, H, K, I, Q)
    t = counts.facts
    stale_per_q = np.zeros(full, dtype=np.int64)
    for l_idx in prep.stale_l:
        q = prep.tracked_q[l_idx]
        stale_per_q[..., q] += injected(
            t.t_final[:, None, :, None, l_idx], t.t_rank[:, None, :, None, l_idx], thr[..., 0], inj[..., 0]
        )
    rows = int(np.prod(shape))
    config = np.arange(first_row, first_row + rows)
    current_final = summary.full("current_final")  # (n, 1, K, 1, Q)
    out = {
        "config": np.repeat(config, n_q),
        "question": np.tile(np.asarray(labels.question_ids, dtype=object), rows),
        "kind": np.tile(np.asarray(labels.kinds, dtype=object), rows),
        **{a: np.repeat(cols[a], n_q) for a in AXES},
        "best_final": np.broadcast_to(summary.full("best_final"), full).ravel(),
        "current_final": np.broadcast_to(current_final, full).ravel(),
        "current_margin": np.broadcast_to(current_final - thr, full).ravel(),
        "current_injected": np.broadcast_to(summary.full("current_injected"), full).ravel(),
        "injected": n_injected.ravel(),
        "stale_injected": stale_per_q.ravel(),
    }
    # which memories, slot by slot (memory index in dataset order, -1 when empty), in re-sort order
    pos = np.arange(final.shape[0])
    valid = prep.known[:, :, None] & (pos[:, None, None] < k_vals[None, None, :])  # (P, Q, K)
    masked = np.where(valid[:, :, None, :], final[..., None], -np.inf)  # (P, Q, n, K)
    by_pos = masked.transpose(2, 3, 1, 0)  # (n, K, Q, P)
    order = candidate_resort(by_pos)[..., :n_top]
    top = np.take_along_axis(by_pos, order, axis=-1)
    top_mem = prep.cand[np.arange(n_q)[None, None, :, None], order]  # (n, K, Q, n_top)
    for j in range(n_top):
        filled = j < n_injected
        out[f"slot_{j + 1}"] = np.where(filled, top_mem[:, None, :, None, :, j], -1).ravel()
        out[f"slot_{j + 1}_final"] = np.where(filled, top[:, None, :, None, :, j], np.nan).ravel()
    return out


def _frame(cols: dict[str, np.ndarray], grid: Grid, index_start: int, long: bool) -> pd.DataFrame:
    import pandas as pd

    # the family columns hold codes into the grid's axes until here: categoricals cost a byte a row
    cols = {
        **cols,
        "decay": pd.Categorical.from_codes(cols["decay"], categories=list(grid.decay)),
        "combine": pd.Categorical.from_codes(cols["combine"], categories=list(grid.combine)),
    }
    df = pd.DataFrame(cols, copy=False)
    if not long:
        df.index = pd.RangeIndex(index_start, index_start + len(df), name="config")
    df.attrs.update({"axes": list(AXES), "shape": list(grid.shape), "order": "C (inject fastest)"})
    return df


def _column_chunks(
    raw: np.ndarray,
    ages: np.ndarray,
    labels: Labels,
    grid: Grid,
    criteria: tuple[crit.Criterion, ...] | None,
    long: bool,
    chunk_rows: int | None,
    metrics: Sequence[str] | None,
    chunk_bytes: int,
    keep: int,
    workers: int,
) -> tuple[ChunkPlan, Callable[[Chunk], dict[str, np.ndarray]]]:
    """The chunk plan and the function that computes one chunk's columns; ``keep`` is how many
    copies of a chunk's columns are alive while the next one is computed (the caller's frame and
    the chunk's own: 2 when streaming, 0 when they are copied into the whole result). Streamed
    by ``workers`` threads, the chunks in flight share the budget; a whole table filled by several
    threads is planned in chunks of ``FILL_CHUNK_BYTES``."""
    n_mem = np.shape(ages)[-1]
    if raw.ndim != 2 or raw.shape != (len(labels.question_ids), n_mem):
        raise InputError(f"score table has shape {raw.shape}, expected ({len(labels.question_ids)}, {n_mem})")
    criteria = labels.criteria() if criteria is None else criteria
    chosen = check_metrics(metrics)
    check_sweep_work(grid.size, len(labels.question_ids))
    prep = prepare_candidates(raw, ages, labels, grid)
    n_q, n_p = len(labels.question_ids), prep.cand.shape[1]
    n_current = int((prep.current_l >= 0).sum())
    out = column_bytes(len(criteria), n_current if "current" in chosen else 0, len(QUESTION_KINDS), long, n_q)
    costs = {
        "row_cost": row_bytes(out, keep, long, n_q),
        "pair_cost": pair_bytes(n_q, n_p, len(grid.candidates), len(grid.inject), len(prep.tracked_q)),
    }
    if keep:  # streamed: the chunks in flight share the budget
        budget = chunk_bytes // workers
    elif workers > 1:
        # a whole table filled by several threads: small chunks, whose temporaries the next chunk
        # reuses while still mapped, cost less than one chunk of fresh pages as large as the table
        budget = FILL_CHUNK_BYTES
    else:  # a whole table held in memory is the result: its chunks may work in as many bytes
        budget = max(chunk_bytes, grid.size * out)
    plan = plan_chunks(grid, chunk_rows, **costs, budget=budget)

    def columns(chunk: Chunk) -> dict[str, np.ndarray]:
        return _evaluate_chunk(prep, labels, grid, criteria, chunk, long, chosen)

    return plan, columns


def _rows(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A chunk's columns as one value per row (broadcast ones written out)."""
    return {k: v.reshape(-1) for k, v in cols.items()}


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
    workers: int | None = None,
) -> Iterator[pd.DataFrame]:
    """The sweep as consecutive DataFrames, computed within about ``chunk_bytes`` of working
    memory (their columns, which questions and criteria decide, times the configurations), at
    most ``chunk_rows`` configurations each when given. ``workers`` threads compute the next
    chunks while the caller reads one (``memlab.core.chunks.chunk_workers``: the cores, for large
    grids); the frames are the same whatever their number."""
    n_workers = chunk_workers(grid.size, workers)
    chunks, columns = _column_chunks(
        raw, ages, labels, grid, criteria, long, chunk_rows, metrics, chunk_bytes, keep=2, workers=n_workers
    )
    bar = None
    if progress and len(chunks) > 1:
        from tqdm import tqdm

        # disable=None: tqdm stays quiet when stderr is not a terminal (CI logs, papermill)
        bar = tqdm(total=grid.size, unit="config", unit_scale=True, disable=None)

    def frame(chunk: Chunk) -> tuple[Chunk, pd.DataFrame]:
        return chunk, _frame(_rows(columns(chunk)), grid, first_row(grid, chunk), long)

    try:
        for chunk, df in ordered_map(frame, chunks, n_workers):
            yield df
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
    workers: int | None = None,
) -> pd.DataFrame:
    """Every configuration of the grid: one row each (or one per configuration and question).

    Columns: the axes; per criterion ``<name>_value``, ``<name>_pass``, ``<name>_margin``;
    ``headroom``; per question with a current memory ``margin_<id>`` (its final score minus the
    threshold, NaN when it is not a candidate) and ``injected_<id>``; ``injected_<kind>`` (memories
    injected over the questions of each kind); ``current_injected`` (questions whose current memory
    is injected); ``stale_injected``; ``wrong_injected``; ``min_margin`` (the smallest criterion
    margin); ``feasible``.

    In one thread the whole table is the result, so a chunk may work in as many bytes as the
    table takes (or the sweep's budget, when more): a grid is one chunk unless its working memory
    is larger than its table. ``workers`` threads (``memlab.core.chunks.chunk_workers``: the cores,
    for large grids) fill it in chunks of ``FILL_CHUNK_BYTES``. Chunks are copied into columns
    allocated once, each by the thread that computed it; the table is the same either way.
    """
    n_workers = chunk_workers(grid.size, workers)
    chunks, columns = _column_chunks(
        raw, ages, labels, grid, criteria, long, chunk_rows, metrics, CHUNK_BYTES, keep=0, workers=n_workers
    )
    if len(chunks) == 1:
        return _frame(_rows(columns(chunks[0])), grid, 0, long)
    whole: dict[str, np.ndarray] = {}
    allocating = threading.Lock()
    per_row = len(labels.question_ids) if long else 1

    def fill(chunk: Chunk) -> None:
        cols = columns(chunk)
        with allocating:  # every chunk has the same columns: the first one done allocates them
            if not whole:
                whole.update({k: np.empty(grid.size * per_row, dtype=v.dtype) for k, v in cols.items()})
        at = first_row(grid, chunk) * per_row
        for k, v in cols.items():
            # written once, straight from the chunk's arrays (broadcast ones too) into the table
            np.copyto(whole[k][at : at + v.size].reshape(v.shape), v)

    for _ in ordered_map(fill, chunks, n_workers):
        pass
    return _frame(whole, grid, 0, long)
