"""One tuned spec as one small YAML file: what ``memlab sweep --save`` writes and ``--spec`` reads.

The file holds the whole spec (candidates, inject, threshold, bonus, tau_days, decay, combine),
the identity of the model that made the scores it was tuned on (``ModelIdentity``: name,
model_id, identity), the score source, the dataset (its name, how ``--dataset`` names it, a
SHA-256 of each file its measurements depend on: ``HASHED``), the language(s), the selection rule and what
it measured at the choice, and the date. Commands, notebooks (``spec_file``) and the panel read it
through ``load_tuned``; values given beside it override the file's field by field
(``merge_spec``), and ``check_tuned`` holds it to the problem it is applied to: another model is
refused with one line naming both, another dataset is a warning naming both (tuning on one
dataset and evaluating on another is legitimate).
"""

from __future__ import annotations

import re
import stat
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlab.core.errors import InputError, MemlabWarning
from memlab.core.files import atomic_write_text, file_sha256
from memlab.core.numbers import shown
from memlab.core.rerank_stage import RerankStage
from memlab.core.shards import MAX_SHARDS
from memlab.core.spec import NAME_FIELDS, SPEC_FIELDS, STAGE_FIELDS, RetrievalSpec
from memlab.core.textfiles import read_text
from memlab.datasets.locations import packaged_datasets
from memlab.datasets.schema import Dataset

if TYPE_CHECKING:
    from memlab.embedding.embedder import ModelIdentity
    from memlab.scores.problem import RetrievalProblem

FORMAT = 1  # the file's format version (key ``memlab_tuned_spec``)
# what no value of a tuned spec holds, and a terminal would act on when a message prints it back
# (an escape sequence, a carriage return, a line separator)
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
MAX_BYTES = 1 << 16  # a tuned-spec file is about 1.5 KB; YAML is parsed at about 100 KB a second
TOP_KEYS = (
    "memlab_tuned_spec",
    "spec",
    "model",
    "source",
    "dataset",
    "languages",
    "selection",
    "tuned_at",
    "collection",
    "rerank",
)
# the rerank stage's record (``memlab.core.rerank_stage.RerankStage``) and the note beside it
RERANK_KEYS = ("reranker", "model", "depth", "blend", "threshold", "where")
RERANK_WHERE = (
    "in the application, after the exported Qdrant query: the query returns `depth` candidates "
    "(no score threshold), the application scores each by the reranker and keeps "
    "(1 - blend) * final + blend * rerank at or above `threshold`, then injects the spec's `inject`"
)
# every file of a dataset folder that changes what is measured: the records, what dataset.json
# declares (criteria, tables, the stored vectors' file), the published scores and their model;
# and the stored vectors' own file (named in dataset.json). A file not there is recorded as null,
# so one added later is a change too. Files of memlab before this wrote only the first two: the
# check compares the files a file records (``changed_files``), so theirs still verify.
HASHED = (
    "memories.jsonl",
    "questions.jsonl",
    "dataset.json",
    "published_scores.jsonl",
    "published.json",
    "published_table.jsonl",
)
HEADER = (
    "# A tuned retrieval spec, written by `memlab sweep --save`. Read by --spec FILE (every command\n"
    "# that takes a spec: evaluate, spec, explain, answer...), the notebooks' spec_file parameter and\n"
    "# the tuning panel.\n"
)


def dataset_reference(dataset: Dataset) -> str:
    """How a batch file or ``--dataset`` names it: a packaged dataset by name, else its folder,
    absolute (a tuned-spec file is read from wherever the user runs the next command)."""
    packaged = dataset.path is not None and dataset.path.parent.name == "packaged"
    if dataset.path is None or (packaged and dataset.path.name in packaged_datasets()):
        return dataset.name
    return str(Path(dataset.path).resolve())


def hashed_files(dataset: Dataset) -> tuple[str, ...]:
    """The files of the dataset's folder its measurements depend on (``HASHED``, then its stored
    vectors' file)."""
    vectors = (dataset.vectors or {}).get("file", "vectors.npy") if dataset.vectors else None
    return (*HASHED, *([vectors] if vectors and vectors not in HASHED else []))


def file_hash(folder: Path, name: str) -> str | None:
    """SHA-256 of ``folder/name`` (None: no such file), read in blocks (a stored vectors file
    can be large)."""
    path = folder / name
    if not path.is_file():
        return None
    return file_sha256(path)


def dataset_hashes(dataset: Dataset) -> dict[str, str | None] | None:
    """SHA-256 of each file the dataset's measurements depend on (``hashed_files``; null: not
    there), or None: not read from a folder, or without its records there."""
    if dataset.path is None:
        return None
    folder = Path(dataset.path)
    out = {name: file_hash(folder, name) for name in hashed_files(dataset)}
    return None if out["memories.jsonl"] is None or out["questions.jsonl"] is None else out


def changed_files(recorded: Any, dataset: Dataset) -> list[str]:
    """The files the tuned file recorded a SHA-256 for (or their absence) that differ in the
    dataset now; none when either side has no hashes. A file recorded the old way (memories.jsonl
    and questions.jsonl only) is compared on those two."""
    if not isinstance(recorded, dict) or dataset.path is None:
        return []
    folder = Path(dataset.path)
    return [name for name, digest in recorded.items() if file_hash(folder, name) != digest]


def within_folder(name: Any) -> bool:
    """A plain file name (a tuned file is read from anywhere: its names must not reach out)."""
    return isinstance(name, str) and bool(name) and Path(name).name == name and name not in (".", "..")


@dataclass(frozen=True)
class TunedSpec:
    """What a tuned-spec file holds."""

    spec: RetrievalSpec
    model: dict[str, Any] | None  # ModelIdentity as name, model_id, identity (None: not recorded)
    source: str
    dataset: dict[str, Any]  # name, reference (what --dataset accepts), sha256 per file (or None)
    languages: tuple[str, ...]
    selection: dict[str, Any] = field(default_factory=dict)  # rule, asked, measured values
    tuned_at: str = ""
    path: Path | None = None  # where it was read from
    # the collection it was tuned for: tenant filter (key=value texts), shards, shard key
    collection: dict[str, Any] = field(default_factory=dict)
    # a rerank stage after the exported query (``memlab rerank --save``); None: none
    rerank: RerankStage | None = None

    @property
    def label(self) -> str:
        return str(self.path) if self.path is not None else "the tuned spec"

    def spec_fields(self) -> dict[str, Any]:
        return self.spec.as_row()

    def as_dict(self) -> dict[str, Any]:
        return {
            "memlab_tuned_spec": FORMAT,
            "spec": self.spec_fields(),
            "model": self.model,
            "source": self.source,
            "dataset": self.dataset,
            "languages": list(self.languages),
            "selection": self.selection,
            "tuned_at": self.tuned_at,
            **({"collection": self.collection} if self.collection else {}),
            **({"rerank": {**self.rerank.as_dict(), "where": RERANK_WHERE}} if self.rerank else {}),
        }


def identity_dict(model: ModelIdentity | None) -> dict[str, Any] | None:
    if model is None:
        return None
    return {"name": model.name, "model_id": model.model_id, "identity": dict(model.identity)}


def tuned_spec(
    problem: RetrievalProblem,
    spec: RetrievalSpec,
    *,
    languages: Sequence[str] | None = None,
    selection: Mapping[str, Any] | None = None,
    now: datetime | None = None,
    rerank: RerankStage | None = None,
) -> TunedSpec:
    """The record of ``spec`` tuned on ``problem`` (its dataset, scores and model), with the
    rerank stage tuned after it (``rerank``; None: none)."""
    dataset = problem.dataset
    return TunedSpec(
        spec,
        identity_dict(problem.model),
        problem.source,
        {"name": dataset.name, "reference": dataset_reference(dataset), "sha256": dataset_hashes(dataset)},
        tuple(languages or (problem.lang,)),
        dict(selection or {}),
        (now or datetime.now(UTC)).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        collection=collection_record(problem.scope),
        rerank=rerank,
    )


def collection_record(scope) -> dict[str, Any]:
    """The scope a spec was tuned under, as the command line gives it (empty: one shard, no
    filter): the filter as key=value texts, the shard count, the shard key."""
    if scope.trivial:
        return {}
    return {
        "filters": [f"{k}={v}" for k, v in scope.filters],
        "shards": scope.shards,
        "shard_key": scope.shard_key,
    }


def collection_flags(scope: Mapping[str, Any]) -> str:
    """The collection options of a tuned-spec file's record, as the command line writes them."""
    flags = [f"--filter {f}" for f in scope.get("filters") or ()]
    if scope.get("shards"):
        flags.append(f"--shards {scope['shards']}")
    if scope.get("shard_key"):
        flags.append(f"--shard-key {scope['shard_key']}")
    return " ".join(flags)


def refuse_collection(tuned: TunedSpec, reader: str) -> None:
    """A reader that applies no tenant filter nor shards (a notebook's ``spec_file``, the panel)
    refuses a file tuned under them in one line, rather than measure every tenant's memories for
    one tenant's spec."""
    scope = {k: v for k, v in tuned.collection.items() if v not in (None, 1, [])}
    if scope:
        raise InputError(
            f"{tuned.label}: tuned for the collection as {collection_flags(scope)}, and {reader} takes "
            f"no tenant filter or shards: it would measure every memory of the dataset; use memlab "
            f"evaluate, robustness or scale --spec {tuned.label} (they apply it), or tune again without it"
        )


def save_tuned(path: str | Path, tuned: TunedSpec) -> Path:
    """Write the file atomically (YAML; floats written so they read back exactly)."""
    import yaml

    text = HEADER + yaml.safe_dump(tuned.as_dict(), sort_keys=False, allow_unicode=True)
    return atomic_write_text(path, text)


INT_TAG = "tag:yaml.org,2002:int"


def _max_digits() -> int:
    return sys.get_int_max_str_digits() or 10**9  # 0: no limit set


def _digits(value: str) -> int:
    """The digits of a YAML integer: the one past Python's limit is refused by the YAML library
    deep inside the document, with no word of which field held it, so it is found and named before."""
    return sum(ch.isdigit() for ch in value)


def _lines(root, path: Path) -> dict[str, int]:
    """Each key's line (1-based) in a composed YAML document, by dotted path; a node reached twice
    (a YAML alias: ``*name``) is refused, since expanding one alias of an alias of ... is
    exponential in the file's size (a 1 KB file of nested aliases held every command for ever)."""
    import yaml

    out: dict[str, int] = {}
    seen: set[int] = set()
    todo = [(root, "")]
    while todo:  # by hand, not by recursion: a deeply nested file is no RecursionError here
        node, prefix = todo.pop()
        if id(node) in seen:
            raise InputError(
                f"{path}:{node.start_mark.line + 1}: uses a YAML alias (*name): a tuned spec holds its "
                "values written out (memlab sweep --save writes none)"
            )
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[str, int] = {}
            for k, v in node.value:
                key = f"{prefix}{k.value}" if isinstance(k, yaml.ScalarNode) else f"{prefix}?"
                line = k.start_mark.line + 1
                if isinstance(k, yaml.ScalarNode):
                    if k.value in first:  # YAML keeps the last silently: which one was meant?
                        raise InputError(
                            f"{path}:{line}: {key}: given twice (first at line {first[k.value]})"
                        )
                    first[k.value] = line
                out.setdefault(key, line)
                todo += [(k, prefix), (v, key + ".")]
        elif isinstance(node, yaml.SequenceNode):
            todo += [(v, prefix) for v in node.value]
        elif node.tag == INT_TAG and _digits(node.value) > _max_digits():  # named here: see _digits
            raise InputError(
                f"{path}:{node.start_mark.line + 1}: {prefix.rstrip('.') or 'a key'}: an integer of "
                f"{_digits(node.value):,} digits: not a number memlab reads (Python converts at most "
                f"{_max_digits():,})"
            )
        elif isinstance(node.value, str) and CONTROL.search(node.value):  # printed back in messages
            bad = CONTROL.search(node.value).group()
            raise InputError(
                f"{path}:{node.start_mark.line + 1}: {prefix.rstrip('.') or 'a key'}: holds the control "
                f"character U+{ord(bad):04X}: a tuned spec's values are one line of text"
            )
    return out


def _construct(root, path: Path) -> Any:
    """The plain data of a composed document, typed as ``yaml.safe_load`` types it; each way that
    can fail as one line."""
    import yaml

    from memlab.core.textfiles import json_number_problem

    try:
        return yaml.SafeLoader("").construct_document(root)
    except yaml.YAMLError as e:  # an unhashable key, a bad timestamp...
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise InputError(f"{path}{line}: invalid YAML: {getattr(e, 'problem', None) or e}") from None
    except RecursionError:
        raise InputError(f"{path}: nested deeper than memlab reads (about 1000 levels of [ or {{)") from None
    except ValueError as e:  # an integer of more than 4300 digits; a date as 2026-13-45
        problem = json_number_problem(e) if "digits" in str(e) else f"invalid YAML: {e}"
        raise InputError(f"{path}: {problem}") from None


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def load_tuned(path: str | Path) -> TunedSpec:
    """Read a tuned-spec file; a problem is one line ``file:line: field: problem``. The text is
    read by memlab's readers (``memlab.core.textfiles``: UTF-8 only; ``memlab.datasets.yaml_text``:
    invalid or too deep YAML), aliases are refused, and every field is checked for its type
    before anything reads it."""
    from memlab.datasets.yaml_text import parse_yaml

    path = Path(path)
    try:
        st = path.stat()
        size = st.st_size
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):  # /dev/zero, a pipe: no end
            raise InputError(
                f"{path}: not a regular file: not a tuned spec (write one with memlab sweep --save)"
            )
        if size > MAX_BYTES:  # read in bounded time
            raise InputError(
                f"{path}: {size:,} bytes: not a tuned spec (memlab sweep --save writes about 1 KB; "
                f"memlab reads at most {MAX_BYTES:,})"
            )
        text = read_text(path)
    except OSError as e:
        raise InputError(f"{path}: cannot read the tuned spec: {e.strerror or e}") from None
    node = parse_yaml(text, str(path), compose=True)
    lines = {} if node is None else _lines(node, path)
    data = None if node is None else _construct(node, path)

    def fail(key: str, problem: str) -> InputError:
        where = f"{path}:{lines[key]}" if key in lines else str(path)
        return InputError(f"{where}: {key}: {problem}")

    if not isinstance(data, dict) or "memlab_tuned_spec" not in data:
        raise InputError(
            f"{path}: not a tuned spec (no memlab_tuned_spec key; write one with memlab sweep --save)"
        )
    version = data["memlab_tuned_spec"]
    if isinstance(version, bool) or version != FORMAT:
        raise fail("memlab_tuned_spec", f"format {version!r:.40}, this memlab reads {FORMAT}")
    for key in sorted(set(data) - set(TOP_KEYS), key=str):
        raise fail(str(key), f"unknown field (allowed: {', '.join(TOP_KEYS)})")
    spec = data.get("spec")
    if not isinstance(spec, dict):
        raise fail("spec", f"expected a mapping of {', '.join(SPEC_FIELDS)}")
    for key in SPEC_FIELDS:
        if key not in spec and key not in STAGE_FIELDS:  # an off stage's fields may be left out
            raise fail("spec", f"{key} missing")
    for key in sorted(set(spec) - set(SPEC_FIELDS), key=str):
        raise fail(f"spec.{key}", f"unknown field (allowed: {', '.join(SPEC_FIELDS)})")
    values = {}
    for key in (k for k in SPEC_FIELDS if k in spec):
        value = spec[key]
        if key in NAME_FIELDS:
            if not isinstance(value, str):
                raise fail(f"spec.{key}", f"expected a name, got {value!r:.60}")
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise fail(f"spec.{key}", f"expected a number, got {value!r:.60}")
        values[key] = value
    try:
        checked = RetrievalSpec(**values)
    except InputError as e:  # "<field>: expected ..." (memlab.core.numbers) or an unknown name
        name = next((k for k in SPEC_FIELDS if str(e).startswith(f"{k}:") or f"unknown {k}" in str(e)), None)
        problem = str(e).split(": ", 1)[1] if name and str(e).startswith(f"{name}:") else str(e)
        raise fail(f"spec.{name}" if name else "spec", problem) from None
    model = data.get("model")
    if model is not None and not (
        isinstance(model, dict)
        and isinstance(model.get("identity"), dict)
        and all(isinstance(model.get(k, ""), str) for k in ("name", "model_id"))
    ):
        raise fail("model", "expected name, model_id (texts) and identity (a mapping)")
    dataset = data.get("dataset") or {}
    if not isinstance(dataset, dict) or not _text(dataset.get("name")):
        raise fail("dataset", "expected a mapping with the dataset's name")
    reference = dataset.get("reference")
    if reference is not None and not _text(reference):
        raise fail("dataset.reference", f"expected a dataset name or folder, got {reference!r:.60}")
    hashes = dataset.get("sha256")
    if hashes is not None and not (
        isinstance(hashes, dict)
        and all(within_folder(k) and (v is None or isinstance(v, str)) for k, v in hashes.items())
    ):
        raise fail(
            "dataset.sha256", "expected file names in the dataset folder, each with its SHA-256 (or null)"
        )
    languages = data.get("languages") or []
    if not isinstance(languages, list) or not languages or not all(_text(x) for x in languages):
        raise fail("languages", f"expected a list of languages, got {languages!r:.60}")
    source = data.get("source")
    if not _text(source):
        raise fail("source", f"expected a score source, got {source!r:.60}")
    selection = data.get("selection") or {}
    if not isinstance(selection, dict):
        raise fail("selection", f"expected a mapping (rule, asked, what it measured), got {selection!r:.60}")
    for key, kind, what in (
        ("rule", str, "a rule's name"),
        ("asked", str, "a rule's name"),
        ("feasible", bool, "true or false"),
        ("conflicts", str, "the conflicting criteria as text"),
    ):
        if key in selection and not isinstance(selection[key], kind):
            raise fail(f"selection.{key}", f"expected {what}, got {selection[key]!r:.60}")
    count = selection.get("feasible_configurations", 0)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise fail("selection.feasible_configurations", f"expected a count, got {count!r:.60}")
    tuned_at = data.get("tuned_at") or ""
    if not isinstance(tuned_at, str | date):  # YAML reads an unquoted date as one
        raise fail("tuned_at", f"expected a date, got {tuned_at!r:.60}")
    collection = data.get("collection") or {}
    if not isinstance(collection, dict) or set(collection) - {"filters", "shards", "shard_key"}:
        raise fail("collection", "expected filters (key=value texts), shards and shard_key")
    filters = collection.get("filters") or []
    if not isinstance(filters, list) or not all(isinstance(f, str) and "=" in f for f in filters):
        raise fail("collection", f"filters: expected key=value texts, got {filters!r:.60}")
    shards = collection.get("shards", 1)
    if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= MAX_SHARDS:
        raise fail("collection", f"shards: expected a whole number in [1, {MAX_SHARDS}], got {shown(shards)}")
    if collection.get("shard_key") is not None and not isinstance(collection["shard_key"], str):
        raise fail(
            "collection", f"shard_key: expected a payload field name, got {collection['shard_key']!r:.60}"
        )
    return TunedSpec(
        checked,
        model,
        source,
        dataset,
        tuple(languages),
        dict(selection),
        str(tuned_at),
        path,
        dict(collection),
        _rerank_stage(data.get("rerank"), fail),
    )


def _rerank_stage(record: Any, fail) -> RerankStage | None:
    """The ``rerank`` record of a tuned file as a stage (absent: None), each field checked."""
    if record is None:
        return None
    if not isinstance(record, dict):
        raise fail("rerank", f"expected a mapping of {', '.join(RERANK_KEYS)}")
    for key in sorted(set(record) - set(RERANK_KEYS), key=str):
        raise fail(f"rerank.{key}", f"unknown field (allowed: {', '.join(RERANK_KEYS)})")
    for key in ("reranker", "depth", "blend", "threshold"):
        if key not in record:
            raise fail("rerank", f"{key} missing")
    for key in ("depth", "blend", "threshold"):
        if isinstance(record[key], bool) or not isinstance(record[key], int | float):
            raise fail(f"rerank.{key}", f"expected a number, got {record[key]!r:.60}")
    for key in ("reranker", "model"):
        if not isinstance(record.get(key, ""), str):
            raise fail(f"rerank.{key}", f"expected a name, got {record[key]!r:.60}")
    fields = {k: record[k] for k in ("reranker", "depth", "blend", "threshold")}
    try:
        return RerankStage(**fields, model=record.get("model", ""))
    except InputError as e:  # "<field>: expected ..."
        name, _, problem = str(e).partition(": ")
        raise fail(f"rerank.{name}" if name in RERANK_KEYS else "rerank", problem or str(e)) from None


def merge_spec(tuned: TunedSpec, given: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The spec fields: the file's, each one ``given`` (not None) overriding it; and one note per
    override (``threshold 0.9 (the file's 0.845)``)."""
    fields = {k: getattr(tuned.spec, k) for k in SPEC_FIELDS}
    notes = []
    for key in SPEC_FIELDS:
        value = given.get(key)
        if value is not None and value != fields[key]:
            notes.append(f"{key} {value} (the file's {fields[key]})")
            fields[key] = value
    return fields, notes


def off_default(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The spec fields given and not at the spec's default (``RetrievalSpec()``, the declared
    default): what a notebook's parameters override a tuned spec with, since a notebook cannot
    tell a value left at its default from one given equal to it."""
    default = RetrievalSpec()
    return {k: v for k, v in fields.items() if v is not None and v != getattr(default, k, None)}


def check_tuned(tuned: TunedSpec, problem: RetrievalProblem) -> None:
    """Refuse a tuned spec made with another model than the problem's scores (one line naming
    both); warn when it was tuned on another dataset (naming both)."""
    from memlab.embedding.embedder import ModelIdentity

    made = tuned.model
    now = problem.model
    if made is not None and now is not None:
        then = ModelIdentity(made.get("name", ""), made.get("model_id", ""), made.get("identity", {}))
        if not then.same_as(now):
            how = f"--source {tuned.source}" + (f" --model {then.name}" if tuned.source == "embedded" else "")
            raise InputError(
                f"{tuned.label} was tuned on {tuned.source} scores from {then.model_id}, these are "
                f"{problem.source} scores from {now.model_id}: its threshold and bonus are on another "
                f"model's scale (score with {how}, or tune again with memlab sweep --save)"
            )
    dataset = problem.dataset
    changed = changed_files(tuned.dataset.get("sha256"), dataset)
    same_name = tuned.dataset.get("name") == dataset.name
    if not same_name or changed:
        change = "" if not same_name else f" (its files have changed since: {', '.join(changed)})"
        warnings.warn(
            f"{tuned.label} was tuned on dataset {tuned.dataset.get('name')!r}{change}, applied here to "
            f"{dataset.name!r}",
            MemlabWarning,
            stacklevel=2,
        )


def tuned_problem(
    spec_file: str | Path | None,
    dataset: Dataset | str,
    options=None,
    **fields: Any,
) -> RetrievalProblem:
    """``build_problem`` with a tuned-spec file (none: ``build_problem`` itself), as a notebook's
    ``spec_file`` parameter reads it: a spec field None or at the spec's default
    (``RetrievalSpec()``, the declared default) takes the file's value, one that differs overrides
    it (stderr says which); the file's model and dataset are checked (``check_tuned``)."""
    import sys

    from memlab.scores.problem import build_problem

    if not spec_file:
        return build_problem(dataset, options, **fields)
    tuned = load_tuned(spec_file)
    refuse_collection(tuned, "a notebook's spec_file")
    merged, notes = merge_spec(tuned, off_default(fields))
    print(
        f"spec: from {tuned.label}"
        + (f"; given beside it, overriding the file: {', '.join(notes)}" if notes else ""),
        file=sys.stderr,
    )
    problem = build_problem(dataset, options, **merged)
    check_tuned(tuned, problem)
    return problem


def fallback_reason(selection: Mapping[str, Any]) -> str | None:
    """Why a chosen spec fails its criteria, from what its selection recorded (a tuned file's
    ``selection``; ``choice_selection`` for a sweep's choice): None when it does not (the rule
    chose a feasible configuration)."""
    if selection.get("feasible") is not False:
        return None
    rule = selection.get("rule") or "max-utility"
    if selection.get("feasible_configurations", 0):
        return f"{rule} chose it though it is not feasible"
    conflicts = f" ({selection['conflicts']})" if selection.get("conflicts") else ""
    return f"nothing in the grid it was tuned on is feasible{conflicts}, so {rule} chose it"


def choice_selection(choice) -> dict[str, Any]:
    """What a sweep's ``Choice`` (``memlab.core.selection``) says about feasibility, as a tuned
    file's ``selection`` records it: the rule that chose, whether the row is feasible, how many
    configurations were, and the criteria that conflict when none was."""
    conflicts = choice.conflicts
    row = choice.row
    return {
        "rule": choice.rule,
        "feasible": bool(row["feasible"].iloc[0]) if not row.empty else False,
        "feasible_configurations": int(choice.feasible),
        **({"conflicts": conflicts.text()} if conflicts is not None and not conflicts.satisfiable else {}),
    }


def spec_shortfall(
    problem: RetrievalProblem, criteria=None, what: str = "the spec", fallback: str | None = None
) -> str | None:
    """One line: which criteria the problem's spec fails on its questions and what that does to
    them (a stale memory injected, the current one missed, an injection on a no-hit question,
    each as N of M questions), after ``fallback`` (why it is a fallback: ``fallback_reason``);
    None when every criterion holds. The one message of a spec that fails: the sweep's fallback
    saved, exported (``memlab spec``), measured (``memlab robustness``) or sent (``memlab
    answer``'s tuned condition) all say it alike."""
    from memlab.tuning.evaluate import evaluate

    ev = evaluate(problem, criteria=criteria)
    failing = ev.failing()
    if not failing:
        return None
    questions = problem.dataset.questions
    results = ev.results
    injected = [{c.memory_id for c in r.injected} for r in results]
    effects = []
    stale = [i for i, q in enumerate(questions) if q.stale]
    if n := sum(bool(results[i].stale_injected) for i in stale):
        effects.append(f"injects a stale memory on {n} of the {len(stale)} questions that have one")
    current = [i for i, q in enumerate(questions) if q.current]
    if n := sum(questions[i].current not in injected[i] for i in current):
        effects.append(f"misses the current memory on {n} of the {len(current)} questions that have one")
    nohit = [i for i, q in enumerate(questions) if q.kind == "nohit"]
    if n := sum(bool(injected[i]) for i in nohit):
        effects.append(f"injects memories on {n} of the {len(nohit)} no-hit questions")
    head = f"{what} is a fallback: {fallback}; it fails" if fallback else f"{what} fails"
    return f"{head} {', '.join(failing)} on {problem.dataset.name}" + (
        f": it {', '.join(effects)}" if effects else ""
    )
