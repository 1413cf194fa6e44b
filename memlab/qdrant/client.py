"""Opening a Qdrant client: a server, a local folder, or in memory."""

from __future__ import annotations

from pathlib import Path

from memlab.core.errors import MissingFileError, UnreachableError
from memlab.core.urls import check_url, excerpt, join_path, redact


def local_storage(path: str, flag: str) -> None:
    """Refuse a folder that holds no local Qdrant storage (qdrant-client would create one)."""
    folder = Path(path)
    if not folder.is_dir():
        raise MissingFileError(f"{flag} {path}: no such folder (a local Qdrant storage folder)")
    if not (folder / "meta.json").is_file():
        raise MissingFileError(f"{flag} {path}: holds no local Qdrant storage (no meta.json)")


def open_client(path: str | None = None, url: str | None = None, url_flag: str = "--qdrant-url"):
    """A Qdrant client: on a server (``url``, asked once that it answers, else one line naming the
    URL, redacted; ``url_flag`` the option that gave it), a local folder (``path``) or in memory."""
    if url:
        check_url(url, url_flag)  # before qdrant-client's import (seconds on a loaded machine)
    from qdrant_client import QdrantClient
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    if not url:
        return QdrantClient(path=path) if path else QdrantClient(":memory:")
    client = QdrantClient(url=url, check_compatibility=False)  # the probe below says more
    try:
        client.get_collections()
    except UnexpectedResponse as e:  # it answered, but not as Qdrant does (a web page, a proxy)
        client.close()
        body = (e.content or b"").decode("utf-8", "replace")
        kind = (e.headers or {}).get("content-type", "")
        raise UnreachableError(
            f"{redact(url)} does not answer as a Qdrant server: HTTP {e.status_code} {e.reason_phrase}, "
            f"{excerpt(body, kind, quote=True)}"
        ) from None
    except (ResponseHandlingException, ValueError) as e:  # no connection; a reply that is no JSON
        client.close()
        reason = getattr(e, "source", None) or e
        if isinstance(reason, ValueError):  # it answered, with something else than JSON: say what
            raise UnreachableError(
                f"{redact(url)} does not answer as a Qdrant server: {what_answers(url)}"
            ) from None
        raise UnreachableError(
            f"cannot reach a Qdrant server at {redact(url)}: {redact(str(reason))}"
        ) from None
    return client


def what_answers(url: str) -> str:
    """The reply at ``url``'s ``/collections``, short (a web page by its title)."""
    import httpx

    try:
        r = httpx.get(join_path(url, "collections"), timeout=10)
    except httpx.HTTPError as e:
        return redact(f"{type(e).__name__}: {e}")
    return f"HTTP {r.status_code} {r.reason_phrase}, {excerpt(r.text, r.headers.get('content-type', ''))}"
