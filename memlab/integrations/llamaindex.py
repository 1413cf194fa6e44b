"""LlamaIndex: memlab's tuned retriever as a llama-index-core ``BaseRetriever``, over a
collection that llama-index-vector-stores-qdrant's ``QdrantVectorStore`` wrote (``memlab
import-qdrant --preset llamaindex`` read it for tuning: ``memlab.qdrant.presets``).

``MemlabRetriever.from_file("tuned.yaml", client=..., collection=..., embed_model=...)`` wraps a
``memlab.Retriever``: ``retrieve(question)`` returns ``NodeWithScore`` s, best first, each node
rebuilt from its payload as LlamaIndex's own store rebuilds it (``metadata_dict_to_node``), its
score memlab's final score (after the recency bonus) and its cosine under ``raw_score`` in the
node's metadata (kept out of what the LLM and the embedder see); with a rerank stage in the tuned
file, scored by the stage's blended score, ``final_score`` and ``rerank_score`` beside it. The
question is embedded with the application's ``embed_model`` (a LlamaIndex ``BaseEmbedding``)
when given, else with the model the tuned file records; a ``QueryBundle`` carrying its embedding
is asked with it (and its text, which a rerank stage scores). It is asked at ``asked`` (default:
now); ``user`` narrows to one user (``user_id``).

What LlamaIndex expresses natively: ``index.as_retriever(similarity_top_k=inject)`` is the
spec's limit on the raw cosine, and a ``SimilarityPostprocessor(similarity_cutoff=threshold)``
its threshold without recency; the recency bonus, the candidate pool it re-ranks and a threshold
on the rescored value are not: this retriever runs them in Qdrant's formula query. Needs the
``llamaindex`` extra (imported here, never by memlab itself).
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
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle
    from llama_index.core.vector_stores.utils import metadata_dict_to_node
    from pydantic import PrivateAttr
except ImportError:
    raise needs_extra("llama-index-core", "llamaindex", "memlab.integrations.llamaindex") from None


class MemlabEmbedding(BaseEmbedding):
    """LlamaIndex's ``BaseEmbedding`` over a memlab embedder (``memlab.embedding.embedder``): a
    store written with a model memlab runs offline, the questions embedded alike."""

    _embedder: Any = PrivateAttr()

    def __init__(self, embedder: Any, **kwargs: Any):
        super().__init__(model_name=embedder.model_id, **kwargs)
        self._embedder = embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embedder.encode_queries([query])[0].tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embedder.encode_documents([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embedder.encode_documents(list(texts)).tolist()


def node(memory: RetrievedMemory) -> NodeWithScore:
    """A memory as LlamaIndex's store returns it, scored by memlab's final score."""
    rebuilt = metadata_dict_to_node(memory.payload)
    scores = {"raw_score": memory.raw}
    if memory.blended is not None:  # a rerank stage: the node is scored by what it ordered by
        scores.update({"final_score": memory.final, "rerank_score": memory.rerank})
    rebuilt.metadata.update(scores)
    for keys in (rebuilt.excluded_llm_metadata_keys, rebuilt.excluded_embed_metadata_keys):
        keys.extend(scores)
    return NodeWithScore(node=rebuilt, score=memory.final if memory.blended is None else memory.blended)


class MemlabRetriever(BaseRetriever):
    """The tuned spec on a LlamaIndex Qdrant collection, as a LlamaIndex retriever."""

    def __init__(
        self,
        retriever: Retriever | AsyncRetriever,
        *,
        asked: datetime | date | str | None = None,
        user: str | int | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.retriever = retriever
        self.asked = asked  # None: each call asks now (UTC)
        self.user = user

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        *,
        client: Any,
        collection: str | None = None,
        embed_model: Any = None,
        date_field: str | None = None,
        layout: CollectionSchema | None = None,
        asked: datetime | date | str | None = None,
        user: str | int | None = None,
        **options: Any,
    ) -> MemlabRetriever:
        """The retriever of a tuned-spec file (``memlab sweep --save``) on ``collection``:
        ``embed_model`` a LlamaIndex ``BaseEmbedding`` (or a memlab embedder); ``date_field`` the
        node metadata's date (default: the one ``memlab import-qdrant`` recorded for the tuned
        dataset, else ``date``); ``collection`` likewise. On an ``AsyncQdrantClient`` it wraps a
        ``memlab.AsyncRetriever``: ``aretrieve`` awaits it."""
        if embed_model is not None and hasattr(embed_model, "get_query_embedding"):
            embed_model = embed_model.get_query_embedding
        retriever = framework_retriever(
            path,
            "llamaindex",
            client=client,
            collection=collection,
            embedder=embed_model,
            layout=layout,
            date_field=date_field,
            **options,
        )
        return cls(retriever, asked=asked, user=user)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if isinstance(self.retriever, AsyncRetriever):
            raise InputError(
                "the retriever is on an AsyncQdrantClient: call aretrieve (or give a QdrantClient)"
            )
        query, kwargs = self.arguments(query_bundle)
        return [node(m) for m in self.retriever.retrieve(query, **kwargs)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """``aretrieve``: awaited on an AsyncQdrantClient; a sync client's retriever in a worker thread."""
        import asyncio

        query, kwargs = self.arguments(query_bundle)
        if isinstance(self.retriever, AsyncRetriever):
            memories = await self.retriever.retrieve(query, **kwargs)
        else:
            memories = await asyncio.to_thread(self.retriever.retrieve, query, **kwargs)
        return [node(m) for m in memories]

    def arguments(self, query_bundle: QueryBundle) -> tuple[Any, dict[str, Any]]:
        """What ``retrieve`` is asked: the bundle's embedding (else its text), when, the user, and
        the text beside an embedding (a rerank stage scores it)."""
        query = query_bundle.embedding or query_bundle.query_str
        text = query_bundle.query_str if query_bundle.embedding and query_bundle.query_str else None
        return query, {"asked": self.asked, "user": self.user, "text": text}
