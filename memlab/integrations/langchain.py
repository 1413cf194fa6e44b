"""LangChain: memlab's tuned retriever as a langchain-core ``BaseRetriever``, over a collection
that langchain-qdrant's ``QdrantVectorStore`` wrote (``memlab import-qdrant --preset langchain``
read it for tuning: ``memlab.qdrant.presets``).

``MemlabRetriever.from_file("tuned.yaml", client=..., collection=..., embedding=...)`` wraps a
``memlab.Retriever``: ``invoke(question)`` returns LangChain ``Document`` s, best first, each as
``QdrantVectorStore`` returns it (``page_content``, the stored ``metadata``, ``_id``) with the
memory's ``raw_score`` (cosine) and ``final_score`` (after the recency bonus) in its metadata
(with a rerank stage in the tuned file, also ``rerank_score`` and ``blended_score``, the order's;
``reranker=`` as ``memlab.Retriever.from_file`` takes it).
The question is embedded with the application's own LangChain ``Embeddings`` (``embed_query``)
when given, else with the model the tuned file records. ``invoke(question, asked=...)`` asks it
at that time (default: now); ``user=`` narrows to one user (``metadata.user_id``). On an
``AsyncQdrantClient``, ``await ainvoke(question, ...)`` runs a ``memlab.AsyncRetriever``.

What LangChain expresses natively: ``as_retriever(search_type="similarity_score_threshold",
search_kwargs={"k": inject, "score_threshold": threshold})`` is the spec without recency (a
threshold on the raw cosine and a limit); the recency bonus, the candidate pool it re-ranks and
a threshold on the rescored value are not: this retriever runs them in Qdrant's formula query.
Needs the ``langchain`` extra (imported here, never by memlab itself).
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Any

from memlab.core.errors import InputError, needs_extra
from memlab.integrations.layouts import framework_retriever
from memlab.integrations.retriever import AsyncRetriever, RetrievedMemory, Retriever
from memlab.qdrant.query import CollectionSchema

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict
except ImportError:
    raise needs_extra("langchain-core", "langchain", "memlab.integrations.langchain") from None


class MemlabEmbeddings(Embeddings):
    """LangChain's ``Embeddings`` over a memlab embedder (``memlab.embedding.embedder``): a store
    written with a model memlab runs offline, the questions embedded alike."""

    def __init__(self, embedder: Any):
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.encode_documents(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.encode_queries([text])[0].tolist()


def document(memory: RetrievedMemory) -> Document:
    """A memory as ``QdrantVectorStore`` returns it, with memlab's two scores in its metadata."""
    stored = memory.payload.get("metadata")
    metadata = dict(stored) if isinstance(stored, dict) else {}
    metadata.update({"_id": memory.id, "raw_score": memory.raw, "final_score": memory.final})
    if memory.blended is not None:  # a rerank stage: the reranker's score and the one it ordered by
        metadata.update({"rerank_score": memory.rerank, "blended_score": memory.blended})
    return Document(page_content=memory.text, metadata=metadata, id=str(memory.id))


class MemlabRetriever(BaseRetriever):
    """The tuned spec on a LangChain Qdrant collection, as a LangChain retriever."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: Retriever | AsyncRetriever  # an AsyncRetriever on an AsyncQdrantClient: ainvoke
    asked: datetime | date | str | None = None  # None: each call asks now (UTC)

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        *,
        client: Any,
        collection: str | None = None,
        embedding: Any = None,
        date_field: str | None = None,
        layout: CollectionSchema | None = None,
        **options: Any,
    ) -> MemlabRetriever:
        """The retriever of a tuned-spec file (``memlab sweep --save``) on ``collection``:
        ``embedding`` a LangChain ``Embeddings`` (or a memlab embedder); ``date_field`` the
        metadata date the application writes (default: the one ``memlab import-qdrant`` recorded for
        the tuned dataset, else ``metadata.date``); ``collection`` likewise. On an
        ``AsyncQdrantClient`` it wraps a ``memlab.AsyncRetriever``: ``ainvoke`` awaits it."""
        return cls(
            retriever=framework_retriever(
                path,
                "langchain",
                client=client,
                collection=collection,
                embedder=query_embedder(embedding),
                layout=layout,
                date_field=date_field,
                **options,
            )
        )

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        asked: datetime | date | str | None = None,
        user: str | int | None = None,
        filter: dict[str, Any] | None = None,
    ) -> list[Document]:
        if isinstance(self.retriever, AsyncRetriever):
            raise InputError(
                "the retriever is on an AsyncQdrantClient: call ainvoke (or give a QdrantClient)"
            )
        memories = self.retriever.retrieve(query, asked=asked or self.asked, filter=filter, user=user)
        return [document(m) for m in memories]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        asked: datetime | date | str | None = None,
        user: str | int | None = None,
        filter: dict[str, Any] | None = None,
    ) -> list[Document]:
        """``ainvoke``: awaited on an AsyncQdrantClient; a sync client's retriever in a worker thread."""
        import asyncio

        kwargs = {"asked": asked or self.asked, "filter": filter, "user": user}
        if isinstance(self.retriever, AsyncRetriever):
            memories = await self.retriever.retrieve(query, **kwargs)
        else:
            memories = await asyncio.to_thread(self.retriever.retrieve, query, **kwargs)
        return [document(m) for m in memories]


def query_embedder(embedding: Any) -> Any:
    """A LangChain ``Embeddings``'s ``embed_query`` (the vector its store's queries use); a memlab
    embedder or a function as it is."""
    if (
        embedding is not None
        and hasattr(embedding, "embed_query")
        and not hasattr(embedding, "encode_queries")
    ):
        return embedding.embed_query
    return embedding
