"""The vectorised sweep: every (bonus, tau, threshold, candidates, inject) at once.

``sweep`` is a pure function over arrays. It never loops over configurations in Python; it uses
the structure of the spec instead:

- which memories are candidates depends only on ``candidates`` (top-k by raw score), so each
  question's candidates are the first k of one sorted list;
- a candidate's final score depends only on (bonus, tau): ``rescore(raw, weight(tau), bonus)``,
  the same function the one-config reference calls;
- threshold and inject only enter through comparisons, broadcast last.

Configurations are laid out in C order over ``AXES`` (bonus slowest, inject fastest); row ``i``
of the result is configuration ``i`` of ``Grid.values``. The order is recorded in
``DataFrame.attrs``. Large grids are evaluated in chunks of whole (bonus, tau) pairs
(``sweep_chunks``), so memory stays bounded whatever the grid size.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab import criteria as crit
from memlab.fixtures import QUESTION_KINDS, Dataset
from memlab.spec import RetrievalSpec, age_days, recency_weight, rescore, select_candidates

if TYPE_CHECKING:
    import pandas as pd

AXES = ("bonus", "tau_days", "threshold", "candidates", "inject")
_INT_AXES = ("candidates", "inject")


@dataclass(frozen=True)
class Grid:
    """Values per axis; axes not given take the RetrievalSpec defaults (one value)."""

    bonus: tuple[float, ...] = (RetrievalSpec.bonus,)
    tau_days: tuple[float, ...] = (RetrievalSpec.tau_days,)
    threshold: tuple[float, ...] = (RetrievalSpec.threshold,)
    candidates: tuple[int, ...] = (RetrievalSpec.candidates,)
    inject: tuple[int, ...] = (RetrievalSpec.inject,)

    def __post_init__(self) -> None:
        for name in AXES:
            raw = getattr(self, name)
            values = tuple(np.atleast_1d(np.asarray(raw)).tolist())
            if not values:
                raise ValueError(f"grid axis {name!r} is empty")
            if name in _INT_AXES:
                if not all(isinstance(v, int) and v >= 1 for v in values):
                    raise ValueError(f"grid axis {name!r} needs integers >= 1, got {list(values)}")
            elif not all(isinstance(v, int | float) and math.isfinite(v) for v in values):
                raise ValueError(f"grid axis {name!r} needs finite numbers, got {list(values)}")
            object.__setattr__(self, name, values)
        if min(self.tau_days) <= 0:
            raise ValueError(f"grid axis 'tau_days' needs values > 0, got {min(self.tau_days)}")
        if min(self.bonus) < 0:
            raise ValueError(f"grid axis 'bonus' needs values >= 0, got {min(self.bonus)}")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(getattr(self, a)) for a in AXES)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def values(self, start: int = 0, stop: int | None = None) -> dict[str, np.ndarray]:
        """Each axis's value for configurations ``start .. stop-1`` (C order)."""
        flat = np.arange(start, self.size if stop is None else stop)
        idx = np.unravel_index(flat, self.shape)
        return {a: np.asarray(getattr(self, a))[i] for a, i in zip(AXES, idx, strict=True)}

    def spec(self, i: int) -> RetrievalSpec:
        """Configuration ``i`` as a RetrievalSpec (for the one-config reference)."""
        v = self.values(i, i + 1)
        return RetrievalSpec(
            candidates=int(v["candidates"][0]),
            inject=int(v["inject"][0]),
            threshold=float(v["threshold"][0]),
            bonus=float(v["bonus"][0]),
            tau_days=float(v["tau_days"][0]),
        )


@dataclass(frozen=True)
class Labels:
    """What the criteria need to know about each question, as arrays over memory indices."""

    question_ids: tuple[str, ...]
    kinds: tuple[str, ...]
    current: np.ndarray  # (Q,) memory index of the current memory, -1 if none
    stale: tuple[tuple[int, ...], ...]  # per question, memory indices of stale memories

    @classmethod
    def from_dataset(cls, dataset: Dataset) -> Labels:
        index = {m: i for i, m in enumerate(dataset.memory_ids)}
        return cls(
            dataset.question_ids,
            tuple(q.kind for q in dataset.questions),
            np.array([index[q.current] if q.current else -1 for q in dataset.questions]),
            tuple(tuple(index[s] for s in q.stale) for q in dataset.questions),
        )


@dataclass(frozen=True)
class Prepared:
    """Everything about the scores that does not depend on the grid's (bonus, tau) chunk."""

    cand: np.ndarray  # (Q, Kmax) memory index at each candidate position, -1 if none
    raw: np.ndarray  # (Q, Kmax) raw score at each position (NaN if none)
    weight: np.ndarray  # (T, Q, Kmax) recency weight of each position for each tau
    known: np.ndarray  # (Q, Kmax) the position holds a memory
    tracked_q: np.ndarray  # (L,) question of each tracked memory (currents, then stale ones)
    tracked_pos: np.ndarray  # (L,) its candidate position, -1 if not among the top Kmax
    current_l: np.ndarray  # (Q,) index into tracked of the question's current memory, -1 if none
    stale_l: np.ndarray  # (S,) indices into tracked of the stale memories
    extra: dict[str, Any] = field(default_factory=dict)


def prepare(raw: np.ndarray, ages: np.ndarray, labels: Labels, grid: Grid) -> Prepared:
    """Candidate lists (top Kmax by raw, the reference's own ordering) and recency weights."""
    raw = np.asarray(raw, dtype=np.float64)
    n_q = raw.shape[0]
    kmax = min(max(grid.candidates), raw.shape[1])
    cand = np.full((n_q, kmax), -1)
    for q in range(n_q):  # one sort per question, shared by every configuration
        top = select_candidates(raw[q], kmax)
        cand[q, : len(top)] = top
    known = cand >= 0
    raw_c = np.where(known, raw[np.arange(n_q)[:, None], np.maximum(cand, 0)], np.nan)
    ages_c = np.asarray(ages, dtype=np.float64)[np.maximum(cand, 0)]
    tau = np.asarray(grid.tau_days, dtype=np.float64)
    weight = recency_weight(ages_c[None], tau[:, None, None])

    tracked_q, tracked_mem, current_l, stale_l = [], [], np.full(n_q, -1), []
    for q in range(n_q):
        if labels.current[q] >= 0:
            current_l[q] = len(tracked_q)
            tracked_q.append(q)
            tracked_mem.append(labels.current[q])
    for q in range(n_q):
        for m in labels.stale[q]:
            stale_l.append(len(tracked_q))
            tracked_q.append(q)
            tracked_mem.append(m)
    tq = np.array(tracked_q, dtype=int)
    pos = np.array(
        [
            int(np.flatnonzero(cand[q] == m)[0]) if (cand[q] == m).any() else -1
            for q, m in zip(tq, tracked_mem, strict=True)
        ],
        dtype=int,
    )
    return Prepared(cand, raw_c, weight, known, tq, pos, current_l, np.array(stale_l, dtype=int))


def _evaluate_chunk(
    prep: Prepared,
    labels: Labels,
    grid: Grid,
    criteria: tuple[crit.Criterion, ...],
    bt_start: int,
    bt_stop: int,
    long: bool,
) -> dict[str, np.ndarray]:
    """Columns for the configurations of (bonus, tau) pairs ``bt_start .. bt_stop-1``.

    Array axes: n = (bonus, tau) pairs of the chunk, H thresholds, K candidates values,
    I inject values, Q questions, P candidate positions, L tracked memories.
    """
    n_t = len(grid.tau_days)
    bt = np.arange(bt_start, bt_stop)
    b_i, t_i = bt // n_t, bt % n_t
    bonus = np.asarray(grid.bonus, dtype=np.float64)[b_i]
    thr = np.asarray(grid.threshold, dtype=np.float64)
    k_vals = np.asarray(grid.candidates)
    i_vals = np.asarray(grid.inject)
    n, n_h, n_k, n_i = len(bt), len(thr), len(k_vals), len(i_vals)
    n_p = prep.cand.shape[1]

    # (n, Q, P): every candidate's final score, through the reference's own formula
    final = rescore(prep.raw[None], prep.weight[t_i], bonus[:, None, None])
    pos = np.arange(n_p)
    valid = prep.known[None] & (pos[None, None, :] < k_vals[:, None, None])  # (K, Q, P)
    masked = np.where(valid[None], final[:, None], -np.inf)  # (n, K, Q, P)
    best = masked.max(axis=-1)  # (n, K, Q)
    best[np.isneginf(best)] = np.nan  # no candidate at all

    # tracked memories (current and stale): their final score, whether they are candidates,
    # and their rank after the re-sort (final desc; ties by raw desc, then fixture order,
    # which is exactly the candidate-position order)
    tq, tpos = prep.tracked_q, prep.tracked_pos
    if len(tq) == 0:  # no current or stale labels at all: track one absent memory
        tq, tpos = np.zeros(1, dtype=int), np.full(1, -1)
    present = tpos >= 0
    f_t = np.where(present[None], final[:, tq, np.maximum(tpos, 0)], np.nan)  # (n, L)
    in_cand = present[None, :] & (tpos[None, :] < k_vals[:, None])  # (K, L)
    f_rows = masked[:, :, tq, :]  # (n, K, L, P)
    ft = f_t[:, None, :, None]
    beats = (f_rows > ft) | ((f_rows == ft) & (pos[None, None, None, :] < tpos[None, None, :, None]))
    rank = beats.sum(axis=-1)  # (n, K, L)
    t_final = np.where(in_cand[None], f_t[:, None, :], np.nan)  # (n, K, L)
    t_reach = t_final[:, None] >= thr[None, :, None, None]  # (n, H, K, L)
    t_injected = t_reach[..., None, :] & (rank[:, None, :, None, :] < i_vals[None, None, None, :, None])

    # how many memories each question injects: min(inject, candidates at or above threshold).
    # Only the top max(inject) finals can matter, so compare just those (a loop over the few
    # top positions and the questions, never over configurations).
    i_max = int(min(i_vals.max(), n_p))
    # a stable sort on -final keeps candidate order among equal finals: the reference's tie rule
    order = np.argsort(-masked, axis=-1, kind="stable")[..., :i_max]  # (n, K, Q, i_max)
    top = np.take_along_axis(masked, order, axis=-1)  # best first
    n_q = len(labels.question_ids)
    kind_of = np.array([QUESTION_KINDS.index(k) for k in labels.kinds])
    injected_by_kind = np.zeros((len(QUESTION_KINDS), n, n_h, n_k, n_i), dtype=np.int64)
    n_injected = np.empty((n, n_h, n_k, n_i, n_q), dtype=np.int64) if long else None
    for q in range(n_q):
        count = np.zeros((n, n_h, n_k), dtype=np.int64)
        for j in range(i_max):
            count += top[:, None, :, q, j] >= thr[None, :, None]
        per_inject = np.minimum(count[..., None], i_vals)  # (n, H, K, I)
        injected_by_kind[kind_of[q]] += per_inject
        if n_injected is not None:
            n_injected[..., q] = per_inject

    # per-question summary for the criteria kernels, shaped (n, H|1, K, I|1, Q)
    has_current = prep.current_l >= 0
    cl = np.maximum(prep.current_l, 0)
    current_final = np.where(has_current, t_final[:, :, cl], np.nan)[:, None, :, None, :]
    current_inj = np.where(has_current, t_injected[..., cl], False)  # (n, H, K, I, Q)
    summary = crit.QuestionSummary(best[:, None, :, None, :], current_final, current_inj)
    thr_b = thr[None, :, None, None]
    verdicts = crit.check(criteria, summary, labels.question_ids, labels.kinds, thr_b)
    nohit = np.array([k == "nohit" for k in labels.kinds])
    room = crit.headroom(summary.best_final, nohit, thr_b)

    shape = (n, n_h, n_k, n_i)

    def flat(a: np.ndarray) -> np.ndarray:
        return np.broadcast_to(a, shape).ravel()

    cols: dict[str, np.ndarray] = {
        "bonus": flat(bonus[:, None, None, None]),
        "tau_days": flat(np.asarray(grid.tau_days, dtype=np.float64)[t_i][:, None, None, None]),
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
    cols["headroom"] = flat(room)
    for q in np.flatnonzero(has_current):
        qid = labels.question_ids[q]
        cols[f"margin_{qid}"] = flat(current_final[..., q] - thr_b)
        cols[f"injected_{qid}"] = flat(current_inj[..., q])
    for k, kind in enumerate(QUESTION_KINDS):
        cols[f"injected_{kind}"] = injected_by_kind[k].ravel()
    stale_inj = t_injected[..., prep.stale_l] if len(prep.stale_l) else np.zeros((*shape, 0), bool)
    cols["stale_injected"] = flat(stale_inj.sum(axis=-1))
    cols["min_margin"] = np.minimum.reduce(margins) if margins else np.full(n * n_h * n_k * n_i, np.inf)
    cols["feasible"] = np.logical_and.reduce([cols[f"{c.name}_pass"] for c in criteria])

    if long:
        stale_per_q = np.zeros((n, n_h, n_k, n_i, n_q), dtype=np.int64)
        for j, l_idx in enumerate(prep.stale_l):
            stale_per_q[..., prep.tracked_q[l_idx]] += stale_inj[..., j]
        full = (n, n_h, n_k, n_i, n_q)
        config = np.arange(bt_start * n_h * n_k * n_i, bt_stop * n_h * n_k * n_i)
        cols = {
            "config": np.repeat(config, n_q),
            "question": np.tile(np.asarray(labels.question_ids, dtype=object), len(config)),
            "kind": np.tile(np.asarray(labels.kinds, dtype=object), len(config)),
            **{a: np.repeat(cols[a], n_q) for a in AXES},
            "best_final": np.broadcast_to(summary.best_final, full).ravel(),
            "current_final": np.broadcast_to(current_final, full).ravel(),
            "current_margin": np.broadcast_to(current_final - thr_b[..., None], full).ravel(),
            "current_injected": np.broadcast_to(current_inj, full).ravel(),
            "injected": n_injected.ravel(),
            "stale_injected": stale_per_q.ravel(),
        }
        # the injected memories themselves, slot by slot (memory index in dataset order, -1 empty)
        top_mem = prep.cand[np.arange(n_q)[None, None, :, None], order]  # (n, K, Q, i_max)
        for j in range(i_max):
            filled = j < n_injected  # (n, H, K, I, Q)
            cols[f"slot_{j + 1}"] = np.where(filled, top_mem[:, None, :, None, :, j], -1).ravel()
            cols[f"slot_{j + 1}_final"] = np.where(filled, top[:, None, :, None, :, j], np.nan).ravel()
    return cols


def _bt_chunks(grid: Grid, chunk_rows: int) -> list[tuple[int, int]]:
    per_bt = len(grid.threshold) * len(grid.candidates) * len(grid.inject)
    n_bt = len(grid.bonus) * len(grid.tau_days)
    step = max(1, chunk_rows // per_bt)
    return [(s, min(s + step, n_bt)) for s in range(0, n_bt, step)]


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
    criteria: tuple[crit.Criterion, ...] = crit.SEED_CRITERIA,
    *,
    long: bool = False,
    chunk_rows: int = 1 << 19,
    progress: bool = False,
) -> Iterator[pd.DataFrame]:
    """The sweep as consecutive DataFrames of about ``chunk_rows`` configurations each."""
    if raw.ndim != 2 or raw.shape != (len(labels.question_ids), len(ages)):
        raise ValueError(
            f"score table has shape {raw.shape}, expected ({len(labels.question_ids)}, {len(ages)})"
        )
    prep = prepare(raw, ages, labels, grid)
    per_bt = len(grid.threshold) * len(grid.candidates) * len(grid.inject)
    chunks = _bt_chunks(grid, chunk_rows)
    bar = None
    if progress and len(chunks) > 1:
        from tqdm import tqdm

        # disable=None: tqdm stays quiet when stderr is not a terminal (CI logs, papermill)
        bar = tqdm(total=grid.size, unit="config", unit_scale=True, disable=None)
    try:
        for s, e in chunks:
            cols = _evaluate_chunk(prep, labels, grid, criteria, s, e, long)
            yield _frame(cols, grid, s * per_bt, long)
            if bar is not None:
                bar.update((e - s) * per_bt)
    finally:
        if bar is not None:
            bar.close()


def sweep(
    raw: np.ndarray,
    ages: np.ndarray,
    labels: Labels,
    grid: Grid,
    criteria: tuple[crit.Criterion, ...] = crit.SEED_CRITERIA,
    *,
    long: bool = False,
    chunk_rows: int = 1 << 19,
) -> pd.DataFrame:
    """Every configuration of the grid: one row each (or one per configuration and question).

    Columns: the axes; per criterion ``<name>_value``, ``<name>_pass``, ``<name>_margin``;
    ``headroom``; per question with a current memory ``margin_<id>`` (its final score minus the
    threshold, NaN when it is not a candidate) and ``injected_<id>``; ``injected_<kind>`` (memories
    injected over the questions of each kind); ``stale_injected``; ``min_margin`` (the smallest
    criterion margin); ``feasible``.
    """
    import pandas as pd

    frames = list(sweep_chunks(raw, ages, labels, grid, criteria, long=long, chunk_rows=chunk_rows))
    if len(frames) == 1:
        return frames[0]
    out = pd.concat(frames, ignore_index=long)
    out.attrs.update(frames[0].attrs)
    return out


def sweep_dataset(
    dataset: Dataset,
    raw: np.ndarray,
    grid: Grid,
    criteria: tuple[crit.Criterion, ...] = crit.SEED_CRITERIA,
    **kwargs: Any,
) -> pd.DataFrame:
    """``sweep`` with ages and labels taken from a dataset."""
    ages = age_days(dataset.memory_dates(), dataset.reference_date)
    return sweep(raw, ages, Labels.from_dataset(dataset), grid, criteria, **kwargs)


def parse_axis(text: str, name: str = "value", integer: bool = False) -> tuple[float, ...] | tuple[int, ...]:
    """``start:stop:step`` (stop included), a comma list, or one number."""
    conv = int if integer else float
    try:
        if ":" in text:
            parts = text.split(":")
            if len(parts) != 3:
                raise ValueError
            start, stop, step = (conv(p) for p in parts)
            if step <= 0 or stop < start:
                raise ValueError(f"--{name}: '{text}' needs step > 0 and stop >= start")
            n = math.floor((stop - start) / step + 1e-9) + 1
            values = start + step * np.arange(n)
            # round away binary noise (0.1 * 3 = 0.30000000000000004) for readable output
            return tuple(int(v) for v in values) if integer else tuple(np.round(values, 12).tolist())
        return tuple(conv(p) for p in text.split(","))
    except ValueError as e:
        if e.args and str(e.args[0]).startswith("--"):
            raise
        kind = "integer" if integer else "number"
        raise ValueError(
            f"--{name}: '{text}' is not start:stop:step (stop included), a comma list or a {kind}"
        ) from None
