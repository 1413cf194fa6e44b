"""The tuned spec as a drop-in retriever for the user's own code: ``Retriever`` and, on
qdrant-client's ``AsyncQdrantClient``, ``AsyncRetriever``.

``Retriever.from_file("tuned.yaml", client=..., collection=...)`` reads what ``memlab sweep
--save`` wrote (``memlab.tuning.tuned.load_tuned``) and applies everything it records: the spec,
the tenant filter, the shard count it was tuned for and the model that made the scores (a text
is embedded by that model, ``memlab.embedding.embedder.make_embedder``, unless the caller gives
an embedder: a memlab ``Embedder``, through the user's embedding server if its options say so,
or any function from a text to its vector). ``retrieve(text or vector, asked=...)`` then:

1. embeds the text (a vector is taken as it is);
2. fills the query ``memlab spec`` prints (``memlab.qdrant.query.spec_body`` with the filter's
   conditions, then ``fill`` with the vector and the asking time: the same body, not a second
   builder) and runs it on every shard given (``memlab.qdrant.verify``'s stores: qdrant-client,
   local or a server; a qdrant-edge shard, Qdrant's own engine in-process);
3. merges the shards' lists as a Qdrant collection merges its shards' (each shard keeps its own
   top ``candidates``, threshold and ``inject``; the merge keeps the first ``inject`` of what they
   kept: ``memlab.core.shards``), reading back each memory's raw cosine from its final score and
   its date (``memlab.core.spec.unscore``), and orders them by memlab's one tie rule
   (``memlab.core.ranking.resort_order``: final score, then raw score, then the collection's
   order, point ids ascending), keeping those at or above the threshold (inclusive, in float32 as
   the engine compares: a server before Qdrant 1.17 ignores ``score_threshold`` in a formula
   query, so it is applied here too).

So the memories and their final scores are memlab's reference (``memlab.tuning.evaluate``) on
the same store, to the engine's float32 (``tests/test_retriever.py`` holds them equal on local
mode and on the real engine); where two memories tie exactly at the ``inject`` cut, which of them
a shard kept is the engine's choice.

The collection's names (where the payload keeps the text, the date and its format, the user;
which named vector) are a ``memlab.qdrant.query.CollectionSchema``, given as ``layout``: memlab's
own store layout by default, the frameworks' layouts in ``memlab.integrations``' other modules.
``AsyncRetriever`` shares every step but the I/O: the queries are awaited (the shards
concurrently) and the embedding and the reranker's requests run in a worker thread.

A tuned file with a rerank stage (``memlab rerank --save``: ``memlab.core.rerank_stage``) is run
to its end: the query is the pool query ``memlab spec`` exports for it (the top ``depth`` by
cosine, re-scored, no score threshold), every (question text, memory text) pair of the pool is
scored by the reranker the file names (``memlab.rerank``: its clients, its score cache, its
concurrent scoring; the server's URL is the caller's, ``reranker=``), and the memories are the
stage's reference order (``memlab.core.rerank_stage.stage_order`` over the pool in candidate
order, on ``blend_scores``), each with its reranker score and its blended score. The stage was
measured on one shard, and reranks the question's text: a sharded store and a bare query
vector are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from memlab.core.errors import InputError
from memlab.core.numbers import check_number
from memlab.core.ranking import candidate_lists, resort_order
from memlab.core.rerank_stage import RerankStage, blend_scores, stage_order
from memlab.core.spec import RetrievalSpec, age_days, unscore
from memlab.datasets.payload import PayloadValue, filter_text, is_integer
from memlab.qdrant.query import DEFAULT_SCHEMA, CollectionSchema, fill, spec_body
from memlab.qdrant.sharding import Scope
from memlab.qdrant.verify import (
    AsyncClientStore,
    ClientStore,
    CollectionFacts,
    EdgeStore,
    Hit,
    StoreBase,
    point_key,
)

Vector = Sequence[float]
EmbedFunction = Callable[[str], Vector]


@dataclass(frozen=True)
class RetrievedMemory:
    """One memory the spec injects: its point id, text and date (from the payload, as the layout
    names them), its raw cosine, its final score (after the recency bonus) and the whole payload;
    with a rerank stage, the reranker's score (``rerank``) and the stage's blended score
    (``blended``, the order and the threshold's), else None."""

    id: int | str
    text: str
    date: datetime
    raw: float
    final: float
    payload: dict[str, Any]
    rerank: float | None = None
    blended: float | None = None


def asked_time(asked: datetime | date | str | None) -> datetime:
    """When the question is asked, as an aware UTC datetime to the second (the query's decay
    target and cut-off): None is now; a date is its midnight (UTC); a text is ``YYYY-MM-DD`` or
    ISO 8601; a naive datetime is UTC, as everywhere in memlab."""
    from memlab.datasets.records import parse_datetime

    if asked is None:
        when = datetime.now(UTC)
    elif isinstance(asked, datetime):
        when = asked.replace(tzinfo=UTC) if asked.tzinfo is None else asked.astimezone(UTC)
    elif isinstance(asked, date):
        when = datetime(asked.year, asked.month, asked.day, tzinfo=UTC)
    elif isinstance(asked, str):
        try:
            when = parse_datetime(asked)
        except InputError as e:
            raise InputError(f"asked: {e}") from None
    else:
        raise InputError(f"asked: expected a datetime, a date or an ISO 8601 text, got {asked!r:.60}")
    return when.replace(microsecond=0)


def recorded_filter(texts: Sequence[str]) -> tuple[tuple[str, PayloadValue], ...]:
    """A tuned file's ``key=value`` filter texts as conditions: a value written as a whole number
    is the integer (as ``memlab.datasets.payload.parse_filters`` read it on a field of integers);
    a caller's ``filter`` naming the same value as text keeps it text."""
    out = []
    for text in texts:
        key, _, value = text.partition("=")
        whole = value.removeprefix("-").isdigit() and value.isascii()
        out.append((key, int(value) if whole else value))
    return tuple(out)


def checked_filter(given: Mapping[str, Any] | None, what: str) -> tuple[tuple[str, PayloadValue], ...]:
    """A caller's filter ({payload field: value}, each value a keyword: a non-empty text or an
    integer) as conditions."""
    if given is None:
        return ()
    if not isinstance(given, Mapping):
        raise InputError(f"{what}: expected a mapping of payload field to value, got {given!r:.60}")
    out = []
    for key, value in given.items():
        if not isinstance(key, str) or not key:
            raise InputError(f"{what}: {key!r:.60}: expected a payload field name")
        if not (is_integer(value) or (isinstance(value, str) and value)):
            raise InputError(f"{what}: {key}: expected a non-empty text or an integer, got {value!r:.60}")
        out.append((key, value))
    return tuple(out)


def merged_filter(
    fixed: Sequence[tuple[str, PayloadValue]], given: Sequence[tuple[str, PayloadValue]], label: str
) -> tuple[tuple[str, PayloadValue], ...]:
    """The filter a query runs with: the fixed one (the tuned file's, or the constructor's) and
    the call's; a call naming another value of a fixed field is refused, naming both (its spec
    was tuned on those memories, not these)."""
    out = dict(fixed)
    for key, value in given:
        if key in out and str(out[key]) != str(value):
            raise InputError(
                f"{label} is for {filter_text(fixed)}, and the call asks {key}={value}: its spec was "
                f"tuned on those memories (tune again with --filter {key}={value}, or leave {key} out)"
            )
        out[key] = value  # the caller's value, typed (a text "7" where the field holds texts)
    return tuple(out.items())


def imported_collection(tuned: Any) -> dict[str, Any]:
    """The collection a tuned file's dataset was imported from (``memlab import-qdrant`` records
    its name and layout in the folder's ``dataset.json``: ``qdrant``), when the file names the
    dataset by a folder that is there; else nothing (a packaged dataset, memlab's own layout)."""
    import json

    from memlab.core.textfiles import read_text
    from memlab.datasets.declared import declared_qdrant

    reference = tuned.dataset.get("reference")
    meta = Path(reference) / "dataset.json" if reference else None
    if meta is None or not meta.is_file():
        return {}
    try:
        block = json.loads(read_text(meta)).get("qdrant")
    except (OSError, ValueError, AttributeError) as e:
        raise InputError(f"{tuned.label}: its dataset's {meta}: not readable: {e}") from None
    problems: list[str] = []
    checked = declared_qdrant(block, problems)
    if problems:
        raise InputError(f"{tuned.label}: its dataset's {meta}: {problems[0]}")
    return checked or {}


def point_order(point_id: int | str) -> tuple[int, int | str]:
    """The collection's order of point ids, memlab's dataset order of a store: integers
    ascending, then UUIDs (as ``memlab import-qdrant`` reads a collection, by Qdrant's scroll)."""
    return (0, point_id) if isinstance(point_id, int) else (1, str(point_id))


def as_vector(value: Any, what: str) -> list[float]:
    try:
        vector = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{what}: expected a text or a sequence of numbers, got {value!r:.60}") from None
    if vector.ndim != 1 or vector.size == 0 or not np.isfinite(vector).all():
        raise InputError(f"{what}: expected one non-empty vector of finite numbers, got shape {vector.shape}")
    return vector.tolist()


class RetrieverCore:
    """Everything a retriever decides, with no I/O: the spec, the layout, the filter, the stores
    (one per shard), the embedding, the bodies and the merge. ``Retriever`` and ``AsyncRetriever``
    add the I/O."""

    def __init__(
        self,
        spec: RetrievalSpec,
        *,
        client: Any,
        collection: str | None = None,
        layout: CollectionSchema | None = None,
        embedder: Any = None,
        filter: Mapping[str, Any] | None = None,
        shards: int | None = None,
        model: Mapping[str, Any] | None = None,
        exact: bool | None = None,
        label: str = "the spec",
        fixed_filter: Sequence[tuple[str, PayloadValue]] = (),
        rerank: RerankStage | None = None,
        reranker: Any = None,
        rerank_cache: Any = None,
        rerank_concurrency: int = 1,
    ):
        if not isinstance(spec, RetrievalSpec):
            raise InputError(f"spec: expected a memlab.RetrievalSpec, got {type(spec).__name__}")
        if layout is not None and not isinstance(layout, CollectionSchema):
            raise InputError(
                f"layout: expected a memlab.qdrant.query.CollectionSchema, got {type(layout).__name__}"
            )
        self.spec = replace(spec, reference_date=None)  # the query time is each call's
        self.layout = layout or DEFAULT_SCHEMA
        self.label = label
        self.filter = merged_filter(fixed_filter, checked_filter(filter, "filter"), label)
        self.shards = shards  # the shard count the spec was tuned for (None: not recorded)
        self.model = dict(model) if model else None
        self.exact = exact
        self.stores = self.open_stores(client, collection)
        self.embed_function = self.embedding(embedder)
        self.facts: list[CollectionFacts] | None = None
        if rerank is not None and not isinstance(rerank, RerankStage):
            raise InputError(
                f"rerank: expected a memlab.core.rerank_stage.RerankStage, got {type(rerank).__name__}"
            )
        self.stage = rerank
        self.rerankers = StageReranker.of(rerank, reranker, rerank_cache, rerank_concurrency, label)

    # -- construction ----------------------------------------------------------------------------

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        *,
        client: Any,
        collection: str | None = None,
        embedder: Any = None,
        layout: CollectionSchema | None = None,
        **options: Any,
    ):
        """The retriever of a tuned-spec file (``memlab sweep --save``): its spec, its tenant
        filter (a call's ``filter`` may narrow it, never contradict it), its shard count and its
        model; for a dataset imported from a collection (``memlab import-qdrant``), that
        collection's name and layout, unless given; its rerank stage (``memlab rerank --save``),
        scored by ``reranker=`` (the server's base URL, a ``memlab.rerank.clients.RerankerConfig``
        or ``Reranker`` of the kind and model the file names), through ``rerank_cache=`` (a
        ``memlab.rerank.cache.ScoreCache``; None: no cache), ``rerank_concurrency`` requests at once;
        ``rerank=None`` runs the file's spec without its stage."""
        from memlab.tuning.tuned import load_tuned

        tuned = load_tuned(path)
        record = tuned.collection
        imported = imported_collection(tuned)
        if layout is None and imported:
            layout = CollectionSchema.from_dataset(SimpleNamespace(qdrant=imported))
        collection = collection or imported.get("collection")
        if record.get("shard_key"):
            options.setdefault("shards", None)  # one shard per key value: the store's own count
        else:
            options.setdefault("shards", record.get("shards") or 1)
        return cls(
            tuned.spec,
            client=client,
            collection=collection,
            layout=layout,
            embedder=embedder,
            model=tuned.model,
            label=tuned.label,
            fixed_filter=recorded_filter(record.get("filters") or ()),
            rerank=options.pop("rerank", tuned.rerank),
            **options,
        )

    @classmethod
    def from_spec(
        cls,
        spec: RetrievalSpec,
        *,
        client: Any,
        collection: str | None = None,
        layout: CollectionSchema | None = None,
        embedder: Any = None,
        filter: Mapping[str, Any] | None = None,
        **options: Any,
    ):
        """The retriever of a spec object; ``filter``: conditions every call keeps (as a tuned
        file's tenant filter); ``rerank``: a rerank stage after it (``reranker=`` as in
        ``from_file``)."""
        return cls(
            spec,
            client=client,
            collection=collection,
            layout=layout,
            embedder=embedder,
            label=options.pop("label", "the spec"),
            fixed_filter=checked_filter(filter, "filter"),
            **options,
        )

    async_client = False  # whether this retriever awaits its queries

    def open_stores(self, client: Any, collection: str | None) -> list[StoreBase]:
        """One store per shard: a qdrant-client client (sync or async, as the retriever is), a
        qdrant-edge shard, a memlab store, or a list of them (the shards of one collection)."""
        given = list(client) if isinstance(client, list | tuple) else [client]
        if not given:
            raise InputError("client: give a Qdrant client, a qdrant-edge shard, or a list of them (shards)")
        stores = []
        for i, c in enumerate(given):
            name = "qdrant-edge shard" + (f" {i}" if len(given) > 1 else "")
            stores.append(self.store_of(c, collection, name))
        return stores

    def store_of(self, client: Any, collection: str | None, name: str) -> StoreBase:
        if isinstance(client, StoreBase):
            return client
        kind = client_type(client)
        if kind == "edge":
            return EdgeStore.of(client, name)
        if kind is None:
            raise InputError(
                f"client: expected a qdrant_client.QdrantClient, an AsyncQdrantClient, a qdrant_edge "
                f"EdgeShard or a list of them, got {type(client).__name__}"
            )
        if not collection:
            raise InputError("collection: give the name of the collection that holds the memories")
        if kind == "async" and not self.async_client:
            raise InputError("client: an AsyncQdrantClient: use memlab.AsyncRetriever (async def retrieve)")
        if kind == "sync" and self.async_client:
            raise InputError("client: a QdrantClient: use memlab.Retriever, or give an AsyncQdrantClient")
        return AsyncClientStore(client, collection) if kind == "async" else ClientStore.of(client, collection)

    def embedding(self, embedder: Any) -> EmbedFunction | None:
        """How a text becomes its query vector: the caller's embedder (a memlab ``Embedder``, held
        to the tuned file's model, or a function), else the recorded model's (made on first use);
        None: no model is recorded (published scores), only vectors can be asked."""
        if embedder is None:
            return None
        if hasattr(embedder, "encode_queries"):
            self.check_model(embedder)
            return lambda text: embedder.encode_queries([text])[0]
        if callable(embedder):
            return embedder
        raise InputError(
            "embedder: expected a memlab Embedder or a function from a text to its vector, got "
            f"{type(embedder).__name__}"
        )

    def check_model(self, embedder: Any) -> None:
        """A memlab embedder of another model than the one the spec was tuned on is refused."""
        from memlab.embedding.embedder import ModelIdentity

        if not self.model or not isinstance(self.model.get("identity"), Mapping):
            return
        made = ModelIdentity(
            self.model.get("name", ""), self.model.get("model_id", ""), self.model["identity"]
        )
        now = getattr(embedder, "model", None)
        if isinstance(now, ModelIdentity) and not made.same_as(now):
            raise InputError(
                f"{self.label} was tuned on scores from {made.model_id}, the embedder is {now.model_id}: its "
                "threshold and bonus are on another model's scale (embed with the tuned model, or tune again)"
            )

    def embed(self, text: str) -> list[float]:
        if self.embed_function is None:
            if not self.model or not self.model.get("name"):
                raise InputError(
                    f"{self.label} records no embedding model (tuned on published scores): give embedder= "
                    "or ask with the query vector"
                )
            if (self.model.get("identity") or {}).get("engine") == "openai-compatible":
                raise InputError(
                    f"{self.label} was tuned on the embedding server's own model "
                    f"{self.model.get('model_id')}: give embedder=make_embedder(server=...) for that server "
                    "(memlab.embedding.embedder)"
                )
            from memlab.embedding.embedder import make_embedder

            self.embed_function = self.embedding(make_embedder(self.model["name"]))
        return as_vector(self.embed_function(text), "the embedder's vector")

    # -- the query --------------------------------------------------------------------------------

    def check_facts(self, facts: list[CollectionFacts]) -> None:
        """The stores hold the vector the layout names, and as many shards as the spec was tuned
        for (where the store can tell)."""
        for store, fact in zip(self.stores, facts, strict=True):
            self.vector_size(store, fact)
            if fact.sample is not None:  # a layout that does not fit says so now, not on a call
                self.read_point(fact.sample, store)
        known = len(self.stores) if len(self.stores) > 1 else facts[0].shards
        if self.stage is not None and (known or 1) > 1:
            raise InputError(
                f"{self.label} has a rerank stage, measured on one shard, and the store has {known} shards: "
                f"each shard would return its own {self.stage.depth}, not the stage's pool (give one shard)"
            )
        if self.shards is not None and known is not None and known != self.shards:
            scope = f"{self.shards} shard{'s' if self.shards != 1 else ''} (Qdrant's id hashing)"
            has = f"{known} shard{'s' if known != 1 else ''}"
            where = self.stores[0].describe() if len(self.stores) == 1 else f"the {known} stores given"
            raise InputError(
                f"{self.label} was tuned for {scope}, and {where} has {has}: each shard picks its own "
                f"candidates, so the memories differ (give the shards, or tune again with --shards {known})"
            )
        self.facts = facts

    def vector_size(self, store: StoreBase, fact: CollectionFacts) -> int | None:
        """The size of the layout's vector in the store (None: the store cannot tell before a
        query); a vector it does not hold is refused."""
        vectors, name = fact.vectors, self.layout.vector_name
        if vectors is None:
            return None
        if isinstance(vectors, Mapping):
            if name is None and "" in vectors:  # LangChain names its one vector "": Qdrant's default
                return int(vectors[""])
            if name is None:
                raise InputError(
                    f"{store.describe()} has named vectors {', '.join(sorted(vectors))}: give the layout's "
                    "vector_name"
                )
            if name not in vectors:
                raise InputError(
                    f"{store.describe()} has no vector {name!r} (it has: {', '.join(sorted(vectors))}), "
                    "the one the layout names"
                )
            return int(vectors[name])
        if name is not None:
            raise InputError(
                f"{store.describe()} has one unnamed vector, and the layout names the vector {name!r}"
            )
        return int(vectors)

    def bodies(
        self,
        vector: list[float],
        at: datetime,
        filter: Mapping[str, Any] | None,
        limit: int | None,
        user: PayloadValue | None,
    ) -> list[dict[str, Any]]:
        """Each store's filled body: the printed query with the filter's conditions, the vector
        and the asking time."""
        for store, fact in zip(self.stores, self.facts or [], strict=False):
            size = self.vector_size(store, fact)
            if size is not None and size != len(vector):
                raise InputError(
                    f"{store.describe()} holds {size}-dimensional vectors, and the query vector has "
                    f"{len(vector)} dimensions: not the model the collection was embedded with"
                )
        given = checked_filter(filter, "filter")
        if user is not None:
            if self.layout.user_field is None:
                raise InputError("user: the layout names no user field (CollectionSchema.user_field)")
            given = (*given, *checked_filter({self.layout.user_field: user}, "user"))
        scope = Scope(filters=merged_filter(self.filter, given, self.label))
        if limit is not None:
            check_number(limit, "limit", integer=True, minimum=1)
        spec = self.spec if limit is None else replace(self.spec, inject=limit)
        pool = None if self.stage is None else self.stage.depth  # the stage's pool, unthresholded
        out = []
        for store in self.stores:
            exact = store.exact if self.exact is None else self.exact
            template = spec_body(
                spec, self.layout, None, None, extra_conditions=scope.conditions(), exact=exact, pool=pool
            )
            out.append(fill(template, vector, at, self.layout))
        return out

    def query_vector(self, query: str | Vector) -> list[float]:
        if isinstance(query, str):
            if not query.strip():
                raise InputError("query: an empty text")
            return self.embed(query)
        return as_vector(query, "query")

    def question_text(self, query: str | Vector, text: str | None) -> str | None:
        """The text the rerank stage scores (None: no stage): the query's, or ``text`` beside a
        vector; a bare vector is refused."""
        if text is not None and (not isinstance(text, str) or not text.strip()):
            raise InputError(f"text: expected the question's text, got {text!r:.60}")
        if isinstance(query, str) and text is not None and text != query:
            raise InputError("text: give it beside a query vector only (the query is already a text)")
        if self.stage is None:
            return None
        if isinstance(query, str):
            return query
        if text is None:
            raise InputError(
                f"query: {self.label} has a rerank stage, which scores the question's text: ask with the "
                "text, or give text= beside the vector"
            )
        return text

    def memories(
        self, lists: Sequence[Sequence[Hit]], at: datetime, limit: int | None
    ) -> list[RetrievedMemory]:
        """The shards' points merged, read and ordered: the reference's injected memories."""
        pool = self.points(lists, at)
        if pool is None:
            return []
        spec = self.spec
        order = resort_order(pool.raw, pool.final)
        keep = [int(i) for i in order if np.float32(pool.final[i]) >= np.float32(spec.threshold)]
        return [pool.memory(i) for i in keep[: spec.inject if limit is None else limit]]

    def points(self, lists: Sequence[Sequence[Hit]], at: datetime) -> Points | None:
        """The shards' points merged and read, in the collection's order (None: no point)."""
        seen: dict[int | str, tuple[Hit, StoreBase]] = {}
        for store, hits in zip(self.stores, lists, strict=True):
            for hit in hits:
                seen.setdefault(point_key(hit.point_id), (hit, store))
        ids = sorted(seen, key=point_order)
        if not ids:
            return None
        spec = self.spec
        texts, dates = [], []
        for pid in ids:
            text, when = self.read_point(*seen[pid])
            texts.append(text)
            dates.append(when)
        final = np.array([seen[pid][0].score for pid in ids], dtype=np.float64)
        stamps = np.array([d.replace(tzinfo=None) for d in dates], dtype="datetime64[s]")
        raw = unscore(final, spec.weight(age_days(stamps, at)), spec.bonus, spec.combine)
        payloads = [dict(seen[pid][0].payload) for pid in ids]
        return Points(ids, texts, dates, raw, final, payloads)

    def stage_memories(
        self, pool: Points, scores: Sequence[float], limit: int | None
    ) -> list[RetrievedMemory]:
        """The rerank stage's injected memories: its reference rule (``stage_order``) over the
        pool in candidate order (raw descending, then the collection's order) on the blended
        score (``blend_scores``)."""
        stage = self.stage
        assert stage is not None  # called only with a stage
        rerank = np.asarray(scores, dtype=np.float64)
        blended = blend_scores(pool.final, rerank, stage.blend)
        places = candidate_lists(pool.raw[None], len(pool.raw))[0]  # candidate order
        inject = self.spec.inject if limit is None else limit
        picked = stage_order(
            pool.raw[places], blended[places], rerank[places], stage.depth, stage.threshold, inject
        )
        return [
            replace(
                pool.memory(int(places[p])),
                rerank=float(rerank[places[p]]),
                blended=float(blended[places[p]]),
            )
            for p in picked
        ]

    def read_point(self, hit: Hit, store: StoreBase) -> tuple[str, datetime]:
        """A point's text and date, as the layout names them."""
        layout, pid = self.layout, point_key(hit.point_id)
        text = self.field(hit, store, layout.text_field, "text field")
        if not isinstance(text, str):
            raise InputError(
                f"{store.describe()}: point {pid}: {layout.text_field}: expected text, got {text!r:.60}"
            )
        value = self.field(hit, store, layout.date_field, "date field")
        try:
            return text, layout.date_of(value)
        except InputError as e:
            raise InputError(
                f"{store.describe()}: point {pid}: {layout.date_field}: {e} (the layout's date format "
                f"is {layout.date_format})"
            ) from None

    def field(self, hit: Hit, store: StoreBase, name: str, what: str) -> Any:
        try:
            return self.layout.read(hit.payload, name)
        except KeyError:
            fields = ", ".join(sorted(map(str, hit.payload))) or "none"
            raise InputError(
                f"{store.describe()}: point {point_key(hit.point_id)} has no payload field {name!r} (the "
                f"layout's {what}; its fields: {fields})"
            ) from None


@dataclass(frozen=True)
class Points:
    """The points a query returned, merged and read, in the collection's order."""

    ids: list[int | str]
    texts: list[str]
    dates: list[datetime]
    raw: np.ndarray
    final: np.ndarray
    payloads: list[dict[str, Any]]

    def memory(self, i: int) -> RetrievedMemory:
        return RetrievedMemory(
            self.ids[i],
            self.texts[i],
            self.dates[i],
            float(self.raw[i]),
            float(self.final[i]),
            self.payloads[i],
        )


class StageReranker:
    """The reranker of a retriever's rerank stage, one client per call in flight (a memlab
    ``Reranker`` holds one HTTP client and its state: calls from several threads, or an
    ``AsyncRetriever``'s worker threads, each take their own twin), scoring through
    ``memlab.rerank.scoring.score_pairs`` with the cache and the concurrency given."""

    def __init__(self, reranker: Any, cache: Any, concurrency: int):
        import threading

        self.base, self.cache, self.concurrency = reranker, cache, concurrency
        self.idle = [reranker]
        self.lock = threading.Lock()

    @classmethod
    def of(
        cls, stage: RerankStage | None, given: Any, cache: Any, concurrency: int, label: str
    ) -> StageReranker | None:
        """The reranker for ``stage`` from what the caller gave (a URL, a ``RerankerConfig``, a
        ``Reranker``), held to the kind and model the stage was tuned with; None: no stage."""
        from memlab.rerank.cache import ScoreCache
        from memlab.rerank.clients import Reranker, RerankerConfig
        from memlab.rerank.scoring import check_concurrency

        if stage is None:
            if given is not None:
                raise InputError(f"reranker: {label} has no rerank stage (memlab rerank --save writes one)")
            return None
        model = f", model {stage.model}" if stage.model else ""
        if given is None:
            raise InputError(
                f"{label} has a rerank stage (the {stage.reranker} reranker{model}): give reranker= its "
                "server's base URL, a memlab.rerank.clients.RerankerConfig or a Reranker"
            )
        if isinstance(given, Reranker):
            config = given.config
        elif isinstance(given, RerankerConfig):
            config = given
        elif isinstance(given, str):
            config = RerankerConfig(stage.reranker, given, model=stage.model, option="reranker")
        else:
            raise InputError(
                "reranker: expected the reranking server's base URL, a memlab.rerank.clients.RerankerConfig "
                f"or a Reranker, got {type(given).__name__}"
            )
        if config.kind != stage.reranker:
            raise InputError(
                f"reranker: {label} was tuned with the {stage.reranker} reranker, and the one given is the "
                f"{config.kind} reranker: its blend and threshold are on that reranker's scale"
            )
        if stage.model and config.model and config.model != stage.model:
            raise InputError(
                f"reranker: {label} was tuned with the reranker model {stage.model}, and the one given asks "
                f"{config.model}: its blend and threshold are on that model's scale"
            )
        if stage.model and not config.model:
            config = replace(config, model=stage.model)
        if cache is not None and not isinstance(cache, ScoreCache):
            raise InputError(
                f"rerank_cache: expected a memlab.rerank.cache.ScoreCache or None, got {type(cache).__name__}"
            )
        check_concurrency(concurrency, "rerank_concurrency")
        reranker = given if isinstance(given, Reranker) and given.config == config else Reranker(config)
        return cls(reranker, cache, concurrency)

    def score(self, question: str, texts: Sequence[str]) -> list[float]:
        """The reranker's score of each (question, memory text) pair, in order."""
        from memlab.rerank.scoring import score_pairs

        with self.lock:
            client = self.idle.pop() if self.idle else self.base.twin()
        try:
            return score_pairs(client, [(question, t) for t in texts], self.cache, self.concurrency)
        finally:
            with self.lock:
                self.idle.append(client)


def client_type(client: Any) -> str | None:
    """``sync``, ``async`` (qdrant-client) or ``edge`` (a qdrant-edge shard); None: none of them."""
    from qdrant_client import AsyncQdrantClient, QdrantClient

    if isinstance(client, QdrantClient):
        return "sync"
    if isinstance(client, AsyncQdrantClient):
        return "async"
    try:
        from qdrant_edge import EdgeShard
    except ImportError:  # pragma: no cover - a base dependency
        return None
    return "edge" if isinstance(client, EdgeShard) else None


class Retriever(RetrieverCore):
    """The tuned spec on the user's collection: ``retrieve(text or vector, asked=None,
    filter=None, limit=None)`` -> the memories it injects, best first."""

    def __init__(self, spec: RetrievalSpec, **kwargs: Any):
        super().__init__(spec, **kwargs)
        self.check_facts([store.facts() for store in self.stores])  # type: ignore[attr-defined]

    def retrieve(
        self,
        query: str | Vector,
        asked: datetime | date | str | None = None,
        filter: Mapping[str, Any] | None = None,
        limit: int | None = None,
        *,
        user: PayloadValue | None = None,
        text: str | None = None,
    ) -> list[RetrievedMemory]:
        """The memories the spec injects for the query asked at ``asked`` (None: now, UTC), best
        first; ``filter``: more payload conditions ({field: value}); ``user``: the layout's user
        field's value; ``limit``: inject this many instead of the spec's ``inject``; ``text``:
        the question's text beside a query vector (what a rerank stage scores)."""
        at = asked_time(asked)
        question = self.question_text(query, text)
        vector = self.query_vector(query)
        bodies = self.bodies(vector, at, filter, limit, user)
        lists = [store.hits(body, with_payload=True) for store, body in zip(self.stores, bodies, strict=True)]  # type: ignore[attr-defined]
        if self.rerankers is None or question is None:
            return self.memories(lists, at, limit)
        pool = self.points(lists, at)
        if pool is None:
            return []
        return self.stage_memories(pool, self.rerankers.score(question, pool.texts), limit)


class AsyncRetriever(RetrieverCore):
    """``Retriever`` on qdrant-client's ``AsyncQdrantClient``: ``await retrieve(...)``; the
    collection is checked on the first call, the shards are asked concurrently."""

    async_client = True

    async def retrieve(
        self,
        query: str | Vector,
        asked: datetime | date | str | None = None,
        filter: Mapping[str, Any] | None = None,
        limit: int | None = None,
        *,
        user: PayloadValue | None = None,
        text: str | None = None,
    ) -> list[RetrievedMemory]:
        """As ``Retriever.retrieve``, awaited (the reranker's requests in a worker thread)."""
        import asyncio  # imported by whoever runs the loop: free here, not paid by ``import memlab``

        at = asked_time(asked)
        question = self.question_text(query, text)
        if self.facts is None:
            self.check_facts(list(await asyncio.gather(*(self.afacts(s) for s in self.stores))))
        vector = (
            await asyncio.to_thread(self.query_vector, query)
            if isinstance(query, str)
            else self.query_vector(query)
        )
        bodies = self.bodies(vector, at, filter, limit, user)
        lists = await asyncio.gather(*(self.ahits(s, b) for s, b in zip(self.stores, bodies, strict=True)))
        if self.rerankers is None or question is None:
            return self.memories(lists, at, limit)
        pool = self.points(lists, at)
        if pool is None:
            return []
        scores = await asyncio.to_thread(self.rerankers.score, question, pool.texts)
        return self.stage_memories(pool, scores, limit)

    @staticmethod
    async def afacts(store: StoreBase) -> CollectionFacts:
        import asyncio

        if isinstance(store, AsyncClientStore):
            return await store.facts()
        return await asyncio.to_thread(store.facts)  # type: ignore[attr-defined]

    @staticmethod
    async def ahits(store: StoreBase, body: dict[str, Any]) -> list[Hit]:
        import asyncio

        if isinstance(store, AsyncClientStore):
            return await store.hits(body, with_payload=True)
        return await asyncio.to_thread(store.hits, body, with_payload=True)  # type: ignore[attr-defined]
