"""The vectorised sweep, side by side with earlier revisions of memlab and against the seed's way
(one Qdrant query and a Python re-rank per configuration and question), all in one run.

Every revision (this tree, and each ``--against REV``; by default a315239, the code before the
sweep's memory was made flat, and 6d6a879, main before issue 24's sweep; REVISIONS) sweeps the
same score tables in its own subprocess (a revision is exported from git into a temporary folder
outside the repository, and the script adapts to its module paths). Per case:

- a 10^6-configuration grid (bonus 420 x tau 119 x threshold 21) in memory: wall time (median of
  ``--repeat``), configuration-question evaluations per second, the ratio to the Qdrant loop,
  and the floor: a table of the result's columns written into fresh memory, nothing computed;
- 10^7 and 10^8 configurations (finer tau and threshold) in chunks into a streaming selection,
  each size in its own process: wall time, the rate, its cost per configuration against the
  in-memory run's, and the peak resident set size (flat: bounded by the chunk's bytes, not the
  grid), with the traced Python peak from a second, untimed run up to 10^7 (tracing slows the
  run it traces);

for the cases: the fixture (seed16) with the seed's criteria a, b, c; seed16-time, whose generic
criteria include the stale ones (no_stale, current_first); and the gauss and lin decay families on
the fixture. A revision without a case's criteria or family says so. A run whose time, estimated
from the size before it, exceeds ``--max-seconds`` is skipped and its estimate printed. The Qdrant
loop runs once, on a random sample of the 10^6 grid, in this process.

The last line is one JSON object with every figure.

``--no-json`` leaves that line out (the report as docs/sweep.md records it).

Usage: python bench/bench_sweep.py [--against REV]... [--no-main] [--huge 1e7,1e8] [--repeat 5] [--no-json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# case: (dataset, decay family, what it shows)
CASES = {
    "seed16": ("seed16", "exp", "the fixture, the seed's criteria a, b, c"),
    "stale": ("seed16-time", "exp", "seed16-time, generic criteria with no_stale and current_first"),
    "gauss": ("seed16", "gauss", "the fixture, gauss decay"),
    "lin": ("seed16", "lin", "the fixture, lin decay"),
}


def api() -> SimpleNamespace:
    """The sweep's functions in whichever memlab is first on sys.path, by its module layout."""
    try:
        from memlab.core import criteria, grid, labels, selection, sweep
        from memlab.datasets import schema
    except ImportError:  # a315239: flat modules, no decay family
        from memlab import criteria, fixtures, selection, sweep

        return SimpleNamespace(
            dataset_criteria=criteria.dataset_criteria,
            load_dataset=fixtures.load_dataset,
            select_streaming=selection.select_streaming,
            Grid=sweep.Grid,
            Labels=sweep.Labels,
            sweep=sweep.sweep,
            sweep_chunks=sweep.sweep_chunks,
            families=False,
        )
    return SimpleNamespace(
        dataset_criteria=criteria.dataset_criteria,
        load_dataset=schema.load_dataset,
        select_streaming=selection.select_streaming,
        Grid=grid.Grid,
        Labels=labels.Labels,
        sweep=sweep.sweep,
        sweep_chunks=sweep.sweep_chunks,
        families=True,
    )


def grid_of(m: SimpleNamespace, size: int, decay: str):
    """The issue's axes (tau 1:60:0.5, threshold 0.40:0.50:0.005), the bonus from 0 to 0.1 as
    finely as ``size`` configurations allow; beyond 10^6, a finer tau (0.1 days) and threshold."""
    if size <= 10**6:
        taus, thresholds = np.arange(1.0, 60.0 + 1e-9, 0.5), np.round(np.arange(0.40, 0.50 + 1e-9, 0.005), 3)
    else:
        taus, thresholds = np.arange(1.0, 60.0 + 1e-9, 0.1), np.round(np.arange(0.40, 0.50 + 1e-9, 0.001), 3)
    n_bonus = max(1, round(size / (len(taus) * len(thresholds))))
    axes = {
        "bonus": tuple(np.linspace(0.0, 0.1, n_bonus)),
        "tau_days": tuple(taus),
        "threshold": tuple(thresholds),
    }
    return m.Grid(**axes, decay=(decay,)) if m.families else m.Grid(**axes)


def worker(job: dict) -> dict:
    """One measurement in this process, on the memlab first on sys.path."""
    m = api()
    if job["mode"] == "floor":
        return table_floor(job["dtypes"], job["rows"])
    dataset_name, decay, _ = CASES[job["case"]]
    if decay != "exp" and not m.families:
        return {"skip": "no decay families at this revision"}
    dataset = m.load_dataset(dataset_name)
    criteria = m.dataset_criteria(dataset)
    kinds = {c.kind for c in criteria}
    if job["case"] == "stale" and "no_stale_injected" not in kinds:
        return {"skip": "no stale criteria at this revision"}
    raw, ages = np.load(job["raw"]), np.load(job["ages"])
    labels = m.Labels.from_dataset(dataset)
    n_q = len(dataset.questions)
    grid = grid_of(m, int(job["size"]), decay)
    if job["mode"] == "memory":
        t0 = time.perf_counter()
        m.sweep(raw, ages, labels, grid, criteria)  # first call: numba's cache load or compile
        first = time.perf_counter() - t0
        t0, c0 = time.perf_counter(), time.process_time()
        table = m.sweep(raw, ages, labels, grid, criteria)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        dtypes = ["int8" if str(t) == "category" else str(t) for t in table.dtypes]
        del table  # freeing the table is its reader's, after the clock (every revision alike)
        return {
            "configs": grid.size,
            "questions": n_q,
            "seconds": seconds,
            "cpu_s": cpu,
            "first_s": first,
            "dtypes": dtypes,
        }
    t0 = time.perf_counter()  # as above, outside the timing: the same path on 10^6 configurations
    m.select_streaming(m.sweep_chunks(raw, ages, labels, grid_of(m, 10**6, decay), criteria), "max-margin")
    first = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    _, feasible, total = m.select_streaming(m.sweep_chunks(raw, ages, labels, grid, criteria), "max-margin")
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    out = {
        "configs": int(total),
        "questions": n_q,
        "seconds": seconds,
        "cpu_s": cpu,
        "first_s": first,
        "feasible": int(feasible),
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if job.get("traced"):
        # Python's traced peak in a run of its own: tracing every allocation slows the sweep (and
        # its threads share tracemalloc's lock), so the timed run above is never traced
        tracemalloc.start()
        m.select_streaming(m.sweep_chunks(raw, ages, labels, grid, criteria), "max-margin")
        out["traced_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return out


def table_floor(dtypes: list[str], rows: int) -> dict:
    """What writing the in-memory sweep's result costs by itself: its columns (``dtypes``, ``rows``
    each) allocated and filled, nothing computed; a first table written and freed, then the timed
    one, as the timed sweep follows its first call (median of three in this process)."""
    times = []
    for _ in range(4):
        t0 = time.perf_counter()
        columns = [np.ones(rows, dtype=dtype) for dtype in dtypes]  # all alive, as a table's are
        times.append(time.perf_counter() - t0)
        del columns
    size = sum(np.dtype(t).itemsize for t in dtypes) * rows
    return {"floor_s": float(np.median(times[1:])), "table_mb": size / 2**20, "columns": len(dtypes)}


# -- the parent: revisions side by side ------------------------------------------------------------

REVISIONS = {
    "a315239": "before the sweep's memory was made flat (issue 17)",
    "6d6a879": "main before issue 24 (issues 23, 25, 26 and 28 merged)",
}


def export(rev: str, dest: Path) -> Path:
    """The revision's files in ``dest`` (``git archive``: a checkout outside the repository)."""
    archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", rev], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"git archive {rev} failed")
    return dest


def run(tree: Path, job: dict) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(job)], env=env, capture_output=True, text=True
    )
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        return {"error": (out.stderr.strip().splitlines() or ["no output"])[-1][:200]}
    return json.loads(lines[-1])


def score_tables(tmp: Path) -> dict[str, tuple[str, str]]:
    """Each case's dataset embedded once with this tree's default model: every revision sweeps
    these same tables."""
    from memlab.datasets.schema import load_dataset
    from memlab.scores.sources import load_scores

    out = {}
    for name in sorted({d for d, _, _ in CASES.values()}):
        dataset = load_dataset(name)
        raw, ages = tmp / f"{name}-raw.npy", tmp / f"{name}-ages.npy"
        np.save(raw, load_scores("embedded", dataset).raw)
        np.save(ages, dataset.ages())
        out[name] = (str(raw), str(ages))
    return out


def qdrant_loop(n_configs: int) -> float:
    """The seed's way on a random sample of the 10^6 grid: one Qdrant top-k and a Python re-rank
    per configuration and question; evaluations per second, checked against this tree's sweep."""
    from memlab.core.spec import retrieve
    from memlab.embedding.embedder import Embedder
    from memlab.qdrant.store import MemoryStore

    m = api()
    dataset = m.load_dataset("seed16")
    ages = dataset.ages()
    grid = grid_of(m, 10**6, "exp")
    emb = Embedder()
    store = MemoryStore.from_dataset(dataset, emb.encode_documents([x.text("en") for x in dataset.memories]))
    queries = emb.encode_queries([q.text("en") for q in dataset.questions])
    df = m.sweep(store.score_table(queries), ages, m.Labels.from_dataset(dataset), grid)
    sample = np.random.default_rng(0).choice(grid.size, size=n_configs, replace=False)
    ids, agree = dataset.memory_ids, 0
    t0 = time.perf_counter()
    for i in sample:
        spec = grid.spec(int(i))
        injected_c1 = None
        for qi, vec in enumerate(queries):
            raw = np.full(len(ids), np.nan)
            for idx, score in store.raw_top_k(vec, spec.candidates):
                raw[idx] = score
            got = retrieve(raw, ages[qi], ids, spec)
            if dataset.questions[qi].id == "C1":
                injected_c1 = any(c.memory_id == "m02" and c.injected for c in got)
        agree += injected_c1 == bool(df["injected_C1"].iloc[int(i)])
    seconds = time.perf_counter() - t0
    if agree != len(sample):
        raise SystemExit(
            f"the Qdrant loop and the sweep disagree on {len(sample) - agree} sampled configurations"
        )
    return len(sample) * len(queries) / seconds


def rate(r: dict) -> float:
    return r["configs"] * r["questions"] / r["seconds"]


def cell(r: dict | None, what: str) -> str:
    if r is None:
        return "-"
    if "skip" in r or "error" in r:
        return r.get("skip") or "error: " + r["error"]
    if what == "wall":
        return f"{r['seconds']:.3f} s" if r["seconds"] < 10 else f"{r['seconds']:.1f} s"
    if what == "rate":
        return f"{rate(r):.3g}"
    if what == "cpu":
        return f"{r['configs'] * r['questions'] / r['cpu_s']:.3g}"
    if what == "memory":
        traced = f", {r['traced_mb']:.0f} MB traced" if "traced_mb" in r else ""
        return f"{r['rss_mb']:.0f} MB RSS{traced}"
    if what == "floor":
        if "floor_s" not in r:
            return "-"
        return f"{r['floor_s']:.3f} s ({r['floor_s'] / r['seconds']:.0%}), {r['table_mb']:.0f} MB"
    raise ValueError(what)


def measured(r: dict | None) -> bool:
    return r is not None and "seconds" in r


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", action="append", default=None, help="revisions to compare (repeatable)")
    parser.add_argument("--huge", default="1e7,1e8", help="configurations of the chunked runs")
    parser.add_argument("--cases", default=",".join(CASES), help=f"cases to run ({', '.join(CASES)})")
    parser.add_argument("--repeat", type=int, default=5, help="in-memory runs per measurement (median)")
    parser.add_argument("--baseline-configs", type=int, default=200)
    parser.add_argument("--max-seconds", type=float, default=240, help="skip a run estimated to take longer")
    parser.add_argument("--no-json", action="store_true", help="leave out the last line's JSON object")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        # only the tree on PYTHONPATH: an editable install's finder would hand out its own memlab's
        # modules for any the tree lacks (a315239 has no memlab.core)
        sys.meta_path[:] = [
            f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")
        ]
        print(json.dumps(worker(json.loads(args.worker))))
        return
    revisions = args.against if args.against is not None else list(REVISIONS)
    sizes = [int(float(x)) for x in args.huge.split(",") if x]
    cases = args.cases.split(",")
    results: dict = {}
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="memlab-bench-") as tmp:
        tmp = Path(tmp)
        tables = score_tables(tmp)
        trees = {rev: export(rev, (tmp / rev).mkdir() or tmp / rev) for rev in revisions}
        trees["now"] = ROOT
        for case in cases:
            raw, ages = tables[CASES[case][0]]
            base = {"case": case, "raw": raw, "ages": ages}
            got: dict = {side: {} for side in trees}
            # the sides take turns, run by run, so that they share the machine's load alike
            memory: dict = {side: [] for side in trees}
            for _ in range(args.repeat):
                for side, tree in trees.items():
                    if memory[side] and not measured(memory[side][-1]):
                        continue
                    memory[side].append(run(tree, {**base, "mode": "memory", "size": 10**6}))
            for side, runs in memory.items():
                ok = [r for r in runs if measured(r)]
                got[side]["memory"] = (
                    {**ok[0], **{k: float(np.median([r[k] for r in ok])) for k in ("seconds", "cpu_s")}}
                    if ok
                    else runs[-1]
                )
                if ok:  # in a process of its own: the floor depends on the columns alone
                    floor = run(ROOT, {"mode": "floor", "dtypes": ok[0]["dtypes"], "rows": ok[0]["configs"]})
                    got[side]["memory"].update(floor)
                    got[side]["memory"].pop("dtypes")
            for size in sizes:
                key = f"{size:.0e}"
                for side, tree in trees.items():
                    last = got[side].get(f"{sizes[sizes.index(size) - 1]:.0e}") if sizes.index(size) else None
                    last = last if measured(last) else got[side]["memory"]
                    if not measured(last):
                        got[side][key] = last if "skip" in (last or {}) else None
                        continue
                    # chunks cost no more per configuration than memory, but allow 1.5x
                    estimate = last["seconds"] / last["configs"] * size * (1.5 if "rss_mb" not in last else 1)
                    if estimate > args.max_seconds:
                        got[side][key] = {"skip": f"skipped (about {estimate:.0f} s)"}
                        continue
                    traced = size <= 10**7  # a traced run of its own: the largest size shows RSS only
                    got[side][key] = run(tree, {**base, "mode": "chunked", "size": size, "traced": traced})
            results[case] = got
    per_s = qdrant_loop(args.baseline_configs)
    load = f"load average {load0[0]:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores"
    report(results, revisions, sizes, per_s, args.baseline_configs, load, json_line=not args.no_json)


def report(
    results: dict,
    revisions: list[str],
    sizes: list[int],
    per_s: float,
    n_sample: int,
    load: str,
    json_line: bool = True,
) -> None:
    sides = [*revisions, "now"]
    print(f"{load}; wall times, medians of the runs (CPU seconds in the JSON line)")
    print(
        f"the Qdrant loop (top-k + Python re-rank per configuration and question), {n_sample} sampled "
        f"configurations: {per_s:,.0f} evaluations/s"
    )
    for rev in revisions:
        print(f"{rev}: {REVISIONS.get(rev, rev)}")
    widths = [40] + [22] * len(sides) + [14] * len(revisions)
    head = ["figure", *sides, *(f"now vs {r}" for r in revisions)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    summary: dict = {"qdrant_loop_per_s": round(per_s), "load": load}
    for case, by_side in results.items():
        mem = {s: by_side[s]["memory"] for s in sides}
        n_q = next((r["questions"] for r in mem.values() if measured(r)), "?")
        print(f"\n{case}: {CASES[case][2]} ({n_q} questions)")
        print(line(head))

        def faster(key: str, r: str, by_side: dict = by_side) -> str:
            a, b = by_side[r].get(key), by_side["now"].get(key)
            if not (measured(a) and measured(b)):
                return "-"
            return f"{(a['seconds'] / a['configs']) / (b['seconds'] / b['configs']):.2f}x"

        print(
            line(
                [
                    "10^6 in memory, wall",
                    *(cell(mem[s], "wall") for s in sides),
                    *(faster("memory", r) for r in revisions),
                ]
            )
        )
        print(line(["  evaluations/s", *(cell(mem[s], "rate") for s in sides), *([""] * len(revisions))]))
        print(
            line(
                [
                    "  evaluations per CPU second",
                    *(cell(mem[s], "cpu") for s in sides),
                    *([""] * len(revisions)),
                ]
            )
        )
        ratio = [f"{rate(mem[s]) / per_s:,.0f}x" if measured(mem[s]) else "-" for s in sides]
        print(line(["  ratio to the Qdrant loop", *ratio, *([""] * len(revisions))]))
        print(
            line(
                [
                    "  the table alone, written fresh",
                    *(cell(mem[s], "floor") if measured(mem[s]) else "-" for s in sides),
                    *([""] * len(revisions)),
                ]
            )
        )
        for size in sizes:
            key = f"{size:.0e}"
            runs = {s: by_side[s].get(key) for s in sides}
            exp = f"10^{round(np.log10(size))}"
            print(
                line(
                    [
                        f"{exp} in chunks, wall",
                        *(cell(runs[s], "wall") for s in sides),
                        *(faster(key, r) for r in revisions),
                    ]
                )
            )
            blank = [""] * len(revisions)
            print(line(["  evaluations/s", *(cell(runs[s], "rate") for s in sides), *blank]))
            print(line(["  evaluations per CPU second", *(cell(runs[s], "cpu") for s in sides), *blank]))
            for label, k in (("wall", "seconds"), ("CPU", "cpu_s")):
                cost = [
                    f"{(runs[s][k] / runs[s]['configs']) / (mem[s][k] / mem[s]['configs']):.2f}x"
                    if measured(runs[s]) and measured(mem[s])
                    else "-"
                    for s in sides
                ]
                print(line([f"  cost per configuration / in memory ({label})", *cost, *blank]))
            print(
                line(
                    [
                        "  peak memory",
                        *(cell(runs[s], "memory") if measured(runs[s]) else "-" for s in sides),
                        *([""] * len(revisions)),
                    ]
                )
            )
        summary[case] = by_side
    now = results.get("seed16", {}).get("now", {})
    if measured(now.get("memory")):
        r = rate(now["memory"])
        print(
            f"\ntargets (seed16, now): {r:.3g} evaluations/s at 10^6 (target 5e7), "
            f"{r / per_s:,.0f}x the Qdrant loop (target 3e4)"
        )
    if json_line:
        print(json.dumps(summary))


if __name__ == "__main__":
    main()
