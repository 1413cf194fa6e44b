"""The framework wrappers asked asynchronously: LangChain's ``ainvoke`` and LlamaIndex's
``aretrieve`` on a ``memlab.AsyncRetriever`` when given an ``AsyncQdrantClient``, over a store the
framework's own ``QdrantVectorStore`` wrote (its vectors from an embedding of the application's:
seeded random directions per text, so no model is loaded). Each question's async documents equal
the sync wrapper's on the same store (read by a ``QdrantClient`` first, then by an
``AsyncQdrantClient``: local mode locks its folder to one client), the questions asked at once."""

from __future__ import annotations

import asyncio
import uuid
import zlib

import numpy as np
import pytest
from framework_flow import companion_memories
from qdrant_client import AsyncQdrantClient, QdrantClient

from memlab.core.errors import InputError
from memlab.core.spec import RetrievalSpec
from memlab.tuning.tuned import TunedSpec, save_tuned

pytestmark = pytest.mark.framework

DIM = 16
TOL = 1e-6  # local mode scores in float32; its async and sync clients differ in the last bits


def same(got: list[list[tuple]], want: list[list[tuple]]) -> None:
    assert [[i for i, _ in g] for g in got] == [[i for i, _ in w] for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose([s for _, s in g], [s for _, s in w], atol=TOL)


QUESTIONS = ("Where does the user live?", "What does the user drink?", "Who is the user's sister?")
ASKED = "2026-11-29"


def seeded(text: str) -> list[float]:
    return np.random.default_rng(zlib.crc32(text.encode())).normal(size=DIM).tolist()


def tuned_file(tmp_path):
    spec = RetrievalSpec(candidates=6, inject=3, threshold=-1.0, bonus=0.2, tau_days=5.0)
    return save_tuned(tmp_path / "tuned.yaml", TunedSpec(spec, None, "embedded", {"name": "x"}, ("en",)))


def test_langchain_ainvoke_on_an_async_client(tmp_path):
    pytest.importorskip("langchain_qdrant", reason="the langchain extra (make test installs it)")
    from langchain_core.embeddings import Embeddings
    from langchain_qdrant import QdrantVectorStore

    from memlab import AsyncRetriever
    from memlab.integrations.langchain import MemlabRetriever

    class Seeded(Embeddings):
        def embed_documents(self, texts):
            return [seeded(t) for t in texts]

        def embed_query(self, text):
            return seeded(text)

    written = companion_memories()
    store = QdrantVectorStore.from_texts(
        [m["text"] for m in written],
        embedding=Seeded(),
        metadatas=[{"date": m["date"], "user_id": m["user"], "memory_id": m["id"]} for m in written],
        ids=[str(uuid.uuid5(uuid.NAMESPACE_URL, m["id"])) for m in written],
        path=str(tmp_path / "q"),
        collection_name="memories",
    )
    store.client.close()
    path = tuned_file(tmp_path)
    client = QdrantClient(path=str(tmp_path / "q"))
    sync = MemlabRetriever.from_file(path, client=client, collection="memories", embedding=Seeded())
    want = [
        [(d.id, d.metadata["final_score"]) for d in sync.invoke(q, asked=ASKED, user="ann")]
        for q in QUESTIONS
    ]
    # ainvoke on a sync client: the same, its retriever in a worker thread
    again = asyncio.run(sync.ainvoke(QUESTIONS[0], asked=ASKED, user="ann"))
    same([[(d.id, d.metadata["final_score"]) for d in again]], want[:1])
    client.close()

    async def main():
        aclient = AsyncQdrantClient(path=str(tmp_path / "q"))
        ours = MemlabRetriever.from_file(path, client=aclient, collection="memories", embedding=Seeded())
        assert isinstance(ours.retriever, AsyncRetriever)
        got = await asyncio.gather(*(ours.ainvoke(q, asked=ASKED, user="ann") for q in QUESTIONS))
        with pytest.raises(InputError, match="the retriever is on an AsyncQdrantClient: call ainvoke"):
            ours.invoke(QUESTIONS[0])
        await aclient.close()
        return got

    got = asyncio.run(main())
    same([[(d.id, d.metadata["final_score"]) for d in docs] for docs in got], want)
    assert all(len(w) == 3 for w in want) and len({tuple(w) for w in want}) == len(QUESTIONS)
    assert all(d.metadata["user_id"] == "ann" for docs in got for d in docs)


def test_llamaindex_aretrieve_on_an_async_client(tmp_path):
    pytest.importorskip(
        "llama_index.vector_stores.qdrant", reason="the llamaindex extra (make test installs it)"
    )
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import TextNode
    from llama_index.vector_stores.qdrant import QdrantVectorStore

    from memlab import AsyncRetriever
    from memlab.integrations.llamaindex import MemlabRetriever

    class Seeded(BaseEmbedding):
        def _get_query_embedding(self, query):
            return seeded(query)

        async def _aget_query_embedding(self, query):
            return seeded(query)

        def _get_text_embedding(self, text):
            return seeded(text)

    written = companion_memories()
    nodes = [
        TextNode(
            id_=str(uuid.uuid5(uuid.NAMESPACE_URL, m["id"])),
            text=m["text"],
            metadata={"date": m["date"], "user_id": m["user"], "memory_id": m["id"]},
        )
        for m in written
    ]
    client = QdrantClient(path=str(tmp_path / "q"))
    VectorStoreIndex(
        nodes,
        storage_context=StorageContext.from_defaults(
            vector_store=QdrantVectorStore(client=client, collection_name="memories")
        ),
        embed_model=Seeded(model_name="seeded"),
    )
    path = tuned_file(tmp_path)
    sync = MemlabRetriever.from_file(
        path,
        client=client,
        collection="memories",
        embed_model=Seeded(model_name="seeded"),
        asked=ASKED,
        user="bob",
    )
    want = [[(n.node.node_id, n.score) for n in sync.retrieve(q)] for q in QUESTIONS]
    same([[(n.node.node_id, n.score) for n in asyncio.run(sync.aretrieve(QUESTIONS[1]))]], want[1:2])
    client.close()

    async def main():
        aclient = AsyncQdrantClient(path=str(tmp_path / "q"))
        ours = MemlabRetriever.from_file(
            path,
            client=aclient,
            collection="memories",
            embed_model=Seeded(model_name="seeded"),
            asked=ASKED,
            user="bob",
        )
        assert isinstance(ours.retriever, AsyncRetriever)
        got = await asyncio.gather(*(ours.aretrieve(q) for q in QUESTIONS))
        with pytest.raises(InputError, match="the retriever is on an AsyncQdrantClient: call aretrieve"):
            ours.retrieve(QUESTIONS[0])
        await aclient.close()
        return got

    got = asyncio.run(main())
    same([[(n.node.node_id, n.score) for n in nodes] for nodes in got], want)
    assert all(len(w) == 2 for w in want)  # bob has two memories, both injected at threshold -1
    assert all(n.node.metadata["user_id"] == "bob" for nodes in got for n in nodes)
