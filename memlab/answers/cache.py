"""Replies cached by what they depend on: the server, the messages, the model asked for and the
parameters.

One JSON file per request under ``<cache dir>/chat/`` (the cache folder ``--cache-dir`` names, as
for embeddings), named by the SHA-256 of the request: ``{"memlab_chat_cache": 1, "request": ...,
"reply": ...}``. The request names the server by its endpoint without user info or secrets
(``memlab.core.urls.server_identity``), so another server at the same model name gets its own
entries. An entry is checked on read: one that cannot be read, is not such a record, holds
another request (a collision, or an edited file) or a malformed reply is reported
(``CacheWarning``, with its path) and asked again, then overwritten. As strict as the embedding
cache (``memlab.embedding.cache``): only a regular file of the current user is read, opened
without following a link; the folders are real folders of the user, never links; an entry is
written without following any link (``memlab.core.files.write_new_file``), so a link planted in
the cache is replaced, never its target. Neither a key nor a password is part of a request, so
the cache holds no secret; the reply records the model id the server gave.
"""

from __future__ import annotations

from typing import Any

from memlab.answers.chat import Reply, reply_problem
from memlab.core.errors import MemlabError
from memlab.core.http import MAX_REPLY_BYTES
from memlab.embedding.cache import RequestCache

# an entry holds a request and a reply of at most MAX_REPLY_BYTES: one far larger was not written here
MAX_ENTRY_BYTES = 4 * MAX_REPLY_BYTES


class ChatCacheError(MemlabError, RuntimeError):
    """A folder of the reply cache memlab will not write into (a link, a file, someone else's)."""


class ReplyCache(RequestCache):
    """Chat replies on disk, one file per request (``memlab.embedding.cache.RequestCache``)."""

    label = "chat"
    value_key = "reply"
    error = ChatCacheError

    @property
    def max_entry_bytes(self) -> int:  # read when used: the module's constant is the one limit
        return MAX_ENTRY_BYTES

    def value_problem(self, value: Any) -> str | None:
        return reply_problem(value)

    def decode(self, value: Any) -> Reply:
        return Reply.from_dict(value, cached=True)

    def encode(self, value: Reply) -> dict[str, Any]:
        return value.to_dict()


def chat_request(
    kind: str,
    messages: list[dict[str, str]],
    model: str,
    parameters: dict[str, Any],
    seed: int,
    repeat: int,
    server: str,
) -> dict[str, Any]:
    """What a reply depends on: the server (its endpoint without user info or secrets), ``kind``
    (reply or judge), the messages, the model asked for, the parameters (temperature,
    max_tokens), the seed and the repeat (a server that ignores the seed still gets one entry per
    repeat)."""
    return {
        "server": server,
        "kind": kind,
        "messages": messages,
        "model": model,
        "parameters": parameters,
        "seed": seed,
        "repeat": repeat,
    }


def cached_complete(client, cache: ReplyCache | None, kind: str, messages, repeat: int = 0) -> Reply:
    """The reply through the cache: read it, else ask the client and store it."""
    seed = client.config.seed + repeat
    cfg = client.config
    request = chat_request(kind, messages, client.model, cfg.parameters(), seed, repeat, cfg.server)
    if cache is not None and (hit := cache.get(request)) is not None:
        return hit
    reply = client.complete(messages, seed)
    if cache is not None:
        cache.put(request, reply)
    return reply
