"""memlab.Retriever with a rerank stage: the pool query, every (question, memory) pair scored by the
reranker the stage names, blended and thresholded, equals memlab's one-config stage reference
(``memlab.core.rerank_stage.stage_injected`` over the pool of ``memlab.studies.rerank``, scored by
``score_pool``) question by question, on qdrant-client's local mode and on the real engine.

The reranker is the stand-in server of ``tests/rerank_standin.py`` (a cosine of word-hashed
embeddings, named plainly as a stand-in: no reranking model installs here). The stores hold the
packaged datasets' embedded vectors (seed16, daily-lunch: the score table the reference reads is
the cosines of those very vectors) and a random store of random vectors and texts of a small
vocabulary (so the stand-in's scores differ between pairs). Each case counts what the threshold,
the inject limit and the reranker decided, so a test shows it exercised them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from qdrant_client import AsyncQdrantClient, QdrantClient, models

from memlab import AsyncRetriever, RetrievalSpec, Retriever
from memlab.core.errors import InputError, MemlabError
from memlab.core.rerank_stage import RerankStage, stage_injected
from memlab.core.vectors import cosine_table
from memlab.datasets.schema import Dataset, Memory, Question
from memlab.qdrant.query import DEFAULT_SCHEMA
from memlab.rerank.cache import ScoreCache
from memlab.rerank.clients import Reranker, RerankerConfig
from memlab.scores.problem import RetrievalProblem, build_problem
from memlab.scores.sources import ScoreOptions, ScoreTable
from memlab.studies.rerank import rerank_pool, score_pool
from memlab.tuning.tuned import TunedSpec, save_tuned
from tests.rerank_standin import MODEL, StandinRerankServer

COLLECTION = "memories"
TOL = 1e-6  # the engine scores in float32, memlab in float64
DEPTH, BLEND = 6, 0.5


@pytest.fixture(scope="module")
def standin():
    server = StandinRerankServer()
    url = server.__enter__()
    yield server, url
    server.__exit__(None, None, None)


def config(url: str, **kw) -> RerankerConfig:
    return RerankerConfig("endpoint", url, model=MODEL, **kw)


def payload(memory: Memory) -> dict:
    s = DEFAULT_SCHEMA
    return {s.id_field: memory.id, s.date_field: s.date_value(memory.date), s.text_field: memory.text("en")}


def local_store(ds: Dataset, vectors: np.ndarray) -> QdrantClient:
    client = QdrantClient(":memory:")
    client.create_collection(
        COLLECTION,
        vectors_config=models.VectorParams(size=vectors.shape[1], distance=models.Distance.COSINE),
    )
    client.upsert(
        COLLECTION,
        points=[
            models.PointStruct(id=i, vector=vectors[i].tolist(), payload=payload(m))
            for i, m in enumerate(ds.memories)
        ],
    )
    return client


def edge_store(root, ds: Dataset, vectors: np.ndarray):
    from memlab.qdrant import edge

    qe = edge.engine()
    shard = edge.create_shard(root, vectors.shape[1])
    points = [qe.Point(i, {"": vectors[i].tolist()}, payload(m)) for i, m in enumerate(ds.memories)]
    shard.update(qe.UpdateOperation.upsert_points(points))
    return shard


@dataclass
class Case:
    """A problem, its query vectors, the stage and the reference's pool, scores and mask."""

    problem: RetrievalProblem
    queries: np.ndarray
    stage: RerankStage
    index: np.ndarray  # (Q, P) the pool's memory indices
    final: np.ndarray
    rerank: np.ndarray
    blended: np.ndarray
    injected: np.ndarray

    @classmethod
    def of(cls, problem: RetrievalProblem, queries: np.ndarray, url: str) -> Case:
        pool = rerank_pool(problem, DEPTH)
        scores = score_pool(problem, pool, Reranker(config(url)))
        known = pool.index >= 0
        # a threshold inside the blended scores, so that it cuts on some questions and not others
        blended_all = (1 - BLEND) * pool.final + BLEND * scores
        threshold = float(np.quantile(blended_all[known], 0.35))
        blended, injected = stage_injected(
            pool.raw, pool.final, scores, DEPTH, BLEND, threshold, problem.spec.inject
        )
        stage = RerankStage("endpoint", DEPTH, BLEND, threshold, MODEL)
        return cls(problem, queries, stage, pool.index, pool.final, scores, blended, injected)

    def asked(self, q: int) -> datetime:
        ds = self.problem.dataset
        return ds.questions[q].date or ds.reference_date

    def check(self, retriever, counts: dict, where) -> None:
        """Every question: the retriever's memories are the reference's injected set, best first
        by the blended score, with the reference's final, reranker and blended scores."""
        ds, spec = self.problem.dataset, self.problem.spec
        for q, question in enumerate(ds.questions):
            got = retriever.retrieve(self.queries[q], asked=self.asked(q), text=question.text("en"))
            places = np.flatnonzero(self.injected[q])
            want = {ds.memory_ids[int(self.index[q, p])]: p for p in places}
            assert sorted(m.payload["memory_id"] for m in got) == sorted(want), (where, question.id)
            for m in got:
                p = want[m.payload["memory_id"]]
                assert abs(m.final - self.final[q, p]) <= TOL, (where, question.id, m)
                assert m.rerank == pytest.approx(self.rerank[q, p], abs=1e-12), (where, m)
                assert abs(m.blended - self.blended[q, p]) <= TOL, (where, m)
                assert m.text == ds.memories[int(self.index[q, p])].text("en")
            shown = [m.blended for m in got]
            assert shown == sorted(shown, reverse=True), (where, question.id)
            known = self.index[q] >= 0
            reaching = int((self.blended[q, known] >= self.stage.threshold).sum())
            counts["questions"] += 1
            counts["threshold_cut"] += reaching < known.sum()
            counts["inject_cut"] += reaching > spec.inject
            # the stage changed what is injected: the spec's own top by final in the pool differs
            by_final = np.argsort(-np.where(known, self.final[q], -np.inf), kind="stable")[: len(places)]
            counts["reranked"] += set(by_final.tolist()) != set(places.tolist())


def retriever_of(case: Case, client, url: str, **kw):
    return Retriever.from_spec(
        case.problem.spec,
        client=client,
        collection=COLLECTION,
        rerank=case.stage,
        reranker=kw.pop("reranker", url),
        **kw,
    )


def embedded_case(name: str, url: str, cache_dir) -> tuple[Case, np.ndarray]:
    problem = build_problem(
        name, ScoreOptions(source="embedded", cache_dir=cache_dir), spec=RetrievalSpec(inject=2)
    )
    problem = problem.with_spec(replace(problem.spec, threshold=0.0))  # the stage thresholds, not the spec
    return Case.of(problem, problem.question_vectors(), url), problem.memory_vectors()


def check_packaged(name: str, url: str, cache_dir, store_of) -> None:
    case, vectors = embedded_case(name, url, cache_dir)
    counts = dict.fromkeys(("questions", "threshold_cut", "inject_cut", "reranked"), 0)
    ds = case.problem.dataset
    case.check(retriever_of(case, store_of(ds, vectors), url), counts, name)
    assert counts["questions"] == len(ds.questions)
    assert counts["threshold_cut"] > 0 and counts["inject_cut"] > 0 and counts["reranked"] > 0, counts


@pytest.mark.model
@pytest.mark.parametrize("name", ["seed16", "daily-lunch"])
def test_the_stage_on_the_packaged_datasets_in_local_mode_equals_the_reference(name, standin, cache_dir):
    check_packaged(name, standin[1], cache_dir, local_store)


@pytest.mark.model
@pytest.mark.qdrant_edge
@pytest.mark.parametrize("name", ["seed16", "daily-lunch"])
def test_the_stage_on_the_packaged_datasets_on_the_engine_equals_the_reference(
    name, standin, cache_dir, tmp_path
):
    check_packaged(name, standin[1], cache_dir, lambda ds, v: edge_store(tmp_path / "edge", ds, v))


WORDS = ("lunch", "dinner", "paris", "leeds", "coffee", "train", "sister", "doctor", "garden", "piano")


def random_case(seed: int, url: str) -> tuple[Case, np.ndarray]:
    rng = np.random.default_rng(seed)
    ref = datetime(2026, 9, 10, tzinfo=UTC)
    n, nq, dim = 40, 8, 16

    def text() -> str:
        return " ".join(rng.choice(WORDS, size=int(rng.integers(2, 5))))

    memories = tuple(
        Memory(f"r{i}", ref - timedelta(seconds=int(s)), {"en": text()}, "", "synthetic")
        for i, s in enumerate(rng.integers(-2 * 86400, 40 * 86400, n))
    )
    questions = tuple(
        Question(f"q{j}", "hit", {"en": text() + "?"}, date=ref - timedelta(seconds=int(s)))
        for j, s in enumerate(rng.integers(0, 5 * 86400, nq))
    )
    ds = Dataset(f"random-{seed}", ref, ("en",), memories, questions)
    vectors = (rng.normal(size=(n, dim)) * rng.uniform(0.5, 5, size=(n, 1))).astype(np.float32)
    queries = (vectors[rng.integers(0, n, nq)] + rng.normal(scale=0.6, size=(nq, dim))).astype(np.float32)
    table = ScoreTable(ds.question_ids, ds.memory_ids, cosine_table(queries, vectors), "embedded")
    spec = RetrievalSpec(candidates=4, inject=3, threshold=0.0, bonus=0.3, tau_days=5.0, decay="gauss")
    return Case.of(RetrievalProblem.of(ds, table, spec), queries, url), vectors


def test_a_random_store_in_local_mode_equals_the_reference(standin):
    _, url = standin
    counts = dict.fromkeys(("questions", "threshold_cut", "inject_cut", "reranked"), 0)
    for seed in range(3):
        case, vectors = random_case(seed, url)
        case.check(retriever_of(case, local_store(case.problem.dataset, vectors), url), counts, seed)
    assert counts["questions"] == 24
    assert counts["threshold_cut"] > 0 and counts["inject_cut"] > 0 and counts["reranked"] > 0, counts


@pytest.mark.qdrant_edge
def test_a_random_store_on_the_engine_equals_the_reference(standin, tmp_path):
    _, url = standin
    counts = dict.fromkeys(("questions", "threshold_cut", "inject_cut", "reranked"), 0)
    for seed in range(3):
        case, vectors = random_case(seed, url)
        shard = edge_store(tmp_path / f"edge-{seed}", case.problem.dataset, vectors)
        case.check(retriever_of(case, shard, url), counts, seed)
    assert counts["threshold_cut"] > 0 and counts["inject_cut"] > 0 and counts["reranked"] > 0, counts


def test_the_async_retriever_equals_the_retriever(standin):
    """The same collection in an AsyncQdrantClient, every question at once: the reranker's
    requests run in worker threads, each call on its own client."""
    _, url = standin
    case, vectors = random_case(7, url)
    ds = case.problem.dataset
    sync = retriever_of(case, local_store(ds, vectors), url)

    async def main():
        client = AsyncQdrantClient(":memory:")
        await client.create_collection(
            COLLECTION,
            vectors_config=models.VectorParams(size=vectors.shape[1], distance=models.Distance.COSINE),
        )
        await client.upsert(
            COLLECTION,
            points=[
                models.PointStruct(id=i, vector=vectors[i].tolist(), payload=payload(m))
                for i, m in enumerate(ds.memories)
            ],
        )
        a = AsyncRetriever.from_spec(
            case.problem.spec, client=client, collection=COLLECTION, rerank=case.stage, reranker=url
        )
        got = await asyncio.gather(
            *(
                a.retrieve(case.queries[q], case.asked(q), text=question.text("en"))
                for q, question in enumerate(ds.questions)
            )
        )
        await client.close()
        return got

    answers = asyncio.run(main())
    assert sum(len(a) for a in answers) > 5
    for q, (got, question) in enumerate(zip(answers, ds.questions, strict=True)):
        assert got == sync.retrieve(case.queries[q], case.asked(q), text=question.text("en")), question.id


def test_from_file_runs_the_stage_it_records_through_the_cache(standin, tmp_path):
    """A tuned file with a ``rerank`` record: the retriever reads the stage, asks the URL given,
    and a cache given serves the second call with no request; two requests in flight, the same."""
    server, url = standin
    case, vectors = random_case(3, url)
    ds = case.problem.dataset
    tuned = TunedSpec(case.problem.spec, None, "embedded", {"name": ds.name}, ("en",), rerank=case.stage)
    path = save_tuned(tmp_path / "tuned.yaml", tuned)
    client = local_store(ds, vectors)
    cache = ScoreCache(tmp_path / "cache")
    retriever = Retriever.from_file(
        path, client=client, collection=COLLECTION, reranker=url, rerank_cache=cache, rerank_concurrency=2
    )
    assert retriever.stage == case.stage
    question = ds.questions[0].text("en")
    first = retriever.retrieve(case.queries[0], case.asked(0), text=question)
    sent = len(server.bodies)
    assert retriever.retrieve(case.queries[0], case.asked(0), text=question) == first
    assert len(server.bodies) == sent and cache.hits == DEPTH  # every pair of the pool from the cache
    assert server.bodies[-1]["model"] == MODEL and len(server.bodies[-1]["documents"]) == DEPTH
    plain = Retriever.from_spec(case.problem.spec, client=client, collection=COLLECTION)
    spec_alone = plain.retrieve(case.queries[0], case.asked(0))
    assert all(m.rerank is None and m.blended is None for m in spec_alone)
    without = Retriever.from_file(path, client=client, collection=COLLECTION, rerank=None)
    assert without.stage is None and without.retrieve(case.queries[0], case.asked(0)) == spec_alone
    assert all(m.rerank is not None for m in first)


# -- refusals: one line each ---------------------------------------------------------------------


def one_line(excinfo) -> str:
    text = str(excinfo.value)
    assert isinstance(excinfo.value, MemlabError) and "\n" not in text, text
    return text


def test_a_bare_vector_is_refused(standin):
    _, url = standin
    case, vectors = random_case(1, url)
    retriever = retriever_of(case, local_store(case.problem.dataset, vectors), url)
    with pytest.raises(InputError) as e:
        retriever.retrieve(case.queries[0], case.asked(0))
    assert one_line(e) == (
        "query: the spec has a rerank stage, which scores the question's text: ask with the text, or give "
        "text= beside the vector"
    )


@pytest.mark.parametrize(
    ("reranker", "message"),
    [
        (
            None,
            f"the spec has a rerank stage (the endpoint reranker, model {MODEL}): give reranker= its server's "
            "base URL, a memlab.rerank.clients.RerankerConfig or a Reranker",
        ),
        (
            "chat",
            "reranker: the spec was tuned with the endpoint reranker, and the one given is the chat reranker: "
            "its blend and threshold are on that reranker's scale",
        ),
        (
            "other-model",
            f"reranker: the spec was tuned with the reranker model {MODEL}, and the one given asks other-model: "
            "its blend and threshold are on that model's scale",
        ),
        (
            3,
            "reranker: expected the reranking server's base URL, a memlab.rerank.clients.RerankerConfig or a Reranker, got int",
        ),
        ("ftp://x", "reranker: "),
    ],
)
def test_a_reranker_that_does_not_fit_the_stage(standin, reranker, message):
    _, url = standin
    case, vectors = random_case(2, url)
    given = {
        "chat": RerankerConfig("chat", url),
        "other-model": RerankerConfig("endpoint", url, model="other-model"),
    }.get(reranker, reranker)
    with pytest.raises(InputError) as e:
        Retriever.from_spec(
            case.problem.spec,
            client=local_store(case.problem.dataset, vectors),
            collection=COLLECTION,
            rerank=case.stage,
            reranker=given,
        )
    assert one_line(e).startswith(message)


def test_a_sharded_store_and_a_reranker_without_a_stage_are_refused(standin):
    _, url = standin
    case, vectors = random_case(4, url)
    ds = case.problem.dataset
    with pytest.raises(InputError) as e:
        retriever_of(case, [local_store(ds, vectors), local_store(ds, vectors)], url)
    assert one_line(e) == (
        "the spec has a rerank stage, measured on one shard, and the store has 2 shards: each shard would "
        f"return its own {DEPTH}, not the stage's pool (give one shard)"
    )
    with pytest.raises(InputError) as e:
        Retriever.from_spec(
            case.problem.spec, client=local_store(ds, vectors), collection=COLLECTION, reranker=url
        )
    assert one_line(e) == "reranker: the spec has no rerank stage (memlab rerank --save writes one)"


# -- the frameworks pass it through ---------------------------------------------------------------


@pytest.mark.framework
def test_the_langchain_retriever_returns_the_reranked_order(standin, tmp_path):
    """A store langchain-qdrant's ``QdrantVectorStore`` wrote (its vectors from an ``Embeddings``
    of the application's: here seeded random directions per text, unrelated to the stand-in's
    words), a tuned file with a rerank stage: LangChain's documents are memlab.Retriever's memories
    with the stage, in its order, which is not the spec's order without it."""
    pytest.importorskip("langchain_qdrant", reason="the langchain extra (make test installs it)")
    import zlib

    from langchain_core.embeddings import Embeddings
    from langchain_qdrant import QdrantVectorStore

    from memlab.integrations.langchain import MemlabRetriever
    from memlab.qdrant.presets import PRESETS

    class Seeded(Embeddings):
        def embed_documents(self, texts):
            return [self.embed_query(t) for t in texts]

        def embed_query(self, text):
            return np.random.default_rng(zlib.crc32(text.encode())).normal(size=16).tolist()

    _, url = standin
    case, _ = random_case(5, url)
    ds = case.problem.dataset
    store = QdrantVectorStore.from_texts(
        [m.text("en") for m in ds.memories],
        embedding=Seeded(),
        metadatas=[
            {"date": m.date.isoformat().replace("+00:00", "Z"), "memory_id": m.id} for m in ds.memories
        ],
        ids=list(range(len(ds.memories))),
        location=":memory:",
        collection_name=COLLECTION,
    )
    spec = replace(case.problem.spec, candidates=6, inject=3)
    stage = replace(case.stage, threshold=-1.0)  # every pool memory reaches: the order decides
    tuned = TunedSpec(spec, None, "embedded", {"name": ds.name}, ("en",), rerank=stage)
    path = save_tuned(tmp_path / "tuned.yaml", tuned)
    ours = MemlabRetriever.from_file(
        path, client=store.client, collection=COLLECTION, embedding=Seeded(), reranker=url
    )
    layout = PRESETS["langchain"].layout(None)
    direct = Retriever.from_file(
        path,
        client=store.client,
        collection=COLLECTION,
        embedder=Seeded().embed_query,
        layout=layout,
        reranker=url,
    )
    plain = Retriever.from_spec(
        spec, client=store.client, collection=COLLECTION, embedder=Seeded().embed_query, layout=layout
    )
    differs = 0
    for q, question in enumerate(ds.questions):
        text, at = question.text("en"), case.asked(q)
        docs = ours.invoke(text, asked=at)
        want = direct.retrieve(text, at)
        assert [d.metadata["memory_id"] for d in docs] == [m.payload["metadata"]["memory_id"] for m in want]
        assert ours.retriever.layout == layout
        np.testing.assert_allclose(
            [d.metadata["blended_score"] for d in docs], [m.blended for m in want], atol=TOL
        )
        assert [d.page_content for d in docs] == [m.text for m in want] and len(docs) == 3
        differs += [m.id for m in plain.retrieve(text, at)] != [m.id for m in want]
    assert differs > 0
