"""How long `memlab explain` takes to replay a production-sized log: 1,000 queries on a store of
10,000 memories, under the current spec and one candidate, with every summary, end to end.

The store is a dataset folder with stored vectors (as `memlab import-qdrant` writes one: nothing of
it is embedded), random unit vectors of the default model's 384 dimensions, one memory in ten
superseding an earlier one; each logged query near one memory (cosine about 0.9). Three logs
of the same 1,000 queries, run side by side (this machine is noisy), `repeat` times each, medians printed:
- vectors in the log (nothing embedded);
- texts, embedded by the default CPU model into a fresh cache (the cost a first replay pays);
- the same texts again, from the warm cache.

Usage: python bench/bench_explain.py [--memories 10000] [--queries 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

BIN = Path(sys.executable).parent
REF = datetime(2026, 9, 10, tzinfo=UTC)
TOPICS = (
    "coffee",
    "walks",
    "the keyboard",
    "a trip",
    "dinner",
    "work",
    "a film",
    "the garden",
    "music",
    "sleep",
)


def write_store(root: Path, n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    root.mkdir(parents=True)
    meta = {
        "name": f"bench-{n}",
        "reference_date": REF.isoformat(),
        "language": "en",
        "date_prefix": False,
        "vectors": {
            "file": "vectors.npy",
            "dim": dim,
            "model": "multilingual-e5-small",
            "order": "memories.jsonl",
        },
    }
    (root / "dataset.json").write_text(json.dumps(meta))
    with (root / "memories.jsonl").open("w") as fh:
        for i in range(n):
            when = REF - timedelta(seconds=int(rng.integers(0, 365 * 86400)))
            row = {
                "id": f"m{i}",
                "date": when.isoformat(),
                "text": f"note {i} about {TOPICS[i % 10]}",
                "provenance": "user",
            }
            if i % 10 == 9:
                row["supersedes"] = f"m{i - 1}"
            fh.write(json.dumps(row) + "\n")
    (root / "questions.jsonl").write_text(
        json.dumps({"id": "q", "kind": "nohit", "text": "a question"}) + "\n"
    )
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    np.save(root / "vectors.npy", vecs)
    return vecs


def write_logs(root: Path, n: int, memories: np.ndarray, rng: np.random.Generator) -> tuple[Path, Path]:
    """Query j's vector lies near memory 7j (cosine about 0.9, above the model's threshold, so the
    queries inject as a real log's do), and production is logged as having injected that memory
    when it was already written, so the comparison with production has work to do."""
    n_mem, dim = memories.shape
    vec_log, text_log = root / "vectors.jsonl", root / "texts.jsonl"
    with vec_log.open("w") as fv, text_log.open("w") as ft:
        for j in range(n):
            when = (REF - timedelta(seconds=int(rng.integers(0, 30 * 86400)))).isoformat()
            near = (7 * j) % n_mem
            v = memories[near] + 0.5 * rng.normal(size=dim) / np.sqrt(dim)
            fv.write(
                json.dumps(
                    {"id": f"q{j}", "vector": v.round(6).tolist(), "time": when, "injected": [f"m{near}"]}
                )
                + "\n"
            )
            text = f"what did I say about {TOPICS[j % 10]} on day {j}?"
            ft.write(json.dumps({"id": f"q{j}", "text": text, "time": when}) + "\n")
    return vec_log, text_log


def wall(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="memlab-bench-explain-") as tmp:
        root = Path(tmp)
        memories = write_store(root / "store", args.memories, 384, rng)
        vec_log, text_log = write_logs(root, args.queries, memories, rng)
        env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
        base = [
            str(BIN / "memlab"),
            "explain",
            "--dataset",
            str(root / "store"),
            "--against",
            "threshold=0.9",
        ]
        times: dict[str, list[float]] = {"vectors": [], "texts, cold cache": [], "texts, warm cache": []}
        for r in range(args.repeat):
            cache = root / f"cache-{r}"
            out = ["--format", "json", "-o", str(root / "out.json")]
            vec_out = ["--format", "json", "-o", str(root / "vectors.json")]
            times["vectors"].append(wall([*base, "--log", str(vec_log), *vec_out], env))
            cached = [*base, "--log", str(text_log), "--cache-dir", str(cache), *out]
            times["texts, cold cache"].append(wall(cached, env))
            times["texts, warm cache"].append(wall(cached, env))
            shutil.rmtree(cache, ignore_errors=True)
        doc = json.loads((root / "vectors.json").read_text())
        print(
            f"memlab explain: {args.queries} queries on {args.memories} memories, 2 specs, every summary "
            f"(median of {args.repeat}, wall, end to end)"
        )
        for name, ts in times.items():
            print(
                f"  {name:<20}{statistics.median(ts):>8.2f} s   (runs: {', '.join(f'{t:.2f}' for t in ts)})"
            )
        cur = doc["summary"]["specs"]["current"]
        print(
            f"  (vectors log, current spec: {cur['injecting']} of {cur['queries']} queries inject, "
            f"{doc['summary']['changes']['threshold=0.9']['changed']} change at threshold 0.9, "
            f"{doc['summary']['production']['agree']} agree with the logged injections)"
        )


if __name__ == "__main__":
    main()
