"""The two rerankers of the rerank stage (``memlab.core.rerank_stage``), each a small client over
memlab's one HTTP client (``memlab.core.http``: the deadline, the retries, the size limit, one
line naming the server with its URL redacted):

- ``chat``: the user's chat model, pointwise. ``POST {url}/chat/completions`` asks "does this
  memory answer the question?" with ``max_tokens 1``, ``temperature 0``, ``logprobs true`` and
  ``top_logprobs N``; the score is the probability the model gives to "yes" as its first token:
  the sum of ``exp(logprob)`` over the distinct listed tokens that read "yes" whatever their case
  and surrounding space (``yes``, `` Yes``, ``YES``). A "yes" outside the top ``N`` adds nothing,
  so the score is exact to within the smallest listed probability. A reply without logprobs is
  one line (llama-cpp-python's server returns them only for a model loaded with
  ``logits_all``; llama.cpp's ``llama-server`` always does). Chat replies (``choices[0].logprobs
  .content[0].top_logprobs``, a list of ``{token, logprob}``) and the completions shape
  (``choices[0].logprobs.top_logprobs[0]``, a ``{token: logprob}`` mapping) are both read.
- ``endpoint``: a reranking endpoint, ``POST {url}/rerank`` with ``{model, query, documents,
  top_n}`` (llama.cpp's server with ``--reranking``, vLLM, Jina, Cohere), or ``{query, texts}``
  (Hugging Face TEI: ``request_shape="texts"``). The reply's results are ``results`` (llama.cpp,
  vLLM, Jina, Cohere), ``data``, ``rerank`` or a bare list (TEI), each ``{index,
  relevance_score}`` or ``{index, score}``; every document must be scored exactly once. The
  score is the server's own: a probability (Jina, Cohere, TEI by default) or a model's logit
  (llama.cpp's), and the stage's blend and threshold are tuned on it as it comes.

What comes back is checked before anything uses or caches it: a reply that is not JSON, not
UTF-8, nested too deep, of the wrong shape, or holding a score that is not a finite number is one
line (``BadReply``), never a score; a reply larger than ``max_bytes`` is refused as it
arrives. Each client answers one request (``score``: a query and its documents) and makes a
``twin`` for a request sent beside it (``memlab.rerank.scoring``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from memlab.core.errors import InputError
from memlab.core.http import (
    BadReply,
    HttpClient,
    HttpConfig,
    Stopped,
    json_reply,
    raise_for_status,
    read_limited,
)
from memlab.core.numbers import check_number
from memlab.core.rerank_stage import RERANKERS
from memlab.core.urls import excerpt, join_path

CHAT_PATH = "chat/completions"
RERANK_PATH = "rerank"
REQUEST_SHAPES = ("documents", "texts")  # {model, query, documents, top_n}; TEI's {query, texts}
MAX_TOP_LOGPROBS = 20  # OpenAI's bound, which llama.cpp's server and vLLM follow
MAX_RERANK_BYTES = 4 << 20  # a reply: a chat reply of one token is ~2 KB; 1,000 scores ~60 KB
PROMPT_VERSION = 1  # the chat reranker's messages (``yes_no_messages``): part of the cache key
SYSTEM = "You judge whether a memory answers a question. Reply with one word: yes or no."


@dataclass(frozen=True)
class RerankerConfig(HttpConfig):
    """Which reranker and where (``--reranker``, ``--rerank-url`` and its companions): what every
    server client is configured with (``memlab.core.http.HttpConfig``), and the reranker's own
    kind, model and request."""

    what: ClassVar[str] = "reranker"

    kind: str  # RERANKERS: chat | endpoint
    url: str
    model: str = ""  # the name sent as "model"; "": (chat) the first the server lists, (endpoint) none
    top_logprobs: int = MAX_TOP_LOGPROBS  # the chat reranker's N
    request_shape: str = "documents"  # the endpoint's request (REQUEST_SHAPES)
    max_bytes: int | None = field(default=MAX_RERANK_BYTES, kw_only=True)
    option: str = field(default="--rerank-url", kw_only=True)

    def __post_init__(self) -> None:
        if self.kind not in RERANKERS:
            raise InputError(f"--reranker: expected one of {', '.join(RERANKERS)}, got {self.kind!r:.60}")
        super().__post_init__()
        if self.request_shape not in REQUEST_SHAPES:
            raise InputError(
                f"--rerank-request: expected one of {', '.join(REQUEST_SHAPES)}, "
                f"got {self.request_shape!r:.60}"
            )
        check_number(
            self.top_logprobs, "--rerank-top-logprobs", integer=True, minimum=1, maximum=MAX_TOP_LOGPROBS
        )

    @property
    def endpoint(self) -> str:
        return join_path(self.url, CHAT_PATH if self.kind == "chat" else RERANK_PATH)

    @property
    def models_endpoint(self) -> str:
        return join_path(self.url, "models")

    def parameters(self) -> dict[str, Any]:
        """What a score depends on besides the server, the model and the texts (the cache's key)."""
        if self.kind == "chat":
            return {"prompt": PROMPT_VERSION, "top_logprobs": self.top_logprobs}
        return {"request": self.request_shape}


def yes_no_messages(query: str, document: str) -> list[dict[str, str]]:
    """The chat reranker's question about one (question, memory) pair."""
    user = f"Question: {query}\nMemory: {document}\nDoes this memory answer the question? Answer yes or no."
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def is_yes(token: str) -> bool:
    """A token that reads "yes": any case, with or without the space (and the sentencepiece or
    byte-level space marks ``▁``, ``Ġ``) a tokenizer puts before a word."""
    return token.strip().lstrip("▁Ġ").strip().lower() == "yes"


def yes_probability(top: Sequence[tuple[str, float]]) -> float:
    """The probability of "yes" among the first token's top log-probabilities (token, logprob):
    ``exp`` summed over the distinct tokens that read "yes", at most 1."""
    seen: dict[str, float] = {}
    for token, logprob in top:
        if is_yes(token):
            seen.setdefault(token, logprob)
    return min(1.0, float(sum(math.exp(lp) for lp in seen.values())))


# ---------------------------------------------------------------------------------------------
# what a server sent, checked


def parse_reply(data: bytes, content_type: str, where: str) -> Any:
    """A reply's body as JSON (``memlab.core.http.json_reply``)."""
    return json_reply(data, content_type, where, "a reply")


def _shape(where: str, what: str, value: Any) -> BadReply:
    return BadReply(f"{where} sent {what}: {excerpt(json.dumps(value, ensure_ascii=False, default=str))}")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _logprob(value: Any, where: str, reply: Any) -> float:
    """A log-probability: a number at most 0 (-inf allowed: probability 0)."""
    if not _number(value) or math.isnan(value) or value > 1e-6:
        raise _shape(where, "a logprob that is not a log-probability (a number at most 0)", reply)
    return float(value)


def top_logprobs(reply: Any, where: str) -> list[tuple[str, float]]:
    """The first generated token's top log-probabilities in a chat or completions reply."""
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _shape(where, "no chat reply (no choices)", reply)
    logprobs = choices[0].get("logprobs")
    if logprobs is None:
        raise BadReply(
            f"{where} sent a reply without logprobs: the chat reranker reads the probability of "
            "'yes' from them (llama.cpp's llama-server returns them; llama-cpp-python's server only "
            "for a model loaded with logits_all)"
        )
    if not isinstance(logprobs, dict):
        raise _shape(where, "a 'logprobs' that is not an object", logprobs)
    content = logprobs.get("content")
    if isinstance(content, list):  # chat completions: [{token, logprob, top_logprobs: [...]}]
        first = content[0] if content else None
        listed = first.get("top_logprobs") if isinstance(first, dict) else None
        if not isinstance(listed, list) or not all(
            isinstance(t, dict) and isinstance(t.get("token"), str) for t in listed
        ):
            raise _shape(where, "logprobs without the first token's top_logprobs", logprobs)
        return [(t["token"], _logprob(t.get("logprob"), where, t)) for t in listed]
    legacy = logprobs.get("top_logprobs")
    if isinstance(legacy, list):  # completions: top_logprobs: [{token: logprob}, ...]
        first = legacy[0] if legacy else None
        if not isinstance(first, dict) or not all(isinstance(k, str) for k in first):
            raise _shape(where, "logprobs without the first token's top_logprobs", logprobs)
        return [(k, _logprob(v, where, first)) for k, v in first.items()]
    raise _shape(where, "logprobs without the first token's top_logprobs", logprobs)


RESULT_KEYS = ("results", "data", "rerank")  # llama.cpp, vLLM, Jina, Cohere; vLLM's score; Elastic
SCORE_KEYS = ("relevance_score", "score")  # Jina, Cohere, llama.cpp, vLLM; TEI


def rerank_scores(reply: Any, n: int, where: str) -> list[float]:
    """The score of each of the ``n`` documents, in request order, from a rerank reply."""
    listed = reply if isinstance(reply, list) else None
    if isinstance(reply, dict):
        listed = next((reply[k] for k in RESULT_KEYS if isinstance(reply.get(k), list)), None)
    if listed is None:
        raise _shape(where, f"no rerank results (expected {', '.join(RESULT_KEYS)} or a list)", reply)
    if len(listed) != n:
        raise BadReply(f"{where} scored {len(listed)} documents of the {n} sent")
    scores: list[float | None] = [None] * n
    for item in listed:
        index = item.get("index") if isinstance(item, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n:
            raise _shape(where, f"a result without a document index in [0, {n})", item)
        score = next((item[k] for k in SCORE_KEYS if k in item), None)
        if not _number(score) or not math.isfinite(score):
            raise _shape(where, "a result whose relevance_score is not a finite number", item)
        if scores[index] is not None:
            raise BadReply(f"{where} scored document {index} twice")
        scores[index] = float(score)
    return scores  # type: ignore[return-value]  (every index filled: n results, none twice)


# ---------------------------------------------------------------------------------------------
# the clients


class Reranker:
    """One reranking server: ``score(query, documents)`` is one request's scores, in order."""

    def __init__(self, config: RerankerConfig):
        self.config = config
        self.requests = 0
        self._model = config.model
        self.http = HttpClient(config)
        # asked before every try of a request: True stops it (an earlier request failed)
        self.stopped: Callable[[], bool] = lambda: False

    @property
    def where(self) -> str:
        return f"{self.config.kind} reranker {self.config.shown}"

    @property
    def batch(self) -> bool:
        """Whether one request scores many documents (the endpoint) or one (the chat model)."""
        return self.config.kind == "endpoint"

    @property
    def model(self) -> str:
        """The model named in requests and the cache: the one asked for; the chat reranker without
        one asks the server's model list, as ``memlab answer`` does."""
        if not self._model and self.config.kind == "chat":
            self._model = self.http.send(self._first_model, self.config.models_endpoint)
        return self._model

    def twin(self) -> Reranker:
        other = Reranker(self.config)
        other._model = self.model
        return other

    def _post(self, client, body: dict[str, Any]) -> Any:
        if self.stopped():
            raise Stopped()
        cfg = self.config
        content = json.dumps(body, ensure_ascii=False).encode()
        with client.stream("POST", cfg.endpoint, content=content) as response:
            self.requests += 1
            raise_for_status(response, cfg.max_bytes, self.where)
            data = b"".join(read_limited(response.iter_bytes(), cfg.max_bytes, self.where))
        return parse_reply(data, response.headers.get("content-type", ""), self.where)

    def _first_model(self, client) -> str:
        cfg = self.config
        with client.stream("GET", cfg.models_endpoint) as response:
            raise_for_status(response, cfg.max_bytes, self.where)
            data = b"".join(read_limited(response.iter_bytes(), cfg.max_bytes, self.where))
        listed = parse_reply(data, response.headers.get("content-type", ""), self.where)
        items = listed.get("data") if isinstance(listed, dict) else None
        first = items[0] if isinstance(items, list) and items else None
        name = first.get("id") if isinstance(first, dict) else None
        if not isinstance(name, str) or not name.strip():
            raise BadReply(f"{self.where} lists no model: name one with --rerank-model")
        return name

    def body(self, query: str, documents: Sequence[str]) -> dict[str, Any]:
        cfg = self.config
        if cfg.kind == "chat":
            (document,) = documents
            return {
                "model": self.model,
                "messages": yes_no_messages(query, document),
                "max_tokens": 1,
                "temperature": 0.0,
                "seed": 0,
                "stream": False,
                "logprobs": True,
                "top_logprobs": cfg.top_logprobs,
            }
        if cfg.request_shape == "texts":
            return {"query": query, "texts": list(documents), "raw_scores": False}
        return {
            **({"model": self.model} if self.model else {}),
            "query": query,
            "documents": list(documents),
            "top_n": len(documents),
        }

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """The reranker's score of each document for ``query`` (the chat reranker: one document)."""
        if not documents:
            return []
        body = self.body(query, documents)

        def exchange(client) -> list[float]:
            reply = self._post(client, body)
            if self.config.kind == "chat":
                return [yes_probability(top_logprobs(reply, self.where))]
            return rerank_scores(reply, len(documents), self.where)

        return self.http.send(exchange, self.config.endpoint)

    def close(self) -> None:
        self.http.close()
