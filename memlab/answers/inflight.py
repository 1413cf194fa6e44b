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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memlab.answers.cache import ReplyCache, cached_complete, chat_request
from memlab.core.http import check_concurrency, in_order
from memlab.embedding.cache import request_key

if TYPE_CHECKING:
    from memlab.answers.chat import ChatClient, Reply

Ask = tuple[list[dict[str, str]], int]  # the messages and the repeat (its seed is the config's + repeat)


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
    cfg = client.config
    model = client.model  # settled once (a GET of the model list when none is named)
    requests = [
        chat_request(kind, messages, model, cfg.parameters(), cfg.seed + r, r, cfg.server)
        for messages, r in asks
    ]
    replies: list[Reply | None] = [None] * len(asks)
    send, later = _read_cache(cache, requests, replies)
    sent = set(send)

    def ask(twin: ChatClient, i: int) -> Reply:
        messages, repeat = asks[i]
        return twin.complete(messages, cfg.seed + repeat)

    def take(i: int, reply: Reply | None) -> None:
        if i in sent:
            replies[i] = reply
            if cache is not None:
                cache.put(requests[i], reply)
        elif i in later:  # asked before in this call: read from the cache, as at concurrency 1
            messages, repeat = asks[i]
            replies[i] = cached_complete(client, cache, kind, messages, repeat)
        if bar is not None:
            bar.update(1)

    in_order(client, send, len(asks), ask, take, concurrency, "memlab-chat")
    return replies  # type: ignore[return-value]


def _read_cache(
    cache: ReplyCache | None, requests: list[dict[str, Any]], replies: list[Reply | None]
) -> tuple[list[int], set[int]]:
    """(the requests to send, the later occurrences of a request asked before in this call);
    the replies the cache holds filled in."""
    if cache is None:
        return list(range(len(requests))), set()
    send, later, first = [], set(), set()
    for i, request in enumerate(requests):
        key = request_key(request)
        if key in first:
            later.add(i)
            continue
        first.add(key)
        hit = cache.get(request)
        if hit is None:
            send.append(i)
        else:
            replies[i] = hit
    return send, later
