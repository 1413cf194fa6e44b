"""The fault-and-hostile-input tier (issue 23): the user's data (a Qdrant store, a results
folder), vectors that cannot be trusted (a server's, a collection's), requests that never end and
work that cannot finish. Exact messages, exact file states; no model is loaded (the embedder's
output is replaced by deterministic vectors where one is needed).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from memlab.app.cli import main
from memlab.core.errors import EmbeddingError, InputError
from memlab.core.http import ServerFailure
from memlab.core.ranking import select_candidates
from memlab.datasets.schema import dataset_dir, load_dataset
from memlab.embedding.embedder import PROBE_TEXT, Embedder
from memlab.embedding.server import ServerConfig
from memlab.qdrant.store import MemoryStore
from memlab.scores.sources import load_scores

pytestmark = pytest.mark.hostile
ROOT = Path(__file__).resolve().parents[1]


def unit(text: str, dim: int = 4) -> list[float]:
    """A deterministic unit vector per text (what the fake model and honest servers give)."""
    rng = np.random.default_rng(sum(text.encode()) + len(text))
    v = rng.normal(size=dim)
    return (v / np.linalg.norm(v)).tolist()


def fake_encode(self, texts, role):
    return np.asarray([unit(t) for t in texts], dtype=np.float32)


class FakeModel:
    """Stands in for the local model behind a declared server (no model is loaded)."""

    name = "multilingual-e5-small"

    def encode(self, texts, role):
        return np.asarray([unit(t) for t in texts], dtype=np.float32)


class Bodies:
    """The request bodies a ``tiny_server`` saw, read when iterated (it records headers too)."""

    def __init__(self, seen: list[dict]):
        self.seen = seen

    def __iter__(self):
        return (r["body"] for r in self.seen)


@pytest.fixture
def server(tiny_server):
    """test_server's stdlib server, answering each request's ``input`` with ``reply(texts)``."""

    def start(reply):
        url, seen = tiny_server(lambda body: (200, reply(body["input"])))
        return url, Bodies(seen)

    return start


def embeddings(rows) -> dict:
    return {"data": [{"index": i, "embedding": r} for i, r in enumerate(rows)]}


# -- the user's Qdrant store ----------------------------------------------------------------------


def user_store(path: Path) -> None:
    client = QdrantClient(path=str(path))
    client.create_collection(
        "memlab", vectors_config=models.VectorParams(size=2, distance=models.Distance.COSINE)
    )
    client.upsert("memlab", [models.PointStruct(id=1, vector=[1.0, 0.0], payload={"mine": "keep"})])
    client.close()


def test_evaluate_never_touches_a_collection_it_did_not_create(tmp_path, monkeypatch):
    monkeypatch.setattr(Embedder, "_encode", fake_encode)
    store = tmp_path / "qdrant"
    user_store(store)
    argv = [
        "evaluate",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--qdrant-path",
        str(store),
        "--format",
        "json",
    ]
    assert main([*argv, "-o", str(tmp_path / "a.json")]) == 0
    client = QdrantClient(path=str(store))
    assert [c.name for c in client.get_collections().collections] == ["memlab"]  # no scratch left
    points = client.scroll("memlab", with_vectors=True)[0]
    assert [(p.id, p.payload, p.vector) for p in points] == [(1, {"mine": "keep"}, [1.0, 0.0])]
    client.close()
    # and the scores are the product's (memlab.core.vectors.cosine_table), to float32 precision
    assert main([*argv[:3], "--format", "json", "-o", str(tmp_path / "b.json")]) == 0
    a, b = (json.loads((tmp_path / f).read_text())["questions"] for f in ("a.json", "b.json"))
    assert [[c["memory"] for c in q["candidates"]] for q in a] == [
        [c["memory"] for c in q["candidates"]] for q in b
    ]
    assert [[c["injected"] for c in q["candidates"]] for q in a] == [
        [c["injected"] for c in q["candidates"]] for q in b
    ]
    raw = [
        [(c["raw"], d["raw"]) for c, d in zip(p["candidates"], q["candidates"], strict=True)]
        for p, q in zip(a, b, strict=True)
    ]
    assert max(abs(x - y) for row in raw for x, y in row) < 2e-7


def test_a_store_refuses_to_recreate_a_foreign_collection(tmp_path):
    user_store(tmp_path / "q")
    with pytest.raises(InputError) as e:
        MemoryStore(2, path=str(tmp_path / "q"))
    assert str(e.value) == (
        f"Qdrant collection 'memlab' in {tmp_path / 'q'} was not created by memlab (its metadata lacks "
        "created_by: memlab): memlab never deletes or overwrites it; choose another collection name or "
        "another store"
    )
    mine = MemoryStore(2, path=str(tmp_path / "q2"))  # memlab's own is recreated as before
    mine.client.close()
    again = MemoryStore(2, path=str(tmp_path / "q2"))
    assert again.created_by_memlab()
    again.client.close()


def test_a_qdrant_url_answering_a_web_page_is_named_not_dumped(tmp_path, capsys):
    class Page(BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body>" + b"x" * 5000
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        argv = ["import-qdrant", "--url", url, "--collection", "c", "--date-field", "d", "--text-field", "t"]
        assert main([*argv, "-o", str(tmp_path / "o")]) == 2
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert capsys.readouterr().err == (
        f"memlab: error: {url} does not answer as a Qdrant server: HTTP 200 OK, an HTML page titled "
        "'Welcome to nginx!' (5,072 bytes), not the API's answer: is the URL right?\n"
    )


def test_import_qdrant_refuses_zero_vectors_and_lone_surrogates(tmp_path, capsys):
    client = QdrantClient(path=str(tmp_path / "q"))
    client.create_collection("c", vectors_config=models.VectorParams(size=2, distance=models.Distance.COSINE))
    client.upsert(
        "c",
        [
            models.PointStruct(id=1, vector=[0.0, 0.0], payload={"d": "2026-09-01", "t": "fine"}),
            models.PointStruct(id=2, vector=[1.0, 0.0], payload={"d": "2026-09-02", "t": "bad \ud800"}),
        ],
    )
    client.close()
    argv = ["import-qdrant", "--path", str(tmp_path / "q"), "--collection", "c", "--date-field", "d"]
    assert main([*argv, "--text-field", "t", "-o", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == (
        "memlab: invalid dataset:\ncollection c: point 1: a zero vector\n"
        "collection c: point 2: text: lone surrogate escape \\ud800 at character 5: not valid Unicode text\n"
    )
    assert not (tmp_path / "o").exists()


# -- the results folder -------------------------------------------------------------------------


def test_run_out_on_an_existing_file_is_refused_and_the_file_kept(tmp_path, capsys):
    out = tmp_path / "report.txt"
    out.write_text("the user's report")
    assert main(["run", "--out", str(out), "--notebooks", str(ROOT / "notebooks")]) == 2
    assert capsys.readouterr().err == (
        f"memlab: error: --out {out}: is an existing file, not a results folder: memlab neither replaces "
        "nor hides it; choose another --out\n"
    )
    assert sorted(os.listdir(tmp_path)) == ["report.txt"] and out.read_text() == "the user's report"


def test_run_out_on_a_folder_that_is_not_a_run_is_refused(tmp_path, capsys):
    out = tmp_path / "home"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    assert main(["run", "--out", str(out), "--notebooks", str(ROOT / "notebooks")]) == 2
    assert capsys.readouterr().err == (
        f"memlab: error: --out {out}: is a folder that holds no earlier memlab run (no manifest.json of "
        "one): memlab replaces only its own results; choose a new or empty folder\n"
    )
    assert sorted(os.listdir(tmp_path)) == ["home"] and os.listdir(out) == ["thesis.tex"]


# -- vectors that cannot be trusted -------------------------------------------------------------

BAD = [
    ([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], "text 1: a zero vector"),
    ([[1.0, 0.0, 0.0], [True, False, False]], "item 1 with booleans, not numbers, as its 'embedding'"),
    ([[1.0, 0.0, 0.0], [float("nan"), 1.0, 0.0]], "text 2: component 1 is nan"),
    ([[1.0, 0.0, 0.0], [float("inf"), 1.0, 0.0]], "text 2: component 1 is inf"),
    ([[1e300, 0.0, 0.0], [1.0, 0.0, 0.0]], "text 1: component 1 is 1e+300, beyond float32"),
    ([[1e9, 0.0, 0.0], [1.0, 0.0, 0.0]], "text 1: its length 1e+09 is outside [1e-06, 1e+06]"),
    ([[1e-9, 0.0, 0.0], [1.0, 0.0, 0.0]], "text 1: its length 1e-09 is outside [1e-06, 1e+06]"),
]


@pytest.mark.parametrize(("rows", "problem"), BAD, ids=[p for _, p in BAD])
def test_every_served_vector_is_checked_before_it_is_used_or_cached(tmp_path, server, rows, problem):
    url, _ = server(lambda texts: embeddings(rows))
    cfg = ServerConfig(url, model="tiny", attempts=1)
    with pytest.raises(EmbeddingError) as e:
        Embedder(cache_dir=tmp_path, server=cfg).encode_documents(["a", "b"])
    head = f"embedding server {url}/embeddings returned"
    if problem.startswith("text"):
        expected = (
            f"{head} a vector memlab cannot trust for {problem}; nothing of this batch was used or cached"
        )
    else:
        expected = f"{head} {problem}"
    assert str(e.value) == expected
    assert list(tmp_path.rglob("*.npy")) == []


def test_a_base64_nan_is_refused_too(tmp_path, server):
    nan = base64.b64encode(np.array([np.nan, 1, 0], dtype="<f4").tobytes()).decode()
    url, _ = server(lambda texts: embeddings([nan for _ in texts]))
    cfg = ServerConfig(url, model="tiny", encoding="base64", attempts=1)
    with pytest.raises(EmbeddingError) as e:
        Embedder(cache_dir=tmp_path, server=cfg).encode_queries(["a"])
    assert str(e.value).endswith("for text 1: component 1 is nan; nothing of this batch was used or cached")


def declared(monkeypatch, tmp_path, url, batch=32):
    monkeypatch.setattr(Embedder, "_load_model", lambda self: FakeModel())
    return Embedder(cache_dir=tmp_path, server=ServerConfig(url, batch_size=batch, attempts=1))


TEXTS = [f"2026-09-{d:02d}: memory number {d}" for d in range(1, 21)]


def test_a_declared_server_is_checked_on_a_sample_of_what_it_serves(tmp_path, monkeypatch, server):
    url, seen = server(lambda texts: embeddings([unit(t) for t in texts]))  # honest
    emb = declared(monkeypatch, tmp_path, url, batch=8)
    np.testing.assert_allclose(emb.encode_documents(TEXTS), [unit(t) for t in TEXTS], atol=1e-7)
    # 20 texts in batches of 8, 8, 4: 1 + n // 16 re-embedded locally in each
    assert emb.record()["server"]["verified"] == {"texts": 3, "max_abs_diff": 0.0}
    assert [len(b["input"]) for b in seen] == [1, 1, 8, 8, 4]  # the probe in both roles first


def test_a_server_that_answers_only_the_probe_honestly_is_caught(tmp_path, monkeypatch, server):
    def liar(texts):
        return embeddings([unit(t) if t == PROBE_TEXT else unit(t + "!") for t in texts])

    url, _ = server(liar)
    emb = declared(monkeypatch, tmp_path, url)
    with pytest.raises(EmbeddingError) as e:
        emb.encode_documents(TEXTS)
    message = str(e.value)
    assert message.startswith(
        f"embedding server {url}/embeddings does not serve multilingual-e5-small: text "
    )
    assert message.endswith(
        "document vector, re-embedded locally to check, differs by up to "
        f"{message.split('up to ')[1].split(' ')[0]} (allowed 1e-06), though the probe text agreed; nothing of "
        "this call was cached; name its model with --embed-model to use it as a model of its own"
    )
    assert list(tmp_path.rglob("*.npy")) == []  # nothing of it reached the local model's cache


@pytest.mark.parametrize(
    ("url", "endpoint"),
    [
        (
            "https://h.example/openai/v1?api-version=2024-02-01",
            "https://h.example/openai/v1/embeddings?api-version=2024-02-01",
        ),
        ("http://h:1/v1/", "http://h:1/v1/embeddings"),
        ("http://h:1/v1/embeddings", "http://h:1/v1/embeddings"),
        ("http://[::1]:8080", "http://[::1]:8080/embeddings"),
    ],
)
def test_endpoints_are_built_with_a_url_library(url, endpoint):
    assert ServerConfig(url).endpoint == endpoint


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://[::1", "--embed-url: 'http://[::1' is not a valid URL (Invalid IPv6 URL)"),
        (
            "http://h:99999/v1",
            "--embed-url: 'http://h:99999/v1' is not a valid URL (Port out of range 0-65535)",
        ),
        ("http:///v1", "--embed-url: 'http:///v1' names no host"),
        ("ftp://h/v1", "--embed-url: expected an http:// or https:// URL, got 'ftp://h/v1'"),
    ],
)
def test_an_unparseable_url_is_one_line(capsys, url, message):
    assert main(["evaluate", "--embed-url", url]) == 2
    assert capsys.readouterr().err == f"memlab: error: {message}\n"


# -- a request that never ends ------------------------------------------------------------------


@pytest.fixture
def trickle():
    """A server that answers one byte every 0.2 s: no single read waits long, the whole never ends."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)
    stop = threading.Event()

    def serve():
        sock.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            conn.recv(65536)
            reply = b'HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{"data": [' + b" " * 10000
            for byte in reply:
                if stop.wait(0.2):
                    break
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    break
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    stop.set()
    sock.close()


def test_a_server_that_trickles_meets_the_deadline_of_its_request(tmp_path, trickle):
    cfg = ServerConfig(trickle, model="tiny", timeout=1.0, attempts=1)
    t0 = time.monotonic()
    with pytest.raises(EmbeddingError) as e:
        Embedder(cache_dir=tmp_path, server=cfg).encode_queries(["hello"])
    elapsed = time.monotonic() - t0
    assert 1.0 <= elapsed < 2.5  # the deadline, not a wait per read (that one would never fire)
    assert isinstance(e.value.__cause__, ServerFailure)
    assert str(e.value).startswith(
        f"embedding server {trickle}/embeddings failed after 1 attempt: no answer within 1 s; no local fallback"
    )


# -- work that cannot finish, memory that would not fit --------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["compare", "--source", "published", "--threshold-steps", "100000000"],
            "threshold_steps: 100,000,000 threshold steps of retriever 'gate-decay' (each one table row for "
            "every one of its 6,138 other settings) would take about",
        ),
        (
            ["robustness", "--source", "published", "--boot", "100000000000"],
            "n_boot: 100,000,000,000 bootstrap resamples of each kind cannot finish in reasonable time (each "
            "is a whole feasible-region computation, about 5 ms on seed16: 100,000 of each kind take about "
            "20 minutes): at most 100,000",
        ),
        (
            ["scale", "--n", "1:1000000000000:1"],
            "n: 1,000,000,000,000 sizes cannot finish in reasonable time (each size is one row of the curve, "
            "measured in turn): at most 10,000",
        ),
        (
            ["calibrate", "--boot", "1000000000"],
            "--boot: 1,000,000,000 bootstrap resamples of 216 probes would take about 4.7 TiB of memory, more "
            "than memlab's budget of 2.0 GiB: at most 414,252 fit",
        ),
        (
            ["drift", "--boot", "1000000000000"],
            "n_boot: 1,000,000,000,000 bootstrap resamples would take about 5.8 PiB of memory, more than "
            "memlab's budget of 2.0 GiB: at most 330,585 fit",
        ),
        (
            # 10^12 + 1 bonus values x the default 60 taus (1:60:1) x 21 thresholds (the seed's 0.40:0.50:0.005)
            ["sweep", "--source", "published", "--bonus", "0:1:1e-12"],
            "grid: 1,260,000,000,001,260 configurations of 10 questions each cannot finish in reasonable "
            "time (the sweep checks 100 to 160 million configuration-questions a second on two cores: 10^8 "
            "configurations of 80 questions took 50 s; a narrower axis or a coarser step finishes): at most "
            "50,000,000,000",
        ),
        (
            ["feasible", "--source", "published", "--tau", "1:1000000000:1"],
            "tau x threshold: 1,000,000,000 feasible regions cannot finish in reasonable time (each is one "
            "closed-form region, about 0.5 ms on seed16: 1,000,000 take about 10 minutes): at most 1,000,000",
        ),
        (
            ["compare", "--source", "published", "--alpha", "0:1:1e-9"],
            "alphas: 1,000,000,000 values cannot finish in reasonable time (each multiplies the table): at "
            "most 10,000",
        ),
    ],
    ids=["compare", "robustness", "scale-sizes", "calibrate", "drift", "sweep", "feasible", "compare-axis"],
)
def test_sizes_that_cannot_finish_are_refused_saying_what_would(capsys, argv, message):
    t0 = time.monotonic()
    assert main(argv) == 2
    assert time.monotonic() - t0 < 20  # refused up front, not after hours or gigabytes
    err = capsys.readouterr().err
    assert err.startswith(f"memlab: error: {message}") and err.count("\n") == 1


def test_a_scale_study_too_large_to_measure_is_refused_before_embedding(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(Embedder, "_encode", fake_encode)
    argv = ["scale", "--n", "1000000000000", "--cache-dir", str(tmp_path)]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "memlab: error: n: 1,000,000,000,000 distractors cannot finish in reasonable time (each is scored "
        "against 10 questions at 4 dimensions, 4e+13 multiply-adds in all; the budget is 4e+12, about 12 "
        "minutes at the measured 5e9 a second; the extreme-value prediction reaches any N without "
        "measuring it): at most 100,000,000,000\n"
    )


def big_published(root: Path, n: int) -> Path:
    shutil.copytree(dataset_dir("seed16"), root, ignore=shutil.ignore_patterns("*.jsonl"))
    meta = json.loads((root / "dataset.json").read_text())
    meta.update(languages=["en"], criteria=meta["criteria"][:1])
    meta.pop("tables")
    (root / "dataset.json").write_text(json.dumps(meta))
    ids = [f"m{i}" for i in range(n)]
    (root / "memories.jsonl").write_text(
        "".join(
            json.dumps({"id": m, "date": "2026-08-20", "text": f"2026-08-20: memory {m}."}) + "\n"
            for m in ids
        )
    )
    (root / "questions.jsonl").write_text(
        "".join(
            json.dumps({"id": f"N{j}", "kind": "nohit", "text": f"question {j}"}) + "\n" for j in range(4)
        )
    )
    (root / "published_scores.jsonl").write_text(
        "".join(
            json.dumps(
                {"question": f"N{j}", "memory": m, "raw": (i % 997) / 2000, "table": "t", "inferred": []}
            )
            + "\n"
            for j in range(4)
            for i, m in enumerate(ids)
        )
    )
    return root


def test_published_scores_load_in_linear_time(tmp_path):
    """20,000 memories: 84 s before (an id's position looked up by scanning every id), about 1 s now."""
    dataset = load_dataset(big_published(tmp_path / "big", 20_000))
    t0 = time.perf_counter()
    scores = load_scores("published", dataset)
    assert time.perf_counter() - t0 < 15
    assert scores.raw.shape == (4, 20_000) and scores.raw[3, 1996] == (1996 % 997) / 2000


def test_a_tie_at_the_kth_score_of_one_question_keeps_dataset_order():
    """More than 64 memories and a tie at the k-th score: the partition's row is re-sorted whole
    (it raised "Calling nonzero on 0d arrays" for one question's row)."""
    raw = np.full(100, 0.3)
    raw[[5, 70]] = 0.9
    assert select_candidates(raw, 8).tolist() == [5, 70, 0, 1, 2, 3, 4, 6]


def test_a_datasets_stored_zero_vector_is_refused(tmp_path, capsys):
    ds = tmp_path / "ds"
    shutil.copytree(dataset_dir("seed16"), ds)
    vecs = np.eye(16, 4, dtype=np.float32)
    vecs[:, 0] += 1
    vecs[4] = 0  # memory 5: no direction, no cosine
    np.save(ds / "vectors.npy", vecs)
    meta = json.loads((ds / "dataset.json").read_text())
    meta["vectors"] = {"file": "vectors.npy", "dim": 4, "model": None}
    (ds / "dataset.json").write_text(json.dumps(meta))
    assert main(["validate", str(ds)]) == 2
    assert capsys.readouterr().err == (
        f"memlab: invalid dataset:\n{ds}/vectors.npy: row 5 (memory 5 of memories.jsonl): a zero vector\n"
    )
