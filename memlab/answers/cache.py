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

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

from memlab.answers.chat import Reply, reply_problem
from memlab.core.errors import EmbeddingError, MemlabError
from memlab.core.files import write_new_file
from memlab.core.http import MAX_REPLY_BYTES
from memlab.embedding.cache import CacheWarning, cache_folder, default_cache_dir, read_json_entry

FORMAT = 1
# an entry holds a request and a reply of at most MAX_REPLY_BYTES: one far larger was not written here
MAX_ENTRY_BYTES = 4 * MAX_REPLY_BYTES


class ChatCacheError(MemlabError, RuntimeError):
    """A folder of the reply cache memlab will not write into (a link, a file, someone else's)."""


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

    def checked_path(self, request: dict[str, Any]) -> Path:
        """``path(request)``, its folders made when missing and checked (``cache_folder``): real
        folders of the current user, never links; otherwise one line, before anything is read."""
        path = self.path(request)
        for folder in (self.folder, path.parent):
            try:
                cache_folder(folder)
            except EmbeddingError as e:
                raise ChatCacheError(str(e).replace("embedding cache:", "chat cache:", 1)) from None
        return path

    def get(self, request: dict[str, Any]) -> Reply | None:
        """The cached reply to ``request``, or None (missing, or unusable: then a warning)."""
        path = self.checked_path(request)
        entry, problem = read_entry(path)
        if entry is None and problem is None:
            self.misses += 1
            return None
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
        path = self.checked_path(request)
        data = (json.dumps(entry, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
        try:
            return write_new_file(path, data)
        except IsADirectoryError:
            raise ChatCacheError(f"chat cache: {path} is a folder, not an entry: remove it") from None


def read_entry(path: Path) -> tuple[Any, str | None]:
    """(the entry's JSON, None), (None, None) when there is none, or (None, why it is unusable)
    (``memlab.embedding.cache.read_json_entry``; its folders are checked before:
    ``ReplyCache.checked_path``)."""
    return read_json_entry(path, MAX_ENTRY_BYTES)


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
