"""Memories in Qdrant, and the retrieval spec as one native Qdrant query.

Local mode (``":memory:"``) by default, ``path=`` to persist, ``url=`` for a Qdrant server.
Cosine distance; each point's payload holds the memory id, its text and its date (RFC 3339),
the date the recency bonus is computed from.

Two execution paths must agree (the tests hold them to 1e-6):
- raw top-k from Qdrant, then the Python re-rank of ``memlab.core.spec.retrieve``;
- ``spec_query``: a prefetch of ``candidates`` raw neighbours, re-scored by the formula
  ``$score + bonus * exp_decay(date)`` with ``score_threshold`` and ``limit = inject``.
``spec_query_json`` prints the same query for Qdrant's REST API, so a tuned spec goes into
production unchanged.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import numpy as np
from qdrant_client import models

from memlab.core.errors import InputError
from memlab.core.spec import SECONDS_PER_DAY, RetrievalSpec
from memlab.datasets.model import Dataset
from memlab.datasets.qdrant_import import open_client

DATE_FIELD = "date"
KEYWORD_VECTOR = "bm25"  # the sparse vector holding each memory's BM25 term weights
QUERY_VECTOR_PLACEHOLDER = "<query vector>"


def rfc3339(when: datetime) -> str:
    """The instant in UTC; a naive datetime is taken as UTC, as everywhere in memlab."""
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def spec_formula(spec: RetrievalSpec, date_field: str = DATE_FIELD) -> models.FormulaQuery:
    """``$score + bonus * exp(-|date - reference| / tau)`` as a Qdrant formula.

    Qdrant's ``exp_decay`` is ``exp(ln(midpoint) * |x - target| / scale)``; with midpoint 1/e and
    scale = tau in seconds it is exactly the spec's ``exp(-age_days / tau_days)``.
    """
    if spec.reference_date is None:
        raise InputError("spec has no reference_date: call spec.with_reference(dataset.reference_date)")
    decay = models.ExpDecayExpression(
        exp_decay=models.DecayParamsExpression(
            x=models.DatetimeKeyExpression(datetime_key=date_field),
            target=models.DatetimeExpression(datetime=rfc3339(spec.reference_date)),
            scale=spec.tau_days * SECONDS_PER_DAY,
            midpoint=math.exp(-1.0),
        )
    )
    return models.FormulaQuery(
        formula=models.SumExpression(sum=["$score", models.MultExpression(mult=[spec.bonus, decay])])
    )


def spec_query(
    spec: RetrievalSpec,
    vector: Sequence[float] | str,
    *,
    date_field: str = DATE_FIELD,
    prefetch_filter: models.Filter | None = None,
    exact: bool = False,
) -> models.QueryRequest:
    """The whole spec as one query: filters go inside the prefetch, where candidates are chosen.

    ``exact``: search without the HNSW index (memlab's measurements); the printed production
    query leaves it off.
    """
    params = models.SearchParams(exact=True) if exact else None
    return models.QueryRequest(
        prefetch=models.Prefetch(query=vector, limit=spec.candidates, filter=prefetch_filter, params=params),
        query=spec_formula(spec, date_field),
        score_threshold=spec.threshold,
        limit=spec.inject,
        with_payload=True,
    )


def spec_query_json(spec: RetrievalSpec, vector: Sequence[float] | None = None) -> str:
    """The REST body for ``POST /collections/{name}/points/query``."""
    request = spec_query(spec, [0.0] if vector is None else list(map(float, vector)))
    body: dict[str, Any] = request.model_dump(mode="json", exclude_none=True)
    body["query"].pop("defaults", None)  # empty in the spec; keeps the printed query minimal
    if vector is None:
        body["prefetch"]["query"] = QUERY_VECTOR_PLACEHOLDER
    return json.dumps(body, indent=2, ensure_ascii=False)


class MemoryStore:
    """One Qdrant collection holding a dataset's memories."""

    def __init__(
        self,
        dim: int,
        *,
        collection: str = "memlab",
        path: str | None = None,
        url: str | None = None,
        recreate: bool = True,
        keyword: bool = False,
    ):
        if path and url:
            raise InputError("give either a Qdrant path (local mode on disk) or a url, not both")
        self.client = open_client(path=path, url=url)
        self.collection = collection
        self.dim = dim
        # a server's HNSW index is approximate: memlab's measurements ask it for exact search
        # (local mode always searches exactly, and warns if asked)
        self.exact = models.SearchParams(exact=True) if url else None
        self.memory_ids: list[str] = []
        if recreate and self.client.collection_exists(collection):
            self.client.delete_collection(collection)
        if not self.client.collection_exists(collection):
            self.client.create_collection(
                collection,
                vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE),
                # BM25 as a sparse dot product: memory-side term weights, a 0/1 query
                sparse_vectors_config={KEYWORD_VECTOR: models.SparseVectorParams()} if keyword else None,
            )

    @classmethod
    def from_dataset(
        cls, dataset: Dataset, vectors: np.ndarray, *, lang: str = "en", **kwargs: Any
    ) -> MemoryStore:
        store = cls(int(vectors.shape[1]), **kwargs)
        store.add(
            ids=list(dataset.memory_ids),
            vectors=vectors,
            dates=[m.date for m in dataset.memories],
            texts=[m.text(lang) for m in dataset.memories],
        )
        return store

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
        points = [
            models.PointStruct(
                id=start + i,
                vector=(
                    vectors[i].astype(float).tolist()
                    if keyword_weights is None
                    else {
                        "": vectors[i].astype(float).tolist(),
                        KEYWORD_VECTOR: models.SparseVector(
                            indices=sorted(keyword_weights[i]),
                            values=[keyword_weights[i][t] for t in sorted(keyword_weights[i])],
                        ),
                    }
                ),
                payload={
                    "memory_id": ids[i],
                    DATE_FIELD: rfc3339(dates[i]),
                    **({"text": texts[i]} if texts is not None else {}),
                },
            )
            for i in range(len(ids))
        ]
        self.client.upsert(self.collection, points=points, wait=True)
        self.memory_ids.extend(ids)

    def raw_top_k(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(memory index, raw cosine) of the ``k`` nearest memories, nearest first."""
        res = self.client.query_points(
            self.collection,
            query=np.asarray(vector, dtype=float).tolist(),
            limit=k,
            search_params=self.exact,
        )
        return [(int(p.id), float(p.score)) for p in res.points]

    def score_table(self, query_vectors: np.ndarray) -> np.ndarray:
        """Raw cosine of every query against every stored memory (questions x memories)."""
        n = len(self.memory_ids)
        table = np.full((len(query_vectors), n), np.nan)
        for qi, vec in enumerate(query_vectors):
            for idx, score in self.raw_top_k(vec, n):
                table[qi, idx] = score
        return table

    def query_spec(
        self, vector: np.ndarray, spec: RetrievalSpec, asked: datetime | None = None
    ) -> list[tuple[int, float]]:
        """The native path: (memory index, final score) of what the spec injects.

        ``asked``: when the question is asked. Ages count from then, and memories written after
        it are filtered out inside the prefetch, where candidates are chosen.
        """
        if asked is not None:
            spec = replace(spec, reference_date=asked)
        req = spec_query(
            spec,
            np.asarray(vector, dtype=float).tolist(),
            prefetch_filter=asked_filter(asked),
            exact=self.exact is not None,
        )
        res = self.client.query_points(
            self.collection,
            prefetch=req.prefetch,
            query=req.query,
            score_threshold=req.score_threshold,
            limit=req.limit,
        )
        return [(int(p.id), float(p.score)) for p in res.points]


def _not_after(asked: datetime) -> models.FieldCondition:
    return models.FieldCondition(key=DATE_FIELD, range=models.DatetimeRange(lte=rfc3339(asked)))


def asked_filter(asked: datetime | None) -> models.Filter | None:
    """Memories written by the time the question is asked (None: no cut-off)."""
    return None if asked is None else models.Filter(must=[_not_after(asked)])


def window_filter(start: date, end: date, asked: datetime | None = None) -> models.Filter:
    """Memories dated on the calendar days ``start`` .. ``end`` (UTC), and not after ``asked``."""
    lo = datetime.combine(start, time(), tzinfo=UTC)
    hi = datetime.combine(end + timedelta(days=1), time(), tzinfo=UTC)
    window = models.FieldCondition(
        key=DATE_FIELD, range=models.DatetimeRange(gte=rfc3339(lo), lt=rfc3339(hi))
    )
    return models.Filter(must=[window] if asked is None else [window, _not_after(asked)])


def gate_filter(
    store: MemoryStore, time_range: tuple[date, date] | None, asked: datetime | None
) -> models.Filter | None:
    """The time gate as a payload filter: the named days; widened by a day on each side, once,
    when they hold no memory (counted in Qdrant); no range: only the ``asked`` cut-off."""
    if time_range is None:
        return asked_filter(asked)
    start, end = time_range
    gate = window_filter(start, end, asked)
    if store.client.count(store.collection, count_filter=gate, exact=True).count == 0:
        gate = window_filter(start - timedelta(days=1), end + timedelta(days=1), asked)
    return gate


def retriever_query(
    store: MemoryStore,
    retriever: Any,
    spec: RetrievalSpec,
    vector: Sequence[float],
    keyword_terms: Sequence[int] = (),
    *,
    rrf_k: float = 60,
    time_range: tuple[date, date] | None = None,
    asked: datetime | None = None,
) -> list[tuple[int, float]]:
    """A ``memlab.studies.hybrid`` retriever as one native Qdrant query: (memory index, final score) injected.

    Routes are prefetches with the gate's payload filter inside them; RRF is Qdrant's
    ``RrfQuery`` (its k is memlab's k + 1: Qdrant scores ``1 / (k + rank - 1)``); the recency
    bonus, threshold and inject limit are the spec's formula on top. The time route is the
    newest memories first (an ``order_by`` on the date). Weighted fusion with min-max or z-score
    has no Qdrant counterpart (Qdrant fuses by RRF or DBSF); its reference path is ranx. Qdrant
    cuts and orders tied scores its own way (memlab keeps ties, ``memlab.retrieval.fusion``), so the two
    agree where scores differ. ``time_range`` is the gate's (start, end) days, both included.
    """
    if retriever.fusion == "weighted":
        raise InputError(
            f"retriever {retriever.name!r}: weighted fusion has no native Qdrant query; use ranx"
        )
    if retriever.fusion == "rrf" and rrf_k != int(rrf_k):
        raise InputError(f"Qdrant's RRF takes an integer k; got {rrf_k}")
    if asked is not None:
        spec = replace(spec, reference_date=asked)
    flt = gate_filter(store, time_range if retriever.gate else None, asked)
    exact = store.exact
    routes = {
        "vector": models.Prefetch(
            query=np.asarray(vector, dtype=float).tolist(), limit=spec.candidates, filter=flt, params=exact
        ),
        "keyword": models.Prefetch(
            query=models.SparseVector(indices=list(keyword_terms), values=[1.0] * len(keyword_terms)),
            using=KEYWORD_VECTOR,
            limit=spec.candidates,
            filter=flt,
        ),
        "time": models.Prefetch(
            query=models.OrderByQuery(
                order_by=models.OrderBy(key=DATE_FIELD, direction=models.Direction.DESC)
            ),
            limit=spec.candidates,
            filter=flt,
        ),
    }
    if retriever.fusion == "none":
        prefetch = routes["vector"]
    else:
        used = [routes[r] for r in retriever.routes if r != "keyword" or keyword_terms]
        prefetch = models.Prefetch(
            prefetch=used,
            query=models.RrfQuery(rrf=models.Rrf(k=int(rrf_k) + 1)),
            limit=spec.candidates * len(used),
        )
    res = store.client.query_points(
        store.collection,
        prefetch=prefetch,
        query=spec_formula(spec),
        score_threshold=spec.threshold,
        limit=spec.inject,
    )
    return [(int(p.id), float(p.score)) for p in res.points]
