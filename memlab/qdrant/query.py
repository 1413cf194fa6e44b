"""The retrieval spec as the Qdrant REST query a user pastes, for their own collection.

``spec_body`` writes the whole spec as the JSON body of ``POST /collections/NAME/points/query``:
a prefetch of ``candidates`` nearest neighbours (only memories written by the query time: a
range filter on the date; with an MMR stage, ``mmr_pool`` of them diversified by Qdrant's
``mmr`` down to ``candidates``: ``mmr_prefetch``), re-scored by the decay formula, with
``score_threshold`` and ``limit = inject``. Everything memlab runs natively (local mode, a
server, the real engine in the test tier) starts from this one body, so what is tested is what
is printed.

The collection's names come from a ``CollectionSchema``: the payload field holding the date,
its format (``iso``: RFC 3339 strings, read with ``datetime_key``; ``epoch-s`` or ``epoch-ms``:
numbers, decayed on the number itself, no datetime parsing of the payload), the named vector
(``using``) and the payload field holding the application's own memory id.

The decay's target is always a ``datetime`` expression, which Qdrant evaluates to epoch seconds
in float64; a numeric date is compared with it in seconds (``epoch-ms`` divided by 1000). A
numeric target would not do: Qdrant parses formula constants as float32, and near 2026 a
float32 epoch moves in 128-second steps (measured on the engine: scores off by up to 3e-5 for
epoch milliseconds). So ``scale`` is tau in seconds for every format.

Two values are left as placeholders unless given: the query vector (``"<query vector>"``) and
the query time (``"<query time>"`` as RFC 3339, the decay's target; for a numeric date also
``"<query time, epoch-s>"`` or ``"<query time, epoch-ms>"``, the filter's cut-off), filled by
``fill``. Qdrant decays on the absolute distance ``|date - target|``; the cut-off keeps
memories written after the query time out, as memlab's reference does (they do not exist yet
when the question is asked), so the distance is always the memory's age.

The threshold: Qdrant applies ``score_threshold`` to a formula query inclusively
(``score >= threshold``, in float32) from server v1.17.0 on (qdrant PR #8097); older servers
ignore it there, so ``python_snippet`` also filters client-side.
"""

from __future__ import annotations

import json
import pprint
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from memlab.core.errors import InputError
from memlab.core.memory_text import SNIPPET as ESCAPE_SNIPPET
from memlab.core.registry import lookup
from memlab.core.spec import COMBINES, DECAYS, MIDPOINT, SECONDS_PER_DAY, RetrievalSpec
from memlab.datasets.payload import MISSING, payload_at
from memlab.datasets.records import DATE_FORMATS

QUERY_VECTOR = "<query vector>"
QUERY_TIME = "<query time>"  # RFC 3339, UTC, whole seconds
MIN_SERVER_VERSION = "1.17.0"  # the first Qdrant that applies score_threshold to formula queries


def rfc3339(when: datetime) -> str:
    """The instant in UTC; a naive datetime is taken as UTC, as everywhere in memlab."""
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    # isoformat pads the year to four digits (strftime's %Y does not, before 1000)
    return when.replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class CollectionSchema:
    """The names of a Qdrant collection's fields, as the application wrote them."""

    date_field: str = "date"
    date_format: str = "iso"
    vector_name: str | None = None  # None: the collection's one unnamed vector
    id_field: str = "memory_id"  # payload field with the application's own memory id
    text_field: str = "text"  # payload field with the memory's text
    # payload field naming the memory's user (tenant), for ``memlab.Retriever``'s ``user=``;
    # None: the collection holds one user's memories, or the filter names its field itself
    user_field: str | None = None

    def __post_init__(self) -> None:
        lookup(DATE_FORMATS, self.date_format, "date format")
        for name in ("date_field", "id_field", "text_field"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise InputError(f"CollectionSchema.{name} must be a payload field name")
        if self.user_field is not None and (not isinstance(self.user_field, str) or not self.user_field):
            raise InputError("CollectionSchema.user_field must be a payload field name or None")
        if self.vector_name == "":
            object.__setattr__(self, "vector_name", None)

    @classmethod
    def from_dataset(cls, dataset: Any) -> CollectionSchema:
        """The schema an imported dataset records (``dataset.json``: ``qdrant``); else the default."""
        meta = getattr(dataset, "qdrant", None) or {}
        return cls(
            date_field=meta.get("date_field", "date"),
            date_format=meta.get("date_format", "iso"),
            vector_name=meta.get("vector_name"),
            id_field=meta.get("id_field") or "memory_id",
            text_field=meta.get("text_field") or "text",
            user_field=meta.get("user_field"),
        )

    def read(self, payload: Mapping[str, Any], name: str) -> Any:
        """The value of payload field ``name``, read as the importer reads it
        (``memlab.datasets.payload.payload_at``): a Qdrant key, so ``metadata.user_id`` reaches
        into the object ``metadata`` as Qdrant's filters and formulas read it; the text field may
        also reach into a JSON string (LlamaIndex's ``_node_content.text``). Raises ``KeyError``
        when the payload has no such field."""
        value = payload_at(payload, name, json_strings=name == self.text_field)
        if value is MISSING:
            raise KeyError(name)
        return value

    def date_of(self, value: Any) -> datetime:
        """A payload date, written in this schema's format, as an aware UTC datetime (the
        importer's reader, ``memlab.datasets.records.parse_instant``); a value that is none is
        an ``InputError`` saying what it expected."""
        from memlab.datasets.records import parse_instant

        return parse_instant(value, self.date_format)

    @property
    def numeric(self) -> bool:
        return DATE_FORMATS[self.date_format].numeric

    @property
    def index_type(self) -> str:
        """The payload index the date needs (``order_by`` requires a range index)."""
        return "integer" if self.numeric else "datetime"

    def date_value(self, when: datetime) -> str | int:
        """An instant as this collection stores it, to the whole second (ms for ``epoch-ms``)."""
        when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
        if not self.numeric:
            return rfc3339(when)
        return int(when.replace(microsecond=0).timestamp()) * int(DATE_FORMATS[self.date_format].units)

    @property
    def time_placeholder(self) -> str:
        """The placeholder of the query time where it is written in the date's own format."""
        return QUERY_TIME if not self.numeric else f"<query time, {self.date_format}>"

    def date_seconds(self) -> Any:
        """The memory's date as a formula expression in epoch seconds (numeric) or a datetime."""
        if not self.numeric:
            return {"datetime_key": self.date_field}
        if self.date_format == "epoch-s":
            return self.date_field
        return {"div": {"left": self.date_field, "right": 1000.0}}


DEFAULT_SCHEMA = CollectionSchema()  # memlab's own: date (RFC 3339), memory_id, one unnamed vector


def decay_expression(spec: RetrievalSpec, schema: CollectionSchema, at: datetime | None) -> dict[str, Any]:
    """The spec's decay (``DECAYS[spec.decay].qdrant``, e.g. ``exp_decay``) of the memory's date
    around the query time ``at`` (None: the placeholder): 1 at distance 0, 1/e at tau, the
    distance in seconds."""
    target = {"datetime": QUERY_TIME if at is None else rfc3339(at)}
    params = {
        "x": schema.date_seconds(),
        "target": target,
        "scale": spec.tau_days * SECONDS_PER_DAY,
        "midpoint": MIDPOINT,
    }
    return {DECAYS[spec.decay].qdrant: params}


def formula(spec: RetrievalSpec, schema: CollectionSchema, at: datetime | None) -> dict[str, Any]:
    """The combine's formula around ``$score`` (``COMBINES[spec.combine].qdrant``): add
    ``$score + bonus * decay``, mult ``$score * (1 + bonus * decay)``, as memlab's rescore."""
    return COMBINES[spec.combine].qdrant(spec.bonus, decay_expression(spec, schema, at))


def not_after(schema: CollectionSchema, at: datetime | None) -> dict[str, Any]:
    """The condition ``date <= at``: memories written by the query time (None: the placeholder)."""
    cut = schema.time_placeholder if at is None else schema.date_value(at)
    return {"key": schema.date_field, "range": {"lte": cut}}


def spec_body(
    spec: RetrievalSpec,
    schema: CollectionSchema = DEFAULT_SCHEMA,
    vector: Sequence[float] | None = None,
    at: datetime | None = None,
    *,
    extra_conditions: Sequence[dict[str, Any]] = (),
    exact: bool = False,
    pool: int | None = None,
) -> dict[str, Any]:
    """The REST body of the spec. ``at``: the query time (None: the placeholder);
    ``extra_conditions``: more prefetch conditions (REST JSON); ``exact``: search without the
    HNSW index (``params.exact`` in the prefetch, where the vector search happens); ``pool``: the
    query of a spec followed by a rerank stage in the application (``memlab.core.rerank_stage``):
    the top ``pool`` by cosine, re-scored and all returned (prefetch and limit ``pool``, no
    ``score_threshold``: the stage thresholds the blended score)."""
    prefetch: dict[str, Any] = {
        "query": QUERY_VECTOR if vector is None else [float(v) for v in vector],
        "limit": spec.candidates if pool is None else pool,
        "filter": {"must": [not_after(schema, at), *extra_conditions]},
    }
    if schema.vector_name is not None:
        prefetch["using"] = schema.vector_name
    if exact:
        prefetch["params"] = {"exact": True}
    if spec.mmr:
        prefetch = mmr_prefetch(spec, schema, prefetch)
    if pool is not None:
        return {
            "prefetch": prefetch,
            "query": {"formula": formula(spec, schema, at)},
            "limit": pool,
            "with_payload": True,
        }
    return {
        "prefetch": prefetch,
        "query": {"formula": formula(spec, schema, at)},
        "score_threshold": spec.threshold,
        "limit": spec.inject,
        "with_payload": True,
    }


def mmr_prefetch(spec: RetrievalSpec, schema: CollectionSchema, pool: dict[str, Any]) -> dict[str, Any]:
    """The MMR stage around the nearest-neighbour prefetch: the pool (``mmr_pool`` nearest) and
    over it Qdrant's ``mmr`` picking ``candidates``, which the formula then re-scores.

    MMR sits in a prefetch WITH its own nested prefetch: there Qdrant runs it over the nested
    results (the shard's ``mmr_rescore``) and returns the picks with their cosine scores, the
    ``$score`` the formula adds the bonus to. A leaf prefetch holding an ``mmr`` query (no nested
    prefetch) runs only the nearest search of ``candidates_limit`` points and never diversifies
    (``leaf_source_from_scoring_query`` in Qdrant's ``planned_query.rs``); and MMR as the root
    query over a formula prefetch would rank by raw cosine again, dropping the bonus. So the
    bonus comes after MMR, as memlab's spec says."""
    stage: dict[str, Any] = {
        "prefetch": {**pool, "limit": spec.mmr_pool},
        "query": {
            "nearest": pool["query"],
            "mmr": {"diversity": spec.diversity, "candidates_limit": spec.mmr_pool},
        },
        "limit": spec.candidates,
    }
    if schema.vector_name is not None:
        stage["using"] = schema.vector_name
    return stage


def fill(
    body: Any,
    vector: Sequence[float] | None = None,
    at: datetime | None = None,
    schema: CollectionSchema | None = None,
) -> Any:
    """The body with its placeholders replaced: the query vector, and the query time written in
    the schema's date format."""
    schema = schema or CollectionSchema()
    if body == QUERY_VECTOR:
        if vector is None:
            raise InputError("the query has a query-vector placeholder: give the vector")
        return [float(v) for v in vector]
    if body in (QUERY_TIME, schema.time_placeholder):
        if at is None:
            raise InputError(f"the query has the placeholder {body!r}: give the query time")
        return rfc3339(at) if body == QUERY_TIME else schema.date_value(at)
    if isinstance(body, dict):
        return {k: fill(v, vector, at, schema) for k, v in body.items()}
    if isinstance(body, list):
        return [fill(v, vector, at, schema) for v in body]
    return body


def spec_query_json(
    spec: RetrievalSpec,
    vector: Sequence[float] | None = None,
    schema: CollectionSchema = DEFAULT_SCHEMA,
    at: datetime | None = None,
    exact: bool = False,
    conditions: Sequence[dict[str, Any]] = (),
    pool: int | None = None,
) -> str:
    """The REST body for ``POST /collections/{name}/points/query``, as printed; ``conditions``:
    the tenant filter's (``memlab.qdrant.sharding.Scope.conditions``), beside the date cut-off;
    ``pool``: the pool a rerank stage reranks (``spec_body``)."""
    body = spec_body(spec, schema, vector, at, extra_conditions=conditions, exact=exact, pool=pool)
    return json.dumps(body, indent=2, ensure_ascii=False)


class _Name:
    """A placeholder printed as a Python name in the snippet."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


def _as_python(body: Any, schema: CollectionSchema) -> Any:
    if body == QUERY_VECTOR:
        return _Name("vector")
    if body == QUERY_TIME:
        return _Name("at")
    if body == schema.time_placeholder:
        return _Name("cutoff")
    if isinstance(body, dict):
        return {k: _as_python(v, schema) for k, v in body.items()}
    if isinstance(body, list):
        return [_as_python(v, schema) for v in body]
    return body


def python_snippet(
    spec: RetrievalSpec,
    schema: CollectionSchema = DEFAULT_SCHEMA,
    at: datetime | None = None,
    exact: bool = False,
    conditions: Sequence[dict[str, Any]] = (),
    pool: int | None = None,
) -> str:
    """A ready qdrant-client function: the query vector and the query time in, the memories to
    inject out (best first); ``conditions`` as in ``spec_query_json``; ``pool``: the memories a
    rerank stage reranks instead (``spec_body``: no threshold, ``pool`` of them)."""
    body = spec_body(spec, schema, None, at, extra_conditions=conditions, exact=exact, pool=pool)
    body = pprint.pformat(_as_python(body, schema), width=96, sort_dicts=False)
    units = int(DATE_FORMATS[schema.date_format].units)
    cutoff = (
        f"\n    cutoff = int(now.timestamp()){' * 1000' if units != 1 else ''}  # the filter's cut-off, "
        f"{schema.date_format}"
        if schema.numeric
        else ""
    )
    mmr = f"; MMR diversity {spec.diversity:g} over {spec.mmr_pool}" if spec.mmr else ""
    frozen = (
        "" if at is None else f"\n    # frozen by --at: the query time is {rfc3339(at)}, whatever `now` is"
    )
    tail = (
        f"""
    # Qdrant >= {MIN_SERVER_VERSION} keeps score >= threshold (float32) itself; older servers ignore
    # score_threshold in formula queries, so the same inclusive rule is applied here too
    return [p for p in points if np.float32(p.score) >= np.float32(THRESHOLD)]"""
        if pool is None
        else """
    # the pool of the rerank stage: the application scores each point by its reranker, blends,
    # thresholds and injects (memlab spec prints the stage)
    return points"""
    )
    return f'''import re
import unicodedata
from datetime import datetime, timezone

import numpy as np
from qdrant_client import QdrantClient, models

THRESHOLD = {spec.threshold!r}
# memlab's escape (memlab.core.memory_text): put a memory's text into a <retrieved_memory> prompt
# block only through escape_memory, so that no memory can close the block or start its own line
{ESCAPE_SNIPPET}

def recall(client: QdrantClient, collection: str, vector, now: datetime | None = None):
    """The memories memlab's tuned spec injects, best first (decay={spec.decay},
    combine={spec.combine}, bonus={spec.bonus:g}, tau={spec.tau_days:g} days{mmr}).
    ``now``: the query time (default: now, UTC)."""
    now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).replace(microsecond=0)
    at = now.isoformat().replace("+00:00", "Z")  # RFC 3339 in any year; the decay's target{cutoff}{frozen}
    vector = [float(v) for v in vector]
    request = models.QueryRequest.model_validate(
{_indent(body, 8)}
    )
    points = client.query_points(
        collection,
        prefetch=request.prefetch,
        query=request.query,
        score_threshold=request.score_threshold,
        limit=request.limit,
        with_payload=True,
    ).points{tail}
'''


def _indent(text: str, n: int) -> str:
    return "\n".join(" " * n + line for line in text.splitlines())


def filter_index(field: str, kind: str) -> dict[str, Any]:
    """The payload index a tenant filter's field needs: ``keyword`` (marked ``is_tenant``, so
    Qdrant stores each tenant's points together) or ``integer``."""
    if kind == "keyword":
        return {"field_name": field, "field_schema": {"type": "keyword", "is_tenant": True}}
    return {"field_name": field, "field_schema": kind}


def setup_text(
    schema: CollectionSchema, collection: str = "NAME", filters: dict[str, str] | None = None
) -> str:
    """The collection setup the query relies on: the payload index on the date, of its type, and
    one on each tenant filter's field (``filters``: field -> ``keyword`` or ``integer``)."""
    index = {"field_name": schema.date_field, "field_schema": schema.index_type}
    kind = schema.index_type.upper()
    vector = (
        f"the named vector {schema.vector_name!r} (the query's `using`)"
        if schema.vector_name
        else "the collection's unnamed vector"
    )
    return "\n".join(
        [
            f"# the query searches {vector} and reads the date from payload field "
            f"{schema.date_field!r}: {DATE_FORMATS[schema.date_format].written}",
            f"# Qdrant >= {MIN_SERVER_VERSION} applies score_threshold to formula queries "
            "(older servers ignore it)",
            "# a range index on the date: order_by needs it (the rrf-time retriever); filters and the",
            "# formula read it faster",
            f"PUT /collections/{quote(collection, safe='')}/index",  # a name as a path segment
            json.dumps(index),
            *_filter_setup(collection, filters or {}, "rest"),
            "",
            "# the same with qdrant-client:",
            f"client.create_payload_index({collection!r}, {schema.date_field!r}, "
            f"field_schema=models.PayloadSchemaType.{kind})",
            *_filter_setup(collection, filters or {}, "python"),
        ]
    )


def _filter_setup(collection: str, filters: dict[str, str], form: str) -> list[str]:
    lines = []
    for field, kind in filters.items():
        if form == "rest":
            lines += [
                f"# the tenant filter matches {field!r} exactly: a {kind} index on it",
                f"PUT /collections/{quote(collection, safe='')}/index",
                json.dumps(filter_index(field, kind)),
            ]
        elif kind == "keyword":
            lines.append(
                f"client.create_payload_index({collection!r}, {field!r}, field_schema="
                "models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True))"
            )
        else:
            lines.append(
                f"client.create_payload_index({collection!r}, {field!r}, "
                "field_schema=models.PayloadSchemaType.INTEGER)"
            )
    return lines
