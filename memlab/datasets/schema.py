"""Datasets: memories and questions as frozen records, read through one validating loader.

A dataset is a folder with ``dataset.json`` (``reference_date``, ``language``, optional
``languages``, ``description``), ``memories.jsonl`` (``id``, ``date``, ``text``, optional
``topic``, ``supersedes``, ``type``, ``pinned``) and ``questions.jsonl`` (``id``, ``text``,
``kind``, ``relevant``, ``current``, ``stale``, optional ``date``: when the question is asked, and
``time_range``: ``{"start": day, "end": day}``, the days it asks about as a tool call would pass
them, which the time gate then uses instead of parsing the text; ``expect``, ``avoid``,
``answer``: what a good reply holds, ``memlab.datasets.reply_checks``).
A dataset that holds several conversations or haystacks (an imported benchmark) says which belong
together: a memory's ``group`` (its conversation or session) and a question's ``haystack`` (the
groups it searches); such a question sees only the memories of its haystack, and those without a
group. A question's ``category`` is the benchmark's own category (LoCoMo's single-hop, ...).
A second language is a second text field, ``text_<lang>``. The seed write-up's fixture ships as
package data (``memlab/datasets/packaged/seed16``); ``load_dataset`` also takes any folder of that shape.

Every problem is reported as ``file:line: field: problem`` and all problems of a dataset are
reported together, so one run of the loader lists everything to fix.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from memlab.core.errors import InputError, MissingFileError, UnknownNameError
from memlab.core.files import file_kind
from memlab.core.labels import QUESTION_KINDS
from memlab.core.spec import age_days
from memlab.core.textfiles import decode, parse_json, read_input
from memlab.datasets.declared import (
    DeclaredTables,
    declared_criteria,
    declared_qdrant,
    declared_tables,
    declared_vectors,
    meta_languages,
)
from memlab.datasets.locations import DEFAULT_DATASET, dataset_dir
from memlab.datasets.payload import PayloadValue, collection_problems, read_collection_fields, read_payload
from memlab.datasets.records import (
    ID_IS_TEXT,
    JsonRecord,
    collapse_repeats,
    in_file_order,
    jsonl_format_problem,
    not_there,
    parse_datetime,
    read_jsonl,
)
from memlab.datasets.reply_checks import ReplyChecks, allowed_fields, read_reply_checks

# where a memory or question comes from (the field "provenance"; "source", its name before 0.2, is
# still read)
PROVENANCES = ("seed", "reconstructed", "imported", "synthetic", "user")


class DatasetError(InputError):
    """A dataset failed validation; ``problems`` holds one ``file:line: field: problem`` each."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class Memory:
    """One stored memory: the date stays inside the embedded text and in the payload."""

    id: str
    date: datetime  # timezone-aware (UTC); a plain YYYY-MM-DD means midnight UTC
    texts: Mapping[str, str]  # language -> "YYYY-MM-DD: fact sentence with an explicit subject"
    topic: str
    provenance: str
    supersedes: str | None = None
    note: str = ""
    type: str = ""
    pinned: bool = False
    group: str = ""  # the conversation or session it belongs to ("" : every question sees it)
    # keyword payload fields (user_id, agent_id...) and the Qdrant point id (memlab.datasets.payload)
    payload: Mapping[str, PayloadValue] = field(default_factory=dict)
    point_id: int | str | None = None

    def text(self, lang: str) -> str:
        try:
            return self.texts[lang]
        except KeyError:
            raise InputError(
                f"memory {self.id!r} has no text in language {lang!r}; "
                f"it has: {', '.join(sorted(self.texts))}"
            ) from None


@dataclass(frozen=True)
class Question:
    """One test question with its labels: which memories answer it and which must win."""

    id: str
    kind: str  # hit | contradiction | nohit | time
    texts: Mapping[str, str]
    relevant: tuple[str, ...] = ()
    current: str | None = None  # the memory that must win (the newest true fact)
    stale: tuple[str, ...] = ()  # older memories the current one replaces
    provenance: str = "reconstructed"
    note: str = ""
    date: datetime | None = None  # when the question is asked; None: the dataset's reference date
    # the days the question asks about, as an application's tool call would pass them (inclusive);
    # None: the time gate parses the question's text instead
    time_range: tuple[date, date] | None = None
    # the memory groups it searches (its conversation, its sessions); None: every memory
    haystack: tuple[str, ...] | None = None
    category: str = ""  # the benchmark's own category of the question (LoCoMo's "multi-hop", ...)
    # what a good reply holds: phrases it contains and does not, the reference answer
    replies: ReplyChecks = field(default_factory=ReplyChecks, compare=False)
    # keyword payload fields of the tenant who asks it (user_id...): a tenant filter keeps the
    # questions whose payload meets it, and those without the field
    payload: Mapping[str, PayloadValue] = field(default_factory=dict, compare=False)

    def text(self, lang: str) -> str:
        try:
            return self.texts[lang]
        except KeyError:
            raise InputError(
                f"question {self.id!r} has no text in language {lang!r}; "
                f"it has: {', '.join(sorted(self.texts))}"
            ) from None


@dataclass(frozen=True)
class Dataset:
    name: str
    reference_date: datetime
    languages: tuple[str, ...]
    memories: tuple[Memory, ...]
    questions: tuple[Question, ...]
    description: str = ""
    provenance: str = ""
    path: Path | None = field(default=None, compare=False)
    vectors: dict[str, Any] | None = field(default=None, compare=False)  # stored memory vectors
    criteria: tuple[Any, ...] | None = field(default=None, compare=False)  # declared in dataset.json
    tables: DeclaredTables | None = field(default=None, compare=False)  # declared in dataset.json
    # the questions a tenant filter left out (memlab.datasets.payload.asked_by): files beside the
    # dataset may still name them
    questions_left_out: frozenset[str] = field(default=frozenset(), compare=False)
    # the Qdrant collection it was imported from: date_field, date_format, vector_name, id_field, ...
    qdrant: dict[str, Any] | None = field(default=None, compare=False)
    # the public benchmark it was imported from: {"name": "locomo", "granularity": "turn", ...}
    benchmark: dict[str, Any] | None = field(default=None, compare=False)

    # computed once (a frozen record: they cannot go stale); a lookup by id is one dict access, so
    # loading scores for 100k memories stays linear
    @cached_property
    def memory_ids(self) -> tuple[str, ...]:
        return tuple(m.id for m in self.memories)

    @cached_property
    def question_ids(self) -> tuple[str, ...]:
        return tuple(q.id for q in self.questions)

    @cached_property
    def memory_index(self) -> dict[str, int]:
        """Each memory id's position (dataset order)."""
        return {m: i for i, m in enumerate(self.memory_ids)}

    @cached_property
    def question_index(self) -> dict[str, int]:
        """Each question id's position (dataset order)."""
        return {q: i for i, q in enumerate(self.question_ids)}

    def memory(self, memory_id: str) -> Memory:
        if memory_id in self.memory_index:
            return self.memories[self.memory_index[memory_id]]
        raise UnknownNameError(f"no memory {memory_id!r} in dataset {self.name!r}")

    def question(self, question_id: str) -> Question:
        if question_id in self.question_index:
            return self.questions[self.question_index[question_id]]
        if question_id in self.questions_left_out:  # not "no question": it is there, for another
            raise UnknownNameError(
                f"question {question_id!r} is another tenant's: the tenant filter leaves it out "
                f"(questions asked under it: {', '.join(self.question_ids)})"
            )
        raise UnknownNameError(
            f"no question {question_id!r} in dataset {self.name!r}; questions: {', '.join(self.question_ids)}"
        )

    def memory_dates(self) -> np.ndarray:
        """Memory dates as ``datetime64[s]`` (UTC), in fixture order."""
        return np.array([naive_utc(m.date) for m in self.memories], dtype="datetime64[s]")

    def question_references(self, default: datetime | None = None) -> np.ndarray:
        """When each question is asked (``datetime64[s]``): its own date, else ``default``
        (the dataset's reference date unless given)."""
        ref = default or self.reference_date
        return np.array([naive_utc(q.date or ref) for q in self.questions], dtype="datetime64[s]")

    def ages(self, default: datetime | None = None) -> np.ndarray:
        """(questions, memories) fractional days from each memory's date to when each question is
        asked; +inf for a memory written after the question or outside its haystack (never
        retrievable, weight 0)."""
        refs = self.question_references(default)
        days = age_days(self.memory_dates()[None, :], refs[:, None])
        return np.where((days >= 0) & self.in_haystack(), days, np.inf)

    def in_haystack(self) -> np.ndarray:
        """(questions, memories): the memory is in the question's haystack (a question without
        one searches every memory; a memory without a group is in every haystack)."""
        out = np.ones((len(self.questions), len(self.memories)), dtype=bool)
        code: dict[str, int] = {"": -1}
        groups = np.array([code.setdefault(m.group, len(code)) for m in self.memories])
        for i, q in enumerate(self.questions):
            if q.haystack is not None:
                out[i] = (groups == -1) | np.isin(groups, [code.get(g, -2) for g in q.haystack])
        return out

    def visible(self, default: datetime | None = None) -> np.ndarray:
        """(questions, memories): the memory exists when the question is asked, and is in its
        haystack."""
        return (
            self.question_references(default)[:, None] >= self.memory_dates()[None, :]
        ) & self.in_haystack()


# ---------------------------------------------------------------------------------------------
# Loading


def naive_utc(when: datetime) -> datetime:
    """The same instant as a naive UTC datetime (numpy's datetime64 has no time zones)."""
    return when.astimezone(UTC).replace(tzinfo=None) if when.tzinfo else when


def _check_time_question(r, fields, time_range, current_date, current, asked) -> None:
    """A time question's current memory must lie in the time it names: its ``time_range``, else
    what ``memlab.datasets.timeparse`` reads in each language's text (give or take the gate's one-day
    widening). Otherwise the gate can never find it, and the label, not the policy, is wrong."""
    from memlab.datasets.timeparse import parse_time

    day = current_date.astimezone(UTC).date()
    if time_range is not None:
        if not time_range[0] <= day <= time_range[1]:
            r.problem(
                "current", f"{current!r} is dated {day}, outside time_range {time_range[0]}..{time_range[1]}"
            )
        return
    for lang, fname in fields.items():
        text = r.obj.get(fname)
        if not isinstance(text, str):
            continue
        named = parse_time(text, asked.astimezone(UTC).date())
        if named is None:
            r.problem(
                fname,
                "a time question must name a time memlab reads (`memlab timeparse TEXT` shows what it "
                "reads), or give a time_range",
            )
        elif not named.start - timedelta(days=1) <= day <= named.end + timedelta(days=1):
            r.problem(
                "current",
                f"{current!r} is dated {day}, outside the time its {lang} text names "
                f"({named.start}..{named.end}, {named.matched!r})",
            )


_MEMORY_FIELDS = {
    "id",
    "date",
    "text",
    "topic",
    "supersedes",
    "type",
    "pinned",
    "provenance",
    "note",
    "group",
    "payload",
    "point_id",
}
_QUESTION_FIELDS = {
    "id",
    "text",
    "kind",
    "relevant",
    "current",
    "stale",
    "date",
    "time_range",
    "provenance",
    "note",
    "haystack",
    "category",
    "payload",
}
LEGACY_FIELDS = frozenset({"source"})  # provenance, as it was called before 0.2


def provenance_field(obj: Mapping[str, Any]) -> str:
    """The record's provenance field: ``provenance``, or ``source`` in files written before 0.2."""
    return "source" if "source" in obj and "provenance" not in obj else "provenance"


def supersession_cycles(refs: list[tuple[JsonRecord, str]], memory_lines: dict[str, int]) -> None:
    """A memory that supersedes itself, or a chain that comes back to where it started, is a
    problem at the line of the chain's first memory (once per cycle)."""
    record = {r.obj.get("id"): r for r, _ in refs}
    edge = {r.obj.get("id"): sup for r, sup in refs if sup in memory_lines}
    done: set[str] = set()
    for start in sorted(edge, key=lambda m: memory_lines.get(m, 0)):
        path: list[str] = []
        m: str | None = start
        while m in edge and m not in done and m not in path:
            path.append(m)
            m = edge[m]
        if m in path:
            cycle = path[path.index(m) :]
            first = min(cycle, key=lambda x: memory_lines[x])
            if len(cycle) == 1:
                record[first].problem("supersedes", f"memory {first!r} supersedes itself")
            else:
                i = cycle.index(first)
                loop = [*cycle[i:], *cycle[:i], first]
                record[first].problem("supersedes", f"a cycle of supersessions: {' -> '.join(loop)}")
        done.update(path)


def text_field(lang: str, primary: str) -> str:
    """The dataset's own language is ``text``; every other language is ``text_<lang>``."""
    return "text" if lang == primary else f"text_{lang}"


def _calendar_date(text: str) -> str:
    """The calendar date of an ISO 8601 date or time as written, in its own offset: YYYY-MM-DD."""
    try:
        return datetime.fromisoformat(text).date().isoformat()
    except ValueError:
        return text[:10]


@dataclass(frozen=True)
class _Header:
    """What dataset.json says that the records are read by."""

    meta: dict[str, Any]
    reference: datetime | None
    primary: str
    languages: tuple[str, ...]
    fields: dict[str, str]  # language -> its text field
    date_prefix: bool


@dataclass(frozen=True)
class _MemoriesRead:
    """The memories read, and what the questions are checked against."""

    memories: list[Memory]
    memory_lines: dict[str, int]
    memory_dates: dict[str, datetime]
    memory_groups: dict[str, str]
    unreadable: bool  # a line no JSON object: its id unknown, so no "unknown id" after it


def load_dataset(name_or_path: str | Path = DEFAULT_DATASET) -> Dataset:
    """Load and validate a dataset folder; raise ``DatasetError`` listing every problem. Its
    steps: dataset.json, the memories, the questions, then what dataset.json declares of them."""
    root = dataset_dir(name_or_path)
    problems: list[str] = []
    head = _read_header(root, problems)
    read = _read_memories(root, head, problems)
    questions, question_lines = _read_questions(root, head, read, problems)
    meta, reference, languages, memories = head.meta, head.reference, head.languages, read.memories
    if not problems and not memories:
        problems.append("memories.jsonl: no memories")
    # no questions is a store still to be labelled (what import-qdrant writes): calibrate, explain
    # --log and spec read it; the commands that measure questions say they need some
    # declared criteria are checked once the questions are sound (no cascade of follow-on errors)
    no_current = frozenset(q.id for q in questions if q.current is None)
    before = len(problems)
    criteria = (
        None if problems else declared_criteria(meta.get("criteria"), question_lines, problems, no_current)
    )
    tables = None if problems else declared_tables(meta.get("tables"), question_lines, problems)
    if not questions and len(problems) > before:
        # the cause is the empty file, not each criterion or table naming a question it lacks
        del problems[before:]
        problems.append(
            "questions.jsonl: no questions, yet dataset.json's criteria or tables name some: add the "
            "questions (one JSON object per line), or drop what names them from dataset.json"
        )
    vectors = None if problems else declared_vectors(meta.get("vectors"), root, len(memories), problems)
    qdrant = None if problems else declared_qdrant(meta.get("qdrant"), problems)
    if problems:
        ordered = collapse_repeats(in_file_order(problems))
        raise DatasetError([f"{root}/{p}" if not p.startswith("/") else p for p in ordered])
    if reference is None:  # unreachable: a missing reference date is a problem above
        raise DatasetError([f"{root}/dataset.json: reference_date: missing"])
    return Dataset(
        name=str(meta.get("name", root.name)),
        reference_date=reference,
        languages=languages,
        memories=tuple(memories),
        questions=tuple(questions),
        description=str(meta.get("description", "")),
        provenance=str(meta.get("provenance", "")),
        path=root,
        vectors=vectors,
        criteria=criteria,
        tables=tables,
        qdrant=qdrant,
        benchmark=meta.get("benchmark") if isinstance(meta.get("benchmark"), dict) else None,
    )


def _read_header(root: Path, problems: list[str]) -> _Header:
    """dataset.json: its reference date, languages and text fields, raised at once when the
    records could not be read without them."""
    meta_path = root / "dataset.json"
    meta: dict[str, Any] = {}
    try:
        meta = parse_json(decode(read_input(meta_path, "dataset.json"), "dataset.json"), "dataset.json")
    except OSError as e:  # missing, a link loop or a link to nothing: said as such
        # without it no record can be read: which languages, and so which text fields (said once,
        # not as an unknown text_ja on every line)
        if e.errno not in (errno.ENOENT, errno.ELOOP):
            raise
        raise DatasetError([f"{root}/dataset.json: {not_there(meta_path)}"]) from None
    except InputError as e:  # not UTF-8, invalid JSON, nested too deep, an integer of 5000 digits:
        raise DatasetError([f"{root}/{e}"]) from None  # nothing else can be read without it
    if not isinstance(meta, dict):
        problems.append("dataset.json: expected a JSON object")
        meta = {}
    reference: datetime | None = None
    if "reference_date" not in meta and meta_path.is_file():
        problems.append("dataset.json: reference_date: missing")
    elif "reference_date" in meta:
        try:
            reference = parse_datetime(meta["reference_date"])
        except ValueError as e:
            problems.append(f"dataset.json: reference_date: {e}")
    primary, languages = meta_languages(meta)
    if not isinstance(primary, str) or not primary:
        problems.append(f"dataset.json: language: expected a language code, got {primary!r}")
        primary = "en"
    valid = all(isinstance(x, str) and x for x in languages)
    if not languages or not valid or primary not in languages:
        problems.append(
            f"dataset.json: languages: expected a list of codes including {primary!r}, "
            f"got {list(languages)!r}"
        )
        languages = (primary,)
    if problems and any(p.startswith(("dataset.json: language", "dataset.json: expected")) for p in problems):
        # the records' text fields follow the languages: checked against wrong ones, every line
        # would fail twice (text_jp unknown, text_ja missing)
        raise DatasetError([f"{root}/{p}" for p in problems])
    languages = (primary, *[x for x in languages if x != primary])
    fields = {lang: text_field(lang, primary) for lang in languages}
    # The seed's stored form keeps the date inside the embedded text (dropping it pushed an
    # unrelated memory over the threshold); datasets imported from a device may not.
    date_prefix = meta.get("date_prefix", True)
    if not isinstance(date_prefix, bool):
        problems.append(f"dataset.json: date_prefix: expected true or false, got {date_prefix!r}")
        date_prefix = True
    return _Header(meta, reference, primary, languages, fields, date_prefix)


def _read_memories(root: Path, head: _Header, problems: list[str]) -> _MemoriesRead:
    """memories.jsonl, each line checked; the supersession links and the date prefixes after."""
    meta, reference, primary, languages = head.meta, head.reference, head.primary, head.languages
    fields, date_prefix = head.fields, head.date_prefix
    stored = meta.get("vectors") is not None  # memories keep vectors made from their one text
    formats = [m for f in ("memories.jsonl", "questions.jsonl") if (m := jsonl_format_problem(root / f))]
    memories_file = root / "memories.jsonl"
    if not formats and memories_file.is_file() and not memories_file.read_bytes().strip():
        # said once: not as an unknown memory id on every question that names one
        formats.append(
            "memories.jsonl: the file is empty: a dataset needs at least one memory, one JSON object per line"
        )
    if formats:  # nothing line by line can be read: say so once, not per line and per unknown id
        raise DatasetError([f"{root}/{p}" for p in [*problems, *formats]])

    memories: list[Memory] = []
    memory_lines: dict[str, int] = {}
    undated: list[str] = []  # texts that do not start with their date
    memory_dates: dict[str, datetime] = {}
    supersedes_refs: list[tuple[JsonRecord, str]] = []
    memory_groups: dict[str, str] = {}  # group -> its first memory
    before_memories = len(problems)
    for lineno, obj in read_jsonl(root / "memories.jsonl", problems):
        r = JsonRecord("memories.jsonl", lineno, obj, problems)
        r.unknown_fields(_MEMORY_FIELDS | set(fields.values()), LEGACY_FIELDS)
        mid = r.unique_id(memory_lines, lineno)
        when = r.date("date", required=True)
        if when is not None and reference is not None and when > reference:
            r.problem("date", f"{obj['date']} is after the reference date {meta['reference_date']}")
        if mid is not None and when is not None:
            memory_dates[mid] = when
        texts = {}
        for lang, fname in fields.items():
            # stored vectors (an imported store) embed the one text a memory has: a further
            # language is the questions', and such a memory shows its own text in it
            t = r.text(fname, required=not (stored and lang != primary))
            if t is None and stored and lang != primary and texts.get(primary) is not None:
                texts[lang] = texts[primary]
                continue
            if t is None:
                continue
            # the date as written (a local time keeps its own calendar date, not the UTC one), as
            # YYYY-MM-DD even when written in ISO's basic form (20261110)
            raw_date = str(obj["date"])
            written = _calendar_date(raw_date) if when is not None else ""
            prefixes = (f"{written}: ", f"{raw_date[:10]}: ")
            if date_prefix and when is not None and not t.startswith(prefixes):
                undated.append(f"{r.where}: {fname}: must start with the date, as '{written}: ...'")
            texts[lang] = t
        topic = r.text("topic", required=False) or ""
        mtype = r.text("type", required=False) or ""
        pinned = obj.get("pinned", False)
        if not isinstance(pinned, bool):
            r.problem("pinned", f"expected true or false, got {pinned!r}")
            pinned = False
        provenance = r.choice(provenance_field(obj), PROVENANCES, default="user")
        sup = r.text("supersedes", required=False)
        if sup is not None:
            supersedes_refs.append((r, sup))
        note = r.text("note", required=False) or ""
        group = r.text("group", required=False) or ""
        payload, point_id = read_collection_fields(r)
        if mid is not None and when is not None and len(texts) == len(languages) and provenance:
            memories.append(
                Memory(
                    mid, when, texts, topic, provenance, sup, note, mtype, pinned, group, payload, point_id
                )
            )
            memory_groups.setdefault(group, mid)
    # lines that are no JSON object declare ids no one can know: no "unknown id" cascade after them
    unreadable = any(
        p.startswith("memories.jsonl:")
        and (
            ": invalid JSON" in p
            or ": nested deeper" in p
            or ": holds an integer" in p
            or ": the line is longer than" in p
            or p.endswith("expected a JSON object")
            or p.endswith(ID_IS_TEXT)  # an id no one can type or read back
        )
        for p in problems[before_memories:]
    )
    for r, sup in supersedes_refs:
        if sup not in memory_lines and not unreadable:
            r.problem("supersedes", f"unknown memory id {sup!r}")
    supersession_cycles(supersedes_refs, memory_lines)
    problems.extend(collection_problems(memories, memory_lines))
    if undated and len(undated) == len(memory_dates) * len(fields):
        example = f"{next(iter(memory_dates.values())).date().isoformat()}: ..."
        problems.append(
            f"memories.jsonl: no text starts with its date (as '{example}'); "
            'if your texts carry no date prefix, set "date_prefix": false in dataset.json'
        )
    else:
        problems.extend(undated)
    return _MemoriesRead(memories, memory_lines, memory_dates, memory_groups, unreadable)


def _read_questions(
    root: Path, head: _Header, read: _MemoriesRead, problems: list[str]
) -> tuple[list[Question], dict[str, int]]:
    """questions.jsonl, each line checked against the memories; the questions and their lines."""
    meta, reference, languages, fields = head.meta, head.reference, head.languages, head.fields
    memories, memory_lines, memory_dates = read.memories, read.memory_lines, read.memory_dates
    memory_groups, unreadable = read.memory_groups, read.unreadable
    questions: list[Question] = []
    memory_index = {m.id: i for i, m in enumerate(memories)}
    question_lines: dict[str, int] = {}
    for lineno, obj in read_jsonl(root / "questions.jsonl", problems):
        r = JsonRecord("questions.jsonl", lineno, obj, problems)
        r.unknown_fields(_QUESTION_FIELDS | set(fields.values()) | allowed_fields(fields), LEGACY_FIELDS)
        qid = r.unique_id(question_lines, lineno)
        kind = r.choice("kind", QUESTION_KINDS)
        texts = {lang: t for lang, fname in fields.items() if (t := r.text(fname)) is not None}
        if qid in QUESTION_KINDS:  # a sweep writes injected_<id> and injected_<kind> columns
            r.problem("id", f"{qid!r} is reserved (a question kind): choose another id")
        asked = r.date("date", required=False)
        time_range = r.day_range("time_range")
        asked_day = (asked or reference).astimezone(UTC).date() if (asked or reference) else None
        if time_range is not None and asked_day is not None and time_range[1] > asked_day:
            r.problem("time_range", f"ends {time_range[1]}, after the question is asked ({asked_day})")
        if asked is not None and reference is not None and asked > reference:
            r.problem("date", f"{obj['date']} is after the reference date {meta['reference_date']}")
        relevant, stale = r.ids("relevant"), r.ids("stale")
        current = r.text("current", required=False)
        before_refs = len(problems)  # an id already refused is not also said to be missing
        for fname, ids in (("relevant", relevant), ("stale", stale), ("current", (current,))):
            for ref in ids:
                if ref is None:
                    continue
                if ref not in memory_lines:
                    if not unreadable:
                        r.problem(fname, f"unknown memory id {ref!r}")
                elif asked is not None and ref in memory_dates and memory_dates[ref] > asked:
                    r.problem(
                        fname,
                        f"{ref!r} is dated after the question ({obj['date']}), so it cannot be retrieved",
                    )
        if kind == "nohit" and (relevant or current or stale):
            r.problem("kind", "a nohit question has no relevant, current or stale memories")
        if kind == "contradiction" and (current is None or not stale):
            r.problem("kind", "a contradiction question needs a current and a stale memory")
        if kind == "time" and current is None:
            r.problem("kind", "a time question needs a current memory (the one from the time it names)")
        # a time_range given but refused has its own problem: the text is not checked in its place
        refused_range = time_range is None and r.obj.get("time_range") is not None
        if (
            kind == "time"
            and current in memory_dates
            and (asked or reference) is not None
            and not refused_range
        ):
            _check_time_question(r, fields, time_range, memory_dates[current], current, asked or reference)
        if current is not None and current in stale:
            r.problem("current", f"{current!r} is also listed as stale")
        elif current is not None and relevant and current not in relevant and len(problems) == before_refs:
            r.problem("current", f"{current!r} is not among its relevant memories: list it there too")
        provenance = r.choice(provenance_field(obj), PROVENANCES, default="user")
        note = r.text("note", required=False) or ""
        category = r.text("category", required=False) or ""
        haystack = r.ids("haystack") if obj.get("haystack") is not None else None
        if haystack is not None:
            unknown = [g for g in haystack if g not in memory_groups]
            outside = [
                ref
                for ref in (*relevant, *stale, *((current,) if current else ()))
                if ref in memory_index and memories[memory_index[ref]].group not in ("", *haystack)
            ]
            if unknown or not haystack:
                r.problem("haystack", f"unknown memory group {unknown[0]!r}" if unknown else "empty")
            elif outside:
                r.problem("haystack", f"{outside[0]!r} is labelled for it but outside its haystack")
        replies = read_reply_checks(r, fields)
        question_payload, bad_payload = read_payload(obj.get("payload"))
        if bad_payload is not None:
            r.problem("payload", bad_payload)
        if qid is not None and kind and len(texts) == len(languages) and provenance:
            questions.append(
                Question(
                    qid,
                    kind,
                    texts,
                    relevant,
                    current,
                    stale,
                    provenance,
                    note,
                    asked,
                    time_range,
                    haystack,
                    category,
                    replies=replies,
                    payload=question_payload,
                )
            )
    return questions, question_lines


def stored_vectors(dataset) -> np.ndarray:
    """The memory vectors kept beside an imported dataset, checked against its memories."""
    spec = dataset.vectors or {}
    path = Path(dataset.path) / spec.get("file", "vectors.npy")
    if file_kind(path) is not None:  # a FIFO swapped in since the load: never waited on
        raise InputError(f"{path}: is {file_kind(path)}, not a regular file: memlab reads only regular files")
    if not path.is_file():
        raise MissingFileError(f"{path}: the dataset's stored vectors are missing")
    vecs = np.load(path)
    if vecs.ndim != 2 or len(vecs) != len(dataset.memories):
        raise InputError(f"{path}: {vecs.shape} vectors for {len(dataset.memories)} memories")
    if not np.isfinite(vecs).all():
        raise InputError(f"{path}: contains NaN or infinity")
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.where(norms == 0, 1, norms)
