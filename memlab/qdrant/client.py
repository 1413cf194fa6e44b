"""Opening a Qdrant client: a server, a local folder, or in memory."""

from __future__ import annotations

from memlab.core.errors import UnreachableError


def open_client(path: str | None = None, url: str | None = None):
    """A Qdrant client: on a server (``url``, asked once that it answers, else one line naming the
    URL), a local folder (``path``) or in memory."""
    from qdrant_client import QdrantClient
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    if not url:
        return QdrantClient(path=path) if path else QdrantClient(":memory:")
    client = QdrantClient(url=url, check_compatibility=False)  # the probe below says more
    try:
        client.get_collections()
    except (ResponseHandlingException, UnexpectedResponse) as e:
        client.close()
        reason = getattr(e, "source", None) or e
        raise UnreachableError(f"cannot reach a Qdrant server at {url}: {reason}") from None
    return client
