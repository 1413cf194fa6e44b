"""Every study and retriever that applies the spec applies the whole spec: its final scores and
injected sets equal the one-config reference (``retrieve``) for every decay family and combine.

Scores are drawn from a coarse grid so that ties (equal raw scores, equal finals) happen often:
the tie rule is part of what must agree.
"""

from __future__ import annotations

import numpy as np
from helpers import REF, make_dataset, problem_of, score_table
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.core.grid import Grid
from memlab.core.labels import Labels
from memlab.core.spec import COMBINES, DECAYS, RetrievalSpec, age_days, retrieve
from memlab.core.sweep import sweep
from memlab.drift.memory_systems import READ_SYSTEMS, Scene, grid_columns
from memlab.retrieval.inputs import build_inputs
from memlab.retrieval.retrievers import RETRIEVERS
from memlab.studies.calibration import probe_best
from memlab.studies.hybrid import RetrieverGrid, per_question
from memlab.studies.robustness import robustness
from memlab.studies.scale import TopK, block_outcomes, own_best_final

FAMILIES = [(d, c) for d in DECAYS for c in COMBINES]


@st.composite
def cases(draw):
    n_q, n_m = draw(st.integers(2, 4)), draw(st.integers(1, 14))
    # raw on a grid of 1/8 (ties, and exact in float32 as the scale study computes), ages whole
    # days over two months
    raw = np.array(draw(st.lists(st.integers(-2, 7), min_size=n_q * n_m, max_size=n_q * n_m)), float)
    raw = raw.reshape(n_q, n_m) / 8
    ages = np.array(draw(st.lists(st.integers(0, 60), min_size=n_m, max_size=n_m)), float)
    decay, combine = draw(st.sampled_from(FAMILIES))
    spec = RetrievalSpec(
        candidates=draw(st.integers(1, 6)),
        inject=draw(st.integers(1, 4)),
        threshold=draw(st.sampled_from([0.25, 0.375, 0.5, 0.625, 0.75])),
        bonus=draw(st.sampled_from([0.0, 0.0625, 0.125, 0.25])),
        tau_days=draw(st.sampled_from([1.0, 7.0, 14.0, 45.0])),
        decay=decay,
        combine=combine,
    )
    return raw, ages, spec


def reference(raw, ages, spec):
    ids = tuple(str(i) for i in range(raw.shape[1]))
    return [retrieve(raw[q], ages, ids, spec) for q in range(raw.shape[0])]


@settings(max_examples=150, deadline=None)
@given(cases())
def test_scale_and_calibration_see_what_the_reference_puts_first(case):
    raw, ages, spec = case
    ref = reference(raw, ages, spec)
    best = np.array([r[0].final if r else -np.inf for r in ref])
    # the scale study: own candidates, a running top-k over chunks, a block's outcome
    own = np.array([own_best_final(raw[q], ages, spec) for q in range(len(raw))])
    np.testing.assert_array_equal(own, best)
    queries = np.eye(raw.shape[0], raw.shape[0] + raw.shape[1])  # unit vectors whose dot is raw
    docs = np.concatenate([raw, np.zeros((raw.shape[1], raw.shape[1]))]).T  # raw as cosines
    for chunk in (1, 3, raw.shape[1]):
        top = TopK(queries, spec.candidates)
        for s in range(0, raw.shape[1], chunk):
            top.add(docs[s : s + chunk], ages[s : s + chunk])
        np.testing.assert_allclose(top.best_final(spec), best, rtol=0, atol=1e-6)
    outcomes = block_outcomes(
        np.tile(queries, 1), np.tile(docs, (10, 1)), np.tile(ages, 10), spec, raw.shape[1]
    )
    np.testing.assert_allclose(outcomes[:, 0], best, rtol=0, atol=1e-6)
    # calibration: each probe's best, and which memory scored it (the re-sort's first)
    got = probe_best(queries, docs, ages, spec, chunk=2)
    np.testing.assert_allclose(got.final, best, rtol=0, atol=1e-6)
    first = [r[0].index if r else -1 for r in ref]
    assert got.memory.tolist() == first


@settings(max_examples=150, deadline=None)
@given(cases())
def test_the_drift_recency_read_system_injects_what_the_reference_injects(case):
    raw, ages, spec = case
    m = raw.shape[1]
    later = np.triu(np.ones((m, m), dtype=bool), k=1)
    scene = Scene(
        cosine=raw,
        visible=np.ones(m, dtype=bool),
        now=0.0,
        created=-ages,
        position=np.arange(m),
        half_life=np.ones(m),
        prior=np.ones(m),
        newer_same_key=later,
        newer_same_type=later,
        memory_cosine=np.eye(m),
        last_access=np.zeros((1, 1, m)),
    )
    cfg = {
        k: getattr(spec, k)
        for k in ("candidates", "inject", "threshold", "bonus", "tau_days", "decay", "combine")
    }
    scores = READ_SYSTEMS["recency-spec"].score(scene, grid_columns([cfg])).reshape(len(raw), m)
    for q, r in enumerate(reference(raw, ages, spec)):
        injected = {c.index: c.final for c in r if c.injected}
        assert set(np.flatnonzero(np.isfinite(scores[q]))) == set(injected)
        for i, final in injected.items():
            assert scores[q, i] == final


@settings(max_examples=60, deadline=None)
@given(cases(), st.data())
def test_robustness_and_the_decay_retriever_read_the_whole_spec(case, data):
    raw, ages, spec = case
    n_q, n_m = raw.shape
    kinds = data.draw(st.lists(st.sampled_from(["hit", "nohit"]), min_size=n_q, max_size=n_q))
    current = [data.draw(st.integers(0, n_m - 1)) if k == "hit" else -1 for k in kinds]
    dataset = make_dataset((ages * 86400).astype(int), kinds, current, [[] for _ in kinds])
    ages = age_days(dataset.memory_dates(), REF)
    ref = reference(raw, ages, spec)
    # robustness: the full-data row is the reference's verdict and headroom
    row = robustness(problem_of(dataset, spec, raw), n_boot=1, seed=0).iloc[0]
    nohit = [r[0].final for r, k in zip(ref, kinds, strict=True) if k == "nohit" and r]
    if nohit:
        assert abs(row["headroom"] - (spec.threshold - max(nohit))) < 1e-12
    reaches = all(
        any(c.index == cur and c.reaches for c in r) for r, cur in zip(ref, current, strict=True) if cur >= 0
    )
    quiet = all(not r or r[0].final < spec.threshold for r, k in zip(ref, kinds, strict=True) if k == "nohit")
    assert bool(row["feasible"]) == (reaches and quiet)
    # the hybrid comparison's vector-decay retriever at this spec injects the reference's memories
    inputs = build_inputs(dataset, score_table(dataset, raw).raw, keyword=False)
    grid = RetrieverGrid(
        bonus=(spec.bonus,),
        tau_days=(spec.tau_days,),
        decay=(spec.decay,),
        combine=(spec.combine,),
        candidates=spec.candidates,
        inject=spec.inject,
    )
    long = per_question(RETRIEVERS["vector-decay"], inputs, {**spec.as_dict(), "norm": None}, grid)
    for q, r in enumerate(ref):
        assert int(long["injected"].iloc[q]) == sum(c.injected for c in r)
    # and the sweep at the spec's one configuration agrees (the grid of one spec)
    swept = sweep(raw, ages, Labels.from_dataset(dataset), Grid.of(spec), long=True)
    for q, r in enumerate(ref):
        slots = [
            int(swept[f"slot_{j + 1}"].iloc[q])
            for j in range(min(spec.inject, n_m))
            if f"slot_{j + 1}" in swept
        ]
        assert [s for s in slots if s >= 0] == [c.index for c in r if c.injected]
