"""Import LongMemEval (xiaowu0162/LongMemEval: ``longmemeval_s/_m/_oracle[_cleaned].json``) as a
memlab dataset.

The file is a list of questions, each with its own haystack: ``haystack_session_ids``,
``haystack_dates`` (``"2023/05/20 (Sat) 02:21"``) and ``haystack_sessions`` (lists of
``{"role", "content", "has_answer"?}`` turns), the evidence ``answer_session_ids``, and the
``question_date``. memlab never downloads it.

- One dataset holds every question: the memories are the union of the haystacks. A session
  that recurs with the same date and content is one memory; a session id that recurs with another
  date or content gets a variant id (``sharegpt_x_0~2``), and each question points at the variant
  of its own haystack.
- Memories, as the benchmark's own retrieval indexes them (``src/retrieval/run_retrieval.py``):
  ``--granularity session`` (default) keeps a session's user turns joined by spaces, id the
  session id; ``turn`` keeps each user turn, id ``<session id>_<position from 1>``. Dates are
  read as UTC.
- Evidence, as the benchmark's own evaluation counts it: the sessions in ``answer_session_ids``
  with a user turn marked ``has_answer`` (session granularity), or those user turns (turn
  granularity); a question without one is rejected (the official scripts skip it). Evidence dated
  after the question is dropped (logged).
- Haystacks: each memory's ``group`` is its session (the variant id), each question's
  ``haystack`` the sessions of its own haystack, so it searches those alone, as the benchmark
  does; its ``category`` is its ``question_type``, or ``abstention``.
- Kinds: an id containing ``_abs`` (the official scripts' test) is a no-hit question;
  ``knowledge-update`` a contradiction (``memlab.importers.benchmark_io.update_labels``);
  ``temporal-reasoning`` a time question where it names a time and one evidence memory lies in it
  (``time_labels``), else a hit; the other types hit questions.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlab.core.errors import InputError
from memlab.core.files import file_sha256, text_sha256
from memlab.core.numbers import counted
from memlab.datasets.records import MAX_TEXT
from memlab.importers.benchmark_io import (
    Evidence,
    ImportLog,
    ImportResult,
    bounded,
    hit_labels,
    iso,
    question_row,
    read_json_file,
    shape,
    time_labels,
    update_labels,
    write_benchmark,
)

QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "temporal-reasoning",
    "knowledge-update",
    "multi-session",
)
GRANULARITIES = ("session", "turn")
DEFAULT_GRANULARITY = "session"
DATE_PATTERNS = ("%Y/%m/%d (%a) %H:%M", "%Y/%m/%d %H:%M", "%Y/%m/%d")


def parse_lme_date(value: Any) -> datetime:
    """``"2023/05/20 (Sat) 02:21"`` (or without weekday or time) as a UTC instant."""
    if isinstance(value, str):
        for fmt in DATE_PATTERNS:
            try:
                return datetime.strptime(value.strip(), fmt).replace(tzinfo=UTC)
            except ValueError:
                continue
    raise InputError(f"{value!r} is not a LongMemEval date like '2023/05/20 (Sat) 02:21'")


def session_memories(session: list, granularity: str) -> list[tuple[int, str, bool]]:
    """(position from 1, text, has_answer) of what the benchmark indexes: the user turns, joined
    (session) or one by one (turn)."""
    user = [
        (i + 1, t["content"], t.get("has_answer") is True)
        for i, t in enumerate(session)
        if isinstance(t, dict) and t.get("role") == "user" and isinstance(t.get("content"), str)
    ]
    if granularity == "turn":
        return [u for u in user if u[1].strip()]
    text = " ".join(u[1] for u in user)
    return [(0, text, any(u[2] for u in user))] if text.strip() else []


class _Store:
    """Memories in file order, one per (session id, date, content); variants get ``~N``."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.when: dict[str, datetime] = {}
        self.index: dict[str, int] = {}
        self.variants: dict[str, list[tuple[datetime, str]]] = {}

    def session_id(self, sid: str, when: datetime, digest: str) -> tuple[str, bool]:
        """The memory id for this occurrence of a session, and whether it is new."""
        seen = self.variants.setdefault(sid, [])
        key = (when, digest)
        if key in seen:
            k = seen.index(key)
            return (sid if k == 0 else f"{sid}~{k + 1}"), False
        seen.append(key)
        return (sid if len(seen) == 1 else f"{sid}~{len(seen)}"), True

    def add(self, mid: str, when: datetime, text: str, group: str) -> None:
        self.index[mid] = len(self.rows)
        self.when[mid] = when
        self.rows.append(
            {"id": mid, "date": iso(when), "text": text, "provenance": "imported", "group": group}
        )


def import_longmemeval(
    file: str | Path, out: str | Path, *, granularity: str = DEFAULT_GRANULARITY, replace: bool = False
) -> ImportResult:
    """Write the LongMemEval file as a dataset folder ``out`` (``replace``: an earlier import there
    is replaced, ``benchmark_io.check_replaceable``)."""
    if granularity not in GRANULARITIES:
        raise InputError(f"--granularity: {granularity!r} is not one of {', '.join(GRANULARITIES)}")
    data = read_json_file(file, "LongMemEval")
    if not isinstance(data, list):
        raise InputError(f"{file}: expected a JSON list of questions, got {type(data).__name__}")
    log = ImportLog({name: Counter() for name in (*QUESTION_TYPES, "abstention")})
    store = _Store()
    questions: list[dict[str, Any]] = []
    asked_dates: list[datetime] = []
    seen_ids: set[str] = set()
    for i, item in enumerate(data):
        where = f"[{i}]"
        if not isinstance(item, dict):
            log.reject("unknown", where, "not an object", shape(item))
            continue
        qid = item.get("question_id")
        qtype = item.get("question_type")
        abstention = isinstance(qid, str) and "_abs" in qid
        category = "abstention" if abstention else str(qtype)
        where = f"[{i}] {qid}"
        if not isinstance(qid, str) or not qid:
            log.reject(category, where, "no question_id", shape(item) if qid is None else shape(qid))
            continue
        if qid in seen_ids:
            log.reject(category, where, "duplicate question_id")
            continue
        if qtype not in QUESTION_TYPES:
            log.reject(category, where, "unknown question_type", repr(qtype))
            continue
        text = item.get("question")
        if not isinstance(text, str) or not text.strip():
            log.reject(category, where, "no question text", f"question: {shape(text)}")
            continue
        if len(text.strip()) > MAX_TEXT:
            log.reject(category, where, f"question longer than {MAX_TEXT:,} characters", f"{len(text):,}")
            continue
        try:
            asked = parse_lme_date(item.get("question_date"))
        except InputError as e:
            log.reject(category, where, "question_date unreadable", str(e))
            continue
        haystack = ("haystack_session_ids", "haystack_dates", "haystack_sessions")
        sids, dates, sessions = (item.get(k) for k in haystack)
        lists = dict(zip(haystack, (sids, dates, sessions), strict=True))
        not_lists = [f"{k}: {shape(v)}" for k, v in lists.items() if not isinstance(v, list)]
        if not_lists or len({len(v) for v in lists.values()}) > 1:
            detail = not_lists[0] if not_lists else ", ".join(f"{k}: {len(v)}" for k, v in lists.items())
            log.reject(category, where, "haystack lists missing or of different lengths", detail)
            continue
        answer_sids = item.get("answer_session_ids")
        if answer_sids is None:
            answer_sids = []
        if not isinstance(answer_sids, list) or not all(isinstance(a, str) for a in answer_sids):
            # a string would match by substring, an int or a list of lists is no session id
            log.reject(category, where, "answer_session_ids is not a list of session ids", shape(answer_sids))
            continue
        evidence: list[str] = []
        local: dict[str, str] = {}  # this haystack's session id -> memory id of its variant
        for sid, date_text, session in zip(sids, dates, sessions, strict=True):
            if not isinstance(sid, str) or not isinstance(session, list):
                log.skip(f"{where} {sid!r}", "session is not a list of turns", shape(session))
                continue
            try:
                when = parse_lme_date(date_text)
            except InputError as e:
                log.skip(f"{where} {sid}", f"session date unreadable: {e}")
                continue
            kept = session_memories(session, granularity)
            if not kept:
                # a turn of another shape (speaker/text, not role/content) is said; an empty one not
                shaped = any(isinstance(t, dict) and {"role", "content"} <= set(t) for t in session)
                turn = next((t for t in session if isinstance(t, dict)), session[0] if session else None)
                log.skip(
                    f"{where} {sid}", "session without user text", "" if shaped else f"a turn: {shape(turn)}"
                )
                continue
            digest = text_sha256("\x00".join(t for _, t, _ in kept))
            base, new = store.session_id(sid, when, digest)
            local[sid] = base
            for pos, body, has_answer in kept:
                mid = base if granularity == "session" else f"{base}_{pos}"
                if new:
                    store.add(mid, when, bounded(body, f"{where} {mid}", "memory text", log), base)
                # LongMemEval's own evaluation: an evidence session (a turn) counts when a user
                # turn of it is marked has_answer (a session answered on the assistant side is
                # renamed "noans", and a question with none is skipped)
                if sid in answer_sids and has_answer:
                    evidence.append(mid)
        for sid in answer_sids:
            if sid not in local:
                log.repair(where, "evidence session not in the haystack dropped", str(sid))
        if abstention:
            labels = {"kind": "nohit", "relevant": [], "current": None, "stale": []}
        else:
            late = [m for m in evidence if store.when[m] > asked]
            for m in late:
                log.repair(where, "evidence dated after the question dropped", m)
            evidence = [m for m in dict.fromkeys(evidence) if store.when[m] <= asked]
            if not evidence:
                reason = (
                    "no evidence session in its haystack"
                    if not any(sid in local for sid in answer_sids)
                    else "no user turn of its evidence sessions is marked has_answer"
                )
                log.reject(category, where, reason)
                continue
            ev = [Evidence(m, store.when[m], store.index[m]) for m in evidence]
            if qtype == "knowledge-update":
                labels = update_labels(ev)
            elif qtype == "temporal-reasoning":
                labels = time_labels(text, asked, ev)
            else:
                labels = hit_labels(ev)
        seen_ids.add(qid)
        note = f"LongMemEval {qtype}{' (abstention)' if abstention else ''}; answer: {item.get('answer')}"
        note = bounded(note, where, "note (the answer)", log)
        log.kept(category, labels["kind"])
        haystack_groups = list(dict.fromkeys(local.values()))
        questions.append(question_row(qid, text.strip(), asked, labels, note, category, haystack_groups))
        asked_dates.append(asked)
    path = Path(file)
    latest = max(list(store.when.values()) + asked_dates) if store.rows else None
    meta = {
        "name": path.stem,
        "reference_date": iso(latest) if latest else "1970-01-01",
        "language": "en",
        "description": f"LongMemEval ({path.name}), {granularity} granularity; "
        f"{counted(len(store.rows), 'memory')}, "
        f"{counted(len(questions), 'question')}",
        "provenance": f"{path.name} (sha256 {file_sha256(path)[:16]}), imported by memlab import-longmemeval",
        "date_prefix": False,
        "benchmark": {"name": "longmemeval", "granularity": granularity},
    }
    return write_benchmark(out, meta, store.rows, questions, log, replace=replace)
