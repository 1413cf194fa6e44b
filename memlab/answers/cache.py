"""Replies cached by what they depend on: the messages, the model asked for and the parameters.

One JSON file per request under ``<cache dir>/chat/`` (the cache folder ``--cache-dir`` names, as
for embeddings), named by the SHA-256 of the request: ``{"memlab_chat_cache": 1, "request": ...,
"reply": ...}``. An entry is checked on read: one that cannot be read, is not such a record,
holds another request (a collision, or an edited file) or a malformed reply is reported
(``CacheWarning``, with its path) and asked again, then overwritten. Entries are written
atomically (``memlab.core.files``). Neither the server's URL nor any key is part of a request, so
the cache holds no secret; the reply records the model id the server gave.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

from memlab.answers.chat import Reply, reply_problem
from memlab.core.files import atomic_write_text
from memlab.embedding.cache import CacheWarning, default_cache_dir

FORMAT = 1


def request_key(request: dict[str, Any]) -> str:
    """The SHA-256 of the request as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ReplyCache:
    """Chat replies on disk, one file per request; ``hits`` and ``misses`` count this run's reads."""

    def __init__(self, cache_dir: str | Path | None = None):
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.folder = root / "chat"
        self.hits = 0
        self.misses = 0

    def path(self, request: dict[str, Any]) -> Path:
        key = request_key(request)
        return self.folder / key[:2] / f"{key}.json"

    def get(self, request: dict[str, Any]) -> Reply | None:
        """The cached reply to ``request``, or None (missing, or unusable: then a warning)."""
        path = self.path(request)
        if not path.is_file():
            self.misses += 1
            return None
        problem = None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError) as e:
            entry, problem = None, f"unreadable ({type(e).__name__})"
        if problem is None:
            if not isinstance(entry, dict) or entry.get("memlab_chat_cache") != FORMAT:
                problem = "not a chat cache entry"
            elif entry.get("request") != request:
                problem = "holds another request"
            else:
                problem = reply_problem(entry.get("reply"))
        if problem is not None:
            warnings.warn(f"chat cache: {path}: {problem}; asking again", CacheWarning, stacklevel=2)
            self.misses += 1
            return None
        self.hits += 1
        return Reply.from_dict(entry["reply"], cached=True)

    def put(self, request: dict[str, Any], reply: Reply) -> Path:
        entry = {"memlab_chat_cache": FORMAT, "request": request, "reply": reply.to_dict()}
        path = self.path(request)
        path.parent.mkdir(parents=True, exist_ok=True)
        return atomic_write_text(path, json.dumps(entry, ensure_ascii=False, indent=1) + "\n")


def chat_request(
    kind: str, messages: list[dict[str, str]], model: str, parameters: dict[str, Any], seed: int, repeat: int
) -> dict[str, Any]:
    """What a reply depends on: ``kind`` (reply or judge), the messages, the model asked for, the
    parameters (temperature, max_tokens), the seed and the repeat (a server that ignores the seed
    still gets one entry per repeat)."""
    return {
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
    request = chat_request(kind, messages, client.model, client.config.parameters(), seed, repeat)
    if cache is not None and (hit := cache.get(request)) is not None:
        return hit
    reply = client.complete(messages, seed)
    if cache is not None:
        cache.put(request, reply)
    return reply
