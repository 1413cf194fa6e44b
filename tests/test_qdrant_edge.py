"""The real engine (qdrant-edge-py: Qdrant's own segment and shard crates, in-process) runs every
query memlab exports, and injects what memlab's reference and local mode inject.

The spec is run as the very JSON ``memlab spec`` prints (``spec_query_json``), placeholders
filled the way a caller fills them, converted to engine objects in one place
(``memlab.qdrant.edge``). Ids and scores agree to 1e-6 (the engine returns float32); tie groups
are compared as sets, since the engine orders and cuts ties its own way.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import numpy as np
import pytest
from edge_compare import TOL, Agreement, check
from helpers import REF
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlab.core.spec import COMBINES, DECAYS, RetrievalSpec, age_days, retrieve
from memlab.qdrant import edge
from memlab.qdrant.query import CollectionSchema, fill, spec_query_json
from memlab.qdrant.store import MemoryStore

pytestmark = pytest.mark.qdrant_edge

SCHEMAS = (
    CollectionSchema(),  # memlab's own: RFC 3339 dates, one unnamed vector
    CollectionSchema(date_field="created_at", date_format="epoch-s", vector_name="dense", id_field="mid"),
    CollectionSchema(date_field="ts", date_format="epoch-ms", vector_name="text"),
)


@dataclass
class World:
    """One random collection, in local mode and on the engine, with what the reference needs."""

    schema: CollectionSchema
    vecs: np.ndarray
    dates: list[datetime]
    cls: np.ndarray  # memories with the same vector and date share a class (exact ties)
    store: MemoryStore
    shard: object

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(f"m{i}" for i in range(len(self.dates)))

    def reference(self, vector, spec: RetrievalSpec, at: datetime):
        """memlab's reference: local mode's raw cosines, memories written after ``at`` invisible."""
        dates = np.array([d.replace(tzinfo=None) for d in self.dates], dtype="datetime64[s]")
        days = age_days(dates, at)
        raw = np.where(days >= 0, self.store.score_table(np.asarray([vector]))[0], np.nan)
        return retrieve(raw, np.where(days >= 0, days, np.inf), self.ids, spec)


def make_world(tmp_path, schema: CollectionSchema, seed: int, n: int = 48, dim: int = 8) -> World:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    # seconds before REF, some after it (written after the query time: never retrievable)
    offsets = rng.integers(-3 * 86400, 60 * 86400, n)
    offsets[:4] = 0  # written exactly at REF: age 0, decay exactly 1
    cls = np.arange(n)
    for a, b in ((5, 6), (7, 8), (7, 9), (10, 11)):  # twins: identical vector and date
        vecs[b], offsets[b], cls[b] = vecs[a], offsets[a], cls[a]
    offsets[12:16] = offsets[12]  # same date, different vectors
    dates = [REF - timedelta(seconds=int(s)) for s in offsets]
    store = MemoryStore(dim, schema=schema)
    ids = [f"m{i}" for i in range(n)]
    store.add(ids, vecs, dates)
    shard = edge.create_shard(tmp_path / f"shard-{seed}", dim, schema)
    edge.upsert(shard, range(n), vecs, [store.payload(ids[i], dates[i]) for i in range(n)], schema)
    return World(schema, vecs, dates, cls, store, shard)


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    root = tmp_path_factory.mktemp("edge")
    out = [make_world(root, schema, seed) for seed, schema in enumerate(SCHEMAS)]
    yield out
    for w in out:
        w.shard.close()
        w.store.client.close()


@st.composite
def spec_cases(draw):
    world = draw(st.integers(0, len(SCHEMAS) - 1))
    query_seed = draw(st.integers(0, 2**32 - 1))
    spec = RetrievalSpec(
        candidates=draw(st.integers(1, 20)),
        inject=draw(st.integers(1, 6)),
        threshold=0.0,  # set below, once the finals are known
        bonus=draw(st.one_of(st.just(0.0), st.floats(0.0, 0.6), st.sampled_from([0.05, 1.0]))),
        tau_days=draw(st.one_of(st.floats(0.2, 60.0), st.sampled_from([1.0, 14.0]))),
        decay=draw(st.sampled_from(list(DECAYS))),
        combine=draw(st.sampled_from(list(COMBINES))),
    )
    # when the question is asked: at the reference, or before it (later memories filtered out)
    asked = draw(st.one_of(st.just(0), st.integers(0, 40 * 86400)))
    threshold = draw(
        st.one_of(
            st.tuples(st.just("free"), st.floats(-0.3, 1.2)),
            st.tuples(st.just("edge"), st.integers(0, 7)),  # exactly a candidate's final score
        )
    )
    return world, query_seed, spec, asked, threshold, draw(st.booleans())


def _query(world: World, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    near = world.vecs[rng.integers(0, len(world.vecs))]  # near a stored memory: scores spread high
    return (near + rng.normal(scale=rng.choice([0.3, 1.0, 3.0]), size=near.shape)).astype(np.float64)


def test_the_exported_spec_on_the_engine(worlds, capsys):
    """>= 300 cases over bonus, tau, threshold (free and exactly on a final score), candidates,
    inject, decay, combine, the question's date (and the cut-off filter), exact search, and three
    schemas (ISO dates and an unnamed vector; epoch seconds or milliseconds and a named vector)."""
    on_engine, on_local = Agreement(), Agreement()

    @settings(
        max_examples=400,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(spec_cases())
    def one(case):
        w_i, query_seed, spec, asked, (mode, value), exact = case
        world = worlds[w_i]
        vector, at = _query(world, query_seed), REF - timedelta(seconds=asked)
        cands = world.reference(vector, spec, at)
        if mode == "edge" and cands:
            threshold = cands[min(value, len(cands) - 1)].final
        else:
            threshold = float(value) if mode == "free" else 0.0
        spec = replace(spec, threshold=threshold)
        cands = world.reference(vector, spec, at)
        # what a caller does: paste the printed JSON, fill the vector and the query time
        body = fill(
            json.loads(spec_query_json(spec, schema=world.schema, exact=exact)), vector, at, world.schema
        )
        where = (w_i, spec, asked, exact)
        check(edge.run(world.shard, body), cands, threshold, spec.inject, world.cls, on_engine, where)
        check(world.store.run(body), cands, threshold, spec.inject, world.cls, on_local, where)

    one()
    with capsys.disabled():
        print("\n" + on_engine.summary("spec on the engine") + "\n" + on_local.summary("spec in local mode"))
    assert on_engine.cases >= 300 and on_engine.memories > 400
    assert on_engine.exact_cases > 150 and on_engine.tie_cases > 10 and on_engine.edge_cases > 20
    assert on_engine.max_diff <= TOL


def test_memories_after_the_query_time_are_never_returned(worlds):
    """Qdrant decays on |date - target|: without the cut-off a memory a day in the future would
    get the bonus of one a day old. With it, none written after the query time comes back."""
    world = worlds[1]
    spec = RetrievalSpec(candidates=48, inject=48, threshold=-2.0, bonus=1.0, tau_days=3.0)
    later = {i for i, d in enumerate(world.dates) if d > REF}
    assert len(later) >= 2
    body = fill(json.loads(spec_query_json(spec, schema=world.schema)), world.vecs[0], REF, world.schema)
    got = {int(i) for i, _ in edge.run(world.shard, body)}
    assert not got & later and len(got) == 48 - len(later)
    # the same body without the cut-off: the engine gives them the bonus of their distance
    del body["prefetch"]["filter"]
    future = {int(i): s for i, s in edge.run(world.shard, body)}
    assert later <= set(future)
    raw = dict(world.store.raw_top_k(world.vecs[0], 48))
    for i in later:
        d = (world.dates[i] - REF).total_seconds() / 86400
        assert future[i] == pytest.approx(raw[i] + math.exp(-d / 3.0), abs=TOL)


def test_a_score_exactly_on_the_threshold_is_kept(tmp_path):
    """memlab's rule is inclusive (final >= threshold); so is the engine's in a formula query
    (and so, since v1.17.0, a server's): the export leaves the threshold as it is. A nearest
    search alone is strict, which the spec never relies on."""
    schema = CollectionSchema()
    store = MemoryStore(2, schema=schema)
    # cosines exactly 1, 0.6 and 0 (a 3-4-5 triangle), all written at REF: decay exactly 1
    vecs = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], dtype=np.float32)
    store.add(["a", "b", "c"], vecs, [REF] * 3)
    shard = edge.create_shard(tmp_path / "s", 2, schema)
    edge.upsert(shard, range(3), vecs, [store.payload(m, REF) for m in "abc"], schema)
    b_raw = float(np.float32(0.6))  # the engine's (and local mode's) cosine of b
    for bonus in (0.0, 0.25):
        for combine in ("add", "mult"):
            final = b_raw + bonus if combine == "add" else b_raw * (1 + bonus)
            final = float(np.float32(final))  # a threshold the engine's float32 score can equal
            for thr, kept in ((final, 2), (float(np.nextafter(np.float32(final), np.float32(2))), 1)):
                spec = RetrievalSpec(
                    candidates=3, inject=3, threshold=thr, bonus=bonus, tau_days=1.0, combine=combine
                )
                body = fill(json.loads(spec_query_json(spec, schema=schema)), [0.0, 0.0], REF, schema)
                body["prefetch"]["query"] = [1.0, 0.0]
                ref = [
                    c
                    for c in retrieve(np.array([1.0, b_raw, 0.0]), np.zeros(3), ("a", "b", "c"), spec)
                    if c.injected
                ]
                assert [c.index for c in ref] == list(range(kept)), (bonus, combine, thr)
                assert [int(i) for i, _ in edge.run(shard, body)] == list(range(kept)), (bonus, combine, thr)
                assert [i for i, _ in store.run(body)] == list(range(kept)), (bonus, combine, thr)
    # for contrast: the nearest search's own score_threshold is strict, on the engine and in local mode
    nearest = {"query": [1.0, 0.0], "score_threshold": b_raw, "limit": 3}
    assert [int(i) for i, _ in edge.run(shard, nearest)] == [0]
    assert [int(i) for i, _ in store.run(nearest)] == [0]
    shard.close()


@pytest.mark.parametrize("name", ["seed16-time", "daily-lunch"])
def test_every_native_retriever_on_the_engine(tmp_path, name, capsys):
    """Each retriever with a native form (routes as prefetches with the gate's filter, RRF,
    order_by on the date, the decay formula on top), as its REST body, on the engine and in local
    mode, against memlab's retriever scores + the reference inject; every decay family and
    combine, ISO dates and epoch seconds under a named vector. BM25 weights are scaled by a
    distinct factor per memory so the keyword route has no ties."""
    from memlab.datasets.schema import load_dataset
    from memlab.qdrant.store import retriever_body
    from memlab.retrieval.inputs import build_inputs
    from memlab.retrieval.keyword import KeywordIndex
    from memlab.retrieval.retrievers import RETRIEVERS, retriever_scores

    ds = load_dataset(name)
    n_m, n_q = len(ds.memories), len(ds.questions)
    rng = np.random.default_rng(3)
    mem = rng.normal(size=(n_m, 8))
    mem /= np.linalg.norm(mem, axis=1, keepdims=True)
    qv = rng.normal(size=(n_q, 8))
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    idx = KeywordIndex.build([m.text("en") for m in ds.memories], "en")
    scale = 1 + np.arange(n_m) / (7 * n_m)
    weights = [{t: w * scale[i] for t, w in v.items()} for i, v in enumerate(idx.sparse_vectors())]
    terms = [idx.term_ids(q.text("en")) for q in ds.questions]
    dates = [m.date for m in ds.memories]
    on_engine, on_local = Agreement(), Agreement()
    for s_i, schema in enumerate(SCHEMAS[:2]):
        store = MemoryStore(8, keyword=True, schema=schema)
        store.add(list(ds.memory_ids), mem.astype(np.float32), dates, keyword_weights=weights)
        shard = edge.create_shard(tmp_path / f"s{s_i}", 8, schema, keyword=True)
        payloads = [store.payload(m, d) for m, d in zip(ds.memory_ids, dates, strict=True)]
        edge.upsert(shard, range(n_m), mem.astype(np.float32), payloads, schema, keyword_weights=weights)
        raw = store.score_table(qv)
        keyword = np.array([[sum(w.get(t, 0.0) for t in terms[q]) for w in weights] for q in range(n_q)])
        inp = replace(build_inputs(ds, raw), keyword=np.where(ds.visible(), keyword, np.nan))
        cls = np.arange(n_m)
        for policy in ("vector-decay", "hybrid-rrf", "rrf-time", "gate-vector-decay"):
            retriever = RETRIEVERS[policy]
            for k, threshold, bonus, decay, combine in (
                (60, 0.0, 0.0, "exp", "add"),
                (1, 0.3, 0.05, "gauss", "mult"),
                (2, 0.0, 0.01, "lin", "add"),
                (5, 0.02, 0.5, "exp", "mult"),
            ):
                if retriever.fusion == "none":
                    threshold = 0.2
                spec = RetrievalSpec(
                    candidates=5,
                    inject=3,
                    threshold=threshold,
                    bonus=bonus,
                    tau_days=7,
                    decay=decay,
                    combine=combine,
                ).with_reference(ds.reference_date)
                (setting,) = retriever_scores(retriever, inp, candidates=5, rrf_ks=(k,))
                ref_spec = spec if retriever.fusion == "none" else replace(spec, candidates=n_m)
                for q, question in enumerate(ds.questions):
                    r = inp.time_ranges[q]
                    body = retriever_body(
                        store,
                        retriever,
                        spec,
                        qv[q],
                        terms[q],
                        rrf_k=k,
                        time_range=(r.start, r.end) if r else None,
                        asked=question.date,
                    )
                    ref = retrieve(setting.scores[q], inp.ages[q], ds.memory_ids, ref_spec)
                    where = (name, schema.date_format, policy, k, decay, combine, question.id)
                    check(edge.run(shard, body), ref, spec.threshold, spec.inject, cls, on_engine, where)
                    check(store.run(body), ref, spec.threshold, spec.inject, cls, on_local, where)
        shard.close()
        store.client.close()
    with capsys.disabled():
        print(f"\n{on_engine.summary(f'retrievers on the engine ({name})')}")
    assert on_engine.cases == 2 * 4 * 4 * n_q and on_engine.memories > 50
    assert on_engine.max_diff <= TOL
