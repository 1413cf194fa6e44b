"""LangChain: a store written by langchain-qdrant's own ``QdrantVectorStore``, imported by the
``langchain`` preset, and memlab's tuned retriever beside LangChain's default one on it."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("langchain_qdrant", reason="the langchain extra (make test installs it)")

from framework_flow import COMPANION, REFERENCE_DATE, Reference, companion_memories, tune
from langchain_qdrant import QdrantVectorStore
from qdrant_client import QdrantClient

from memlab.datasets.schema import load_dataset
from memlab.embedding.embedder import make_embedder
from memlab.importers.qdrant import import_qdrant
from memlab.integrations.langchain import MemlabEmbeddings, MemlabRetriever

pytestmark = [pytest.mark.framework, pytest.mark.model]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def embedder(cache):
    return make_embedder(None, cache_dir=cache)


def write_store(path: Path, embedder) -> list[dict]:
    """The memories written as a LangChain application writes them: ``from_texts`` with the
    user's metadata (the date, the user, the application's own id) and point ids it chose."""
    written = companion_memories()
    store = QdrantVectorStore.from_texts(
        [m["text"] for m in written],
        embedding=MemlabEmbeddings(embedder),
        metadatas=[{"date": m["date"], "user_id": m["user"], "memory_id": m["id"]} for m in written],
        ids=[str(uuid.uuid5(uuid.NAMESPACE_URL, m["id"])) for m in written],
        path=str(path),
        collection_name="memories",
    )
    store.client.close()
    return written


def imported(tmp_path: Path, embedder) -> Path:
    return import_qdrant(
        path=str(tmp_path / "qdrant"),
        collection="memories",
        preset="langchain",
        id_field="metadata.memory_id",
        out=tmp_path / "ds",
        model="multilingual-e5-small",
        questions=COMPANION / "questions.jsonl",
        reference_date=REFERENCE_DATE,
    )


def test_the_preset_imports_what_langchain_wrote(tmp_path, embedder):
    written = write_store(tmp_path / "qdrant", embedder)
    client = QdrantClient(path=str(tmp_path / "qdrant"))  # what LangChain stored, as stored
    stored = {p.id: p for p in client.scroll("memories", limit=100, with_vectors=True)[0]}
    client.close()
    assert {p.payload["page_content"] for p in stored.values()} == {m["text"] for m in written}

    out = import_qdrant(
        path=str(tmp_path / "qdrant"),
        collection="memories",
        preset="langchain",
        id_field="metadata.memory_id",
        out=tmp_path / "ds",
        model="multilingual-e5-small",
        questions=COMPANION / "questions.jsonl",
        reference_date=REFERENCE_DATE,
    )
    ds = load_dataset(out)
    assert ds.qdrant["date_field"] == "metadata.date"
    assert ds.qdrant["text_field"] == "page_content"
    assert ds.qdrant["kept_fields"] == ["metadata.user_id"]
    by_id = {m.id: m for m in ds.memories}
    assert sorted(by_id) == sorted(m["id"] for m in written)
    for m in written:
        got = by_id[m["id"]]
        assert got.text("en") == m["text"]
        assert got.date.date().isoformat() == m["date"]
        assert dict(got.payload) == {"metadata.user_id": m["user"]}
        assert got.point_id == str(uuid.uuid5(uuid.NAMESPACE_URL, m["id"]))
    vectors = np.load(out / "vectors.npy")
    for row, memory in enumerate(ds.memories):  # the vectors LangChain stored, not re-embedded
        np.testing.assert_array_equal(vectors[row], np.float32(stored[memory.point_id].vector))
    assert [q.id for q in ds.questions] == [q.id for q in load_dataset(COMPANION).questions]


def test_a_date_field_beside_the_preset_wins(tmp_path, embedder):
    write_store(tmp_path / "qdrant", embedder)
    with pytest.raises(Exception, match=r"no point has payload field 'metadata.when' \(--date-field\)"):
        import_qdrant(
            path=str(tmp_path / "qdrant"),
            collection="memories",
            preset="langchain",
            date_field="metadata.when",
            out=tmp_path / "ds",
        )
    assert not (tmp_path / "ds").exists()


def test_the_tuned_retriever_is_memlabs_reference_beside_langchains_default(tmp_path, embedder, cache):
    """import-qdrant --preset langchain, sweep --save, then the retriever in LangChain: its
    documents are the reference's injected memories; LangChain's own default retriever on the
    same store is run beside it and shown, not held equal."""
    write_store(tmp_path / "qdrant", embedder)
    dataset = imported(tmp_path, embedder)
    tuned = tune(dataset, tmp_path, "metadata.user_id=ann", cache)
    reference = Reference.of(dataset, tuned, cache)

    client = QdrantClient(path=str(tmp_path / "qdrant"))
    embedding = MemlabEmbeddings(embedder)
    ours = MemlabRetriever.from_file(tuned, client=client, collection="memories", embedding=embedding)
    default = QdrantVectorStore(client, "memories", embedding).as_retriever()  # k=4, no threshold

    def retrieve(text, at):
        docs = ours.invoke(text, asked=at)
        assert all(d.metadata["user_id"] == "ann" for d in docs)  # the tuned file's tenant filter
        return [(d.metadata["_id"], d.metadata["raw_score"], d.metadata["final_score"]) for d in docs]

    injected = reference.check(retrieve)
    assert injected > 0
    differs = 0
    for q, at in zip(reference.dataset.questions, reference.asked(), strict=True):
        theirs = [d.page_content for d in default.invoke(q.text("en"))]
        mine = [d.page_content for d in ours.invoke(q.text("en"), asked=at)]
        assert len(theirs) == 4  # LangChain's default: the 4 nearest, whoever's, however old
        differs += theirs != mine
    assert differs > 0
    client.close()
