"""What ``memlab.Retriever`` costs beside the bare query it sends: per call, the retriever
(fill, run, read the payloads, give back the raw scores, order) against ``run_query`` /
``edge.query_points`` of the same filled body, on one store of ``--memories`` random memories
(24 dimensions, two users, the tenant filter on), on qdrant-client's local mode and on the
real engine (qdrant-edge-py), the two alternating in each round.

The last line is one JSON object. Usage: python bench/bench_retriever.py [--memories 2000]
[--calls 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from qdrant_client import QdrantClient, models

from memlab import RetrievalSpec, Retriever
from memlab.qdrant import edge
from memlab.qdrant.query import DEFAULT_SCHEMA, fill, spec_body
from memlab.qdrant.store import run_query

DIM, REF = 24, datetime(2026, 9, 10, tzinfo=UTC)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=2000)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = args.memories
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    queries = rng.normal(size=(64, DIM))
    payloads = [
        {
            "memory_id": f"m{i}",
            "date": DEFAULT_SCHEMA.date_value(REF - timedelta(seconds=int(rng.integers(0, 90 * 86400)))),
            "text": f"memory {i}",
            "user_id": ("alice", "bob")[i % 2],
        }
        for i in range(n)
    ]
    local = QdrantClient(":memory:")
    local.create_collection(
        "m", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
    )
    local.upsert(
        "m",
        points=[models.PointStruct(id=i, vector=vectors[i].tolist(), payload=payloads[i]) for i in range(n)],
    )
    qe = edge.engine()
    shard = edge.create_shard(Path(tempfile.mkdtemp()) / "shard", DIM)
    shard.update(qe.UpdateOperation.create_field_index("user_id", qe.PayloadSchemaType.Keyword))
    edge.upsert(shard, range(n), vectors, payloads)
    spec = RetrievalSpec(candidates=8, inject=3, threshold=0.2, bonus=0.1, tau_days=14.0)
    conditions = [{"key": "user_id", "match": {"value": "alice"}}]
    flt = {"user_id": "alice"}

    def timed(call) -> float:
        t = time.perf_counter()
        for k in range(args.calls):
            call(k)
        return (time.perf_counter() - t) / args.calls * 1000

    runs: dict[str, list[float]] = {
        k: [] for k in ("local_bare", "local_retriever", "edge_bare", "edge_retriever")
    }
    retrievers = {
        "local": Retriever.from_spec(spec, client=local, collection="m"),
        "edge": Retriever.from_spec(spec, client=shard),
    }
    bodies = {name: spec_body(spec, extra_conditions=conditions, exact=name == "edge") for name in retrievers}
    bare = {
        "local": lambda k: run_query(
            local, "m", fill(bodies["local"], queries[k % 64], REF), with_payload=True
        ),
        "edge": lambda k: edge.query_points(
            shard, {**fill(bodies["edge"], queries[k % 64], REF), "with_payload": True}
        ),
    }
    for name, retriever in retrievers.items():  # warm
        retriever.retrieve(queries[0], REF, flt)
        bare[name](0)
    for _ in range(args.rounds):
        for name, retriever in retrievers.items():
            runs[f"{name}_bare"].append(timed(bare[name]))
            runs[f"{name}_retriever"].append(
                timed(lambda k, r=retriever: r.retrieve(queries[k % 64], REF, flt))
            )
    result = {k: round(statistics.median(v), 3) for k, v in runs.items() if v}
    result["memories"] = n
    for name in ("local", "edge"):
        mine, theirs = result[name + "_retriever"], result[name + "_bare"]
        print(f"{name}: retriever {mine} ms a call, the bare query {theirs} ms")
    shard.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
