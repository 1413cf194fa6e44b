"""Tenant filters and shards on the real engine (qdrant-edge-py).

Two users' memories in one collection (payload ``user_id``), split over N = 1, 2 and 4 engine
shards by Qdrant's hash of the point id (``memlab.qdrant.sharding.shard_of``). The query is the
JSON ``memlab spec`` prints with ``--filter`` (a ``must`` beside the date cut-off), run on each
shard with the same body, and the shards' lists merged as Qdrant's collection does (by score,
then point id, cut to ``limit``). memlab's reference over the same pool
(``Scope(...).pool``: the filter, then each shard's top candidates) must inject the same memories,
and neither user's query may ever return the other's memories.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import numpy as np
import pytest
from edge_compare import TOL, Agreement, check
from helpers import REF
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlab.core.spec import COMBINES, DECAYS, RetrievalSpec, age_days, retrieve
from memlab.datasets.schema import Memory
from memlab.qdrant import edge
from memlab.qdrant.query import CollectionSchema, fill, spec_query_json
from memlab.qdrant.sharding import Scope, shard_of

pytestmark = pytest.mark.qdrant_edge

N_MEMORIES, DIM, USERS, SHARD_COUNTS = 60, 8, ("alice", "bob"), (1, 2, 4)
SCHEMA = CollectionSchema()


class Collection:
    """One random two-user store, as memlab's records and as engine shards for each N."""

    def __init__(self, root):
        rng = np.random.default_rng(27)
        self.vecs = rng.normal(size=(N_MEMORIES, DIM)).astype(np.float32)
        offsets = rng.integers(-2 * 86400, 50 * 86400, N_MEMORIES)  # a few written after REF
        self.dates = [REF - timedelta(seconds=int(s)) for s in offsets]
        self.users = [USERS[int(u)] for u in rng.integers(0, 2, N_MEMORIES)]
        self.ids = tuple(f"m{i}" for i in range(N_MEMORIES))
        self.memories = [
            Memory(m, d, {"en": m}, "", "synthetic", payload={"user_id": u}, point_id=i)
            for i, (m, d, u) in enumerate(zip(self.ids, self.dates, self.users, strict=True))
        ]
        qe = edge.engine()
        self.shards: dict[int, list] = {}
        for n in SHARD_COUNTS:
            where = shard_of(list(range(N_MEMORIES)), n)
            self.shards[n] = []
            for s in range(n):
                shard = edge.create_shard(root / f"n{n}-s{s}", DIM, SCHEMA)
                shard.update(qe.UpdateOperation.create_field_index("user_id", qe.PayloadSchemaType.Keyword))
                mine = [i for i in range(N_MEMORIES) if where[i] == s]
                payloads = [
                    {
                        "memory_id": self.ids[i],
                        "date": SCHEMA.date_value(self.dates[i]),
                        "user_id": self.users[i],
                    }
                    for i in mine
                ]
                if mine:
                    edge.upsert(shard, mine, self.vecs[mine], payloads, SCHEMA)
                self.shards[n].append(shard)

    def run(self, n: int, body: dict) -> list[tuple[int, float]]:
        """The body on each of the N shards, merged as Qdrant's collection merges them."""
        merged = [(int(i), s) for shard in self.shards[n] for i, s in edge.run(shard, body)]
        merged.sort(key=lambda p: (-p[1], p[0]))
        return merged[: body["limit"]]

    def reference(self, vector, spec: RetrievalSpec, at, scope: Scope):
        unit = self.vecs / np.linalg.norm(self.vecs, axis=1, keepdims=True)
        raw = unit.astype(np.float64) @ (np.asarray(vector) / np.linalg.norm(vector))
        days = age_days(np.array([d.replace(tzinfo=None) for d in self.dates], dtype="datetime64[s]"), at)
        raw = np.where(days >= 0, raw, np.nan)
        return retrieve(raw, np.where(days >= 0, days, np.inf), self.ids, spec, scope.pool(self.memories))

    def close(self):
        for shards in self.shards.values():
            for s in shards:
                s.close()


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    c = Collection(tmp_path_factory.mktemp("shards"))
    yield c
    c.close()


def test_the_hash_spreads_the_points_over_every_shard(collection):
    for n in SHARD_COUNTS:
        sizes = [len(edge.run(s, {"query": [1.0] * DIM, "limit": N_MEMORIES})) for s in collection.shards[n]]
        assert sum(sizes) == N_MEMORIES and min(sizes) > 0, (n, sizes)


@st.composite
def cases(draw):
    spec = RetrievalSpec(
        candidates=draw(st.integers(1, 12)),
        inject=draw(st.integers(1, 6)),
        threshold=0.0,
        bonus=draw(st.one_of(st.just(0.0), st.floats(0.0, 0.5))),
        tau_days=draw(st.floats(0.5, 40.0)),
        decay=draw(st.sampled_from(list(DECAYS))),
        combine=draw(st.sampled_from(list(COMBINES))),
    )
    # a free threshold three times in four; else exactly a candidate's final score
    mode = draw(st.sampled_from(("free", "free", "free", "edge")))
    threshold = (mode, draw(st.floats(-0.4, 0.9)) if mode == "free" else draw(st.integers(0, 5)))
    return (
        draw(st.integers(0, 2**32 - 1)),
        spec,
        threshold,
        draw(st.sampled_from((None, *USERS))),
        draw(st.integers(0, 20 * 86400)),
    )


def test_the_shard_model_and_the_filter_agree_with_the_engine(collection, capsys):
    """150 random cases, each on N = 1, 2 and 4 shards, with and without a tenant filter."""
    stats = {n: Agreement() for n in SHARD_COUNTS}
    differs = {n: 0 for n in SHARD_COUNTS}  # cases where the shards change what is injected

    @settings(
        max_examples=150,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(cases())
    def one(case):
        seed, spec0, (mode, value), user, asked = case
        rng = np.random.default_rng(seed)
        vector = collection.vecs[rng.integers(0, N_MEMORIES)] + rng.normal(scale=0.5, size=DIM)
        at = REF - timedelta(seconds=asked)
        for n in SHARD_COUNTS:  # every case on every shard count
            scope = Scope(filters=(("user_id", user),) if user else (), shards=n)
            cands = collection.reference(vector, spec0, at, scope)
            if mode == "edge" and cands:
                spec = replace(spec0, threshold=cands[min(value, len(cands) - 1)].final)
            else:
                spec = replace(spec0, threshold=float(value) if mode == "free" else 0.0)
            cands = collection.reference(vector, spec, at, scope)
            body = json.loads(spec_query_json(spec, schema=SCHEMA, exact=True, conditions=scope.conditions()))
            got = collection.run(n, fill(body, vector, at, SCHEMA))
            if user is not None:  # the tenant filter holds on the engine
                assert {collection.users[i] for i, _ in got} <= {user}, (user, got)
                assert {collection.users[c.index] for c in cands} <= {user}
            check(got, cands, spec.threshold, spec.inject, np.arange(N_MEMORIES), stats[n], (n, user, spec))
            unsharded = collection.reference(vector, spec, at, replace(scope, shards=1))
            differs[n] += [c.index for c in cands if c.injected] != [c.index for c in unsharded if c.injected]

    one()
    with capsys.disabled():
        print()
        for n in SHARD_COUNTS:
            print(
                stats[n].summary(f"{n} shard(s)") + f"; injected set differs from one shard in {differs[n]}"
            )
        assert all(a.cases == 150 and a.exact_cases >= 50 and a.edge_cases >= 10 for a in stats.values())
    assert differs[1] == 0 and differs[2] >= 10 and differs[4] > differs[2]
    assert max(a.max_diff for a in stats.values()) <= TOL


def test_a_users_query_never_returns_the_others_memories(collection):
    """Every memory, at a spec that would inject them all: each user gets only their own."""
    spec = RetrievalSpec(candidates=N_MEMORIES, inject=N_MEMORIES, threshold=-2.0, bonus=0.1, tau_days=7.0)
    for n in SHARD_COUNTS:
        for user in USERS:
            scope = Scope(filters=(("user_id", user),), shards=n)
            body = json.loads(spec_query_json(spec, schema=SCHEMA, conditions=scope.conditions()))
            got = {i for i, _ in collection.run(n, fill(body, collection.vecs[0], REF, SCHEMA))}
            theirs = {
                i for i in range(N_MEMORIES) if collection.users[i] == user and collection.dates[i] <= REF
            }
            assert got == theirs, (n, user)
