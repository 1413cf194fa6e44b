"""The sweep with MMR's axes: every row what the one-config reference (``evaluate``) gives for
that configuration, wide and long, on random stores with vectors; the order is C order over the
MMR axes and the grid's; diversity without vectors is refused in one line."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import criteria_for, make_dataset, score_table
from test_sweep import same

from memlab.core.errors import InputError
from memlab.core.grid import AXES, Grid
from memlab.core.labels import Labels
from memlab.core.spec import RetrievalSpec
from memlab.core.sweep_mmr import sweep_mmr
from memlab.core.vectors import cosine_table
from memlab.scores.sources import Vectors
from memlab.tuning.evaluate import evaluate


def world(seed: int, n_m: int = 14, n_q: int = 5, dim: int = 5):
    rng = np.random.default_rng(seed)
    mem = rng.normal(size=(n_m, dim)).astype(np.float32)
    mem[3] = mem[2]  # twins: MMR's ties
    queries = rng.normal(size=(n_q, dim)).astype(np.float32)
    kinds = [str(k) for k in rng.choice(["hit", "nohit", "contradiction"], n_q)]
    dataset = make_dataset(
        rng.integers(0, 40 * 86400, n_m), kinds, [int(i) for i in rng.integers(0, n_m, n_q)], [()] * n_q
    )
    scores = score_table(dataset, cosine_table(queries, mem), Vectors(mem, queries))
    return dataset, scores, mem


def run(dataset, scores, mem, grid, pools, divs, **kw):
    raw = np.where(dataset.visible(), scores.raw, np.nan)
    return sweep_mmr(
        raw,
        dataset.ages(),
        Labels.from_dataset(dataset),
        grid,
        criteria_for(dataset),
        vectors=mem,
        mmr_pool=pools,
        diversity=divs,
        **kw,
    )


@pytest.mark.parametrize("seed", range(3))
def test_every_row_is_the_reference(seed):
    dataset, scores, mem = world(seed)
    grid = Grid(bonus=(0.0, 0.2), tau_days=(3.0,), threshold=(-1.0, 0.1), candidates=(2, 5), inject=(1, 3))
    pools, divs = (4, 10), (0.0, 0.5, 1.0)
    wide = run(dataset, scores, mem, grid, pools, divs)
    long = run(dataset, scores, mem, grid, pools, divs, long=True)
    assert len(wide) == len(pools) * len(divs) * grid.size
    criteria = criteria_for(dataset)
    slots = [c for c in long.columns if c.startswith("slot_") and not c.endswith("_final")]
    n_q = len(dataset.questions)
    differs = 0
    for i, row in wide.iterrows():
        spec = RetrievalSpec.from_row(row)
        assert spec.mmr_pool == pools[i // (len(divs) * grid.size)]  # C order, MMR axes outermost
        ev = evaluate(dataset, scores, spec, criteria)
        for c in ev.criteria:
            assert same(c.value, float(row[f"{c.name}_value"])), (i, c)
            assert c.passed == bool(row[f"{c.name}_pass"])
        assert same(ev.headroom, float(row["headroom"])) and ev.feasible == bool(row["feasible"])
        for kind in ("hit", "contradiction", "nohit"):
            assert sum(len(r.injected) for r in ev.results if r.kind == kind) == row[f"injected_{kind}"]
        plain = evaluate(dataset, scores, RetrievalSpec.from_row(row, mmr_pool=0, diversity=0.0), criteria)
        for j, r in enumerate(ev.results):
            lrow = long.iloc[i * n_q + j]
            assert lrow["question"] == r.question_id and lrow["config"] == i
            assert [int(lrow[s]) for s in slots if lrow[s] >= 0] == [c.index for c in r.injected], (i, j)
            differs += [c.index for c in r.injected] != [c.index for c in plain.results[j].injected]
    assert differs > 0  # MMR changed some injections: the rows test MMR, not only the grid


def test_the_grid_order_within_the_mmr_axes():
    dataset, scores, mem = world(9)
    grid = Grid(bonus=(0.0, 0.1), candidates=(3, 1), threshold=(0.2,))
    wide = run(dataset, scores, mem, grid, (6,), (0.3, 0.0))
    axes = wide[["mmr_pool", "diversity", *AXES]]
    want = [(6, d, "exp", "add", b, 14.0, 0.2, c, 3) for d in (0.3, 0.0) for b in (0.0, 0.1) for c in (3, 1)]
    assert [tuple(r) for r in axes.itertuples(index=False)] == want


def test_diversity_without_vectors_is_refused():
    dataset, scores, _ = world(1)
    with pytest.raises(InputError, match=r"^MMR with diversity > 0 needs the memories' vectors"):
        run(dataset, scores, None, Grid(), (5,), (0.5,))
    with pytest.raises(InputError, match=r"^mmr_pool: the MMR axes need a pool of 1 or more"):
        run(dataset, scores, None, Grid(), (0,), (0.0,))
