"""import-qdrant's payload paths and presets, on collections written by hand in a library's
layout (the libraries themselves write theirs in tests/test_integrations_*.py)."""

from __future__ import annotations

import json

import pytest
from qdrant_client import QdrantClient, models

from memlab.app.cli import main
from memlab.datasets.payload import MISSING, payload_at
from memlab.datasets.schema import load_dataset
from memlab.qdrant.presets import PRESETS
from memlab.qdrant.query import CollectionSchema


@pytest.mark.parametrize(
    ("payload", "path", "json_strings", "want"),
    [
        ({"a": {"b": 1}}, "a.b", False, 1),
        ({"a": {"b": None}}, "a.b", False, None),  # a stored null is a value
        ({"a": {"b": 1}}, "a.c", False, MISSING),
        ({"a": 3}, "a.b", False, MISSING),
        ({"a.b": 1}, "a.b", False, MISSING),  # Qdrant reads a.b as b inside a, so memlab does
        ({"n": json.dumps({"text": "hi"})}, "n.text", True, "hi"),
        ({"n": json.dumps({"text": "hi"})}, "n.text", False, MISSING),  # only a text path decodes
        ({"n": "not json"}, "n.text", True, MISSING),
    ],
)
def test_payload_at(payload, path, json_strings, want):
    got = payload_at(payload, path, json_strings=json_strings)
    assert got is MISSING if want is MISSING else got == want


def test_a_layout_reads_as_the_importer_reads():
    layout = PRESETS["llamaindex"].layout()
    payload = {"_node_content": json.dumps({"text": "The user lives in York."}), "date": "2026-11-14"}
    assert layout.read(payload, "_node_content.text") == "The user lives in York."
    assert layout.read(payload, "date") == "2026-11-14"
    with pytest.raises(KeyError):
        layout.read(payload, "date.day")
    assert PRESETS["langchain"].layout("metadata.ts", "epoch-s") == CollectionSchema(
        date_field="metadata.ts",
        date_format="epoch-s",
        text_field="page_content",
        user_field="metadata.user_id",
    )


def langchain_layout_collection(path, dates):
    client = QdrantClient(path=str(path))
    client.create_collection(
        "notes", vectors_config={"": models.VectorParams(size=3, distance=models.Distance.COSINE)}
    )
    client.upsert(
        "notes",
        points=[
            models.PointStruct(
                id=i,
                vector={"": [1.0, float(i), 0.5]},
                payload={"page_content": f"note {i}", "metadata": {"date": d, "user_id": f"u{i % 2}"}},
            )
            for i, d in enumerate(dates)
        ],
    )
    client.close()


def test_the_cli_imports_by_preset(tmp_path, capsys):
    langchain_layout_collection(tmp_path / "q", [1764000000, 1764086400, 1764172800])
    args = [
        "import-qdrant",
        "--path",
        str(tmp_path / "q"),
        "--collection",
        "notes",
        "-o",
        str(tmp_path / "ds"),
    ]
    assert main([*args, "--preset", "langchain", "--model", "all-MiniLM-L6-v2"]) == 0
    ds = load_dataset(tmp_path / "ds")
    assert [m.text("en") for m in ds.memories] == ["note 0", "note 1", "note 2"]
    assert [int(m.date.timestamp()) for m in ds.memories] == [1764000000, 1764086400, 1764172800]
    assert [dict(m.payload) for m in ds.memories] == [{"metadata.user_id": u} for u in ("u0", "u1", "u0")]
    assert ds.qdrant["date_format"] == "epoch-s" and ds.qdrant["vector_name"] is None
    assert ds.qdrant["preset"] == "langchain" and ds.qdrant["user_field"] == "metadata.user_id"
    assert CollectionSchema.from_dataset(ds).user_field == "metadata.user_id"


def test_without_a_preset_the_fields_are_needed(tmp_path, capsys):
    langchain_layout_collection(tmp_path / "q", [1764000000])
    args = [
        "import-qdrant",
        "--path",
        str(tmp_path / "q"),
        "--collection",
        "notes",
        "-o",
        str(tmp_path / "ds"),
    ]
    assert main([*args, "--text-field", "page_content"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "memlab: error: --date-field is needed (or --preset langchain|llamaindex|mem0)"
    assert not (tmp_path / "ds").exists()
    assert main([*args, "--preset", "mem0"]) == 2  # the wrong preset: its fields are not there
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        "memlab: error: collection notes: no point has payload field 'created_at' (--date-field)"
    )
    assert not (tmp_path / "ds").exists()
