"""Where LangChain, LlamaIndex and Mem0 keep a memory in the Qdrant payload they write: the
presets of ``memlab import-qdrant --preset``.

Each preset names the payload paths its library writes (read from the library's own source at
the versions of the extras in pyproject.toml; ``tests/test_integrations_*.py`` write a store with
each library and import it back):

- ``langchain`` (langchain-qdrant's ``QdrantVectorStore``): the text under ``page_content``, the
  user's metadata object under ``metadata``, one unnamed dense vector. LangChain writes no date:
  the preset reads the metadata's ``date`` (``metadata.date``), the user from ``metadata.user_id``.
- ``llamaindex`` (llama-index-vector-stores-qdrant's ``QdrantVectorStore``): the node's metadata
  flat at the top of the payload, the whole node as a JSON string under ``_node_content`` (the
  text only there, as its ``text``), one dense vector (unnamed; ``text-dense`` beside a sparse
  one when hybrid). The date is the node metadata's ``date``, the user its ``user_id``.
- ``mem0`` (mem0ai's ``Memory``): the memory under ``data``, its creation time under
  ``created_at`` (ISO 8601 with an offset; Mem0 keeps a ``created_at`` given in the metadata),
  the user under ``user_id``, one unnamed dense vector (beside a sparse ``bm25`` one).

Each writes one dense vector, which the importer finds by itself. A path steps into nested
objects with dots (``memlab.datasets.payload.payload_at``), as Qdrant's key paths do, so the
exported query filters and decays on the same names.
"""

from __future__ import annotations

from dataclasses import dataclass

from memlab.qdrant.query import CollectionSchema


@dataclass(frozen=True)
class Preset:
    """The payload paths one library writes a memory's text, date and user under."""

    name: str
    library: str  # the PyPI package that writes the collection
    text_field: str
    date_field: str  # the default; --date-field names another
    user_field: str  # kept as the memory's payload where points have it: the tenant filter reads it

    def layout(self, date_field: str | None = None, date_format: str = "iso") -> CollectionSchema:
        """The collection's names as ``memlab.Retriever`` reads them (``layout=``): the preset's
        text and user, its date unless ``date_field`` names the one the application writes. An
        imported dataset records its own (``CollectionSchema.from_dataset``)."""
        return CollectionSchema(
            date_field=date_field or self.date_field,
            date_format=date_format,
            text_field=self.text_field,
            user_field=self.user_field,
        )


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("langchain", "langchain-qdrant", "page_content", "metadata.date", "metadata.user_id"),
        Preset("llamaindex", "llama-index-vector-stores-qdrant", "_node_content.text", "date", "user_id"),
        Preset("mem0", "mem0ai", "data", "created_at", "user_id"),
    )
}
