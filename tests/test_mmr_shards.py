"""MMR over several shards, as Qdrant runs it: each shard diversifies its own pool apart.

memlab's export nests the pool under the ``mmr`` prefetch, which Qdrant plans as a shard-level
rescore (``lib/shard/src/query/planned_query.rs``, ``recurse_prefetches``): on each shard the top
``mmr_pool`` by cosine, MMR down to ``candidates``, the formula; the collection then merges the
shards' lists by score. The reference (``memlab.core.spec.mmr_pool_candidates``) takes the union
of each shard's picks. Held equal here to the real engine (qdrant-edge-py), N = 2 and 4 EdgeShards
split by Qdrant's hash of the point id and merged as ``tests/test_qdrant_edge_shards.py`` merges
them, with and without a tenant filter; the vectorised sweep over the MMR axes equals the
reference on the same pools.
"""

from __future__ import annotations

import json
from datetime import timedelta

import numpy as np
import pytest
from helpers import REF, criteria_for, make_dataset, score_table
from test_sweep import same

from memlab.core.grid import Grid
from memlab.core.labels import Labels
from memlab.core.shards import Pool
from memlab.core.spec import RetrievalSpec, age_days, mmr_candidates, mmr_pool_candidates, retrieve
from memlab.core.sweep_mmr import sweep_mmr
from memlab.core.vectors import cosine_table
from memlab.datasets.schema import Memory
from memlab.qdrant.query import CollectionSchema, fill, spec_query_json
from memlab.qdrant.sharding import Scope, shard_of
from memlab.scores.sources import Vectors
from memlab.tuning.evaluate import evaluate

N, DIM, USERS, SHARD_COUNTS = 60, 6, ("alice", "bob"), (1, 2, 4)
SCHEMA = CollectionSchema()


def test_a_worked_example_on_two_shards():
    # four memories: 0 and 1 twins on shard 0, 2 and 3 twins on shard 1; relevance 0 > 1 > 2 > 3
    vecs = np.array([[1, 0], [1, 0.01], [0, 1], [0.01, 1]], dtype=np.float32)
    raw = np.array([0.9, 0.89, 0.5, 0.49])
    spec = RetrievalSpec(candidates=2, inject=4, threshold=-1.0, mmr_pool=4, diversity=0.9)
    # one shard: MMR picks 0, then 2 (the twin 1 is too close to 0)
    assert mmr_pool_candidates(raw, spec, vecs).tolist() == [0, 2]
    # two shards, {0, 1} and {2, 3}: each shard's pool is its twins, and it keeps both, so the
    # union is all four: diversity across shards is never compared
    two = Pool(shard=np.array([0, 0, 1, 1]), shards=2)
    assert mmr_pool_candidates(raw, spec, vecs, two).tolist() == [0, 1, 2, 3]
    # {0, 2} and {1, 3}: each shard picks its two, four again, but by another route
    assert mmr_pool_candidates(raw, spec, vecs, Pool(shard=np.array([0, 1, 0, 1]), shards=2)).tolist() == [
        0,
        1,
        2,
        3,
    ]
    # a filter keeping 0, 1, 2 on one shard: MMR among them picks 0, then 2
    kept = Pool(allowed=np.array([True, True, True, False]))
    assert mmr_pool_candidates(raw, spec, vecs, kept).tolist() == [0, 2]
    # the shard's own pick order is memlab.core.mmr.select's
    idx, picks = mmr_candidates(np.where([True, True, False, False], raw, np.nan), spec, vecs)
    assert idx[picks].tolist() == [0, 1]
    ids = ("a", "b", "c", "d")
    assert [c.memory_id for c in retrieve(raw, np.zeros(4), ids, spec, two, vecs)] == ["a", "b", "c", "d"]


class Collection:
    """A random two-user store, as memlab's records and as N engine shards for each N."""

    def __init__(self, root):
        from memlab.qdrant import edge

        rng = np.random.default_rng(41)
        base = rng.normal(size=(N // 3, DIM))
        # near-duplicates in threes (MMR has something to drop), spread over the shards by the hash
        self.vecs = (np.repeat(base, 3, axis=0) + rng.normal(scale=0.05, size=(N, DIM))).astype(np.float32)
        self.dates = [REF - timedelta(seconds=int(s)) for s in rng.integers(-2 * 86400, 40 * 86400, N)]
        self.users = [USERS[int(u)] for u in rng.integers(0, 2, N)]
        self.ids = tuple(f"m{i}" for i in range(N))
        self.memories = [
            Memory(m, d, {"en": m}, "", "synthetic", payload={"user_id": u}, point_id=i)
            for i, (m, d, u) in enumerate(zip(self.ids, self.dates, self.users, strict=True))
        ]
        qe = edge.engine()
        self.shards: dict[int, list] = {}
        for n in SHARD_COUNTS:
            where = shard_of(list(range(N)), n)
            self.shards[n] = []
            for s in range(n):
                shard = edge.create_shard(root / f"n{n}-s{s}", DIM, SCHEMA)
                shard.update(qe.UpdateOperation.create_field_index("user_id", qe.PayloadSchemaType.Keyword))
                mine = [i for i in range(N) if where[i] == s]
                payloads = [
                    {
                        "memory_id": self.ids[i],
                        "date": SCHEMA.date_value(self.dates[i]),
                        "user_id": self.users[i],
                    }
                    for i in mine
                ]
                edge.upsert(shard, mine, self.vecs[mine], payloads, SCHEMA)
                self.shards[n].append(shard)

    def run(self, n: int, body: dict) -> list[int]:
        """The body on each of the N shards, merged as Qdrant's collection merges them."""
        from memlab.qdrant import edge

        merged = [(int(i), s) for shard in self.shards[n] for i, s in edge.run(shard, body)]
        merged.sort(key=lambda p: (-p[1], p[0]))
        return [i for i, _ in merged[: body["limit"]]]

    def injected(self, vector, spec: RetrievalSpec, scope: Scope) -> list[int]:
        raw = cosine_table(np.asarray(vector, dtype=np.float32)[None], self.vecs)[0]
        days = age_days(np.array([d.replace(tzinfo=None) for d in self.dates], dtype="datetime64[s]"), REF)
        raw = np.where(days >= 0, raw, np.nan)
        pool = scope.pool(self.memories)
        cands = retrieve(raw, np.where(days >= 0, days, np.inf), self.ids, spec, pool, self.vecs)
        return [c.index for c in cands if c.injected]

    def close(self):
        for shards in self.shards.values():
            for s in shards:
                s.close()


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    c = Collection(tmp_path_factory.mktemp("mmr-shards"))
    yield c
    c.close()


def specs(rng, n: int):
    for _ in range(n):
        yield RetrievalSpec(
            candidates=int(rng.integers(1, 8)),
            inject=int(rng.integers(1, 8)),
            threshold=float(rng.choice([-1.0, 0.0, 0.2])),
            bonus=float(rng.choice([0.0, 0.05, 0.3])),
            tau_days=float(rng.choice([3.0, 14.0])),
            decay=str(rng.choice(["exp", "gauss", "lin"])),
            combine=str(rng.choice(["add", "mult"])),
            mmr_pool=int(rng.integers(2, 25)),
            diversity=float(rng.choice([0.0, 0.3, 0.5, 0.8, 1.0, round(rng.random(), 3)])),
        )


@pytest.mark.qdrant_edge
def test_the_engine_injects_what_the_reference_does_on_several_shards(collection):
    rng = np.random.default_rng(3)
    # cases where the shards change the injections from one shard's, and where MMR changes them
    by_shards, by_mmr, cases = {n: 0 for n in SHARD_COUNTS}, 0, 0
    for spec in specs(rng, 50):
        q = collection.vecs[rng.integers(0, N)] + rng.normal(scale=0.5, size=DIM).astype(np.float32)
        user = [None, *USERS][int(rng.integers(0, 3))]
        for n in SHARD_COUNTS:
            scope = Scope(filters=(("user_id", user),) if user else (), shards=n)
            want = collection.injected(q, spec, scope)
            body = json.loads(spec_query_json(spec, schema=SCHEMA, exact=True, conditions=scope.conditions()))
            got = collection.run(n, fill(body, [float(x) for x in q], REF, SCHEMA))
            assert got == want, (n, user, spec, got, want)
            cases += 1
            one = collection.injected(q, spec, Scope(filters=scope.filters, shards=1))
            by_shards[n] += want != one
            plain = RetrievalSpec(**{**spec.as_row(), "mmr_pool": 0, "diversity": 0.0})
            by_mmr += want != collection.injected(q, plain, scope)
    assert cases == 150 and by_shards[1] == 0
    assert by_shards[2] >= 5 and by_shards[4] >= 5, by_shards  # the shards matter: not one shard's picks
    assert by_mmr >= 20, by_mmr  # MMR matters: not the plain nearest candidates


@pytest.mark.parametrize("shards", [2, 3])
def test_the_sweep_over_shards_is_the_reference(shards):
    rng = np.random.default_rng(shards)
    n_m, n_q = 16, 5
    mem = rng.normal(size=(n_m, 4)).astype(np.float32)
    mem[5] = mem[4]  # twins
    queries = rng.normal(size=(n_q, 4)).astype(np.float32)
    kinds = [str(k) for k in rng.choice(["hit", "nohit", "contradiction"], n_q)]
    dataset = make_dataset(
        rng.integers(0, 40 * 86400, n_m), kinds, [int(i) for i in rng.integers(0, n_m, n_q)], [()] * n_q
    )
    scores = score_table(dataset, cosine_table(queries, mem), Vectors(mem, queries))
    pool = Pool(allowed=rng.random(n_m) < 0.85, shard=rng.integers(0, shards, n_m), shards=shards)
    grid = Grid(bonus=(0.0, 0.2), tau_days=(5.0,), threshold=(-1.0, 0.1), candidates=(1, 3), inject=(1, 4))
    raw = np.where(dataset.visible(), scores.raw, np.nan)
    criteria = criteria_for(dataset)
    kw = {"vectors": mem, "mmr_pool": (3, 8), "diversity": (0.0, 0.6, 1.0), "pool": pool}
    wide = sweep_mmr(raw, dataset.ages(), Labels.from_dataset(dataset), grid, criteria, **kw)
    assert len(wide) == 6 * grid.size
    differs = 0
    for _, row in wide.iterrows():
        spec = RetrievalSpec.from_row(row)
        ev = evaluate(dataset, scores, spec, criteria, pool=pool)
        for c in ev.criteria:
            assert same(c.value, float(row[f"{c.name}_value"])) and c.passed == bool(row[f"{c.name}_pass"])
        assert same(ev.headroom, float(row["headroom"])) and ev.feasible == bool(row["feasible"])
        for kind in ("hit", "contradiction", "nohit"):
            assert sum(len(r.injected) for r in ev.results if r.kind == kind) == row[f"injected_{kind}"]
        flat = evaluate(dataset, scores, spec, criteria, pool=Pool(allowed=pool.allowed))
        differs += [[c.index for c in r.injected] for r in ev.results] != [
            [c.index for c in r.injected] for r in flat.results
        ]
    assert differs > 0  # the shards changed some rows' injections


@pytest.mark.qdrant_edge
@pytest.mark.parametrize("shards", [2, 3])
def test_the_retriever_on_engine_shards_returns_the_references_mmr_injections(shards, tmp_path):
    """``memlab.Retriever`` over EdgeShards (it sends the export to each shard and merges the
    lists as the collection does): what it returns is the reference's injected memories under an
    MMR spec, per shard diversified, with and without the tenant filter."""
    from test_retriever import random_world
    from test_retriever import same as same_memories

    from memlab import Retriever
    from memlab.scores.sources import ScoreTable

    world = random_world(30 + shards, uuids=shards == 3)
    engine = world.edge(tmp_path, shards)
    table = ScoreTable(
        world.dataset.question_ids,
        world.dataset.memory_ids,
        cosine_table(world.queries, world.mem),
        "embedded",
        vectors=Vectors(world.mem, world.queries),
    )
    rng = np.random.default_rng(shards)
    differs = 0
    for spec in specs(rng, 6):
        retriever = Retriever.from_spec(spec, client=engine)
        for user in (None, "alice"):
            scope = Scope(filters=(("user_id", user),) if user else (), shards=shards)
            ev = evaluate(world.dataset, table, spec, pool=scope.pool(world.memories))
            one = evaluate(world.dataset, table, spec, pool=Scope(filters=scope.filters).pool(world.memories))
            for i, result in enumerate(ev.results):
                got = retriever.retrieve(
                    world.queries[i], world.asked[i], {"user_id": user} if user else None
                )
                same_memories(got, result, world, (shards, user, spec, result.question_id))
                differs += [c.index for c in result.injected] != [c.index for c in one.results[i].injected]
    assert differs > 0  # per-shard MMR injected other memories than one shard's would


def test_explain_refuses_mmr_over_several_shards_in_one_line(tmp_path):
    """The reference runs it per shard; explain's replay (which names the pick a dropped memory was
    too close to) does not yet, and says so rather than replaying one shard's picks."""
    from test_explain import write_log

    from memlab.core.errors import InputError
    from memlab.datasets.querylog import load_log
    from memlab.scores.problem import RetrievalProblem
    from memlab.scores.sources import ScoreTable
    from memlab.tuning.explain import replay

    rng = np.random.default_rng(0)
    dataset = make_dataset(rng.integers(0, 10 * 86400, 12), ["hit"] * 3, [0, 1, 2], [()] * 3)
    mem = rng.normal(size=(12, 4)).astype(np.float32)
    qv = rng.normal(size=(3, 4)).astype(np.float32)
    scores = ScoreTable(
        dataset.question_ids, dataset.memory_ids, cosine_table(qv, mem), "embedded", vectors=Vectors(mem, qv)
    )
    spec = RetrievalSpec(candidates=3, mmr_pool=8, diversity=0.5)
    problem = RetrievalProblem.of(dataset, scores, spec).with_scope(Scope(shards=2))
    lines = [
        {"id": q.id, "vector": qv[j].tolist(), "time": REF.isoformat()}
        for j, q in enumerate(dataset.questions)
    ]
    log = load_log(write_log(tmp_path / "log.jsonl", lines))
    with pytest.raises(InputError, match=r"^explain: MMR over several shards is not replayed \(") as e:
        replay(problem, log, memory_vectors=mem)
    assert "\n" not in str(e.value)
    assert (
        replay(problem.with_scope(Scope()), log, memory_vectors=mem).explain(0).candidates
    )  # one shard runs
