"""A FIFO (a named pipe) where memlab expects a file is refused at once, in one line naming the
file, where opening it would have waited for a writer for ever: dataset.json, the records, the
stored vectors, a query log, a JSON file read by ``load_json``. A guard thread writes to the pipe
after a while, so that a regression fails the test instead of hanging the suite."""

from __future__ import annotations

import json
import os
import shutil
import threading
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest

from memlab.core.errors import InputError
from memlab.core.textfiles import load_json, read_input
from memlab.datasets.querylog import load_log
from memlab.datasets.schema import DatasetError, load_dataset

pytestmark = pytest.mark.hostile


def fifo(path: Path) -> Path:
    if path.exists():
        path.unlink()
    os.mkfifo(path)
    return path


def unblocked_after(path: Path, seconds: float = 20.0) -> threading.Timer:
    """Writes to the pipe after ``seconds``: a reader blocked on it then returns (and fails)."""

    def write() -> None:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # no reader waits: nothing blocked
            return
        os.write(fd, b"{}")
        os.close(fd)

    timer = threading.Timer(seconds, write)
    timer.daemon = True
    timer.start()
    return timer


@pytest.fixture
def store(tmp_path) -> Path:
    root = tmp_path / "seed16"
    shutil.copytree(files("memlab.datasets.packaged") / "seed16", root)
    return root


@pytest.mark.parametrize("name", ["dataset.json", "memories.jsonl", "questions.jsonl"])
def test_a_dataset_file_that_is_a_fifo(store, name):
    pipe = fifo(store / name)
    guard = unblocked_after(pipe)
    with pytest.raises(DatasetError) as e:
        load_dataset(store)
    guard.cancel()
    assert f"{name}: is a FIFO, not a regular file: memlab reads only regular files" in str(e.value)


def test_stored_vectors_that_are_a_fifo(store):
    meta = json.loads((store / "dataset.json").read_text())
    n = sum(1 for line in (store / "memories.jsonl").read_text().splitlines() if line.strip())
    meta["vectors"] = {"file": "vectors.npy", "dim": 4, "model": None, "order": "memories.jsonl"}
    (store / "dataset.json").write_text(json.dumps(meta))
    np.save(store / "vectors.npy", np.ones((n, 4), dtype=np.float32))
    load_dataset(store)  # the regular file loads
    guard = unblocked_after(fifo(store / "vectors.npy"))
    with pytest.raises(DatasetError) as e:
        load_dataset(store)
    guard.cancel()
    assert "vectors.npy: is a FIFO, not a regular file" in str(e.value)


def test_a_query_log_that_is_a_fifo(tmp_path):
    pipe = fifo(tmp_path / "log.jsonl")
    guard = unblocked_after(pipe)
    with pytest.raises(InputError) as e:
        load_log(pipe)
    guard.cancel()
    assert str(e.value) == f"{pipe}: is a FIFO, not a regular file: memlab reads only regular files"


def test_a_json_file_that_is_a_fifo(tmp_path):
    pipe = fifo(tmp_path / "locomo.json")
    guard = unblocked_after(pipe)
    with pytest.raises(InputError) as e:
        load_json(pipe)
    guard.cancel()
    assert str(e.value) == f"{pipe}: is a FIFO, not a regular file: memlab reads only regular files"


def test_regular_files_folders_and_missing_files_read_as_before(tmp_path):
    (tmp_path / "a.json").write_bytes(b'{"a": 1}')
    assert read_input(tmp_path / "a.json") == b'{"a": 1}'
    with pytest.raises(IsADirectoryError):
        read_input(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_input(tmp_path / "missing.json")
    with pytest.raises(InputError, match="is a character device"):
        read_input("/dev/zero")  # no end: it would fill the memory
