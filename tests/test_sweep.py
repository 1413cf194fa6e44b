"""The vectorised sweep agrees with the one-config reference and with Qdrant's native query."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import REF, criteria_for, make_dataset, score_table
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlab.core.criteria import SEED_CRITERIA, Criterion
from memlab.core.grid import Grid, parse_axis
from memlab.core.labels import Labels
from memlab.core.spec import COMBINES, DECAYS, age_days
from memlab.core.sweep import sweep, sweep_chunks
from memlab.qdrant.store import MemoryStore
from memlab.tuning.evaluate import SEED_CANDIDATES, candidate_table, evaluate
from memlab.tuning.sweep_dataset import sweep_dataset

PROPERTY = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def same(a, b) -> bool:
    """Equal values, or both missing/infinite the same way (None, NaN, +-inf)."""
    fa = None if a is None or (isinstance(a, float) and math.isnan(a)) else a
    fb = None if b is None or (isinstance(b, float) and math.isnan(b)) else b
    if fa is None or fb is None:
        return (fa is None and (fb is None or not math.isfinite(fb))) or (
            fb is None and not math.isfinite(fa)
        )
    return fa == fb or abs(fa - fb) <= 1e-12


def check_against_reference(dataset, scores, grid, criteria):
    wide = sweep_dataset(dataset, scores.raw, grid, criteria)
    long = sweep_dataset(dataset, scores.raw, grid, criteria, long=True)
    n_q = len(dataset.questions)
    slots = [c for c in long.columns if c.startswith("slot_") and not c.endswith("_final")]
    for i in range(grid.size):
        ev = evaluate(dataset, scores, grid.spec(i), criteria)
        row = wide.iloc[i]
        for c in ev.criteria:
            assert same(c.value, float(row[f"{c.name}_value"])), (i, c, row[f"{c.name}_value"])
            assert c.passed == bool(row[f"{c.name}_pass"]), (i, c)
        assert same(ev.headroom, float(row["headroom"]))
        assert ev.feasible == bool(row["feasible"])
        for kind in ("hit", "contradiction", "nohit"):
            want = sum(len(r.injected) for r in ev.results if r.kind == kind)
            assert want == row[f"injected_{kind}"]
        stale = sum(
            1
            for q, r in zip(dataset.questions, ev.results, strict=True)
            for c in r.injected
            if c.memory_id in q.stale
        )
        assert stale == row["stale_injected"] == ev.stale_injected
        assert ev.wrong_injected == row["wrong_injected"]
        for j, r in enumerate(ev.results):
            lrow = long.iloc[i * n_q + j]
            assert lrow["question"] == r.question_id and lrow["config"] == i
            got = [int(lrow[s]) for s in slots if lrow[s] >= 0]
            assert got == [c.index for c in r.injected], (i, r.question_id)
            finals = [float(lrow[f"{s}_final"]) for s in slots if lrow[s] >= 0]
            assert finals == [c.final for c in r.injected]


@st.composite
def cases(draw):
    n_m = draw(st.integers(1, 10))
    n_q = draw(st.integers(1, 5))
    # raw scores on a coarse lattice so that ties happen; some pairs unknown
    raw = np.array(
        draw(
            st.lists(
                st.lists(
                    st.one_of(st.none(), st.integers(-20, 20).map(lambda v: v / 20)),
                    min_size=n_m,
                    max_size=n_m,
                ),
                min_size=n_q,
                max_size=n_q,
            )
        ),
        dtype=float,
    )
    ages = draw(
        st.lists(
            st.one_of(st.just(0), st.sampled_from([3600, 86400, 7 * 86400]), st.integers(0, 90 * 86400)),
            min_size=n_m,
            max_size=n_m,
        )
    )
    kinds, current, stale = [], [], []
    for _ in range(n_q):
        kind = draw(st.sampled_from(["hit", "contradiction", "nohit"]))
        if kind == "nohit" or (kind == "contradiction" and n_m < 2):
            kinds.append("nohit")
            current.append(-1)
            stale.append(())
            continue
        cur = draw(st.integers(0, n_m - 1))
        others = [m for m in range(n_m) if m != cur]
        st_ids = draw(st.lists(st.sampled_from(others), unique=True, max_size=2)) if others else []
        if kind == "contradiction" and not st_ids:
            st_ids = [others[0]]
        kinds.append(kind)
        current.append(cur)
        stale.append(tuple(st_ids))
    grid = Grid(
        bonus=tuple(draw(st.lists(st.sampled_from([0.0, 0.01, 0.05, 0.25, 1.0]), min_size=1, max_size=3))),
        tau_days=tuple(draw(st.lists(st.sampled_from([1e-6, 0.5, 14.0, 1e9]), min_size=1, max_size=2))),
        threshold=tuple(
            draw(st.lists(st.sampled_from([-1.0, 0.0, 0.3, 0.45, 0.6, 2.0]), min_size=1, max_size=3))
        ),
        candidates=tuple(draw(st.lists(st.integers(1, n_m + 2), min_size=1, max_size=2))),
        inject=tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=2))),
        decay=tuple(draw(st.lists(st.sampled_from(list(DECAYS)), min_size=1, max_size=2, unique=True))),
        combine=tuple(draw(st.lists(st.sampled_from(list(COMBINES)), min_size=1, max_size=2, unique=True))),
    )
    # sometimes the questions are asked in the past: later memories are not retrievable for them
    asked = draw(st.one_of(st.none(), st.lists(st.integers(0, 30 * 86400), min_size=n_q, max_size=n_q)))
    if asked is not None:  # labels must exist when the question is asked: keep only those that do
        when = [a for a in ages]
        for j in range(n_q):
            ok = lambda m, j=j: when[m] >= asked[j]  # noqa: E731
            if current[j] >= 0 and not ok(current[j]):
                kinds[j], current[j], stale[j] = "nohit", -1, ()
            stale[j] = tuple(m for m in stale[j] if ok(m))
            if kinds[j] == "contradiction" and not stale[j]:
                kinds[j] = "hit"
    # sometimes one more memory is labelled relevant: it is not a wrong injection
    extra = draw(st.lists(st.integers(-1, n_m - 1), min_size=n_q, max_size=n_q))
    relevant = [
        tuple(
            dict.fromkeys(
                (
                    *((current[j],) if current[j] >= 0 else ()),
                    *stale[j],
                    *(
                        (extra[j],)
                        if extra[j] >= 0
                        and kinds[j] != "nohit"
                        and (asked is None or ages[extra[j]] >= asked[j])
                        else ()
                    ),
                )
            )
        )
        for j in range(n_q)
    ]
    dataset = make_dataset(ages, kinds, current, stale, asked_seconds_ago=asked, relevant=relevant)
    return dataset, score_table(dataset, raw), grid


@pytest.mark.slow
@PROPERTY
@given(cases())
def test_sweep_equals_reference_on_random_tables(case):
    dataset, scores, grid = case
    check_against_reference(dataset, scores, grid, criteria_for(dataset))


@st.composite
def vector_cases(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    n_m, n_q, dim = draw(st.integers(2, 12)), draw(st.integers(1, 4)), 6
    rng = np.random.default_rng(seed)
    grid = Grid(
        bonus=tuple(draw(st.lists(st.sampled_from([0.0, 0.05, 0.3]), min_size=1, max_size=2, unique=True))),
        tau_days=tuple(
            draw(st.lists(st.sampled_from([0.5, 14.0, 300.0]), min_size=1, max_size=2, unique=True))
        ),
        threshold=tuple(
            draw(st.lists(st.sampled_from([-1.0, 0.0, 0.25]), min_size=1, max_size=2, unique=True))
        ),
        candidates=(draw(st.integers(1, n_m)),),
        inject=(draw(st.integers(1, 3)),),
        decay=(draw(st.sampled_from(list(DECAYS))),),
        combine=(draw(st.sampled_from(list(COMBINES))),),
    )
    return rng.normal(size=(n_m, dim)), rng.normal(size=(n_q, dim)), rng.integers(0, 60 * 86400, n_m), grid


@pytest.mark.slow
@PROPERTY
@given(vector_cases())
def test_sweep_reference_and_native_qdrant_agree(case):
    mem, queries, age_s, grid = case
    dataset = make_dataset(age_s, ["hit"] * len(queries), [0] * len(queries), [()] * len(queries))
    store = MemoryStore.from_dataset(dataset, mem.astype(np.float32))
    scores = score_table(dataset, store.score_table(queries))
    criteria = criteria_for(dataset)
    long = sweep_dataset(dataset, scores.raw, grid, criteria, long=True)
    slots = [c for c in long.columns if c.startswith("slot_") and not c.endswith("_final")]
    n_q = len(queries)
    for i in range(grid.size):
        spec = grid.spec(i).with_reference(REF)
        ev = evaluate(dataset, scores, spec, criteria)
        for j, vec in enumerate(queries):
            native = store.query_spec(vec, spec)
            reference = [(c.index, c.final) for c in ev.results[j].injected]
            row = long.iloc[i * n_q + j]
            swept = [(int(row[s]), float(row[f"{s}_final"])) for s in slots if row[s] >= 0]
            assert [m for m, _ in native] == [m for m, _ in reference] == [m for m, _ in swept]
            np.testing.assert_allclose([f for _, f in native], [f for _, f in reference], atol=1e-6, rtol=0)
            assert [f for _, f in swept] == [f for _, f in reference]
    store.client.close()


def test_seed_four_candidates_from_the_sweep(seed, published):
    grid = Grid(bonus=(0.03, 0.04, 0.05), tau_days=(14.0, 30.0))
    wide = sweep_dataset(seed, published.raw, grid)
    table = candidate_table(seed, published, SEED_CANDIDATES)
    for _, want in table.iterrows():
        got = wide[(wide.bonus == want.bonus) & (wide.tau_days == want.tau_days)].iloc[0]
        for name in ("a", "b", "c"):
            assert got[f"{name}_value"] == want[f"{name}_value"]
        assert got["feasible"] == want["feasible"]
    assert (
        round(float(wide.loc[(wide.bonus == 0.05) & (wide.tau_days == 14.0), "headroom"].iloc[0]), 3) == 0.016
    )


def test_grid_order_is_c_order_and_recorded():
    grid = Grid(bonus=(0.0, 0.1), tau_days=(1.0, 2.0, 3.0), threshold=(0.5,), candidates=(2, 4), inject=(1,))
    v = grid.values()
    assert v["bonus"].tolist() == [0.0] * 6 + [0.1] * 6
    assert v["tau_days"].tolist() == [1.0, 1.0, 2.0, 2.0, 3.0, 3.0] * 2
    assert v["candidates"].tolist() == [2, 4] * 6
    raw = np.array([[0.5, 0.4]])
    df = sweep(raw, np.zeros(2), Labels(("q",), ("nohit",), np.array([-1]), ((),)), grid, SEED_CRITERIA[:1])
    assert df.attrs["axes"] == ["decay", "combine", "bonus", "tau_days", "threshold", "candidates", "inject"]
    assert df.attrs["shape"] == [1, 1, 2, 3, 1, 2, 1]
    assert (
        df[["bonus", "tau_days", "candidates"]].to_numpy().tolist()
        == np.column_stack([v["bonus"], v["tau_days"], v["candidates"]]).tolist()
    )


def test_chunks_concatenate_to_the_whole(seed, published):
    grid = Grid(bonus=tuple(np.linspace(0, 0.1, 11)), tau_days=(3.0, 14.0, 30.0), threshold=(0.44, 0.45))
    whole = sweep_dataset(seed, published.raw, grid)
    ages = age_days(seed.memory_dates(), seed.reference_date)
    labels = Labels.from_dataset(seed)
    # 2 rows per (bonus, tau) pair. A budget of 13 rows is 6 pairs: two bonus values with all
    # three taus a chunk. A budget of 5 rows is 2 pairs: less than a bonus row, so taus split.
    big = list(sweep_chunks(published.raw, ages, labels, grid, SEED_CRITERIA, chunk_rows=13))
    assert [len(p) for p in big] == [12] * 5 + [6]
    parts = list(sweep_chunks(published.raw, ages, labels, grid, SEED_CRITERIA, chunk_rows=5))
    assert [len(p) for p in parts] == [4, 2] * 11
    import pandas as pd

    pd.testing.assert_frame_equal(pd.concat(big), whole)
    joined = pd.concat(parts)
    assert joined.index.tolist() == list(range(grid.size))
    pd.testing.assert_frame_equal(joined, whole, check_like=False)


def test_chunks_computed_by_threads_equal_the_one_thread_sweep(seed, published):
    """Chunks computed two and three at a time come out in order and equal, column for column,
    the sweep computed in the caller's thread, streamed and in memory."""
    import pandas as pd

    grid = Grid(bonus=tuple(np.linspace(0, 0.1, 11)), tau_days=(3.0, 14.0, 30.0), threshold=(0.44, 0.45))
    ages = age_days(seed.memory_dates(), seed.reference_date)
    labels = Labels.from_dataset(seed)
    one_thread = list(sweep_chunks(published.raw, ages, labels, grid, chunk_rows=5, workers=1))
    for workers in (2, 3):
        threaded = list(sweep_chunks(published.raw, ages, labels, grid, chunk_rows=5, workers=workers))
        assert [p.index[0] for p in threaded] == [p.index[0] for p in one_thread]
        pd.testing.assert_frame_equal(pd.concat(threaded), pd.concat(one_thread))
        pd.testing.assert_frame_equal(
            sweep(published.raw, ages, labels, grid, chunk_rows=5, workers=workers),
            sweep(published.raw, ages, labels, grid, workers=1),
        )
        long = sweep(published.raw, ages, labels, grid, chunk_rows=5, long=True, workers=workers)
        pd.testing.assert_frame_equal(long, sweep(published.raw, ages, labels, grid, long=True, workers=1))


def test_every_column_is_its_own_array(seed, published):
    """Columns start as views broadcast over the chunk; the table the caller gets holds each in
    memory of its own, in one chunk, in several and streamed (min_margin is a copy of the one
    criterion's margin, not the same array), and writing to one leaves the others alone."""
    grid = Grid(bonus=(0.0, 0.05), tau_days=(3.0, 14.0), threshold=(0.44, 0.45))
    ages = age_days(seed.memory_dates(), seed.reference_date)
    labels = Labels.from_dataset(seed)
    one = (SEED_CRITERIA[0],)
    tables = [
        sweep(published.raw, ages, labels, grid, one),
        sweep(published.raw, ages, labels, grid, one, chunk_rows=3, workers=2),
        *sweep_chunks(published.raw, ages, labels, grid, one, chunk_rows=3),
    ]
    for df in tables:
        columns = [df[c].to_numpy() for c in df.columns if df[c].dtype != "category"]
        assert not any(np.shares_memory(a, b) for i, a in enumerate(columns) for b in columns[i + 1 :])
        before = df["a_margin"].copy()
        df.loc[df.index[0], "min_margin"] = 99.0
        assert df["a_margin"].equals(before)


def test_workers_default_to_one_for_small_grids_and_are_checked():
    from memlab.core.chunks import THREADED_CONFIGS, chunk_workers

    assert chunk_workers(THREADED_CONFIGS - 1) == 1
    assert chunk_workers(THREADED_CONFIGS) >= 1
    assert chunk_workers(10, workers=3) == 3
    with pytest.raises(ValueError, match=r"^workers must be at least 1, got 0$"):
        chunk_workers(10, workers=0)


# -- edge cases with results stated up front --------------------------------------------------

LABELS = Labels(("h", "n"), ("hit", "nohit"), np.array([1, -1]), ((0,), ()))


def one(raw, ages, **axes):
    return sweep(
        np.array(raw, dtype=float),
        np.array(ages, dtype=float),
        LABELS,
        Grid(**axes),
        (*SEED_CRITERIA[:1], Criterion("cur", "current_injected", "h")),
    ).iloc[0]


def test_nothing_above_the_threshold():
    row = one([[0.3, 0.2], [0.1, 0.2]], [0, 0], bonus=(0.0,), threshold=(0.5,))
    assert (row.injected_hit, row.injected_nohit, row.stale_injected) == (0, 0, 0)
    assert row.a_value == pytest.approx(0.2) and row.headroom == pytest.approx(0.3)
    assert not row.cur_pass and row.margin_h == pytest.approx(-0.3)


def test_missing_scores_are_never_candidates():
    row = one([[np.nan, 0.9], [np.nan, np.nan]], [0, 0], bonus=(0.0,), threshold=(0.5,))
    assert row.injected_hit == 1 and row.cur_pass
    assert row.a_value == -np.inf and row.a_pass and row.headroom == np.inf


def test_ties_fall_to_candidate_order():
    # equal raw and age: memory 0 (stale) comes first, so with inject=1 the current one is out
    row = one([[0.6, 0.6], [0.0, 0.0]], [5, 5], bonus=(0.05,), threshold=(0.5,), inject=(1,))
    assert row.stale_injected == 1 and not row.cur_pass and row.injected_hit == 1


def test_tiny_tau_gives_only_age_zero_a_bonus():
    # tau = 1e-9 days: exp(-age/tau) underflows to 0 for any age > 0; age 0 keeps the full bonus
    row = one(
        [[0.40, 0.40], [0.0, 0.0]], [0, 1], bonus=(0.1,), tau_days=(1e-9,), threshold=(0.45,), inject=(1,)
    )
    assert row.margin_h == pytest.approx(-0.05) and row.stale_injected == 1


def test_huge_tau_gives_everyone_the_full_bonus():
    row = one([[0.40, 0.41], [0.0, 0.0]], [300, 1], bonus=(0.1,), tau_days=(1e12,), threshold=(0.49,))
    assert row.margin_h == pytest.approx(0.02) and row.injected_hit == 2


def test_bonus_zero_is_raw_order():
    row = one([[0.50, 0.49], [0.3, 0.2]], [30, 0], bonus=(0.0,), threshold=(0.45,), inject=(1,))
    assert row.stale_injected == 1 and not row.cur_pass and row.margin_h == pytest.approx(0.04)


@pytest.mark.parametrize(
    ("text", "integer", "want"),
    [
        ("0:0.1:0.05", False, (0.0, 0.05, 0.1)),
        ("0.40:0.50:0.005", False, tuple(round(0.4 + 0.005 * i, 12) for i in range(21))),
        ("0.03,0.05", False, (0.03, 0.05)),
        ("14", False, (14.0,)),
        ("4:8:2", True, (4, 6, 8)),
    ],
)
def test_parse_axis(text, integer, want):
    assert parse_axis(text, "x", integer) == want


@pytest.mark.parametrize(
    ("text", "integer", "message"),
    [
        ("0:0.1", False, "--x: '0:0.1' is not start:stop:step (stop included), a comma list or a number"),
        ("a,b", False, "--x: 'a,b' is not start:stop:step (stop included), a comma list or a number"),
        ("1:0:0.1", False, "--x: '1:0:0.1' needs step > 0 and stop >= start"),
        ("0:1:0", False, "--x: '0:1:0' needs step > 0 and stop >= start"),
        ("2.5", True, "--x: '2.5' is not start:stop:step (stop included), a comma list or an integer"),
    ],
)
def test_parse_axis_errors(text, integer, message):
    with pytest.raises(ValueError) as e:
        parse_axis(text, "x", integer)
    assert str(e.value) == message


@pytest.mark.parametrize(
    ("axes", "message"),
    [
        ({"tau_days": (0.0,)}, "tau_days: expected a finite number > 0, got 0"),
        ({"bonus": (-0.1,)}, "bonus: expected a finite number >= 0, got -0.1"),
        ({"candidates": (0,)}, "candidates: expected an integer in [1, 2147483647], got 0"),
        ({"threshold": ()}, "threshold: the axis has no values"),
    ],
)
def test_bad_grids(axes, message):
    with pytest.raises(ValueError) as e:
        Grid(**axes)
    assert str(e.value) == message


def test_a_choice_on_the_edge_of_an_axis_is_named():
    grid = Grid(bonus=(0.0, 0.1, 0.2), tau_days=(1.0, 2.0), threshold=(0.3,), candidates=(8,), inject=(1, 3))
    # bonus at its top, tau at its bottom: both named; a one-value axis is no edge, bonus 0 a floor
    assert grid.edges({"bonus": 0.2, "tau_days": 1.0, "threshold": 0.3, "candidates": 8, "inject": 3}) == [
        ("bonus", "highest", 0.2),
        ("tau_days", "lowest", 1.0),
        ("inject", "highest", 3.0),
    ]
    # with bonus 0 every tau gives the same finals: tau on its edge is no reason to widen it
    assert grid.edges({"bonus": 0.0, "tau_days": 2.0, "inject": 1}) == [("inject", "lowest", 1.0)]
    assert grid.edges({"bonus": 0.1, "tau_days": 2.0, "inject": 2}) == [("tau_days", "highest", 2.0)]


def test_sweep_warns_when_the_choice_is_on_an_edge(capsys):
    from memlab.app.cli import main

    argv = [
        "sweep",
        "--source",
        "published",
        "--bonus",
        "0:0.05:0.005",
        "--tau",
        "1:30:1",
        "--threshold",
        "0.45",
    ]
    code = main([*argv, "--select", "max-margin"])
    out, err = capsys.readouterr()
    assert code == 0
    # the largest margin wants more bonus and a longer tau than this grid holds
    assert "chosen (max-margin): decay=exp combine=add bonus=0.05 tau_days=30 " in out
    assert "injections at the choice: current 4, stale 1, wrong 4, on no-hit questions 0" in out
    assert err.splitlines() == [
        f"warning: the choice sits at the highest value of --{flag} ({value}): the best configuration may "
        "lie outside the grid; widen that axis"
        for flag, value in (("bonus", "0.05"), ("tau", "30"))
    ]
    assert main([*argv, "--select", "smallest-bonus"]) == 0
    assert capsys.readouterr().err == ""  # bonus 0.045 at tau 15: inside the grid
