"""A query log: the queries an application really sent, one JSON object per line, read so that
every mistake is one located problem (``log.jsonl:LINE: FIELD: problem``).

Each line holds the query's ``text`` or its ``vector`` (or both: the vector is used, the text
shown), its ``time`` (an ISO 8601 date or date-time, or a number of epoch seconds; epoch
milliseconds with ``time_format="epoch-ms"``: the instants ``memlab import-qdrant`` reads), and
optionally its ``id`` (default ``line N``), the memory ids production ``injected`` for it, and an
``extra`` object of the application's own fields (kept, not read). ``memlab explain`` replays it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from memlab.core.errors import InputError, MissingFileError
from memlab.core.files import file_kind
from memlab.core.vectors import raw_vector_problem
from memlab.datasets.records import (
    READ_DATE_FORMATS,
    JsonRecord,
    jsonl_format_problem,
    parse_instant,
    read_jsonl,
)

LOG_FIELDS = {"id", "text", "vector", "time", "injected", "extra"}


@dataclass(frozen=True, eq=False)
class LoggedQuery:
    """One logged query: ``vector`` is unit length (float32) when the log gave one; ``injected``
    is None when the log does not say what production injected."""

    id: str
    line: int
    time: datetime  # timezone-aware (UTC)
    text: str | None
    vector: np.ndarray | None = field(repr=False)
    injected: tuple[str, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class QueryLog:
    path: Path
    queries: tuple[LoggedQuery, ...]

    @property
    def dim(self) -> int | None:
        """The logged vectors' dimension (None: the log holds texts only)."""
        return next((len(q.vector) for q in self.queries if q.vector is not None), None)

    def __len__(self) -> int:
        return len(self.queries)


NUMBER_TYPES = {int, float}


def _vector(rec: JsonRecord, value: Any, dim: list[int]) -> np.ndarray | None:
    # JSON gives int, float or bool: the types alone tell (a set of them, not a call per number)
    if not isinstance(value, list) or not value or not set(map(type, value)) <= NUMBER_TYPES:
        rec.problem("vector", "expected a list of numbers")
        return None
    vec = np.asarray(value, dtype=np.float64)
    problem = raw_vector_problem(vec)
    if problem is not None:
        rec.problem("vector", problem)
        return None
    if dim and len(value) != dim[0]:
        rec.problem("vector", f"{len(value)} dimensions, where line {dim[1]}'s vector has {dim[0]}")
        return None
    if not dim:
        dim += [len(value), int(rec.where.rsplit(":", 1)[1])]
    return (vec / np.linalg.norm(vec)).astype(np.float32)


def _injected(rec: JsonRecord, value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    ok = isinstance(value, list) and all(
        (isinstance(v, str) and v.strip()) or (isinstance(v, int) and not isinstance(v, bool)) for v in value
    )
    if not ok:
        rec.problem("injected", f"expected a list of memory ids (strings or integers), got {value!r}")
        return None
    ids = tuple(str(v) for v in value)
    if len(set(ids)) != len(ids):
        twice = next(v for v in ids if ids.count(v) > 1)
        rec.problem("injected", f"memory {twice!r} is listed twice")
        return None
    return ids


def load_log(path: str | Path, time_format: str = "auto") -> QueryLog:
    """Read a query log (the module's docstring); every problem is found, the first is raised as
    one line (``InputError``) saying how many more there are."""
    path = Path(path)
    if time_format not in READ_DATE_FORMATS:
        raise InputError(f"time format {time_format!r}: expected one of {', '.join(READ_DATE_FORMATS)}")
    kind = file_kind(path)
    if kind is not None:  # a FIFO: never opened (it would block until someone writes to it)
        raise InputError(f"{path}: is {kind}, not a regular file: memlab reads only regular files")
    if not path.is_file():
        raise MissingFileError(f"{path}: no such log file (JSON lines, one query per line)")
    problem = jsonl_format_problem(path)
    if problem is not None:
        raise InputError(problem)
    problems: list[str] = []
    queries: list[LoggedQuery] = []
    seen: dict[str, int] = {}
    dim: list[int] = []
    for lineno, obj in read_jsonl(path, problems):
        rec = JsonRecord(path.name, lineno, obj, problems)
        before = len(problems)
        rec.unknown_fields(LOG_FIELDS)
        qid = obj.get("id", f"line {lineno}")
        if isinstance(qid, bool) or not isinstance(qid, str | int) or not str(qid).strip():
            rec.problem("id", f"expected a string or an integer, got {qid!r}")
        elif str(qid) in seen:
            rec.problem("id", f"duplicate id {str(qid)!r} (first on line {seen[str(qid)]})")
        else:
            seen[str(qid)] = lineno
        text = rec.text("text", required=False)
        if text is not None and not text.strip():
            rec.problem("text", "empty")
        vector = _vector(rec, obj["vector"], dim) if obj.get("vector") is not None else None
        if obj.get("text") is None and obj.get("vector") is None:
            rec.problem("text", "missing: a logged query needs its text or its vector")
        when = None
        if obj.get("time") is None:
            rec.problem("time", "missing")
        else:
            try:
                when = parse_instant(obj["time"], time_format, flag="--time-format")
            except InputError as e:
                rec.problem("time", str(e))
        injected = _injected(rec, obj.get("injected"))
        extra = obj.get("extra", {})
        if not isinstance(extra, dict):
            rec.problem("extra", f"expected an object of your own fields, got {extra!r}")
        if len(problems) == before and when is not None:
            queries.append(LoggedQuery(str(qid), lineno, when, text, vector, injected, extra))
    if problems:
        more = len(problems) - 1
        tail = f" (and {more} more problem{'s' * (more > 1)} in the log)" if more else ""
        raise InputError(problems[0] + tail)
    if not queries:
        raise InputError(f"{path.name}: no queries (one JSON object per line)")
    return QueryLog(path, tuple(queries))


def questions_log(dataset, lang: str) -> QueryLog:
    """A dataset's own questions as a log: each asked at its date (else the dataset's reference
    date), by its text in ``lang``, with production's injections unknown. (A log has no haystack:
    the replay searches every memory of the store.)"""
    queries = tuple(
        LoggedQuery(q.id, i + 1, q.date or dataset.reference_date, q.text(lang), None)
        for i, q in enumerate(dataset.questions)
    )
    if not queries:
        raise InputError(f"dataset {dataset.name!r} has no questions to replay: give --log")
    return QueryLog(Path(dataset.path or dataset.name) / "questions.jsonl", queries)
