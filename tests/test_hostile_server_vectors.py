"""A dataset whose stored vectors came from a server's own model (one memlab cannot load here):
with that server, its new texts are embedded there under the server's identity and scored against
the stored vectors (no local model is looked for); without it, or with another model named, one
line naming the dataset, the field and what to pass."""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
import pytest

from memlab.app.cli import main
from memlab.datasets.locations import dataset_dir

pytestmark = pytest.mark.hostile
MODEL = "acme-embed-v1"
DIM = 8


def vector(text: str) -> list[float]:
    """The fake server's embedding: a unit vector drawn from the text's hash."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).normal(size=DIM)
    return (v / np.linalg.norm(v)).tolist()


def reply(body):
    if body.get("model") != MODEL:
        return 404, {"error": {"message": f"no model {body.get('model')}"}}
    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
    return 200, {"data": [{"index": i, "embedding": vector(t)} for i, t in enumerate(texts)], "model": MODEL}


@pytest.fixture
def store(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(dataset_dir("seed16"), root)
    meta = json.loads((root / "dataset.json").read_text())
    memories = [
        json.loads(line) for line in (root / "memories.jsonl").read_text().splitlines() if line.strip()
    ]
    meta["vectors"] = {"file": "vectors.npy", "dim": DIM, "model": MODEL, "order": "memories.jsonl"}
    (root / "dataset.json").write_text(json.dumps(meta))
    mem = np.array([vector(m["text"]) for m in memories], dtype=np.float32)
    np.save(root / "vectors.npy", mem)
    return root, mem


def test_the_server_that_made_the_vectors_embeds_the_questions(store, tiny_server, tmp_path, capsys):
    root, mem = store
    url, seen = tiny_server(reply)
    args = ["evaluate", "--dataset", str(root), "--source", "embedded", "--format", "json"]
    args += ["--embed-url", url, "--embed-model", MODEL, "--cache-dir", str(tmp_path / "cache")]
    assert main(args) == 0, capsys.readouterr().err
    doc = json.loads(capsys.readouterr().out)
    assert seen and all(r["body"]["model"] == MODEL for r in seen)
    # each candidate's raw: the stored vector against the server's vector of the question (float32)
    questions = {q["id"]: q for q in doc["questions"]}
    texts = {
        json.loads(line)["id"]: json.loads(line)["text"]
        for line in (root / "questions.jsonl").read_text().splitlines()
        if line.strip()
    }
    ids = [
        json.loads(line)["id"] for line in (root / "memories.jsonl").read_text().splitlines() if line.strip()
    ]
    checked = 0
    for qid, q in questions.items():
        # the server may be sent the text with the model's query prefix: recompute from what it saw
        sent = [
            t
            for r in seen
            for t in (r["body"]["input"] if isinstance(r["body"]["input"], list) else [r["body"]["input"]])
        ]
        query = next(t for t in sent if t.endswith(texts[qid]))
        want = mem.astype(np.float64) @ np.asarray(vector(query), dtype=np.float32).astype(np.float64)
        for c in q["candidates"]:
            assert c["raw"] == pytest.approx(float(np.float32(want[ids.index(c["memory"])])), abs=1e-6)
            checked += 1
    assert checked >= len(questions)


def test_without_the_server_one_line_says_what_to_pass(store, capsys):
    root, _ = store
    assert main(["evaluate", "--dataset", str(root), "--source", "embedded"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (
        f"memlab: error: dataset 'seed16' keeps vectors made with '{MODEL}' (dataset.json: vectors: model), "
        "a model memlab cannot load here (not one it knows, nor a model folder, nor in the Hugging Face "
        f"cache): embed new texts with the server that made them, --embed-url URL --embed-model {MODEL}"
    )


def test_another_server_model_is_refused(store, tiny_server, capsys):
    root, _ = store
    url, seen = tiny_server(reply)
    args = ["evaluate", "--dataset", str(root), "--source", "embedded", "--embed-url", url]
    assert main([*args, "--embed-model", "other-model"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (
        f"memlab: error: dataset 'seed16' keeps vectors made with '{MODEL}', not the server's 'other-model' "
        f"(--embed-model): new texts must be embedded with '{MODEL}'"
    )
    assert not seen
