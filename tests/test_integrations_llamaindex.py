"""LlamaIndex: a store written by llama-index-vector-stores-qdrant's own ``QdrantVectorStore``
through a ``VectorStoreIndex``, imported by the ``llamaindex`` preset, and memlab's tuned
retriever beside LlamaIndex's default one on it."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("llama_index.vector_stores.qdrant", reason="the llamaindex extra (make test installs it)")

from framework_flow import COMPANION, REFERENCE_DATE, Reference, companion_memories, tune
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.schema import TextNode
from llama_index.vector_stores.qdrant import QdrantVectorStore
from qdrant_client import QdrantClient

from memlab.datasets.schema import load_dataset
from memlab.embedding.embedder import make_embedder
from memlab.importers.qdrant import import_qdrant
from memlab.integrations.llamaindex import MemlabEmbedding, MemlabRetriever

pytestmark = [pytest.mark.framework, pytest.mark.model]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def embedder(cache):
    return make_embedder(None, cache_dir=cache)


def write_store(path: Path, embedder) -> list[dict]:
    """The memories as nodes of a ``VectorStoreIndex`` over LlamaIndex's Qdrant store, their
    metadata holding the date, the user and the application's own id."""
    written = companion_memories()
    nodes = [
        TextNode(
            id_=str(uuid.uuid5(uuid.NAMESPACE_URL, m["id"])),
            text=m["text"],
            metadata={"date": m["date"], "user_id": m["user"], "memory_id": m["id"]},
        )
        for m in written
    ]
    client = QdrantClient(path=str(path))
    store = QdrantVectorStore(client=client, collection_name="memories")
    VectorStoreIndex(
        nodes,
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=MemlabEmbedding(embedder),
    )
    client.close()
    return written


def imported(tmp_path: Path) -> Path:
    return import_qdrant(
        path=str(tmp_path / "qdrant"),
        collection="memories",
        preset="llamaindex",
        id_field="memory_id",
        out=tmp_path / "ds",
        model="multilingual-e5-small",
        questions=COMPANION / "questions.jsonl",
        reference_date=REFERENCE_DATE,
    )


def test_the_preset_imports_what_llamaindex_wrote(tmp_path, embedder):
    written = write_store(tmp_path / "qdrant", embedder)
    client = QdrantClient(path=str(tmp_path / "qdrant"))
    stored = {p.id: p for p in client.scroll("memories", limit=100, with_vectors=True)[0]}
    client.close()
    some = next(iter(stored.values()))
    assert "text" not in some.payload and "_node_content" in some.payload  # the text is only inside

    out = imported(tmp_path)
    ds = load_dataset(out)
    assert ds.qdrant["date_field"] == "date"
    assert ds.qdrant["text_field"] == "_node_content.text"
    assert ds.qdrant["vector_name"] is None  # LlamaIndex's one dense vector, unnamed unless hybrid
    assert ds.qdrant["kept_fields"] == ["user_id"]
    by_id = {m.id: m for m in ds.memories}
    assert sorted(by_id) == sorted(m["id"] for m in written)
    for m in written:
        got = by_id[m["id"]]
        assert got.text("en") == m["text"]
        assert got.date.date().isoformat() == m["date"]
        assert dict(got.payload) == {"user_id": m["user"]}
        assert got.point_id == str(uuid.uuid5(uuid.NAMESPACE_URL, m["id"]))
    vectors = np.load(out / "vectors.npy")
    for row, memory in enumerate(ds.memories):
        np.testing.assert_array_equal(vectors[row], np.float32(stored[memory.point_id].vector))
    assert ds.qdrant["user_field"] == "user_id"


def test_the_tuned_retriever_is_memlabs_reference_beside_llamaindexs_default(tmp_path, embedder, cache):
    """import-qdrant --preset llamaindex, sweep --save, then the retriever in LlamaIndex: its
    nodes are the reference's injected memories; LlamaIndex's own default retriever on the same
    store is run beside it and shown, not held equal."""
    write_store(tmp_path / "qdrant", embedder)
    dataset = imported(tmp_path)
    tuned = tune(dataset, tmp_path, "user_id=ann", cache)
    reference = Reference.of(dataset, tuned, cache)

    client = QdrantClient(path=str(tmp_path / "qdrant"))
    embed_model = MemlabEmbedding(embedder)
    ours = MemlabRetriever.from_file(tuned, client=client, collection="memories", embed_model=embed_model)
    index = VectorStoreIndex.from_vector_store(
        QdrantVectorStore(client=client, collection_name="memories"), embed_model=embed_model
    )
    default = index.as_retriever()  # similarity_top_k=2, no threshold

    def retrieve(text, at):
        ours.asked = at
        nodes = ours.retrieve(text)
        assert all(n.node.metadata["user_id"] == "ann" for n in nodes)  # the tuned file's tenant filter
        return [(n.node.node_id, n.node.metadata["raw_score"], n.score) for n in nodes]

    injected = reference.check(retrieve)
    assert injected > 0
    differs = 0
    for q, at in zip(reference.dataset.questions, reference.asked(), strict=True):
        theirs = [n.node.get_content() for n in default.retrieve(q.text("en"))]
        ours.asked = at
        mine = [n.node.get_content() for n in ours.retrieve(q.text("en"))]
        assert len(theirs) == 2  # LlamaIndex's default: the 2 nearest, whoever's, however old
        differs += theirs != mine
    assert differs > 0
    client.close()
