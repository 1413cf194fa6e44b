"""``memlab explain`` and ``memlab calibrate`` read a framework's collection by ``--preset``, as
``memlab import-qdrant`` does (``memlab.qdrant.presets``): the same output as naming the preset's
fields by hand."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from memlab.app.cli import main

REF = datetime(2026, 9, 10, tzinfo=UTC)
LANGCHAIN = ["--date-field", "metadata.date", "--text-field", "page_content"]  # the preset's names


def langchain_collection(path, n: int, dim: int, seed: int = 0) -> None:
    """A collection laid out as langchain-qdrant writes it: the text under ``page_content``, the
    application's metadata (date, user) under ``metadata``; odd points are bob's."""
    rng = np.random.default_rng(seed)
    client = QdrantClient(path=str(path))
    client.create_collection(
        "memories", vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
    )
    points = []
    for i in range(n):
        when = (REF - timedelta(hours=int(rng.integers(0, 40 * 24)))).isoformat().replace("+00:00", "Z")
        metadata = {"date": when, "user_id": ("ann", "bob")[i % 2]}
        points.append(
            models.PointStruct(
                id=i,
                vector=rng.normal(size=dim).tolist(),
                payload={"page_content": f"memory {i}", "metadata": metadata},
            )
        )
    client.upsert("memories", points=points)
    client.close()


def run(capsys, args: list[str]) -> dict:
    assert main(args) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_explain_reads_a_langchain_collection_by_its_preset(tmp_path, capsys, cache_dir):
    langchain_collection(tmp_path / "q", 30, 8)
    rng = np.random.default_rng(1)
    log = tmp_path / "log.jsonl"
    log.write_text(
        "".join(
            json.dumps({"id": f"q{j}", "vector": rng.normal(size=8).tolist(), "time": "2026-09-10T00:00:00Z"})
            + "\n"
            for j in range(5)
        )
    )
    common = ["explain", "--qdrant-path", str(tmp_path / "q"), "--collection", "memories", "--log", str(log)]
    common += [
        "--threshold",
        "0.1",
        "--model",
        "multilingual-e5-small",
        "--cache-dir",
        str(cache_dir),
        "--format",
        "json",
    ]
    by_preset = run(capsys, [*common, "--preset", "langchain"])
    by_hand = run(capsys, [*common, *LANGCHAIN])
    assert by_preset == by_hand
    injected = [q["specs"]["current"]["injected"] for q in by_preset["queries"]]
    assert sum(map(len, injected)) > 5


def test_without_a_preset_the_fields_are_needed(tmp_path, capsys):
    langchain_collection(tmp_path / "q", 3, 4)
    for command in ("explain", "calibrate"):
        assert main([command, "--qdrant-path", str(tmp_path / "q"), "--collection", "memories"]) == 2
        assert (
            "--date-field is needed with --qdrant-path/--qdrant-url (or --preset langchain|llamaindex|mem0)"
            in capsys.readouterr().err
        )


@pytest.mark.model
def test_calibrate_reads_a_langchain_collection_by_its_preset(tmp_path, capsys, cache_dir):
    """500 memories (the store is its own basis: no template distractors to embed) with vectors of
    the model's dimension; the probes are embedded by the model."""
    langchain_collection(tmp_path / "q", 500, 384, seed=2)
    common = ["calibrate", "--qdrant-path", str(tmp_path / "q"), "--collection", "memories"]
    common += [
        "--model",
        "multilingual-e5-small",
        "--cache-dir",
        str(cache_dir),
        "--boot",
        "50",
        "--format",
        "json",
    ]
    by_preset = run(capsys, [*common, "--preset", "langchain"])
    assert by_preset == run(capsys, [*common, *LANGCHAIN])
    assert by_preset["memories"] == 500 and np.isfinite(by_preset["threshold"])
