"""One slider move in 03_tune: memlab's recompute plus the figure update, on the fixture.

Times ``TuningPanel.set`` (the callback a slider fires): the one-config reference on cached
scores, the criteria, and the FigureWidget batch update, in-process as in the kernel. Alternates
two bonus values so every move really changes the figure. Prints the median and the 95th
percentile over ``--moves`` moves, for the published and the embedded source; the last line is
one JSON object.

Usage: python bench/bench_tune.py [--moves 200]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from memlab.app.panel import TuningPanel
from memlab.datasets.schema import load_dataset


def measure(source: str, moves: int) -> dict[str, float]:
    panel = TuningPanel(load_dataset(), source=source)
    panel.view()
    times = []
    for i in range(moves):
        t0 = time.perf_counter()
        panel.set(bonus=0.04 if i % 2 else 0.05)
        times.append((time.perf_counter() - t0) * 1000)
    recompute = []
    for i in range(moves):  # memlab alone, without the figure
        t0 = time.perf_counter()
        panel.spec = panel.spec.__class__(bonus=0.04 if i % 2 else 0.05)
        panel.compute()
        recompute.append((time.perf_counter() - t0) * 1000)
    return {
        "median_ms": float(np.median(times)),
        "p95_ms": float(np.percentile(times, 95)),
        "recompute_median_ms": float(np.median(recompute)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=200)
    args = parser.parse_args()
    out = {}
    for source in ("published", "embedded"):
        r = measure(source, args.moves)
        out[source] = r
        print(
            f"{source:>9}: slider move {r['median_ms']:.1f} ms median, {r['p95_ms']:.1f} ms p95 "
            f"(memlab recompute alone {r['recompute_median_ms']:.2f} ms) over {args.moves} moves"
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
