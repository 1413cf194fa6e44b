"""Memories in Qdrant, and the retrieval spec as one native Qdrant query.

Local mode (``":memory:"``) by default, ``path=`` to persist, ``url=`` for a Qdrant server.
Cosine distance; each point's payload holds the memory id, its text and its date, under the
names and in the date format of a ``CollectionSchema`` (default: ``memory_id``, ``date`` as
RFC 3339), with the payload index on the date the engine needs for ``order_by``.

Two execution paths must agree (the tests hold them to 1e-6, on local mode and on the real
engine, ``tests/test_qdrant_edge.py``):
- raw top-k from Qdrant, then the Python re-rank of ``memlab.core.spec.retrieve``;
- ``spec_query``: the REST body of ``memlab.qdrant.query.spec_body`` (a prefetch of
  ``candidates`` raw neighbours written by the query time, re-scored by the decay formula, with
  ``score_threshold`` and ``limit = inject``), the query ``memlab spec`` prints.
"""

from __future__ import annotations

import secrets
import warnings
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import numpy as np
from qdrant_client import models

from memlab.core.errors import InputError
from memlab.core.spec import RetrievalSpec
from memlab.core.urls import redact
from memlab.datasets.schema import Dataset
from memlab.qdrant.client import open_client
from memlab.qdrant.query import (
    DEFAULT_SCHEMA,
    CollectionSchema,
    formula,
    not_after,
    rfc3339,
    spec_body,
    spec_query_json,
)

__all__ = ["KEYWORD_VECTOR", "CollectionSchema", "MemoryStore", "rfc3339", "spec_query", "spec_query_json"]

OWNER = {"created_by": "memlab"}  # the metadata of every collection memlab creates
KEYWORD_VECTOR = "bm25"  # the sparse vector holding each memory's BM25 term weights
DATE_FIELD = DEFAULT_SCHEMA.date_field


def _reference(spec: RetrievalSpec) -> datetime:
    if spec.reference_date is None:
        raise InputError("spec has no reference_date: call spec.with_reference(dataset.reference_date)")
    return spec.reference_date


def spec_query(
    spec: RetrievalSpec,
    vector: Sequence[float],
    *,
    schema: CollectionSchema = DEFAULT_SCHEMA,
    at: datetime | None = None,
    extra_conditions: Sequence[dict[str, Any]] = (),
    exact: bool = False,
) -> models.QueryRequest:
    """The whole spec as one query (``spec_body``, validated into qdrant-client's models): the
    query time ``at`` (default: the spec's reference date) is the decay's target and the
    prefetch's cut-off, where candidates are chosen."""
    body = spec_body(
        spec, schema, vector, at or _reference(spec), extra_conditions=extra_conditions, exact=exact
    )
    return models.QueryRequest.model_validate(body)


class MemoryStore:
    """One Qdrant collection holding a dataset's memories, under a ``CollectionSchema``."""

    def __init__(
        self,
        dim: int,
        *,
        collection: str = "memlab",
        path: str | None = None,
        url: str | None = None,
        recreate: bool = True,
        keyword: bool = False,
        schema: CollectionSchema = DEFAULT_SCHEMA,
    ):
        if path and url:
            raise InputError("give either a Qdrant path (local mode on disk) or a url, not both")
        self.client = open_client(path=path, url=url)
        self.collection = collection
        self.dim = dim
        self.schema = schema
        # a server's HNSW index is approximate: memlab's measurements ask it for exact search
        # (local mode always searches exactly, and warns if asked)
        self.exact = models.SearchParams(exact=True) if url else None
        self.memory_ids: list[str] = []
        self.where = path or (redact(url) if url else ":memory:")
        if recreate and self.client.collection_exists(collection):
            if not self.created_by_memlab():
                self.client.close()
                raise InputError(
                    f"Qdrant collection {collection!r} in {self.where} was not created by memlab (its "
                    f"metadata lacks created_by: memlab): memlab never deletes or overwrites it; "
                    "choose another collection name or another store"
                )
            self.client.delete_collection(collection)
        if not self.client.collection_exists(collection):
            dense = models.VectorParams(size=dim, distance=models.Distance.COSINE)
            self.client.create_collection(
                collection,
                vectors_config={schema.vector_name: dense} if schema.vector_name else dense,
                # BM25 as a sparse dot product: memory-side term weights, a 0/1 query
                sparse_vectors_config={KEYWORD_VECTOR: models.SparseVectorParams()} if keyword else None,
                metadata=dict(OWNER),  # what lets memlab recreate it later, and nothing else
            )
            self.create_date_index()

    def created_by_memlab(self) -> bool:
        """The collection carries memlab's mark (``OWNER`` in its metadata): memlab made it."""
        meta = getattr(self.client.get_collection(self.collection).config, "metadata", None) or {}
        return all(meta.get(k) == v for k, v in OWNER.items())

    @classmethod
    def scratch(cls, dim: int, **kwargs: Any) -> MemoryStore:
        """A collection of memlab's own with a name no one else has (``memlab-scratch-<hex>``), for
        scoring in a store the user names (``--qdrant-path``, ``--qdrant-url``): whatever the
        store holds is never touched. ``drop()`` removes it afterwards."""
        return cls(dim, collection=f"memlab-scratch-{secrets.token_hex(8)}", recreate=False, **kwargs)

    def drop(self) -> None:
        """Remove this collection (memlab's own: ``created_by_memlab``) and close the client."""
        try:
            if self.client.collection_exists(self.collection) and self.created_by_memlab():
                self.client.delete_collection(self.collection)
        finally:
            self.client.close()

    def create_date_index(self) -> None:
        """The range index on the date the real engine needs for ``order_by`` (the time route)
        and reads filters through; local mode has no payload indexes and says so, quietly here."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Payload indexes have no effect in the local Qdrant")
            self.client.create_payload_index(
                self.collection,
                self.schema.date_field,
                field_schema=models.PayloadSchemaType(self.schema.index_type),
                wait=True,
            )

    @classmethod
    def from_dataset(
        cls, dataset: Dataset, vectors: np.ndarray, *, lang: str = "en", scratch: bool = False, **kwargs: Any
    ) -> MemoryStore:
        store = (cls.scratch if scratch else cls)(int(vectors.shape[1]), **kwargs)
        try:
            store.add(
                ids=list(dataset.memory_ids),
                vectors=vectors,
                dates=[m.date for m in dataset.memories],
                texts=[m.text(lang) for m in dataset.memories],
            )
        except BaseException:
            if scratch:  # a scratch collection never outlives a failure
                store.drop()
            raise
        return store

    def payload(self, memory_id: str, when: datetime, text: str | None = None) -> dict[str, Any]:
        """A memory's payload as the schema names it."""
        s = self.schema
        return {
            s.id_field: memory_id,
            s.date_field: s.date_value(when),
            **({s.text_field: text} if text else {}),
        }

    def add(
        self,
        ids: Sequence[str],
        vectors: np.ndarray,
        dates: Sequence[datetime],
        texts: Sequence[str] | None = None,
        keyword_weights: Sequence[dict[int, float]] | None = None,
    ) -> None:
        """``keyword_weights``: per memory, {term id: BM25 weight} (``KeywordIndex.sparse_vectors``)."""
        if vectors.shape != (len(ids), self.dim):
            raise InputError(f"vectors have shape {vectors.shape}, expected ({len(ids)}, {self.dim})")
        start = len(self.memory_ids)
        name = self.schema.vector_name or ""
        points = []
        for i in range(len(ids)):
            dense = vectors[i].astype(float).tolist()
            vector: Any = {name: dense} if name else dense
            if keyword_weights is not None:
                terms = sorted(keyword_weights[i])
                vector = {
                    name: dense,
                    KEYWORD_VECTOR: models.SparseVector(
                        indices=terms, values=[keyword_weights[i][t] for t in terms]
                    ),
                }
            text = texts[i] if texts is not None else None
            points.append(
                models.PointStruct(id=start + i, vector=vector, payload=self.payload(ids[i], dates[i], text))
            )
        self.client.upsert(self.collection, points=points, wait=True)
        self.memory_ids.extend(ids)

    def raw_top_k(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(memory index, raw cosine) of the ``k`` nearest memories, nearest first."""
        res = self.client.query_points(
            self.collection,
            query=np.asarray(vector, dtype=float).tolist(),
            using=self.schema.vector_name,
            limit=k,
            search_params=self.exact,
            with_payload=False,  # the scores only: a payload per point costs a third of the time
        )
        return [(int(p.id), float(p.score)) for p in res.points]

    def score_table(self, query_vectors: np.ndarray, *, batch: int = 64) -> np.ndarray:
        """Raw cosine of every query against every stored memory (questions x memories), read
        back from Qdrant: ``batch`` queries a request, scores only. The independent check of
        ``memlab.core.vectors.cosine_table``, and how a store the user names is scored."""
        n = len(self.memory_ids)
        table = np.full((len(query_vectors), n), np.nan)
        for start in range(0, len(query_vectors), batch):
            requests = [
                models.QueryRequest(
                    query=np.asarray(vec, dtype=float).tolist(),
                    using=self.schema.vector_name,
                    limit=n,
                    params=self.exact,
                    with_payload=False,
                )
                for vec in query_vectors[start : start + batch]
            ]
            for qi, res in enumerate(self.client.query_batch_points(self.collection, requests), start):
                for p in res.points:
                    table[qi, int(p.id)] = p.score
        return table

    def run(self, body: dict[str, Any]) -> list[tuple[int, float]]:
        """(memory index, score) of a REST query body, run through qdrant-client."""
        return [(int(p.id), float(p.score)) for p in run_query(self.client, self.collection, body)]

    def spec_body(
        self, vector: np.ndarray, spec: RetrievalSpec, asked: datetime | None = None
    ) -> dict[str, Any]:
        """The REST body ``memlab spec`` prints for this store, filled with the vector and the
        query time (``asked``, else the spec's reference date)."""
        return spec_body(
            spec,
            self.schema,
            np.asarray(vector, dtype=float).tolist(),
            asked or _reference(spec),
            exact=self.exact is not None,
        )

    def query_spec(
        self, vector: np.ndarray, spec: RetrievalSpec, asked: datetime | None = None
    ) -> list[tuple[int, float]]:
        """The native path: (memory index, final score) of what the spec injects.

        ``asked``: when the question is asked. Ages count from then, and memories written after
        it are filtered out inside the prefetch, where candidates are chosen.
        """
        return self.run(self.spec_body(vector, spec, asked))


def query_arguments(body: dict[str, Any], *, with_payload: bool = False) -> dict[str, Any]:
    """A REST query body as the keyword arguments of qdrant-client's ``query_points`` (the sync
    and the async client take the same): ``with_payload`` False, the scores only, unless asked."""
    req = models.QueryRequest.model_validate(body)
    return {
        "prefetch": req.prefetch,
        "query": req.query,
        "query_filter": req.filter,
        "score_threshold": req.score_threshold,
        "limit": req.limit,
        "with_payload": with_payload,
    }


def run_query(
    client: Any, collection: str, body: dict[str, Any], *, with_payload: bool = False
) -> list[models.ScoredPoint]:
    """The points a REST query body returns (scores only, unless ``with_payload``), through
    qdrant-client: what ``memlab spec`` prints, run on memlab's collection or on the user's
    (``memlab verify``, ``memlab.Retriever``)."""
    return client.query_points(collection, **query_arguments(body, with_payload=with_payload)).points


def window_conditions(schema: CollectionSchema, start: date, end: date) -> list[dict[str, Any]]:
    """Memories dated on the calendar days ``start`` .. ``end`` (UTC), as REST conditions."""
    lo = datetime.combine(start, time(), tzinfo=UTC)
    hi = datetime.combine(end + timedelta(days=1), time(), tzinfo=UTC)
    return [{"key": schema.date_field, "range": {"gte": schema.date_value(lo), "lt": schema.date_value(hi)}}]


def gate_filter(store: MemoryStore, time_range: tuple[date, date] | None, at: datetime) -> dict[str, Any]:
    """The time gate as a payload filter (REST JSON): the named days, widened by a day on each
    side, once, when they hold no memory (counted in Qdrant); always the cut-off at ``at``."""
    cutoff = not_after(store.schema, at)
    if time_range is None:
        return {"must": [cutoff]}
    start, end = time_range
    gate = {"must": [cutoff, *window_conditions(store.schema, start, end)]}
    count = store.client.count(store.collection, count_filter=models.Filter.model_validate(gate), exact=True)
    if count.count == 0:
        wide = window_conditions(store.schema, start - timedelta(days=1), end + timedelta(days=1))
        gate = {"must": [cutoff, *wide]}
    return gate


def retriever_body(
    store: MemoryStore,
    retriever: Any,
    spec: RetrievalSpec,
    vector: Sequence[float],
    keyword_terms: Sequence[int] = (),
    *,
    rrf_k: float = 60,
    time_range: tuple[date, date] | None = None,
    asked: datetime | None = None,
) -> dict[str, Any]:
    """A ``memlab.studies.hybrid`` retriever as one native Qdrant query, as its REST body.

    Routes are prefetches with the gate's payload filter inside them (and the cut-off at the
    query time); RRF is Qdrant's ``rrf`` (its k is memlab's k + 1: Qdrant scores
    ``1 / (k + rank - 1)``); the recency bonus, threshold and inject limit are the spec's
    formula on top. The time route is the newest memories first (an ``order_by`` on the date,
    which needs the range index ``MemoryStore`` creates). Weighted fusion with min-max or z-score
    has no Qdrant counterpart (Qdrant fuses by RRF or DBSF); its reference path is ranx. Qdrant
    cuts and orders tied scores its own way (memlab keeps ties, ``memlab.retrieval.fusion``), so
    the two agree where scores differ. ``time_range`` is the gate's (start, end) days, both included.
    """
    if retriever.fusion == "weighted":
        raise InputError(
            f"retriever {retriever.name!r}: weighted fusion has no native Qdrant query; use ranx"
        )
    if retriever.fusion == "rrf" and rrf_k != int(rrf_k):
        raise InputError(f"Qdrant's RRF takes an integer k; got {rrf_k}")
    at = asked or _reference(spec)
    schema = store.schema
    flt = gate_filter(store, time_range if retriever.gate else None, at)
    vector_route: dict[str, Any] = {
        "query": np.asarray(vector, dtype=float).tolist(),
        "limit": spec.candidates,
        "filter": flt,
    }
    if schema.vector_name:
        vector_route["using"] = schema.vector_name
    if store.exact is not None:
        vector_route["params"] = {"exact": True}
    routes = {
        "vector": vector_route,
        "keyword": {
            "query": {"indices": list(keyword_terms), "values": [1.0] * len(keyword_terms)},
            "using": KEYWORD_VECTOR,
            "limit": spec.candidates,
            "filter": flt,
        },
        "time": {
            "query": {"order_by": {"key": schema.date_field, "direction": "desc"}},
            "limit": spec.candidates,
            "filter": flt,
        },
    }
    if retriever.fusion == "none":
        prefetch = routes["vector"]
    else:
        used = [routes[r] for r in retriever.routes if r != "keyword" or keyword_terms]
        prefetch = {
            "prefetch": used,
            "query": {"rrf": {"k": int(rrf_k) + 1}},
            "limit": spec.candidates * len(used),
        }
    return {
        "prefetch": prefetch,
        "query": {"formula": formula(spec, schema, at)},
        "score_threshold": spec.threshold,
        "limit": spec.inject,
    }


def retriever_query(store: MemoryStore, *args: Any, **kwargs: Any) -> list[tuple[int, float]]:
    """(memory index, final score) the retriever injects: ``retriever_body`` run on the store."""
    return store.run(retriever_body(store, *args, **kwargs))
