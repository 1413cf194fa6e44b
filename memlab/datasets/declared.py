"""What a dataset declares in dataset.json beyond its records: criteria, the seed-style tables and
the stored vectors of an imported dataset."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memlab.core.criteria import Criterion
from memlab.core.errors import InputError
from memlab.core.files import file_kind
from memlab.core.paths import within
from memlab.core.textfiles import decode, parse_json
from memlab.core.vectors import NORM_RANGE, raw_vector_problem
from memlab.datasets.locations import dataset_dir
from memlab.datasets.records import DATE_FORMATS


@dataclass(frozen=True)
class DeclaredTables:
    """Tables a dataset asks notebook 01 for, as the seed write-up printed them.

    ``candidates``: hand-picked (bonus, tau_days) pairs, compared in one table with the selection
    rule's pick; ``reruns``: questions whose candidates are shown memory by memory. A dataset
    without them gets the generic per-kind tables instead.
    """

    candidates: tuple[tuple[float, float], ...] = ()
    reruns: tuple[str, ...] = ()


def declared_criteria(
    items: Any, question_ids: dict[str, int], problems: list[str], no_current: frozenset[str] = frozenset()
) -> tuple[Any, ...] | None:
    """``criteria`` in dataset.json: a list of {name, kind, question, description}. A ``current_*``
    criterion on a question without a current memory (``no_current``) could never pass: refused."""
    if items is None:
        return None
    if not isinstance(items, list) or not items:
        problems.append("dataset.json: criteria: expected a non-empty list")
        return None
    out = []
    for i, item in enumerate(items, start=1):
        where = f"dataset.json: criteria[{i}]"
        if not isinstance(item, dict) or not item.get("name") or not item.get("kind"):
            problems.append(f"{where}: expected an object with name and kind")
            continue
        q = item.get("question")
        if q is not None and not isinstance(q, str):
            problems.append(f"{where}: question: expected a question id, got {q!r}")
            continue
        if q is not None and q not in question_ids:
            problems.append(f"{where}: question: unknown question id {q!r}")
            continue
        if q in no_current and str(item["kind"]).startswith("current_"):
            problems.append(f"{where}: question: {q!r} has no current memory, so {item['kind']} cannot hold")
            continue
        try:
            out.append(Criterion(item["name"], item["kind"], q, item.get("description", "")))
        except ValueError as e:
            problems.append(f"{where}: {e}")
    names = [c.name for c in out]
    for name in sorted({n for n in names if names.count(n) > 1}):
        first = [i for i, n in enumerate(names, start=1) if n == name]
        problems.append(
            f"dataset.json: criteria: name {name!r} is declared more than once "
            f"(criteria {', '.join(map(str, first))}): each names a column of the sweep"
        )
    return tuple(out)


def declared_tables(items: Any, question_ids: dict[str, int], problems: list[str]) -> DeclaredTables | None:
    """``tables`` in dataset.json: ``{"candidates": [[bonus, tau_days], ...], "reruns": [qid, ...]}``."""
    if items is None:
        return None
    where = "dataset.json: tables"
    if not isinstance(items, dict):
        problems.append(f"{where}: expected an object with candidates and/or reruns")
        return None
    for key in sorted(set(items) - {"candidates", "reruns"}):
        problems.append(f"{where}: {key}: unknown field (allowed: candidates, reruns)")
    pairs = items.get("candidates", [])
    ok_pairs = isinstance(pairs, list) and all(
        isinstance(p, list)
        and len(p) == 2
        and all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in p)
        and p[0] >= 0
        and p[1] > 0
        for p in pairs
    )
    if not ok_pairs:
        problems.append(f"{where}: candidates: expected a list of [bonus >= 0, tau_days > 0], got {pairs!r}")
    reruns = items.get("reruns", [])
    if not isinstance(reruns, list) or not all(isinstance(q, str) for q in reruns):
        problems.append(f"{where}: reruns: expected a list of question ids, got {reruns!r}")
        return None
    for q in reruns:
        if q not in question_ids:
            problems.append(f"{where}: reruns: unknown question id {q!r}")
    if not ok_pairs or any(q not in question_ids for q in reruns):
        return None
    return DeclaredTables(tuple((float(b), float(t)) for b, t in pairs), tuple(reruns))


VECTOR_FIELDS = ("dim", "file", "model", "order")


def declared_vectors(items: Any, root: Path, n_memories: int, problems: list[str]) -> dict[str, Any] | None:
    """``vectors`` in dataset.json (an imported dataset keeps its memories' vectors):
    ``{"file": "vectors.npy", "dim": D, "model": NAME | null, "order": "memories.jsonl"}``, and the
    file itself: a float array of one finite row of D numbers per memory, in file order."""
    if items is None:
        return None
    where = "dataset.json: vectors"
    if not isinstance(items, dict):
        problems.append(f"{where}: expected an object with file, dim and model, got {items!r}")
        return None
    before = len(problems)
    for key in sorted(set(items) - set(VECTOR_FIELDS)):
        problems.append(f"{where}: {key}: unknown field (allowed: {', '.join(VECTOR_FIELDS)})")
    name, dim, model = items.get("file", "vectors.npy"), items.get("dim"), items.get("model")
    if not isinstance(name, str) or not name or Path(name).is_absolute() or ".." in Path(name).parts:
        problems.append(f"{where}: file: expected a file name inside the dataset folder, got {name!r}")
    elif (root / name).is_symlink() and not within(root, name):  # a link out of the folder
        problems.append(f"{where}: file: {name} is a link to {os.path.realpath(root / name)}, outside {root}")
    elif file_kind(root / name) is not None:  # a FIFO would block the load until someone writes to it
        problems.append(
            f"{name}: is {file_kind(root / name)}, not a regular file: memlab reads only regular files"
        )
    elif not (root / name).is_file():
        problems.append(f"{where}: file: {name} is missing in {root}")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        problems.append(f"{where}: dim: expected an integer >= 1, got {dim!r}")
    if model is not None and not isinstance(model, str):
        problems.append(f"{where}: model: expected a model name or null, got {model!r}")
    if items.get("order", "memories.jsonl") != "memories.jsonl":
        problems.append(f"{where}: order: expected 'memories.jsonl', got {items.get('order')!r}")
    if len(problems) > before:
        return None
    try:
        vecs = np.load(root / name, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        problems.append(f"{name}: not a NumPy .npy array ({e})")
        return None
    if vecs.ndim != 2 or vecs.shape != (n_memories, dim) or vecs.dtype.kind != "f":
        problems.append(
            f"{name}: expected {n_memories} rows (one per memory) of {dim} floats, "
            f"got shape {vecs.shape} of {vecs.dtype}"
        )
    elif not np.isfinite(vecs).all():
        row = int(np.flatnonzero(~np.isfinite(vecs).all(axis=1))[0])
        problems.append(
            f"{name}: row {row + 1} (memory {row + 1} of memories.jsonl): contains NaN or infinity"
        )
    else:
        with np.errstate(over="ignore"):
            norms = np.linalg.norm(np.asarray(vecs, dtype=np.float64), axis=1)
        odd = np.flatnonzero(~((norms >= NORM_RANGE[0]) & (norms <= NORM_RANGE[1])))
        if odd.size:  # a zero row has no cosine; a huge one overflows float32
            row = int(odd[0])
            why = raw_vector_problem(vecs[row])
            problems.append(f"{name}: row {row + 1} (memory {row + 1} of memories.jsonl): {why}")
    return None if len(problems) > before else dict(items)


QDRANT_TEXT_FIELDS = (
    "collection",
    "date_field",
    "text_field",
    "vector_name",
    "id_field",
    "user_field",
    "preset",
)


def declared_qdrant(block: Any, problems: list[str]) -> dict[str, Any] | None:
    """``qdrant`` in dataset.json (the collection an imported dataset came from): an object whose
    names are text (or null) and whose ``date_format`` is one memlab queries; checked here so that
    ``memlab validate`` says what ``memlab spec`` would otherwise trip on."""
    if block is None:
        return None
    where = "dataset.json: qdrant"
    if not isinstance(block, dict):
        problems.append(
            f"{where}: expected an object (collection, date_field, date_format, ...), got {block!r}"
        )
        return None
    before = len(problems)
    for key in QDRANT_TEXT_FIELDS:
        value = block.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            problems.append(f"{where}: {key}: expected a name (text) or null, got {value!r}")
    fmt = block.get("date_format", "iso")
    if fmt not in DATE_FORMATS:  # a stored one, never "auto"
        problems.append(f"{where}: date_format: expected one of {', '.join(DATE_FORMATS)}, got {fmt!r}")
    return None if len(problems) > before else dict(block)


def meta_languages(meta: dict[str, Any]) -> tuple[Any, tuple]:
    """dataset.json's primary language (``language``, English unless it says) and every language
    its texts are in (``languages``, else the primary alone); checked by ``load_dataset``."""
    primary = meta.get("language", "en")
    languages = meta.get("languages", [primary])
    return primary, tuple(languages) if isinstance(languages, list) else ()


def declared_languages(name_or_path: str | Path) -> tuple[str, ...]:
    """The languages a dataset folder's dataset.json declares, primary first, read without
    loading the rest; () when it cannot be read (``load_dataset`` then says why)."""
    try:
        root = dataset_dir(name_or_path)
        meta = parse_json(decode((root / "dataset.json").read_bytes(), "dataset.json"), "dataset.json")
    except (OSError, InputError):
        return ()
    if not isinstance(meta, dict):
        return ()
    primary, languages = meta_languages(meta)
    ordered = dict.fromkeys(x for x in (primary, *languages) if isinstance(x, str) and x)
    return tuple(x for x in ordered if x in languages) or tuple(ordered)
