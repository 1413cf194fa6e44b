"""What the benchmark importers share: the log of what was kept, repaired and rejected, the
rules that turn a benchmark question's evidence into memlab labels, and the atomic write.

Labels from evidence (the same rules for LongMemEval and LoCoMo; the README lists them):
- ``hit_labels``: every evidence memory is ``relevant``; ``current`` only when there is exactly
  one (with several, no single memory must win and memlab's criteria skip the question);
- ``update_labels`` (a knowledge update): a contradiction when exactly one evidence memory is the
  newest and at least one is older: the newest is ``current``, the older ones ``stale``; else
  ``hit_labels``;
- ``time_labels`` (a temporal question): a time question when the question names a time that
  ``memlab.datasets.timeparse`` reads (relative to when it is asked) and exactly one evidence
  memory is dated inside it, give or take the time gate's one-day widening; that memory is
  ``current``. Otherwise ``hit_labels``: "When did I ...?" asks for a time but names none, so a
  time gate has nothing to filter on.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memlab.core.errors import InputError, MissingFileError
from memlab.core.files import write_folder_atomically
from memlab.core.textfiles import load_json, surrogate_problem
from memlab.datasets.records import MAX_TEXT
from memlab.datasets.timeparse import parse_time


@dataclass
class ImportLog:
    """Per source category: how many records became each question kind, and every record that
    was rejected (with its reason) or repaired (with what was done)."""

    kinds: dict[str, Counter] = field(default_factory=dict)  # category -> kind -> count
    rejections: list[dict[str, str]] = field(default_factory=list)
    repairs: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)  # sessions, turns, observations

    def kept(self, category: str, kind: str) -> None:
        self.kinds.setdefault(category, Counter())[kind] += 1

    def reject(self, category: str, where: str, reason: str, detail: str = "") -> None:
        self.kinds.setdefault(category, Counter())["rejected"] += 1
        self.rejections.append({"record": where, "category": category, "reason": reason, "detail": detail})

    def repair(self, where: str, what: str, detail: str) -> None:
        self.repairs.append({"record": where, "repair": what, "detail": detail})

    def skip(self, where: str, reason: str, detail: str = "") -> None:
        self.skipped.append({"record": where, "reason": reason, **({"detail": detail} if detail else {})})

    def why(self, entries: list[dict[str, str]], at_most: int = 3) -> str:
        """The commonest reasons among ``entries`` (rejections, skips), each with its count and its
        first record: what a file of another shape ran into."""
        counts = Counter(e["reason"] for e in entries)
        parts = []
        for reason, n in counts.most_common(at_most):
            first = next(e for e in entries if e["reason"] == reason)
            detail = f" ({first['detail']})" if first.get("detail") else ""
            parts.append(f"{reason}: {n}, first {first['record']}{detail}")
        more = len(counts) - at_most
        return "; ".join(parts) + (f"; and {more} other reason{'s' * (more > 1)}" if more > 0 else "")

    def summary(self) -> dict[str, Any]:
        """Counts per category and kind, and per reason: what ``import.json`` holds first."""
        return {
            "categories": {c: dict(sorted(k.items())) for c, k in self.kinds.items() if k},
            "rejected_by_reason": dict(Counter(r["reason"] for r in self.rejections).most_common()),
            "repaired_by_kind": dict(Counter(r["repair"] for r in self.repairs).most_common()),
            "skipped_by_reason": dict(Counter(r["reason"] for r in self.skipped).most_common()),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.summary(),
            "rejections": self.rejections,
            "repairs": self.repairs,
            "skipped": self.skipped,
        }


@dataclass(frozen=True)
class ImportResult:
    path: Path
    memories: int
    questions: int
    log: ImportLog


def bounded(text: str, where: str, what: str, log: ImportLog) -> str:
    """``text`` cut to the ``MAX_TEXT`` characters memlab reads in one text (the loader refuses a
    longer one), the cut logged as a repair: a benchmark's long session still imports."""
    if len(text) <= MAX_TEXT:
        return text
    log.repair(where, f"{what} cut to {MAX_TEXT:,} characters", f"{len(text):,} characters")
    return text[:MAX_TEXT]


def shape(value: Any) -> str:
    """What a record is, in a few words, for a rejection's detail: its type, and an object's keys."""
    if isinstance(value, dict):
        keys = ", ".join(map(str, list(value)[:8])) + (", ..." if len(value) > 8 else "")
        return f"an object with keys {keys}" if value else "an empty object"
    return f"{type(value).__name__} {value!r}"[:80]


def iso(when: datetime) -> str:
    """An instant as memlab's files write it: ISO 8601 in UTC with a ``Z``."""
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")


def read_json_file(path: str | Path, what: str) -> Any:
    """The benchmark's JSON file, with a message that names it when it is missing or broken."""
    path = Path(path)
    if not path.is_file():
        raise MissingFileError(f"no {what} file {path}")
    data = load_json(path)  # not UTF-8, nested too deep, an integer of 5000 digits: one line each
    problem = surrogate_problem(data)
    if problem is not None:
        raise InputError(f"{path}: {problem}")
    return data


@dataclass(frozen=True)
class Evidence:
    """One evidence memory of a question: its id, its date and its position in the dataset."""

    id: str
    date: datetime
    order: int


def hit_labels(evidence: Sequence[Evidence]) -> dict[str, Any]:
    ids = [e.id for e in sorted(evidence, key=lambda e: e.order)]
    return {"kind": "hit", "relevant": ids, "current": ids[0] if len(ids) == 1 else None, "stale": []}


def update_labels(evidence: Sequence[Evidence]) -> dict[str, Any]:
    newest = max(e.date for e in evidence)
    latest = [e for e in evidence if e.date == newest]
    older = [e for e in evidence if e.date < newest]
    if len(latest) != 1 or not older:
        return hit_labels(evidence)
    ordered = sorted(evidence, key=lambda e: e.order)
    return {
        "kind": "contradiction",
        "relevant": [e.id for e in ordered],
        "current": latest[0].id,
        "stale": [e.id for e in sorted(older, key=lambda e: e.order)],
    }


def time_labels(text: str, asked: datetime, evidence: Sequence[Evidence]) -> dict[str, Any]:
    named = parse_time(text, asked.astimezone(UTC).date())
    if named is None:
        return hit_labels(evidence)
    lo, hi = named.start - timedelta(days=1), named.end + timedelta(days=1)
    inside = [e for e in evidence if lo <= e.date.astimezone(UTC).date() <= hi]
    if len(inside) != 1:
        return hit_labels(evidence)
    return {
        "kind": "time",
        "relevant": [e.id for e in sorted(evidence, key=lambda e: e.order)],
        "current": inside[0].id,
        "stale": [],
    }


def question_row(
    qid: str,
    text: str,
    asked: datetime,
    labels: dict[str, Any],
    note: str,
    category: str = "",
    haystack: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A question as ``questions.jsonl`` holds it: its labels, the benchmark's ``category`` and the
    memory groups it searches (``haystack``: its conversation, or its sessions)."""
    row: dict[str, Any] = {"id": qid, "text": text, "kind": labels["kind"], "date": iso(asked)}
    if category:
        row["category"] = category
    if haystack is not None:
        row["haystack"] = list(haystack)
    if labels["relevant"]:
        row["relevant"] = labels["relevant"]
    if labels["current"] is not None:
        row["current"] = labels["current"]
    if labels["stale"]:
        row["stale"] = labels["stale"]
    row["provenance"] = "imported"
    if note:
        row["note"] = note
    return row


GITIGNORE = (
    "# imported from a public benchmark by memlab: its licence is not this repository's, so git\n"
    "# leaves the whole folder out (delete this file only where the licence allows a copy)\n*\n"
)


def check_replaceable(out: Path) -> None:
    """``--replace``: ``out`` is absent, empty or an earlier benchmark import (its ``dataset.json``
    names a benchmark, ``import.json`` beside it); anything else is refused, nothing touched."""
    if not out.is_dir() or not any(out.iterdir()):
        return
    try:
        meta = json.loads((out / "dataset.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = None
    if not (
        isinstance(meta, dict) and isinstance(meta.get("benchmark"), dict) and (out / "import.json").is_file()
    ):
        raise InputError(
            f"--replace: {out} is not an earlier benchmark import (no dataset.json naming a benchmark "
            "with an import.json beside it): memlab replaces only its own imports"
        )


def write_benchmark(
    out: str | Path,
    meta: dict[str, Any],
    memories: list[dict[str, Any]],
    questions: list[dict[str, Any]],
    log: ImportLog,
    replace: bool = False,
) -> ImportResult:
    """Write the dataset folder (``import.json`` beside it: the log) so it appears whole or not at
    all, and only once memlab's loader accepts it. Its ``.gitignore`` keeps it out of git: a
    benchmark's licence is its own, and an import made inside a clone must not be committed with
    it by a ``git add -A``."""
    from memlab.datasets.schema import load_dataset

    where = meta.get("provenance", "the file")
    if not memories:  # said with why: a file of another shape (a renamed field, another type)
        why = log.why(log.rejections + log.skipped) or "the file holds no record"
        raise InputError(f"{where}: no memory could be imported: {why}")
    if not questions:
        why = log.why(log.rejections + log.skipped) or "the file holds no question"
        raise InputError(f"{where}: no question could be imported: {why}")
    files: dict[str, str | bytes] = {
        "dataset.json": json.dumps(meta, indent=2, ensure_ascii=False) + "\n",
        "memories.jsonl": "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in memories),
        "questions.jsonl": "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions),
        "import.json": json.dumps(log.to_dict(), indent=2, ensure_ascii=False) + "\n",
        ".gitignore": GITIGNORE,
    }
    if replace:
        check_replaceable(Path(out))
    path = write_folder_atomically(out, files, check=load_dataset, replace=replace)
    return ImportResult(Path(path), len(memories), len(questions), log)
