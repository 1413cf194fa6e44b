"""URLs the user gives (an embedding server, a Qdrant server): parsed, joined and redacted with
``urllib.parse``, never by string concatenation.

- ``check_url``: an ``http://`` or ``https://`` URL with a host and a valid port, or one line
  naming the flag (``http://[::1`` is refused here, not deep inside an HTTP library);
- ``join_path``: a path segment appended to a URL's path, its query kept after it
  (``…/v1?api-version=2024-02-01`` + ``embeddings`` is ``…/v1/embeddings?api-version=2024-02-01``);
- ``redact``: the one redaction function. Every URL inside a text (a URL alone, an error message,
  a record) loses its user info and the values of its query parameters (``api-key=***``), except
  those that select an API version, and its fragment. Whatever memlab records or prints (the
  ``-o`` JSON, the cache's ``meta.json``, error messages, the run's manifest, an executed
  notebook's tracebacks) passes through it;
- ``server_identity``: the server a URL names, without user info or secrets (the reply cache's
  key).
"""

from __future__ import annotations

import json
import os
import re
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from memlab.core.errors import InputError

MASK = "***"
PUBLIC_QUERY = frozenset({"api-version", "api_version", "version"})  # kept: they name an API, not a secret
# a URL inside free text: a scheme, "://", then anything up to white space or a closing quote.
# Read from the start of each run of scheme characters only (the lookbehind), past its leading
# digits and signs (a scheme starts with a letter), without backtracking (possessive): each
# character is read a bounded number of times, where "[A-Za-z][A-Za-z0-9+.-]*://" alone rescanned
# a run of letters from each of its letters (a 40 KB word took 4 s, 1 MB would take an hour)
_URL_IN_TEXT = re.compile(r"(?<![A-Za-z0-9+.-])([0-9+.-]*+)([A-Za-z][A-Za-z0-9+.-]*+://[^\s'\"<>]++)")


def check_url(url: object, flag: str) -> str:
    """``url`` when it is an http(s) URL with a host and a valid port; else one line."""
    if not isinstance(url, str) or not url.strip():
        raise InputError(f"{flag}: expected an http:// or https:// URL, got {url!r}")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number in 0..65535)
    except ValueError as e:
        raise InputError(f"{flag}: {redact(url)!r} is not a valid URL ({e})") from None
    if parts.scheme not in ("http", "https"):
        raise InputError(f"{flag}: expected an http:// or https:// URL, got {redact(url)!r}")
    if not parts.hostname:
        raise InputError(f"{flag}: {redact(url)!r} names no host")
    return url


def join_path(url: str, segment: str) -> str:
    """``url`` with ``segment`` (one or more segments, ``chat/completions``) appended to its path
    (once: a path already ending in it is kept);
    the query and the fragment stay where they belong, after the path."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    tail = segment.strip("/").split("/")  # "chat/completions": two segments
    if path.split("/")[-len(tail) :] != tail:
        path = f"{path}/{quote(segment.strip('/'))}"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, parts.fragment))


def _redact_one(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:  # not parseable (http://[::1): the same cuts, by the text's shape
        scheme, rest = url.split("://", 1)
        rest = re.sub(r"^[^/?#]*@", f"{MASK}@", rest)
        rest = re.sub(r"([?&])([^=&#?]++)=([^&#]*+)", _mask_parameter, rest)
        return f"{scheme}://{re.sub(r'#.*', '#' + MASK, rest)}"
    netloc = host if ":" not in host else f"[{host}]"
    if port is not None:
        netloc += f":{port}"
    if parts.username is not None or parts.password is not None:
        netloc = f"{MASK}@{netloc}"
    query = urlencode(
        [
            (k, v if k.lower() in PUBLIC_QUERY else MASK)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
        ],
        safe="*",
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, MASK if parts.fragment else ""))


EXCERPT_MARGIN = 2048  # characters beyond an excerpt's limit redacted with it (a long URL whole)


def excerpt(body: str, content_type: str = "", quote: bool = True, limit: int = 200) -> str:
    """What a reply said, short: an HTML page by its title (the URL reaches a web page, not the
    API), anything else by its first ``limit`` characters, white space collapsed, URLs redacted."""
    looks_html = "html" in content_type.lower() or body.lstrip()[:15].lower().startswith(
        ("<!doctype html", "<html")
    )
    if looks_html:
        title = re.search(r"<title[^>]*>(.*?)</title>", body, re.IGNORECASE | re.DOTALL)
        named = f" titled {' '.join(title.group(1).split())[:80]!r}" if title else ""
        size = len(body.encode("utf-8", "replace"))
        return f"an HTML page{named} ({size:,} bytes), not the API's answer: is the URL right?"
    # redacted before it is cut (a URL's secrets masked whole), but only its head: the URL pattern
    # rescans a long run of letters from each of them (a 160 KB error page took 34 s, 2 MB hours)
    text = " ".join(body.split())
    text = redact(text[: limit + EXCERPT_MARGIN]) if len(text) > limit else redact(text)
    text = text if len(text) <= limit else text[:limit] + "…"
    return repr(text) if quote else text


def _mask_parameter(m: re.Match) -> str:
    sep, name, value = m.groups()
    return f"{sep}{name}={value if name.lower() in PUBLIC_QUERY else MASK}"


def redact(text: str) -> str:
    """``text`` with every URL in it redacted (user info, query values, fragment)."""

    def one(match: re.Match) -> str:
        lead, url = match.groups()
        tail = len(url) - len(url.rstrip(".,;:)]"))  # the sentence's punctuation, not the URL's
        if url.endswith("]") and "[" in url.split("://", 1)[1]:
            tail = len(url) - len(url.rstrip(".,;:)"))  # an IPv6 host's bracket belongs to it
        return lead + _redact_one(url[: len(url) - tail]) + url[len(url) - tail :]

    return _URL_IN_TEXT.sub(one, text)


def server_identity(url: str) -> str:
    """Which server a URL names, as a cache records it: the redacted URL without its user info
    (the same server whoever logs in to it, and no secret in it)."""
    scheme, _, rest = redact(url).partition("://")
    return f"{scheme}://{rest.removeprefix(MASK + '@')}"


SECRETS_ENV = "MEMLAB_URL_SECRETS"  # redacted URL -> the real one, for a notebook's kernel only


def hide_secrets(params: dict[str, object]) -> tuple[dict[str, object], dict[str, str]]:
    """``params`` with every URL in a text value redacted (what ``memlab run`` injects into a
    notebook, so the executed copy, the manifest and the results page hold no secret), and the
    map back from each redacted text to the real one (handed to the kernel in ``SECRETS_ENV``)."""
    shown, secrets = {}, {}
    for key, value in params.items():
        if isinstance(value, str) and redact(value) != value:
            shown[key] = redact(value)
            secrets[shown[key]] = value
        else:
            shown[key] = value
    return shown, secrets


def reveal(text: str) -> str:
    """A redacted text ``memlab run`` injected, back to the real one (from ``SECRETS_ENV``);
    anything else unchanged."""
    try:
        secrets = json.loads(os.environ.get(SECRETS_ENV, "{}"))
    except ValueError:
        return text
    return secrets.get(text, text) if isinstance(secrets, dict) else text
