"""An OpenAI-compatible chat endpoint: ``POST {url}/chat/completions``, as Ollama, vLLM,
llama.cpp's server and the cloud APIs speak it.

Each request streams (``"stream": true``, server-sent events), so the time to the first token is
measured beside the total; a server that answers with one JSON body instead is read as such (its
first token is its whole reply). Requests go through ``httpx`` as every server's do
(``memlab.core.http``): a deadline per request (the whole request, not a wait per read: a server
trickling a token or a keep-alive every half second still times out), retries with exponential
backoff (``tenacity``) on what may pass (no connection, no answer in time, a reply cut short or
empty, HTTP 429 and 5xx; another HTTP error fails at once), at most ``max_bytes`` of reply, and
one line naming the server, its URL redacted. What comes back is checked before anything uses or
caches it: a reply of the wrong shape, an ``error`` event, a stream without its ``[DONE]``, text
that is not Unicode are each one line, never a reply. The seed is sent with every request
(servers that know it, such as llama.cpp's and vLLM's, then reply the same to the same prompt),
and the temperature is recorded with every reply. The API key is read from the environment
variable ``api_key_env`` names and is never recorded.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

from memlab.core.http import (
    MAX_REPLY_BYTES,
    BadReply,
    HttpClient,
    HttpConfig,
    Stopped,
    json_reply,
    raise_for_status,
    read_limited,
)
from memlab.core.numbers import check_number, counted
from memlab.core.textfiles import surrogate_problem
from memlab.core.urls import excerpt, join_path, redact

CHAT_PATH = "chat/completions"
# a token streams as one byte of reply at least, and a reply holds MAX_REPLY_BYTES at most: a
# larger --max-tokens could never be met, and is no bound at all
MAX_TOKENS = MAX_REPLY_BYTES


@dataclass(frozen=True)
class ChatConfig(HttpConfig):
    """Where the chat model is and how it is asked (``--chat-url`` and its companions): what every
    server client is configured with (``memlab.core.http.HttpConfig``: the API key, the timeout,
    the attempts, the size limit), and the chat's own model and sampling."""

    what: ClassVar[str] = "chat server"

    url: str
    model: str = ""  # the name sent as "model"; "": the first model the server lists
    temperature: float = 0.7
    max_tokens: int = 256
    seed: int = 0  # repeat r is sent with seed + r
    # the reply's form, sent as "response_format" (the judge's JSON verdict); None: free text
    response_format: dict[str, Any] | None = None
    option: str = field(default="--chat-url", kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_number(self.temperature, "--temperature", minimum=0, maximum=2)
        check_number(self.max_tokens, "--max-tokens", integer=True, minimum=1, maximum=MAX_TOKENS)
        check_number(self.seed, "--seed", integer=True, minimum=0)

    @property
    def endpoint(self) -> str:
        """``{url}/chat/completions`` (kept when the URL ends in it), the query after the path."""
        return join_path(self.url, CHAT_PATH)

    @property
    def models_endpoint(self) -> str:
        parts = urlsplit(self.endpoint)
        base = urlunsplit(parts._replace(path=parts.path.removesuffix("/" + CHAT_PATH)))
        return join_path(base, "models")

    def parameters(self) -> dict[str, Any]:
        """What a reply depends on besides the prompt and the model (the cache's key)."""
        out: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.response_format is not None:
            out["response_format"] = self.response_format
        return out


@dataclass(frozen=True)
class Reply:
    """One chat reply, with the server's model id and its timings (seconds)."""

    text: str
    model_id: str  # the "model" the server says answered
    ttft_s: float  # request sent to the first content token
    total_s: float  # request sent to the last byte
    finish_reason: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("cached")
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any], cached: bool = False) -> Reply:
        return cls(**{k: d[k] for k in REPLY_KEYS}, cached=cached)


REPLY_KEYS = ("text", "model_id", "ttft_s", "total_s", "finish_reason", "prompt_tokens", "completion_tokens")


def reply_problem(d: Any) -> str | None:
    """Why ``d`` is not a stored reply, or None."""
    if not isinstance(d, dict) or set(d) != set(REPLY_KEYS):
        return "not a reply record"
    if not all(isinstance(d[k], str) for k in ("text", "model_id", "finish_reason")):
        return "text, model_id or finish_reason is not a string"
    problem = surrogate_problem({k: d[k] for k in ("text", "model_id", "finish_reason")})
    if problem is not None:
        return problem
    for k in ("ttft_s", "total_s"):
        v = d[k]
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
            return f"{k} is not a time in seconds"
    for k in ("prompt_tokens", "completion_tokens"):
        if d[k] is not None and (not isinstance(d[k], int) or isinstance(d[k], bool) or d[k] < 0):
            return f"{k} is not a count"
    return None


class ChatClient:
    """Sends chat requests to one endpoint, with retries and a deadline per request
    (``memlab.core.http``); ``complete`` returns a ``Reply``. One request (``exchange``) reads
    nothing of the client but its configuration; requests side by side each go through their own
    client (``twin``, ``memlab.answers.inflight``)."""

    def __init__(self, config: ChatConfig):
        self.config = config
        self.requests = 0
        self._model = config.model
        self.http = HttpClient(config)
        # asked before every try of a request: True stops it (``Stopped``), an earlier one failed
        self.stopped: Callable[[], bool] = lambda: False

    def twin(self) -> ChatClient:
        """Another client of the same server and model (the model settled here, once), with its
        own HTTP client: for a request sent beside this one's."""
        other = ChatClient(self.config)
        other._model = self.model
        return other

    @property
    def endpoint(self) -> str:
        """The endpoint as printed (redacted); requests go to ``config.endpoint``."""
        return self.config.shown

    @property
    def model(self) -> str:
        """The model name sent: the one asked for, else the first the server lists."""
        if not self._model:
            self._model = self.http.send(self._first_model, self.config.models_endpoint)
        return self._model

    def _first_model(self, client) -> str:
        cfg = self.config
        where = f"{cfg.what} {redact(cfg.models_endpoint)}"
        with client.stream("GET", cfg.models_endpoint) as response:
            raise_for_status(response, cfg.max_bytes, where)
            body = b"".join(read_limited(response.iter_bytes(), cfg.max_bytes, where))
        data = parse_json_reply(body, response.headers.get("content-type", ""), where, "a model list")
        listed = data.get("data") if isinstance(data, dict) else None
        first = listed[0] if isinstance(listed, list) and listed else None
        name = first.get("id") if isinstance(first, dict) else None
        if not isinstance(name, str) or not name.strip():
            raise BadReply(f"{where} lists no model: name one with {cfg.option.replace('url', 'model')}")
        return name

    def body(self, messages: list[dict[str, str]], seed: int) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "seed": seed,
            **self.config.parameters(),
        }

    def complete(self, messages: list[dict[str, str]], seed: int | None = None) -> Reply:
        """One reply to ``messages`` (seed: the config's when None)."""
        body = self.body(messages, self.config.seed if seed is None else seed)
        return self.http.send(lambda client: self.exchange(client, body), self.config.endpoint)

    def exchange(self, client, body: dict[str, Any]) -> Reply:
        """One request on ``client`` and its reply, checked (``whole_reply``, ``stream_reply``)."""
        if self.stopped():
            raise Stopped()
        cfg = self.config
        where = f"{cfg.what} {self.endpoint}"
        content = json.dumps(body, ensure_ascii=False).encode()
        start = time.perf_counter()
        with client.stream("POST", cfg.endpoint, content=content) as response:
            self.requests += 1
            raise_for_status(response, cfg.max_bytes, where)
            chunks = read_limited(response.iter_bytes(), cfg.max_bytes, where)
            kind = response.headers.get("content-type", "")
            if "text/event-stream" not in kind:
                body_bytes = b"".join(chunks)
                return whole_reply(body_bytes, kind, where, time.perf_counter() - start)
            return stream_reply(sse_data(chunks, where), where, start)

    def close(self) -> None:
        self.http.close()


# ---------------------------------------------------------------------------------------------
# what a server sent, checked: a reply memlab records, or one line saying why it is none


def broken(message: str) -> Exception:
    """A reply cut short or empty: ``httpx.RemoteProtocolError``, retried like a broken
    connection, never taken as a reply."""
    import httpx

    return httpx.RemoteProtocolError(message)


def parse_json_reply(data: bytes, content_type: str, where: str, what: str) -> Any:
    """``data`` (a whole body or one stream event) as JSON (``memlab.core.http.json_reply``)."""
    said = "no chat reply" if what == "a reply" else None
    return json_reply(data, content_type, where, what, said)


def shape(where: str, what: str, value: Any) -> BadReply:
    return BadReply(f"{where} sent {what}: {excerpt(json.dumps(value, ensure_ascii=False, default=str))}")


def content_text(value: Any, where: str) -> str:
    """A message's ``content``: text, nothing (null: ""), or OpenAI's list of parts, whose text
    parts are joined (an image or a refusal part adds nothing)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(p, dict) for p in value):
        texts = [p.get("text") for p in value if p.get("type", "text") == "text"]
        if all(isinstance(t, str) for t in texts):
            return "".join(texts)
    raise shape(where, "a 'content' that is neither text nor a list of text parts", value)


def text_field(obj: dict[str, Any], key: str, where: str) -> str:
    """A field that is text when present (``model``, ``finish_reason``): "" when absent or null."""
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value or ""
    raise shape(where, f"a {key!r} that is not text", value)


def usage_counts(usage: Any, where: str) -> tuple[int | None, int | None]:
    """(prompt tokens, completion tokens) of a ``usage`` object (absent or null: unknown)."""
    if usage is None:
        return None, None
    if not isinstance(usage, dict):
        raise shape(where, "a 'usage' that is not an object of token counts", usage)
    counts = []
    for key in ("prompt_tokens", "completion_tokens"):
        n = usage.get(key)
        if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 0):
            raise shape(where, f"a 'usage' whose {key!r} is not a count", usage)
        counts.append(n)
    return counts[0], counts[1]


def whole_reply(data: bytes, content_type: str, where: str, total: float) -> Reply:
    """A reply sent as one JSON body (its first token is its whole reply)."""
    reply = parse_json_reply(data, content_type, where, "a reply")
    if isinstance(reply, dict) and "error" in reply:
        raise shape(where, "an error, not a reply", reply["error"])
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise shape(where, "no chat reply (no list of 'choices')", reply)
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise shape(where, "a choice whose 'message' is not an object", choices[0])
    return Reply(
        content_text(message.get("content"), where),
        text_field(reply, "model", where),
        total,
        total,
        text_field(choices[0], "finish_reason", where),
        *usage_counts(reply.get("usage"), where),
    )


def sse_data(chunks: Iterable[bytes], where: str) -> Iterator[bytes]:
    """The ``data:`` payloads of a server-sent event stream, as they arrive (a line ends in LF or
    CRLF; comments, keep-alives and other fields are skipped)."""
    pending = b""
    for chunk in chunks:
        if b"\n" not in chunk:  # most of a long line: kept until its end arrives
            pending += chunk
            continue
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            if line.startswith(b"data:"):
                yield line[len(b"data:") :].strip()
    if pending.startswith(b"data:"):
        yield pending[len(b"data:") :].strip()


def stream_reply(events: Iterable[bytes], where: str, start: float) -> Reply:
    """A streamed reply: the ``delta`` contents of its chunks up to ``[DONE]``. A stream that ends
    before it is broken (retried); an ``error`` event stops at once; neither is a reply."""
    parts: list[str] = []
    first: float | None = None
    model, finish, usage, done, seen = "", "", None, False, 0
    for data in events:
        if data == b"[DONE]":
            done = True
            break
        if not data:  # an empty data field: nothing to add
            continue
        seen += 1
        chunk = parse_json_reply(data, "", where, "a stream event")
        if not isinstance(chunk, dict):
            raise shape(where, "a stream event that is no chunk", chunk)
        if "error" in chunk:
            raise shape(where, "an error in its stream", chunk["error"])
        model = text_field(chunk, "model", where) or model
        if chunk.get("usage") is not None:
            usage = chunk["usage"]
            usage_counts(usage, where)
        choices = chunk.get("choices")
        if choices is None:
            choices = []
        if not isinstance(choices, list):
            raise shape(where, "a stream event whose 'choices' is not a list", chunk)
        for choice in choices:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if not isinstance(choice, dict) or not isinstance(delta, dict | None):
                raise shape(where, "a stream choice without a 'delta' object", choice)
            piece = content_text((delta or {}).get("content"), where)
            if piece and first is None:
                first = time.perf_counter() - start
            parts.append(piece)
            finish = text_field(choice, "finish_reason", where) or finish
    if not done:
        raise broken(
            "the stream ended before its [DONE] event"
            + (" (no event at all: an empty reply)" if not seen else f" (after {counted(seen, 'event')})")
        )
    total = time.perf_counter() - start
    ttft = total if first is None else first
    return Reply("".join(parts), model, ttft, total, finish, *usage_counts(usage, where))
