"""Every (query, memory) pair of a rerank pool scored through the cache, up to ``concurrency``
requests in flight, the scores in input order, the same as one at a time would give (as
``memlab answer --concurrency`` sends its chat requests: ``memlab.answers.inflight``).

- every pair's entry is read first, in input order, in the caller's thread (a warning about an
  entry comes in order); a pair asked twice is asked once;
- the misses become requests: one per pair for the chat reranker (pointwise), one per query with
  all its missing memories for the endpoint (one request scores many documents);
- a pool of workers, each with its own HTTP client (``Reranker.twin``), sends them; the replies
  are taken and stored in input order, in the caller's thread;
- retries and errors per request (``memlab.core.http``); the first error in input order is the
  one raised: no request after it is sent, those in flight are stopped (their connections
  closed, no retry) and waited for, so no thread outlives the call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlab.core import http
from memlab.embedding.cache import request_key
from memlab.rerank.cache import ScoreCache, score_request
from memlab.rerank.clients import Reranker

Pair = tuple[str, str]  # (query, memory text)


def check_concurrency(concurrency: object, flag: str = "--rerank-concurrency") -> int:
    return http.check_concurrency(concurrency, flag)


def score_pairs(
    reranker: Reranker,
    pairs: Sequence[Pair],
    cache: ScoreCache | None = None,
    concurrency: int = 1,
    bar: Any = None,
) -> list[float]:
    """The reranker's score of each (query, memory) pair, in order; ``bar`` (a tqdm bar or None)
    moves one step per request answered."""
    concurrency = check_concurrency(concurrency)
    cfg = reranker.config
    model = reranker.model  # settled once (a GET of the model list when none is named)
    requests = [score_request(cfg.server, cfg.kind, model, cfg.parameters(), q, d) for q, d in pairs]
    scores: list[float | None] = [None] * len(pairs)
    first: dict[str, int] = {}  # a key's first pair
    missing: list[int] = []
    for i, request in enumerate(requests):
        key = request_key(request)
        if key in first:
            continue
        first[key] = i
        hit = cache.get(request) if cache is not None else None
        if hit is None:
            missing.append(i)
        else:
            scores[i] = hit
    asks = _group(pairs, missing, reranker.batch)

    def ask(client: Reranker, n: int) -> list[float]:
        members = asks[n]
        return client.score(pairs[members[0]][0], [pairs[i][1] for i in members])

    def take(n: int, got: list[float] | None) -> None:  # in input order: a failure keeps what came before
        for i, s in zip(asks[n], got or (), strict=True):  # every request is sent: got is never None
            scores[i] = s
            if cache is not None:
                cache.put(requests[i], s)
        if bar is not None:
            bar.update(1)

    if concurrency == 1 or len(asks) < 2:
        for n in range(len(asks)):
            take(n, ask(reranker, n))
    else:
        http.in_order(reranker, range(len(asks)), len(asks), ask, take, concurrency, "memlab-rerank")
    for i, request in enumerate(requests):
        if scores[i] is None:
            scores[i] = scores[first[request_key(request)]]
    return scores  # type: ignore[return-value]  (every pair filled)


def _group(pairs: Sequence[Pair], missing: list[int], batch: bool) -> list[list[int]]:
    """The requests: the missing pairs one each, or (a batch reranker) grouped by query, in the
    order of each query's first missing pair."""
    if not batch:
        return [[i] for i in missing]
    groups: dict[str, list[int]] = {}
    for i in missing:
        groups.setdefault(pairs[i][0], []).append(i)
    return list(groups.values())
