"""Chat requests N at a time (``--concurrency``): ``complete_all`` asks a list of requests through
the reply cache with up to ``concurrency`` of them in flight, and returns their replies in input
order, the same as one at a time would.

What stays as at concurrency 1:

- the replies and the cache: every request's entry is read first (in input order, in the caller's
  thread, so a warning about an entry comes as before), only the misses are sent, by a pool of
  workers that each have their own HTTP client (``ChatClient.twin``), and the replies are taken
  and stored in input order, in the caller's thread;
- a request asked twice in one call (the same cache key): only its first occurrence is sent, the
  later ones are read from the cache once it is stored (``cached`` true), never a second request.
  Without a cache each is sent, as one at a time would;
- retries and errors, per request (each request's own, ``memlab.core.http``). The first error in
  input order is the one raised: no request after it is sent, the ones in flight are stopped
  (their connections closed, no retry) and waited for, so no thread outlives the call.

The progress bar moves as the replies are taken in input order. A request's times (``ttft_s``,
``total_s``) run from its own send, so memlab's queue is not in them; what the server does with
N requests at once (sharing its slots, batching) is (``memlab.answers.study`` says so).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from memlab.answers.cache import ReplyCache, cached_complete, chat_request
from memlab.core.http import Stopped
from memlab.core.numbers import check_number
from memlab.embedding.cache import request_key

if TYPE_CHECKING:
    from memlab.answers.chat import ChatClient, Reply

MAX_CONCURRENCY = 64  # requests in flight: far beyond what one server's slots take at once

Ask = tuple[list[dict[str, str]], int]  # the messages and the repeat (its seed is the config's + repeat)


def check_concurrency(concurrency: object) -> int:
    return int(check_number(concurrency, "--concurrency", integer=True, minimum=1, maximum=MAX_CONCURRENCY))


def complete_all(
    client: ChatClient,
    cache: ReplyCache | None,
    kind: str,
    asks: Sequence[Ask],
    concurrency: int = 1,
    bar: Any = None,
) -> list[Reply]:
    """The reply to each of ``asks``, in order, through ``cache``, with up to ``concurrency`` in
    flight; ``bar`` (a tqdm bar, or None) moves one step per reply."""
    concurrency = check_concurrency(concurrency)
    if concurrency == 1 or len(asks) < 2:
        out = []
        for messages, repeat in asks:
            out.append(cached_complete(client, cache, kind, messages, repeat))
            if bar is not None:
                bar.update(1)
        return out
    return _Flight(client, cache, kind, asks, concurrency, bar).run()


class _Flight:
    """One call's pool: which requests are sent, the first one that failed, who is in flight."""

    def __init__(self, client, cache, kind, asks, concurrency, bar):
        self.client, self.cache, self.kind, self.asks, self.bar = client, cache, kind, asks, bar
        cfg = client.config
        model = client.model  # settled once (a GET of the model list when none is named)
        self.requests = [
            chat_request(kind, messages, model, cfg.parameters(), cfg.seed + r, r, cfg.server)
            for messages, r in asks
        ]
        self.concurrency = concurrency
        self.lock = threading.Lock()
        self.failed = len(asks)  # the first request that failed, by input order (none yet)
        self.flying: dict[int, ChatClient] = {}
        self.idle: list[ChatClient] = []

    def run(self) -> list[Reply]:
        replies: list[Reply | None] = [None] * len(self.asks)
        send, later = self._read_cache(replies)
        twins = [self.client.twin() for _ in range(min(self.concurrency, len(send)))]
        self.idle = list(twins)
        pool = ThreadPoolExecutor(len(twins) or 1, thread_name_prefix="memlab-chat")
        futures: dict[int, Future] = {i: pool.submit(self._work, i) for i in send}
        try:
            for i in range(len(self.asks)):
                if i in futures:
                    replies[i] = futures[i].result()
                    if self.cache is not None:
                        self.cache.put(self.requests[i], replies[i])
                elif i in later:  # asked before in this call: read from the cache, as at concurrency 1
                    messages, repeat = self.asks[i]
                    replies[i] = cached_complete(self.client, self.cache, self.kind, messages, repeat)
                if self.bar is not None:
                    self.bar.update(1)
        except BaseException:  # an error (the first in input order), or Ctrl-C: stop the rest
            self._stop_after(-1)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            for twin in twins:
                self.client.requests += twin.requests
                twin.close()
        return replies  # type: ignore[return-value]

    def _read_cache(self, replies: list[Reply | None]) -> tuple[list[int], set[int]]:
        """(the requests to send, the later occurrences of a request asked before in this call);
        the replies the cache holds filled in."""
        if self.cache is None:
            return list(range(len(self.asks))), set()
        send, later, first = [], set(), set()
        for i, request in enumerate(self.requests):
            key = request_key(request)
            if key in first:
                later.add(i)
                continue
            first.add(key)
            hit = self.cache.get(request)
            if hit is None:
                send.append(i)
            else:
                replies[i] = hit
        return send, later

    def _work(self, i: int) -> Reply:
        with self.lock:
            if i > self.failed:  # an earlier request failed: this one is never sent
                raise Stopped()
            twin = self.idle.pop()
            self.flying[i] = twin
        twin.stopped = lambda: i > self.failed
        try:
            messages, repeat = self.asks[i]
            return twin.complete(messages, self.client.config.seed + repeat)
        except BaseException:
            self._stop_after(i)
            raise
        finally:
            with self.lock:
                del self.flying[i]
                self.idle.append(twin)

    def _stop_after(self, i: int) -> None:
        """Request ``i`` failed: none after it is sent, and those in flight are stopped (their
        connections closed; ``ChatClient.stopped`` keeps them from trying again)."""
        with self.lock:
            self.failed = min(self.failed, i)
            stopping = [twin for j, twin in self.flying.items() if j > self.failed]
        for twin in stopping:
            twin.http.close()
