"""Opening a Qdrant client: a server, a local folder, or in memory."""

from __future__ import annotations

from memlab.core.errors import UnreachableError
from memlab.core.urls import check_url, excerpt, redact


def open_client(path: str | None = None, url: str | None = None):
    """A Qdrant client: on a server (``url``, asked once that it answers, else one line naming the
    URL, redacted), a local folder (``path``) or in memory."""
    from qdrant_client import QdrantClient
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    if not url:
        return QdrantClient(path=path) if path else QdrantClient(":memory:")
    check_url(url, "--qdrant-url")
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
        raise UnreachableError(
            f"cannot reach a Qdrant server at {redact(url)}: {redact(str(reason))}"
        ) from None
    return client
