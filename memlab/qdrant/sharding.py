"""Where a collection's memories live and which of them a query may see: the tenant filter, the
shard count and the shard key, as ``Scope``, turned into the core's candidate pool
(``memlab.core.shards.Pool``) for a dataset.

Qdrant's default (``auto``) sharding puts a point on the shard its id hashes to, on a consistent
hash ring (``lib/collection/src/hash_ring.rs``, ``HashRingRouter::single``): a ``fair`` ring on
which each shard ``s`` of ``0..N-1`` stands at 100 places (``HASH_RING_SHARD_SCALE``), place
``i`` at ``SipHash-2-4(key 0; s as u32 LE, i as u32 LE)``; a point id hashes to
``SipHash-2-4(key 0; 0u64 LE, id as u64 LE)`` for an integer id and to ``SipHash-2-4(key 0;
1u64 LE, 16u64 LE, the 16 UUID bytes)`` for a UUID (``StableHash for ExtendedPointId`` in
``lib/segment/src/types.rs``); it belongs to the first place at or after its hash, the ring
wrapping round (the ``hashring`` crate 0.3.6's ``get``). The bytes are little-endian, as on
every machine Qdrant ships for.

With ``custom`` sharding the application names a shard key when it writes a point
(``--shard-key FIELD``: the memory's payload value of FIELD); each key created with
``create_shard_key`` holds one shard (Qdrant's default ``shards_number`` for a key), and a
query that names no key searches them all, so each key value is a shard of the model.

A memory's point id is its ``point_id`` (``memlab import-qdrant`` keeps the collection's), else
its position in the dataset: the id memlab's own store (``memlab.qdrant.store.MemoryStore``)
gives it.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from memlab.core.errors import InputError
from memlab.core.numbers import check_number
from memlab.core.shards import MAX_SHARDS, ONE_SHARD, Pool
from memlab.datasets.payload import PayloadValue, field_type, filter_mask, filter_text

HASH_RING_SHARD_SCALE = 100  # Qdrant's places per shard on the fair ring


def siphash(data: bytes) -> int:
    """SipHash-2-4 with the zero key (Rust's ``SipHasher24::new()``), as an unsigned 64-bit int."""
    from siphash24 import siphash24

    return int(siphash24(data, key=b"\0" * 16).intdigest()) & 0xFFFF_FFFF_FFFF_FFFF  # signed -> u64


def point_hash(point_id: int | str) -> int:
    """A point id's place on the ring: Qdrant's ``StableHash`` of ``ExtendedPointId``."""
    if isinstance(point_id, int):
        return siphash(struct.pack("<QQ", 0, point_id))
    return siphash(struct.pack("<QQ", 1, 16) + uuid.UUID(str(point_id)).bytes)


@lru_cache(maxsize=16)
def ring(shards: int) -> tuple[np.ndarray, np.ndarray]:
    """The fair ring of shards ``0..shards-1``: each place's hash, sorted, and its shard."""
    places = [
        (siphash(struct.pack("<II", s, i)), s) for s in range(shards) for i in range(HASH_RING_SHARD_SCALE)
    ]
    places.sort(key=lambda p: p[0])  # stable, as the crate's Vec::sort
    return np.array([p[0] for p in places], dtype=np.uint64), np.array([p[1] for p in places], dtype=np.intp)


def shard_of(point_ids: Sequence[int | str], shards: int) -> np.ndarray:
    """The shard (0..shards-1) Qdrant's default sharding puts each point on."""
    if shards == 1:
        return np.zeros(len(point_ids), dtype=np.intp)
    keys, owner = ring(shards)
    hashes = np.array([point_hash(p) for p in point_ids], dtype=np.uint64)
    place = np.searchsorted(keys, hashes, side="left")  # the first place at or after the hash
    return owner[np.where(place == len(keys), 0, place)]


def point_ids(memories: Sequence[Any]) -> list[int | str]:
    """Each memory's Qdrant point id: its ``point_id``, else its position in the dataset."""
    return [i if m.point_id is None else m.point_id for i, m in enumerate(memories)]


@dataclass(frozen=True)
class Scope:
    """Which memories a query may see and how the collection splits them: ``filters`` (key,
    value) conditions all met (the exported query's ``must``), ``shards`` under Qdrant's default
    hashing, or ``shard_key``: the payload field whose value names a memory's shard."""

    filters: tuple[tuple[str, PayloadValue], ...] = ()
    shards: int = 1
    shard_key: str | None = None

    def __post_init__(self) -> None:
        check_number(self.shards, "--shards", integer=True, minimum=1, maximum=MAX_SHARDS)
        if self.shard_key is not None and self.shards != 1:
            raise InputError(
                "give --shards (Qdrant's default sharding) or --shard-key (one shard per key value), not both"
            )

    @property
    def trivial(self) -> bool:
        return not self.filters and self.shards == 1 and self.shard_key is None

    def conditions(self) -> list[dict[str, Any]]:
        """The filter as REST conditions, for the query's ``must`` beside the date cut-off."""
        return [{"key": k, "match": {"value": v}} for k, v in self.filters]

    def as_dict(self) -> dict[str, Any]:
        return {"filter": dict(self.filters), "shards": self.shards, "shard_key": self.shard_key}

    def describe(self) -> str:
        parts = [f"filter {filter_text(self.filters)}"] if self.filters else []
        if self.shard_key is not None:
            parts.append(f"one shard per {self.shard_key} value")
        elif self.shards > 1:
            parts.append(f"{self.shards} shards (Qdrant's id hashing)")
        return "; ".join(parts) or "one shard, no filter"

    def pool(self, memories: Sequence[Any]) -> Pool:
        """The candidate pool of a dataset's memories under this scope."""
        if self.trivial:
            return ONE_SHARD
        for key, _ in self.filters:
            if field_type(memories, key) is None:
                raise InputError(f"--filter {key}: no memory has payload field {key!r}")
        allowed = filter_mask(memories, self.filters)
        if self.shard_key is not None:
            return Pool(allowed, *key_shards(memories, self.shard_key))
        if self.shards == 1:
            return Pool(allowed)
        return Pool(allowed, shard_of(point_ids(memories), self.shards), self.shards)


def key_shards(memories: Sequence[Any], key: str) -> tuple[np.ndarray, int]:
    """Each memory's shard under a custom shard key: the rank of its value of payload field
    ``key`` among the values (sorted: strings, then integers in order); every memory must
    have one (Qdrant refuses a point without its shard key)."""
    missing = [m.id for m in memories if key not in m.payload]
    if len(missing) == len(memories):
        raise InputError(f"--shard-key {key}: no memory has payload field {key!r}")
    if missing:
        raise InputError(
            f"--shard-key {key}: {len(missing)} memories have no {key!r} (e.g. {', '.join(missing[:3])}): "
            "with custom sharding every point names its shard key"
        )
    values = sorted({m.payload[key] for m in memories}, key=lambda v: (isinstance(v, int), v))
    code = {v: i for i, v in enumerate(values)}
    return np.array([code[m.payload[key]] for m in memories], dtype=np.intp), len(values)
