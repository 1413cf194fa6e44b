"""Qdrant: raw top-k + the Python re-rank == the spec as one native Qdrant query."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memlab.core.spec import RetrievalSpec, age_days, retrieve
from memlab.embedding.embedder import Embedder
from memlab.qdrant.store import MemoryStore, spec_query_json

REF = datetime(2026, 9, 10, tzinfo=UTC)


def reference_path(store: MemoryStore, vec, ages, spec):
    """Raw top-k from Qdrant, then memlab's Python re-rank."""
    raw = np.full(len(store.memory_ids), np.nan)
    for idx, score in store.raw_top_k(vec, spec.candidates):
        raw[idx] = score
    return [(c.index, c.final) for c in retrieve(raw, ages, tuple(store.memory_ids), spec) if c.injected]


def assert_paths_agree(store, queries, ages, spec):
    compared = 0
    for vec in queries:
        ref = reference_path(store, vec, ages, spec)
        native = store.query_spec(vec, spec)
        assert [i for i, _ in native] == [i for i, _ in ref]
        np.testing.assert_allclose([s for _, s in native], [s for _, s in ref], rtol=0, atol=1e-6)
        compared += len(ref)
    return compared


def random_store(seed: int, n: int = 300, dim: int = 32):
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    # fractional ages over 90 days, to the second
    dates = [REF - timedelta(seconds=int(s)) for s in rng.integers(0, 90 * 86400, size=n)]
    store = MemoryStore(dim)
    store.add([f"r{i}" for i in range(n)], vecs, dates)
    ages = age_days(np.array([d.replace(tzinfo=None) for d in dates], dtype="datetime64[s]"), REF)
    return store, vecs, ages, rng


@pytest.mark.parametrize(
    "spec",
    [
        RetrievalSpec(candidates=8, inject=3, threshold=0.30, bonus=0.05, tau_days=14, reference_date=REF),
        RetrievalSpec(candidates=20, inject=5, threshold=0.25, bonus=0.20, tau_days=3.5, reference_date=REF),
        RetrievalSpec(candidates=5, inject=5, threshold=0.0, bonus=0.0, tau_days=30, reference_date=REF),
    ],
)
def test_native_query_matches_reference_on_random_data(spec):
    store, vecs, ages, rng = random_store(seed=11)
    # queries near stored vectors, so scores spread across the threshold
    queries = vecs[rng.integers(0, len(vecs), 25)] + rng.normal(scale=1.0, size=(25, vecs.shape[1]))
    assert assert_paths_agree(store, queries, ages, spec) > 10  # something was injected to compare


def test_qdrant_raw_scores_are_cosines():
    store, vecs, _, rng = random_store(seed=3, n=50, dim=8)
    q = rng.normal(size=8)
    got = dict(store.raw_top_k(q, 50))
    want = vecs @ q / (np.linalg.norm(vecs, axis=1) * np.linalg.norm(q))
    np.testing.assert_allclose([got[i] for i in range(50)], want, atol=1e-6)


@pytest.mark.model
def test_native_query_matches_reference_on_the_fixture(seed, embedded, cache_dir):
    emb = Embedder(cache_dir=cache_dir)
    mem = emb.encode_documents([m.text("en") for m in seed.memories])
    qs = emb.encode_queries([q.text("en") for q in seed.questions])
    assert emb.loads == 0  # the session fixture already embedded everything
    store = MemoryStore.from_dataset(seed, mem)
    ages = age_days(seed.memory_dates(), seed.reference_date)
    # the default model's cosines bunch in 0.72-0.89: thresholds from its own range, where some
    # questions inject and some do not
    for threshold in (0.82, 0.845, 0.87):
        spec = RetrievalSpec(threshold=threshold).with_reference(seed.reference_date)
        assert_paths_agree(store, qs, ages, spec)
    np.testing.assert_allclose(store.score_table(qs), embedded.raw, atol=1e-6)


def test_persisted_local_collection(tmp_path):
    vecs = np.eye(3, dtype=np.float32)
    dates = [REF - timedelta(days=d) for d in (1, 2, 3)]
    store = MemoryStore(3, path=str(tmp_path / "qdrant"))
    store.add(["x", "y", "z"], vecs, dates)
    assert [i for i, _ in store.raw_top_k(np.array([0.0, 1.0, 0.1]), 2)] == [1, 2]
    store.client.close()
    assert (tmp_path / "qdrant" / "collection" / "memlab").is_dir()


def test_qdrant_json_is_the_rest_query():
    """The printed body, worked out by hand: the query vector and the query time are placeholders
    (the cut-off keeps memories written after it out); exp with midpoint 1/e at scale tau."""
    spec = RetrievalSpec().with_reference(REF)
    body = json.loads(spec_query_json(spec))
    assert body == {
        "prefetch": {
            "query": "<query vector>",
            "limit": 8,
            "filter": {"must": [{"key": "date", "range": {"lte": "<query time>"}}]},
        },
        "query": {
            "formula": {
                "sum": [
                    "$score",
                    {
                        "mult": [
                            0.05,
                            {
                                "exp_decay": {
                                    "x": {"datetime_key": "date"},
                                    "target": {"datetime": "<query time>"},
                                    "scale": 14 * 86400.0,
                                    "midpoint": math.exp(-1),
                                }
                            },
                        ]
                    },
                ]
            }
        },
        "score_threshold": 0.45,
        "limit": 3,
        "with_payload": True,
    }
    with_vector = json.loads(spec_query_json(spec, [0.5, -0.25], at=REF))
    assert with_vector["prefetch"]["query"] == [0.5, -0.25]
    assert with_vector["prefetch"]["filter"]["must"] == [
        {"key": "date", "range": {"lte": "2026-09-10T00:00:00Z"}}
    ]


def test_qdrant_json_for_the_users_collection():
    """Named vector, epoch seconds, gauss, mult, exact: the number decays against a datetime
    target (epoch seconds in float64 on the engine), the filter cuts on the number."""
    from memlab.qdrant.query import CollectionSchema

    spec = RetrievalSpec(decay="gauss", combine="mult", bonus=0.2, tau_days=2.0)
    schema = CollectionSchema(date_field="created_at", date_format="epoch-s", vector_name="dense")
    body = json.loads(spec_query_json(spec, schema=schema, at=REF, exact=True))
    t = 1788998400  # 2026-09-10T00:00:00Z
    assert body["prefetch"] == {
        "query": "<query vector>",
        "limit": 8,
        "filter": {"must": [{"key": "created_at", "range": {"lte": t}}]},
        "using": "dense",
        "params": {"exact": True},
    }
    target = {"datetime": "2026-09-10T00:00:00Z"}
    decay = {
        "gauss_decay": {"x": "created_at", "target": target, "scale": 2 * 86400.0, "midpoint": math.exp(-1)}
    }
    assert body["query"] == {"formula": {"mult": ["$score", {"sum": [1.0, {"mult": [0.2, decay]}]}]}}
    ms = CollectionSchema(date_field="created_at", date_format="epoch-ms")
    lin = json.loads(spec_query_json(RetrievalSpec(decay="lin"), schema=ms))
    assert lin["prefetch"]["filter"]["must"] == [
        {"key": "created_at", "range": {"lte": "<query time, epoch-ms>"}}
    ]
    assert lin["query"]["formula"]["sum"][1]["mult"][1] == {
        "lin_decay": {
            "x": {"div": {"left": "created_at", "right": 1000.0}},
            "target": {"datetime": "<query time>"},
            "scale": 14 * 86400.0,
            "midpoint": math.exp(-1),
        }
    }
    from memlab.qdrant.query import fill

    filled = fill(lin, [1.0], REF, ms)
    assert filled["prefetch"]["filter"]["must"][0]["range"]["lte"] == t * 1000
    assert filled["query"]["formula"]["sum"][1]["mult"][1]["lin_decay"]["target"] == target
    with pytest.raises(ValueError) as e:
        fill(lin, [1.0], None, ms)
    assert str(e.value) == "the query has the placeholder '<query time, epoch-ms>': give the query time"


def test_store_rejects_wrong_shapes():
    store = MemoryStore(4)
    with pytest.raises(ValueError) as e:
        store.add(["a"], np.zeros((1, 3), dtype=np.float32), [REF])
    assert str(e.value) == "vectors have shape (1, 3), expected (1, 4)"


def test_dated_questions_native_query_matches_reference():
    """Questions asked in the past: ages count from then, later memories are filtered in the prefetch."""
    from helpers import criteria_for, make_dataset, score_table

    from memlab.tuning.evaluate import evaluate

    rng = np.random.default_rng(5)
    n_m, n_q = 60, 12
    age_s = rng.integers(0, 40 * 86400, n_m)
    asked = rng.integers(0, 20 * 86400, n_q)  # each question asked 0-20 days before the reference
    ds = make_dataset(age_s, ["hit"] * n_q, [0] * n_q, [()] * n_q, asked_seconds_ago=asked)
    vecs, queries = rng.normal(size=(n_m, 8)).astype(np.float32), rng.normal(size=(n_q, 8))
    store = MemoryStore.from_dataset(ds, vecs)
    scores = score_table(ds, store.score_table(queries))
    spec = RetrievalSpec(candidates=10, inject=4, threshold=0.2, bonus=0.2, tau_days=5).with_reference(REF)
    ev = evaluate(ds, scores, spec, criteria_for(ds))
    hidden = 0
    for q, vec, result in zip(ds.questions, queries, ev.results, strict=True):
        native = store.query_spec(vec, spec, asked=q.date)
        assert [i for i, _ in native] == [c.index for c in result.injected]
        np.testing.assert_allclose([f for _, f in native], [c.final for c in result.injected], atol=1e-6)
        later = {i for i, m in enumerate(ds.memories) if m.date > q.date}
        assert not later & {c.index for c in result.candidates}
        hidden += len(later)
    assert hidden > 0  # some memories really were in the future of some question


@pytest.mark.parametrize("date_format", ["iso", "epoch-s", "epoch-ms"])
def test_python_snippet_runs_and_injects_what_the_reference_injects(date_format):
    """The printed qdrant-client function, executed against a collection with the user's names:
    the same memories and scores as memlab's reference, for the query time it is given."""
    from memlab.qdrant.query import CollectionSchema, python_snippet

    schema = CollectionSchema(
        date_field="created_at", date_format=date_format, vector_name="dense", id_field="mid"
    )
    rng = np.random.default_rng(7)
    n, dim = 60, 8
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    dates = [REF - timedelta(seconds=int(s)) for s in rng.integers(-5 * 86400, 40 * 86400, n)]
    store = MemoryStore(dim, schema=schema)
    store.add([f"note-{i}" for i in range(n)], vecs, dates)
    spec = RetrievalSpec(
        candidates=12, inject=4, threshold=0.3, bonus=0.3, tau_days=4.0, decay="lin", combine="mult"
    )
    namespace: dict = {}
    exec(python_snippet(spec, schema), namespace)  # the very text memlab prints
    checked = 0
    for q in range(15):
        vec, now = rng.normal(size=dim), REF - timedelta(days=int(rng.integers(0, 10)))
        got = namespace["recall"](store.client, store.collection, vec, now=now)
        dates64 = np.array([d.replace(tzinfo=None) for d in dates], dtype="datetime64[s]")
        days = age_days(dates64, now)
        raw = np.where(days >= 0, store.score_table(np.asarray([vec]))[0], np.nan)
        want = [
            c
            for c in retrieve(raw, np.where(days >= 0, days, np.inf), tuple(store.memory_ids), spec)
            if c.injected
        ]
        assert [p.payload["mid"] for p in got] == [c.memory_id for c in want], q
        np.testing.assert_allclose([p.score for p in got], [c.final for c in want], atol=1e-6)
        checked += len(want)
    assert checked > 10
    frozen: dict = {}
    exec(python_snippet(spec, schema, at=REF), frozen)
    vec = rng.normal(size=dim)
    later = frozen["recall"](store.client, store.collection, vec, now=REF - timedelta(days=30))
    assert [p.id for p in later] == [i for i, _ in store.query_spec(vec, spec.with_reference(REF))]
