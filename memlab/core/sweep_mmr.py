"""The sweep with MMR's pool and diversity as two more axes (outermost, before the grid's own).

MMR sits before the bonus and only chooses the candidates (``memlab.core.spec.retrieve``): for a
pool P, a diversity d and a candidates value C, each question's candidates are MMR's first C
picks among its top P by raw score; the bonus, the re-sort, the threshold and inject then read
them exactly as without MMR. So each (P, d, C) is the vectorised sweep of the rest of the grid
over the raw table with every memory MMR did not pick made unknown (NaN): the re-sort breaks
ties by raw score and dataset order, as the reference's, whichever set it is handed.

MMR is greedy and sequential, and greedy picks are prefixes of one another: the picks for the
largest C are computed once per (P, d), over every question at once
(``memlab.core.sweep_kernels.mmr_select``, held equal to ``memlab.core.mmr.select``).

Over several shards MMR runs on each shard apart, as Qdrant runs an ``mmr`` prefetch with its own
nested prefetch (a shard-level rescore: ``lib/shard/src/query/planned_query.rs``,
``recurse_prefetches``): each shard diversifies its own top P down to C, and the candidates are
the union of the shards' picks (``memlab.core.spec.mmr_pool_candidates``, the reference's). So
each (P, d, C) is then swept over every memory some shard picked, all of them candidates (at most
shards x C), and the ``candidates`` column holds C, as ``memlab.core.sweep_pool`` does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core import criteria as crit
from memlab.core import mmr
from memlab.core.errors import InputError
from memlab.core.grid import AXES, Axis, Grid
from memlab.core.labels import Labels
from memlab.core.ranking import candidate_lists
from memlab.core.shards import Pool, narrow
from memlab.core.spec import MMR_NEEDS_VECTORS, SPEC_BOUNDS
from memlab.core.sweep import sweep
from memlab.core.sweep_kernels import mmr_select

if TYPE_CHECKING:
    import pandas as pd

MMR_AXES = ("mmr_pool", "diversity")


def mmr_picks(
    raw: np.ndarray,
    vectors: np.ndarray | None,
    pool: int,
    diversity: float,
    limit: int,
    slots: np.ndarray | None = None,
) -> np.ndarray:
    """(questions, limit) column indices of ``raw`` MMR picks for each question, in pick order, -1
    past its picks: the top ``pool`` known raw scores (candidate order), diversified. ``slots``
    (compacted inputs, ``memlab.retrieval.inputs.compact``): the memory (row of ``vectors``) in
    each column of each row; None: column i is memory i."""
    raw = np.asarray(raw, dtype=np.float64)
    idx = candidate_lists(raw, pool)
    counts = (idx >= 0).sum(axis=-1)
    n_q, n_p = idx.shape
    rel = np.zeros((n_q, n_p), dtype=np.float32)
    sim = np.zeros((n_q, n_p, n_p), dtype=np.float32)
    use = vectors if diversity > 0 else None
    for q in range(n_q):
        k = int(counts[q])
        rel[q, :k] = raw[q, idx[q, :k]]
        sim[q, :k, :k] = mmr.similarities(use, idx[q, :k] if slots is None else slots[q, idx[q, :k]])
    places = np.empty((n_q, limit), dtype=np.int64)
    mmr_select(rel, sim, counts, *mmr.mmr_lambda(diversity), places)
    return np.where(places >= 0, np.take_along_axis(idx, np.maximum(places, 0), axis=-1), -1)


def picked_only(raw: np.ndarray, picks: np.ndarray | Sequence[np.ndarray]) -> np.ndarray:
    """The raw table with every memory outside each question's picks unknown (NaN); ``picks``
    one (questions, k) array, or one per shard (the union of their picks is kept)."""
    out = np.full(np.shape(raw), np.nan)
    for part in [picks] if isinstance(picks, np.ndarray) else picks:
        rows, cols = np.nonzero(part >= 0)
        out[rows, part[rows, cols]] = np.asarray(raw)[rows, part[rows, cols]]
    return out


def shard_picks(
    raw: np.ndarray, vectors: np.ndarray | None, pool: int, diversity: float, limit: int, where: Pool | None
) -> list[np.ndarray]:
    """``mmr_picks`` on each shard of ``where`` apart (each sees only its own memories the filter
    keeps), as Qdrant runs a nested ``mmr`` prefetch: one (questions, limit) array per shard."""
    raw = narrow(np.asarray(raw, dtype=np.float64), where)
    if where is None or where.shards == 1:
        return [mmr_picks(raw, vectors, pool, diversity, limit)]
    shard = np.asarray(where.shard)
    return [
        mmr_picks(np.where(shard == s, raw, np.nan), vectors, pool, diversity, limit)
        for s in np.unique(shard)
    ]


@dataclass(frozen=True)
class MmrAxes:
    """The MMR axes of a sweep, each value checked: pools of 1 or more (0 is the sweep without
    MMR), diversities in Qdrant's [0, 1]."""

    mmr_pool: tuple[int, ...]
    diversity: tuple[float, ...]

    @classmethod
    def of(cls, mmr_pool: Sequence[int], diversity: Sequence[float]) -> MmrAxes:
        pools = Axis.of(tuple(mmr_pool), integer=True).check("mmr_pool", **SPEC_BOUNDS["mmr_pool"])
        divs = Axis.of(tuple(diversity)).check("diversity", **SPEC_BOUNDS["diversity"])
        if min(pools) < 1:
            raise InputError(
                "mmr_pool: the MMR axes need a pool of 1 or more (0 is the sweep without MMR: sweep it apart)"
            )
        return cls(tuple(int(p) for p in pools), tuple(float(d) for d in divs))

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.mmr_pool), len(self.diversity)

    @property
    def size(self) -> int:
        return len(self.mmr_pool) * len(self.diversity)

    def edges(self, values: dict[str, float]) -> list[tuple[str, str, float]]:
        """``Grid.edges`` for the MMR axes: a choice on the lowest or highest pool or diversity
        (of an axis with more than one value) may be better outside it."""
        out = []
        for name in MMR_AXES:
            axis = getattr(self, name)
            if len(axis) > 1 and name in values:
                if values[name] == max(axis):
                    out.append((name, "highest", float(values[name])))
                elif values[name] == min(axis):
                    out.append((name, "lowest", float(values[name])))
        return out


def sweep_mmr_chunks(
    raw: np.ndarray,
    ages: np.ndarray,
    labels: Labels,
    grid: Grid,
    criteria: tuple[crit.Criterion, ...] | None = None,
    *,
    vectors: np.ndarray | None,
    axes: MmrAxes,
    pool: Pool | None = None,
    long: bool = False,
    **kwargs: Any,
) -> Iterator[pd.DataFrame]:
    """``memlab.core.sweep.sweep`` over the grid and the MMR axes, one frame per (mmr_pool,
    diversity) in C order over (mmr_pool, diversity, *the grid's axes*), the two MMR columns first
    and each frame in the grid's C order: configurations numbered over the whole (the index, or
    the long form's ``config``). ``vectors``: the memories' (row i memory i); None refuses a
    diversity above 0 in one line. ``pool``: the tenant filter and the shards (MMR per shard)."""
    import pandas as pd

    if vectors is None and max(axes.diversity) > 0:
        raise InputError(MMR_NEEDS_VECTORS)
    raw = narrow(np.asarray(raw, dtype=np.float64), pool)
    n_q = len(labels.question_ids)
    block = 0
    for p in axes.mmr_pool:
        for d in axes.diversity:
            picks = shard_picks(raw, vectors, p, d, int(max(grid.candidates)), pool)
            parts = []
            for c in grid.candidates:
                kept = picked_only(raw, [x[:, : int(c)] for x in picks])
                # every memory a shard picked is a candidate (one shard: at most c of them)
                width = max(int(c), int(np.isfinite(kept).sum(axis=-1).max(initial=0)))
                part = sweep(
                    kept, ages, labels, replace(grid, candidates=(width,)), criteria, long=long, **kwargs
                )
                part["candidates"] = int(c)
                parts.append(part)
            frame = pd.concat(parts, ignore_index=True)
            keys = [frame[a].map({v: i for i, v in enumerate(getattr(grid, a))}).to_numpy() for a in AXES]
            frame = frame.iloc[np.lexsort(keys[::-1])].reset_index(drop=True)
            frame.insert(0, "diversity", d)
            frame.insert(0, "mmr_pool", p)
            start = block * grid.size
            if long:  # one row per configuration and question: number the configurations
                frame["config"] = start + np.arange(len(frame)) // n_q
            else:
                frame.index = pd.RangeIndex(start, start + len(frame), name="config")
            frame.attrs.update(parts[0].attrs)
            frame.attrs.update({"axes": [*MMR_AXES, *AXES], "shape": [*axes.shape, *grid.shape]})
            block += 1
            yield frame


def sweep_mmr(
    raw: np.ndarray,
    ages: np.ndarray,
    labels: Labels,
    grid: Grid,
    criteria: tuple[crit.Criterion, ...] | None = None,
    *,
    vectors: np.ndarray | None,
    mmr_pool: Sequence[int],
    diversity: Sequence[float],
    **kwargs: Any,
) -> pd.DataFrame:
    """``sweep_mmr_chunks`` as one table (rows numbered 0.. in C order)."""
    import pandas as pd

    frames = list(
        sweep_mmr_chunks(
            raw, ages, labels, grid, criteria, vectors=vectors, axes=MmrAxes.of(mmr_pool, diversity), **kwargs
        )
    )
    out = pd.concat(frames, ignore_index=True)
    out.attrs.update(frames[0].attrs)
    return out
