"""Maximal marginal relevance (MMR) exactly as Qdrant computes it, for the spec's MMR stage.

Qdrant's own code (qdrant/qdrant, ``lib/shard/src/query/mmr/mod.rs``,
``maximal_marginal_relevance``; read at commit 74f3e85b):

- ``lambda = 1 - diversity`` (``lib/collection/src/operations/universal_query/collection_query.rs``:
  ``diversity.map(|x| 1.0 - x)``, default 0.5 when no diversity is given), all in float32;
- relevance is the similarity of the query vector to each candidate, and the similarity between
  two candidates is the collection's distance between their stored vectors (for a Cosine
  collection the dot product of the unit vectors: the raw cosine memlab's scores already hold);
- the first pick is the candidate of highest relevance; then, while fewer than ``limit`` are
  picked, the candidate maximising ``lambda * relevance - (1 - lambda) * max_sim_to_picked``;
- ties: Rust's ``max_by_key`` keeps the LAST of equal maxima, in the order of an ``IndexSet``
  that starts in the candidates' order and loses each pick by ``swap_remove`` (the last element
  moves into the picked one's place); ``select`` below keeps that order step for step;
- fewer than two candidates come back as they are; every point returned keeps its original
  score (the nearest search's cosine), not its MMR score.

``select`` is the one-question form (a plain loop, as the Rust); ``select_many`` the same over
many questions at once with numpy, and ``memlab.core.sweep_kernels.mmr_select`` compiled by
numba; the tests hold the three equal.
"""

from __future__ import annotations

import numpy as np

from memlab.core.vectors import cosine_table


def mmr_lambda(diversity: float) -> tuple[np.float32, np.float32]:
    """(lambda, 1 - lambda) in float32, as Qdrant derives them from ``diversity``."""
    lam = np.float32(1.0) - np.float32(diversity)
    return lam, np.float32(1.0) - lam


def similarities(vectors: np.ndarray | None, idx: np.ndarray) -> np.ndarray:
    """The candidates' pairwise similarities (float32): Qdrant's Cosine between their vectors,
    through ``cosine_table`` as every raw score in memlab; zeros without vectors (diversity 0
    multiplies them by 0, so they cannot matter there)."""
    if vectors is None:
        return np.zeros((len(idx), len(idx)), dtype=np.float32)
    v = np.asarray(vectors)[np.asarray(idx, dtype=np.intp)]
    return cosine_table(v, v).astype(np.float32)


def select(relevance: np.ndarray, similarity: np.ndarray, diversity: float, limit: int) -> np.ndarray:
    """The positions (into ``relevance``) MMR picks, in pick order: Qdrant's
    ``maximal_marginal_relevance`` line for line, in float32."""
    rel = np.asarray(relevance, dtype=np.float32)
    sim = np.asarray(similarity, dtype=np.float32)
    n = rel.shape[0]
    if n < 2:  # Qdrant returns fewer than two candidates untouched
        return np.arange(n)
    if limit <= 0:
        return np.zeros(0, dtype=np.intp)
    lam, mu = mmr_lambda(diversity)
    remaining = list(range(n))

    def swap_remove(i: int) -> None:
        p = remaining.index(i)
        remaining[p] = remaining[-1]
        remaining.pop()

    best = remaining[0]
    for c in remaining:  # the highest relevance, the last of equals
        if rel[c] >= rel[best]:
            best = c
    picked = [best]
    swap_remove(best)
    max_sim = sim[:, best].copy()
    while len(picked) < limit and remaining:
        best, best_score = -1, np.float32(0)
        for c in remaining:
            score = lam * rel[c] - mu * max_sim[c]
            if best < 0 or score >= best_score:
                best, best_score = c, score
        picked.append(best)
        swap_remove(best)
        max_sim = np.maximum(max_sim, sim[:, best])
    return np.asarray(picked, dtype=np.intp)


def select_many(
    relevance: np.ndarray, similarity: np.ndarray, counts: np.ndarray, diversity: float, limit: int
) -> np.ndarray:
    """``select`` for many questions at once: ``relevance`` (Q, P), ``similarity`` (Q, P, P),
    ``counts`` (Q,) how many of each row's P places hold a candidate (the first ones). Returns
    (Q, limit) positions in pick order, -1 past a row's picks."""
    rel = np.asarray(relevance, dtype=np.float32)
    sim = np.asarray(similarity, dtype=np.float32)
    counts = np.asarray(counts, dtype=np.intp)
    n_q, n_p = rel.shape
    lam, mu = mmr_lambda(diversity)
    out = np.full((n_q, max(limit, 0)), -1, dtype=np.intp)
    rows = np.arange(n_q)
    at = np.broadcast_to(np.arange(n_p), (n_q, n_p)).copy()  # at[q, place]: the candidate there
    pos = at.copy()  # pos[q, candidate]: its place in the remaining set
    length = counts.copy()
    remaining = np.arange(n_p)[None, :] < counts[:, None]
    max_sim = np.zeros((n_q, n_p), dtype=np.float32)
    few = counts < 2  # untouched, in their order (at most one)
    for step in range(max(limit, 0)):
        active = (length > 0) & ~few
        if not active.any():
            break
        score = rel if step == 0 else lam * rel - mu * max_sim
        masked = np.where(remaining, score, -np.inf)
        top = masked.max(axis=1, keepdims=True)
        # the last of equal maxima in the remaining set's order: the highest place among them
        best = np.argmax(np.where(remaining & (masked == top), pos, -1), axis=1)
        best = np.where(active, best, -1)
        a = rows[active]
        b = best[active]
        out[a, step] = b
        remaining[a, b] = False
        last = at[a, length[a] - 1]  # swap_remove: the last one moves into the pick's place
        at[a, pos[a, b]] = last
        pos[a, last] = pos[a, b]
        length[a] -= 1
        # the highest similarity to a pick so far (the first pick's own, not 0, at step 0)
        max_sim[a] = sim[a, :, b] if step == 0 else np.maximum(max_sim[a], sim[a, :, b])
    if limit > 0:
        out[few & (counts == 1), 0] = 0
    return out


def passed_over(similarity: np.ndarray, picks: np.ndarray, k: int) -> list[tuple[int, int, int, float]]:
    """Why MMR left out candidates the raw score alone would have kept: for each place ``p`` among
    the first ``k`` of the pool (candidate order) that MMR did not pick, (p, the step that passed
    it over: the first pick placed after it, the earlier pick it is most similar to, that
    similarity). Without an earlier pick (a tie decided the first pick) the pick is -1, the
    similarity NaN."""
    sim = np.asarray(similarity, dtype=np.float32)
    picks = [int(x) for x in picks]
    out = []
    for p in range(min(k, sim.shape[0])):
        if p in picks:
            continue
        step = next(t for t, x in enumerate(picks) if x > p)  # k picks, at most k - 1 before p
        before = picks[:step]
        if not before:
            out.append((p, step, -1, float("nan")))
            continue
        closest = max(before, key=lambda x: sim[p, x])
        out.append((p, step, closest, float(sim[p, closest])))
    return out
