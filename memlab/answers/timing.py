"""The time of a whole turn, per condition: the question's embedding, the store's query at the
dataset's size, and the chat's time to first token and total (the write-up's "added time" table,
for the user's own stack).

- question embedding: each question embedded once more by the model the scores come from (the
  same engine or server), bypassing the cache, after one warm-up text;
- store query: the whole spec as one native query (``memlab.qdrant.store.MemoryStore.query_spec``)
  on the dataset's memories, in Qdrant's local mode (``local``) or on Qdrant's own engine through
  ``memlab.qdrant.edge`` (``edge``), after one warm-up query;
- chat: the replies' own timings, as ``memlab.answers.chat`` streamed them.

A condition without memory (``off``) embeds nothing and queries nothing.
"""

from __future__ import annotations

import copy
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memlab.core.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from memlab.answers.conditions import Condition
    from memlab.scores.problem import RetrievalProblem

STORES = ("local", "edge")
STEPS = ("question embedding", "store query", "chat: first token", "chat: total")


def _timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def embedding_times(problem: RetrievalProblem) -> list[float]:
    """Seconds to embed each question (the problem's model, no cache), after a warm-up."""
    embedder = copy.copy(problem.embedder)
    texts = [q.text(problem.lang) for q in problem.dataset.questions]
    with tempfile.TemporaryDirectory(prefix="memlab-timing-") as tmp:
        embedder.cache_dir = Path(tmp)
        embedder.encode_queries(["warm-up"])
        return [_timed(lambda t=t: embedder.encode_queries([t])) for t in texts]


def _local_query(problem: RetrievalProblem):
    from memlab.qdrant.store import MemoryStore

    store = MemoryStore.from_dataset(problem.dataset, problem.memory_vectors(), lang=problem.lang)
    return store.query_spec


def _edge_query(problem: RetrievalProblem, folder: str):
    from memlab.qdrant import edge
    from memlab.qdrant.query import DEFAULT_SCHEMA, spec_body

    dataset, vectors = problem.dataset, problem.memory_vectors()
    shard = edge.create_shard(Path(folder) / "shard", int(vectors.shape[1]))
    schema = DEFAULT_SCHEMA
    payloads = [
        {schema.id_field: m.id, schema.date_field: schema.date_value(m.date)} for m in dataset.memories
    ]
    edge.upsert(shard, list(range(len(dataset.memories))), vectors.tolist(), payloads)

    def query(vector, spec, asked):
        at = asked or spec.reference_date
        return edge.run(shard, spec_body(spec, schema, np.asarray(vector, float).tolist(), at))

    return query


def store_times(
    problem: RetrievalProblem, conditions: list[Condition], store: str = "local"
) -> dict[str, list[float]]:
    """Per condition with a spec, seconds per question of the spec's native query."""
    if store not in STORES:
        raise InputError(f"--store: expected one of {', '.join(STORES)}, got {store!r}")
    qvecs = problem.question_vectors()
    asked = [q.date for q in problem.dataset.questions]
    out: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="memlab-store-") as tmp:
        query = _edge_query(problem, tmp) if store == "edge" else _local_query(problem)
        specs = [c for c in conditions if c.spec is not None]
        if specs:
            query(qvecs[0], specs[0].spec, asked[0])  # warm-up
        for c in specs:
            out[c.name] = [
                _timed(lambda i=i, c=c: query(qvecs[i], c.spec, asked[i])) for i in range(len(asked))
            ]
    return out


def turn_times(
    replies: pd.DataFrame,
    conditions: list[Condition],
    embedding: list[float] | None,
    queries: dict[str, list[float]] | None,
) -> pd.DataFrame:
    """One row per measurement: condition, step, seconds."""
    import pandas as pd

    rows = []
    for c in conditions:
        if c.spec is not None:
            rows += [(c.name, STEPS[0], s) for s in embedding or ()]
            rows += [(c.name, STEPS[1], s) for s in (queries or {}).get(c.name, ())]
        mine = replies[replies["condition"] == c.name]
        rows += [(c.name, STEPS[2], float(s)) for s in mine["ttft_s"]]
        rows += [(c.name, STEPS[3], float(s)) for s in mine["total_s"]]
    return pd.DataFrame(rows, columns=["condition", "step", "seconds"])


def timing_table(times: pd.DataFrame) -> pd.DataFrame:
    """Per condition and step: n, median, 95th percentile, min and max (seconds)."""
    import pandas as pd

    out = []
    for (condition, step), g in times.groupby(["condition", "step"], sort=False):
        s = g["seconds"].to_numpy(dtype=float)
        out.append(
            {
                "condition": condition,
                "step": step,
                "n": len(s),
                "median_s": float(np.median(s)),
                "p95_s": float(np.percentile(s, 95)),
                "min_s": float(s.min()),
                "max_s": float(s.max()),
            }
        )
    return pd.DataFrame(out)
