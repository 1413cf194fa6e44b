"""Every embedded score table is one float32 product (``memlab.core.vectors.cosine_table``); the
stores stay the judge: local mode (qdrant-client) and the real engine (qdrant-edge-py) score every
pair the same, to float32 precision, and what a query cannot see there (memories written after it,
another tenant's, the other shard's) is what memlab leaves unknown or narrows away.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from helpers import REF

from memlab.core.shards import narrow
from memlab.core.vectors import cosine_table, unit_rows
from memlab.datasets.schema import load_dataset
from memlab.qdrant.query import DEFAULT_SCHEMA, not_after
from memlab.qdrant.sharding import Scope
from memlab.qdrant.store import MemoryStore

PACKAGED = ("seed16", "seed16-time", "daily-lunch", "data/example-companion")
F32 = 2e-7  # a few float32 ulps of a cosine: the engines round their scores to float32


def test_cosine_table_by_hand():
    queries = np.array([[1.0, 0.0], [0.0, 2.0]])
    memories = np.array([[1.0, 1.0], [0.0, -3.0], [0.0, 0.0]])
    got = cosine_table(queries, memories)
    # 1/sqrt(2) for 45 degrees; -1 opposite; a zero vector has no direction and scores 0
    np.testing.assert_allclose(got, [[0.70710677, 0.0, 0.0], [0.70710677, -1.0, 0.0]], atol=1e-7)
    assert got.dtype == np.float64 and np.all(got == got.astype(np.float32))  # float32 values


def test_unit_rows_keeps_a_zero_row_and_refuses_a_vector():
    np.testing.assert_allclose(unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]])), [[0.6, 0.8], [0, 0]], atol=1e-7)
    with pytest.raises(ValueError, match="2-d"):
        unit_rows(np.ones(3))


@pytest.mark.parametrize("chunk_bytes", [1, 8 * 7, 8 * 7 * 3 + 1, 1 << 30])
def test_blocks_of_any_size_give_the_same_table(chunk_bytes):
    rng = np.random.default_rng(0)
    q, m = rng.normal(size=(10, 5)), rng.normal(size=(7, 5))
    np.testing.assert_array_equal(cosine_table(q, m, chunk_bytes=chunk_bytes), cosine_table(q, m))


def test_no_questions_or_no_memories():
    assert cosine_table(np.zeros((0, 4)), np.ones((3, 4))).shape == (0, 3)
    assert cosine_table(np.ones((2, 4)), np.zeros((0, 4))).shape == (2, 0)
    with pytest.raises(ValueError, match="4 dimensions, memories 3"):
        cosine_table(np.ones((2, 4)), np.ones((2, 3)))


def random_vectors(seed: int, n: int, q: int, dim: int):
    rng = np.random.default_rng(seed)
    # lengths far from 1 and twins: what a server's raw vectors look like
    mem = rng.normal(size=(n, dim)) * rng.uniform(0.01, 50, size=(n, 1))
    mem[1] = mem[0]
    queries = rng.normal(size=(q, dim)) * rng.uniform(0.01, 50, size=(q, 1))
    return mem.astype(np.float32), queries.astype(np.float32)


@pytest.mark.parametrize("seed", range(4))
def test_the_product_is_local_modes_score_of_every_pair(seed):
    mem, queries = random_vectors(seed, n=60, q=9, dim=16)
    store = MemoryStore(16)
    store.add([f"m{i}" for i in range(60)], mem, [REF] * 60)
    np.testing.assert_allclose(cosine_table(queries, mem), store.score_table(queries), rtol=0, atol=F32)


def test_the_product_is_local_modes_score_on_the_packaged_datasets():
    for name in PACKAGED:
        ds = load_dataset(name)
        mem, queries = random_vectors(7, len(ds.memories), len(ds.questions), 24)
        store = MemoryStore.from_dataset(ds, mem)
        np.testing.assert_allclose(
            cosine_table(queries, mem), store.score_table(queries), rtol=0, atol=F32, err_msg=name
        )


@pytest.mark.qdrant_edge
def test_the_product_is_the_real_engines_score_with_what_it_cannot_see(tmp_path):
    """On the engine each question asks for every memory with the cut-off at its own time and, for
    a tenant, the filter: it returns exactly the pairs memlab keeps (``retrievable``, then the
    pool's ``narrow``), each with the product's score."""
    from memlab.qdrant import edge

    schema = DEFAULT_SCHEMA
    for d_i, name in enumerate(PACKAGED):
        ds = load_dataset(name)
        n = len(ds.memories)
        mem, queries = random_vectors(11 + d_i, n, len(ds.questions), 24)
        # a tenant field of memlab's own on every memory: the odd ones belong to bob
        users = ["bob" if i % 2 else "alice" for i in range(n)]
        shard = edge.create_shard(tmp_path / f"shard-{d_i}", 24, schema)
        payloads = [
            {schema.id_field: m.id, schema.date_field: schema.date_value(m.date), "user": users[i]}
            for i, m in enumerate(ds.memories)
        ]
        edge.upsert(shard, range(n), mem, payloads, schema)
        product = cosine_table(queries, mem)
        visible = np.where(ds.visible(), product, np.nan)
        alice = np.array([u == "alice" for u in users])
        for filters, allowed in (([], None), ([{"key": "user", "match": {"value": "alice"}}], alice)):
            want = visible if allowed is None else np.where(allowed, visible, np.nan)
            asked = ds.question_references()
            for qi in range(len(ds.questions)):
                at = asked[qi].astype("datetime64[s]").item().replace(tzinfo=REF.tzinfo)
                body = {
                    "query": queries[qi].tolist(),
                    "limit": n,
                    "filter": {"must": [not_after(schema, at), *filters]},
                    "params": {"exact": True},
                }
                got = np.full(n, np.nan)
                for pid, score in edge.run(shard, body):
                    got[int(pid)] = score
                # haystacks are memlab's own (the engine knows no conversation): compare within them
                mine = ds.in_haystack()[qi]
                np.testing.assert_allclose(
                    got[mine], want[qi][mine], rtol=0, atol=F32, err_msg=f"{name} {ds.questions[qi].id}"
                )


@pytest.mark.qdrant_edge
def test_each_shard_scores_its_own_memories_as_the_product(tmp_path):
    """Two shards under Qdrant's id hashing: each holds the memories memlab's pool puts there, and
    scores them as the product does; the pool's filter leaves the rest unknown."""
    from memlab.qdrant import edge
    from memlab.qdrant.sharding import shard_of

    ds = load_dataset("daily-lunch")
    n = len(ds.memories)
    mem, queries = random_vectors(5, n, len(ds.questions), 12)
    where = shard_of(list(range(n)), 2)
    assert 0 < where.sum() < n  # both shards hold memories
    product = cosine_table(queries, mem)
    got = np.full(product.shape, np.nan)
    for s in (0, 1):
        ids = np.flatnonzero(where == s)
        shard = edge.create_shard(tmp_path / f"s{s}", 12, DEFAULT_SCHEMA)
        payloads = [
            {"memory_id": ds.memories[i].id, "date": DEFAULT_SCHEMA.date_value(REF - timedelta(days=1))}
            for i in ids
        ]
        edge.upsert(shard, ids, mem[ids], payloads, DEFAULT_SCHEMA)
        for qi in range(len(queries)):
            for pid, score in edge.run(shard, {"query": queries[qi].tolist(), "limit": n}):
                assert where[int(pid)] == s
                got[qi, int(pid)] = score
    np.testing.assert_allclose(got, product, rtol=0, atol=F32)
    pool = Scope(shards=2).pool(ds.memories)
    np.testing.assert_array_equal(pool.shard, where)
    assert narrow(product, pool) is product  # shards alone leave every pair known
