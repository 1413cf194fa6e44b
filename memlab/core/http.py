"""What every HTTP client of memlab shares (the embedding server, the chat endpoint and its
judge): the API key, the retry rule, the deadline of a request, the size limit of a reply and the
one error a server that does not answer becomes. ``httpx`` and ``tenacity`` are imported when a
request is sent, never at import.

- ``check_http_url``: a URL a flag gives, one an HTTP request can go to;
- ``api_key``: the key in the environment variable a ``--*-api-key-env`` flag names, surrounding
  white space dropped (a key file saved with CRLF ends in ``\\r``); a key holding any other
  character a header cannot carry is refused in one line that never shows the key;
- ``transient`` and ``failure_reason``: what is retried (no connection, no answer in time, a
  broken reply, HTTP 429 and 5xx) and the one line on why a request failed (redacted);
- ``within_deadline``: a request answered whole within its timeout (a deadline, not a wait per
  read: a server that trickles a byte a second times out too);
- ``read_limited``: a reply's body up to a size limit, read as it arrives;
- ``BadReply``: the one error of every client for a server that answered, but not with what was
  asked (not JSON, the wrong shape, too large: ``TooLarge``), beside ``ServerFailure`` for one
  that did not answer; ``Stopped``: a request not sent because an earlier one failed;
- ``with_retries`` and ``ServerFailure``: the attempts with exponential backoff, then the one
  error of every client, naming the server (its kind and its redacted URL), the attempts and the
  last reason;
- ``HttpConfig`` and ``HttpClient``: what every server client is configured with (the URL and its
  redacted form, the deadline of a request, the attempts, the backoff, the size limit, the API
  key), and the client that sends each request with all of the above. The chat endpoint's (and
  its judge's), the rerankers' and the embedding server's records derive from ``HttpConfig`` and
  add only what is their own.
"""

from __future__ import annotations

import json
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from memlab.core.errors import InputError, MemlabError, UnreachableError
from memlab.core.numbers import check_number, counted
from memlab.core.textfiles import json_number_problem, surrogate_problem
from memlab.core.urls import check_url, excerpt, redact, reveal, server_identity

T = TypeVar("T")
MAX_ATTEMPTS = 10  # tries per request: with the backoff doubling to 30 s, about 2.5 min of waits
MAX_TIMEOUT = 3600.0  # seconds a request may take, at most (an hour)
MAX_REPLY_BYTES = 8 << 20  # bytes of one reply, at most (8 MiB; a chat reply of 256 tokens is ~50 KB)


def check_http_url(url: object, flag: str) -> str:
    """``memlab.core.urls.check_url``, and a URL ``httpx`` can send to (a host name that is no
    valid international name, ``xn--a.com``, is refused here, not in the first request)."""
    import httpx

    checked = check_url(url, flag)
    try:
        httpx.URL(checked).host  # noqa: B018  (decodes an international name: raises for a bad one)
    except (httpx.InvalidURL, ValueError) as e:  # idna's errors are ValueErrors
        raise InputError(f"{flag}: {redact(checked)!r} is not a valid URL ({redact(str(e))})") from None
    return checked


def api_key(env: str | None, flag: str) -> str | None:
    """The API key in the environment variable ``env`` (None: no key), surrounding white space
    dropped; ``InputError`` naming ``flag`` when it is unset, empty, or holds a character an HTTP
    header cannot carry (a control character, a non-ASCII letter). The key is never shown."""
    if env is None:
        return None
    raw = os.environ.get(env)
    key = (raw or "").strip()
    if not key:
        state = "is not set" if raw is None else "is empty"
        raise InputError(f"{flag}: the environment variable {env} {state}")
    bad = next((i for i, c in enumerate(key) if not " " <= c <= "~"), None)
    if bad is not None:
        code = ord(key[bad])
        raise InputError(
            f"{flag}: the environment variable {env} holds U+{code:04X} at character {bad + 1} of "
            f"{len(key)}: not an API key (an HTTP header carries printable ASCII only)"
        )
    return key


def transient(exc: BaseException) -> bool:
    """An HTTP failure worth retrying (no connection, no answer in time, a broken reply, 429, 5xx):
    the rule of every server memlab talks to."""
    import httpx

    if isinstance(exc, httpx.TransportError):  # no connection, no answer in time, a broken reply
        return True
    return isinstance(exc, httpx.HTTPStatusError) and (
        exc.response.status_code == 429 or exc.response.status_code >= 500
    )


def failure_reason(exc: BaseException, timeout: float) -> str:
    """One line on why a request to a server failed (an HTML page named as such), redacted."""
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return f"no answer within {timeout:g} s"
    if isinstance(exc, httpx.ConnectError):
        return redact(f"cannot connect: {exc}")
    if isinstance(exc, httpx.HTTPStatusError):
        code, headers = exc.response.status_code, exc.response.headers
        if 300 <= code < 400:  # memlab follows no redirect: the user gives the address it names
            to = f" to {redact(headers['location'])}" if headers.get("location") else ""
            return f"HTTP {code}, a redirect{to}: give the address the server names"
        body = excerpt(exc.response.text, headers.get("content-type", ""), quote=False)
        return f"HTTP {code}" + (f": {body}" if body else "")
    return redact(f"{type(exc).__name__}: {exc}")


class ServerFailure(UnreachableError):
    """A server that could not be reached, did not answer in time, or answered an error status,
    after every attempt: the one error of every server client, naming its kind of server
    (``what``: ``HttpConfig.what``), its redacted endpoint, the attempts and the last reason."""

    def __init__(self, what: str, endpoint: str, attempts: int, reason: str):
        self.what, self.endpoint, self.attempts, self.reason = what, endpoint, attempts, reason
        super().__init__(f"{what} {endpoint} failed after {counted(attempts, 'attempt')}: {reason}")


def with_retries(
    call: Callable[..., T],
    *args: Any,
    attempts: int,
    backoff: float,
    timeout: float,
    endpoint: str,
    what: str,
) -> T:
    """``call(*args)``, tried up to ``attempts`` times while it fails ``transient``-ly (waiting
    ``backoff`` seconds, doubling, at most 30); an HTTP failure then raises ``ServerFailure``
    naming ``what`` and the redacted ``endpoint``. Its cause is not chained: an HTTP library's
    message carries the real URL, and a traceback (a notebook's) would show it."""
    import httpx
    import tenacity

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_exponential(multiplier=backoff, max=30),
        retry=tenacity.retry_if_exception(transient),
        reraise=True,
    )
    try:
        return retrying(call, *args)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        tried = int(retrying.statistics.get("attempt_number", 1))
        raise ServerFailure(what, redact(endpoint), tried, failure_reason(exc, timeout)) from None


def within_deadline(send: Callable[[], T], seconds: float, abandon: Callable[[], None]) -> T:
    """``send()`` answered whole within ``seconds`` of its start. It runs in a worker thread; at
    the deadline ``abandon()`` is called (it closes what the request holds, so the worker ends) and
    ``httpx.ReadTimeout`` is raised, which is retried like any timeout."""
    import httpx

    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["reply"] = send()
        except BaseException as e:  # handed to the caller's thread
            outcome["error"] = e

    worker = threading.Thread(target=run, name="memlab-http-request", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        abandon()
        raise httpx.ReadTimeout(f"no whole answer within {seconds:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["reply"]


def close_later(client: Any) -> None:
    """Close an HTTP client in the background (a request a deadline abandoned still holds it)."""
    threading.Thread(target=client.close, name="memlab-http-close", daemon=True).start()


class BadReply(MemlabError, RuntimeError):
    """A server that answered something that is not the reply asked for (not a chat reply, not a
    score): one line naming the server, never a reply used or cached. The one such error of the
    chat endpoint, its judge and the rerankers (the embedding server's is ``EmbeddingError``)."""


class Stopped(Exception):
    """A request not sent (again) because an earlier one of the same run failed (the chat
    replay's ``memlab.answers.inflight``, the rerankers' ``memlab.rerank.scoring``). Never
    retried, never shown: the earlier error is."""


class TooLarge(BadReply):
    """A reply longer than its size limit."""


def read_limited(chunks: Iterator[bytes], limit: int, where: str) -> Iterator[bytes]:
    """``chunks`` (a reply's body as it arrives) passed on until they add up to more than
    ``limit`` bytes, then ``TooLarge`` naming ``where``: no reply is held whole beyond it."""
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise TooLarge(f"{where} sent a reply of more than {limit:,} bytes: not a reply memlab reads")
        yield chunk


def json_reply(
    data: bytes,
    content_type: str,
    where: str,
    what: str,
    not_json: str | None = None,
) -> Any:
    """``data`` (a whole body, or one event of a stream) as JSON, checked before anything uses
    it; each way it is not is one line ``BadReply`` naming ``where`` and ``what``: not UTF-8, nested
    deeper than memlab reads, not JSON (``not_json``: how to say so; default "{what} that is not
    JSON"), an integer too long, text that is not Unicode. An empty body is a reply cut short
    (``httpx.RemoteProtocolError``), retried like a broken connection."""
    import httpx

    if not data.strip():
        raise httpx.RemoteProtocolError("an empty reply (no body)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadReply(f"{where} sent {what} that is not UTF-8 (byte 0x{data[e.start]:02x})") from None
    try:
        parsed = json.loads(text)
    except RecursionError:
        raise BadReply(f"{where} sent {what} nested deeper than memlab reads (about 1000 levels)") from None
    except json.JSONDecodeError:
        said = not_json or f"{what} that is not JSON"
        raise BadReply(f"{where} sent {said}: {excerpt(text, content_type)}") from None
    except ValueError as e:  # an integer of more than 4300 digits
        raise BadReply(f"{where} sent {what} that {json_number_problem(e)}") from None
    problem = surrogate_problem(parsed)
    if problem is not None:
        raise BadReply(f"{where} sent {what} with text that is not Unicode: {problem}")
    return parsed


def raise_for_status(response: Any, limit: int, where: str) -> None:
    """For a streamed ``response`` with a status other than 2xx (an error, a redirect): its body
    read (up to ``limit`` bytes) and ``httpx.HTTPStatusError`` raised with it, so
    ``failure_reason`` can quote it."""
    import httpx

    if response.is_success:
        return
    body = b"".join(read_limited(response.iter_bytes(), limit, where))
    kind = {k: response.headers[k] for k in ("content-type", "location") if k in response.headers}
    whole = httpx.Response(response.status_code, headers=kind, content=body, request=response.request)
    whole.raise_for_status()


@dataclass(frozen=True, kw_only=True)
class HttpConfig(ABC):
    """What every server client of memlab is configured with, whatever it asks the server: the
    base of the chat endpoint's (``memlab.answers.chat.ChatConfig``), the rerankers'
    (``memlab.rerank.clients.RerankerConfig``) and the embedding server's
    (``memlab.embedding.server.ServerConfig``) records, each of which adds only what is its own.

    Each declares its ``url`` among its own fields, first or after what comes before it (the
    reranker's kind), so its constructor keeps its order; these fields are keyword-only. A client
    whose default differs redeclares the field (the embedding server's 30 s). Its ``endpoint``
    (the URL and the path it posts to) is its own too; ``shown``, ``server``, the flags messages
    name and the API key follow from it here, the same for every client."""

    # ``url`` (the server's base URL) is declared by each client's record, not here: declared here,
    # it would come first in every constructor, before the reranker's kind
    if TYPE_CHECKING:
        url: str
    what: ClassVar[str] = "server"  # the server as messages name it ("chat server")
    keep_alive: ClassVar[bool] = True  # False: a fresh connection per request

    api_key_env: str | None = None  # the environment variable holding the API key (never recorded)
    timeout: float = 120.0  # seconds a request may take, whole (a deadline, not a wait per read)
    attempts: int = 3  # tries per request, the first included
    backoff: float = 0.5  # seconds before the second try, doubling after (at most 30)
    max_bytes: int | None = MAX_REPLY_BYTES  # the longest reply read (bytes of the HTTP body)
    option: str = "--url"  # the option that named the server, for messages ("--chat-url")

    def __post_init__(self) -> None:
        # a notebook under memlab run is given the URL redacted: the kernel's environment has it whole
        object.__setattr__(self, "url", reveal(self.url))
        check_http_url(self.url, self.option)
        check_number(self.attempts, self.flag("attempts"), integer=True, minimum=1, maximum=MAX_ATTEMPTS)
        check_number(self.timeout, self.flag("timeout"), above=0)
        check_number(self.timeout, self.flag("timeout"), maximum=MAX_TIMEOUT)
        check_number(self.backoff, "backoff", minimum=0, maximum=30)
        if self.max_bytes is not None:
            check_number(self.max_bytes, "max_bytes", integer=True, minimum=1)

    def flag(self, name: str) -> str:
        """The companion flag of ``option``, as messages name it: ``--chat-url`` → ``--chat-timeout``."""
        return f"{self.option.removesuffix('-url')}-{name}"

    @property
    @abstractmethod
    def endpoint(self) -> str:
        """Where requests go (each client's: ``{url}/chat/completions``, ``{url}/embeddings``)."""

    @property
    def shown(self) -> str:
        """The endpoint as memlab prints and records it: redacted (``memlab.core.urls.redact``)."""
        return redact(self.endpoint)

    @property
    def server(self) -> str:
        """Which server answers (a reply cache's key): the endpoint without user info or secrets."""
        return server_identity(self.endpoint)

    def api_key(self) -> str | None:
        """The API key (``api_key``), its messages naming this client's ``--*-api-key-env`` flag."""
        return api_key(self.api_key_env, self.flag("api-key-env"))


class HttpClient:
    """Sends requests to one server as ``config`` says: ``send(request, endpoint)`` calls
    ``request(httpx_client)`` within the deadline, retried, and raises ``ServerFailure`` naming
    the server and the redacted ``endpoint`` when it keeps failing. The ``httpx`` client (with the
    API key's header) is made at the first request; one a deadline abandoned is closed, and the
    next request gets a fresh one. ``on_abandon``: told when a request is abandoned."""

    def __init__(self, config: HttpConfig, on_abandon: Callable[[], None] | None = None):
        self.config, self.on_abandon = config, on_abandon
        self._client: Any = None

    def http(self) -> Any:
        """The ``httpx.Client`` requests go through (made when first asked for)."""
        if self._client is None:
            import httpx

            c = self.config
            headers = {"Content-Type": "application/json"}
            key = c.api_key()
            if key:
                headers["Authorization"] = f"Bearer {key}"
            more: dict[str, Any] = {}
            if not c.keep_alive:
                headers["Connection"] = "close"
                more["limits"] = httpx.Limits(max_keepalive_connections=0)
            self._client = httpx.Client(timeout=c.timeout, headers=headers, **more)
        return self._client

    def send(self, request: Callable[[Any], T], endpoint: str) -> T:
        c = self.config
        return with_retries(
            self._within_deadline,
            request,
            attempts=c.attempts,
            backoff=c.backoff,
            timeout=c.timeout,
            endpoint=endpoint,
            what=c.what,
        )

    def _within_deadline(self, request: Callable[[Any], T]) -> T:
        client = self.http()

        def abandon() -> None:
            if self._client is client:
                self._client = None
            close_later(client)
            if self.on_abandon is not None:
                self.on_abandon()

        return within_deadline(lambda: request(client), self.config.timeout, abandon)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


MAX_CONCURRENCY = 64  # requests in flight: far beyond what one server's slots take at once


def check_concurrency(concurrency: object, flag: str = "--concurrency") -> int:
    return int(check_number(concurrency, flag, integer=True, minimum=1, maximum=MAX_CONCURRENCY))


def in_order(
    client: Any,
    sent: Sequence[int],
    total: int,
    ask: Callable[[Any, int], T],
    take: Callable[[int, T | None], None],
    concurrency: int,
    name: str,
) -> None:
    """Requests answered up to ``concurrency`` at a time and taken in input order, the same as one
    at a time: ``ask(twin, i)`` for each ``i`` of ``sent`` (ascending), each on a twin of
    ``client`` (``client.twin()``: its own HTTP connection), and ``take(i, reply)`` for every
    ``i`` of ``range(total)`` in order, in the caller's thread (``None`` for one not sent). The
    first error in input order is raised: no request after it is sent, those in flight are
    stopped (``twin.stopped`` keeps them from trying again, their connections are closed) and
    waited for, so no thread outlives the call. The twins' request counts are added to
    ``client``'s. The chat replay's and the rerankers' pool (``memlab.answers.inflight``,
    ``memlab.rerank.scoring``)."""
    from concurrent.futures import ThreadPoolExecutor

    flight = _Flight(total)
    twins = [client.twin() for _ in range(min(concurrency, len(sent)))]
    flight.idle = list(twins)
    pool = ThreadPoolExecutor(len(twins) or 1, thread_name_prefix=name)
    futures = {i: pool.submit(flight.work, ask, i) for i in sent}
    try:
        for i in range(total):
            take(i, futures[i].result() if i in futures else None)
    except BaseException:  # an error (the first in input order), or Ctrl-C: stop the rest
        flight.stop_after(-1)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        for twin in twins:
            client.requests += twin.requests
            twin.close()


class _Flight:
    """One ``in_order`` call's requests: who is in flight, the first that failed (by input order)."""

    def __init__(self, total: int):
        self.lock = threading.Lock()
        self.failed = total  # the first request that failed, by input order (none yet)
        self.flying: dict[int, Any] = {}
        self.idle: list[Any] = []

    def work(self, ask: Callable[[Any, int], T], i: int) -> T:
        with self.lock:
            if i > self.failed:  # an earlier request failed: this one is never sent
                raise Stopped()
            twin = self.idle.pop()
            self.flying[i] = twin
        twin.stopped = lambda: i > self.failed
        try:
            return ask(twin, i)
        except BaseException:
            self.stop_after(i)
            raise
        finally:
            with self.lock:
                del self.flying[i]
                self.idle.append(twin)

    def stop_after(self, i: int) -> None:
        """Request ``i`` failed: none after it is sent, and those in flight are stopped (their
        connections closed)."""
        with self.lock:
            self.failed = min(self.failed, i)
            stopping = [twin for j, twin in self.flying.items() if j > self.failed]
        for twin in stopping:
            twin.http.close()
