"""How long `memlab evaluate --source embedded` takes with a warm cache, and where the time goes.

Runs every measurement side by side in one process tree (this machine is noisy), `repeat` times
each, and prints medians:
- python start-up alone (`python -c pass`);
- python + importing what the command imports (`memlab.app.cli`, `memlab.scores.sources`, qdrant-client,
  pandas...), without running it;
- the whole command, end to end;
- the work itself (dataset, cached vectors, Qdrant, re-rank, criteria) timed in-process.

Usage: python bench/bench_evaluate.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def wall(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


IMPORTS = (
    "import memlab.app.cli, memlab.scores.sources, memlab.tuning.evaluate, "
    "memlab.embedding.embedder, memlab.qdrant.store"
)


def import_breakdown(env: dict[str, str]) -> list[tuple[str, float]]:
    """Cumulative import time of the heaviest top-level packages (python -X importtime)."""
    code = IMPORTS
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], env=env, capture_output=True, text=True, check=True
    )
    tops: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = (part.strip() for part in line.split(":", 1)[1].split("|"))
        if cumulative.isdigit() and not name.startswith(" ") and "." not in name:
            tops[name] = max(tops.get(name, 0.0), int(cumulative) / 1e6)
    return sorted(tops.items(), key=lambda kv: -kv[1])[:8]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    cache = tempfile.mkdtemp(prefix="memlab-bench-cache-")
    env = {**os.environ, "MEMLAB_CACHE_DIR": cache, "HF_HUB_OFFLINE": "1"}
    evaluate = [str(BIN / "memlab"), "evaluate", "--source", "embedded", "--format", "json"]
    cold = wall(evaluate, env)  # fills the cache: loads the model and embeds 26 texts

    imports = [
        sys.executable,
        "-c",
        IMPORTS,
    ]
    runs: dict[str, list[float]] = {"start-up": [], "start-up + imports": [], "evaluate (warm)": []}
    for _ in range(args.repeat):  # interleaved, so drift hits every measurement alike
        runs["start-up"].append(wall([sys.executable, "-c", "pass"], env))
        runs["start-up + imports"].append(wall(imports, env))
        runs["evaluate (warm)"].append(wall(evaluate, env))

    os.environ.update(env)
    from memlab.datasets.schema import load_dataset
    from memlab.scores.sources import load_scores
    from memlab.tuning.evaluate import evaluate as run_evaluate

    inproc = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        ds = load_dataset()
        ev = run_evaluate(ds, load_scores("embedded", ds))
        inproc.append(time.perf_counter() - t0)
    assert ev.details["models_loaded"] == 0

    med = {k: statistics.median(v) for k, v in runs.items()}
    print(f"memlab evaluate --source embedded, {args.repeat} runs each, medians")
    print(f"  cold (loads the model, embeds 26 texts): {cold:6.2f} s")
    print(f"  warm, end to end:                        {med['evaluate (warm)']:6.2f} s")
    print(f"    python start-up:                       {med['start-up']:6.2f} s")
    print(f"    imports:                               {med['start-up + imports'] - med['start-up']:6.2f} s")
    print(f"    the work (in-process):                 {statistics.median(inproc):6.3f} s")
    rest = med["evaluate (warm)"] - med["start-up + imports"] - statistics.median(inproc)
    print(f"    other (argparse, output, exit):        {rest:6.2f} s")
    print("  heaviest imports (cumulative, one run):")
    for name, secs in import_breakdown(env):
        print(f"    {name:<24}{secs:6.3f} s")


if __name__ == "__main__":
    main()
