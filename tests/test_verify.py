"""memlab verify: the exported query run on a user's own collection for every question, against
memlab's reference.

The collections are built the way an application builds them: qdrant-client's local mode on
disk, the application's own payload field names, integer point ids in one and UUIDs with the
application's own id in the payload (and a named vector, epoch-second dates) in the other.
Memory vectors are the test embedding server's word counts (``embed_fake``) plus a little noise
(no exact ties), so the questions, embedded by that server, score as a real model would; the
collection is imported with ``memlab import-qdrant`` and tuned with ``memlab sweep --save``.

The dataset records the server's model (``bow-64``) as the one its vectors came from, so the
server is declared to be that model and memlab checks it against a local engine of that name
(the probe): the local engine here is the same word count (``WordCounts``), no model is loaded.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from embed_fake import DIM, MODEL, EmbedServer, embed
from qdrant_client import QdrantClient, models

from memlab.app.cli import main
from memlab.embedding.embedder import Embedder

MEMORIES = [  # (id, user, date, text)
    ("a1", "alice", "2026-08-01", "Drinks black coffee every morning before work"),
    ("a2", "alice", "2026-09-05", "Switched from coffee to green tea every morning"),
    ("a3", "alice", "2026-08-20", "Adopted a small ginger kitten called Biscuit"),
    ("a4", "alice", "2026-09-01", "Started running along the river trail on weekends"),
    ("a5", "alice", "2026-07-10", "Works night shifts as a nurse at the city hospital"),
    ("a6", "alice", "2026-09-08", "Booked train tickets to Edinburgh for October"),
    ("b1", "bob", "2026-08-03", "Drinks strong coffee with sugar after lunch"),
    ("b2", "bob", "2026-09-02", "Plays bass guitar in a jazz band on Fridays"),
    ("b3", "bob", "2026-08-25", "Keeps his gym locker code in a paper notebook"),
    ("b4", "bob", "2026-09-06", "Moved into a flat near the harbour"),
    ("b5", "bob", "2026-07-15", "Allergic to peanuts and cashew nuts"),
    ("b6", "bob", "2026-09-09", "Learning Spanish with evening classes"),
]
QUESTIONS = [
    {"id": "qa1", "kind": "contradiction", "text": "What does she drink every morning, coffee or tea?",
     "relevant": ["a1", "a2"], "current": "a2", "stale": ["a1"], "payload": {"user_id": "alice"}},
    {"id": "qa2", "kind": "hit", "text": "What is the ginger kitten called?", "relevant": ["a3"],
     "current": "a3", "payload": {"user_id": "alice"}},
    {"id": "qa3", "kind": "hit", "text": "Where does she go running on weekends?", "relevant": ["a4"],
     "current": "a4", "date": "2026-09-03", "payload": {"user_id": "alice"}},
    {"id": "qa4", "kind": "nohit", "text": "Does she speak Portuguese fluently?", "relevant": [],
     "payload": {"user_id": "alice"}},
    {"id": "qb1", "kind": "hit", "text": "Which band does he play guitar in?", "relevant": ["b2"],
     "current": "b2", "payload": {"user_id": "bob"}},
    {"id": "qb2", "kind": "hit", "text": "Where is the flat he moved into?", "relevant": ["b4"],
     "current": "b4", "payload": {"user_id": "bob"}},
    {"id": "qb3", "kind": "nohit", "text": "Which car does he drive?", "relevant": [],
     "payload": {"user_id": "bob"}},
]  # fmt: skip
LAYOUTS = {
    # integer point ids, ISO dates, the one unnamed vector; memories named by their point ids
    "ints": {"collection": "notes", "date": "created_at", "named": None, "id_field": None},
    # UUID point ids, the application's own id in the payload, epoch seconds, a named vector
    "uuids": {"collection": "memories", "date": "ts", "named": "dense", "id_field": "note_id"},
}


class WordCounts:
    """The local engine of ``bow-64``: the embedding server's own function."""

    name = MODEL

    def encode(self, texts, role):
        return np.array([embed(t) for t in texts], dtype=np.float32)


@pytest.fixture(autouse=True)
def word_counts(monkeypatch):
    monkeypatch.setattr(Embedder, "_load_model", lambda self: WordCounts())


def point_id(layout: str, i: int, memory: str) -> int | str:
    return 100 + 7 * i if layout == "ints" else str(uuid.uuid5(uuid.NAMESPACE_URL, memory))


def dataset_id(layout: str, i: int, memory: str) -> str:
    """How the imported dataset names the memory: its point id, or the payload's own id."""
    return str(point_id(layout, i, memory)) if layout == "ints" else f"note-{memory}"


def vectors() -> np.ndarray:
    rng = np.random.default_rng(7)
    noise = rng.normal(scale=0.05, size=(len(MEMORIES), DIM))
    return np.array([embed(text) for *_, text in MEMORIES]) + noise


def build_collection(path: Path, layout: str) -> None:
    """The application's own code: its fields, its ids, its vectors."""
    lay = LAYOUTS[layout]
    client = QdrantClient(path=str(path))
    params = models.VectorParams(size=DIM, distance=models.Distance.COSINE)
    config = {lay["named"]: params} if lay["named"] else params
    client.create_collection(lay["collection"], vectors_config=config)
    points = []
    for i, ((mid, user, day, text), vec) in enumerate(zip(MEMORIES, vectors(), strict=True)):
        when = datetime.fromisoformat(day).replace(hour=9, tzinfo=UTC)
        payload = {
            lay["date"]: int(when.timestamp()) if layout == "uuids" else when.isoformat(),
            "body": text,
            "user_id": user,
            **({"note_id": f"note-{mid}"} if lay["id_field"] else {}),
        }
        vector = {lay["named"]: vec.tolist()} if lay["named"] else vec.tolist()
        points.append(models.PointStruct(id=point_id(layout, i, mid), vector=vector, payload=payload))
    client.upsert(lay["collection"], points=points)
    client.close()


def questions_file(path: Path, layout: str) -> Path:
    names = {mid: dataset_id(layout, i, mid) for i, (mid, *_) in enumerate(MEMORIES)}
    rows = []
    for q in QUESTIONS:
        q = dict(q, relevant=[names[m] for m in q["relevant"]], stale=[names[m] for m in q.get("stale", [])])
        if "current" in q:
            q["current"] = names[q["current"]]
        rows.append(json.dumps(q))
    path.write_text("\n".join(rows) + "\n")
    return path


def run(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def digest(folder: Path) -> dict[str, str]:
    """Every file of a store but qdrant-client's lock, by its content."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


@pytest.fixture(scope="module")
def server():
    with EmbedServer() as url:
        yield url


@pytest.fixture(scope="module")
def stores(tmp_path_factory, server):
    """Per layout: the application's store, the imported dataset, and the embedding options."""
    out = {}
    cache = tmp_path_factory.mktemp("cache")
    for layout, lay in LAYOUTS.items():
        root = tmp_path_factory.mktemp(layout)
        build_collection(root / "app", layout)
        argv = ["import-qdrant", "--path", root / "app", "--collection", lay["collection"]]
        argv += ["--date-field", lay["date"], "--text-field", "body", "--keep-field", "user_id"]
        argv += ["--id-field", lay["id_field"]] if lay["id_field"] else []
        argv += ["--model", MODEL, "--questions", questions_file(root / "q.jsonl", layout)]
        argv += ["--reference-date", "2026-09-10", "-o", root / "ds"]
        assert main([str(a) for a in argv]) == 0
        embedding = ["--embed-url", server, "--embed-model", MODEL, "--no-embed-fallback"]
        embedding += ["--cache-dir", cache]
        out[layout] = {"root": root, "app": root / "app", "ds": root / "ds", "embed": embedding, **lay}
    return out


def tuned(capsys, store, name: str, *extra) -> Path:
    path = store["root"] / name
    sweep = ["sweep", "--dataset", store["ds"], *store["embed"], "--bonus", "0:0.2:0.05", "--tau", "3,14"]
    code, _, err = run(capsys, *sweep, *extra, "--save", path)
    assert code == 0, err
    return path


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_users_own_collection_agrees_with_the_reference(stores, capsys, layout):
    """Imported, tuned by the sweep, verified: every question agrees, and nothing of the store
    changed (only queries were sent)."""
    store = stores[layout]
    spec = tuned(capsys, store, "tuned.yaml")
    before = digest(store["app"])
    code, out, err = run(
        capsys, "verify", "--spec", spec, *store["embed"], "--qdrant-path", store["app"],
        "--collection", store["collection"],
    )  # fmt: skip
    assert (code, out) == (0, "7 of 7 questions agree\n"), err
    assert f"on collection {store['collection']!r} in {store['app']} (qdrant-client local mode);" in err
    assert digest(store["app"]) == before
    # the JSON: each question's returned points by their own ids, named by the dataset's memory
    # ids; no --collection: the one dataset.json records
    argv = ["verify", "--spec", spec, *store["embed"], "--qdrant-path", store["app"], "--format", "json"]
    code, out, _ = run(capsys, *argv)
    report = json.loads(out)
    assert code == 0 and (report["agree"], report["total"]) == (7, 7)
    injected = [r for q in report["questions"] for r in q["returned"]]
    assert injected, report
    ids = {dataset_id(layout, i, m): point_id(layout, i, m) for i, (m, *_) in enumerate(MEMORIES)}
    assert all(r["point_id"] == ids[r["memory"]] for r in injected)
    for q in report["questions"]:
        assert [r["memory"] for r in q["returned"]] == [r["memory"] for r in q["reference"]]


def test_under_a_tenant_filter_only_the_tenants_questions_and_memories(stores, capsys):
    """The tuned file's filter goes into the query as memlab spec --filter puts it: alice's four
    questions, none of bob's memories returned; a filter given on the command line likewise."""
    store = stores["uuids"]
    spec = tuned(capsys, store, "alice.yaml", "--filter", "user_id=alice")
    base = ["verify", *store["embed"], "--qdrant-path", store["app"], "--format", "json"]
    code, out, err = run(capsys, *base, "--spec", spec)
    report = json.loads(out)
    assert (code, report["agree"], report["total"]) == (0, 4, 4), err
    assert [q["id"] for q in report["questions"]] == ["qa1", "qa2", "qa3", "qa4"]
    assert report["filter"] == {"must": [{"key": "user_id", "match": {"value": "alice"}}]}
    returned = {r["memory"] for q in report["questions"] for r in q["returned"]}
    assert returned and all(m.startswith("note-a") for m in returned)
    bob = ["--dataset", store["ds"], "--filter", "user_id=bob", "--threshold", "0.3"]
    code, out, err = run(capsys, *base[:-2], *bob)
    assert (code, out) == (0, "3 of 3 questions agree\n"), err


def test_a_tampered_collection_lists_the_questions_that_differ(stores, capsys, tmp_path):
    """The kitten memory's vector changed after the import (to one no question's words reach):
    the store no longer returns it for qa2, the reference (the dataset's copy) still injects it."""
    import shutil

    store = stores["ints"]
    app = tmp_path / "app"
    shutil.copytree(store["app"], app)
    kitten = 100 + 7 * 2  # a3's point id
    client = QdrantClient(path=str(app))
    client.update_vectors("notes", points=[models.PointVectors(id=kitten, vector=[0.0] * (DIM - 1) + [1.0])])
    client.close()
    spec = ["--bonus", "0.05", "--tau", "14", "--threshold", "0.3", "--candidates", "4", "--inject", "2"]
    ds = ["--dataset", store["ds"], *store["embed"], *spec]
    code, out, err = run(capsys, "evaluate", *ds, "--format", "json")
    assert code == 0, err
    qa2 = next(q for q in json.loads(out)["questions"] if q["id"] == "qa2")
    final = next(c["final"] for c in qa2["candidates"] if c["injected"])
    code, out, err = run(capsys, "verify", *ds, "--qdrant-path", app, "--collection", "notes")
    assert (code, out) == (
        1,
        f"qa2: the store returned nothing; memlab's reference injects {kitten} {final:.6f}\n"
        "6 of 7 questions agree\n",
    ), err
    # the untouched collection agrees under the same spec
    assert run(capsys, "verify", *ds, "--qdrant-path", store["app"])[:2] == (0, "7 of 7 questions agree\n")


@pytest.mark.qdrant_edge
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_on_qdrants_own_engine_a_shard_folder(stores, capsys, tmp_path, layout):
    """The application's points, as stored, in a qdrant-edge shard: Qdrant's own engine agrees,
    with the tuned file's tenant filter too."""
    from memlab.qdrant import edge
    from memlab.qdrant.query import CollectionSchema

    store = stores[layout]
    client = QdrantClient(path=str(store["app"]))
    points, _ = client.scroll(store["collection"], limit=100, with_payload=True, with_vectors=True)
    client.close()
    schema = CollectionSchema(store["date"], "epoch-s" if layout == "uuids" else "iso", store["named"])
    shard = edge.create_shard(tmp_path / "shard", DIM, schema)
    qe = edge.engine()
    shard.update(
        qe.UpdateOperation.upsert_points(
            [
                qe.Point(
                    p.id if isinstance(p.id, int) else uuid.UUID(p.id),
                    p.vector if isinstance(p.vector, dict) else {"": p.vector},
                    p.payload,
                )
                for p in points
            ]
        )
    )
    shard.close()
    before = digest(tmp_path / "shard")
    base = ["verify", *store["embed"], "--edge-path", tmp_path / "shard"]
    code, out, err = run(capsys, *base, "--spec", tuned(capsys, store, "edge.yaml"))
    assert (code, out) == (0, "7 of 7 questions agree\n"), err
    # the engine rewrites a shard it loads (its config, its journals): it loaded a copy
    assert digest(tmp_path / "shard") == before
    assert f"on the qdrant-edge shard, Qdrant's own engine at {tmp_path / 'shard'};" in err
    code, out, err = run(capsys, *base, "--spec", tuned(capsys, store, "bob.yaml", "--filter", "user_id=bob"))
    assert (code, out) == (0, "3 of 3 questions agree\n"), err
    # a shard folder that holds no points: one line, not every question differing
    edge.create_shard(tmp_path / "vacant", DIM, schema).close()
    code, out, err = run(capsys, *base[:-1], tmp_path / "vacant", "--dataset", store["ds"])
    message = f"memlab: error: --edge-path {tmp_path / 'vacant'}: the shard holds no points\n"
    assert (code, out, err) == (2, "", message)


@pytest.mark.hostile
@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--qdrant-path", "{app}", "--collection", "nope"],
            "no collection 'nope' in {app} (collections: notes, small, vacant)",
        ),
        (
            ["--qdrant-path", "{app}", "--collection", "small"],
            "collection 'small' in {app} holds 8-dimensional vectors, and the dataset's questions embed "
            "to 64: not the collection it was imported from",
        ),
        (
            ["--qdrant-path", "{app}", "--qdrant-url", "http://127.0.0.1:9", "--collection", "notes"],
            "give exactly one of --qdrant-path (a local Qdrant folder), --qdrant-url (a Qdrant server) or "
            "--edge-path (a qdrant-edge shard folder); got --qdrant-path and --qdrant-url",
        ),
        (
            [],
            "give exactly one of --qdrant-path (a local Qdrant folder), --qdrant-url (a Qdrant server) or "
            "--edge-path (a qdrant-edge shard folder)",
        ),
        (
            ["--qdrant-path", "{empty}", "--collection", "notes"],
            "--qdrant-path {empty}: holds no local Qdrant storage (no meta.json)",
        ),
        (
            ["--edge-path", "{empty}"],
            "--edge-path {empty}: holds no qdrant-edge shard (no edge_config.json)",
        ),
        (
            ["--edge-path", "{app}/missing"],
            "--edge-path {app}/missing: no such folder (a qdrant-edge shard folder)",
        ),
        (
            ["--edge-path", "{bad}"],
            '--edge-path {bad}: edge_config.json is not a shard\'s configuration (no "vectors" object '
            "naming each vector's size)",
        ),
        (
            ["--edge-path", "{bad}", "--collection", "notes"],
            "--collection: a qdrant-edge shard folder is one collection of its own; drop it",
        ),
        (
            ["--qdrant-path", "{app}", "--collection", "vacant"],
            "collection 'vacant' in {app} holds no points",
        ),
    ],
)
def test_bad_stores_are_one_line(stores, capsys, tmp_path, extra, message):
    """Nothing is created in a folder that is no store; each refusal is one line, exit 2."""
    import shutil

    store = stores["ints"]
    app, empty = tmp_path / "app", tmp_path / "empty"
    shutil.copytree(store["app"], app)
    empty.mkdir()
    client = QdrantClient(path=str(app))
    small = models.VectorParams(size=8, distance=models.Distance.COSINE)
    client.create_collection("small", vectors_config=small)
    client.create_collection("vacant", vectors_config=models.VectorParams(size=DIM, distance=small.distance))
    client.close()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "edge_config.json").write_text('{"vectors": [64]}')
    fill = {"app": str(app), "empty": str(empty), "bad": str(bad)}
    argv = ["verify", "--dataset", store["ds"], *store["embed"], *(a.format(**fill) for a in extra)]
    code, out, err = run(capsys, *argv)
    assert (code, out, err) == (2, "", f"memlab: error: {message.format(**fill)}\n")
    assert list(empty.iterdir()) == []


A, B, C, D = "a", "b", "c", "d"


def candidates(*rows, threshold=0.5, inject=2):
    """(memory, final) in re-sorted order -> the reference's candidates: those reaching the
    threshold, the first ``inject`` of them injected."""
    from memlab.core.spec import Candidate

    out, kept = [], 0
    for i, (m, f) in enumerate(rows):
        reaches = f >= threshold
        out.append(Candidate(i, m, f, 0.0, f, reaches, reaches and kept < inject))
        kept += reaches
    return out


@pytest.mark.parametrize(
    "rows, returned, same",
    [
        ([(A, 0.9), (B, 0.8)], [(A, 0.9), (B, 0.8)], True),
        ([(A, 0.9), (B, 0.8)], [(A, 0.9 + 9e-7), (B, 0.8 - 9e-7)], True),  # float32 scores, within 1e-6
        ([(A, 0.9), (B, 0.8)], [(A, 0.9 + 2e-6), (B, 0.8)], False),  # a score off by 2e-6
        ([(A, 0.9), (B, 0.8)], [(B, 0.8), (A, 0.9)], False),  # scores that differ, in another order
        ([(A, 0.9), (B, 0.8)], [(A, 0.9)], False),  # one left out
        ([(A, 0.9), (B, 0.8)], [(A, 0.9), (None, 0.8)], False),  # a point the dataset does not hold
        ([(A, 0.9), (B, 0.8)], [(A, 0.9), (A, 0.9)], False),  # a memory twice
        ([(A, 0.8), (B, 0.8)], [(B, 0.8), (A, 0.8)], True),  # a tie, as a set
        ([(A, 0.9), (B, 0.8), (C, 0.8)], [(A, 0.9), (C, 0.8)], True),  # the tie cut by inject: either
        ([(A, 0.9), (B, 0.8), (C, 0.8)], [(A, 0.9), (D, 0.8)], False),  # but one of the tied
        ([(A, 0.9), (B, 0.5 + 5e-7)], [(A, 0.9)], True),  # within 1e-6 of the threshold: either way
        ([(A, 0.9), (B, 0.5 - 5e-7)], [(A, 0.9), (B, 0.5 - 5e-7)], True),
        ([(A, 0.4)], [], True),  # nothing reaches it, nothing returned
        ([(A, 0.4)], [(A, 0.4)], False),  # below the threshold, returned
    ],
)
def test_what_agrees_with_the_reference(rows, returned, same):
    """The comparison on paper: threshold 0.5, inject 2, scores to 1e-6, ties as sets."""
    from memlab.qdrant.verify import Returned, agrees

    got = [Returned(i, m, s) for i, (m, s) in enumerate(returned)]
    assert agrees(got, candidates(*rows), 0.5, 2) is same


class RestOverLocal:
    """A Qdrant REST server on 127.0.0.1 answering from a local-mode folder: the few endpoints
    qdrant-client calls to open a collection and query it, each reply the local model's JSON.
    ``queries`` keeps every query body it was sent, ``writes`` any other POST or PUT."""

    def __init__(self, path: Path):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        local = QdrantClient(path=str(path))
        lock = threading.Lock()
        self.queries, self.writes = [], []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def reply(self, result, status=200):
                body = json.dumps({"result": result, "status": "ok", "time": 0.0}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                parts = self.path.split("?")[0].strip("/").split("/")
                with lock:
                    if parts == ["collections"]:
                        return self.reply(local.get_collections().model_dump(mode="json"))
                    if len(parts) == 3 and parts[2] == "exists":
                        return self.reply({"exists": local.collection_exists(parts[1])})
                    if len(parts) == 2:
                        return self.reply(local.get_collection(parts[1]).model_dump(mode="json"))
                self.reply(None, 404)

            def do_POST(self):
                parts = self.path.split("?")[0].strip("/").split("/")
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                with lock:
                    if parts[2:] == ["points", "count"]:
                        return self.reply(local.count(parts[1], exact=True).model_dump(mode="json"))
                    if parts[2:] == ["points", "query"]:
                        outer.queries.append(body)
                        req = models.QueryRequest.model_validate(body)
                        res = local.query_points(
                            parts[1], prefetch=req.prefetch, query=req.query,
                            score_threshold=req.score_threshold, limit=req.limit,
                        )  # fmt: skip
                        return self.reply(res.model_dump(mode="json"))
                outer.writes.append((self.command, self.path))
                self.reply(None, 404)

            do_PUT = do_POST

            def log_message(self, *args):
                pass

        self.local, self.httpd = local, ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.local.close()


def test_on_a_qdrant_server_the_query_asks_for_exact_search(stores, capsys, tmp_path):
    """--qdrant-url: the same body, with params.exact in the prefetch (a server's HNSW index is
    approximate), one query per question, and nothing but queries and reads sent."""
    import shutil
    import warnings

    store = stores["uuids"]
    shutil.copytree(store["app"], tmp_path / "app")
    rest = RestOverLocal(tmp_path / "app")
    try:
        with warnings.catch_warnings():  # local mode, behind the fake server, says it is exact anyway
            warnings.simplefilter("ignore")
            code, out, err = run(
                capsys, "verify", "--spec", tuned(capsys, store, "server.yaml"), *store["embed"],
                "--qdrant-url", rest.url,
            )  # fmt: skip
    finally:
        rest.close()
    assert (code, out) == (0, "7 of 7 questions agree\n"), err
    assert f"on collection 'memories' in {rest.url} (Qdrant server)" in err
    assert len(rest.queries) == 7 and rest.writes == []
    assert all(q["prefetch"]["params"] == {"exact": True} for q in rest.queries)
    assert all(q["prefetch"]["using"] == "dense" for q in rest.queries)


@pytest.mark.hostile
def test_an_import_without_point_ids_is_refused_not_renumbered(stores, capsys, tmp_path):
    """A dataset imported before point ids were recorded: naming points by their position would
    call every answer wrong; it says what to do instead."""
    import shutil

    store = stores["ints"]
    shutil.copytree(store["ds"], tmp_path / "ds")
    path = tmp_path / "ds" / "memories.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "point_id"}) + "\n" for r in rows))
    argv = ["verify", "--dataset", tmp_path / "ds", *store["embed"], "--qdrant-path", store["app"]]
    assert run(capsys, *argv) == (
        2,
        "",
        "memlab: error: dataset 'notes' was imported from Qdrant, but memories 100, 107, 114 record no "
        "point_id: import the collection again (memlab import-qdrant records them)\n",
    )
