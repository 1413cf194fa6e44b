"""The drifting-facts benchmark at full size: 400 held-out streams, tuned on 200 others.

Embeddings come from the on-disk cache (a first run embeds the ~1,000 unique texts once; run it
twice to time the warm case). Prints the held-out table, the wall time and, last, one JSON line
with the headline figures (target: under 120 s on 2 cores with cached embeddings).

Usage: python benchmarks/bench_drift.py [--streams 400] [--seed-range 1000:1400] [--tune-range 0:200]
"""

from __future__ import annotations

import argparse
import json
import time

from memlab.app.cli import drift_table, parse_budgets
from memlab.studies.drift_benchmark import drift_benchmark
from memlab.studies.drift_streams import held_out_seeds, parse_seed_range


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=400)
    parser.add_argument("--seed-range", default="1000:1400")
    parser.add_argument("--tune-range", default="0:200")
    parser.add_argument("--budgets", default="16,32,64,128,256,512")
    parser.add_argument("--boot", type=int, default=1000)
    args = parser.parse_args()

    held = held_out_seeds(args.seed_range, args.streams)
    t0 = time.perf_counter()
    result = drift_benchmark(
        held, parse_seed_range(args.tune_range, "--tune-range"), parse_budgets(args.budgets), n_boot=args.boot
    )
    elapsed = time.perf_counter() - t0
    print(drift_table(result))
    print(
        f"{len(held)} held-out streams, tuned on {len(result.tune_range)}; "
        f"{result.unique_texts} unique texts, "
        f"embedding model loaded {result.model_loads} time(s); "
        f"wall time {elapsed:.1f} s ({', '.join(f'{k} {v:.1f} s' for k, v in result.seconds.items())})"
    )
    t = result.table
    budgets = sorted(int(b) for b in t.budget.unique())
    shown = 64 if 64 in budgets else budgets[len(budgets) // 2]
    at = t[t.budget == shown].set_index(["system", "write_policy"])
    headline = {
        f"{s}/{w}@{shown}": {"recall": round(r.recall, 3), "staleness": round(r.staleness, 3)}
        for (s, w), r in at.iterrows()
        if s in ("top-k", "recency-spec", "multi-factor", "supersession")
    }
    print(
        json.dumps(
            {
                "held_out_streams": len(held),
                "tuning_streams": len(result.tune_range),
                "budgets": sorted(int(b) for b in t.budget.unique()),
                "seconds": round(elapsed, 1),
                "model_loads": result.model_loads,
                "tokenizer": result.tokenizer,
                f"at_budget_{shown}": headline,
            }
        )
    )


if __name__ == "__main__":
    main()
