"""memlab run reuses a notebook's earlier result when nothing it depends on changed, and says so;
any change executes it again; --force executes every one."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from memlab.app.cli import main
from memlab.app.reuse import Reuse
from memlab.datasets.schema import dataset_dir

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "01_reproduce.ipynb"
PARAMS = {
    "source": "published",
    "dataset": "seed16",
    "bonus": 0.05,
    "out_dir": "/x/a",
    "fig_formats": ["html"],
}


@pytest.fixture(scope="module")
def reuse(tmp_path_factory) -> Reuse:
    return Reuse(tmp_path_factory.mktemp("runs"), batch="b.yaml")


def key(reuse: Reuse, notebook: Path = NOTEBOOK, **params) -> str:
    return reuse.key(reuse.inputs(notebook, {**PARAMS, **params}))


def test_the_key_is_the_inputs_and_nothing_else(reuse, tmp_path):
    first = key(reuse)
    assert key(Reuse(reuse.root, batch="other.yaml")) == first  # another instance, another batch file
    assert key(reuse, out_dir="/somewhere/else") == first  # where it is written is not an input
    assert key(reuse, bonus=0.04) != first
    assert key(reuse, fig_formats=["html", "png"]) != first
    assert key(reuse, model="all-MiniLM-L6-v2") != first
    copy = tmp_path / NOTEBOOK.name
    copy.write_bytes(NOTEBOOK.read_bytes())
    assert key(reuse, copy) == first  # the notebook counts by its name and bytes, not its folder...
    copy.write_bytes(NOTEBOOK.read_bytes().replace(b"seed", b"Seed", 1))
    assert key(reuse, copy) != first  # ...so an edit counts


def test_an_edited_dataset_file_changes_the_key(reuse, tmp_path):
    folder = tmp_path / "mine"
    shutil.copytree(dataset_dir("seed16"), folder)
    before = key(reuse, dataset=str(folder))
    assert key(reuse, dataset=str(folder)) == before
    memories = folder / "memories.jsonl"
    memories.write_text(memories.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert key(reuse, dataset=str(folder)) != before


def test_memlab_and_the_models_are_recorded(reuse):
    inputs = reuse.inputs(NOTEBOOK, PARAMS)
    assert set(inputs) >= {"notebook_sha256", "parameters", "files", "models", "memlab", "git_commit"}
    assert len(inputs["sources_sha256"]) == 64 and inputs["packages"]["numpy"]
    # an empty model parameter: the default model and the drift study's, by their cache identity
    assert set(inputs["models"]) == {"multilingual-e5-small", "all-MiniLM-L6-v2"}
    assert len(inputs["models"]["multilingual-e5-small"]["weights_sha256"]) == 64
    assert "out_dir" not in inputs["parameters"]


def test_store_find_restore_and_one_entry_per_slot(tmp_path):
    reuse = Reuse(tmp_path / "runs", batch="b.yaml")
    made = tmp_path / "made"
    (made / "tables").mkdir(parents=True)
    (made / "tables" / "t.json").write_text("[1]")
    (tmp_path / "made.ipynb").write_text("{}")
    ran = {"start": "2026-01-01T00:00:00+00:00", "end": "2026-01-01T00:00:09+00:00", "duration_s": 9.0}
    reuse.store("k1", {"a": 1}, ("run", "01_reproduce"), ran, tmp_path / "made.ipynb", made)
    entry = reuse.find("k1")
    assert entry is not None and entry.record["inputs"] == {"a": 1}
    out, js = tmp_path / "out", tmp_path / "plotly.min.js"
    (out / "stale").mkdir(parents=True)  # whatever was there is replaced whole
    said = reuse.restore(entry, tmp_path / "out.ipynb", out, js)
    assert sorted(p.name for p in out.rglob("*")) == ["t.json", "tables"]
    assert (tmp_path / "out.ipynb").read_text() == "{}" and js.is_file()
    assert (said["status"], said["duration_s"], said["reused"]["key"]) == ("ok", 9.0, "k1")
    # another key for the same (batch, run, notebook) replaces it; another slot does not
    reuse.store("k2", {"a": 2}, ("run", "01_reproduce"), ran, tmp_path / "made.ipynb", made)
    reuse.store("k3", {"a": 3}, ("other", "01_reproduce"), ran, tmp_path / "made.ipynb", made)
    assert reuse.find("k1") is None and reuse.find("k2") and reuse.find("k3")


def test_half_written_entries_are_never_found_and_dead_ones_are_removed(tmp_path):
    root = tmp_path / "runs"
    (root / "k1" / "results").mkdir(parents=True)  # no entry.json, no notebook: not an entry
    dead = root / ".tmp-999999999-k2"
    dead.mkdir()
    reuse = Reuse(root)
    assert reuse.find("k1") is None and reuse.find("nothing") is None
    assert not dead.exists()
    mine = root / f".tmp-{os.getpid()}-k3"  # a live process's store in progress stays
    mine.mkdir()
    Reuse(root)
    assert mine.exists()


# -- the batch --------------------------------------------------------------------------------


def batch_file(tmp_path: Path, folder: Path, bonus_b: float) -> Path:
    path = tmp_path / "batch.yaml"
    path.write_text(
        "notebooks: [01_reproduce]\n"
        "parameters: {fig_formats: [html], source: published}\n"
        "runs:\n"
        f"  - {{name: a, parameters: {{dataset: {folder}}}}}\n"
        f"  - {{name: b, parameters: {{bonus: {bonus_b}}}}}\n"
    )
    return path


def run(batch: Path, out: Path, capsys, *extra: str) -> tuple[dict, str]:
    assert main(["run", "--config", str(batch), "--out", str(out), *extra]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    return {n["run"]: n for n in manifest["notebooks"]}, capsys.readouterr().err


@pytest.mark.notebook
def test_a_rerun_reuses_what_did_not_change(tmp_path, capsys):
    folder = tmp_path / "mine"
    shutil.copytree(dataset_dir("seed16"), folder)
    out = tmp_path / "out"
    first, log = run(batch_file(tmp_path, folder, 0.04), out, capsys)
    assert {r: n["reused"] for r, n in first.items()} == {"a": None, "b": None}
    table = (out / "b" / "01_reproduce" / "tables" / "criteria.json").read_bytes()

    # nothing changed: both reused, said per notebook, the results folder whole again
    again, log = run(batch_file(tmp_path, folder, 0.04), out, capsys)
    assert "reused a/01_reproduce: nothing it depends on changed" in log
    assert "reused b/01_reproduce: nothing it depends on changed" in log
    assert "0 of 2 notebooks to execute" in log
    assert all(n["reused"] and n["status"] == "ok" for n in again.values())
    assert again["b"]["start"] == first["b"]["start"]  # when it ran, not when it was copied
    assert (out / "b" / "01_reproduce" / "tables" / "criteria.json").read_bytes() == table
    assert (out / "plotly.min.js").is_file() and (out / "b" / "01_reproduce.ipynb").is_file()
    index = (out / "index.html").read_text()
    assert "a/01_reproduce.ipynb" in index and "b/01_reproduce/figures/bonus_curve.html" in index

    # one parameter changed: that notebook executes, the other is reused
    changed, log = run(batch_file(tmp_path, folder, 0.03), out, capsys)
    assert changed["b"]["reused"] is None and changed["a"]["reused"]
    assert json.loads((out / "b" / "01_reproduce" / "tables" / "criteria.json").read_text()) != json.loads(
        table
    )
    assert "1 of 2 notebooks to execute" in log

    # a file of run a's dataset edited: run a executes
    (folder / "questions.jsonl").write_text((folder / "questions.jsonl").read_text() + "\n")
    edited, _ = run(batch_file(tmp_path, folder, 0.03), out, capsys)
    assert edited["a"]["reused"] is None and edited["b"]["reused"]

    # --force: every one executes
    forced, log = run(batch_file(tmp_path, folder, 0.03), out, capsys, "--force")
    assert all(n["reused"] is None for n in forced.values()) and "reused" not in log
