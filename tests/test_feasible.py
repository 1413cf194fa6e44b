"""The exact feasible bonus region agrees with a dense grid of the sweep."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import portion as P
import pytest
from helpers import criteria_for, make_dataset
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.core.criteria import SEED_CRITERIA, Criterion
from memlab.core.feasible import Lines, feasible_bonus, intervals_json, intervals_text, rank_below
from memlab.core.grid import Grid
from memlab.core.labels import Labels
from memlab.core.spec import COMBINES, DECAYS, RetrievalSpec, age_days
from memlab.core.sweep import sweep

DENSE = tuple(np.round(np.linspace(0.0, 0.3, 3001), 12).tolist())  # step 1e-4


def agree_on_dense_grid(raw, ages, labels, criteria, spec: RetrievalSpec):
    region = feasible_bonus(raw, ages, labels, criteria, spec=spec)
    grid = replace(Grid.of(spec), bonus=DENSE)
    feasible = sweep(raw, ages, labels, grid, criteria)["feasible"].to_numpy()
    ends = [float(e) for a in ([] if region.empty else region) for e in (a.lower, a.upper) if e != P.inf]
    checked = 0
    for b, ok in zip(DENSE, feasible, strict=True):
        # every grid point, endpoints included: the ends are snapped to the floats where the
        # reference's own comparisons flip
        assert (b in region) == ok, (b, intervals_text(region), ends)
        checked += 1
    return region, checked


@pytest.mark.parametrize("tau", [1.0, 7.0, 14.0, 30.0, 60.0])
@pytest.mark.parametrize("threshold", [0.43, 0.45, 0.47])
def test_seed_region_matches_dense_grid(seed, published, tau, threshold):
    ages = age_days(seed.memory_dates(), seed.reference_date)
    crits = (
        *SEED_CRITERIA,
        Criterion("d", "current_injected", "H2"),
        Criterion("e", "current_injected", "C1"),
    )
    for criteria, inject in ((SEED_CRITERIA, 3), (crits, 3), (crits, 2)):
        agree_on_dense_grid(
            published.raw,
            ages,
            Labels.from_dataset(seed),
            criteria,
            RetrievalSpec(tau_days=tau, threshold=threshold, inject=inject),
        )


def test_seed_region_at_14_days_by_hand(seed, published):
    """Worked on paper: (c) needs 0.408 + b*exp(-1/14) >= 0.45; (a) needs 0.404 + b*exp(-7/14) < 0.45."""
    ages = age_days(seed.memory_dates(), seed.reference_date)
    region = feasible_bonus(
        published.raw,
        ages,
        Labels.from_dataset(seed),
        SEED_CRITERIA,
        spec=RetrievalSpec(tau_days=14, threshold=0.45),
    )
    lo = (0.45 - 0.408) / np.exp(-1 / 14)
    hi = (0.45 - 0.404) / np.exp(-7 / 14)
    (part,) = list(region)
    assert (part.left, part.right) == (P.CLOSED, P.OPEN)
    # the ends sit within a few ulps of the closed forms, where the float comparisons flip
    assert abs(part.lower - lo) < 1e-15 and abs(part.upper - hi) < 1e-15
    assert intervals_text(region) == "[0.0451097, 0.0758412)"
    assert intervals_json(region)["closed"] == [[True, False]]
    assert 0.05 in region and 0.04 not in region


def test_rank_breakpoints_closed_and_open_ends():
    # c (position 1) starts 0.25 below p (position 0) and gains 0.5 per unit of bonus:
    # they cross at b = 0.5; on the tie p keeps the lead (earlier in candidate order)
    lines = Lines(np.array([0, 1]), np.array([0.5, 0.25]), np.array([0.0, 0.5]))
    c_first, p_first = rank_below(lines, 1, 1), rank_below(lines, 0, 1)
    # membership is the reference's own float comparison, ulp by ulp around the crossing
    b = float(np.nextafter(0.5, 0))
    for _ in range(6):
        fp, fc = 0.5 + b * 0.0, 0.25 + b * 0.5
        assert (b in c_first) == (fc > fp) and (b in p_first) == (fp >= fc), b
        b = float(np.nextafter(b, 1))
    assert 0.5 in p_first and 0.5 not in c_first and 10.0 in c_first and -10.0 in p_first
    # the sweep agrees exactly at a crossing: weights 0 and 1 cross at b = 0.25, a tie p keeps
    labels = Labels(("q",), ("hit",), np.array([1]), ((),))
    ages = np.array([1e9, 0.0])  # weights exp(-1e9/tau) = 0 and exp(0) = 1
    grid = Grid(bonus=(0.25, 0.5, 0.75), tau_days=(1.0,), threshold=(0.0,), candidates=(2,), inject=(1,))
    crit_c = (Criterion("c", "current_injected", "q"),)
    got = sweep(np.array([[0.5, 0.25]]), ages, labels, grid, crit_c)["c_pass"].tolist()
    assert got == [False, True, True]
    region = feasible_bonus(
        np.array([[0.5, 0.25]]),
        ages,
        labels,
        crit_c,
        spec=RetrievalSpec(tau_days=1.0, threshold=0.0, candidates=2, inject=1),
    )
    b = float(np.nextafter(0.25, 0))
    for _ in range(6):  # c first exactly where 0.25 + b * 1 > 0.5 + b * 0 in floats
        assert (b in region) == (0.25 + b * 1.0 > 0.5 + b * 0.0), b
        b = float(np.nextafter(b, 1))


@st.composite
def random_cases(draw):
    n_m, n_q = draw(st.integers(2, 8)), draw(st.integers(1, 4))
    raw = np.array(
        draw(
            st.lists(
                # negative raw cosines too: under mult their bonus slope raw * w is negative
                st.lists(st.floats(-0.3, 0.6).map(lambda v: round(v, 3)), min_size=n_m, max_size=n_m),
                min_size=n_q,
                max_size=n_q,
            )
        )
    )
    ages = draw(st.lists(st.integers(0, 40 * 86400), min_size=n_m, max_size=n_m))
    kinds = draw(st.lists(st.sampled_from(["hit", "contradiction", "nohit"]), min_size=n_q, max_size=n_q))
    current = [draw(st.integers(0, n_m - 1)) if k != "nohit" else -1 for k in kinds]
    stale = [
        tuple(
            draw(
                st.lists(
                    st.sampled_from([m for m in range(n_m) if m != c]), min_size=1, max_size=2, unique=True
                )
            )
        )
        if k == "contradiction"
        else ()
        for k, c in zip(kinds, current, strict=True)
    ]
    dataset = make_dataset(ages, kinds, current, stale)
    tau = draw(st.sampled_from([0.5, 3.0, 14.0, 45.0]))
    thr = draw(st.sampled_from([-0.1, 0.3, 0.45, 0.55]))
    family = draw(st.sampled_from(list(DECAYS))), draw(st.sampled_from(list(COMBINES)))
    return dataset, raw, tau, thr, draw(st.integers(1, n_m)), draw(st.integers(1, 3)), family


@pytest.mark.slow
@settings(max_examples=180, deadline=None, derandomize=True)
@given(random_cases())
def test_random_regions_match_dense_grid(case):
    """Every decay family and both combines: the closed form holds point by point on the grid."""
    dataset, raw, tau, thr, candidates, inject, (decay, combine) = case
    ages = age_days(dataset.memory_dates(), dataset.reference_date)
    _, checked = agree_on_dense_grid(
        raw,
        ages,
        Labels.from_dataset(dataset),
        criteria_for(dataset),
        RetrievalSpec(
            tau_days=tau, threshold=thr, candidates=candidates, inject=inject, decay=decay, combine=combine
        ),
    )
    assert checked > 2900


def test_mult_region_by_hand():
    """mult: final = raw * (1 + b w). A no-hit candidate at raw -0.2 only falls as b grows; the
    one at raw 0.4, age 0 (w = 1) reaches 0.5 at b = 0.25, so (a) holds on [0, 0.25)."""
    labels = Labels(("q",), ("nohit",), np.array([-1]), ((),))
    raw = np.array([[0.4, -0.2]])
    region = feasible_bonus(
        raw,
        np.array([0.0, 0.0]),
        labels,
        (Criterion("a", "nohit_below"),),
        spec=RetrievalSpec(tau_days=1.0, threshold=0.5, candidates=2, combine="mult"),
    )
    (part,) = list(region)
    assert (part.lower, part.left, part.right) == (0, P.CLOSED, P.OPEN)
    assert part.upper == pytest.approx(0.25, abs=1e-15)
    assert 0.4 * (1 + float(np.nextafter(part.upper, 0))) < 0.5 <= 0.4 * (1 + part.upper)
    # a negative threshold: the raw -0.2 memory stays below -0.1 for every bonus; the 0.4 one never does
    assert feasible_bonus(
        raw,
        np.array([0.0, 0.0]),
        labels,
        (Criterion("a", "nohit_below"),),
        spec=RetrievalSpec(tau_days=1.0, threshold=-0.1, candidates=2, combine="mult"),
    ).empty


def test_kind_without_closed_form_is_named(seed, published):
    from memlab.core import feasible

    ages = age_days(seed.memory_dates(), seed.reference_date)
    saved = feasible.REGIONS.pop("current_injected")
    try:
        with pytest.raises(ValueError) as e:
            feasible_bonus(
                published.raw,
                ages,
                Labels.from_dataset(seed),
                (Criterion("d", "current_injected", "H2"),),
                spec=RetrievalSpec(tau_days=14, threshold=0.45),
            )
    finally:
        feasible.REGIONS["current_injected"] = saved
    assert str(e.value) == (
        "criterion 'd': no closed-form region: unknown criterion kind 'current_injected'; available: nohit_below, current_reaches, no_stale_injected, current_above_stale"
    )
