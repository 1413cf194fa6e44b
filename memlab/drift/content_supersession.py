"""Supersession decided by content as well as by the extractor's key.

The key-only rule (``memory_systems.superseded``) lets any newer memory filed under a memory's
(topic, type) key retire it. Two kinds of newer memory do that wrongly: a fact about another
attribute misfiled under the key, and a distractor the extractor typed like a fact. There is no
NLI model to ask "does B contradict A"; the signals here are built from what a store holds:

- **Content key** (``content_keys``): each memory is filed again under the key (of its own type)
  whose other members it is closest to, measured as the cosine between the memory and the
  leave-one-out centroid of the key's visible members, with a bonus ``key_trust`` for the key the
  extractor chose. Nine facts in ten are filed right, so the centroids stand for their topics;
  a misfiled fact lands back with its topic (it is close to its own topic's other statements and
  far from the key it was filed under). Two passes: the second uses the first pass's keys.
- **Low surprise** (``gate``): a newer memory retires only if ``cosine(query, it) + affinity``
  reaches ``retire_gate``, where ``affinity`` is its cosine to the centroid of its content key.
  A correction is about the asked attribute and looks like the topic's other facts; a
  distractor ("my cousin flew in from Chicago") is neither.
- **Value span** (``exempt``): a newer memory that shares a keyword term (the BM25 route's
  tokenizer, stemmed, stop words out) with the older one and is unlike its topic
  (affinity below ``exempt_affinity``) names the same value: it retires nothing.
- **Same-type cosine pass**: a newer memory of the same type at cosine >= ``supersede_cosine``
  also counts as the same attribute (a paraphrase filed under another subject; seed 001).

None of these reads the generator's truth (topic, value, kind): only the cosines, the
(filed topic, type) key, the type, the order and the texts' terms. The thresholds are axes of
the read system's grid, chosen on the tuning seeds by the drift study.
"""

from __future__ import annotations

import numpy as np


def centroid_affinity(cosine: np.ndarray, member: np.ndarray) -> np.ndarray:
    """Cosine between each memory and the leave-one-out centroid of each group, from the (M, M)
    unit-vector cosines alone: ``member`` is (M, K) bool, the result (M, K), ``nan`` where the
    group has no member but the memory itself.

    With ``A`` the group's indicator, ``x_i . sum_j x_j = (C A)_i`` and
    ``|sum_j x_j|^2 = A' C A``; leaving memory ``i`` out subtracts its own terms.
    """
    a = member.astype(np.float64)
    ca = cosine @ a  # (M, K)
    total = np.einsum("jk,jl,lk->k", a, cosine, a)  # (K,)
    own = np.diag(cosine)[:, None]
    dot = ca - a * own
    norm2 = total[None, :] - a * (2 * ca - own)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm2 > 1e-12, dot / np.sqrt(np.maximum(norm2, 1e-12)), np.nan)


def content_keys(
    cosine: np.ndarray,
    key: np.ndarray,
    key_type: np.ndarray,
    memory_type: np.ndarray,
    visible: np.ndarray,
    key_trust: float,
    passes: int = 2,
) -> tuple[np.ndarray, np.ndarray]:
    """(content key (M,), affinity to it (M,)) of every memory.

    ``key`` (M,) are the extractor's key ids, ``key_type`` (K,) the type id of each key,
    ``memory_type`` (M,) each memory's type id; only ``visible`` memories make the centroids.
    A memory is refiled under argmax over keys of its type of ``affinity + key_trust * [its
    filed key]`` (ties: the lower key id); where no key of its type has another member, it keeps
    its filed key and its affinity is ``nan``.
    """
    n_keys = len(key_type)
    ids = np.arange(n_keys)
    same_type = memory_type[:, None] == key_type[None, :]  # (M, K)
    filed = key[:, None] == ids[None, :]
    assigned = key
    affinity = np.full(len(key), np.nan)
    for _ in range(passes):
        member = (assigned[:, None] == ids[None, :]) & visible[:, None]
        aff = centroid_affinity(cosine, member)
        score = np.where(same_type & np.isfinite(aff), aff + key_trust * filed, -np.inf)
        best = np.argmax(score, axis=1)
        found = np.isfinite(score[np.arange(len(key)), best])
        assigned = np.where(found, best, key)
        affinity = np.where(found, aff[np.arange(len(key)), best], np.nan)
    return assigned, affinity


def content_retired(
    *,
    cosine: np.ndarray,
    query_cosine: np.ndarray,
    key: np.ndarray,
    key_type: np.ndarray,
    memory_type: np.ndarray,
    visible: np.ndarray,
    shares_term: np.ndarray,
    params: dict[str, np.ndarray],
) -> np.ndarray:
    """Which memories are retired for each (configuration, query): (C, Q, M) bool.

    Memory ``i`` is retired when some newer visible memory ``j`` is about the same attribute
    (same content key, or same type at cosine >= ``supersede_cosine``), passes the gate
    ``cosine(q, j) + affinity_j >= retire_gate`` and is not exempt (``shares_term[i, j]`` and
    ``affinity_j < exempt_affinity``). ``query_cosine`` is (Q, M) raw cosines.
    """
    m = len(key)
    newer = np.triu(np.ones((m, m), dtype=bool), k=1) & visible[None, :]
    same_type = memory_type[:, None] == memory_type[None, :]
    trust = np.asarray(params["key_trust"], dtype=np.float64)
    out = np.zeros((len(trust), query_cosine.shape[0], m), dtype=bool)
    for value in np.unique(trust):  # content keys depend on key_trust alone
        rows = np.flatnonzero(trust == value)
        ck, aff = content_keys(cosine, key, key_type, memory_type, visible, float(value))
        aff = np.where(np.isnan(aff), 1.0, aff)  # no other member: nothing says it is off-topic
        same_key = ck[:, None] == ck[None, :]
        for c in rows:
            about = same_key | (same_type & (cosine >= params["supersede_cosine"][c]))
            exempt = shares_term & (aff[None, :] < params["exempt_affinity"][c])
            pair = (newer & about & ~exempt).astype(np.float64)  # (M i, M j)
            gate = (query_cosine + aff[None, :] >= params["retire_gate"][c]).astype(np.float64)  # (Q, M j)
            out[c] = (gate @ pair.T) > 0
    return out
