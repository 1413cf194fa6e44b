"""``--filter`` on ``explain`` and ``calibrate`` reading a user's own Qdrant collection
(``--qdrant-path``, issue 37): the filter keeps the tenant's memories of the collection, as it does
on a dataset, so a filtered read equals the read of a collection holding that tenant's points
alone; a field no point holds is named in one line. Refused before (``no question ... is asked by
it``: a collection read this way has no questions). No model is loaded: the embedder's output is
replaced by deterministic vectors.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from memlab.app.cli import main
from memlab.embedding.embedder import Embedder

pytestmark = pytest.mark.hostile
DIM = 4


def unit(text: str) -> list[float]:
    rng = np.random.default_rng(sum(text.encode()) + len(text))
    v = rng.normal(size=DIM)
    return (v / np.linalg.norm(v)).tolist()


def fake_encode(self, texts, role):
    return np.asarray([unit(t) for t in texts], dtype=np.float32)


ALICE = [(i + 1, f"2026-09-0{i + 1}", f"2026-09-0{i + 1}: Alice's fact number {i}.") for i in range(6)]
# Bob's memory is older than Alice's newest: the collection's reference date (its newest memory) is
# the same with and without his point
BOB = [(7, "2026-09-03", "2026-09-03: Bob's locker code is 8642.")]


def collection(path: Path, rows) -> None:
    client = QdrantClient(path=str(path))
    client.create_collection(
        "mem", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
    )
    client.upsert(
        "mem",
        [
            models.PointStruct(
                id=pid,
                vector=unit(text),
                payload={"when": when, "body": text, "user_id": "bob" if "Bob" in text else "alice"},
            )
            for pid, when, text in rows
        ],
    )
    client.close()


@pytest.fixture
def stores(tmp_path, monkeypatch):
    monkeypatch.setattr(Embedder, "_encode", fake_encode)
    collection(tmp_path / "both", ALICE + BOB)
    collection(tmp_path / "alice", ALICE)
    log = tmp_path / "log.jsonl"
    # the query is Bob's memory's own vector: unfiltered, Bob's memory is the nearest
    log.write_text(json.dumps({"id": "q", "vector": unit(BOB[0][2]), "time": "2026-09-10"}) + "\n")
    return tmp_path, log


def store_args(tmp_path: Path, name: str) -> list[str]:
    return [
        "--qdrant-path", str(tmp_path / name), "--collection", "mem", "--date-field", "when",
        "--text-field", "body", "--cache-dir", str(tmp_path / "cache"), "--model", "multilingual-e5-small",
    ]  # fmt: skip


def explained(capsys, argv) -> dict:
    assert main(["explain", *argv, "--format", "json", "--threshold", "0.5"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def memories_of(doc: dict) -> list[tuple]:
    """(memory, raw, final, step) of every memory the one query's replay lists at the spec."""
    (query,) = doc["queries"]
    at = query["specs"]["current"]
    return [(m["memory"], m["raw"], m["final"], m["step"]) for m in at["candidates"] + at["memories"]]


def left_out(doc: dict) -> int:
    return doc["queries"][0]["specs"]["current"]["steps"]["filtered_out"]


def test_explain_filter_on_a_collection_keeps_the_tenants_memories(stores, capsys):
    tmp_path, log = stores
    both = memories_of(explained(capsys, [*store_args(tmp_path, "both"), "--log", str(log)]))
    assert both[0][0] == "7" and both[0][3] == "injected"  # Bob's memory, his own vector
    filtered = explained(
        capsys, [*store_args(tmp_path, "both"), "--log", str(log), "--filter", "user_id=alice"]
    )
    alone = explained(capsys, [*store_args(tmp_path, "alice"), "--log", str(log)])
    assert memories_of(filtered) == memories_of(alone)  # the collection without Bob's points
    assert "7" not in [m[0] for m in memories_of(filtered)]
    assert (
        left_out(filtered),
        left_out(alone),
        left_out(both_doc := explained(capsys, [*store_args(tmp_path, "both"), "--log", str(log)])),
    ) == (1, 0, 0)
    assert memories_of(both_doc) == both
    bob = explained(capsys, [*store_args(tmp_path, "both"), "--log", str(log), "--filter", "user_id=bob"])
    assert [m[0] for m in memories_of(bob)] == ["7"] and left_out(bob) == 6


def calibrated(capsys, argv) -> dict:
    common = ["--boot", "20", "--pool", "100", "--format", "json"]
    assert main(["calibrate", *argv, *common]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow  # the calibration's fit and bootstrap: minutes on a loaded 2-core machine
def test_calibrate_filter_on_a_collection_calibrates_the_tenants_store(stores, capsys):
    tmp_path, _ = stores
    filtered = calibrated(capsys, [*store_args(tmp_path, "both"), "--filter", "user_id=alice"])
    alone = calibrated(capsys, store_args(tmp_path, "alice"))
    for key in ("threshold", "threshold_ci", "false_rate_at_threshold", "distribution"):
        assert filtered[key] == alone[key], key
    assert filtered["memories"] == alone["memories"] == 6
    assert all(p["memory"] != "7" for p in filtered["probes"])


@pytest.mark.parametrize("command", ["explain", "calibrate"])
@pytest.mark.parametrize(
    ("filters", "message"),
    [
        (
            ["tenant=bob"],
            "collection mem: no point has payload field 'tenant' (--filter); payload fields: body, user_id, when",
        ),
        (
            ["user_id=carol"],
            "--filter user_id=carol: no memory of the 7 meets it (values held: user_id: alice, bob)",
        ),
        (["user_id"], "--filter 'user_id': expected key=value, e.g. user_id=alice"),
    ],
)
def test_a_filter_the_collection_cannot_meet_is_one_line(stores, capsys, command, filters, message):
    tmp_path, log = stores
    argv = [command, *store_args(tmp_path, "both"), *(["--log", str(log)] if command == "explain" else [])]
    for f in filters:
        argv += ["--filter", f]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("memlab: error: ") and message in err[-1], err
