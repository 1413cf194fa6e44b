"""The export checked on the user's own store: the query ``memlab spec`` prints, filled per
question, run on their collection and compared with memlab's reference.

``open_store`` opens the store read-only in practice (only queries are sent): a local Qdrant
folder through qdrant-client (its local mode: a Python re-implementation of Qdrant's search), a
Qdrant server, or a qdrant-edge shard folder (Qdrant's own engine, in-process, on a copy of the
folder: the engine rewrites files of a shard it loads). It checks that
the collection is the one the dataset was imported from in what the query relies on: the vector
(named as ``dataset.json`` records it) and its dimension.

``verify`` fills the printed body (``spec_query_json``, placeholders and all, then ``fill``)
with each question's vector and asking time, runs it, names each returned point by the memory
id ``memlab import-qdrant`` recorded for it (``point_id``: the collection's own integer or UUID
id; no renumbering), and compares what comes back with the memories the reference injects
(``memlab evaluate``'s candidates): the same memories, in the same order where scores differ
(tied scores as sets, the last tie group cut by ``inject`` by its size), final scores to
``TOL``. The engine scores in float32, so a memory within ``TOL`` of the threshold may be kept by
either side; it is left out of the comparison.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memlab.core.errors import InputError, MemlabError, MissingFileError, UnreachableError
from memlab.core.spec import Candidate, RetrievalSpec
from memlab.core.urls import redact
from memlab.qdrant.client import local_storage, open_client
from memlab.qdrant.query import CollectionSchema, fill, spec_query_json

TOL = 1e-6  # the engine returns float32 scores; memlab computes in float64


def point_key(point_id: Any) -> int | str:
    """A point id as one comparable value: an integer, or a UUID in its canonical text (the
    engine returns ``uuid.UUID``, qdrant-client a string, ``dataset.json`` what was stored)."""
    if isinstance(point_id, int) and not isinstance(point_id, bool):
        return point_id
    try:
        return str(uuid.UUID(str(point_id)))
    except ValueError:
        return str(point_id)


@dataclass(frozen=True)
class Asked:
    """One question as the store is asked it, with what the reference injects for it."""

    question_id: str
    vector: Sequence[float]
    at: datetime  # when it is asked: the decay's target and the cut-off
    candidates: tuple[Candidate, ...]  # memlab's reference, in re-sorted order


@dataclass(frozen=True)
class Returned:
    point_id: int | str
    memory_id: str | None  # None: a point the dataset does not hold (written after the import)
    score: float


@dataclass(frozen=True)
class QuestionCheck:
    question_id: str
    returned: tuple[Returned, ...]
    reference: tuple[tuple[str, float], ...]  # the injected (memory id, final score), in order
    agree: bool


@dataclass(frozen=True)
class Hit:
    """One point a query returned: its id (as the store gives it), its score and its payload
    (empty unless the body asked for it)."""

    point_id: Any
    score: float
    payload: Mapping[str, Any]


@dataclass(frozen=True)
class CollectionFacts:
    """What a query relies on in a collection: its vectors (the named vectors and their sizes,
    or the one unnamed vector's size; None: not known before a query, as for an engine shard),
    its shard count (None: not known), its point count (None: not counted) and one of its points
    with its payload (the first by id; None: none, or not read), to read the layout on."""

    vectors: Mapping[str, int] | int | None
    shards: int | None
    points: int | None
    sample: Hit | None = None


class StoreBase:
    """What every kind of store says about itself: where it is, its kind, whether a body asks it
    for exact search; ``owned``: memlab opened it (and closes it), else it is the caller's."""

    kind = ""
    exact = False  # whether the body asks for exact search (``memlab spec --exact``)

    def __init__(self, where: str, collection: str | None, owned: bool = True):
        self.where, self.collection, self.owned = where, collection, owned

    def describe(self) -> str:
        if self.collection is None:
            return f"the {self.kind} at {self.where}"
        return f"collection {self.collection!r} in {self.where} ({self.kind})"

    def no_collection(self, collections: Any) -> InputError:
        """The error for a store without the collection, naming those it has (qdrant-client's
        ``get_collections`` answer)."""
        names = ", ".join(sorted(c.name for c in collections.collections))
        return InputError(
            f"no collection {self.collection!r} in {self.where} (collections: {names or 'none'})"
        )


class UserStore(StoreBase, ABC):
    """A collection of the user's, asked only queries: ``hits(body)`` -> the points; one subclass
    per kind of store (qdrant-client, a qdrant-edge shard). ``AsyncClientStore`` is the same
    store on qdrant-client's async client."""

    @abstractmethod
    def hits(self, body: dict[str, Any], *, with_payload: bool = False) -> list[Hit]:
        """The points of a filled REST body, in the store's order."""

    def run(self, body: dict[str, Any]) -> list[tuple[int | str, float]]:
        """(point id, score) of a filled REST body, in the store's order."""
        return [(h.point_id, h.score) for h in self.hits(body)]

    def facts(self) -> CollectionFacts:
        """The collection's vectors, shards and points, as far as the store can tell."""
        return CollectionFacts(None, None, None)

    def close(self) -> None:
        return None


def refused(e: BaseException, what: str) -> MemlabError | None:
    """A qdrant-client failure as one line naming the store (``what``): a refusal (HTTP status
    and the server's reason), a lost connection, local mode's own refusal (a ``ValueError``:
    a collection or vector it does not hold); None: not one of these (a bug, shown as such)."""
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    if isinstance(e, UnexpectedResponse):  # the server refused it (a date it cannot read, ...)
        reason = " ".join((e.content or b"").decode("utf-8", "replace")[:300].split())
        return InputError(f"{what} refused the query: HTTP {e.status_code} {e.reason_phrase} {reason}")
    if isinstance(e, ResponseHandlingException):  # the connection went away
        return UnreachableError(f"{what}: the query got no answer: {redact(str(e))}")
    if type(e) in (ValueError, AssertionError):  # local mode checks with these
        return InputError(f"{what} refused the query: {' '.join(str(e).split())}")
    return None


@contextmanager
def refusals(what: str) -> Iterator[None]:
    """qdrant-client's failures inside as one line naming the store (``refused``); anything else,
    memlab's own errors included, passes unchanged (a bug shows as one)."""
    try:
        yield
    except Exception as e:
        problem = refused(e, what)
        if problem is None:
            raise
        raise problem from None


def client_kind(client: Any) -> tuple[str, bool]:
    """(kind, remote) of a qdrant-client client: a server, or local mode (in memory or a folder)."""
    options = getattr(client, "init_options", None) or {}
    local = options.get("location") == ":memory:" or options.get("path") is not None
    return ("qdrant-client local mode", False) if local else ("Qdrant server", True)


def client_where(client: Any) -> str:
    options = getattr(client, "init_options", None) or {}
    for key in ("path", "url", "host", "location"):
        if options.get(key):
            return redact(str(options[key]))
    return "qdrant-client"


def vector_sizes(info: Any) -> Mapping[str, int] | int:
    """A collection's vectors from qdrant-client's ``get_collection``: {name: size} or the size."""
    cfg = info.config.params.vectors
    return {k: v.size for k, v in cfg.items()} if isinstance(cfg, dict) else cfg.size


class ClientStore(UserStore):
    """A local Qdrant folder or a server, through qdrant-client."""

    def __init__(self, client, where: str, collection: str, url: bool, owned: bool = True):
        super().__init__(where, collection, owned)
        self.client = client
        self.kind = "Qdrant server" if url else "qdrant-client local mode"
        self.exact = url  # a server's HNSW index is approximate; local mode always searches exactly

    @classmethod
    def of(cls, client: Any, collection: str) -> ClientStore:
        """A caller's client (never closed here)."""
        return cls(client, client_where(client), collection, url=client_kind(client)[1], owned=False)

    def hits(self, body: dict[str, Any], *, with_payload: bool = False) -> list[Hit]:
        from memlab.qdrant.store import run_query

        with refusals(self.describe()):
            points = run_query(self.client, self.collection, body, with_payload=with_payload)
        return [Hit(p.id, float(p.score), p.payload or {}) for p in points]

    def facts(self) -> CollectionFacts:
        with refusals(self.describe()):
            if not self.client.collection_exists(self.collection):
                raise self.no_collection(self.client.get_collections())
            info = self.client.get_collection(self.collection)
            first, _ = self.client.scroll(self.collection, limit=1, with_payload=True)
        return collection_facts(info, first, remote=self.exact)

    def close(self) -> None:
        if self.owned:
            self.client.close()


def collection_facts(info: Any, first: Sequence[Any], remote: bool) -> CollectionFacts:
    """The facts of qdrant-client's ``get_collection`` answer and its first point (a scroll's
    ``first``); local mode has one shard whatever the collection was created with."""
    shards = (info.config.params.shard_number or 1) if remote else 1
    sample = Hit(first[0].id, 0.0, first[0].payload or {}) if first else None
    return CollectionFacts(vector_sizes(info), shards, info.points_count, sample)


class AsyncClientStore(StoreBase):
    """A local Qdrant folder or a server, through qdrant-client's ``AsyncQdrantClient``: the
    ``ClientStore`` with its I/O awaited."""

    def __init__(self, client, collection: str):
        kind, remote = client_kind(client)
        super().__init__(client_where(client), collection, owned=False)
        self.client, self.kind, self.exact = client, kind, remote

    async def hits(self, body: dict[str, Any], *, with_payload: bool = False) -> list[Hit]:
        from memlab.qdrant.store import query_arguments

        with refusals(self.describe()):
            answer = await self.client.query_points(
                self.collection, **query_arguments(body, with_payload=with_payload)
            )
        return [Hit(p.id, float(p.score), p.payload or {}) for p in answer.points]

    async def facts(self) -> CollectionFacts:
        with refusals(self.describe()):
            if not await self.client.collection_exists(self.collection):
                raise self.no_collection(await self.client.get_collections())
            info = await self.client.get_collection(self.collection)
            first, _ = await self.client.scroll(self.collection, limit=1, with_payload=True)
        return collection_facts(info, first, remote=self.exact)


class EdgeStore(UserStore):
    """A qdrant-edge shard: Qdrant's own engine, in-process; ``copy``: the folder memlab loaded it
    from (removed on close), None for a caller's own shard (never closed here)."""

    kind = "qdrant-edge shard, Qdrant's own engine"
    exact = True  # a shard the application optimised has an HNSW index: search it exactly

    def __init__(self, shard, where: str, copy: Path | None, label: str | None = None):
        super().__init__(where, None, owned=copy is not None)
        self.shard, self.copy = shard, copy
        self.label = label or f"--edge-path {where}"

    @classmethod
    def of(cls, shard: Any, name: str = "qdrant-edge shard") -> EdgeStore:
        """A caller's shard (never closed here)."""
        return cls(shard, name, None, label=f"the {name}")

    def describe(self) -> str:
        return self.label if self.copy is None else super().describe()

    def hits(self, body: dict[str, Any], *, with_payload: bool = False) -> list[Hit]:
        from memlab.qdrant import edge

        body = {**body, "with_payload": with_payload}
        try:
            points = edge.query_points(self.shard, body)
        except Exception as e:  # qdrant_edge raises bare Exceptions, with the engine's reason
            raise InputError(
                f"{self.label}: the engine refused the query: {' '.join(str(e).split())}"
            ) from None
        return [Hit(p.id, float(p.score), p.payload or {}) for p in points]

    def facts(self) -> CollectionFacts:
        """Its point count and first point (the engine's object does not say its vectors)."""
        from memlab.qdrant import edge

        try:
            first, _ = self.shard.scroll(edge.engine().ScrollRequest(limit=1, with_payload=True))
            points = self.shard.info().points_count
        except Exception as e:  # qdrant_edge raises bare Exceptions, with the engine's reason
            raise InputError(
                f"{self.label}: the engine cannot read the shard: {' '.join(str(e).split())}"
            ) from None
        sample = Hit(first[0].id, 0.0, first[0].payload or {}) if first else None
        return CollectionFacts(None, None, points, sample)

    def close(self) -> None:
        if self.copy is None:
            return
        try:
            self.shard.close()
        finally:
            shutil.rmtree(self.copy, ignore_errors=True)


def _check_vectors(where: str, vectors: Mapping[str, int] | int, schema: CollectionSchema, dim: int) -> None:
    """``vectors``: the collection's named vectors and their sizes, or the one unnamed vector's."""
    if isinstance(vectors, Mapping):
        if schema.vector_name is None:
            raise InputError(
                f"{where} has named vectors {', '.join(sorted(vectors))}, and the dataset was imported "
                "from a collection with one unnamed vector: not the collection it was imported from"
            )
        if schema.vector_name not in vectors:
            raise InputError(
                f"{where} has no vector {schema.vector_name!r} (it has: {', '.join(sorted(vectors))}), "
                "the one the dataset records: not the collection it was imported from"
            )
        size = vectors[schema.vector_name]
    else:
        if schema.vector_name is not None:
            raise InputError(
                f"{where} has one unnamed vector, and the dataset records the named vector "
                f"{schema.vector_name!r}: not the collection it was imported from"
            )
        size = vectors
    if size != dim:
        raise InputError(
            f"{where} holds {size}-dimensional vectors, and the dataset's questions embed to {dim}: "
            "not the collection it was imported from"
        )


def open_store(
    *,
    schema: CollectionSchema,
    dim: int,
    path: str | None = None,
    url: str | None = None,
    edge_path: str | None = None,
    collection: str | None = None,
) -> UserStore:
    """The user's store, checked to hold ``collection`` with the vector the schema names, of
    ``dim`` dimensions. Nothing is created: a folder that is no store is refused, not made one."""
    flags = (("--qdrant-path", path), ("--qdrant-url", url), ("--edge-path", edge_path))
    given = [flag for flag, value in flags if value]
    if len(given) != 1:
        raise InputError(
            "give exactly one of --qdrant-path (a local Qdrant folder), --qdrant-url (a Qdrant server) "
            f"or --edge-path (a qdrant-edge shard folder){'; got ' + ' and '.join(given) if given else ''}"
        )
    if edge_path:
        return _open_edge(edge_path, schema, dim)
    if not collection:
        raise InputError(f"{given[0]}: give --collection (the dataset records no collection name)")
    if path:
        local_storage(path, "--qdrant-path")
    try:
        client = open_client(path=path, url=url)
    except RuntimeError as e:  # local mode: another process holds the folder's lock
        raise InputError(f"--qdrant-path {path}: {e}") from None
    where = path or redact(str(url))
    try:
        if not client.collection_exists(collection):
            names = ", ".join(sorted(c.name for c in client.get_collections().collections)) or "none"
            raise InputError(f"no collection {collection!r} in {where} (collections: {names})")
        cfg = client.get_collection(collection).config.params.vectors
        sizes = {k: v.size for k, v in cfg.items()} if isinstance(cfg, dict) else cfg.size
        _check_vectors(f"collection {collection!r} in {where}", sizes, schema, dim)
        if client.count(collection, exact=True).count == 0:
            raise InputError(f"collection {collection!r} in {where} holds no points")
    except BaseException:
        client.close()
        raise
    return ClientStore(client, where, collection, url=bool(url))


def _open_edge(path: str, schema: CollectionSchema, dim: int) -> EdgeStore:
    from memlab.qdrant.edge import engine

    folder = Path(path)
    if not folder.is_dir():
        raise MissingFileError(f"--edge-path {path}: no such folder (a qdrant-edge shard folder)")
    config = folder / "edge_config.json"
    if not config.is_file():  # loading a folder that is no shard would write one into it
        raise MissingFileError(f"--edge-path {path}: holds no qdrant-edge shard (no edge_config.json)")
    try:
        vectors = json.loads(config.read_text(encoding="utf-8"))["vectors"]
        sizes = {str(k): int(v["size"]) for k, v in vectors.items()}
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        raise InputError(
            f"--edge-path {path}: edge_config.json is not a shard's configuration "
            '(no "vectors" object naming each vector\'s size)'
        ) from None
    unnamed = set(sizes) == {""}
    _check_vectors(f"the shard at {path}", sizes[""] if unnamed else sizes, schema, dim)
    # the engine tidies a shard it loads (rewrites its config, folds journals into segments): it
    # loads a copy, so the user's folder is never written
    qe = engine()
    copy = Path(tempfile.mkdtemp(prefix="memlab-verify-"))
    try:
        shutil.copytree(folder, copy / "shard", symlinks=True)
        shard = qe.EdgeShard.load(str(copy / "shard"))
    except BaseException as e:
        shutil.rmtree(copy, ignore_errors=True)
        if isinstance(e, OSError):
            raise InputError(f"--edge-path {path}: cannot copy the shard to load it: {e}") from None
        if type(e) is Exception:  # qdrant_edge raises bare Exceptions, with the engine's reason
            raise InputError(f"--edge-path {path}: the engine cannot load the shard: {e}") from None
        raise
    store = EdgeStore(shard, path, copy)
    if shard.info().points_count == 0:  # every question would differ: say why instead
        store.close()
        raise InputError(f"--edge-path {path}: the shard holds no points")
    return store


def _levels(items: Sequence[tuple[str, float]]) -> list[tuple[float, list[str]]]:
    """Consecutive scores within ``TOL`` of their group's first as one tie group (score, ids)."""
    groups: list[tuple[float, list[str]]] = []
    for memory, score in items:
        if groups and abs(groups[-1][0] - score) <= TOL:
            groups[-1][1].append(memory)
        else:
            groups.append((score, [memory]))
    return groups


def agrees(
    returned: Sequence[Returned], candidates: Sequence[Candidate], threshold: float, inject: int
) -> bool:
    """What the store returned is what the reference injects (see the module's docstring)."""
    finals = {c.memory_id: c.final for c in candidates}
    ids = [r.memory_id for r in returned]
    if len(set(ids)) != len(ids) or any(
        r.memory_id not in finals or abs(r.score - finals[r.memory_id]) > TOL for r in returned
    ):
        return False
    edge = {c.memory_id for c in candidates if abs(c.final - threshold) <= TOL}
    got = _levels([(r.memory_id, r.score) for r in returned if r.memory_id not in edge])
    want = _levels([(c.memory_id, c.final) for c in candidates if c.injected and c.memory_id not in edge])
    if len(got) != len(want) or any(abs(g[0] - w[0]) > TOL for g, w in zip(got, want, strict=True)):
        return False
    if not want:
        return True
    if any(sorted(g[1]) != sorted(w[1]) for g, w in zip(got[:-1], want[:-1], strict=True)):
        return False
    # the last group: cut by the inject limit where more memories tie at its score than it holds,
    # and the engine cuts ties its own way: any of the tied, as many
    level, last = want[-1]
    tied = {c.memory_id for c in candidates if c.reaches and abs(c.final - level) <= TOL}
    if len(tied) > len(last):
        return len(got[-1][1]) == len(last) and set(got[-1][1]) <= tied
    return sorted(got[-1][1]) == sorted(last)


def verify(
    store: UserStore,
    spec: RetrievalSpec,
    schema: CollectionSchema,
    asked: Sequence[Asked],
    memory_of: Mapping[int | str, str],
    conditions: Sequence[dict[str, Any]] = (),
) -> tuple[QuestionCheck, ...]:
    """Each question's check: the printed body filled with its vector and asking time, run on
    the store; ``memory_of``: the dataset's memory id of each point id (``point_key``);
    ``conditions``: the tenant filter's, as ``memlab spec --filter`` puts them in the query."""
    printed = spec_query_json(spec, None, schema, None, exact=store.exact, conditions=conditions)
    template = json.loads(printed)
    out = []
    for q in asked:
        body = fill(template, q.vector, q.at, schema)
        returned = tuple(
            Returned(point_key(pid), memory_of.get(point_key(pid)), score) for pid, score in store.run(body)
        )
        reference = tuple((c.memory_id, c.final) for c in q.candidates if c.injected)
        same = agrees(returned, q.candidates, spec.threshold, spec.inject)
        out.append(QuestionCheck(q.question_id, returned, reference, same))
    return tuple(out)
