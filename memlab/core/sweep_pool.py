"""The sweep over a candidate pool: the tenant filter and the shards (``memlab.core.shards``).

With one shard and no filter this is ``memlab.core.sweep.sweep_chunks`` itself, bit for bit.
Otherwise each value ``k`` of the grid's candidates axis has its own pool per question (each
shard's top ``k`` of the memories the filter keeps: ``pool_mask``), so the sweep is run once per
``k``: on the raw scores with every memory outside that pool unknown, taking all of the pool as
candidates (at most ``shards * k``). Its candidates are then exactly the pool, in the candidate
order, and everything after (the re-sort, the threshold, the inject limit, the tie rule) is the
sweep's own. The rows are numbered and ordered as the whole grid's (``config``, C order) and the
``candidates`` column holds ``k``: the frames are those of one sweep over the whole grid.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core.grid import AXES, Grid
from memlab.core.labels import Labels
from memlab.core.shards import Pool, narrow, pool_mask, pool_size
from memlab.core.sweep import sweep_chunks

if TYPE_CHECKING:
    import pandas as pd


def pooled_sweep_chunks(
    raw: np.ndarray,
    ages: np.ndarray,
    labels: Labels,
    grid: Grid,
    criteria: Any = None,
    pool: Pool | None = None,
    **options: Any,
) -> Iterator[pd.DataFrame]:
    """``sweep_chunks`` with each question's candidates drawn from ``pool`` (see the module)."""
    if pool is None or pool.trivial:
        yield from sweep_chunks(raw, ages, labels, grid, criteria, **options)
        return
    import pandas as pd

    raw = narrow(np.asarray(raw, dtype=np.float64), pool)
    long = bool(options.get("long", False))
    axis = AXES.index("candidates")
    parts = []
    for j, k in enumerate(grid.candidates):
        inside = pool_mask(raw, int(k), pool)
        width = max(1, int(pool_size(raw, int(k), pool).max(initial=0)))
        sub = replace(grid, candidates=(width,))
        for frame in sweep_chunks(np.where(inside, raw, np.nan), ages, labels, sub, criteria, **options):
            frame = frame.copy()
            frame["candidates"] = int(k)
            config = frame["config"].to_numpy() if long else frame.index.to_numpy()
            where = list(np.unravel_index(config, sub.shape))
            where[axis] = np.full(len(config), j)
            whole = np.ravel_multi_index(where, grid.shape)
            if long:
                frame["config"] = whole
            else:
                frame.index = pd.Index(whole, name="config")
            parts.append(frame)
    out = pd.concat(parts)
    order = ["config", "question"] if long else None
    out = out.sort_values(order, kind="stable") if long else out.sort_index(kind="stable")
    if long:
        out = out.reset_index(drop=True)
    out.attrs.update(parts[0].attrs)
    out.attrs["pool"] = {"shards": pool.shards, "filtered": pool.allowed is not None}
    yield out
