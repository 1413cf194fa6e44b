"""Mem0: what Mem0's own ``Memory.search`` can take of a tuned spec, what it cannot, and memlab's
tuned retriever on a Mem0 collection for the rest (``memlab import-qdrant --preset mem0`` read it
for tuning: ``memlab.qdrant.presets``).

Mem0's search (mem0ai 2.x) takes the ``max(4 top_k, 60)`` nearest memories, drops those whose
cosine is below ``threshold``, and keeps the ``top_k`` best, ranked by the cosine (mixed with a
BM25 keyword score when fastembed is installed, and with entity boosts when entities are
linked). So ``mem0_search(tuned)`` gives it the spec's ``inject`` as ``top_k`` and its threshold;
that is the whole spec when the spec has no recency bonus (``bonus`` 0: the final score is the
cosine) and Mem0's keyword scoring is off. It cannot express the recency bonus, nor a threshold
on the rescored value, nor the spec's own candidate pool: ``Mem0Search.not_expressed`` says which
of them the spec uses, and ``Mem0Retriever`` runs them in Qdrant's formula query on the same
collection, through the Memory's own Qdrant client and embedding model, returning Mem0's result
shape (``{"results": [{"id", "memory", "score", "raw_score", "created_at", "user_id", ...}]}``).
Needs the ``mem0`` extra (imported here, never by memlab itself).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from memlab.core.errors import InputError, needs_extra
from memlab.core.spec import RetrievalSpec
from memlab.integrations.layouts import preset_layout
from memlab.integrations.retriever import RetrievedMemory, Retriever
from memlab.qdrant.query import CollectionSchema

try:
    from mem0 import Memory
except ImportError:
    raise needs_extra("mem0ai", "mem0", "memlab.integrations.mem0") from None

# the payload fields Mem0 returns beside the memory (mem0.memory.main: its promoted keys);
# everything else it stored is the user's metadata
MEM0_FIELDS = ("hash", "created_at", "updated_at", "user_id", "agent_id", "run_id", "actor_id", "role")
MEM0_INTERNAL = ("data", "text_lemmatized")


@dataclass(frozen=True)
class Mem0Search:
    """Mem0's ``search`` arguments for a spec (``kwargs``), whether they are the whole spec
    (``exact``) and, in words, what the spec does that Mem0's search cannot."""

    top_k: int
    threshold: float
    exact: bool
    not_expressed: tuple[str, ...]

    def kwargs(self) -> dict[str, Any]:
        return {"top_k": self.top_k, "threshold": self.threshold}


def mem0_search(tuned: RetrievalSpec | str | Path) -> Mem0Search:
    """What ``Memory.search`` can take of a spec or a tuned-spec file (``memlab sweep --save``)."""
    if isinstance(tuned, str | Path):
        from memlab.tuning.tuned import load_tuned

        spec = load_tuned(tuned).spec
    elif isinstance(tuned, RetrievalSpec):
        spec = tuned
    else:
        raise InputError(
            f"tuned: expected a memlab.RetrievalSpec or a tuned-spec file, got {type(tuned).__name__}"
        )
    lost = []
    if spec.bonus != 0:
        lost += [
            f"the recency bonus ({spec.bonus:g}, {spec.decay} decay over {spec.tau_days:g} days, "
            f"combined by {spec.combine}): Mem0 ranks by the cosine alone",
            f"the threshold {spec.threshold:g} on the rescored value: Mem0's threshold gates the cosine, "
            "so a memory the bonus lifts over it is dropped and none is held back by its age",
            f"the candidate pool of {spec.candidates} nearest that the bonus re-ranks: Mem0 ranks its own "
            f"max(4 top_k, 60) = {max(4 * spec.inject, 60)} nearest",
        ]
    return Mem0Search(spec.inject, spec.threshold, not lost, tuple(lost))


def result(memory: RetrievedMemory) -> dict[str, Any]:
    """A memory in the shape of one of Mem0's search results, with memlab's two scores."""
    payload = memory.payload
    out: dict[str, Any] = {"id": str(memory.id), "memory": memory.text}
    out.update({k: payload[k] for k in MEM0_FIELDS if k in payload})
    skip = (*MEM0_FIELDS, *MEM0_INTERNAL)
    out["metadata"] = {k: v for k, v in payload.items() if k not in skip} or None
    out.update({"score": memory.final, "raw_score": memory.raw})
    return out


class Mem0Retriever:
    """The tuned spec on a Mem0 Memory's Qdrant collection: ``search`` as Mem0's, with recency."""

    def __init__(self, retriever: Retriever):
        self.retriever = retriever

    @classmethod
    def from_file(
        cls, path: str | Path, memory: Memory, *, layout: CollectionSchema | None = None, **options: Any
    ) -> Mem0Retriever:
        """The retriever of a tuned-spec file on ``memory``'s collection (a Mem0 ``Memory`` over
        Qdrant), its questions embedded by the Memory's own embedding model."""
        store = memory.vector_store
        client = getattr(store, "client", None)
        if client is None or type(store).__module__ != "mem0.vector_stores.qdrant":
            raise InputError(f"memory: its vector store is {type(store).__name__}, not Mem0's Qdrant store")
        retriever = Retriever.from_file(
            path,
            client=client,
            collection=store.collection_name,
            embedder=lambda text: memory.embedding_model.embed(text, "search"),
            layout=layout or preset_layout(path, "mem0"),
            **options,
        )
        return cls(retriever)

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        asked: datetime | date | str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> dict[str, list[dict[str, Any]]]:
        """The memories the spec injects for ``query`` asked at ``asked`` (None: now, UTC), in
        Mem0's result shape; ``user_id`` narrows to one user, ``filters`` adds payload conditions."""
        memories = self.retriever.retrieve(query, asked=asked, filter=filters, limit=limit, user=user_id)
        return {"results": [result(m) for m in memories]}
