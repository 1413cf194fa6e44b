"""Peak memory of a sweep against the size of its grid, at 80 questions.

Each size runs in its own subprocess (so one peak cannot hide another): 80 questions (60 hit
questions with a current and a stale memory, 20 no-hit) over 400 memories with seeded random
scores; the grid is one (bonus, tau) pair and N thresholds, ``0:1:1/(N-1)`` given as a range
(the case that once built a tuple of N floats before sweeping), swept chunk by chunk into a
streaming selection, as ``memlab sweep`` does. Printed per size: configurations, seconds, the
peak resident set size (``resource.getrusage``) and, up to ``--traced-up-to``, the traced Python
peak (``tracemalloc``) from a second, untimed run.
The peak should stay flat from 10^6 to 10^8 configurations.

The last line is one JSON object with every run.

``--format markdown`` prints the table alone (no JSON line), as docs/sweep.md records it.

Usage: python bench/bench_sweep_memory.py [--sizes 1e6,1e7,1e8] [--limit-gb 8] [--format text|markdown]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc

import numpy as np

N_QUESTIONS, N_MEMORIES = 80, 400


def inputs():
    from memlab.core.labels import Labels

    rng = np.random.default_rng(0)
    raw = rng.uniform(0.0, 0.6, size=(N_QUESTIONS, N_MEMORIES))
    ages = rng.uniform(0.0, 60.0, size=N_MEMORIES)
    kinds = tuple("hit" if q < 60 else "nohit" for q in range(N_QUESTIONS))
    current = np.array([2 * q if q < 60 else -1 for q in range(N_QUESTIONS)])
    stale = tuple((2 * q + 1,) if q < 60 else () for q in range(N_QUESTIONS))
    labels = Labels(tuple(f"q{q}" for q in range(N_QUESTIONS)), kinds, current, stale)
    return raw, ages, labels


def one(size: int, traced: bool) -> dict:
    """Sweep ``size`` configurations in this process: seconds and peak RSS, and with ``traced``
    the traced Python peak from a second run (tracing every allocation slows the run it traces,
    and the sweep's threads share its lock, so the timed run is never traced)."""
    from memlab.core.grid import Grid, parse_axis
    from memlab.core.selection import select_streaming
    from memlab.core.sweep import sweep_chunks

    raw, ages, labels = inputs()
    step = 1.0 / (size - 1)
    grid = Grid(bonus=(0.05,), tau_days=(14.0,), threshold=parse_axis(f"0:1:{step!r}", "threshold"))
    t0 = time.perf_counter()
    _, n_feasible, total = select_streaming(sweep_chunks(raw, ages, labels, grid), "smallest-bonus")
    seconds = time.perf_counter() - t0
    out = {
        "configurations": int(total),
        "questions": N_QUESTIONS,
        "seconds": round(seconds, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "feasible": int(n_feasible),
    }
    if traced:
        tracemalloc.start()
        select_streaming(sweep_chunks(raw, ages, labels, grid), "smallest-bonus")
        out["traced_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
        tracemalloc.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e6,1e7,1e8", help="configurations per run (comma list)")
    parser.add_argument("--limit-gb", type=float, default=8.0, help="address-space limit of each run")
    parser.add_argument("--traced-up-to", type=float, default=1e7, help="trace Python's peak up to this size")
    parser.add_argument("--format", choices=["text", "markdown"], default="text")
    parser.add_argument("--one", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        limit = int(args.limit_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        try:
            print(json.dumps(one(int(args.one), args.one <= args.traced_up_to)))
        except MemoryError:
            print(json.dumps({"configurations": int(args.one), "error": "MemoryError"}))
        return
    runs = []
    markdown = args.format == "markdown"
    if markdown:
        print(f"| configurations ({N_QUESTIONS} questions) | seconds | peak RSS | traced peak |")
        print("|---|---|---|---|")
    for size in (int(float(s)) for s in args.sizes.split(",")):
        cmd = [sys.executable, __file__, "--one", str(size), "--limit-gb", str(args.limit_gb)]
        cmd += ["--traced-up-to", str(args.traced_up_to)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        lines = out.stdout.strip().splitlines()
        run = json.loads(lines[-1]) if lines else {"configurations": size, "error": out.stderr.strip()[-300:]}
        runs.append(run)
        if markdown:
            exp = f"10^{len(str(size)) - 1}" if str(size).rstrip("0") == "1" else f"{size:,}"
            if "error" in run:
                print(f"| {exp} | {run['error']} | | |")
            else:
                traced = f"{run['traced_peak_mb']:.0f} MB" if "traced_peak_mb" in run else "-"
                print(f"| {exp} | {run['seconds']:.1f} | {run['peak_rss_mb']:.0f} MB | {traced} |")
        elif "error" in run:
            print(f"{size:>12,} configurations: {run['error']}")
        else:
            traced = f", traced peak {run['traced_peak_mb']:>6.1f} MB" if "traced_peak_mb" in run else ""
            print(
                f"{run['configurations']:>12,} configurations x {N_QUESTIONS} questions: "
                f"{run['seconds']:>7.1f} s, peak RSS {run['peak_rss_mb']:>7.1f} MB{traced}"
            )
    if not markdown:
        print(json.dumps({"bench": "sweep_memory", "limit_gb": args.limit_gb, "runs": runs}))


if __name__ == "__main__":
    main()
