"""Commands that score one spec or a grid: evaluate, table, prompt, spec, sweep, feasible."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from itertools import product
from typing import Any

from memlab.app.cli.options import (
    DEFAULTS,
    Command,
    add_family_options,
    add_output_options,
    add_source_options,
    add_spec_options,
    criteria_from,
    emit,
    family_values,
    fmt,
    problem_from,
    spec_line,
)
from memlab.app.parameters import add_parameters
from memlab.core.errors import InputError, MemlabWarning
from memlab.core.numbers import check_work
from memlab.core.spec import RetrievalSpec
from memlab.datasets.schema import load_dataset
from memlab.output.io import json_ready

MAX_REGIONS = 1_000_000  # feasible regions one `memlab feasible` computes


def grid_from(args: argparse.Namespace, problem=None):
    """The sweep's grid from its options; the threshold range, when not given, follows the
    problem's scores (the model's range)."""
    from memlab.core.grid import Grid, parse_axis
    from memlab.scores.sources import SEED_DEFAULTS

    decays, combines = family_values(args)
    thresholds = args.threshold_range
    if thresholds is None:  # the range that follows the model
        thresholds = (problem.defaults if problem is not None else SEED_DEFAULTS).threshold_range
    return Grid(
        decay=decays,
        combine=combines,
        bonus=parse_axis(args.bonus_range, "bonus"),
        tau_days=parse_axis(args.tau_range, "tau"),
        threshold=parse_axis(thresholds, "threshold"),
        candidates=parse_axis(args.candidates_range, "candidates", integer=True),
        inject=parse_axis(args.inject_range, "inject", integer=True),
    )


def describe_row(row: dict[str, Any], criteria) -> str:
    parts = [
        *([f"decay={row['decay']}", f"combine={row['combine']}"] if "decay" in row else []),
        f"bonus={row['bonus']:g}",
        f"tau_days={row['tau_days']:g}",
        f"threshold={row['threshold']:g}",
        f"candidates={int(row['candidates'])}",
        f"inject={int(row['inject'])}",
        f"headroom={fmt(row['headroom'])}",
        f"min_margin={fmt(row['min_margin'])}",
    ]
    parts += [f"{c.name}={fmt(row[f'{c.name}_value'])}" for c in criteria]
    return " ".join(parts)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from memlab.tuning.evaluate import evaluate

    problem = problem_from(args)
    dataset = problem.dataset
    ev = evaluate(problem)
    if args.format == "json":
        emit(json.dumps(json_ready(ev.to_dict()), indent=2, ensure_ascii=False), args.output)
        return 0
    model = ev.details.get("model", "")
    lines = [
        f"source: {ev.source} ({model}), lang={ev.lang}, dataset={dataset.name}",
        f"spec: {spec_line(ev.spec)}",
    ]
    if not problem.threshold_given:
        lines.append(f"threshold: {ev.spec.threshold:g}, the default {problem.defaults.basis}")
    vectors = ev.details.get("vectors")
    if vectors:
        lines.append("vectors: " + ", ".join(f"{n} from {path}" for path, n in vectors.items() if n))
    lines.append("")
    for r in ev.results:
        lines.append(f"{r.question_id} ({r.kind}) {r.text}")
        if not r.candidates:
            lines.append("  no known scores")
        else:
            lines.append(f"  {'memory':<8}{'date':<12}{'raw':>7}{'bonus':>8}{'final':>7}  injected")
            for c in r.candidates:
                mark = "yes" if c.injected else ("over threshold" if c.reaches else "")
                if c.injected and c.memory_id in r.stale_injected:
                    mark = "yes, STALE"
                elif c.injected and c.memory_id in r.wrong_injected:
                    mark = "yes, not relevant"
                lines.append(
                    f"  {c.memory_id:<8}{ev.details['dates'][c.index]:<12}{c.raw:>7.3f}"
                    f"{c.bonus:>+8.3f}{c.final:>7.3f}  {mark}"
                )
        lines.append("")
    lines.append("criteria")
    for c in ev.criteria:
        lines.append(f"  {c.name}  {fmt(c.value):>6}  {'pass' if c.passed else 'FAIL'}  {c.description}")
    lines.append(
        f"headroom: {fmt(ev.headroom)} (threshold minus the best post-bonus score on no-hit questions)"
    )
    stale = [f"{r.question_id}: {', '.join(r.stale_injected)}" for r in ev.results if r.stale_injected]
    wrong = [f"{r.question_id}: {', '.join(r.wrong_injected)}" for r in ev.results if r.wrong_injected]
    lines.append(f"stale injected: {ev.stale_injected}" + (f" ({'; '.join(stale)})" if stale else ""))
    lines.append(
        f"wrong injected (hit and contradiction questions): {ev.wrong_injected}"
        + (f" ({'; '.join(wrong)})" if wrong else "")
    )
    lines.append(f"feasible: {'yes' if ev.feasible else 'no (fails ' + ', '.join(ev.failing()) + ')'}")
    emit("\n".join(lines), args.output)
    return 0


def parse_pairs(text: str) -> tuple[tuple[float, float], ...]:
    """``--pairs 0.03:30,0.05:14`` -> ((0.03, 30.0), (0.05, 14.0)): bonus >= 0, tau_days > 0."""
    pairs = []
    for item in str(text).split(","):
        try:
            bonus, tau = (float(x) for x in item.split(":"))
        except ValueError:
            bonus = tau = float("nan")
        if not (bonus >= 0 and tau > 0):
            raise InputError(
                f"--pairs: expected BONUS:TAU_DAYS pairs separated by commas (bonus >= 0, "
                f"tau_days > 0), got {item!r} in {text!r}"
            )
        pairs.append((bonus, tau))
    return tuple(pairs)


def cmd_table(args: argparse.Namespace) -> int:
    from memlab.core.criteria import CRITERION_KINDS, dataset_criteria
    from memlab.tuning.evaluate import SEED_CANDIDATES, candidate_table

    problem = problem_from(args)
    dataset, scores, base = problem.dataset, problem.scores, problem.spec
    criteria = dataset_criteria(dataset)
    declared = dataset.tables.candidates if dataset.tables is not None else ()
    pairs = parse_pairs(args.pairs) if args.pairs else declared
    if not pairs:
        pairs = SEED_CANDIDATES
        shown = ", ".join(f"{b:g}:{t:g}" for b, t in pairs)
        warnings.warn(
            f"{dataset.name} declares no candidate pairs (dataset.json: tables.candidates); showing the "
            f"seed's {shown}; pass --pairs BONUS:TAU_DAYS,... for your own",
            MemlabWarning,
            stacklevel=1,
        )
    table = candidate_table(dataset, scores, pairs, base, rule=args.select, lang=args.lang)
    if args.format == "json":
        rows = [
            {
                "bonus": r["bonus"],
                "tau_days": r["tau_days"],
                "threshold": r["threshold"],
                "headroom": r["headroom"],
                "criteria": {
                    c.name: {"value": r[f"{c.name}_value"], "pass": bool(r[f"{c.name}_pass"])}
                    for c in criteria
                },
                "feasible": bool(r["feasible"]),
                "chosen": bool(r["chosen"]),
                "verdict": r["verdict"],
            }
            for r in table.to_dict("records")
        ]
        emit(json.dumps(json_ready(rows), indent=2), args.output)
        return 0
    names = [
        f"{c.name}: {c.question + ' ' if c.question else ''}{CRITERION_KINDS[c.kind].label}" for c in criteria
    ]
    header = (
        f"{'bonus':>6} {'tau_days':>8} " + " ".join(f"{n:>14}" for n in names) + f" {'headroom':>9}  verdict"
    )
    lines = [f"source: {args.source}, threshold={base.threshold:g}, rule: {args.select}", header]
    for r in table.to_dict("records"):
        values = " ".join(f"{fmt(r[f'{c.name}_value']):>14}" for c in criteria)
        lines.append(f"{r['bonus']:>6g} {r['tau_days']:>8g} {values} {fmt(r['headroom']):>9}  {r['verdict']}")
    emit("\n".join(lines), args.output)
    return 0


def cmd_prompt(args: argparse.Namespace) -> int:
    from memlab.output.prompt import chat_messages, memory_block
    from memlab.tuning.evaluate import evaluate

    dataset = load_dataset(args.dataset)
    question = dataset.question(args.question)
    ev = evaluate(problem_from(args, dataset))
    injected = [c.memory_id for c in ev.result(question.id).injected]
    block = memory_block(args.block, dataset, injected, ev.spec.reference_date, args.lang)
    if not block:
        print(
            f"nothing injected for {question.id}: no candidate reaches the threshold {ev.spec.threshold:g}",
            file=sys.stderr,
        )
    if args.format == "messages":
        messages = chat_messages(block, question.text(args.lang))
        emit(json.dumps(messages, indent=2, ensure_ascii=False), args.output)
        return 0
    emit(block, args.output)
    return 0


def schema_from(args: argparse.Namespace, dataset):
    """The collection's names: what an imported dataset recorded, overridden by the options."""
    from dataclasses import replace

    from memlab.qdrant.query import CollectionSchema

    schema = CollectionSchema.from_dataset(dataset)
    given = {
        "date_field": args.date_field,
        "date_format": args.date_format,
        "vector_name": args.vector_name,
        "id_field": args.id_field,
    }
    return replace(schema, **{k: v for k, v in given.items() if v is not None})


def cmd_spec(args: argparse.Namespace) -> int:
    from memlab.datasets.schema import parse_datetime
    from memlab.qdrant.query import python_snippet, setup_text, spec_query_json

    dataset = load_dataset(args.dataset)
    question = dataset.question(args.question) if args.question else None
    at = None
    if args.at:
        try:
            at = parse_datetime(args.at)
        except ValueError as e:
            raise InputError(f"--at: {e}") from None
    schema = schema_from(args, dataset)
    if args.format == "setup":  # the collection's indexes: nothing of the spec
        collection = args.collection or (dataset.qdrant or {}).get("collection") or "NAME"
        emit(setup_text(schema, collection), args.output)
        return 0
    # the problem settles the whole spec (a threshold not given follows the scores) and the model:
    # the question is embedded with the model the dataset's vectors came from
    problem = problem_from(args, dataset)
    spec = problem.spec
    vector = problem.embed_queries([question.text(args.lang)])[0] if question is not None else None
    if args.format == "qdrant-json":
        holes = (["the query vector (pass --question ID to embed one)"] if vector is None else []) + (
            ["the query time (the decay's target and the cut-off; --at DATE freezes it)"]
            if at is None
            else []
        )
        if holes:
            print(f"placeholders to fill: {'; '.join(holes)}", file=sys.stderr)
        emit(spec_query_json(spec, vector, schema, at, exact=args.exact), args.output)
    elif args.format == "python":
        emit(python_snippet(spec, schema, at, exact=args.exact), args.output)
    elif args.format == "json":
        emit(json.dumps(spec.as_dict(), indent=2), args.output)
    else:
        emit(spec_line(spec), args.output)
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    import time

    from memlab.core.selection import select_streaming
    from memlab.core.sweep import sweep_chunks
    from memlab.output.io import TableWriter

    dataset = load_dataset(args.dataset)
    criteria = criteria_from(args, dataset)
    problem = problem_from(args, dataset, decay=None, combine=None)  # the family is a grid axis here
    grid = grid_from(args, problem)
    ages, raw, labels = problem.ages(), problem.raw, problem.labels()
    progress = grid.size >= 1_000_000 and sys.stderr.isatty()
    t0 = time.perf_counter()
    metrics = args.metrics.split(",") if args.metrics else None
    wide = sweep_chunks(raw, ages, labels, grid, criteria, progress=progress, metrics=metrics)
    if args.output and not args.long:
        with TableWriter(args.output, args.format) as out:

            def written():
                for frame in wide:
                    out.write(frame)
                    yield frame

            chosen, n_feasible, total = select_streaming(written(), args.select)
    else:
        chosen, n_feasible, total = select_streaming(wide, args.select)
    if args.output and args.long:
        with TableWriter(args.output, args.format) as out:
            for frame in sweep_chunks(raw, ages, labels, grid, criteria, long=True, progress=progress):
                out.write(frame)
    elapsed = time.perf_counter() - t0
    say = sys.stderr if args.output == "-" else sys.stdout  # -o -: the table owns stdout
    axes = " x ".join(
        f"{n} {a}"
        for a, n in zip(
            ("decay", "combine", "bonus", "tau", "threshold", "candidates", "inject"), grid.shape, strict=True
        )
        if a not in ("decay", "combine") or n > 1
    )
    print(
        f"grid: {axes} = {total:,} configurations, {len(dataset.questions)} questions, "
        f"swept in {elapsed:.2f} s",
        file=say,
    )
    if args.output:
        print(f"wrote {args.output} ({args.format}{', long form' if args.long else ''})", file=say)
    share = f" ({n_feasible / total:.1%})" if total else ""
    print(f"feasible: {n_feasible:,} of {total:,}{share}", file=say)
    if chosen.empty:
        print(
            f"chosen ({args.select}): none: no configuration satisfies {', '.join(c.name for c in criteria)}",
            file=say,
        )
        return 0
    row = chosen.iloc[0].to_dict()
    print(f"chosen ({args.select}): {describe_row(row, criteria)}", file=say)
    print(
        f"injections at the choice: stale {int(row.get('stale_injected', 0))}, "
        f"wrong {int(row.get('wrong_injected', 0))}, on no-hit questions {int(row.get('injected_nohit', 0))}",
        file=say,
    )
    if args.print_choice != "line":
        from memlab.app.panel import batch_yaml, cli_flags, dataset_reference

        spec = RetrievalSpec(
            candidates=int(row["candidates"]),
            inject=int(row["inject"]),
            threshold=float(row["threshold"]),
            bonus=float(row["bonus"]),
            tau_days=float(row["tau_days"]),
            decay=str(row.get("decay", "exp")),
            combine=str(row.get("combine", "add")),
        )
        make = batch_yaml if args.print_choice == "yaml" else cli_flags
        print(make(dataset_reference(dataset), args.source, args.lang, spec).rstrip("\n"))
    flag = {"bonus": "--bonus", "tau_days": "--tau", "threshold": "--threshold"}
    for axis, side, value in grid.edges(row):
        print(
            f"warning: the choice sits at the {side} value of {flag.get(axis, '--' + axis)} ({value:g}): "
            "the best configuration may lie outside the grid; widen that axis",
            file=sys.stderr,
        )
    return 0


def cmd_feasible(args: argparse.Namespace) -> int:
    from memlab.core.feasible import feasible_bonus, intervals_json, intervals_text
    from memlab.core.grid import Grid, parse_axis

    taus = parse_axis(args.tau_range, "tau")
    decays, combines = family_values(args)
    # the grid checks every value, as for a sweep (bonus is what feasible solves for): here, and
    # again below with the thresholds, whose default follows the scores
    Grid(tau_days=taus, candidates=(args.candidates,), inject=(args.inject,), decay=decays, combine=combines)
    dataset = load_dataset(args.dataset)
    criteria = criteria_from(args, dataset)
    problem = problem_from(args, dataset, decay=None, combine=None)  # the family is an axis here
    thresholds = parse_axis(args.threshold_range or str(problem.spec.threshold), "threshold")
    ages, raw, labels = problem.ages(), problem.raw, problem.labels()
    rows = []
    grid = Grid(
        tau_days=taus,
        threshold=thresholds,
        candidates=(args.candidates,),
        inject=(args.inject,),
        decay=decays,
        combine=combines,
    )
    check_work(
        len(grid.decay) * len(grid.combine) * len(grid.tau_days) * len(grid.threshold),
        "tau x threshold",
        MAX_REGIONS,
        "feasible regions",
        "each is one closed-form region, about 0.5 ms on seed16: 1,000,000 take about 10 minutes",
    )
    for decay, combine, tau, thr in product(grid.decay, grid.combine, grid.tau_days, grid.threshold):
        region = feasible_bonus(
            raw,
            ages,
            labels,
            criteria,
            tau_days=tau,
            threshold=thr,
            candidates=args.candidates,
            inject=args.inject,
            decay=decay,
            combine=combine,
        )
        rows.append(
            {
                "decay": decay,
                "combine": combine,
                "tau_days": tau,
                "threshold": thr,
                "candidates": args.candidates,
                "inject": args.inject,
                **intervals_json(region),
                "text": intervals_text(region),
            }
        )
    if args.format == "json":
        emit(json.dumps(rows, indent=2), args.output)
        return 0
    lines = [
        f"source: {args.source}; candidates={args.candidates} inject={args.inject}; "
        f"criteria: {', '.join(c.name for c in criteria)}; bonus values where all hold "
        "([ ] closed, ( ) open)",
        f"{'decay':<6}{'combine':<8}{'tau_days':>8} {'threshold':>9}  bonus",
    ]
    lines += [
        f"{r['decay']:<6}{r['combine']:<8}{r['tau_days']:>8g} {r['threshold']:>9g}  {r['text']}" for r in rows
    ]
    emit("\n".join(lines), args.output)
    return 0


# arguments: each command declares its own


def add_evaluate_arguments(p: argparse.ArgumentParser) -> None:
    add_source_options(p)
    add_spec_options(p)
    add_family_options(p)
    add_output_options(p, ["table", "json"])


def add_table_arguments(p: argparse.ArgumentParser) -> None:
    add_source_options(p)
    add_spec_options(p)
    add_parameters(p, ["select"], defaults={"select": "smallest-bonus"})
    p.add_argument(
        "--pairs",
        default=None,
        help="(bonus, tau_days) pairs to compare, BONUS:TAU_DAYS,... (default: the dataset's "
        "tables.candidates, else the seed's four)",
    )
    add_output_options(p, ["table", "json"])


def add_prompt_arguments(p: argparse.ArgumentParser) -> None:
    from memlab.output.prompt import BLOCKS

    p.add_argument("--question", required=True, help="question id, e.g. C1")
    p.add_argument(
        "--block",
        choices=list(BLOCKS),
        default="b",
        help="b: the B-format <retrieved_memory> block with its instructions; raw: the write-up's A "
        "format, the same memories without instructions (default: %(default)s)",
    )
    add_source_options(p)
    add_spec_options(p)
    add_family_options(p)
    add_output_options(p, ["text", "messages"])


def add_spec_arguments(p: argparse.ArgumentParser) -> None:
    from memlab.qdrant.query import DATE_FORMATS

    add_source_options(p)
    add_spec_options(p)
    add_family_options(p)
    p.add_argument(
        "--question",
        default=None,
        help="embed this question as the prefetch vector, with the model the dataset's scores come from",
    )
    g = p.add_argument_group("your collection (default: what import-qdrant recorded, else memlab's own)")
    g.add_argument("--date-field", default=None, help="payload field with the memory's date (default: date)")
    g.add_argument(
        "--date-format",
        choices=list(DATE_FORMATS),
        default=None,
        help="how the date is stored (default: iso)",
    )
    g.add_argument("--vector-name", default=None, help="the named vector to search (the query's `using`)")
    g.add_argument("--id-field", default=None, help="payload field with your memory id (default: memory_id)")
    g.add_argument("--collection", default=None, help="collection name, for --format setup")
    p.add_argument(
        "--at",
        default=None,
        help="freeze the query time (YYYY-MM-DD or ISO 8601) instead of leaving a placeholder",
    )
    p.add_argument("--exact", action="store_true", help="search without the HNSW index (params.exact)")
    add_output_options(p, ["qdrant-json", "python", "setup", "json", "table"])


GRID_TITLE = "grid (start:stop:step with stop included, a comma list, or one value)"


def add_sweep_arguments(p: argparse.ArgumentParser) -> None:
    from memlab.core.sweep import METRICS

    add_source_options(p)
    g = p.add_argument_group(GRID_TITLE)
    # the sweep's own resolution (finer than the notebooks')
    add_parameters(
        g,
        ["bonus_range", "tau_range", "threshold_range"],
        defaults={"bonus_range": "0:0.1:0.0005", "tau_range": "1:60:0.5", "threshold_range": None},
    )
    g.add_argument(
        "--candidates", dest="candidates_range", default=str(DEFAULTS.candidates), help="default: %(default)s"
    )
    g.add_argument("--inject", dest="inject_range", default=str(DEFAULTS.inject), help="default: %(default)s")
    add_family_options(p, many=True)
    p.add_argument(
        "--criteria", default=None, help="YAML file declaring criteria (default: the dataset's own)"
    )
    add_parameters(p, ["select"], defaults={"select": "smallest-bonus"})
    p.add_argument(
        "--print-choice",
        choices=["line", "yaml", "flags"],
        default="line",
        help="print the chosen configuration as a line, as batch YAML or as CLI flags, ready to paste "
        "(default: %(default)s)",
    )
    p.add_argument("--long", action="store_true", help="write one row per configuration and question")
    p.add_argument(
        "--metrics",
        default=None,
        help=f"comma list of metric groups to write (default: all): {', '.join(METRICS)}",
    )
    p.add_argument(
        "--format",
        choices=["csv", "parquet", "json"],
        default="csv",
        help="format of the -o file (default: %(default)s)",
    )
    p.add_argument("-o", "--output", default=None, help="write the table here (else only the summary)")


def add_feasible_arguments(p: argparse.ArgumentParser) -> None:
    add_source_options(p)
    add_parameters(
        p,
        ["tau_range", "threshold_range"],
        defaults={"threshold_range": None},
        help_extra={"threshold_range": "empty: the model's threshold, as evaluate uses it"},
    )
    add_parameters(p, ["candidates", "inject"])
    add_family_options(p, many=True)
    p.add_argument(
        "--criteria", default=None, help="YAML file declaring criteria (default: the dataset's own)"
    )
    add_output_options(p, ["table", "json"])


COMMANDS = (
    Command(
        "evaluate",
        "run the retrieval spec on every question and check the criteria",
        add_evaluate_arguments,
        cmd_evaluate,
    ),
    Command(
        "table",
        "the seed's four (bonus, tau) candidates and the one the rule picks",
        add_table_arguments,
        cmd_table,
    ),
    Command(
        "prompt",
        "the B-format <retrieved_memory> block the spec injects for a question",
        add_prompt_arguments,
        cmd_prompt,
    ),
    Command(
        "spec", "print the spec, or the whole spec as one Qdrant REST query", add_spec_arguments, cmd_spec
    ),
    Command(
        "sweep",
        "evaluate a whole grid of configurations and pick one by a rule",
        add_sweep_arguments,
        cmd_sweep,
    ),
    Command(
        "feasible",
        "the exact bonus intervals where every criterion holds, per tau",
        add_feasible_arguments,
        cmd_feasible,
    ),
)
