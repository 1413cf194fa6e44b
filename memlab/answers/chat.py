"""An OpenAI-compatible chat endpoint: ``POST {url}/chat/completions``, as Ollama, vLLM,
llama.cpp's server and the cloud APIs speak it.

Each request streams (``"stream": true``, server-sent events), so the time to the first token is
measured beside the total; a server that answers with one JSON body instead is read as such (its
first token is its whole reply). Requests go through ``httpx`` with a timeout per request and
retries with exponential backoff (``tenacity``) on what may pass: no connection, no answer in
time, HTTP 429 and 5xx; another HTTP error fails at once. The seed is sent with every request
(servers that know it, such as llama.cpp's and vLLM's, then reply the same to the same prompt),
and the temperature is recorded with every reply. The API key is read from the environment
variable ``api_key_env`` names and is never recorded.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass
from typing import Any

from memlab.core.errors import InputError, MemlabError, UnreachableError
from memlab.core.numbers import check_number
from memlab.embedding.server import failure_reason, transient


class ChatError(MemlabError, RuntimeError):
    """A chat server that answered something that is not a chat reply."""


class ChatUnavailable(UnreachableError):
    """The chat server could not be reached, did not answer in time, or answered an error status."""

    def __init__(self, endpoint: str, attempts: int, reason: str):
        self.endpoint, self.attempts, self.reason = endpoint, attempts, reason
        plural = "attempt" if attempts == 1 else "attempts"
        super().__init__(f"chat server {endpoint} failed after {attempts} {plural}: {reason}")


@dataclass(frozen=True)
class ChatConfig:
    """Where the chat model is and how it is asked (``--chat-url`` and its companions)."""

    url: str
    model: str = ""  # the name sent as "model"; "": the first model the server lists
    api_key_env: str | None = None  # the environment variable holding the API key (never recorded)
    temperature: float = 0.7
    max_tokens: int = 256
    seed: int = 0  # repeat r is sent with seed + r
    timeout: float = 120.0  # seconds per request
    attempts: int = 3  # tries per request, the first included
    backoff: float = 0.5  # seconds before the second try, doubling after
    option: str = "--chat-url"  # the option that named the server, for messages
    # the reply's form, sent as "response_format" (the judge's JSON verdict); None: free text
    response_format: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise InputError(f"{self.option}: expected an http:// or https:// URL, got {self.url!r}")
        prefix = self.option.removesuffix("-url")
        check_number(self.temperature, "--temperature", minimum=0, maximum=2)
        check_number(self.max_tokens, "--max-tokens", integer=True, minimum=1)
        check_number(self.seed, "--seed", integer=True, minimum=0)
        check_number(self.attempts, f"{prefix}-attempts", integer=True, minimum=1)
        check_number(self.timeout, f"{prefix}-timeout", above=0)

    @property
    def endpoint(self) -> str:
        url = self.url.rstrip("/")
        return url if url.endswith("/chat/completions") else f"{url}/chat/completions"

    @property
    def models_endpoint(self) -> str:
        return self.endpoint.removesuffix("/chat/completions") + "/models"

    def api_key(self) -> str | None:
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise InputError(f"{self.option}: the environment variable {self.api_key_env} is not set")
        return key

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
    if not isinstance(d["text"], str) or not isinstance(d["model_id"], str):
        return "text or model_id is not a string"
    for k in ("ttft_s", "total_s"):
        v = d[k]
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
            return f"{k} is not a time in seconds"
    for k in ("prompt_tokens", "completion_tokens"):
        if d[k] is not None and (not isinstance(d[k], int) or isinstance(d[k], bool)):
            return f"{k} is not a count"
    return None


class ChatClient:
    """Sends chat requests to one endpoint, with retries; ``complete`` returns a ``Reply``."""

    def __init__(self, config: ChatConfig):
        self.config = config
        self.requests = 0
        self._model = config.model
        self._client: Any = None

    @property
    def endpoint(self) -> str:
        return self.config.endpoint

    def _http(self):
        if self._client is None:
            import httpx

            headers = {"Content-Type": "application/json"}
            key = self.config.api_key()
            if key:
                headers["Authorization"] = f"Bearer {key}"
            self._client = httpx.Client(timeout=self.config.timeout, headers=headers)
        return self._client

    def _retrying(self, call, *args):
        import httpx
        import tenacity

        cfg = self.config
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(cfg.attempts),
            wait=tenacity.wait_exponential(multiplier=cfg.backoff, max=30),
            retry=tenacity.retry_if_exception(transient),
            reraise=True,
        )
        try:
            return retrying(call, *args)
        except httpx.HTTPError as exc:
            attempts = int(retrying.statistics.get("attempt_number", 1))
            raise ChatUnavailable(self.endpoint, attempts, failure_reason(exc, cfg.timeout)) from exc

    @property
    def model(self) -> str:
        """The model name sent: the one asked for, else the first the server lists."""
        if not self._model:
            self._model = self._retrying(self._first_model)
        return self._model

    def _first_model(self) -> str:
        response = self._http().get(self.config.models_endpoint)
        response.raise_for_status()
        try:
            data = response.json().get("data")
            return str(data[0]["id"])
        except (ValueError, AttributeError, LookupError, TypeError):
            raise ChatError(
                f"chat server {self.config.models_endpoint} lists no model: name one with "
                f"{self.config.option.replace('url', 'model')}"
            ) from None

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
        return self._retrying(self._post, body)

    def _post(self, body: dict[str, Any]) -> Reply:
        content = json.dumps(body, ensure_ascii=False).encode()
        start = time.perf_counter()
        with self._http().stream("POST", self.endpoint, content=content) as response:
            self.requests += 1
            if response.status_code >= 400:
                response.read()
                response.raise_for_status()
            if "text/event-stream" not in response.headers.get("content-type", ""):
                response.read()
                return self._whole(response, start)
            return self._stream(response, start)

    def _whole(self, response, start: float) -> Reply:
        total = time.perf_counter() - start
        try:
            reply = response.json()
            choice = reply["choices"][0]
            text = choice["message"]["content"] or ""
        except (ValueError, LookupError, TypeError):
            raise ChatError(
                f"chat server {self.endpoint} sent no chat reply: {' '.join(response.text.split())[:200]!r}"
            ) from None
        usage = reply.get("usage") or {}
        return Reply(
            text,
            str(reply.get("model", "")),
            total,
            total,
            str(choice.get("finish_reason") or ""),
            usage.get("prompt_tokens"),
            usage.get("completion_tokens"),
        )

    def _stream(self, response, start: float) -> Reply:
        parts: list[str] = []
        first: float | None = None
        model, finish, usage = "", "", {}
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue
            data = line[len("data:") :].strip()
            if data == "[DONE]":
                break
            try:
                chunk = json.loads(data)
            except ValueError:
                raise ChatError(
                    f"chat server {self.endpoint} sent a stream event that is not JSON: {data[:200]!r}"
                ) from None
            if not isinstance(chunk, dict):
                raise ChatError(
                    f"chat server {self.endpoint} sent a stream event that is no chunk: {data[:200]!r}"
                )
            model = str(chunk.get("model") or model)
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or ():
                piece = (choice.get("delta") or {}).get("content") or ""
                if piece and first is None:
                    first = time.perf_counter() - start
                parts.append(piece)
                finish = str(choice.get("finish_reason") or finish)
        total = time.perf_counter() - start
        return Reply(
            "".join(parts),
            model,
            total if first is None else first,
            total,
            finish,
            usage.get("prompt_tokens"),
            usage.get("completion_tokens"),
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
