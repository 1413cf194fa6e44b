from __future__ import annotations

import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from memlab.datasets.schema import dataset_dir, load_dataset
from memlab.embedding.embedder import Embedder
from memlab.scores.sources import load_scores


def pytest_collection_modifyitems(items):
    """A test that asks for the embedded scores loads the model: it is a ``model`` test; one that
    asks for the local chat server is a ``chat`` test."""
    for item in items:
        if "embedded" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.model)
        if "chat_server" in getattr(item, "fixturenames", ()):  # the local chat server
            item.add_marker(pytest.mark.chat)


@pytest.fixture(autouse=True)
def markers_say_the_truth(request, monkeypatch):
    """An unmarked test that loads the embedding model, executes a notebook, runs the real
    Qdrant engine or starts the local chat server fails: so the markers say what each test needs."""
    node = request.node.nodeid
    if request.node.get_closest_marker("model") is None:

        def no_model(self):
            raise AssertionError(f"{node} loads the embedding model: mark it @pytest.mark.model")

        monkeypatch.setattr(Embedder, "_load_model", no_model)
    if request.node.get_closest_marker("notebook") is None:
        import papermill

        def no_notebook(*args, **kwargs):
            raise AssertionError(f"{node} executes a notebook: mark it @pytest.mark.notebook")

        monkeypatch.setattr(papermill, "execute_notebook", no_notebook)
    if request.node.get_closest_marker("qdrant_edge") is None:
        from memlab.qdrant import edge

        def no_engine():
            raise AssertionError(f"{node} runs the real Qdrant engine: mark it @pytest.mark.qdrant_edge")

        monkeypatch.setattr(edge, "engine", no_engine)
    if request.node.get_closest_marker("chat") is None:
        from memlab.answers import local_server

        def no_server(self, *args, **kwargs):
            raise AssertionError(f"{node} starts the local chat server: mark it @pytest.mark.chat")

        monkeypatch.setattr(local_server.LocalServer, "start", no_server)


@pytest.fixture(autouse=True)
def own_rerun_cache(tmp_path_factory, monkeypatch):
    """Every test its own rerun cache (``memlab.app.reuse``): a batch a test runs twice executes
    twice unless the test asks for reuse, and nothing lands in the user's cache."""
    monkeypatch.setenv("MEMLAB_RUNS_DIR", str(tmp_path_factory.mktemp("runs")))


@pytest.fixture(scope="session")
def seed():
    return load_dataset("seed16")


@pytest.fixture(scope="session")
def published(seed):
    return load_scores("published", seed)


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("embedding-cache")


@pytest.fixture(scope="session")
def embedded(seed, cache_dir):
    """The fixture embedded with the packaged model (loads it once for the session)."""
    return load_scores("embedded", seed, cache_dir=cache_dir)


@pytest.fixture
def dataset_copy(tmp_path):
    """A writable copy of seed16 and a helper to rewrite one of its lines."""
    root = tmp_path / "ds"
    shutil.copytree(dataset_dir("seed16"), root)

    def edit(fname: str, lineno: int, **changes):
        path = root / fname
        lines = path.read_text(encoding="utf-8").splitlines()
        obj = json.loads(lines[lineno - 1])
        for key, value in changes.items():
            if value is ...:
                obj.pop(key, None)
            else:
                obj[key] = value
        lines[lineno - 1] = json.dumps(obj, ensure_ascii=False)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return root

    return root, edit


# -- a stdlib HTTP server on 127.0.0.1, for the embedding-server tests ---------------------------


class Recorder(BaseHTTPRequestHandler):
    """Answers every POST with ``self.server.reply(body)`` -> (status, payload) and keeps the requests."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append({"headers": dict(self.headers), "body": body})
        status, payload = self.server.reply(body)
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def tiny_server():
    """Start a stdlib HTTP server with a given reply function; returns its base URL and requests."""
    servers = []

    def start(reply):
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
        httpd.reply, httpd.seen = reply, []
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}/v1", httpd.seen

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()
