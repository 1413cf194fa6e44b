"""How long `memlab explain` takes to replay a production-sized log: 1,000 queries on a store of
10,000 memories, under the current spec and one candidate, with every summary, end to end.

The store is a dataset folder with stored vectors (as `memlab import-qdrant` writes one: nothing of
it is embedded), random unit vectors of the default model's 384 dimensions, one memory in ten
superseding an earlier one; each logged query near one memory (cosine about 0.9). Three logs
of the same 1,000 queries, run side by side (this machine is noisy), `repeat` times each, medians printed:
- vectors in the log (nothing embedded);
- texts, embedded by the default CPU model into a fresh cache (the cost a first replay pays);
- the same texts again, from the warm cache.

At production size (issue 38: 10^5 queries on 10^5 memories in 60 s) the per-query JSON is
gigabytes: ``--format table`` times the command with every summary printed, ``--logs vectors``
the vector log alone; each run's CPU seconds (the process and its threads) are printed beside
its wall time, since a shared machine stretches the wall time, with its peak RSS (memory stays
flat: one block of queries at a time) and what the int8 screen did (the command's standard error:
blocks screened, fallbacks, pairs rescored, and why it stopped if it did). ``--trees A,B`` runs
the same commands with each tree first on PYTHONPATH, alternating (this tree against main's, say).
The BLAS kernel numpy runs is printed: OPENBLAS_CORETYPE (set on some machines) changes it, and
with it the float32 product's speed and bits.

Usage: python bench/bench_explain.py [--memories 10000] [--queries 1000] [--repeat 3]
       [--format json|table] [--logs vectors,texts] [--trees DIR,DIR]
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


def wall(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS in MB, the screen's line or "") of one command, run in
    ``cwd``: ``python -m`` puts its working folder first on the path, so a source tree there would
    be imported whatever PYTHONPATH says."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        child = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own usage (its threads too)
        seconds = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    if child.returncode:
        sys.exit(f"bench_explain: {' '.join(cmd)} exited {child.returncode}:\n{text[-2000:]}")
    screen = next((line for line in text.splitlines() if "int8 screen" in line), "")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, screen


def blas_kernel(env: dict[str, str]) -> str:
    """The BLAS numpy runs under ``env`` (threadpoolctl: library, version, kernel, threads)."""
    code = (
        "import numpy, threadpoolctl; numpy.ones((64, 64)) @ numpy.ones((64, 64)); "
        "i = threadpoolctl.threadpool_info()[0]; "
        "print(i['internal_api'], i['version'], i.get('architecture'), i['num_threads'], 'threads')"
    )
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--format", choices=["json", "table"], default="json")
    parser.add_argument("--logs", default="vectors,texts", help="vectors, texts (cold and warm cache)")
    parser.add_argument("--trees", default="", help="source trees to run side by side (default: this one)")
    args = parser.parse_args()
    logs = set(args.logs.split(","))
    trees = [t for t in args.trees.split(",") if t] or [""]
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="memlab-bench-explain-") as tmp:
        root = Path(tmp)
        memories = write_store(root / "store", args.memories, 384, rng)
        vec_log, text_log = write_logs(root, args.queries, memories, rng)
        base = [sys.executable, "-m", "memlab", "explain", "--dataset", str(root / "store")]
        base += ["--against", "threshold=0.9", "--format", args.format]
        times: dict[str, list[tuple[float, float, float, str]]] = {}
        load = [os.getloadavg()[0]]
        outputs: dict[str, bytes] = {}
        for r in range(args.repeat):
            for tree in trees:  # the trees take turns, so they share the machine's load
                env = {**os.environ, "PYTHONPATH": tree or os.environ.get("PYTHONPATH", "")}
                tag = f" [{tree}]" if tree else ""
                cache = root / f"cache-{r}"
                out = root / f"vectors{len(outputs)}.out"
                if "vectors" in logs:
                    times.setdefault(f"vectors{tag}", []).append(
                        wall([*base, "--log", str(vec_log), "-o", str(out)], env, root)
                    )
                    outputs[tree] = out.read_bytes()
                    if args.format == "json":
                        doc = json.loads(outputs[tree])
                if "texts" in logs:
                    cached = [
                        *base,
                        "--log",
                        str(text_log),
                        "--cache-dir",
                        str(cache),
                        "-o",
                        str(root / "t.out"),
                    ]
                    times.setdefault(f"texts, cold cache{tag}", []).append(wall(cached, env, root))
                    times.setdefault(f"texts, warm cache{tag}", []).append(wall(cached, env, root))
                    shutil.rmtree(cache, ignore_errors=True)
        load.append(os.getloadavg()[0])
        print(
            f"memlab explain: {args.queries} queries on {args.memories} memories, 2 specs, every summary, "
            f"--format {args.format} (median of {args.repeat}, end to end; load {load[0]:.1f} at the start, "
            f"{load[1]:.1f} at the end; BLAS {blas_kernel(dict(os.environ))})"
        )
        for name, ts in times.items():
            walls, cpus = [t[0] for t in ts], [t[1] for t in ts]
            runs = ", ".join(f"{w:.1f}/{c:.1f}/{m:.0f} MB" for w, c, m, _ in ts)
            print(
                f"  {name:<20}{statistics.median(walls):>8.2f} s wall {statistics.median(cpus):>8.2f} s CPU"
                f"   (runs, wall/CPU/peak RSS: {runs})"
            )
            for screen in dict.fromkeys(t[3] for t in ts if t[3]):
                print(f"    {screen.removeprefix('explain: ')}")
        if len(outputs) > 1:
            same = len(set(outputs.values())) == 1
            print(f"  vectors log: the trees' outputs are {'identical' if same else 'DIFFERENT'}")
        if "vectors" in logs and args.format == "json":
            cur = doc["summary"]["specs"]["current"]
            print(
                f"  (vectors log, current spec: {cur['injecting']} of {cur['queries']} queries inject, "
                f"{doc['summary']['changes']['threshold=0.9']['changed']} change at threshold 0.9, "
                f"{doc['summary']['production']['agree']} agree with the logged injections)"
            )


if __name__ == "__main__":
    main()
