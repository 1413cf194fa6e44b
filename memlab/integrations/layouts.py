"""The layout a framework's retriever reads its collection by: the one ``memlab import-qdrant
--preset`` recorded for the tuned file's dataset (its date field and format as the store holds
them), else the preset's own names (``memlab.qdrant.presets``), the date field given winning."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from memlab.integrations.retriever import AsyncRetriever, Retriever, client_type, imported_collection
from memlab.qdrant.presets import PRESETS
from memlab.qdrant.query import CollectionSchema


def preset_layout(path: str | Path, preset: str, date_field: str | None = None) -> CollectionSchema:
    """The layout of the collection the tuned file ``path`` was tuned on, for ``preset``."""
    from memlab.tuning.tuned import load_tuned

    recorded = imported_collection(load_tuned(path))
    if recorded.get("preset") == preset and date_field in (None, recorded.get("date_field")):
        return CollectionSchema.from_dataset(SimpleNamespace(qdrant=recorded))
    return PRESETS[preset].layout(date_field)


def framework_retriever(
    path: str | Path,
    preset: str,
    *,
    client: Any,
    collection: str | None,
    embedder: Any,
    layout: CollectionSchema | None,
    date_field: str | None = None,
    **options: Any,
) -> Retriever | AsyncRetriever:
    """The memlab retriever a framework's wrapper holds: an ``AsyncRetriever`` on an
    ``AsyncQdrantClient``, else a ``Retriever``, on ``layout`` or else ``preset_layout``."""
    kind = AsyncRetriever if client_type(client) == "async" else Retriever
    return kind.from_file(
        path,
        client=client,
        collection=collection,
        embedder=embedder,
        layout=layout or preset_layout(path, preset, date_field),
        **options,
    )
