"""A memory's payload fields (``user_id``, ``agent_id``, a session...) and its Qdrant point id,
read from ``memories.jsonl``, and the tenant filter over them.

``payload`` is a JSON object of keyword values: each a non-empty string or an integer (a Qdrant
``keyword`` or ``integer`` payload index matches them exactly). One field holds one type across
the dataset (a filter matches one type). ``point_id`` is the memory's id in the Qdrant
collection (an unsigned integer, or a UUID string), which Qdrant's default sharding hashes;
``memlab import-qdrant`` writes both.

A filter is ``key=value`` conditions, all of which a memory must meet (``--filter``, repeatable):
the value is read as the field's type in the dataset, so ``user_id=7`` matches the integer 7
where the field holds integers. A filter naming a field no memory has is an error.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from memlab.core.errors import InputError

PayloadValue = str | int
MAX_POINT_ID = 2**64 - 1


def is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


MISSING = object()  # payload_at: no value at that path (a stored null is a value)


def payload_at(payload: Mapping[str, Any], path: str, *, json_strings: bool = False) -> Any:
    """The value at a payload path, or ``MISSING``. A dot steps into a nested object, as in
    Qdrant's own key paths (``metadata.date``: LangChain keeps its metadata there), so the same
    name filters and decays in the exported query. With ``json_strings``, a step may also go into
    a JSON object stored as a string: LlamaIndex keeps a node's text only inside its
    ``_node_content`` string (``_node_content.text``); Qdrant cannot read that, so only a text
    path may take it."""
    value: Any = payload
    for step in path.split("."):
        if json_strings and isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return MISSING
        if not isinstance(value, Mapping) or step not in value:
            return MISSING
        value = value[step]
    return value


def read_payload(value: Any) -> tuple[dict[str, PayloadValue], str | None]:
    """The payload mapping of a memory's ``payload`` field, and a problem (None: valid)."""
    if value is None:
        return {}, None
    if not isinstance(value, dict):
        return {}, f"expected a JSON object of keyword values, got {value!r}"
    for key, v in value.items():
        if not key.strip():
            return {}, "a field name must not be empty"
        if not (is_integer(v) or (isinstance(v, str) and v.strip())):
            return {}, f"{key}: expected a non-empty string or an integer (a keyword value), got {v!r}"
    return dict(value), None


def read_point_id(value: Any) -> tuple[int | str | None, str | None]:
    """A memory's Qdrant point id (an unsigned 64-bit integer, or a UUID as its canonical
    string), and a problem (None: valid)."""
    if value is None:
        return None, None
    if is_integer(value):
        if 0 <= value <= MAX_POINT_ID:
            return value, None
        return None, f"{value} is outside 0..2^64-1 (Qdrant's integer point ids)"
    if isinstance(value, str):
        try:
            return str(uuid.UUID(value)), None
        except ValueError:
            pass
    return None, f"expected an unsigned integer or a UUID (a Qdrant point id), got {value!r}"


def read_collection_fields(record: Any) -> tuple[dict[str, PayloadValue], int | str | None]:
    """A memory record's ``payload`` and ``point_id`` (``memlab.datasets.records.JsonRecord``),
    each problem reported at its line."""
    payload, bad = read_payload(record.obj.get("payload"))
    point_id, bad_id = read_point_id(record.obj.get("point_id"))
    for name, problem in (("payload", bad), ("point_id", bad_id)):
        if problem is not None:
            record.problem(name, problem)
    return payload, point_id


def collection_problems(memories: Sequence[Any], lines: Mapping[str, int]) -> list[str]:
    """Problems across memories, at the line that breaks the rule (``lines``: memory id -> line):
    a payload field holding strings in some memories and integers in others; two memories with
    one point id."""
    kinds: dict[str, str] = {}
    owner: dict[int | str, str] = {}
    out = []
    for m in memories:
        where = f"memories.jsonl:{lines.get(m.id, '?')}"
        for key, v in m.payload.items():
            kind = "an integer" if is_integer(v) else "a string"
            if kinds.setdefault(key, kind) != kind:
                out.append(
                    f"{where}: payload: {key}: {kind} where earlier ones hold {kinds[key]}: store one type"
                )
        if m.point_id is not None and owner.setdefault(m.point_id, m.id) != m.id:
            out.append(f"{where}: point_id: {m.point_id!r} is also memory {owner[m.point_id]!r}'s")
    return out


def field_type(memories: Sequence[Any], key: str) -> str | None:
    """``"keyword"`` or ``"integer"``: the type of payload field ``key`` (the Qdrant payload
    index it needs); None when no memory has it."""
    for m in memories:
        if key in m.payload:
            return "integer" if is_integer(m.payload[key]) else "keyword"
    return None


def parse_filters(texts: Sequence[str], memories: Sequence[Any]) -> tuple[tuple[str, PayloadValue], ...]:
    """``key=value`` texts as (key, value) conditions, each value of the field's type."""
    out: list[tuple[str, PayloadValue]] = []
    for text in texts:
        key, sep, value = str(text).partition("=")
        key = key.strip()
        if not sep or not key or not value:
            raise InputError(f"--filter {text!r}: expected key=value, e.g. user_id=alice")
        kind = field_type(memories, key)
        if kind is None:
            fields = sorted({k for m in memories for k in m.payload})
            raise InputError(
                f"--filter {text}: no memory has payload field {key!r}; "
                f"payload fields: {', '.join(fields) or 'none'}"
            )
        if kind == "integer":
            try:
                number = int(value)
            except ValueError:
                raise InputError(f"--filter {text}: {key} holds integers, got {value!r}") from None
            if not -(2**63) <= number < 2**63:
                raise InputError(f"--filter {text}: {number} is outside Qdrant's 64-bit integers")
            out.append((key, number))
        else:
            out.append((key, value))
    conditions = tuple(dict.fromkeys(out))
    kept = filter_mask(memories, conditions)
    if kept is not None and not kept.any():  # an empty store would measure nothing, silently
        held = {k: sorted({m.payload[k] for m in memories if k in m.payload}, key=str) for k, _ in conditions}
        shown = "; ".join(
            f"{k}: {', '.join(map(str, v[:10]))}{', …' if len(v) > 10 else ''}" for k, v in held.items()
        )
        raise InputError(
            f"--filter {filter_text(conditions)}: no memory of the {len(memories)} meets it "
            f"(values held: {shown})"
        )
    return conditions


def filter_mask(memories: Sequence[Any], conditions: Sequence[tuple[str, PayloadValue]]) -> np.ndarray | None:
    """(memories,) which memories meet every condition; None without conditions."""
    if not conditions:
        return None
    return np.array([all(m.payload.get(k) == v for k, v in conditions) for m in memories], dtype=bool)


def asked_by(questions: Sequence[Any], conditions: Sequence[tuple[str, PayloadValue]]) -> tuple[Any, ...]:
    """The questions a tenant filter keeps: those whose payload meets every condition, a field
    the question does not carry counting as met (a question of no tenant in particular)."""
    return tuple(q for q in questions if all(q.payload.get(k, v) == v for k, v in conditions))


def filter_text(conditions: Sequence[tuple[str, PayloadValue]]) -> str:
    return " and ".join(f"{k}={v}" for k, v in conditions)
