"""The real Qdrant engine in-process: a REST query body run on ``qdrant-edge-py``.

``qdrant-edge-py`` (PyPI; ``import qdrant_edge``) embeds Qdrant's own segment and shard crates:
the engine a server runs, without the REST layer. Its classes are its own (not
``qdrant_client.models``) and take no JSON, so this module is the one place memlab turns a REST
body (``POST /collections/NAME/points/query``, exactly what ``memlab spec`` prints, placeholders
filled by ``memlab.qdrant.query.fill``) into engine objects: ``to_edge``. Only what memlab's
queries use is converted (nearest, nearest with MMR, sparse, RRF, DBSF, order_by, formula
expressions, filters);
anything else is an error that names it.

Engine facts the test tier holds memlab to (``tests/test_qdrant_edge.py``): scores are float32;
a nearest search keeps ``score > score_threshold`` but a formula or fusion stage keeps
``score >= score_threshold``; ties come back in no defined order.

The engine is a base dependency (``memlab verify --edge-path`` runs the export on it without a
server), imported when first used.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memlab.core.errors import InputError
from memlab.qdrant.query import DEFAULT_SCHEMA, CollectionSchema
from memlab.qdrant.store import KEYWORD_VECTOR


def engine():
    """The qdrant_edge module (imported when first used)."""
    try:
        import qdrant_edge
    except ImportError:  # pragma: no cover - a base dependency: only a broken install lacks it
        raise InputError("Qdrant's engine needs qdrant-edge-py: pip install 'qdrant-edge-py>=0.9'") from None
    return qdrant_edge


def _as_list(x: Any) -> list:
    return x if isinstance(x, list) else [x]


# -- filters --------------------------------------------------------------------------------


def _range(r: dict[str, Any]):
    qe = engine()
    r = {k: v for k, v in r.items() if v is not None}
    if any(isinstance(v, str) for v in r.values()):
        return qe.RangeDateTime(**r)  # RFC 3339 strings: a datetime range
    return qe.RangeFloat(**{k: float(v) for k, v in r.items()})


def _match(m: dict[str, Any]):
    qe = engine()
    if "value" in m:
        if isinstance(m["value"], bool):  # qdrant-edge-py 0.9 reads a Python bool as the integer 1
            raise InputError("match on a boolean value is not converted (qdrant-edge-py reads it as 1)")
        return qe.MatchValue(m["value"])
    if "any" in m:
        return qe.MatchAny(m["any"])
    if "except" in m:
        return qe.MatchExcept(m["except"])
    if "text" in m:
        return qe.MatchText(m["text"])
    raise InputError(f"match {sorted(m)} is not converted")


def condition(c: dict[str, Any]):
    qe = engine()
    if any(k in c for k in ("must", "should", "must_not")):
        return filter_(c)
    if "key" in c:
        kw: dict[str, Any] = {}
        if c.get("match") is not None:
            kw["match"] = _match(c["match"])
        if c.get("range") is not None:
            kw["range"] = _range(c["range"])
        if c.get("is_empty") is not None:
            kw["is_empty"] = c["is_empty"]
        if c.get("is_null") is not None:
            kw["is_null"] = c["is_null"]
        return qe.FieldCondition(c["key"], **kw)
    if "has_id" in c:
        return qe.HasIdCondition(set(c["has_id"]))
    raise InputError(f"condition {sorted(c)} is not converted")


def filter_(f: dict[str, Any] | None):
    if f is None:
        return None

    def part(key: str):
        return [condition(x) for x in _as_list(f[key])] if f.get(key) is not None else None

    return engine().Filter(must=part("must"), should=part("should"), must_not=part("must_not"))


# -- formula expressions ------------------------------------------------------------------------

_NARY = ("sum", "mult", "max", "min")
_UNARY = ("neg", "abs", "sqrt", "exp", "ln", "log10")
_DECAY_SUFFIX = (
    "_decay"  # Qdrant's decay expressions: exp_decay, gauss_decay, lin_decay -> DecayKind.Exp, ...
)


def expression(x: Any):
    """A REST formula expression: a number, a variable (``$score`` or a payload key), or a
    one-key object (``sum``, ``mult``, ``datetime``, ``datetime_key``, ``<kind>_decay``, ...)."""
    qe = engine()
    E = qe.Expression
    if isinstance(x, bool):
        raise InputError("a boolean is not a formula expression")
    if isinstance(x, int | float):
        return E.Constant(float(x))
    if isinstance(x, str):
        return E.Variable(x)
    if not isinstance(x, dict) or len(x) != 1:
        raise InputError(f"formula expression {x!r} is not converted")
    ((k, v),) = x.items()
    if k in _NARY:
        return getattr(E, k.capitalize())([expression(e) for e in v])
    if k in _UNARY:
        return getattr(E, k.capitalize())(expression(v))
    if k == "div":
        return E.Div(expression(v["left"]), expression(v["right"]), v.get("by_zero_default"))
    if k == "pow":
        return E.Pow(expression(v["base"]), expression(v["exponent"]))
    if k == "datetime":
        return E.Datetime(v)
    if k == "datetime_key":
        return E.DatetimeKey(v)
    if k.endswith(_DECAY_SUFFIX) and hasattr(
        qe.DecayKind, kind := k.removesuffix(_DECAY_SUFFIX).capitalize()
    ):
        return E.Decay(
            getattr(qe.DecayKind, kind),
            x=expression(v["x"]),
            target=expression(v["target"]) if v.get("target") is not None else None,
            midpoint=v.get("midpoint"),
            scale=v.get("scale"),
        )
    return E.Condition(condition(x))  # a filter condition: 1.0 where it holds, else 0.0


# -- queries ----------------------------------------------------------------------------------


def query(q: Any, using: str | None):
    qe = engine()
    if q is None:
        return None
    if isinstance(q, str):
        raise InputError(f"the query holds the placeholder {q!r}: fill it first (memlab.qdrant.query.fill)")
    if isinstance(q, list):
        return qe.Query.Nearest([float(v) for v in q], using=using)
    if "indices" in q:
        return qe.Query.Nearest(
            qe.SparseVector(list(q["indices"]), [float(v) for v in q["values"]]), using=using
        )
    if "nearest" in q and q.get("mmr") is not None:
        return _mmr(q["nearest"], q["mmr"], using)
    if "nearest" in q:
        return query(q["nearest"], using)
    if "fusion" in q:
        return qe.Fusion.Rrf(k=2) if q["fusion"] == "rrf" else qe.Fusion.Dbsf()  # the server's k = 2
    if "rrf" in q:
        return qe.Fusion.Rrf(k=q["rrf"].get("k") or 2, weights=q["rrf"].get("weights"))
    if "order_by" in q:
        ob = q["order_by"]
        if isinstance(ob, str):
            return qe.OrderBy(ob)
        direction = {"asc": qe.Direction.Asc, "desc": qe.Direction.Desc}.get(ob.get("direction"))
        return qe.OrderBy(ob["key"], direction=direction, start_from=ob.get("start_from"))
    if "formula" in q:
        return qe.Formula(expression(q["formula"]), defaults=q.get("defaults") or None)
    raise InputError(f"query {sorted(q)} is not converted")


def _mmr(vector: Any, mmr: dict[str, Any], using: str | None):
    """``{"nearest": v, "mmr": {"diversity", "candidates_limit"}}`` as the engine's ``Mmr``,
    which takes Qdrant's internal ``lambda``: ``1 - diversity`` in float32, as the server derives
    it (its default diversity 0.5; candidates_limit defaults to the query's limit there, and is
    required here)."""
    import numpy as np

    if not isinstance(vector, list):
        raise InputError("mmr needs a dense query vector (fill the placeholder first)")
    if mmr.get("candidates_limit") is None:
        raise InputError("mmr: give candidates_limit (the engine has no default for it)")
    diversity = 0.5 if mmr.get("diversity") is None else mmr["diversity"]
    lam = float(np.float32(1.0) - np.float32(diversity))
    return engine().Mmr([float(v) for v in vector], lam, int(mmr["candidates_limit"]), using=using)


def _params(p: dict[str, Any] | None):
    if not p:
        return None
    return engine().SearchParams(hnsw_ef=p.get("hnsw_ef"), exact=bool(p.get("exact", False)))


def prefetch(p: dict[str, Any]):
    return engine().Prefetch(
        limit=p.get("limit", 10),
        query=query(p.get("query"), p.get("using")),
        prefetches=[prefetch(x) for x in _as_list(p["prefetch"])] if p.get("prefetch") else None,
        params=_params(p.get("params")),
        filter=filter_(p.get("filter")),
        score_threshold=p.get("score_threshold"),
    )


def to_edge(body: dict[str, Any]):
    """A REST query body as the engine's ``QueryRequest`` (REST defaults: limit 10, no payload)."""
    unknown = sorted(set(body) - _BODY_KEYS)
    if unknown:
        raise InputError(f"query body keys {unknown} are not converted")
    return engine().QueryRequest(
        limit=body.get("limit", 10),
        offset=body.get("offset"),
        query=query(body.get("query"), body.get("using")),
        prefetches=[prefetch(x) for x in _as_list(body["prefetch"])] if body.get("prefetch") else None,
        filter=filter_(body.get("filter")),
        params=_params(body.get("params")),
        score_threshold=body.get("score_threshold"),
        with_payload=bool(body.get("with_payload", False)),
        with_vector=False,
    )


_BODY_KEYS = {
    "prefetch",
    "query",
    "using",
    "filter",
    "params",
    "score_threshold",
    "limit",
    "offset",
    "with_payload",
    "with_vector",
}


# -- shards ---------------------------------------------------------------------------------


def create_shard(
    path: str | Path, dim: int, schema: CollectionSchema = DEFAULT_SCHEMA, keyword: bool = False
):
    """A new cosine shard at ``path`` laid out like ``MemoryStore``'s collection: the dense
    vector (named as the schema says), the optional BM25 sparse vector, and the range index on
    the date (``order_by`` needs it)."""
    qe = engine()
    dense = qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)
    sparse = {KEYWORD_VECTOR: qe.EdgeSparseVectorParams()} if keyword else None
    shard = qe.EdgeShard.create(
        str(path), qe.EdgeConfig(vectors={schema.vector_name or "": dense}, sparse_vectors=sparse)
    )
    kind = {"datetime": qe.PayloadSchemaType.Datetime, "integer": qe.PayloadSchemaType.Integer}
    shard.update(qe.UpdateOperation.create_field_index(schema.date_field, kind[schema.index_type]))
    return shard


def upsert(
    shard,
    ids: Sequence[int],
    vectors: Sequence[Sequence[float]],
    payloads: Sequence[dict[str, Any]],
    schema: CollectionSchema = DEFAULT_SCHEMA,
    keyword_weights: Sequence[dict[int, float]] | None = None,
) -> None:
    qe = engine()
    points = []
    for i, pid in enumerate(ids):
        vector: dict[str, Any] = {schema.vector_name or "": [float(v) for v in vectors[i]]}
        if keyword_weights is not None:
            terms = sorted(keyword_weights[i])
            vector[KEYWORD_VECTOR] = qe.SparseVector(terms, [float(keyword_weights[i][t]) for t in terms])
        points.append(qe.Point(int(pid), vector, payloads[i]))
    shard.update(qe.UpdateOperation.upsert_points(points))


def query_points(shard, body: dict[str, Any]) -> list:
    """The engine's scored points of a filled REST body (with their payloads when the body asks
    for them: ``with_payload``), in the engine's order."""
    return list(shard.query(to_edge(body)))


def run(shard, body: dict[str, Any]) -> list[tuple[Any, float]]:
    """(point id, score) of a filled REST body, in the engine's order."""
    return [(p.id, float(p.score)) for p in query_points(shard, body)]
