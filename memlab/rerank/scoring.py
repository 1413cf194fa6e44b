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

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from memlab.core.http import Stopped
from memlab.core.numbers import check_number
from memlab.embedding.cache import request_key
from memlab.rerank.cache import ScoreCache, score_request
from memlab.rerank.clients import Reranker

MAX_CONCURRENCY = 64

Pair = tuple[str, str]  # (query, memory text)


def check_concurrency(concurrency: object, flag: str = "--rerank-concurrency") -> int:
    return int(check_number(concurrency, flag, integer=True, minimum=1, maximum=MAX_CONCURRENCY))


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

    def take(n: int, got: list[float]) -> None:  # in input order, so a failure keeps what came before
        for i, s in zip(asks[n], got, strict=True):
            scores[i] = s
            if cache is not None:
                cache.put(requests[i], s)

    _Flight(reranker, pairs, asks, concurrency, bar).run(take)
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


class _Flight:
    """One call's requests: who is in flight, the first that failed (by input order)."""

    def __init__(self, reranker: Reranker, pairs, asks, concurrency: int, bar):
        self.reranker, self.pairs, self.asks, self.bar = reranker, pairs, asks, bar
        self.concurrency = concurrency
        self.lock = threading.Lock()
        self.failed = len(asks)
        self.flying: dict[int, Reranker] = {}
        self.idle: list[Reranker] = []

    def ask(self, client: Reranker, n: int) -> list[float]:
        members = self.asks[n]
        return client.score(self.pairs[members[0]][0], [self.pairs[i][1] for i in members])

    def run(self, take: Callable[[int, list[float]], None]) -> None:
        """Each request answered, handed to ``take`` in input order."""
        if self.concurrency == 1 or len(self.asks) < 2:
            for n in range(len(self.asks)):
                take(n, self.ask(self.reranker, n))
                if self.bar is not None:
                    self.bar.update(1)
            return
        twins = [self.reranker.twin() for _ in range(min(self.concurrency, len(self.asks)))]
        self.idle = list(twins)
        pool = ThreadPoolExecutor(len(twins), thread_name_prefix="memlab-rerank")
        futures: dict[int, Future] = {n: pool.submit(self._work, n) for n in range(len(self.asks))}
        try:
            for n in range(len(self.asks)):
                take(n, futures[n].result())
                if self.bar is not None:
                    self.bar.update(1)
        except BaseException:  # the first error in input order, or Ctrl-C: stop the rest
            self._stop_after(-1)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            for twin in twins:
                self.reranker.requests += twin.requests
                twin.close()

    def _work(self, n: int) -> list[float]:
        with self.lock:
            if n > self.failed:
                raise Stopped()
            twin = self.idle.pop()
            self.flying[n] = twin
        twin.stopped = lambda: n > self.failed
        try:
            return self.ask(twin, n)
        except BaseException:
            self._stop_after(n)
            raise
        finally:
            with self.lock:
                del self.flying[n]
                self.idle.append(twin)

    def _stop_after(self, n: int) -> None:
        with self.lock:
            self.failed = min(self.failed, n)
            stopping = [twin for j, twin in self.flying.items() if j > self.failed]
        for twin in stopping:
            twin.http.close()
