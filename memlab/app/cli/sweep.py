"""Commands over a whole grid: sweep (every configuration, one chosen by a rule, saved as a tuned
spec) and feasible (the exact bonus intervals, and which criteria conflict where there are none)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from itertools import product
from typing import Any

from memlab.app.cli.options import (
    DEFAULTS,
    Command,
    add_collection_options,
    add_criteria_option,
    add_family_options,
    add_output_options,
    add_parameters,
    add_source_options,
    criteria_from,
    emit,
    family_values,
    fmt,
    options_from,
    require_questions,
    scope_from,
    spec_fields,
)
from memlab.core.errors import InputError
from memlab.core.numbers import check_work, counted, plural
from memlab.core.spec import DEFAULT_FAMILY, MMR_NO_MARGIN, RetrievalSpec
from memlab.datasets.schema import load_dataset

MAX_REGIONS = 1_000_000  # feasible regions one `memlab feasible` computes


def grid_from(args: argparse.Namespace, problem=None):
    """The sweep's grid from its options; the threshold and bonus ranges, when not given, follow
    the problem's scores (the model's ranges)."""
    from memlab.core.grid import Grid, parse_axis
    from memlab.scores.sources import SEED_DEFAULTS

    decays, combines = family_values(args)
    defaults = problem.defaults if problem is not None else SEED_DEFAULTS
    return Grid(
        decay=decays,
        combine=combines,
        bonus=parse_axis(args.bonus_range or defaults.bonus_range, "bonus"),
        tau_days=parse_axis(args.tau_range, "tau"),
        threshold=parse_axis(args.threshold_range or defaults.threshold_range, "threshold"),
        candidates=parse_axis(args.candidates_range, "candidates", integer=True),
        inject=parse_axis(args.inject_range, "inject", integer=True),
    )


def mmr_axes_from(args: argparse.Namespace):
    """The MMR axes ``--mmr-pool`` and ``--diversity`` give (``memlab.core.sweep_mmr.MmrAxes``),
    both or neither; None: the sweep without MMR."""
    from memlab.core.grid import parse_axis
    from memlab.core.sweep_mmr import MmrAxes

    pools, divs = getattr(args, "mmr_pool_range", None), getattr(args, "diversity_range", None)
    if pools is None and divs is None:
        return None
    if pools is None or divs is None:
        given, missing = ("--diversity", "--mmr-pool") if pools is None else ("--mmr-pool", "--diversity")
        raise InputError(
            f"{given}: MMR's axes come together: give {missing} too (the pool MMR diversifies, and how much)"
        )
    return MmrAxes.of(parse_axis(pools, "mmr-pool", integer=True), parse_axis(divs, "diversity"))


SHOWN_CRITERIA = 24  # criterion values the choice line prints one by one (beyond: a count)


def describe_row(row: dict[str, Any], criteria, prefixes: Sequence[str] = ("",)) -> str:
    parts = [
        *([f"decay={row['decay']}", f"combine={row['combine']}"] if "decay" in row else []),
        f"bonus={row['bonus']:g}",
        f"tau_days={row['tau_days']:g}",
        f"threshold={row['threshold']:g}",
        f"candidates={int(row['candidates'])}",
        f"inject={int(row['inject'])}",
        # the MMR axes, when swept (a sweep without them prints what it printed before)
        *(
            [f"mmr_pool={int(row['mmr_pool'])}", f"diversity={row['diversity']:g}"]
            if "mmr_pool" in row
            else []
        ),
        f"headroom={fmt(row['headroom'])}",
        f"min_margin={fmt(row['min_margin'])}",
    ]
    if "utility" in row:
        parts.append(f"utility={row['utility']:g}")
    if len(criteria) * len(prefixes) <= SHOWN_CRITERIA:
        parts += [f"{p}{c.name}={fmt(row[f'{p}{c.name}_value'])}" for p in prefixes for c in criteria]
    else:  # too many to read one by one: how many hold, and the first that fail
        names = [f"{p}{c.name}" for p in prefixes for c in criteria]
        failing = [n for n in names if not row[f"{n}_pass"]]
        more = f" and {len(failing) - 8} more" if len(failing) > 8 else ""
        parts.append(
            f"criteria: {len(names) - len(failing)} of {len(names)} hold"
            + (f" (failing: {', '.join(failing[:8])}{more})" if failing else "")
        )
    return " ".join(parts)


def languages_of(args: argparse.Namespace, dataset) -> tuple[str, ...]:
    """``--lang en`` or a comma list ``--lang en,ja`` (a joint sweep), each one the dataset has."""
    langs = tuple(dict.fromkeys(x.strip() for x in str(args.lang).split(",") if x.strip()))
    missing = [x for x in langs if x not in dataset.languages]
    if not langs or missing:
        raise InputError(
            f"--lang {args.lang}: {dataset.name!r} has languages {', '.join(dataset.languages)}"
            + (f", not {', '.join(missing)}" if missing else "")
        )
    return langs


# configurations a second a streamed sweep of up to 20 questions checks on two cores, about (the
# command, start included: 62,067,411 configurations of 6 questions in 12.1 s on the machine of
# 2026-12-02; docs/sweep.md: the sweep alone 1.3e7 a second): one estimated at 10 s or more says
# so before it starts
SWEEP_RATE = 5e6


def cmd_sweep(args: argparse.Namespace) -> int:
    from memlab.app.panel import batch_yaml, cli_flags
    from memlab.core.selection import UTILITY_FORMULA
    from memlab.core.sweep import check_metrics, check_sweep_work
    from memlab.output.io import TableWriter
    from memlab.scores.problem import build_problem
    from memlab.tuning.sweep_study import decision_margins, sweep_chunks, sweep_study
    from memlab.tuning.tuned import choice_selection, dataset_reference, save_tuned, tuned_spec

    unused = [f for f, v in (("--format " + str(args.format), args.format), ("--long", args.long)) if v]
    if unused and not args.output:  # they shape the -o table: without one they would be ignored
        raise InputError(
            f"{' and '.join(unused)}: {'they shape' if len(unused) > 1 else 'it shapes'} the table written "
            "with -o FILE (or -o - for stdout); without -o only the summary is printed: add -o, or drop it"
        )
    args.format = args.format or "csv"
    dataset = load_dataset(args.dataset)
    require_questions(args, dataset)
    langs = languages_of(args, dataset)
    options = options_from(args)
    fields = {**spec_fields(args), "decay": None, "combine": None}  # the family is a grid axis here
    scope = scope_from(args, dataset)
    problems = [build_problem(dataset, replace(options, lang=lang), scope=scope, **fields) for lang in langs]
    dataset = problems[0].dataset  # the questions the tenant filter asks, and their criteria
    criteria = criteria_from(args, dataset)
    grid = grid_from(args, problems[0])
    mmr = mmr_axes_from(args)
    if mmr is not None and args.print_choice == "yaml":  # refused before the sweep, not after it
        raise InputError(
            "--print-choice yaml: a batch run's parameters have no MMR stage, so the choice would lose "
            "mmr_pool and diversity: use --save FILE (the notebooks' spec_file reads it) or "
            "--print-choice flags"
        )
    size = grid.size * (1 if mmr is None else mmr.size)
    progress = mmr is None and grid.size >= 1_000_000 and sys.stderr.isatty()
    check_sweep_work(size, len(dataset.questions))  # refused before the estimate, not after
    seconds = size * len(langs) / SWEEP_RATE * max(1.0, len(dataset.questions) / 20)
    if seconds >= 10 and not progress:  # no bar (stderr is no terminal): said before it starts
        print(
            f"sweeping {size:,} configurations of {counted(len(dataset.questions), 'question')}: "
            f"about {seconds:.0f} s on two cores (a coarser step or a narrower axis finishes sooner)",
            file=sys.stderr,
        )
    asked = check_metrics(args.metrics.split(",")) if args.metrics else None
    study = {
        "nohit_weight": args.nohit_weight,
        "langs": langs,
        "metrics": asked,
        "progress": progress,
        "mmr": mmr,
    }
    if args.output and not args.long:
        with TableWriter(args.output, args.format) as out:
            outcome = sweep_study(problems, grid, criteria, args.select, sink=out.write, **study)
    else:
        outcome = sweep_study(problems, grid, criteria, args.select, **study)
    joint, choice = outcome.joint, outcome.choice
    if args.output and args.long:
        if joint:
            raise InputError("--long writes one language's table: give one --lang with it")
        with TableWriter(args.output, args.format) as out:
            for frame in sweep_chunks(problems[0], grid, criteria, long=True, progress=progress, mmr=mmr):
                out.write(frame)
    elapsed = outcome.elapsed
    # -o - (the table) and --print-choice yaml|flags (the choice, for $(...) or a paste) own
    # stdout: the report goes to stderr
    say = sys.stderr if args.output == "-" or args.print_choice != "line" else sys.stdout
    shown_axes = " x ".join(
        f"{n} {a}"
        for a, n in zip(
            ("decay", "combine", "bonus", "tau", "threshold", "candidates", "inject"), grid.shape, strict=True
        )
        if a not in ("decay", "combine") or n > 1
    )
    if mmr is not None:  # the MMR axes, outermost
        shown_axes = f"{len(mmr.mmr_pool)} mmr_pool x {len(mmr.diversity)} diversity x {shown_axes}"
    total = choice.total
    print(
        f"grid: {shown_axes} = {total:,} {plural(total, 'configuration')}, "
        f"{counted(len(dataset.questions), 'question')}"
        + (f", languages {', '.join(langs)} (jointly)" if joint else "")
        + f", swept in {elapsed:.2f} s",
        file=say,
    )
    if args.output:
        print(f"wrote {args.output} ({args.format}{', long form' if args.long else ''})", file=say)
    share = f" ({choice.feasible / total:.1%})" if total else ""
    print(
        f"feasible{' in every language' if joint else ''}: {choice.feasible:,} of {total:,}{share}", file=say
    )
    if choice.conflicts is not None and not choice.conflicts.satisfiable:
        print(f"conflicting criteria: {choice.conflicts.text()}", file=say)
    if choice.fell_back:
        print(
            f"nothing is feasible: {args.select} has nothing to choose from, so the choice falls back to "
            f"{choice.rule} (utility = {UTILITY_FORMULA}, nohit_weight {args.nohit_weight:g})",
            file=say,
        )
    if outcome.row is None:
        print(f"chosen ({choice.rule}): none: the grid is empty", file=say)
        return 0
    row = outcome.row
    prefixes = [f"{lang}:" for lang in langs] if joint else [""]
    print(f"chosen ({choice.rule}): {describe_row(row, criteria, prefixes)}", file=say)
    print(
        f"injections at the choice{' (summed over languages)' if joint else ''}: current "
        f"{int(row['current_injected'])}, stale {int(row['stale_injected'])}, "
        f"wrong {int(row['wrong_injected'])}, on no-hit questions {int(row['injected_nohit'])}",
        file=say,
    )
    spec = RetrievalSpec.from_row(row)
    if not scope.trivial:
        print(shard_summary(problems[0], spec), file=say)
    decisions = decision_margins(problems, spec)
    if decisions is None:  # MMR with diversity: no margin is exact, and none is made up
        print(MMR_NO_MARGIN, file=say)
    else:
        closest = min(range(len(langs)), key=lambda i: decisions[i].margin)
        print(
            f"{decisions[closest].text()}{f' ({langs[closest]})' if joint else ''}: no final score can move "
            "by less than this and change an injection",
            file=say,
        )
    if args.save:
        selection = {
            "rule": choice.rule,
            "asked": choice.asked,
            "nohit_weight": float(args.nohit_weight),
            "feasible": bool(row["feasible"]),
            "utility": row["utility"],
            "min_margin": float(row["min_margin"]),
            "decision_margin": None if decisions is None else float(decisions[closest].margin),
            "configurations": int(total),
            "feasible_configurations": int(choice.feasible),
            # the criteria that conflict, when none holds: what every command reading it says
            **{k: v for k, v in choice_selection(choice).items() if k == "conflicts"},
        }
        path = save_tuned(args.save, tuned_spec(problems[0], spec, languages=langs, selection=selection))
        print(f"wrote {path} (the tuned spec: read it with --spec {path})", file=say)
    if args.print_choice != "line":
        make = batch_yaml if args.print_choice == "yaml" else cli_flags
        for lang in langs:
            print(make(dataset_reference(dataset), args.source, lang, spec).rstrip("\n"))
    flag = {"bonus": "--bonus", "tau_days": "--tau", "threshold": "--threshold", "mmr_pool": "--mmr-pool"}
    for axis, side, value in [*(mmr.edges(row) if mmr is not None else ()), *grid.edges(row)]:
        print(
            f"warning: the choice sits at the {side} value of {flag.get(axis, '--' + axis)} ({value:g}): "
            "the best configuration may lie outside the grid; widen that axis",
            file=sys.stderr,
        )
    return 0


def cmd_feasible(args: argparse.Namespace) -> int:
    from memlab.core.conflicts import conflicts_of
    from memlab.core.feasible import (
        criterion_regions,
        intersect,
        intervals_json,
        intervals_text,
        region_patterns,
    )
    from memlab.core.grid import Grid, parse_axis
    from memlab.scores.problem import build_problem

    taus = parse_axis(args.tau_range, "tau")
    decays, combines = family_values(args)
    # the grid checks every value, as for a sweep (bonus is what feasible solves for): here, and
    # again below with the thresholds, whose default follows the scores
    Grid(tau_days=taus, candidates=(args.candidates,), inject=(args.inject,), decay=decays, combine=combines)
    dataset = load_dataset(args.dataset)
    require_questions(args, dataset)
    fields = {**spec_fields(args), "decay": None, "combine": None}  # the family is an axis here
    problem = build_problem(dataset, options_from(args), scope=scope_from(args, dataset), **fields)
    criteria = criteria_from(args, problem.dataset)  # the questions the tenant filter asks
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
        spec = RetrievalSpec(
            tau_days=tau,
            threshold=thr,
            candidates=args.candidates,
            inject=args.inject,
            decay=decay,
            combine=combine,
        )
        regions = criterion_regions(raw, ages, labels, criteria, spec=spec)  # spec.bonus is not read
        region = intersect(regions)
        conflicts = None if not region.empty else conflicts_of(list(regions), region_patterns(regions))
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
                "conflicts": None if conflicts is None else conflicts.as_dict(),
                "conflict_text": None if conflicts is None else conflicts.text(),
            }
        )
    if args.format == "json":
        emit(
            json.dumps([{k: v for k, v in r.items() if k != "conflict_text"} for r in rows], indent=2),
            args.output,
        )
        return 0
    lines = [
        f"source: {problem.source}; candidates={args.candidates} inject={args.inject}; "
        f"criteria: {', '.join(c.name for c in criteria)}; bonus values where all hold "
        "([ ] closed, ( ) open)",
    ]
    if rows and all(r["conflicts"] is not None for r in rows):
        lines.append(
            "no bonus satisfies every criterion at any tau and threshold; the criteria that conflict:"
        )
        lines += grouped_conflicts(rows)
    else:
        lines.append(f"{'decay':<6}{'combine':<8}{'tau_days':>8} {'threshold':>9}  bonus")
        lines += [
            f"{r['decay']:<6}{r['combine']:<8}{r['tau_days']:>8g} {r['threshold']:>9g}  {r['text']}"
            for r in rows
        ]
    emit("\n".join(lines), args.output)
    return 0


def grouped_conflicts(rows: list[dict[str, Any]]) -> list[str]:
    """Consecutive taus with the same conflict at the same family and threshold, as one line."""
    out, run = [], []

    def flush():
        if run:
            r0, r1 = run[0], run[-1]
            taus = (
                f"tau {r0['tau_days']:g}" if len(run) == 1 else f"tau {r0['tau_days']:g}-{r1['tau_days']:g}"
            )
            family = (
                "" if (r0["decay"], r0["combine"]) == DEFAULT_FAMILY else f"{r0['decay']}/{r0['combine']} "
            )
            out.append(f"  {family}{taus}, threshold {r0['threshold']:g}: {r0['conflict_text']}")

    ordered = sorted(rows, key=lambda r: (r["decay"], r["combine"], r["threshold"], r["tau_days"]))
    for r in ordered:
        key = (r["decay"], r["combine"], r["threshold"], r["conflict_text"])
        if run and key != (
            run[-1]["decay"],
            run[-1]["combine"],
            run[-1]["threshold"],
            run[-1]["conflict_text"],
        ):
            flush()
            run = []
        run.append(r)
    flush()
    return out


GRID_TITLE = "grid (start:stop:step with stop included, a comma list, or one value)"
MMR_EXAMPLES = {"mmr_pool": "20,40 or 10:40:10", "diversity": "0:1:0.25 or 0.3,0.6"}
MMR_TITLE = (
    "MMR axes (Qdrant's mmr before the bonus, outermost axes; off unless both are given; each "
    "shard diversifies its own pool)"
)


def shard_summary(problem, spec) -> str:
    """How the collection's scope changes what the chosen spec injects: the injected memories
    under it and on one shard (the same filter), and on how many questions the sets differ."""
    from memlab.tuning.evaluate import evaluate

    scope = problem.scope
    here = evaluate(problem.with_spec(spec))
    flat = evaluate(problem.with_scope(replace(scope, shards=1, shard_key=None)).with_spec(spec))
    sets = [
        ({c.memory_id for c in a.injected}, {c.memory_id for c in b.injected})
        for a, b in zip(here.results, flat.results, strict=True)
    ]
    pools = [len(r.candidates) for r in here.results]
    return (
        f"collection: {scope.describe()}: at the choice {sum(len(a) for a, _ in sets)} memories injected "
        f"(one shard: {sum(len(b) for _, b in sets)}), the injected set differs on "
        f"{sum(a != b for a, b in sets)} of {len(sets)} questions; up to {max(pools, default=0)} candidates "
        f"per question (one shard: {spec.candidates})"
    )


def add_sweep_arguments(p: argparse.ArgumentParser) -> None:
    from memlab.app.parameters import parameter
    from memlab.core.sweep import METRICS

    add_source_options(p)
    g = p.add_argument_group(GRID_TITLE)
    add_parameters(g, ["bonus_range", "tau_range", "threshold_range"])
    for axis, example in (("candidates", "4:16:4 or 4,8"), ("inject", "1:5:1 or 2,3")):
        g.add_argument(
            f"--{axis}",
            dest=f"{axis}_range",
            default=str(getattr(DEFAULTS, axis)),
            help=f"{parameter(axis).help}: a value or an axis, {example} (default: %(default)s)",
        )
    g = p.add_argument_group(MMR_TITLE)
    for name, text in (
        ("mmr_pool", "MMR's pools (the raw nearest neighbours diversified down to --candidates), 1 or more"),
        ("diversity", f"MMR's diversities: {parameter('diversity').help.split(': ', 1)[-1]}"),
    ):
        g.add_argument(
            f"--{name.replace('_', '-')}",
            dest=f"{name}_range",
            default=None,
            metavar="AXIS",
            help=f"{text}: a value or an axis, {MMR_EXAMPLES[name]} (default: no MMR axes)",
        )
    add_family_options(p, many=True)
    add_criteria_option(p)
    add_collection_options(p)
    add_parameters(p, ["select", "nohit_weight"])
    p.add_argument(
        "--save",
        default=None,
        metavar="FILE",
        help="write the chosen configuration as a tuned spec (YAML: the spec, the model, the dataset, the "
        "languages, the rule and the date), read back by --spec FILE",
    )
    p.add_argument(
        "--print-choice",
        choices=["line", "yaml", "flags"],
        default="line",
        help="print the chosen configuration as a line, as batch YAML or as flags that memlab evaluate, "
        "prompt and spec accept, ready to paste (default: %(default)s)",
    )
    p.add_argument("--long", action="store_true", help="write one row per configuration and question")
    p.add_argument(
        "--metrics",
        default=None,
        help=f"comma list of metric groups to write (default: all): {', '.join(METRICS)}; the groups the "
        "selection rules read are always written",
    )
    p.add_argument(
        "--format",
        choices=["csv", "parquet", "json"],
        default=None,
        help="format of the -o file (default: csv)",
    )
    p.add_argument("-o", "--output", default=None, help="write the table here (else only the summary)")


def add_feasible_arguments(p: argparse.ArgumentParser) -> None:
    add_source_options(p)
    add_parameters(
        p,
        ["tau_range", "threshold_range"],
        empty={"threshold_range": "the model's threshold, as evaluate uses it"},
    )
    add_parameters(p, ["candidates", "inject"])
    add_family_options(p, many=True)
    add_collection_options(p, shards=False)  # the closed-form region of one shard
    add_criteria_option(p)
    add_output_options(p, ["table", "json"])


COMMANDS = (
    Command(
        "sweep",
        "evaluate a whole grid of configurations, pick one by a rule and save it as a tuned spec",
        add_sweep_arguments,
        cmd_sweep,
    ),
    Command(
        "feasible",
        "the exact bonus intervals where every criterion holds, per tau, and which criteria conflict",
        add_feasible_arguments,
        cmd_feasible,
    ),
)
