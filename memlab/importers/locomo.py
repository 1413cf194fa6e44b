"""Import LoCoMo (snap-research/LoCoMo, ``data/locomo10.json``) as a memlab dataset.

The file is a list of conversations (``sample_id``, ``conversation`` with ``session_<N>`` turn
lists and ``session_<N>_date_time``, ``observation``, ``qa``). memlab never downloads it.

- Memories: each session's observations (``--granularity observation``, the default), its
  turns (``turn``: ``"Speaker: text"``, plus ``[shares a photo: caption]`` when the turn carries a
  ``blip_caption``) or its summary (``session``: ``session_summary["session_<N>_summary"]``, the
  summaries the benchmark's own RAG evaluation indexes), dated by the session's
  ``"1:56 pm on 8 May, 2023"`` (read as UTC). Sessions are the ``session_<N>`` keys holding a
  list (conv-26 has dates for sessions without turns: they are ignored). Ids: ``conv-26:D1:3``
  (turn), ``conv-26:D1:o2`` (the session's second observation) or ``conv-26:S1`` (session 1's
  summary: the benchmark's own ``S1``).
- A memory holds the dialogue turns it cites: a turn itself, an observation its evidence, a
  summary every turn of its session (LoCoMo's ``task_eval/evaluation.py`` counts a retrieved
  ``S<N>`` for evidence ``D<N>:k``); a question's relevant memories are those holding one of its
  evidence turns.
- Each memory's ``group`` is its conversation (``sample_id``) and each question's ``haystack`` is
  that conversation alone: a question searches its own conversation, as the benchmark asks.
- Questions (``conv-26:qa37`` is ``qa[37]``) are asked at the conversation's last session; each
  keeps its reference answer (``answer``, for the token F1 of ``memlab answer``), and its
  ``category`` is the category's name.
  Categories (from the repository's evaluation code and the paper's table 5): 1 multi-hop,
  2 temporal, 3 open-domain, 4 single-hop, 5 adversarial. 1, 3, 4: hit questions with the
  memories of their evidence; 2: a time question where the evidence dates it (see
  ``memlab.importers.benchmark_io``), else a hit; 5: no-hit (the evidence names the other
  speaker's memory: a near miss that must stay out).
- Evidence ids are repaired where the intent is plain: split on ``;``, ``,`` or spaces
  (``"D8:6; D9:17"``), ``D:11:26`` -> ``D11:26``, ``D30:05`` -> ``D30:5``; ids that are
  malformed (``"D"``) or not in the conversation are dropped. Every repair is logged; a question
  left without evidence memories is rejected with its reason. Observation evidence
  (a list, or a comma-joined string) is read the same way.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlab.core.errors import InputError, UnknownNameError
from memlab.core.files import file_sha256
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
    write_benchmark,
)

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
GRANULARITIES = ("observation", "turn", "session")
DEFAULT_GRANULARITY = "observation"
DATE_PATTERNS = ("%I:%M %p on %d %B, %Y", "%d %B, %Y")
_ID = re.compile(r"^D:?(\d+):(\d+)$")
_SESSION = re.compile(r"^session_(\d+)$")


def parse_session_date(value: Any) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` (or ``"8 May, 2023"``) as a UTC instant."""
    if isinstance(value, str):
        for fmt in DATE_PATTERNS:
            try:
                return datetime.strptime(value.strip(), fmt).replace(tzinfo=UTC)
            except ValueError:
                continue
    raise InputError(f"{value!r} is not a LoCoMo date like '1:56 pm on 8 May, 2023'")


def evidence_ids(value: Any, where: str, known: set[str], log: ImportLog) -> list[str]:
    """Normalised dialogue ids from one evidence value (a string or a list of strings)."""
    items = value if isinstance(value, list) else [value]
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            log.repair(where, "non-text evidence dropped", repr(item))
            continue
        tokens = [t for t in re.split(r"[;,\s]+", item.strip()) if t]
        if len(tokens) > 1:
            log.repair(where, "several ids in one string split", item)
        for token in tokens:
            m = _ID.match(token)
            if m is None:
                log.repair(where, "malformed id dropped", token)
                continue
            norm = f"D{int(m[1])}:{int(m[2])}"
            if norm != token:
                log.repair(where, "id rewritten", f"{token} -> {norm}")
            if norm not in known:
                log.repair(where, "id not in the conversation dropped", norm)
                continue
            if norm not in out:
                out.append(norm)
    return out


def select_conversations(data: list, conversation: str | None) -> list[tuple[int, dict]]:
    samples = list(enumerate(data))
    if conversation is None:
        return samples
    names = [str(s.get("sample_id", i + 1)) if isinstance(s, dict) else str(i + 1) for i, s in samples]
    if conversation in names:
        return [samples[names.index(conversation)]]
    if conversation.isdigit() and 1 <= int(conversation) <= len(samples):
        return [samples[int(conversation) - 1]]
    raise UnknownNameError(
        f"no conversation {conversation!r}: give a sample_id or a position 1..{len(samples)}; "
        f"sample_ids: {', '.join(names)}"
    )


def import_locomo(
    file: str | Path,
    out: str | Path,
    *,
    conversation: str | None = None,
    granularity: str = DEFAULT_GRANULARITY,
    replace: bool = False,
) -> ImportResult:
    """Write the LoCoMo file (all conversations, or one) as a dataset folder ``out`` (``replace``:
    an earlier import there is replaced, ``benchmark_io.check_replaceable``)."""
    if granularity not in GRANULARITIES:
        raise InputError(f"--granularity: {granularity!r} is not one of {', '.join(GRANULARITIES)}")
    data = read_json_file(file, "LoCoMo")
    if not isinstance(data, list):
        raise InputError(f"{file}: expected a JSON list of conversations, got {type(data).__name__}")
    log = ImportLog({name: Counter() for name in CATEGORIES.values()})
    memories: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    chosen = select_conversations(data, conversation)
    for position, sample in chosen:
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            log.skip(f"[{position}]", "conversation without a 'conversation' object", shape(sample))
            continue
        _import_sample(sample, position, granularity, log, memories, questions)
    path = Path(file)
    meta = {
        "name": path.stem if conversation is None else f"{path.stem}-{conversation}",
        "reference_date": iso(max([m["_when"] for m in memories] + [q["_when"] for q in questions]))
        if memories
        else "1970-01-01",
        "language": "en",
        "description": f"LoCoMo ({path.name}): {counted(len(chosen), 'conversation')}, "
        f"{granularity} granularity; "
        f"{counted(len(memories), 'memory')}, {counted(len(questions), 'question')}",
        "provenance": f"{path.name} (sha256 {file_sha256(path)[:16]}), imported by memlab import-locomo",
        "date_prefix": False,
        "benchmark": {"name": "locomo", "granularity": granularity, "conversation": conversation},
    }
    for row in memories + questions:
        row.pop("_when")
    return write_benchmark(out, meta, memories, questions, log, replace=replace)


def _import_sample(sample, position, granularity, log, memories, questions) -> None:
    sid = str(sample.get("sample_id", f"sample{position + 1}"))
    conv = sample["conversation"]
    sessions: dict[int, tuple[datetime, list]] = {}
    for key, turns in conv.items():
        m = _SESSION.match(key)
        if m is None or not isinstance(turns, list):
            continue
        try:
            when = parse_session_date(conv.get(f"{key}_date_time"))
        except InputError as e:
            log.skip(f"{sid} {key}", f"session date unreadable: {e}")
            continue
        sessions[int(m[1])] = (when, turns)
    known: set[str] = set()
    for _, turns in sessions.values():
        for t in turns:
            if isinstance(t, dict) and isinstance(t.get("dia_id"), str):
                known.add(t["dia_id"])
    cites: dict[str, list[str]] = {}  # dialogue id -> memory ids that hold it
    order: dict[str, tuple[int, datetime]] = {}
    for n in sorted(sessions):
        when, turns = sessions[n]
        if granularity == "turn":
            rows = _turn_memories(sid, turns, log)
        elif granularity == "session":
            rows = _summary_memories(sid, n, turns, sample.get("session_summary"), log)
        else:
            rows = _observation_memories(sid, n, sample.get("observation"), known, log)
        for mid, text, dia_ids in rows:
            order[mid] = (len(memories), when)
            memories.append(
                {
                    "id": mid,
                    "date": iso(when),
                    "text": bounded(text, mid, "memory text", log),
                    "provenance": "imported",
                    "group": sid,
                    "_when": when,
                }
            )
            for d in dia_ids:
                cites.setdefault(d, []).append(mid)
    if not sessions:
        log.skip(sid, "no session with turns", f"conversation: {shape(conv)}")
        return
    asked = max(when for when, _ in sessions.values())
    qa = sample.get("qa") if isinstance(sample.get("qa"), list) else []
    if not isinstance(sample.get("qa"), list):  # a renamed or reshaped qa: its questions, said
        log.skip(sid, "no qa list of questions", f"qa: {shape(sample.get('qa'))}")
    for i, item in enumerate(qa):
        where = f"{sid} qa[{i}]"
        cat_id = item.get("category") if isinstance(item, dict) else None
        category = CATEGORIES.get(cat_id, f"unknown ({cat_id})") if isinstance(cat_id, int) else "unknown"
        if not isinstance(item, dict) or cat_id not in CATEGORIES:
            log.reject(category, where, "unknown category", shape(cat_id if isinstance(item, dict) else item))
            continue
        text = item.get("question")
        if not isinstance(text, str) or not text.strip():
            log.reject(category, where, "no question text", f"question: {shape(text)}")
            continue
        if len(text.strip()) > MAX_TEXT:
            log.reject(category, where, f"question longer than {MAX_TEXT:,} characters", f"{len(text):,}")
            continue
        note = f"LoCoMo category {cat_id} ({category})" + "".join(
            f"; {k}: {item[k]}" for k in ("answer", "adversarial_answer") if k in item
        )
        note = bounded(note, where, "note (the answers)", log)
        qid = f"{sid}:qa{i}"
        if cat_id == 5:
            labels = {"kind": "nohit", "relevant": [], "current": None, "stale": []}
        else:
            ids = evidence_ids(item.get("evidence", []), where, known, log)
            if not ids:
                renamed = "evidence" not in item  # a file of another shape: its keys said
                log.reject(category, where, "no evidence dialogue id", shape(item) if renamed else "")
                continue
            held = list(dict.fromkeys(mid for d in ids for mid in cites.get(d, [])))
            if not held:
                log.reject(category, where, f"no {granularity} holds its evidence", ", ".join(ids))
                continue
            evidence = [Evidence(m, order[m][1], order[m][0]) for m in held]
            labels = time_labels(text, asked, evidence) if cat_id == 2 else hit_labels(evidence)
        log.kept(category, labels["kind"])
        # the reference answer, for the token F1 of ``memlab answer`` (adversarial ones have none)
        reference = item.get("answer")
        answer = (
            {"answer": bounded(str(reference).strip(), where, "answer", log)}
            if reference is not None and str(reference).strip()
            else {}
        )
        row = question_row(qid, text.strip(), asked, labels, note, category, [sid])
        questions.append({**row, **answer, "_when": asked})


def _turn_memories(sid: str, turns: list, log: ImportLog):
    for t in turns:
        if not isinstance(t, dict):
            log.skip(sid, "turn is not an object", shape(t))
            continue
        dia, text, speaker = t.get("dia_id"), t.get("text"), t.get("speaker")
        if not isinstance(dia, str) or not isinstance(text, str) or not text.strip():
            shaped = isinstance(dia, str) and isinstance(text, str)  # an empty text: said plainly
            log.skip(f"{sid} {dia}", "turn without dia_id or text", "" if shaped else shape(t))
            continue
        body = f"{speaker}: {text.strip()}" if isinstance(speaker, str) else text.strip()
        caption = t.get("blip_caption")
        if isinstance(caption, str) and caption.strip():
            body += f" [shares a photo: {caption.strip()}]"
        yield f"{sid}:{dia}", body, [dia]


def _observation_memories(sid: str, n: int, observations: Any, known: set[str], log: ImportLog):
    session = observations.get(f"session_{n}_observation") if isinstance(observations, dict) else None
    if not isinstance(session, dict):
        detail = "" if isinstance(observations, dict) else f"observation: {shape(observations)}"
        log.skip(f"{sid} session_{n}", "session without observations", detail)
        return
    k = 0
    for speaker, items in session.items():
        for item in items if isinstance(items, list) else []:
            where = f"{sid} session_{n}_observation {speaker}"
            pair = isinstance(item, list) and len(item) == 2
            if not (pair and isinstance(item[0], str) and item[0].strip()):
                log.skip(where, "observation is not [text, evidence]", shape(item))
                continue
            k += 1
            dia_ids = evidence_ids(item[1], f"{where} #{k}", known, log)
            yield f"{sid}:D{n}:o{k}", item[0].strip(), dia_ids


def _summary_memories(sid: str, n: int, turns: list, summaries: Any, log: ImportLog):
    """Session ``n``'s summary, holding every dialogue turn of the session."""
    summary = summaries.get(f"session_{n}_summary") if isinstance(summaries, dict) else None
    if not isinstance(summary, str) or not summary.strip():
        detail = "" if isinstance(summaries, dict) else f"session_summary: {shape(summaries)}"
        log.skip(f"{sid} session_{n}", "session without a summary", detail)
        return
    dia_ids = [t["dia_id"] for t in turns if isinstance(t, dict) and isinstance(t.get("dia_id"), str)]
    yield f"{sid}:S{n}", summary.strip(), dia_ids
