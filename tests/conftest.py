from __future__ import annotations

import json
import shutil
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
