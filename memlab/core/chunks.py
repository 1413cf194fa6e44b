"""How a sweep splits its grid into chunks of consecutive configurations that fit a memory budget.

A chunk's working memory grows with questions x candidates x configurations (``row_bytes``,
``pair_bytes``); ``plan_chunks`` picks boxes of the (bonus, tau, threshold) axes that stay within
the budget, down to a range of thresholds of one (bonus, tau) pair, so the peak memory of a sweep
does not grow with the size of its grid.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice, product
from typing import TypeVar

from memlab.core.grid import Grid


@dataclass(frozen=True)
class Chunk:
    """A box of the (bonus, tau, threshold) axes whose configurations are consecutive rows:
    whole tau rows of several bonus values, or a range of taus of one bonus, or a range of
    thresholds of one (bonus, tau) pair (every candidates and inject value each time)."""

    b0: int
    b1: int
    t0: int
    t1: int
    h0: int = 0
    h1: int | None = None  # None: every threshold
    family: int = 0  # index of (decay, combine) in the grid's C order
    decay: str = "exp"
    combine: str = "add"

    def pairs(self) -> int:
        return (self.b1 - self.b0) * (self.t1 - self.t0)

    def rows(self, grid: Grid) -> int:
        n_h = len(grid.threshold) if self.h1 is None else self.h1 - self.h0
        return self.pairs() * n_h * len(grid.candidates) * len(grid.inject)


def first_row(grid: Grid, chunk: Chunk) -> int:
    per_threshold = len(grid.candidates) * len(grid.inject)
    per_pair = len(grid.threshold) * per_threshold
    per_family = len(grid.bonus) * len(grid.tau_days) * per_pair
    return (
        chunk.family * per_family
        + (chunk.b0 * len(grid.tau_days) + chunk.t0) * per_pair
        + chunk.h0 * per_threshold
    )


CHUNK_BYTES = 256 << 20  # the working memory a chunk of the sweep may take, about

# a grid of at least this many configurations is evaluated by several threads, one chunk each at a
# time (the chunk kernels release the GIL, and so do numpy's array operations); a smaller one in the
# caller's thread, where a thread's start would cost more than it saves
THREADED_CONFIGS = 1 << 19
MAX_WORKERS = 8

T = TypeVar("T")
R = TypeVar("R")


def chunk_workers(configs: int, workers: int | None = None) -> int:
    """How many threads evaluate the chunks of a sweep of ``configs`` configurations: ``workers``
    when given, else the cores this process may run on (at most ``MAX_WORKERS``); one below
    ``THREADED_CONFIGS``. The results do not depend on it: each chunk is computed alone."""
    if workers is not None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        return workers
    if configs < THREADED_CONFIGS:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


def ordered_map(fn: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """``map(fn, items)`` in ``workers`` threads, in the items' order, at most ``workers`` items
    in flight: while the caller handles one result, the next ones are being computed. Closing the
    iterator early cancels what has not started."""
    if workers <= 1:
        yield from map(fn, items)
        return
    it = iter(items)
    with ThreadPoolExecutor(workers, thread_name_prefix="memlab-chunk") as pool:
        pending = deque(pool.submit(fn, x) for x in islice(it, workers))
        try:
            while pending:
                result = pending.popleft().result()
                for x in islice(it, 1):
                    pending.append(pool.submit(fn, x))
                yield result
        finally:
            for future in pending:
                future.cancel()


def column_bytes(
    n_criteria: int, n_current: int, n_kinds: int, long: bool = False, n_questions: int = 1
) -> int:
    """Bytes of one configuration's output row: the axes (two family codes, three floats, two
    integers), per criterion a value, a flag and a margin, per current memory a margin and a flag,
    the injected counts (per kind, current), the answered counts and the last columns; in the
    long form, one row per question with its facts and the injected slots."""
    wide = 42 + 17 * n_criteria + 9 * n_current + 8 * n_kinds + 8 * 8 + 9
    return wide if not long else n_questions * (wide + 160)


WORK_BYTES = 48  # temporaries per configuration while a chunk is computed (tracemalloc, rounded up)


def row_bytes(out_bytes: int, keep: int, long: bool = False, n_questions: int = 1) -> int:
    """Working bytes per configuration of a chunk: ``keep`` copies of its output row (a streamed
    chunk's columns and the frame the caller still holds while the next chunk is computed), and
    the temporaries (the criteria's margins, the counting histograms; per question in the long
    form). Measured with tracemalloc (bench/bench_sweep_memory.py) and rounded up."""
    return keep * out_bytes + WORK_BYTES * (n_questions if long else 1)


def pair_bytes(
    n_questions: int, n_positions: int, n_candidates: int, n_inject: int, n_tracked: int = 0
) -> int:
    """Working bytes per (bonus, tau) pair, whatever the thresholds: the final scores at every
    candidate position (and the weights and sums they come from), and per candidates value each
    question's top-inject finals, the tracked memories' finals and places, and the per-question
    facts the criteria read. Measured with tracemalloc (bench/bench_sweep_memory.py), rounded up."""
    per_k = n_questions * (2 * n_inject + 8) + 3 * n_tracked
    return 8 * (3 * n_questions * n_positions + n_candidates * per_k)


class ChunkPlan(Sequence):
    """The chunks of a grid, generated on demand (an axis of 10^8 values plans 10^5 chunks
    without holding them), family by family ((decay, combine) in C order): ``step`` bonus rows,
    ``step`` taus of one bonus, or ``step`` thresholds of one (bonus, tau) pair per chunk."""

    def __init__(self, mode: str, step: int, n_b: int, n_t: int, n_h: int, families=(("exp", "add"),)):
        self.mode, self.step, self.n_b, self.n_t, self.n_h = mode, step, n_b, n_t, n_h
        self.families = tuple(families)
        per = {"bonus": n_b, "tau": n_t, "threshold": n_h}[mode]
        self.per_row = -(-per // step)  # chunks along the split axis
        self.outer = {"bonus": 1, "tau": n_b, "threshold": n_b * n_t}[mode]

    def __len__(self) -> int:
        return len(self.families) * self.outer * self.per_row

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        f, i = divmod(i, self.outer * self.per_row)
        fam = {"family": f, "decay": self.families[f][0], "combine": self.families[f][1]}
        o, k = divmod(i, self.per_row)
        lo = k * self.step
        if self.mode == "bonus":
            return Chunk(lo, min(lo + self.step, self.n_b), 0, self.n_t, **fam)
        if self.mode == "tau":
            return Chunk(o, o + 1, lo, min(lo + self.step, self.n_t), **fam)
        b, t = divmod(o, self.n_t)
        return Chunk(b, b + 1, t, t + 1, lo, min(lo + self.step, self.n_h), **fam)

    def __iter__(self) -> Iterator[Chunk]:
        return (self[i] for i in range(len(self)))


def plan_chunks(
    grid: Grid,
    chunk_rows: int | None = None,
    *,
    row_cost: int = 0,
    pair_cost: int = 0,
    budget: int = CHUNK_BYTES,
) -> ChunkPlan:
    """Boxes of consecutive rows, each within ``budget`` bytes: a chunk of ``r`` configurations
    over ``p`` (bonus, tau) pairs costs ``r * row_cost + p * pair_cost`` (``row_bytes``,
    ``pair_bytes``). ``chunk_rows``, when given, also caps the configurations of a chunk.
    Family by family ((decay, combine)): several bonus values with every tau; when one bonus
    row alone is too large, a range of taus; when one (bonus, tau) pair is, a range of its
    thresholds."""
    per_threshold = len(grid.candidates) * len(grid.inject)
    n_h = len(grid.threshold)
    per_pair = n_h * per_threshold
    n_b, n_t = len(grid.bonus), len(grid.tau_days)
    families = tuple(product(grid.decay, grid.combine))
    cost = per_pair * row_cost + pair_cost
    pairs = budget // cost if cost else n_b * n_t
    if chunk_rows is not None:
        pairs = min(pairs, chunk_rows // per_pair)
    if pairs >= n_t:
        return ChunkPlan("bonus", pairs // n_t, n_b, n_t, n_h, families)
    if pairs >= 1:
        return ChunkPlan("tau", pairs, n_b, n_t, n_h, families)
    # one (bonus, tau) pair is too large: a range of its thresholds per chunk
    step = (budget - pair_cost) // (per_threshold * row_cost) if row_cost else n_h
    if chunk_rows is not None:
        step = min(step, chunk_rows // per_threshold)
    return ChunkPlan("threshold", max(1, step), n_b, n_t, n_h, families)
