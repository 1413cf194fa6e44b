"""memlab.Retriever: the tuned spec in the user's own code equals memlab's reference.

Each store is built the way an application builds it (its own points, payloads and shards) from a
dataset with seeded random vectors (24 dimensions; lengths far from 1): the packaged datasets
(seed16, seed16-time, daily-lunch) and random stores. The retriever runs the query ``memlab
spec`` prints on qdrant-client's local mode and on Qdrant's own engine (qdrant-edge-py), and its
memories (ids, texts, dates), raw and final scores must equal what ``memlab.tuning.evaluate``
injects for every question, for every decay family and combine, with a tenant filter and with
shards (Qdrant's id hashing: each shard one local collection or one engine shard). Random floats
leave no ties or threshold edges within the engine's float32, so the lists are compared element
by element; each case's counters show that the threshold and the inject limit both cut.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from qdrant_client import AsyncQdrantClient, QdrantClient, models

from memlab import AsyncRetriever, RetrievalSpec, RetrievedMemory, Retriever
from memlab.core.errors import InputError, MemlabError
from memlab.core.spec import COMBINES, DECAYS
from memlab.core.vectors import cosine_table
from memlab.datasets.schema import Dataset, Memory, Question, load_dataset
from memlab.integrations.retriever import asked_time
from memlab.qdrant.query import DEFAULT_SCHEMA, CollectionSchema
from memlab.qdrant.sharding import Scope, shard_of
from memlab.scores.sources import ScoreTable
from memlab.tuning.evaluate import evaluate
from memlab.tuning.tuned import TunedSpec, save_tuned

DIM, TOL = 24, 1e-6  # the engine scores in float32; memlab in float64
PACKAGED = ("seed16", "seed16-time", "daily-lunch")
COLLECTION = "memories"
USERS = ("alice", "bob")
FAMILIES = [(d, c) for d in DECAYS for c in COMBINES]
REF = datetime(2026, 9, 10, tzinfo=UTC)


class World:
    """A dataset with vectors and users, its stores and its reference."""

    def __init__(self, dataset: Dataset, seed: int, point_ids=None):
        rng = np.random.default_rng(seed)
        n = len(dataset.memories)
        self.dataset = dataset
        self.mem = (rng.normal(size=(n, DIM)) * rng.uniform(0.1, 30, size=(n, 1))).astype(np.float32)
        self.queries = rng.normal(size=(len(dataset.questions), DIM)).astype(np.float32)
        # a question's vector near one of the memories: candidates spread over raw scores
        near = rng.integers(0, n, len(dataset.questions))
        unit = self.mem / np.linalg.norm(self.mem, axis=1, keepdims=True)
        self.queries = (unit[near] * 3 + self.queries * 0.3).astype(np.float32)
        self.users = [USERS[int(u)] for u in rng.integers(0, 2, n)]
        self.ids = list(range(n)) if point_ids is None else list(point_ids)
        self.memories = [
            replace(m, payload={"user_id": u}, point_id=p)
            for m, u, p in zip(dataset.memories, self.users, self.ids, strict=True)
        ]
        self.table = ScoreTable(
            dataset.question_ids, dataset.memory_ids, cosine_table(self.queries, self.mem), "embedded"
        )
        self.asked = [
            d.astype("datetime64[s]").item().replace(tzinfo=UTC) for d in dataset.question_references()
        ]

    def payload(self, i: int, schema: CollectionSchema = DEFAULT_SCHEMA) -> dict:
        m = self.dataset.memories[i]
        return {
            schema.id_field: m.id,
            schema.date_field: schema.date_value(m.date),
            schema.text_field: m.text("en"),
            "user_id": self.users[i],
        }

    def shard_members(self, shards: int) -> list[list[int]]:
        where = shard_of(self.ids, shards)
        return [[i for i in range(len(self.ids)) if where[i] == s] for s in range(shards)]

    def local(self, shards: int = 1) -> list[QdrantClient]:
        """One local-mode collection per shard, as the application writes it."""
        out = []
        for members in self.shard_members(shards):
            client = QdrantClient(":memory:")
            client.create_collection(
                COLLECTION, vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
            )
            if members:
                client.upsert(
                    COLLECTION,
                    points=[
                        models.PointStruct(
                            id=self.ids[i], vector=self.mem[i].tolist(), payload=self.payload(i)
                        )
                        for i in members
                    ],
                )
            out.append(client)
        return out

    def edge(self, root, shards: int = 1) -> list:
        """One engine shard per shard, each with the date's range index and the user's keyword one."""
        from memlab.qdrant import edge

        qe = edge.engine()
        out = []
        for s, members in enumerate(self.shard_members(shards)):
            shard = edge.create_shard(root / f"shard-{shards}-{s}", DIM)
            shard.update(qe.UpdateOperation.create_field_index("user_id", qe.PayloadSchemaType.Keyword))
            if members:
                points = [qe.Point(self.ids[i], {"": self.mem[i].tolist()}, self.payload(i)) for i in members]
                shard.update(qe.UpdateOperation.upsert_points(points))
            out.append(shard)
        return out

    def reference(self, spec: RetrievalSpec, user: str | None = None, shards: int = 1):
        scope = Scope(filters=(("user_id", user),) if user else (), shards=shards)
        return evaluate(self.dataset, self.table, spec, pool=scope.pool(self.memories))


def same(got: list[RetrievedMemory], result, world: World, where) -> None:
    """The retriever's memories are the reference's injected ones, in its order, with its scores."""
    want = [c for c in result.candidates if c.injected]
    index = {p: i for i, p in enumerate(world.ids)}
    assert [world.dataset.memory_ids[index[m.id]] for m in got] == [c.memory_id for c in want], (where, got)
    for m, c in zip(got, want, strict=True):
        assert abs(m.final - c.final) <= TOL and abs(m.raw - c.raw) <= TOL, (where, m, c)
        memory = world.dataset.memories[c.index]
        assert m.text == memory.text("en") and m.date == memory.date, (where, m)
        assert m.payload["memory_id"] == memory.id and m.payload["user_id"] == world.users[c.index]


def spec_of(decay: str, combine: str, **fields) -> RetrievalSpec:
    base = {"candidates": 5, "inject": 3, "threshold": 0.3, "bonus": 0.2, "tau_days": 6.0}
    return RetrievalSpec(**{**base, **fields}, decay=decay, combine=combine)


class Cuts:
    """How often each rule decided something, so a test shows it exercised them."""

    def __init__(self):
        self.questions = self.by_threshold = self.by_inject = self.empty = 0

    def add(self, result, spec: RetrievalSpec) -> None:
        reach = [c for c in result.candidates if c.reaches]
        self.questions += 1
        self.by_threshold += len(reach) < len(result.candidates)
        self.by_inject += len(reach) > spec.inject
        self.empty += not reach


# (tenant, shards) per family: the engine runs every pair; local mode (a Python re-implementation
# that reads every payload's date per query, about 20 ms a query) the two that cover both
EVERY_SCOPE = ((None, 1), ("alice", 1), (None, 2), ("alice", 2))
LOCAL_SCOPES = ((None, 1), ("alice", 2))


def check_world(world: World, stores_of, cuts: Cuts, scopes=EVERY_SCOPE) -> None:
    """Every family and combine, under each (tenant filter, shard count) of ``scopes``."""
    stores = {n: stores_of(n) for n in sorted({n for _, n in scopes})}
    for decay, combine in FAMILIES:
        spec = spec_of(decay, combine)
        for user, shards in scopes:
            retriever = Retriever.from_spec(
                spec,
                client=stores[shards] if shards > 1 else stores[shards][0],
                collection=COLLECTION,
                filter={"user_id": user} if user else None,
            )
            ev = world.reference(spec, user, shards)
            for i, result in enumerate(ev.results):
                got = retriever.retrieve(world.queries[i], asked=world.asked[i])
                where = (world.dataset.name, shards, decay, combine, user, result.question_id)
                same(got, result, world, where)
                cuts.add(result, spec)


@pytest.fixture(scope="module")
def worlds():
    return [World(load_dataset(name), seed) for seed, name in enumerate(PACKAGED)]


@pytest.mark.parametrize("which", range(len(PACKAGED)), ids=PACKAGED)
def test_local_mode_equals_the_reference_on_the_packaged_datasets(worlds, which):
    cuts = Cuts()
    world = worlds[which]
    check_world(world, world.local, cuts, LOCAL_SCOPES)
    n = len(world.dataset.questions) * len(FAMILIES) * len(LOCAL_SCOPES)
    assert cuts.questions == n
    assert cuts.by_threshold > n / 10 and cuts.by_inject > 0, vars(cuts)


@pytest.mark.qdrant_edge
def test_the_real_engine_equals_the_reference_on_the_packaged_datasets(worlds, tmp_path):
    cuts = Cuts()
    for world in worlds:
        check_world(world, lambda n, w=world: w.edge(tmp_path / w.dataset.name, n), cuts)
    n = sum(len(w.dataset.questions) for w in worlds) * len(FAMILIES) * len(EVERY_SCOPE)
    assert cuts.questions == n
    assert cuts.by_threshold > n / 10 and cuts.by_inject > n / 10 and cuts.empty > 0, vars(cuts)


def random_world(seed: int, uuids: bool) -> World:
    """Random memories (dates over 60 days, some written after the questions) and questions
    asked at random times; point ids integers or UUIDs."""
    rng = np.random.default_rng(seed)
    n, q = int(rng.integers(20, 60)), 8
    memories = tuple(
        Memory(f"r{i}", REF - timedelta(seconds=int(s)), {"en": f"random memory {i}"}, "", "synthetic")
        for i, s in enumerate(rng.integers(-3 * 86400, 60 * 86400, n))
    )
    questions = tuple(
        Question(f"q{j}", "hit", {"en": f"question {j}"}, date=REF - timedelta(seconds=int(s)))
        for j, s in enumerate(rng.integers(0, 10 * 86400, q))
    )
    ds = Dataset(f"random-{seed}", REF, ("en",), memories, questions)
    ids = [str(uuid.UUID(int=int(rng.integers(0, 2**62)) << 64 | i)) for i in range(n)] if uuids else None
    return World(ds, 100 + seed, ids)


@pytest.mark.parametrize("seed", range(4))
def test_random_stores_equal_the_reference(seed, tmp_path):
    """Random specs on random stores: local mode and the engine, 1 to 3 shards."""
    rng = np.random.default_rng(seed)
    world = random_world(seed, uuids=bool(seed % 2))
    shards = 1 + seed % 3
    local = world.local(shards)
    for case in range(6):
        decay, combine = FAMILIES[(seed + case) % len(FAMILIES)]
        spec = spec_of(
            decay,
            combine,
            candidates=int(rng.integers(1, 10)),
            inject=int(rng.integers(1, 6)),
            threshold=float(rng.uniform(-0.2, 0.6)),
            bonus=float(rng.choice([0.0, rng.uniform(0, 0.5)])),
            tau_days=float(rng.uniform(0.5, 30)),
        )
        user = (None, "bob")[case % 2]
        retriever = Retriever.from_spec(spec, client=local, collection=COLLECTION)
        ev = world.reference(spec, user, shards)
        for i, result in enumerate(ev.results):
            got = retriever.retrieve(
                world.queries[i], world.asked[i], filter={"user_id": user} if user else None
            )
            same(got, result, world, (seed, case, result.question_id))


@pytest.mark.qdrant_edge
@pytest.mark.parametrize("seed", range(2))
def test_random_stores_on_the_engine_equal_the_reference(seed, tmp_path):
    world = random_world(10 + seed, uuids=bool(seed))
    shards = 2 + seed
    engine = world.edge(tmp_path, shards)
    for decay, combine in FAMILIES:
        spec = spec_of(decay, combine, candidates=4, inject=2, threshold=0.1)
        retriever = Retriever.from_spec(spec, client=engine)
        ev = world.reference(spec, "alice", shards)
        for i, result in enumerate(ev.results):
            same(retriever.retrieve(world.queries[i], world.asked[i], {"user_id": "alice"}), result, world, i)


def tuned_file(tmp_path, spec: RetrievalSpec, collection: dict, model=None):
    tuned = TunedSpec(spec, model, "embedded", {"name": "seed16"}, ("en",), collection=collection)
    return save_tuned(tmp_path / "tuned.yaml", tuned)


def test_from_file_applies_the_filter_and_the_shards_it_records(worlds, tmp_path):
    """A file tuned for alice on two shards: every call is alice's, on the two shards given;
    a text is embedded by the embedder given (here: the question's own vector)."""
    world = worlds[1]  # seed16-time: every question's text its own
    spec = spec_of("gauss", "mult")
    path = tuned_file(tmp_path, spec, {"filters": ["user_id=alice"], "shards": 2, "shard_key": None})
    vector_of = {q.text("en"): world.queries[i] for i, q in enumerate(world.dataset.questions)}
    assert len(vector_of) == len(world.dataset.questions)
    retriever = Retriever.from_file(
        path, client=world.local(2), collection=COLLECTION, embedder=vector_of.get
    )
    ev = world.reference(spec, "alice", 2)
    assert ev.results != world.reference(spec, None, 2).results  # the filter matters here
    for i, (q, result) in enumerate(zip(world.dataset.questions, ev.results, strict=True)):
        got = retriever.retrieve(q.text("en"), asked=world.asked[i])
        same(got, result, world, q.id)
        assert got == retriever.retrieve(world.queries[i], asked=world.asked[i], filter={"user_id": "alice"})
        assert all(m.payload["user_id"] == "alice" for m in got)


def test_a_limit_and_the_ways_to_say_when(worlds):
    world = worlds[0]
    spec = spec_of("exp", "add", inject=2, threshold=-1.0)
    retriever = Retriever.from_spec(spec, client=world.local()[0], collection=COLLECTION)
    when = world.asked[0]
    five = retriever.retrieve(world.queries[0], asked=when, limit=5)
    ev = world.reference(replace(spec, inject=5))
    same(five, ev.results[0], world, "limit 5")
    assert len(five) == 5 and retriever.retrieve(world.queries[0], asked=when) == five[:2]
    for asked in (
        when.date(),
        when.date().isoformat(),
        when.replace(tzinfo=None),
        "2026-09-10T00:00:00+00:00",
    ):
        assert retriever.retrieve(world.queries[0], asked=asked) == five[:2], asked
    now = asked_time(None)
    assert now.tzinfo is not None and abs((datetime.now(UTC) - now).total_seconds()) < 5


def test_the_async_retriever_equals_the_retriever(worlds, tmp_path):
    """The same collection in an AsyncQdrantClient: the same memories for every question and
    family, with and without the tenant filter (each question's calls at once)."""
    world = worlds[1]

    async def main():
        client = AsyncQdrantClient(":memory:")
        await client.create_collection(
            COLLECTION, vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
        )
        await client.upsert(
            COLLECTION,
            points=[
                models.PointStruct(id=i, vector=world.mem[i].tolist(), payload=world.payload(i))
                for i in range(len(world.ids))
            ],
        )
        sync = world.local()[0]
        compared = 0
        for f, (decay, combine) in enumerate(FAMILIES):
            spec = spec_of(decay, combine)
            a = AsyncRetriever.from_spec(spec, client=client, collection=COLLECTION)
            s = Retriever.from_spec(spec, client=sync, collection=COLLECTION)
            for user in (None, "bob") if f == 0 else ((None, "bob")[f % 2],):
                flt = {"user_id": user} if user else None
                answers = await asyncio.gather(
                    *(a.retrieve(world.queries[i], world.asked[i], flt) for i in range(len(world.asked)))
                )
                for i, got in enumerate(answers):
                    assert got == s.retrieve(world.queries[i], world.asked[i], flt), (decay, combine, user, i)
                    compared += len(got)
        await client.close()
        return compared

    assert asyncio.run(main()) > 50


@pytest.mark.qdrant_edge
def test_the_async_retriever_on_engine_shards(worlds, tmp_path):
    world = worlds[2]
    shards = world.edge(tmp_path, 2)
    spec = spec_of("lin", "add")
    a = AsyncRetriever.from_spec(spec, client=shards)
    ev = world.reference(spec, None, 2)

    async def main():
        return await asyncio.gather(
            *(a.retrieve(world.queries[i], world.asked[i]) for i in range(len(ev.results)))
        )

    for got, result in zip(asyncio.run(main()), ev.results, strict=True):
        same(got, result, world, result.question_id)


# -- errors: one line each, with the facts -------------------------------------------------------


def one_line(excinfo) -> str:
    text = str(excinfo.value)
    assert isinstance(excinfo.value, MemlabError) and "\n" not in text, text
    return text


def test_a_missing_collection(worlds):
    client = worlds[0].local()[0]
    with pytest.raises(InputError) as e:
        Retriever.from_spec(RetrievalSpec(), client=client, collection="notes")
    assert one_line(e) == "no collection 'notes' in :memory: (collections: memories)"


def test_a_query_vector_of_another_dimension(worlds, tmp_path):
    world = worlds[0]
    retriever = Retriever.from_spec(RetrievalSpec(), client=world.local()[0], collection=COLLECTION)
    with pytest.raises(InputError) as e:
        retriever.retrieve([0.5] * 5, asked=REF)
    assert one_line(e) == (
        "collection 'memories' in :memory: (qdrant-client local mode) holds 24-dimensional vectors, and the "
        "query vector has 5 dimensions: not the model the collection was embedded with"
    )
    embedded = Retriever.from_spec(
        RetrievalSpec(), client=world.local()[0], collection=COLLECTION, embedder=lambda text: [1.0] * 7
    )
    with pytest.raises(InputError, match="query vector has 7 dimensions"):
        embedded.retrieve("where did I eat?", asked=REF)


@pytest.mark.qdrant_edge
def test_a_query_vector_of_another_dimension_on_the_engine(worlds, tmp_path):
    retriever = Retriever.from_spec(RetrievalSpec(), client=worlds[0].edge(tmp_path))
    with pytest.raises(InputError) as e:
        retriever.retrieve([0.5] * 5, asked=REF)
    assert one_line(e) == (
        "the qdrant-edge shard: the engine refused the query: Vector dimension error: expected dim: 24, got 5"
    )


def test_a_call_that_contradicts_the_tuned_filter(worlds, tmp_path):
    path = tuned_file(
        tmp_path, RetrievalSpec(), {"filters": ["user_id=alice"], "shards": 1, "shard_key": None}
    )
    retriever = Retriever.from_file(path, client=worlds[0].local()[0], collection=COLLECTION)
    with pytest.raises(InputError) as e:
        retriever.retrieve(worlds[0].queries[0], REF, filter={"user_id": "bob"})
    assert one_line(e) == (
        f"{path} is for user_id=alice, and the call asks user_id=bob: its spec was tuned on those memories "
        "(tune again with --filter user_id=bob, or leave user_id out)"
    )
    with pytest.raises(InputError, match="is for user_id=alice, and the call asks user_id=bob"):
        Retriever.from_file(
            path, client=worlds[0].local()[0], collection=COLLECTION, filter={"user_id": "bob"}
        )
    # narrowing it is no contradiction
    assert retriever.retrieve(worlds[0].queries[0], REF, filter={"user_id": "alice"}) == retriever.retrieve(
        worlds[0].queries[0], REF
    )


def test_a_file_tuned_for_other_shards(worlds, tmp_path):
    path = tuned_file(tmp_path, RetrievalSpec(), {"filters": [], "shards": 2, "shard_key": None})
    with pytest.raises(InputError) as e:
        Retriever.from_file(path, client=worlds[0].local()[0], collection=COLLECTION)
    assert one_line(e) == (
        f"{path} was tuned for 2 shards (Qdrant's id hashing), and collection 'memories' in :memory: "
        "(qdrant-client local mode) has 1 shard: each shard picks its own candidates, so the memories differ "
        "(give the shards, or tune again with --shards 1)"
    )
    Retriever.from_file(path, client=worlds[0].local(2), collection=COLLECTION)  # the two shards: fine


def test_a_missing_payload_field(worlds):
    """A layout that does not fit the collection is refused when the retriever is made (its first
    point is read); a point that lacks a field among ones that have it, when it is returned."""
    world = worlds[0]
    with pytest.raises(InputError) as e:
        Retriever.from_spec(
            RetrievalSpec(),
            client=world.local()[0],
            collection=COLLECTION,
            layout=CollectionSchema(text_field="body"),
        )
    assert one_line(e) == (
        "collection 'memories' in :memory: (qdrant-client local mode): point 0 has no payload field 'body' "
        "(the layout's text field; its fields: date, memory_id, text, user_id)"
    )
    client = points_collection(
        [(1, {"date": "2026-09-01T00:00:00Z", "text": "first"}), (2, {"date": "2026-09-02T00:00:00Z"})]
    )
    retriever = Retriever.from_spec(
        spec_of("exp", "add", threshold=-1.0), client=client, collection=COLLECTION
    )
    with pytest.raises(InputError) as e:
        retriever.retrieve([1.0, 0.0], asked=REF)
    assert one_line(e) == (
        "collection 'memories' in :memory: (qdrant-client local mode): point 2 has no payload field 'text' "
        "(the layout's text field; its fields: date)"
    )


def points_collection(points) -> QdrantClient:
    """A local collection of 2-dimensional points: (id, payload)."""
    client = QdrantClient(":memory:")
    client.create_collection(
        COLLECTION, vectors_config=models.VectorParams(size=2, distance=models.Distance.COSINE)
    )
    if points:
        client.upsert(
            COLLECTION, points=[models.PointStruct(id=i, vector=[1.0, 0.1 * i], payload=p) for i, p in points]
        )
    return client


@pytest.mark.parametrize(
    ("payload", "layout", "message"),
    [
        (
            {"date": 1757462400, "text": "a"},
            DEFAULT_SCHEMA,
            "point 7: date: expected a date string like '2026-09-01', got 1757462400 (the layout's date format is iso)",
        ),
        (
            {"date": "2026-09-01T00:00:00Z", "text": "a"},
            CollectionSchema(date_format="epoch-s"),
            "point 7: date: expected a number (epoch-s), got '2026-09-01T00:00:00Z' (the layout's date format is epoch-s)",
        ),
        (
            {"date": "2026-09-01T00:00:00Z", "text": ["a"]},
            DEFAULT_SCHEMA,
            "point 7: text: expected text, got ['a']",
        ),
        (
            {"text": "a"},
            DEFAULT_SCHEMA,
            "point 7 has no payload field 'date' (the layout's date field; its fields: text)",
        ),
    ],
)
def test_a_payload_the_layout_cannot_read(payload, layout, message):
    """Dates in another format than the layout says would match no query (the filter cannot
    compare them) and return nothing, silently: the first point is read when the retriever is made."""
    client = points_collection([(7, payload)])
    with pytest.raises(InputError) as e:
        Retriever.from_spec(RetrievalSpec(), client=client, collection=COLLECTION, layout=layout)
    assert one_line(e) == f"collection 'memories' in :memory: (qdrant-client local mode): {message}"


@pytest.mark.qdrant_edge
def test_a_payload_the_layout_cannot_read_on_the_engine(worlds, tmp_path):
    with pytest.raises(InputError) as e:
        Retriever.from_spec(
            RetrievalSpec(), client=worlds[0].edge(tmp_path), layout=CollectionSchema(text_field="body")
        )
    assert one_line(e) == (
        "the qdrant-edge shard: point 0 has no payload field 'body' (the layout's text field; its fields: "
        "date, memory_id, text, user_id)"
    )


NESTED = CollectionSchema(
    date_field="metadata.ts", date_format="epoch-s", text_field="page_content", user_field="metadata.user"
)


def nested_collection(world: World) -> QdrantClient:
    """Another application's layout: the text at the top, the date (epoch seconds) and the user
    inside ``metadata``."""
    client = QdrantClient(":memory:")
    client.create_collection(
        COLLECTION, vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
    )
    client.upsert(
        COLLECTION,
        points=[
            models.PointStruct(
                id=i,
                vector=world.mem[i].tolist(),
                payload={
                    "page_content": m.text("en"),
                    "metadata": {"ts": int(m.date.timestamp()), "user": world.users[i], "memory_id": m.id},
                },
            )
            for i, m in enumerate(world.dataset.memories)
        ],
    )
    return client


def test_a_layout_naming_nested_fields_and_epoch_dates(worlds):
    world = worlds[0]
    spec = spec_of("exp", "mult")
    retriever = Retriever.from_spec(
        spec, client=nested_collection(world), collection=COLLECTION, layout=NESTED
    )
    ev = world.reference(spec, "bob")
    for i, result in enumerate(ev.results):
        got = retriever.retrieve(world.queries[i], world.asked[i], user="bob")
        want = [c for c in result.candidates if c.injected]
        assert [m.id for m in got] == [c.index for c in want], result.question_id
        assert all(abs(m.final - c.final) <= TOL for m, c in zip(got, want, strict=True))
        assert [m.text for m in got] == [world.dataset.memories[c.index].text("en") for c in want]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"client": "localhost:6333"}, "client: expected a qdrant_client.QdrantClient, an AsyncQdrantClient"),
        (
            {"client": AsyncQdrantClient(":memory:")},
            "client: an AsyncQdrantClient: use memlab.AsyncRetriever",
        ),
        (
            {"client": QdrantClient(":memory:"), "collection": None},
            "collection: give the name of the collection",
        ),
        ({"filter": {"user_id": ""}}, "filter: user_id: expected a non-empty text or an integer, got ''"),
        (
            {"embedder": 3},
            "embedder: expected a memlab Embedder or a function from a text to its vector, got int",
        ),
    ],
)
def test_bad_arguments(worlds, kwargs, message):
    args = {"client": worlds[0].local()[0], "collection": COLLECTION, **kwargs}
    with pytest.raises(InputError) as e:
        Retriever.from_spec(RetrievalSpec(), **args)
    assert one_line(e).startswith(message)


def test_bad_calls(worlds, tmp_path):
    world = worlds[0]
    path = tuned_file(tmp_path, RetrievalSpec(), {})
    retriever = Retriever.from_file(path, client=world.local()[0], collection=COLLECTION)
    for query, asked, message in (
        ("what did I eat?", REF, f"{path} records no embedding model (tuned on published scores)"),
        ([1.0, float("nan")], REF, "query: expected one non-empty vector of finite numbers"),
        (world.queries[0], "tomorrow", "asked: 'tomorrow' is not a date"),
        (world.queries[0], 3, "asked: expected a datetime, a date or an ISO 8601 text, got 3"),
    ):
        with pytest.raises(InputError) as e:
            retriever.retrieve(query, asked)
        assert one_line(e).startswith(message), (query, asked)
    with pytest.raises(InputError) as e:
        retriever.retrieve(world.queries[0], REF, limit=0)
    assert one_line(e) == "limit: expected an integer >= 1, got 0"
    with pytest.raises(InputError) as e:
        retriever.retrieve(world.queries[0], REF, user="bob")
    assert one_line(e) == "user: the layout names no user field (CollectionSchema.user_field)"


def test_an_embedder_of_another_model_is_refused(worlds, tmp_path):
    from memlab.embedding.embedder import ModelIdentity

    class Other:
        model = ModelIdentity("other", "other/model", {"engine": "x", "weights": "2"})

        def encode_queries(self, texts):
            return np.ones((len(texts), DIM))

    tuned = {"name": "e5", "model_id": "intfloat/e5", "identity": {"engine": "x", "weights": "1"}}
    path = tuned_file(tmp_path, RetrievalSpec(), {}, model=tuned)
    with pytest.raises(InputError) as e:
        Retriever.from_file(path, client=worlds[0].local()[0], collection=COLLECTION, embedder=Other())
    assert one_line(e) == (
        f"{path} was tuned on scores from intfloat/e5, the embedder is other/model: its threshold and bonus "
        "are on another model's scale (embed with the tuned model, or tune again)"
    )
    Other.model = ModelIdentity("e5", "intfloat/e5", tuned["identity"])  # the same model: accepted
    got = Retriever.from_file(path, client=worlds[0].local()[0], collection=COLLECTION, embedder=Other())
    assert isinstance(got.retrieve("anything", REF), list)


@pytest.mark.model
def test_from_a_sweeps_file_the_recorded_model_embeds_the_question(tmp_path, cache_dir, monkeypatch):
    """End to end: ``memlab sweep --save`` on seed16's embedded scores, memlab's store of its
    vectors, and the retriever asked each question's text: the model the file records embeds it
    (no embedder given), and the memories are what ``memlab evaluate --spec`` injects."""
    from memlab.app.cli import main
    from memlab.qdrant.store import MemoryStore
    from memlab.scores.sources import ScoreOptions
    from memlab.tuning.tuned import tuned_problem

    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(cache_dir))
    path = tmp_path / "tuned.yaml"
    assert main(["sweep", "--dataset", "seed16", "--source", "embedded", "--save", str(path)]) == 0
    problem = tuned_problem(path, "seed16", ScoreOptions())
    ds = problem.dataset
    store = MemoryStore.from_dataset(ds, problem.memory_vectors())
    retriever = Retriever.from_file(path, client=store.client, collection=store.collection)
    ev = evaluate(problem)
    injected = 0
    for q, result in zip(ds.questions, ev.results, strict=True):
        got = retriever.retrieve(q.text("en"), asked=q.date or ds.reference_date)
        want = [c for c in result.candidates if c.injected]
        assert [m.payload["memory_id"] for m in got] == [c.memory_id for c in want], q.id
        assert all(abs(m.final - c.final) <= TOL for m, c in zip(got, want, strict=True)), q.id
        injected += len(got)
    assert injected > 0


def test_an_imported_datasets_collection_and_layout_come_with_the_file(worlds, tmp_path):
    """A file tuned on a dataset ``memlab import-qdrant`` wrote: the collection's name and layout
    are read from its ``dataset.json`` (``qdrant``); a layout given beside it wins."""
    import json

    world = worlds[0]
    folder = tmp_path / "imported"
    folder.mkdir()
    qdrant = {"collection": COLLECTION, "date_field": "metadata.ts", "date_format": "epoch-s"}
    (folder / "dataset.json").write_text(
        json.dumps({"name": "imported", "qdrant": {**qdrant, "text_field": "page_content"}})
    )
    spec = spec_of("lin", "add", threshold=-1.0)
    tuned = TunedSpec(spec, None, "embedded", {"name": "imported", "reference": str(folder)}, ("en",))
    path = save_tuned(tmp_path / "tuned.yaml", tuned)
    client = nested_collection(world)
    retriever = Retriever.from_file(path, client=client)
    assert retriever.layout == replace(NESTED, user_field=None)
    got = retriever.retrieve(world.queries[0], world.asked[0])
    assert [m.id for m in got] == [c.index for c in world.reference(spec).results[0].candidates if c.injected]
    with pytest.raises(InputError, match="has no payload field 'text'"):
        Retriever.from_file(path, client=client, layout=replace(NESTED, text_field="text")).retrieve(
            world.queries[0], world.asked[0]
        )
    (folder / "dataset.json").write_text(json.dumps({"qdrant": {**qdrant, "date_format": "rfc"}}))
    with pytest.raises(InputError) as e:
        Retriever.from_file(path, client=client)
    assert one_line(e).startswith(f"{path}: its dataset's {folder / 'dataset.json'}: ")


def test_an_empty_collection_recalls_nothing():
    """A new user's store: no point yet, no memory, no error."""
    client = points_collection([])
    assert (
        Retriever.from_spec(RetrievalSpec(), client=client, collection=COLLECTION).retrieve([1.0, 0.0]) == []
    )
