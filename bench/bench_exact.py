"""How often approximate (HNSW) search changes the spec's candidates, on the real engine.

Builds qdrant-edge-py shards of N random 384-dimensional memories with Qdrant's default index
settings (HNSW m=16, ef_construct=100, full_scan_threshold and indexing_threshold 10,000 KB),
optimises them (builds the HNSW graph where the segment passes the indexing threshold), then
runs the exported spec for Q queries twice, without and with ``params.exact``, and counts the
queries whose candidates (the prefetch's top ``candidates``) or injected memories differ.
Two kinds of vectors: isotropic Gaussian (the hard case for HNSW) and clustered (50 topics,
closer to real embeddings). Prints a table and, last, one JSON line.

Usage: python bench/bench_exact.py [--sizes 5000,20000] [--queries 200] [--candidates 8]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memlab.core.spec import RetrievalSpec
from memlab.qdrant import edge
from memlab.qdrant.query import DEFAULT_SCHEMA, fill, spec_body

REF = datetime(2026, 9, 10, tzinfo=UTC)
DIM = 384


def vectors(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "gaussian":
        return rng.normal(size=(n, DIM)).astype(np.float32)
    centres = rng.normal(size=(50, DIM))
    return (centres[rng.integers(0, 50, n)] + 0.6 * rng.normal(size=(n, DIM))).astype(np.float32)


def build(path: Path, vecs: np.ndarray, dates: list[datetime]):
    qe = edge.engine()
    config = qe.EdgeConfig(
        vectors={"": qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine)},
        hnsw_config=qe.HnswIndexConfig(
            m=16, ef_construct=100, full_scan_threshold=10_000, max_indexing_threads=1
        ),
        optimizers=qe.EdgeOptimizersConfig(indexing_threshold=10_000),
    )
    shard = qe.EdgeShard.create(str(path), config)
    shard.update(qe.UpdateOperation.create_field_index("date", qe.PayloadSchemaType.Datetime))
    for start in range(0, len(vecs), 2000):
        stop = min(start + 2000, len(vecs))
        payloads = [DEFAULT_SCHEMA.date_value(dates[i]) for i in range(start, stop)]
        edge.upsert(shard, range(start, stop), vecs[start:stop], [{"date": p} for p in payloads])
    shard.optimize()
    return shard


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,20000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--candidates", type=int, default=8)
    args = parser.parse_args()
    spec = RetrievalSpec(candidates=args.candidates, inject=3, threshold=0.0, bonus=0.05, tau_days=14)
    rows = []
    for kind in ("gaussian", "clustered"):
        for n in (int(s) for s in args.sizes.split(",")):
            rng = np.random.default_rng(n)
            vecs = vectors(kind, n, rng)
            dates = [REF - timedelta(seconds=int(s)) for s in rng.integers(0, 90 * 86400, n)]
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                shard = build(Path(tmp) / "shard", vecs, dates)
                built = time.perf_counter() - t0
                indexed = shard.info().indexed_vectors_count
                cand_diff = inj_diff = 0
                for _ in range(args.queries):
                    query = vecs[rng.integers(0, n)] + rng.normal(scale=0.5, size=DIM)
                    near = {"query": query.tolist(), "limit": spec.candidates}
                    approx = {int(i) for i, _ in edge.run(shard, near)}
                    exact = {int(i) for i, _ in edge.run(shard, {**near, "params": {"exact": True}})}
                    cand_diff += approx != exact
                    bodies = [fill(spec_body(spec, exact=e), query, REF) for e in (False, True)]
                    a, b = ([int(i) for i, _ in edge.run(shard, body)] for body in bodies)
                    inj_diff += a != b
                shard.close()
            rows.append(
                {
                    "vectors": kind,
                    "n": n,
                    "indexed": indexed,
                    "queries": args.queries,
                    "candidates_differ": cand_diff,
                    "injected_differ": inj_diff,
                    "build_s": round(built, 1),
                }
            )
            r = rows[-1]
            print(
                f"{kind:<9} N={n:>6} indexed={indexed:>6}: top-{spec.candidates} candidates differ in "
                f"{cand_diff}/{args.queries} queries, injected in {inj_diff}/{args.queries} "
                f"(built in {r['build_s']} s)"
            )
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
