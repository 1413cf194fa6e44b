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

import hashlib
import json
import math
import warnings
from pathlib import Path
from typing import Any

from memlab.core.errors import EmbeddingError, MemlabError
from memlab.core.files import write_new_file
from memlab.embedding.cache import CacheWarning, cache_folder, default_cache_dir, read_json_entry

FORMAT = 1
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


def request_key(request: dict[str, Any]) -> str:
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ScoreCache:
    """Reranker scores on disk, one file per pair; ``hits`` and ``misses`` count this run's reads."""

    def __init__(self, cache_dir: str | Path | None = None):
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.folder = root / "rerank"
        self.hits = 0
        self.misses = 0

    def path(self, request: dict[str, Any]) -> Path:
        key = request_key(request)
        return self.folder / key[:2] / f"{key}.json"

    def checked_path(self, request: dict[str, Any]) -> Path:
        path = self.path(request)
        for folder in (self.folder, path.parent):
            try:
                cache_folder(folder)
            except EmbeddingError as e:
                raise RerankCacheError(str(e).replace("embedding cache:", "rerank cache:", 1)) from None
        return path

    def get(self, request: dict[str, Any]) -> float | None:
        """The cached score of ``request``, or None (missing, or unusable: then a warning)."""
        path = self.checked_path(request)
        entry, problem = read_entry(path)
        if entry is None and problem is None:
            self.misses += 1
            return None
        if problem is None:
            score = entry.get("score") if isinstance(entry, dict) else None
            if not isinstance(entry, dict) or entry.get("memlab_rerank_cache") != FORMAT:
                problem = "not a rerank cache entry"
            elif entry.get("request") != request:
                problem = "holds another request"
            elif not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score):
                problem = "its score is not a finite number"
        if problem is not None:
            warnings.warn(f"rerank cache: {path}: {problem}; asking again", CacheWarning, stacklevel=2)
            self.misses += 1
            return None
        self.hits += 1
        return float(entry["score"])

    def put(self, request: dict[str, Any], score: float) -> Path:
        entry = {"memlab_rerank_cache": FORMAT, "request": request, "score": float(score)}
        path = self.checked_path(request)
        data = (json.dumps(entry, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
        try:
            return write_new_file(path, data)
        except IsADirectoryError:
            raise RerankCacheError(f"rerank cache: {path} is a folder, not an entry: remove it") from None


def read_entry(path: Path) -> tuple[Any, str | None]:
    """(the entry's JSON, None), (None, None) when there is none, or (None, why it is unusable)."""
    return read_json_entry(path, MAX_ENTRY_BYTES)
