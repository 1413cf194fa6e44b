"""Reranker scores cached by what they depend on: the server (its endpoint without user info or
secrets), the reranker kind, the model asked for, its parameters (the chat reranker's prompt
version and N of its top logprobs; the endpoint's request shape), the query text and the memory
text.

One JSON file per (query, memory) pair under ``<cache dir>/rerank/`` (the folder ``--cache-dir``
names, as for embeddings and chat replies), named by the SHA-256 of that key:
``{"memlab_rerank_cache": 1, "request": ..., "score": ...}``. As strict as the embedding and
chat caches (``memlab.embedding.cache``): the folders are real folders of the current user, never
links; only a regular file of the user is read, opened without following a link, at most
``MAX_ENTRY_BYTES``; an entry that cannot be read, is not such a record, holds another request
(a collision, an edited file) or a score that is not a finite number is reported
(``CacheWarning``, with its path) and asked again, then overwritten; an entry is written without
following any link (``memlab.core.files.write_new_file``). No key or password is part of a
request, so the cache holds no secret.
"""

from __future__ import annotations

import math
from typing import Any

from memlab.core.errors import MemlabError
from memlab.embedding.cache import RequestCache

MAX_ENTRY_BYTES = 1 << 20  # a query and a memory of a few KB each: one far larger was not written here


class RerankCacheError(MemlabError, RuntimeError):
    """A folder of the score cache memlab will not write into (a link, a file, someone else's)."""


def score_request(server: str, kind: str, model: str, parameters: dict[str, Any], query: str, document: str):
    """What one score depends on (the cache's key)."""
    return {
        "server": server,
        "kind": kind,
        "model": model,
        "parameters": parameters,
        "query": query,
        "document": document,
    }


class ScoreCache(RequestCache):
    """Reranker scores on disk, one file per pair (``memlab.embedding.cache.RequestCache``)."""

    label = "rerank"
    value_key = "score"
    error = RerankCacheError

    @property
    def max_entry_bytes(self) -> int:  # read when used: the module's constant is the one limit
        return MAX_ENTRY_BYTES

    def value_problem(self, value: Any) -> str | None:
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            return "its score is not a finite number"
        return None

    def decode(self, value: Any) -> float:
        return float(value)

    def encode(self, value: float) -> float:
        return float(value)
