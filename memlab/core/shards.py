"""A query's candidate pool, once: the tenant filter, then the shards.

A Qdrant collection may hold many users' memories, and may be split into shards. A query with a
filter (``must: user_id = alice``) sees only the memories the filter keeps; a query on a sharded
collection runs its prefetch on every shard with the same limit, so its candidates are the union
of each shard's top ``candidates`` by raw score, not the collection's top ``candidates``
(Qdrant's ``lib/collection/src/collection/query.rs``: each shard answers the whole request, the
collection merges the shards' lists by score and cuts them to ``limit``). The threshold and the
inject limit then act on that pool as they do unsharded: a shard keeps its candidates at or above
the threshold and its first ``inject`` of them, and the merge keeps the first ``inject`` of what
the shards kept, which are the first ``inject`` of the pool's candidates that reach the threshold.

``Pool`` says which memories the filter keeps (``allowed``) and which shard holds each memory
(``shard``); ``pool_mask`` is the one function that narrows a query's candidates by both, called
by the reference (``memlab.core.spec.retrieve``), the sweep's candidate preparation, ``explain``
and the engine checks. Without a filter and with one shard it is ``candidate_mask``, bit for bit.

Which shard a point lands in is the collection's business (``memlab.qdrant.sharding``: Qdrant's
hash ring over point ids, or a custom shard key); here a shard is a small integer per memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memlab.core.errors import InputError
from memlab.core.ranking import candidate_mask, candidate_order, rank_of, select_candidates

MAX_SHARDS = 1024  # the most shards memlab models (a collection's --shards)


@dataclass(frozen=True, eq=False)
class Pool:
    """What a query's candidates are drawn from: ``allowed`` (n,) the memories the tenant filter
    keeps (None: every memory), ``shard`` (n,) each memory's shard, 0..shards-1 (None: one
    shard)."""

    def __post_init__(self) -> None:
        if (
            self.shard is not None
            and self.shard.size
            and not 0 <= int(self.shard.min()) <= int(self.shard.max()) < self.shards
        ):
            raise InputError(f"shard numbers must lie in 0..{self.shards - 1}")

    allowed: np.ndarray | None = None
    shard: np.ndarray | None = None
    shards: int = 1  # how many shards the collection has (some may hold none of these memories)

    @property
    def trivial(self) -> bool:
        """No filter and one shard: the pool is the collection's top ``candidates``."""
        return self.allowed is None and self.shards == 1


ONE_SHARD = Pool()


def narrow(raw: np.ndarray, pool: Pool | None) -> np.ndarray:
    """The raw scores with the memories the filter leaves out unknown (NaN): no path can rank
    them. Without a filter, ``raw`` itself."""
    if pool is None or pool.allowed is None:
        return raw
    return np.where(pool.allowed, raw, np.nan)


def shard_rank(raw: np.ndarray, shard: np.ndarray | None) -> np.ndarray:
    """Each memory's place (0-based) among its own shard's memories by the candidate rule
    (higher raw first, ties in dataset order, unknown scores last), along the last axis.
    ``shard`` None: one shard, the place in the whole collection."""
    raw = np.asarray(raw, dtype=np.float64)
    if shard is None:
        return rank_of(candidate_order(raw))
    shard = np.asarray(shard, dtype=np.intp)
    key = np.where(np.isfinite(raw), -raw, np.inf)
    # by shard, then the candidate key, then position (lexsort is stable): every row groups the
    # memories by shard the same way, so a group starts where the counts of the shards before end
    order = np.lexsort((key, np.broadcast_to(shard, key.shape)), axis=-1)
    counts = np.bincount(shard, minlength=int(shard.max(initial=0)) + 1)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    in_group = np.arange(shard.size) - start[np.sort(shard)]
    # the sorted row's shards are the sorted shard ids: place i of it holds rank in_group[i]
    ranks = np.empty(order.shape, dtype=np.intp)
    np.put_along_axis(ranks, order, np.broadcast_to(in_group, order.shape), axis=-1)
    return ranks


def pool_mask(raw: np.ndarray, k, pool: Pool | None = None) -> np.ndarray:
    """Which memories are a query's candidates, along the last axis (``k`` broadcasts): among
    those the filter keeps, the ones whose raw score is among their own shard's top ``k``.
    Unknown (non-finite) scores are never candidates. With ``pool`` None or trivial this is
    ``memlab.core.ranking.candidate_mask(raw, k)``."""
    if pool is None or pool.trivial:
        return candidate_mask(raw, k)
    raw = narrow(np.asarray(raw, dtype=np.float64), pool)
    return np.isfinite(raw) & (shard_rank(raw, pool.shard) < k)


def pool_candidates(raw: np.ndarray, k: int, pool: Pool | None = None) -> np.ndarray:
    """One query's candidates (indices, in candidate order: higher raw first, ties in dataset
    order): ``select_candidates(raw, k)`` narrowed by the pool."""
    raw = np.asarray(raw, dtype=np.float64)
    if pool is None or pool.trivial:
        return select_candidates(raw, k)
    order = candidate_order(raw)
    return order[pool_mask(raw, k, pool)[order]]


def pool_size(raw: np.ndarray, k, pool: Pool | None = None) -> np.ndarray:
    """How many candidates each query has (at most ``shards * k``), along the last axis."""
    return pool_mask(raw, k, pool).sum(axis=-1)
