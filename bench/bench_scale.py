"""Exact top-k over N = 10^6 memories x 100 questions at 384 dimensions, in chunks.

Vectors come from the Gaussian fitted to a pool of real embeddings (``GaussianVectors``); the
100 questions are real embeddings of 100 held-out distractor texts. Measures wall time and the
peak resident memory of this process (target: 60 s within 4 GB on 2 cores), and checks the
chunked result against brute force on the first 20,000 memories. The last line is JSON.

Usage: python bench/bench_scale.py [--n 1000000] [--pool 2000]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

from memlab.core.spec import RetrievalSpec
from memlab.embedding.embedder import Embedder
from memlab.studies.scale import GaussianVectors, TopK, distractor_texts, stream


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--pool", type=int, default=2000)
    parser.add_argument("--chunk", type=int, default=50_000)
    args = parser.parse_args()

    texts, _ = distractor_texts(args.pool + 100, np.datetime64("2026-09-10"), seed=0)
    emb = Embedder()
    vecs = emb.encode_documents(texts)
    pool, queries = vecs[: args.pool], vecs[args.pool :]
    model = GaussianVectors.fit(pool)
    spec = RetrievalSpec()

    t0 = time.perf_counter()
    top = TopK(queries, spec.candidates)
    for chunk, ages in stream(None, model, args.n, seed=1, chunk=args.chunk):
        top.add(chunk, ages)
    best = top.best_final(spec)
    elapsed = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    # exactness: the same stream, brute force on a prefix
    check = TopK(queries, spec.candidates)
    first = next(stream(None, model, 20_000, seed=1, chunk=20_000))
    for s in range(0, 20_000, 777):
        check.add(first[0][s : s + 777], first[1][s : s + 777])
    brute = np.sort(queries.astype(np.float32) @ first[0].T, axis=1)[:, ::-1][:, : spec.candidates]
    exact = bool(np.allclose(np.sort(check.raw, axis=1)[:, ::-1], brute, atol=1e-6))

    print(
        f"{args.n:,} memories x {len(queries)} questions x {queries.shape[1]} dims: {elapsed:.1f} s "
        f"({args.n * len(queries) / elapsed:,.0f} scores/s), peak RSS {peak_mb:,.0f} MB, "
        f"chunk {args.chunk:,}; exact on a 20,000 prefix: {exact}"
    )
    print(f"best post-bonus candidate, median over the 100 questions: {np.median(best):.3f}")
    print(
        json.dumps(
            {
                "n": args.n,
                "questions": len(queries),
                "dims": int(queries.shape[1]),
                "seconds": round(elapsed, 1),
                "peak_mb": round(peak_mb),
                "exact": exact,
            }
        )
    )


if __name__ == "__main__":
    main()
