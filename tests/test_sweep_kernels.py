"""The sweep's chunk kernels: numba's (memlab.core.sweep_kernels) equal numpy's
(memlab.core.sweep_facts) value for value, the per-configuration shortcuts of SweepSummary equal
the plain reductions of every field laid out per configuration and question, and a whole sweep
through the compiled kernels equals one through numpy's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sweep import cases

from memlab.core import sweep_facts as F
from memlab.core.criteria import QuestionSummary
from memlab.core.labels import Labels
from memlab.core.ranking import placed_before, resort_order
from memlab.core.sweep import sweep

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
LATTICE = st.integers(-4, 4).map(lambda v: v / 4)  # coarse: finals and thresholds tie often


def equal(a: np.ndarray, b: np.ndarray) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)  # NaN equals NaN here; values bit for bit


@st.composite
def finals(draw):
    n_p, n_q, n = draw(st.integers(1, 6)), draw(st.integers(1, 4)), draw(st.integers(1, 5))
    final = np.array(draw(st.lists(LATTICE, min_size=n_p * n_q * n, max_size=n_p * n_q * n))).reshape(
        n_p, n_q, n
    )
    n_known = draw(st.lists(st.integers(0, n_p), min_size=n_q, max_size=n_q))  # known positions come first
    known = np.arange(n_p)[:, None] < np.array(n_known)[None, :]
    final = np.where(known[:, :, None], final, np.nan)
    k_vals = np.array(draw(st.lists(st.integers(1, n_p + 2), min_size=1, max_size=3)))
    n_top = draw(st.integers(0, n_p))
    n_l = draw(st.integers(0, 5))
    tq = np.array(draw(st.lists(st.integers(0, n_q - 1), min_size=n_l, max_size=n_l)), dtype=np.int64)
    tpos = np.array(draw(st.lists(st.integers(-1, n_p - 1), min_size=n_l, max_size=n_l)), dtype=np.int64)
    return final, known, k_vals, n_top, tq, tpos


@PROPERTY
@given(finals())
def test_compiled_pair_facts_equal_numpys(case):
    want = F.NumpyKernels.pair_facts(*case)
    got = F.CompiledKernels.pair_facts(*case)
    for a, b in zip((want.tops, want.t_final, want.t_rank), (got.tops, got.t_final, got.t_rank), strict=True):
        equal(a, b)


@st.composite
def counted(draw):
    case = draw(finals())
    facts = F.NumpyKernels.pair_facts(*case)
    n_q, n_l1 = facts.tops.shape[2], facts.t_final.shape[2]
    n_g = draw(st.integers(1, 4))
    signs = st.sampled_from([-1, 0, 0, 1])
    wq = np.array(draw(st.lists(signs, min_size=n_g * n_q, max_size=n_g * n_q)), dtype=np.int64).reshape(
        n_g, n_q
    )
    wl = np.array(draw(st.lists(signs, min_size=n_g * n_l1, max_size=n_g * n_l1)), dtype=np.int64).reshape(
        n_g, n_l1
    )
    wl[:, -1] = 0  # the empty memory counts in no group
    thresholds = F.Thresholds.of(
        np.array(draw(st.lists(LATTICE, min_size=1, max_size=5)))
    )  # any order, repeats
    inject = np.array(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    return facts, wq, wl, thresholds, inject


@PROPERTY
@given(counted())
def test_compiled_counts_equal_numpys_and_the_plain_count(case):
    facts, wq, wl, thresholds, inject = case
    got = F.CompiledKernels.count(facts, wq, wl, thresholds, inject)
    equal(got, F.NumpyKernels.count(facts, wq, wl, thresholds, inject))
    # plainly: per configuration, min(inject, tops reaching the threshold) and each tracked
    # memory reaching it while placed below inject, weighted
    thr = thresholds.values[None, :, None, None, None]
    reach = (facts.tops[:, None, :, None] >= thr[..., None]).sum(axis=-1)  # (n, H, K, 1, Q)
    per_q = np.minimum(reach, inject[None, None, None, :, None])
    tracked = (facts.t_final[:, None, :, None] >= thr) & (facts.t_rank[:, None, :, None] < inject[:, None])
    plain = np.einsum("nhkiq,gq->gnhki", per_q, wq) + np.einsum(
        "nhkil,gl->gnhki", tracked.astype(np.int64), wl
    )
    assert got.dtype == np.int32  # counts this small fit in half the bytes (count_dtype)
    equal(got, plain.astype(np.int32))


@st.composite
def tracked_groups(draw):
    """Pair facts with, per question, some of its tracked memories as its relevant ones and as its
    stale ones (padded with the empty memory), and which questions are no-hit ones."""
    case = draw(finals())
    facts = F.NumpyKernels.pair_facts(*case)
    tq = case[4]
    n_q, empty = facts.tops.shape[2], facts.t_final.shape[2] - 1
    mine = [[li for li in range(len(tq)) if tq[li] == q] for q in range(n_q)]
    relevant = tuple(tuple(draw(st.lists(st.sampled_from(m), unique=True))) if m else () for m in mine)
    stale_of = [draw(st.lists(st.sampled_from(m), unique=True)) if m else [] for m in mine]
    width = max(1, *(len(x) for x in stale_of))
    stale = np.array([x + [empty] * (width - len(x)) for x in stale_of], dtype=np.int64)
    current = np.array([draw(st.sampled_from(m)) if m and draw(st.booleans()) else empty for m in mine])
    nohit = np.array(draw(st.lists(st.booleans(), min_size=n_q, max_size=n_q)))
    thresholds = F.Thresholds.of(np.array(draw(st.lists(LATTICE, min_size=1, max_size=5))))
    inject = np.array(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    return facts, relevant, stale, current, nohit, thresholds, inject


@PROPERTY
@given(tracked_groups())
def test_compiled_answered_counts_equal_numpys_and_the_plain_count(case):
    facts, relevant, _, _, nohit, thresholds, inject = case
    got = F.CompiledKernels.answered(facts, relevant, nohit, thresholds, inject)
    equal(got, F.NumpyKernels.answered(facts, relevant, nohit, thresholds, inject))
    # plainly, configuration by configuration: a memory is injected when its final reaches the
    # threshold and its place is below inject
    n, n_k, _ = facts.t_final.shape
    plain = np.zeros_like(got)
    for pair, h, k, i in np.ndindex(n, len(thresholds.values), n_k, len(inject)):
        thr, inj = thresholds.values[h], inject[i]

        def injected_(li, pair=pair, k=k, thr=thr, inj=inj):
            return bool(facts.t_final[pair, k, li] >= thr and facts.t_rank[pair, k, li] < inj)

        flags = [[injected_(li) for li in r] for r in relevant if r]
        plain[0, pair, h, k, i] = sum(any(f) for f in flags)
        plain[1, pair, h, k, i] = sum(all(f) for f in flags)
        tops = facts.tops[pair, k, :, 0] if facts.tops.shape[-1] else np.full(len(nohit), -np.inf)
        plain[2, pair, h, k, i] = int(np.sum(nohit & (tops >= thr)))
    equal(got, plain)


@PROPERTY
@given(tracked_groups())
def test_compiled_question_facts_equal_numpys(case):
    facts, _, stale, current, _, _, _ = case
    want = F.NumpyKernels.question_facts(facts, current, stale)
    got = F.CompiledKernels.question_facts(facts, current, stale)
    for a, b in zip(want, got, strict=True):
        equal(a, b)
    # the best stale memory is the one placed first: no listed stale memory is placed before it
    rank = facts.t_rank[:, :, stale].transpose(2, 0, 1, 3)  # (Q, n, K, S)
    assert (got[4][..., None] <= rank).all()


@st.composite
def summaries(draw):
    n, n_k, n_q = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 4))
    size = n * n_k * n_q

    def finals_() -> np.ndarray:
        return np.array(draw(st.lists(st.one_of(st.just(np.nan), LATTICE), min_size=size, max_size=size)))

    def ranks_() -> np.ndarray:
        r = st.one_of(st.just(F.NOT_CANDIDATE), st.integers(0, 4))
        return np.array(draw(st.lists(r, min_size=size, max_size=size)), dtype=np.int64)

    def shaped(a: np.ndarray) -> np.ndarray:
        return a.reshape(n_q, n, 1, n_k, 1)

    cf, rc, sf, rs = finals_(), ranks_(), finals_(), ranks_()
    rc = np.where(np.isnan(cf), F.NOT_CANDIDATE, rc)  # a memory without a final is no candidate
    rs = np.where(np.isnan(sf), F.NOT_CANDIDATE, rs)
    # a question's best stale memory and its current one never share a place; where both are
    # placed, the one placed first has the higher final (or the same)
    rs = np.where((rs == rc) & (rs != F.NOT_CANDIDATE), rs + 5, rs)
    both = (rs != F.NOT_CANDIDATE) & (rc != F.NOT_CANDIDATE)
    hi, lo = np.maximum(cf, sf), np.minimum(cf, sf)
    cf = np.where(both, np.where(rc < rs, hi, lo), cf)
    sf = np.where(both, np.where(rc < rs, lo, hi), sf)
    thresholds = F.Thresholds.of(np.array(draw(st.lists(LATTICE, min_size=1, max_size=4))))
    inject = np.array(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    has_stale = np.array(draw(st.lists(st.booleans(), min_size=n_q, max_size=n_q)))
    kernels = draw(st.sampled_from([F.NumpyKernels, F.CompiledKernels]))
    best = np.fmax(cf, sf)
    return F.SweepSummary(
        *(shaped(a) for a in (best, cf, rc)), has_stale, shaped(sf), shaped(rs), thresholds, inject, kernels
    )


@PROPERTY
@given(summaries(), st.data())
def test_the_summary_shortcuts_equal_the_plain_reductions(s, data):
    plain = QuestionSummary(
        *(s.full(f) for f in ("best_final", "current_final", "current_injected")),
        s.has_stale,
        *(s.full(f) for f in ("stale_final", "stale_injected", "stale_over_current", "stale_gap")),
    )
    shape = plain.stale_gap.shape[:-1]
    n_q = len(s.has_stale)
    cols = np.array(data.draw(st.lists(st.booleans(), min_size=n_q, max_size=n_q)))
    for field in ("best_final", "current_final", "stale_final"):
        equal(np.broadcast_to(s.max(field, cols), shape), np.broadcast_to(plain.max(field, cols), shape))
    for field in ("current_injected", "stale_injected", "stale_over_current"):
        equal(np.broadcast_to(s.any(field, cols), shape), plain.any(field, cols))
        for q in range(n_q):
            equal(np.broadcast_to(s.question(field, q), shape), plain.question(field, q))
    equal(s.min("stale_gap", cols), plain.min("stale_gap", cols))
    equal(F.NumpyKernels.min_gap(*_gap_args(s, cols)), F.CompiledKernels.min_gap(*_gap_args(s, cols)))


def _gap_args(s, cols):
    sel = np.flatnonzero(cols)

    def of(a):
        return np.ascontiguousarray(a[sel][:, :, 0, :, 0].transpose(1, 2, 0))

    return (
        of(s.stale_final),
        of(s.stale_rank),
        of(s.current_final),
        of(s.current_rank),
        s.thresholds,
        s.inject,
    )


@PROPERTY
@given(st.lists(LATTICE, min_size=1, max_size=8))
def test_placed_before_is_the_resort_order(final):
    final = np.array(final)
    raw = -np.arange(len(final), dtype=float)  # candidate order: raw descending
    order = list(range(len(final)))
    order.sort(key=lambda i: [placed_before(final[j], j, final[i], i) for j in range(len(final))].count(True))
    assert order == resort_order(raw, final).tolist()


@pytest.mark.slow
@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(cases())
def test_a_sweep_through_the_compiled_kernels_equals_one_through_numpys(monkeypatch, case):
    dataset, scores, grid = case
    labels = Labels.from_dataset(dataset)
    with monkeypatch.context() as m:
        m.setattr(F, "COMPILED_CONFIGS", 10**12)
        plain = sweep(scores.raw, dataset.ages(), labels, grid)
        plain_long = sweep(scores.raw, dataset.ages(), labels, grid, long=True)
    with monkeypatch.context() as m:
        m.setattr(F, "COMPILED_CONFIGS", 0)
        compiled = sweep(scores.raw, dataset.ages(), labels, grid)
        compiled_long = sweep(scores.raw, dataset.ages(), labels, grid, long=True)
    pd.testing.assert_frame_equal(plain, compiled)
    pd.testing.assert_frame_equal(plain_long, compiled_long)


def test_the_compiled_kernels_are_only_for_large_sweeps():
    assert F.kernels(F.COMPILED_CONFIGS - 1) is F.NumpyKernels
    assert F.kernels(F.COMPILED_CONFIGS) is F.CompiledKernels


def test_reaching_counts_equal_one_comparison_per_threshold():
    """The answered metric's histogram count, against comparing every value with every threshold,
    for thresholds in ascending, descending and mixed order, with NaN and -inf values."""
    from memlab.core.sweep_facts import Thresholds, reaching

    rng = np.random.default_rng(0)
    for trial in range(60):
        g, n, k, i, h = (int(x) for x in rng.integers(1, 5, 5))
        values = rng.choice([0.1, 0.2, 0.25, 0.3, np.nan, -np.inf], size=(g, n, k, i))
        thr = rng.choice([0.1, 0.15, 0.2, 0.25, 0.3], size=h)
        thr = np.sort(thr) if trial % 3 == 0 else (np.sort(thr)[::-1] if trial % 3 == 1 else thr)
        with np.errstate(invalid="ignore"):
            want = (values[:, :, None] >= thr[None, None, :, None, None]).sum(axis=0)
        np.testing.assert_array_equal(reaching(values, Thresholds.of(thr)), want)
