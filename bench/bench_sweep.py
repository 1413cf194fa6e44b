"""The vectorised sweep against the seed's way: one Qdrant query and a Python re-rank per
configuration and question. Both are measured in this one run, on the same grid.

Measures, on the fixture embedded with the default model (cached after the first run):
- the sweep over a 10^6-configuration grid (bonus 400 x tau 119 x threshold 21): wall time,
  configuration-question evaluations per second, and its traced memory peak;
- the baseline on a random sample of the same grid's configurations (raw top-k from Qdrant,
  then memlab's re-rank), evaluations per second, and the ratio;
- a 10^8-configuration grid swept in chunks with a streaming selection: wall time and the
  traced memory peak (bounded by the chunk size, not the grid size).

The last line is one JSON object: sweep_per_s, baseline_per_s, ratio, peak_mb (the 10^8 run),
plus the other figures.

Usage: python bench/bench_sweep.py [--huge 1e8] [--baseline-configs 200]
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc

import numpy as np

from memlab.core.criteria import dataset_criteria
from memlab.core.grid import Grid
from memlab.core.labels import Labels
from memlab.core.selection import select_streaming
from memlab.core.spec import retrieve
from memlab.core.sweep import sweep, sweep_chunks
from memlab.datasets.schema import load_dataset
from memlab.qdrant.store import MemoryStore
from memlab.scores.sources import load_scores


def grid_of(size: int) -> Grid:
    """The issue's axes (tau 1:60:0.5, threshold 0.40:0.50:0.005), the bonus from 0 to 0.1 as
    finely as ``size`` configurations allow; for 10^8, a finer tau (0.1 days) and threshold too."""
    if size <= 10**6:
        taus, thresholds = np.arange(1.0, 60.0 + 1e-9, 0.5), np.round(np.arange(0.40, 0.50 + 1e-9, 0.005), 3)
    else:
        taus, thresholds = np.arange(1.0, 60.0 + 1e-9, 0.1), np.round(np.arange(0.40, 0.50 + 1e-9, 0.001), 3)
    n_bonus = max(1, round(size / (len(taus) * len(thresholds))))
    return Grid(
        bonus=tuple(np.linspace(0.0, 0.1, n_bonus)), tau_days=tuple(taus), threshold=tuple(thresholds)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--huge", type=float, default=1e8, help="configurations of the chunked run")
    parser.add_argument("--baseline-configs", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    dataset = load_dataset()
    scores = load_scores("embedded", dataset)
    ages = dataset.ages()
    labels = Labels.from_dataset(dataset)
    criteria = dataset_criteria(dataset)  # the seed's a, b, c
    n_q = len(dataset.questions)

    # -- the sweep, 10^6 configurations -------------------------------------------------
    grid = grid_of(10**6)
    sweep(scores.raw, ages, labels, grid, criteria)  # warm-up
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        df = sweep(scores.raw, ages, labels, grid, criteria)
        times.append(time.perf_counter() - t0)
    sweep_s = float(np.median(times))
    tracemalloc.start()
    sweep(scores.raw, ages, labels, grid, criteria)
    peak_1e6 = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()

    # -- the baseline on a sample of the same grid --------------------------------------
    from memlab.embedding.embedder import Embedder

    emb = Embedder()
    store = MemoryStore.from_dataset(dataset, emb.encode_documents([m.text("en") for m in dataset.memories]))
    queries = emb.encode_queries([q.text("en") for q in dataset.questions])
    rng = np.random.default_rng(0)
    sample = rng.choice(grid.size, size=args.baseline_configs, replace=False)
    ids = dataset.memory_ids
    t0 = time.perf_counter()
    agree = 0
    for i in sample:
        spec = grid.spec(int(i))
        row = df.iloc[int(i)]
        injected_c1 = None
        for qi, vec in enumerate(queries):
            raw = np.full(len(ids), np.nan)
            for idx, score in store.raw_top_k(vec, spec.candidates):
                raw[idx] = score
            got = retrieve(raw, ages[qi], ids, spec)
            if dataset.questions[qi].id == "C1":
                injected_c1 = any(c.memory_id == "m02" and c.injected for c in got)
        agree += injected_c1 == bool(row["injected_C1"])
    baseline_s = time.perf_counter() - t0
    if agree != len(sample):
        raise SystemExit(f"baseline and sweep disagree on {len(sample) - agree} sampled configurations")

    sweep_per_s = grid.size * n_q / sweep_s
    baseline_per_s = len(sample) * n_q / baseline_s

    # -- 10^8 configurations in chunks, streaming selection -------------------------------
    huge = grid_of(int(args.huge))
    tracemalloc.start()
    t0 = time.perf_counter()
    chosen, n_feasible, total = select_streaming(
        sweep_chunks(scores.raw, ages, labels, huge, criteria), "max-margin"
    )
    huge_s = time.perf_counter() - t0
    peak_huge = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()

    print(
        f"fixture: {len(dataset.memories)} memories x {n_q} questions, "
        f"embedded with {scores.details['model']}"
    )
    print(
        f"sweep, {grid.size:,} configurations: {sweep_s:.3f} s (median of {args.repeat}), "
        f"{sweep_per_s:,.0f} configuration-question evaluations/s, traced peak {peak_1e6:,.0f} MB"
    )
    print(
        f"baseline (Qdrant top-k + Python re-rank per configuration and question), "
        f"{len(sample)} sampled configurations: {baseline_s:.2f} s, {baseline_per_s:,.0f} evaluations/s"
    )
    print(f"ratio: {sweep_per_s / baseline_per_s:,.0f}x")
    print(
        f"chunked sweep, {total:,} configurations: {huge_s:.1f} s "
        f"({total * n_q / huge_s:,.0f} evaluations/s), traced peak {peak_huge:,.0f} MB, "
        f"{n_feasible:,} feasible, chosen by max-margin: "
        + (
            "none"
            if chosen.empty
            else f"bonus={chosen.iloc[0].bonus:.4f} tau={chosen.iloc[0].tau_days:.2f} "
            f"thr={chosen.iloc[0].threshold:.3f}"
        )
    )
    print(
        json.dumps(
            {
                "sweep_per_s": round(sweep_per_s),
                "baseline_per_s": round(baseline_per_s),
                "ratio": round(sweep_per_s / baseline_per_s),
                "peak_mb": round(peak_huge, 1),
                "grid_1e6_s": round(sweep_s, 3),
                "peak_1e6_mb": round(peak_1e6, 1),
                "huge_configs": total,
                "huge_s": round(huge_s, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
