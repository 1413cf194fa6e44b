"""Commands on the public benchmarks' figures: metrics (the standard retrieval metrics of a spec)
and tune-benchmark (held-out tuning, by conversation, against the baselines)."""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from memlab.app.cli.options import (
    Command,
    add_collection_options,
    add_family_options,
    add_output_options,
    add_parameters,
    add_source_options,
    add_spec_options,
    emit,
    family_values,
    problem_from,
    spec_line,
)
from memlab.core.numbers import counted
from memlab.output.io import json_ready

LIST_TITLES = {
    "injected": "injected list: the memories injected into the prompt (at most {inject}, at or above the "
    "threshold)",
    "candidates": "candidate list: the top {candidates} by raw cosine, in re-sort order (a cutoff past "
    "{candidates} reads all of them)",
}


def cell(x, width: int) -> str:
    return f"{'-':>{width}}" if x != x else f"{x:>{width}.3f}"


def list_lengths(spec) -> dict[str, int]:
    """The most memories each list holds: a cutoff past it reads the whole list."""
    return {"injected": min(spec.inject, spec.candidates), "candidates": spec.candidates}


def metrics_text(problem, summary, ks, elapsed: float) -> str:
    """The summary as tables, one per list, each at the cutoffs its list can reach
    (``list_cutoffs``: the list's length in place of the cutoffs past it, said under its title);
    ``summary`` holds the measures at those lengths too."""
    from memlab.tuning.ir_metrics import list_cutoffs, measure_names

    dataset = problem.dataset
    bench = dataset.benchmark or {}
    lines = [
        f"dataset {dataset.name} ({counted(len(dataset.questions), 'question')}"
        + (f"; {bench.get('name')} at {bench.get('granularity')} granularity" if bench else "")
        + f"), scores: {problem.source} {problem.scores.details.get('model', '')}".rstrip(),
        f"spec: {spec_line(problem.spec)}",
        "means over the questions with relevant memories (relevant or current); recall_any, recall_all, "
        "ndcg, mrr by trec_eval (ir_measures), ndcg_any as LongMemEval computes it (docs/benchmarks.md); "
        "no-hit questions: the share with any memory injected",
    ]
    extra = [c for c in summary.columns if c.startswith("session_")]
    label = max(24, *(len(f"{b} {g}") for b, g in zip(summary["by"], summary["group"], strict=True)))
    spec = problem.spec
    for name in summary["list"].drop_duplicates():
        rows = summary[summary["list"] == name]
        length = list_lengths(spec)[name]
        shown, past = list_cutoffs(ks, length)
        names = list(measure_names(shown))
        names += [c for c in extra if int(c.rsplit("@", 1)[1]) in shown]
        lines += ["", LIST_TITLES[name].format(inject=spec.inject, candidates=spec.candidates)]
        if past:
            cutoffs = f"cutoff{'s' if len(past) > 1 else ''} {', '.join(map(str, past))}"
            lines.append(
                f"  {cutoffs} past the {counted(length, 'memory')} this list holds at most: shown at "
                f"@{length}, the whole list (not {' or '.join(map(str, past))} retrieved memories)"
            )
        head = f"{'group':<{label}} {'questions':>9} " + " ".join(f"{n:>{max(6, len(n))}}" for n in names)
        if name == "injected":
            head += f" {'no-hit':>6} {'false inj.':>10}"
        lines.append(head)
        for r in rows.to_dict("records"):
            group = "all" if r["by"] == "all" else f"{r['by']} {r['group']}"
            line = f"{group:<{label}} {r['questions']:>9} " + " ".join(
                cell(r[n], max(6, len(n))) for n in names
            )
            if name == "injected":
                line += f" {r['nohit']:>6} {cell(r['false_injection_rate'], 10)}"
            lines.append(line)
    if extra:
        lines += [
            "",
            "session_*: the turn lists read as sessions, as LongMemEval's "
            "evaluate_retrieval_turn2session does",
        ]
    lines.append(f"computed in {elapsed:.1f} s")
    return "\n".join(lines)


def cmd_metrics(args: argparse.Namespace) -> int:
    from memlab.tuning.ir_metrics import list_cutoffs, metrics_table, parse_ks

    ks = parse_ks(args.k)
    by = tuple(b.strip() for b in args.by.split(",") if b.strip())
    problem = problem_from(args)
    lengths = list_lengths(problem.spec)
    # the JSON keeps the cutoffs asked for; the text shows each list at its own length in place of
    # the ones past it, so those lengths are measured too
    shown = [] if args.format == "json" else [list_cutoffs(ks, n)[0] for n in lengths.values()]
    t0 = time.perf_counter()
    scores, summary = metrics_table(problem, tuple(dict.fromkeys((*ks, *(k for s in shown for k in s)))), by)
    elapsed = time.perf_counter() - t0
    if args.format == "json":
        doc = {
            "dataset": problem.dataset.name,
            "benchmark": problem.dataset.benchmark,
            "source": problem.source,
            "model": problem.scores.details.get("model"),
            "spec": problem.spec.as_dict(),
            "k": list(ks),
            # a cutoff past a list's length reads all of it: not k retrieved memories
            "lists": {
                name: {"holds_at_most": n, "cutoffs_past_it": list(list_cutoffs(ks, n)[1])}
                for name, n in lengths.items()
            },
            "summary": summary.to_dict("records"),
            "questions": scores.to_dict("records") if args.per_question else None,
        }
        emit(json.dumps(json_ready(doc), indent=2, ensure_ascii=False), args.output)
        return 0
    emit(metrics_text(problem, summary, ks, elapsed), args.output)
    return 0


def diff_cell(r, ref: str) -> str:
    v = r[f"diff_{ref}"]
    return "-" if v != v else f"{v:+.3f} [{r[f'diff_{ref}_lo']:+.3f}, {r[f'diff_{ref}_hi']:+.3f}]"


def heldout_text(result, elapsed: float, markdown: bool = False) -> str:
    from memlab.studies.heldout import SYSTEMS

    d = result.details
    bench = d.get("benchmark") or {}
    head = (
        f"held-out: {d['dataset']} ({bench.get('name', '')} {bench.get('granularity', '')}, {d['questions']} "
        f"questions, {d['haystacks']} haystacks), {d['source']} {d['model']}; {d['folds']} folds by haystack "
        f"(seed {d['seed']}), candidates={d['candidates']} inject={d['inject']}"
    )
    notes = [
        *([f"collection: {d['scope']}"] if "scope" in d else []),
        f"tuned on the other folds for: {d['objective']}",
        "value: all = mean utility per question (+1 answered, -1 no-hit with an injection); a category = "
        "recall_any of the injected list, or the false-injection rate for a no-hit one (lower is better)",
        f"d = paired difference to cosine top-k / to the tuned recency spec, 95% bootstrap over questions "
        f"({d['boot']} resamples)",
    ]
    cols = ["group", "measure", "system", "n", "value", "d vs cosine [95% CI]", "d vs recency [95% CI]"]
    rows = [
        [
            r["group"],
            r["measure"],
            r["system"],
            str(r["n"]),
            f"{r['value']:.3f}",
            diff_cell(r, "cosine"),
            diff_cell(r, "recency"),
        ]
        for r in result.table.to_dict("records")
    ]
    if markdown:
        lines = [f"{head}; {'; '.join(notes)}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
    else:
        widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(cols)]
        lines = [head, *notes, "  ".join(f"{c:<{w}}" for c, w in zip(cols, widths, strict=True))]
        lines += ["  ".join(f"{v:<{w}}" for v, w in zip(row, widths, strict=True)) for row in rows]
    lines += [
        "",
        "systems: " + "; ".join(f"{s.name}: {s.meaning}" for s in SYSTEMS.values()),
        "chosen per fold:",
    ]
    for f, names in d["fold_haystacks"].items():
        lines.append(f"  fold {f}: evaluated on {', '.join(names)}")
    for c in result.chosen.to_dict("records"):
        if c["system"] == "recency+calibrated":
            continue
        fusion = ""
        if c.get("norm") is not None and c["norm"] == c["norm"]:
            fusion = f" {c['norm']} alpha={c['alpha']:g}"
        elif c.get("rrf_k") is not None and c["rrf_k"] == c["rrf_k"]:
            fusion = f" rrf_k={c['rrf_k']:g}"
        lines.append(
            f"  fold {c['fold']} {c['system']:<16} {c['retriever']}{fusion} bonus={c['bonus']:g} "
            f"tau={c['tau_days']:g} threshold={c['threshold']:.9g} objective={int(c['objective'])} "
            f"(of {c['tuning_questions']} tuning questions)"
        )
    cal = result.chosen[result.chosen["system"] == "recency+calibrated"]
    if len(cal):
        lines.append(
            f"  recency+calibrated: thresholds {cal['threshold'].min():.4f}.."
            f"{cal['threshold'].max():.4f} over "
            f"{len(cal)} haystacks (false rate {d['false_rate']:g} of the {d['probes']} probes)"
        )
    lines.append(f"computed in {elapsed:.1f} s")
    return "\n".join(lines)


def cmd_tune_benchmark(args: argparse.Namespace) -> int:
    from memlab.app.cli.studies import retriever_grid_from
    from memlab.core.registry import lookup
    from memlab.retrieval.retrievers import RETRIEVERS
    from memlab.studies.heldout import HYBRIDS, held_out

    hybrids = (
        HYBRIDS if args.hybrids is None else tuple(h.strip() for h in args.hybrids.split(",") if h.strip())
    )
    for name in hybrids:  # said before anything is scored, with every name there is
        lookup(RETRIEVERS, name, "retriever for --hybrids")
    family_values(args)
    problem = problem_from(args, decay=None, combine=None)  # the family is a grid axis here
    if args.bonus_range is None:  # the model's bonus range, in 10 steps
        from memlab.core.grid import parse_axis

        values = parse_axis(problem.defaults.bonus_range, "bonus")
        args.bonus_range = ",".join(f"{v:g}" for v in np.round(np.linspace(min(values), max(values), 11), 6))
    grid = retriever_grid_from(args, bonus=args.bonus_range, tau=args.tau_range)
    t0 = time.perf_counter()
    result = held_out(
        problem,
        folds=args.folds,
        seed=args.seed,
        grid=grid,
        n_boot=args.boot,
        false_rate=args.false_rate,
        probes=args.probes,
        hybrids=hybrids,
        progress=sys.stderr.isatty(),
    )
    elapsed = time.perf_counter() - t0
    if args.format == "json":
        doc = {
            **result.details,
            "seconds": elapsed,
            "table": result.table.to_dict("records"),
            "chosen": result.chosen.to_dict("records"),
        }
        emit(json.dumps(json_ready(doc), indent=2, ensure_ascii=False), args.output)
        return 0
    emit(heldout_text(result, elapsed, markdown=args.format == "markdown"), args.output)
    if sys.stderr.isatty():
        print(f"held-out study in {elapsed:.1f} s", file=sys.stderr)
    return 0


def add_metrics_arguments(p: argparse.ArgumentParser) -> None:
    add_source_options(p)
    add_spec_options(p)
    add_family_options(p)
    add_collection_options(p)
    p.add_argument("--k", default="5,10", help="cutoffs, a comma list (default: %(default)s)")
    p.add_argument(
        "--by",
        default="kind,category",
        help="groupings of the rows after 'all', a comma list of kind, category, haystack "
        "(a LoCoMo question's haystack is its conversation; default: %(default)s)",
    )
    p.add_argument("--per-question", action="store_true", help="json: also every question's values")
    add_output_options(p, ["table", "json"])


def add_tune_benchmark_arguments(p: argparse.ArgumentParser) -> None:
    add_source_options(p)
    add_collection_options(p, shards=False)  # each system over the tenant's memories, one shard
    h = p.add_argument_group("held-out tuning")
    h.add_argument(
        "--folds",
        type=int,
        default=None,
        # memlab.studies.heldout.DEFAULT_FOLDS (not imported here: the parser is built for every command)
        help="folds by haystack (conversation) (default: 5, or one per haystack when fewer)",
    )
    add_parameters(h, ["seed"], help_extra={"seed": "fold assignment and bootstrap"})
    h.add_argument("--boot", type=int, default=1000, help="paired bootstrap resamples (default: %(default)s)")
    h.add_argument(
        "--hybrids",
        default=None,
        help="hybrid retrievers the best is chosen from, a comma list (default: hybrid-weighted, "
        "hybrid-rrf, rrf-time, gate-vector-decay; gate-decay's grid is 266,640 configurations per fold)",
    )
    h.add_argument(
        "--false-rate",
        type=float,
        default=0.01,
        help="recency+calibrated: target share of probes injecting (default: %(default)s)",
    )
    h.add_argument(
        "--probes", default="offtopic", help="recency+calibrated: probe set (default: %(default)s)"
    )
    g = p.add_argument_group("grid (start:stop:step with stop included, a comma list, or one value)")
    add_parameters(g, ["alpha_range"], defaults={"alpha_range": "0:1:0.25"})
    g.add_argument(
        "--norm", default="min-max,z-score,none", help="weighted fusion normalisations (comma list)"
    )
    add_parameters(g, ["rrf_k_range"])
    add_parameters(
        g,
        ["bonus_range", "tau_range"],
        defaults={"bonus_range": None, "tau_range": "1,3,7,14,30,60,120,365"},
        help_extra={
            "bonus_range": "decay systems; empty: the model's range in 10 steps",
            "tau_range": "decay systems",
        },
    )
    g.add_argument(
        "--threshold-steps",
        type=int,
        default=201,
        help="thresholds per setting, spanning the system's own score range (default: %(default)s)",
    )
    add_parameters(g, ["candidates", "inject"], help_extra={"candidates": "per route"})
    add_family_options(p, many=True)
    add_output_options(p, ["table", "markdown", "json"])


COMMANDS = (
    Command(
        "metrics",
        "recall_any@k, recall_all@k, nDCG@k, ndcg_any@k and MRR of the spec's ranked lists, per kind "
        "and category",
        add_metrics_arguments,
        cmd_metrics,
    ),
    Command(
        "tune-benchmark",
        "held-out tuning by conversation: each system tuned on the other folds, paired intervals to "
        "the baselines",
        add_tune_benchmark_arguments,
        cmd_tune_benchmark,
    ),
)
