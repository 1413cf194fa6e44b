"""End to end on the real engine: a collection built the way an application builds it is
imported, tuned, exported with ``memlab spec``, and the exported query, run on qdrant-edge-py,
returns exactly the memories ``memlab evaluate`` injects, for every question and decay family.

The application: the seed's memories embedded with all-MiniLM-L6-v2 under a named vector
``dense``, its own ids in the payload (``mid``), UUID point ids, and ``created_at`` as ISO
strings in one collection and as epoch seconds in another.
"""

from __future__ import annotations

import json
import re
import uuid

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from memlab.app.cli import main
from memlab.datasets.schema import dataset_dir, load_dataset
from memlab.embedding.embedder import Embedder
from memlab.qdrant import edge
from memlab.qdrant.query import CollectionSchema, fill

pytestmark = [pytest.mark.model, pytest.mark.qdrant_edge]


def app_id(memory_id: str) -> str:
    return f"note-{memory_id}"


def build_app_collections(path, seed, vectors):
    """Two collections as an application writes them: ISO strings, and epoch seconds."""
    client = QdrantClient(path=str(path))
    for name, when in (("notes", lambda d: d.isoformat()), ("notes_epoch", lambda d: int(d.timestamp()))):
        client.create_collection(
            name, vectors_config={"dense": models.VectorParams(size=384, distance=models.Distance.COSINE)}
        )
        client.upsert(
            name,
            points=[
                models.PointStruct(
                    id=str(uuid.uuid5(uuid.NAMESPACE_URL, m.id)),
                    vector={"dense": v.tolist()},
                    payload={"mid": app_id(m.id), "created_at": when(m.date), "body": m.text("en")},
                )
                for m, v in zip(seed.memories, vectors, strict=True)
            ],
        )
    client.close()


def app_questions(path):
    """The seed's questions, naming memories by the application's ids."""
    lines = []
    for line in (dataset_dir("seed16") / "questions.jsonl").read_text().splitlines():
        q = json.loads(line)
        for key in [k for k in q if k.endswith("_ja")]:  # the Japanese text and reply phrases
            q.pop(key)
        for key in ("relevant", "stale"):
            q[key] = [app_id(m) for m in q.get(key, [])]
        if q.get("current"):
            q["current"] = app_id(q["current"])
        lines.append(json.dumps(q, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n")
    return path


def engine_shard(tmp_path, app_path, collection, schema):
    """The application's points, as stored, loaded into the real engine."""
    client = QdrantClient(path=str(app_path))
    points, _ = client.scroll(collection, limit=100, with_payload=True, with_vectors=True)
    client.close()
    shard = edge.create_shard(tmp_path / f"engine-{collection}", 384, schema)
    qe = edge.engine()
    shard.update(
        qe.UpdateOperation.upsert_points(
            [qe.Point(uuid.UUID(str(p.id)), {"dense": p.vector["dense"]}, p.payload) for p in points]
        )
    )
    return shard


def run_cli(capsys, *args) -> str:
    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def test_imported_tuned_exported_and_run_on_the_engine(tmp_path, seed, cache_dir, capsys):
    # the application stored all-MiniLM vectors (pinned: the thresholds below are on its scale)
    emb = Embedder("all-MiniLM-L6-v2", cache_dir=cache_dir)
    build_app_collections(tmp_path / "app", seed, emb.encode_documents([m.text("en") for m in seed.memories]))
    questions = app_questions(tmp_path / "questions.jsonl")
    # what all-MiniLM can satisfy on the seed (its scores sit far below Qwen's): no no-hit
    # memory injected, the newest coffee fact and H1's answer injected
    criteria = tmp_path / "criteria.yaml"
    criteria.write_text(
        "criteria:\n  - name: quiet\n    kind: nohit_below\n"
        "  - name: coffee\n    kind: current_injected\n    question: C1\n"
        "  - name: answer\n    kind: current_injected\n    question: H1\n"
    )
    checked = {}
    for collection, date_format in (("notes", "iso"), ("notes_epoch", "epoch-s")):
        out = tmp_path / f"ds-{collection}"
        run_cli(
            capsys,
            *("import-qdrant", "--path", str(tmp_path / "app"), "--collection", collection),
            *("--date-field", "created_at", "--text-field", "body", "--vector-name", "dense"),
            *("--id-field", "mid", "--model", "all-MiniLM-L6-v2", "--questions", str(questions)),
            *("--reference-date", "2026-09-10", "-o", str(out)),
        )
        ds = load_dataset(out)
        schema = CollectionSchema.from_dataset(ds)
        assert schema == CollectionSchema("created_at", date_format, "dense", "mid", text_field="body")
        shard = engine_shard(tmp_path, tmp_path / "app", collection, schema)
        source = ("--source", "embedded", "--dataset", str(out), "--cache-dir", str(cache_dir))
        for decay in ("exp", "gauss", "lin"):
            combine = "mult" if decay == "gauss" else "add"
            family = ("--decay", decay, "--combine", combine)
            swept = run_cli(
                capsys,
                *("sweep", *source, *family, "--bonus", "0:0.2:0.01", "--tau", "1,3,7,14,30"),
                *("--threshold", "0.2:0.4:0.01", "--select", "max-margin", "--criteria", str(criteria)),
            )
            assert "chosen (max-margin): none" not in swept, swept
            line = next(x for x in swept.splitlines() if x.startswith("chosen"))
            chosen = dict(re.findall(r"(\w+)=([^\s]+)", line.split(":", 1)[1]))
            assert (chosen["decay"], chosen["combine"]) == (decay, combine)
            tuned = [
                *(
                    "--bonus",
                    chosen["bonus"],
                    "--tau",
                    chosen["tau_days"],
                    "--threshold",
                    chosen["threshold"],
                ),
                *("--candidates", chosen["candidates"], "--inject", chosen["inject"], *family),
            ]
            # and a strong, short bonus, where the decay's shape decides what is injected
            strong = [*("--bonus", "0.15", "--tau", "3", "--threshold", chosen["threshold"]), *family]
            for spec_args in (tuned, strong):
                ev = json.loads(run_cli(capsys, "evaluate", *source, *spec_args, "--format", "json"))
                exported = run_cli(
                    capsys, "spec", "--dataset", str(out), *spec_args, "--format", "qdrant-json"
                )
                q_vecs = emb.encode_queries([q.text("en") for q in ds.questions])
                for q, vec, result in zip(ds.questions, q_vecs, ev["questions"], strict=True):
                    body = fill(json.loads(exported), vec, q.date or ds.reference_date, schema)
                    got = [(p.payload["mid"], p.score) for p in shard.query(edge.to_edge(body))]
                    want = [(c["memory"], c["final"]) for c in result["candidates"] if c["injected"]]
                    assert [m for m, _ in got] == [m for m, _ in want], (collection, decay, q.id, spec_args)
                    np.testing.assert_allclose([s for _, s in got], [f for _, f in want], atol=1e-6, rtol=0)
                    checked[(collection, decay)] = checked.get((collection, decay), 0) + len(want)
            with capsys.disabled():
                print(
                    f"\n{collection} {decay}/{combine}: chosen {chosen}; {checked[(collection, decay)]} injected"
                )
        # the whole query from memlab spec alone: no --model, the question embedded with the model the
        # dataset records (all-MiniLM; the default is multilingual-e5, also 384 dimensions)
        ev = json.loads(run_cli(capsys, "evaluate", *source, *tuned, "--format", "json"))
        for q, result in zip(ds.questions, ev["questions"], strict=True):
            at = (q.date or ds.reference_date).isoformat()
            body = json.loads(
                run_cli(
                    capsys, "spec", *source, *tuned, "--question", q.id, "--at", at, "--format", "qdrant-json"
                )
            )
            got = [p.payload["mid"] for p in shard.query(edge.to_edge(body))]
            assert got == [c["memory"] for c in result["candidates"] if c["injected"]], (collection, q.id)
        capsys.readouterr()
        assert main(["spec", *source, "--question", "C1", "--model", "multilingual-e5-small"]) == 2
        assert capsys.readouterr().err == (
            f"memlab: error: dataset {ds.name!r} keeps vectors made with 'all-MiniLM-L6-v2', not "
            "'multilingual-e5-small' (--model): new texts must be embedded with 'all-MiniLM-L6-v2'\n"
        )
        shard.close()
    assert len(checked) == 6 and all(n > 0 for n in checked.values()), checked
