"""Where the sweep's time goes: cProfile of one in-memory 10^6 sweep (``memory``) or one chunked
10^7 run into the streaming selection (``chunked``) on seed16's published scores, for the memlab
first on PYTHONPATH (an earlier revision exported with ``git archive`` too, from 1adc626 on: the
editable install is set aside).

Usage: PYTHONPATH=TREE python bench/profile_sweep.py memory|chunked [CASE] [SORT] (a case of
bench/bench_sweep.py: seed16, stale, gauss, lin; seed16 by default; SORT a pstats key, tottime
by default)

cProfile sees only the thread it runs in, so a tree that computes chunks in threads is profiled
with one (``workers=1``).
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time
from pathlib import Path


def main() -> None:
    editable = [f for f in sys.meta_path if getattr(f, "__module__", "").startswith("__editable__")]
    sys.meta_path[:] = [f for f in sys.meta_path if f not in editable]
    sys.path.insert(1, str(Path(__file__).resolve().parent))
    import bench_sweep as bench
    import numpy as np

    import memlab
    from memlab.scores.problem import ScoreOptions, build_problem

    mode = sys.argv[1] if len(sys.argv) > 1 else "memory"
    case = sys.argv[2] if len(sys.argv) > 2 else "seed16"
    name, decay, _ = bench.CASES[case]
    m = bench.api()
    dataset = m.load_dataset(name)
    criteria = m.dataset_criteria(dataset)
    source = "published" if name == "seed16" else "embedded"  # only the seed publishes its scores
    problem = build_problem(name, ScoreOptions(source=source))
    raw, ages = np.asarray(problem.raw), np.asarray(problem.ages())
    labels = m.Labels.from_dataset(dataset)
    grid = bench.grid_of(m, 10**6 if mode == "memory" else 10**7, decay)
    import inspect

    one = {"workers": 1} if "workers" in inspect.signature(m.sweep).parameters else {}
    # numba's cache and the imports, in the same thread: memory freed in another thread's arena
    # would not be reused, and the profile would count fresh pages the timed call never meets
    m.sweep(raw, ages, labels, bench.grid_of(m, 10**6, decay), criteria, **one)
    profile = cProfile.Profile()
    t0 = time.perf_counter()
    profile.enable()
    if mode == "memory":
        m.sweep(raw, ages, labels, grid, criteria, **one)
    else:
        m.select_streaming(m.sweep_chunks(raw, ages, labels, grid, criteria, **one), "max-margin")
    profile.disable()
    print(f"{memlab.__file__}: {case}, {mode}, {time.perf_counter() - t0:.2f} s")
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats(sys.argv[3] if len(sys.argv) > 3 else "tottime").print_stats(
        20
    )
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip()))


if __name__ == "__main__":
    main()
