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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core import criteria as crit
from memlab.core import mmr
from memlab.core.errors import InputError
from memlab.core.grid import AXES, Axis, Grid
from memlab.core.labels import Labels
from memlab.core.ranking import candidate_lists
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


def picked_only(raw: np.ndarray, picks: np.ndarray) -> np.ndarray:
    """The raw table with every memory outside each question's picks unknown (NaN)."""
    out = np.full(np.shape(raw), np.nan)
    rows, cols = np.nonzero(picks >= 0)
    out[rows, picks[rows, cols]] = np.asarray(raw)[rows, picks[rows, cols]]
    return out


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
    """``memlab.core.sweep.sweep`` over the grid and the MMR axes: the rows in C order over
    (mmr_pool, diversity, *the grid's axes*), the two MMR columns first. ``vectors``: the
    memories' (row i memory i); None refuses a diversity above 0 in one line."""
    import pandas as pd

    pools = Axis.of(tuple(mmr_pool), integer=True).check("mmr_pool", **SPEC_BOUNDS["mmr_pool"])
    divs = Axis.of(tuple(diversity)).check("diversity", **SPEC_BOUNDS["diversity"])
    if min(pools) < 1:
        raise InputError("mmr_pool: the MMR axes need a pool of 1 or more (0 is the sweep without MMR)")
    if vectors is None and max(divs) > 0:
        raise InputError(MMR_NEEDS_VECTORS)
    frames = []
    for pool in pools:
        for d in divs:
            picks = mmr_picks(raw, vectors, int(pool), float(d), int(max(grid.candidates)))
            parts = []
            for c in grid.candidates:
                part = sweep(
                    picked_only(raw, picks[:, : int(c)]),
                    ages,
                    labels,
                    replace(grid, candidates=(c,)),
                    criteria,
                    **kwargs,
                )
                parts.append(part)
            frame = pd.concat(parts, ignore_index=True)
            frame.insert(0, "diversity", float(d))
            frame.insert(0, "mmr_pool", int(pool))
            frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    # C order over (mmr_pool, diversity, *AXES): each row's place on every axis, sorted stably
    keys = [
        out["mmr_pool"].map({v: i for i, v in enumerate(pools)}),
        out["diversity"].map({v: i for i, v in enumerate(divs)}),
    ]
    for a in AXES:
        keys.append(out[a].map({v: i for i, v in enumerate(getattr(grid, a))}))
    order = np.lexsort([k.to_numpy() for k in reversed(keys)])
    out = out.iloc[order].reset_index(drop=True)
    if "config" in out.columns:  # the long form numbers configurations: renumber over the MMR axes
        n_q = len(labels.question_ids)
        out["config"] = np.arange(len(out)) // n_q
    return out
