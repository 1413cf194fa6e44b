"""How long comparing the retrieval retrievers takes, per dataset, with a warm embedding cache.

For each dataset: embedding (cached) + BM25 + the gate, then every retriever swept over its axes
(alpha x normalisation, RRF k, bonus x tau, calibrated thresholds) with the default grid, and
the chosen configurations. Prints configurations per second and a final JSON line.

Usage: python bench/bench_compare.py [--repeat 3] [--lang en]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from memlab.datasets.schema import load_dataset
from memlab.retrieval.inputs import build_inputs
from memlab.scores.sources import load_scores
from memlab.studies.hybrid import RetrieverGrid, compare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lang", default="en")
    args = parser.parse_args()
    out = {}
    for name in ("seed16-time", "daily-lunch"):
        dataset = load_dataset(name)
        load_scores("embedded", dataset, lang=args.lang)  # warm the cache
        prepare, run, configs = [], [], 0
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            scores = load_scores("embedded", dataset, lang=args.lang)
            inputs = build_inputs(dataset, scores.raw, lang=args.lang)
            t1 = time.perf_counter()
            result = compare(inputs, None, RetrieverGrid())
            t2 = time.perf_counter()
            prepare.append(t1 - t0)
            run.append(t2 - t1)
            configs = result.configs
        p, r = statistics.median(prepare), statistics.median(run)
        print(
            f"{name:>12}: scores + BM25 + gate {p:.2f} s; {configs} configurations, 7 retrievers, {r:.2f} s "
            f"({configs / r:,.0f}/s)"
        )
        out[name] = {"prepare_s": round(p, 3), "compare_s": round(r, 3), "configs": configs}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
