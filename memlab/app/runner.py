"""``memlab run``: execute the notebooks through papermill for every parameter set of a batch.

For each run of the batch and each notebook: an executed notebook ``OUT/<run>/<notebook>.ipynb``
and its results under ``OUT/<run>/<notebook>/`` (tables as parquet and JSON, figures under
``figures/``). Then, for the whole batch: PNG/SVG of every figure with one kaleido browser,
``manifest.json`` (parameters, package versions, git commit, start/end/duration and status per
notebook) and ``index.html`` (every figure and table, a link to every executed notebook).

A failing notebook is saved with its error and reported; the others still run; the exit status
is non-zero at the end.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from memlab.app.notebooks import NOTEBOOK_NAMES as NOTEBOOKS
from memlab.app.notebooks import NOTEBOOKS as REGISTERED
from memlab.app.notebooks import takers
from memlab.app.parameters import NOTEBOOK_PARAMETERS
from memlab.core.errors import InputError, MissingFileError
from memlab.core.paths import plain_name
from memlab.datasets.yaml_text import load_yaml, parse_yaml


def _uses(notebook: str) -> tuple[str, ...] | None:
    """The parameters a registered notebook takes (None: a notebook memlab does not know)."""
    nb = REGISTERED.get(notebook)
    return None if nb is None else nb.parameters


PACKAGES = (
    "memlab",
    "numpy",
    "pandas",
    "qdrant-client",
    "sentence-transformers",
    "torch",
    "plotly",
    "kaleido",
    "papermill",
    "ipywidgets",
)


@dataclass(frozen=True)
class Run:
    name: str
    parameters: dict[str, Any]
    notebooks: tuple[str, ...] | None = None  # None: the batch's notebooks
    own: tuple[str, ...] = ()  # the parameters the run sets itself (not the batch's shared ones)


@dataclass(frozen=True)
class Batch:
    notebooks: tuple[str, ...]
    runs: tuple[Run, ...]
    path: str = "(defaults)"  # the batch file it was read from


@dataclass
class Result:
    run: str
    notebook: str
    parameters: dict[str, Any]
    output: str
    out_dir: str
    status: str = "pending"
    error: str | None = None
    start: str | None = None
    end: str | None = None
    duration_s: float | None = None
    retried: bool = False  # its kernel died while starting and was started once more
    # reused from an earlier run (memlab.app.reuse): the key and when and how long it ran then
    reused: dict[str, Any] | None = None
    report: dict[str, Any] = field(default_factory=dict)


def typed(name: str, value: Any, where: str) -> Any:
    """A parameter value converted to its declared type (``str`` stays text: "1:30:1" is a range,
    not YAML's base-60 number 5401); an empty value of a parameter declared empty (the threshold)
    stays None."""
    declared = next(p for p in NOTEBOOK_PARAMETERS if p.name == name)
    kind = declared.type
    if declared.default is None and value in (None, ""):  # not given: what empty means (the model's)
        return None
    try:
        if kind == "str":
            return "" if value is None else str(value)
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        if kind == "list":
            if isinstance(value, list):
                return [str(v) for v in value]
            return [v.strip() for v in str(value).split(",") if v.strip()]  # html,png
    except (TypeError, ValueError):
        got = (
            repr(value)
            if len(repr(value)) <= 80
            else f"{repr(value)[:60]}... ({len(str(value)):,} characters)"
        )
        raise InputError(f"{where}: {name}: expected {kind}, got {got}") from None
    return value


def parse_value(text: str, where: str = "value") -> Any:
    """``-p key=value``: a list in YAML flow style ([html, png]) or plain text (a list parameter
    also takes a comma list: html,png), typed later."""
    text = text.strip()
    if text.startswith("["):
        return parse_yaml(
            text, f"-p {where}", located=False
        )  # scalars stay text; [html is one line, not a traceback
    return text


# the grid axes a parameter writes as start:stop:step or a comma list (memlab.core.grid.parse_axis)
AXIS_PARAMETERS = (
    "bonus_range",
    "tau_range",
    "threshold_range",
    "alpha_range",
    "rrf_k_range",
    "hybrid_bonus_range",
    "hybrid_tau_range",
    "n_range",
)


def checked(name: str, value: Any, where: str) -> Any:
    """``value`` (typed) when the parameter registry allows it: one of its ``choices``, inside its
    ``bounds``, an axis memlab reads; else one line naming ``where``, said before any notebook
    runs or any results folder is written (not by the kernel, after)."""
    from memlab.app.parameters import parameter
    from memlab.core.grid import parse_axis
    from memlab.core.numbers import check_number
    from memlab.core.registry import unknown_message

    declared = parameter(name)
    if value is None or value == "":
        return value
    if declared.choices is not None and declared.type == "str":
        choices = list(declared.choices())
        if value not in choices:
            raise InputError(f"{where}: {name}: {unknown_message(name, [value], choices)}")
    if declared.bounds and declared.type in ("int", "float"):
        check_number(value, f"{where}: {name}", integer=declared.type == "int", **declared.bounds)
    try:
        if name in AXIS_PARAMETERS:
            parse_axis(str(value), name)
        elif name in LIST_CHECKS:
            LIST_CHECKS[name](value)
    except InputError as e:  # said of the batch file's key, not of a flag
        raise InputError(f"{where}: {name}: {str(e).removeprefix('--').removeprefix(f'{name}: ')}") from None
    return value


def _retrievers(value: str) -> None:
    from memlab.retrieval.retrievers import check_retrievers

    check_retrievers([n.strip() for n in value.split(",") if n.strip()])


def _fig_formats(value: list[str]) -> None:
    from memlab.output.report import check_fig_formats

    check_fig_formats(value)


def _conditions(value: str) -> None:
    from memlab.answers.conditions import CONDITION_NAMES
    from memlab.core.registry import check_names

    # split as notebook 09 splits it (``build_conditions(problem, tuple(conditions.split(",")))``):
    # what the kernel would refuse after a results folder is written is refused here, before
    check_names(dict.fromkeys(CONDITION_NAMES), value.split(","), "condition")


# the comma lists whose every name is checked by the registry that reads it
LIST_CHECKS = {"retrievers": _retrievers, "fig_formats": _fig_formats, "conditions": _conditions}


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    known = {p.name for p in NOTEBOOK_PARAMETERS}
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise InputError(f"-p {pair!r}: expected key=value")
        key, value = pair.split("=", 1)
        if key not in known:
            raise InputError(f"-p {key}: unknown parameter; notebook parameters: {', '.join(sorted(known))}")
        out[key] = checked(key, typed(key, parse_value(value, pair), "-p"), "-p")
    return out


def check_parameters(where: str, params: Any) -> dict[str, Any]:
    known = {p.name for p in NOTEBOOK_PARAMETERS}
    if not isinstance(params, dict):
        raise InputError(f"{where}: parameters must be a mapping, got {params!r}")
    unknown = sorted(set(params) - known)
    if unknown:
        raise InputError(
            f"{where}: unknown parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    return {k: checked(k, typed(k, v, where), where) for k, v in params.items()}


def load_batch(path: str | Path | None) -> Batch:
    """A batch file: ``notebooks`` (default all), shared ``parameters``, and ``runs`` (name + parameters)."""
    if path is None:
        return Batch(NOTEBOOKS, (Run("default", {}),))
    path = Path(path)
    try:
        # BaseLoader keeps every scalar as text; each parameter is then converted to its declared
        # type (safe_load would read tau_range: 1:30:1 as the base-60 number 5401); not UTF-8,
        # invalid YAML, nesting too deep: one line each
        doc = load_yaml(path)
    except FileNotFoundError:
        raise MissingFileError(f"no batch file {path}") from None
    except IsADirectoryError:
        raise InputError(
            f"{path}: is a folder, not a batch file (YAML: notebooks, parameters, runs)"
        ) from None
    if doc is None or doc == {}:  # an empty file, /dev/null: not "every notebook with the defaults"
        raise InputError(
            f"{path}: empty: a batch file names notebooks, parameters or runs (memlab run without "
            "--config runs every notebook with the defaults)"
        )
    if not isinstance(doc, dict):
        raise InputError(f"{path}: expected a mapping with notebooks, parameters and runs")
    unknown = sorted(set(doc) - {"notebooks", "parameters", "runs"})
    if unknown:
        raise InputError(
            f"{path}: unknown key(s) {', '.join(unknown)} (allowed: notebooks, parameters, runs)"
        )
    notebooks = notebook_names(doc.get("notebooks"), f"{path}: notebooks") or NOTEBOOKS
    # dataset folders in a batch file are relative to the batch file, wherever memlab runs
    shared = absolute_datasets(
        check_parameters(f"{path}: parameters", given(doc, "parameters")), path.parent, f"{path}: "
    )
    if doc.get("runs") is not None and not isinstance(doc["runs"], list):
        raise InputError(
            f"{path}: runs: expected a list of runs (each a name and parameters), got {doc['runs']!r}"
        )
    runs = []
    for i, item in enumerate(doc.get("runs") or [{"name": "default"}], start=1):
        if not isinstance(item, dict) or not item.get("name"):
            raise InputError(f"{path}: runs[{i}]: needs a name")
        unknown = sorted(set(item) - {"name", "notebooks", "parameters"})
        if unknown:  # a misspelt key (paramters:) would drop what it holds without a word
            raise InputError(
                f"{path}: runs[{i}] ({item['name']}): unknown key(s) {', '.join(map(str, unknown))} "
                "(allowed: name, notebooks, parameters)"
            )
        name = str(item["name"])
        if not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
            raise InputError(f"{path}: runs[{i}]: name {name!r} must be letters, digits, '-', '_' or '.'")
        if name in {r.name for r in runs}:
            raise InputError(f"{path}: runs[{i}]: duplicate name {name!r}")
        own = notebook_names(item.get("notebooks"), f"{path}: runs[{i}] ({name}): notebooks")
        unknown_nb = sorted(set(own or []) - set(NOTEBOOKS))
        if unknown_nb:
            raise InputError(
                f"{path}: runs[{i}] ({name}): unknown notebook(s) {', '.join(unknown_nb)}; "
                f"notebooks: {', '.join(NOTEBOOKS)}"
            )
        where = f"{path}: runs[{i}] ({name})"
        params = absolute_datasets(
            check_parameters(where, given(item, "parameters")), path.parent, f"{where}: "
        )
        runs.append(Run(name, {**shared, **params}, tuple(own) if own else None, tuple(params)))
    return Batch(notebooks, tuple(runs), str(path))


def given(doc: dict[str, Any], key: str) -> Any:
    """``doc[key]``, an empty mapping when left out or empty (``parameters:``); anything else as
    written, for the check to refuse (``parameters: []`` is no mapping, not "none")."""
    value = doc.get(key)
    return {} if value is None or value == "" else value


def notebook_names(value: Any, where: str) -> tuple[str, ...] | None:
    """A batch file's list of notebooks: plain names only (a notebook is ``NAME.ipynb`` in the
    notebooks folder, its results ``OUT/<run>/NAME/``: a path could reach outside both)."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise InputError(f"{where}: expected a list of notebook names, got {value!r}")
    if not value:  # an empty list is not "all of them"
        raise InputError(
            f"{where}: empty: name at least one notebook, or leave the key out for all of them "
            f"({', '.join(NOTEBOOKS)})"
        )
    return tuple(plain_name(v, f"{where}[{i}]") for i, v in enumerate(value, start=1))


def find_notebooks_dir(explicit: str | Path | None = None) -> Path:
    candidates = (
        [Path(explicit)]
        if explicit
        else [Path.cwd() / "notebooks", Path(__file__).resolve().parents[1] / "notebooks"]
    )
    for c in candidates:
        if (c / f"{NOTEBOOKS[0]}.ipynb").is_file():
            return c
    raise MissingFileError(
        f"no memlab notebooks found in {', '.join(map(str, candidates))} (pass --notebooks DIR)"
    )


def kernel_name() -> str:
    """The kernelspec ``memlab`` that the set-up installs into .venv, else this interpreter's."""
    from jupyter_client.kernelspec import KernelSpecManager

    specs = KernelSpecManager().find_kernel_specs()
    return "memlab" if "memlab" in specs else "python3"


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parents[1],
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


DATASET_PARAMETERS = ("dataset", "hybrid_datasets")  # a name, a folder, or a comma list of them
FILE_PARAMETERS = ("benchmark_file",)  # a file path


def absolute_datasets(params: dict[str, Any], base: Path | None = None, where: str = "") -> dict[str, Any]:
    """Dataset folders (and the benchmark file) made absolute (the notebooks run in the notebooks
    folder): a relative one resolves against ``base`` (the batch file's folder, or where memlab
    runs for ``-p``). A bare name is a packaged dataset or one under data/
    (``memlab.datasets.locations.dataset_dir``); a path that is no folder (for the benchmark file:
    no file) is an error that shows where it was looked for."""
    from memlab.datasets.schema import dataset_dir

    base = base or Path.cwd()
    out = dict(params)
    for key in DATASET_PARAMETERS:
        if not isinstance(out.get(key), str) or not out[key]:
            continue
        resolved = []
        for e in (e.strip() for e in out[key].split(",")):
            path = (base / Path(e).expanduser()).resolve()
            if path.is_dir():
                resolved.append(str(path))
            elif "/" in e or "\\" in e:
                raise MissingFileError(f"{where}{key}: no dataset folder {path}")
            else:
                resolved.append(str(dataset_dir(e)) if not is_packaged(e) else e)
        out[key] = ",".join(resolved)
    for key in FILE_PARAMETERS:
        value = out.get(key)
        if not isinstance(value, str) or not value:
            continue
        path = (base / Path(value).expanduser()).resolve()
        if not path.is_file():  # said now, with the path it was looked for at, not by a notebook later
            raise MissingFileError(f"{where}{key}: no file {path}")
        out[key] = str(path)
    return out


def is_packaged(name: str) -> bool:
    from memlab.datasets.locations import packaged_datasets

    return name in packaged_datasets()


def notebook_params(notebook: str, params: dict[str, Any]) -> dict[str, Any]:
    """Only the parameters the notebook takes (a notebook memlab does not know takes them all)."""
    uses = _uses(notebook)
    return dict(params) if uses is None else {k: v for k, v in params.items() if k in uses}


def check_taken(batch: Batch, overrides: dict[str, Any]) -> None:
    """Every parameter a run sets, or ``-p`` sets, is taken by one of the notebooks it runs."""
    everything = set(batch.notebooks) | {nb for r in batch.runs for nb in r.notebooks or ()}
    for key in overrides:
        if not any(key in (_uses(nb) or (key,)) for nb in everything):
            raise InputError(
                f"-p {key}: none of the batch's notebooks ({', '.join(sorted(everything))}) takes it; "
                f"it is a parameter of {', '.join(takers(key))}"
            )
    for run in batch.runs:
        notebooks = run.notebooks or batch.notebooks
        for key in run.own:
            if not any(key in (_uses(nb) or (key,)) for nb in notebooks):
                raise InputError(
                    f"{batch.path}: run {run.name!r}: {key}: none of its notebooks "
                    f"({', '.join(notebooks)}) takes it; it is a parameter of {', '.join(takers(key))}"
                )
