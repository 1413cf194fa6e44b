"""The int8 screen of ``memlab explain`` (memlab.tuning.explain_screen): a screened replay is the
whole-product replay, field for field and in its document, on stores with exact ties, scores
near the thresholds, random 384-d vectors, and with a cap small enough to force the fallback.

On random vectors the screen's rescoring has the bits of a BLAS whose gemm kernel sums each entry
as one FMA after another (OpenBLAS's SkylakeX kernel); with another kernel (OPENBLAS_CORETYPE=Haswell
splits the sum) the replay's check refuses the screen on its first block. Which of the two happens
is held against the BLAS's own product, and the screen itself against the FMA product whatever
the BLAS."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import memlab.tuning.explain as explain_module
from memlab.core.ranking_kernels import visible_top_k
from memlab.core.screen_kernels import fma_dot, quantize, screen_margin
from memlab.tuning.explain import FIELDS, replay
from memlab.tuning.explain_screen import Screen
from memlab.tuning.explain_summary import explain_document
from tests.test_explain_kernel import tie_store


def assert_same(a, b) -> None:
    for x_run, y_run in zip(a.runs, b.runs, strict=True):
        for name in FIELDS:
            attr = {"last": "last_raw", "next": "next_raw"}.get(name, name)
            x, y = getattr(x_run, attr), getattr(y_run, attr)
            if name == "index":  # a slot past the last candidate holds no memory
                x, y = np.where(x_run.valid, x, -1), np.where(y_run.valid, y, -1)
            assert np.array_equal(x, y, equal_nan=True), (x_run.label, name)
    assert a.visible.tolist() == b.visible.tolist()
    assert a.filtered.tolist() == b.filtered.tolist()

    def watched(rep):
        return [[(p, None if np.isnan(v) else v) for p, v in sorted(w.items())] for w in rep.watched]

    assert watched(a) == watched(b)
    assert explain_document(a) == explain_document(b)


def random_store(seed: int, dim: int = 384, n_mem: int = 300, n_q: int = 64, near: float = 0.0):
    """tie_store's dates and specs with random unit vectors of ``dim`` dimensions; ``near`` > 0:
    each query is a memory nudged so that its top score sits at about the spec's threshold."""
    problem, log, others, _ = tie_store(seed, n_mem=n_mem, n_q=n_q)
    rng = np.random.default_rng(100 + seed)
    mem = rng.standard_normal((n_mem, dim)).astype(np.float32)
    mem /= np.linalg.norm(mem, axis=1, keepdims=True)
    qv = rng.standard_normal((n_q, dim)).astype(np.float32)
    if near:
        noise = qv / np.linalg.norm(qv, axis=1, keepdims=True)
        base = mem[rng.integers(0, n_mem, n_q)]
        qv = near * base + np.sqrt(1 - near**2) * noise
    qv = (qv / np.linalg.norm(qv, axis=1, keepdims=True)).astype(np.float32)
    queries = tuple(replace(q, vector=qv[j]) for j, q in enumerate(log.queries))
    return problem, replace(log, queries=queries), others, mem


def fma_product(queries: np.ndarray, memories: np.ndarray) -> np.ndarray:
    """Every score summed as the screen's rescoring sums it (``fma_dot``), whatever the BLAS."""
    return np.array([[fma_dot(q, m) for m in memories] for q in queries], dtype=np.float32)


def blas_sums_by_fma(log, mem, batch: int = 16) -> bool:
    """Whether this BLAS gives the first block's product the bits of ``fma_product`` (the replay
    normalises the memories as here)."""
    unit = mem / np.linalg.norm(mem, axis=1, keepdims=True)
    block = np.array([q.vector for q in log.queries[:batch]], dtype=np.float32)
    return np.array_equal(block @ unit.T, fma_product(block, unit))


def assert_screened_where_the_bits_agree(got, log, mem) -> None:
    if blas_sums_by_fma(log, mem):
        assert got.screened > 0  # not vacuous: blocks went through the screen
        assert got.screen_stop == ""
    else:  # refused on its first block, by the check: the product from there
        assert got.screened == 0
        assert got.screen_stop == "bits"


def both(problem, log, others, mem, **screen):
    kw = dict(memory_vectors=mem, batch=16, watch=["m3"])
    return replay(problem, log, others, **kw, screen=True, **screen), replay(
        problem, log, others, **kw, screen=False
    )


@pytest.mark.parametrize("seed", range(3))
def test_screened_replay_with_exact_ties_is_the_whole_product_replay(seed):
    got, want = both(*tie_store(seed, n_mem=200, n_q=64))
    assert got.screened > 0  # not vacuous: blocks went through the screen
    assert want.screened == 0
    assert_same(got, want)


@pytest.mark.parametrize("near", [0.0, 0.4, 0.5])
def test_screened_replay_of_random_vectors_is_the_whole_product_replay(near):
    # near 0.4 / 0.5: the best scores sit at the specs' thresholds (0.4, 0.5), where a
    # one-ulp difference would flip valid/injected
    problem, log, others, mem = random_store(1, near=near)
    got, want = both(problem, log, others, mem)
    assert_screened_where_the_bits_agree(got, log, mem)
    assert_same(got, want)


@pytest.mark.parametrize("near", [0.0, 0.4])
def test_the_screen_keeps_the_top_k_of_the_fma_product_whatever_the_blas(near):
    problem, log, _, mem = random_store(2, n_q=16, near=near)
    unit = mem / np.linalg.norm(mem, axis=1, keepdims=True)
    queries = np.array([q.vector for q in log.queries], dtype=np.float32)
    dates = problem.dataset.memory_dates().astype("datetime64[s]").astype(np.int64)
    times = np.array([q.time.timestamp() for q in log.queries], dtype=np.int64)
    screen = Screen(unit, dates, 11)
    idx, val = screen.top_k(queries, times)
    want_idx, want_val, _ = visible_top_k(fma_product(queries, unit), dates, times, 11)
    assert screen.screened == 1 and 0 < screen.rescored < len(unit) * len(queries)  # it narrowed
    assert np.array_equal(idx, want_idx)
    assert np.array_equal(val, want_val, equal_nan=True)


class FakeClock:
    """``time`` for memlab.tuning.explain: ``process_time`` steps through ``ticks``."""

    def __init__(self, ticks):
        self.ticks = iter(ticks)

    def process_time(self):
        return next(self.ticks)


@pytest.mark.parametrize(
    ("blocks", "screened", "stop"),
    [
        # (screened, whole) CPU seconds of the three timed blocks: their sums decide, not the last
        ([(5, 1), (5, 1), (1, 2)], 4, "slower"),
        ([(1, 5), (1, 5), (2, 1)], 5, ""),
    ],
)
def test_on_auto_the_screen_is_kept_only_while_it_beats_the_product(monkeypatch, blocks, screened, stop):
    # exact ties (any summation order gives the same bits): the check passes, the clock decides;
    # the first block is timed but not counted (the kernels loading: 50 s screened), the next
    # RACE (3) decide by their sums; five full blocks of 16
    problem, log, others, mem = tie_store(0, n_mem=200, n_q=80)
    monkeypatch.setattr(explain_module, "MIN_MEMORIES", 0)  # screen=None screens this small store
    monkeypatch.setattr(explain_module, "RACE", 3)  # the race is off by default
    ticks = [0, 50, 51]
    for i, (s, w) in enumerate(blocks):
        ticks += [100 * (i + 1), 100 * (i + 1) + s, 100 * (i + 1) + s + w]
    ticks += [1000]  # the fifth block, when still screened
    monkeypatch.setattr(explain_module, "time", FakeClock(ticks))
    got = replay(problem, log, others, memory_vectors=mem, batch=16, watch=["m3"])
    want = replay(problem, log, others, memory_vectors=mem, batch=16, watch=["m3"], screen=False)
    assert (got.screened, got.screen_stop) == (screened, stop)
    assert_same(got, want)


def test_a_small_cap_falls_back_to_the_whole_product():
    problem, log, others, mem = tie_store(0, n_mem=200, n_q=64)
    got, want = both(problem, log, others, mem, screen_cap=2)  # ties keep more than two per row
    assert got.screened == 0
    assert_same(got, want)
    assert got.screen_fallbacks == 4  # each of the four full blocks tried, and scored whole
    roomy, _ = both(problem, log, others, mem, screen_cap=200)
    assert roomy.screened == 4  # the four full blocks of 16
    assert roomy.screen_fallbacks == 0


def test_the_margin_bounds_the_screen_error_on_paper():
    # a vector quantised exactly (entries multiples of the scale): no quantisation error, and
    # the margin is then only float32's rounding term, 2 * gamma * |q| |m| (plus slack)
    x = np.array([[127.0, -64.0, 0.0, 1.0]], dtype=np.float32) / 128  # scale 1/128: exact
    q, scale, norm, err = quantize(x)
    assert scale[0] == 1 / 128
    assert q.tolist() == [[127, -64, 0, 1]]
    assert err[0] == 0.0
    margin = screen_margin(norm, err, float(norm[0]), 0.0, 4)
    gamma = 4 * 2.0**-24 / (1 - 4 * 2.0**-24)
    assert margin[0] == pytest.approx(2 * gamma * norm[0] ** 2, rel=1e-6, abs=3e-12)
