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
from memlab.app.cli.rerank import add_reranker_options, add_stage_grid_options
from memlab.core.numbers import counted, plural
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
        + f"), scores: {problem.source} {problem.scores.model_label or ''}".rstrip(),
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
            cutoffs = f"{plural(len(past), 'cutoff')} {', '.join(map(str, past))}"
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
            "model": problem.scores.model_label,
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


def fusion_text(chosen: dict) -> str:
    """A tuned hybrid's fusion settings as the chosen lines print them (empty for none)."""
    if chosen.get("norm") is not None and chosen["norm"] == chosen["norm"]:
        return f" {chosen['norm']} alpha={chosen['alpha']:g}"
    if chosen.get("rrf_k") is not None and chosen["rrf_k"] == chosen["rrf_k"]:
        return f" rrf_k={chosen['rrf_k']:g}"
    return ""


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
    lines = table_lines(result.table, notes, head, markdown)
    n = len(lines)
    lines += [
        "",
        "systems: " + "; ".join(f"{s.name}: {s.meaning}" for s in SYSTEMS.values()),
        "chosen per fold:",
    ]
    chosen = [f"  fold {f}: evaluated on {', '.join(names)}" for f, names in d["fold_haystacks"].items()]
    for c in result.chosen.to_dict("records"):
        if c["system"] == "recency+calibrated":
            continue
        fusion = fusion_text(c)
        chosen.append(
            f"  fold {c['fold']} {c['system']:<16} {c['retriever']}{fusion} bonus={c['bonus']:g} "
            f"tau={c['tau_days']:g} threshold={c['threshold']:.9g} objective={int(c['objective'])} "
            f"(of {c['tuning_questions']} tuning questions)"
        )
    cal = result.chosen[result.chosen["system"] == "recency+calibrated"]
    if len(cal):
        chosen.append(
            f"  recency+calibrated: thresholds {cal['threshold'].min():.4f}.."
            f"{cal['threshold'].max():.4f} over "
            f"{len(cal)} haystacks (false rate {d['false_rate']:g} of the {d['probes']} probes)"
        )
    lines += chosen  # fenced with the rest of the tail in markdown (fence_tail)
    lines.append(f"computed in {elapsed:.1f} s")
    return "\n".join(fence_tail(lines, n, markdown))


def fenced(lines: list[str], markdown: bool) -> list[str]:
    """Indented lines as they are in text; in markdown a fenced text block (indented lines of a
    markdown page run together into one paragraph)."""
    return ["```text", *lines, "```"] if markdown else lines


D_COLUMNS = {"cosine": "d vs cosine", "recency": "d vs recency", "best": "d vs best single"}


def fence_tail(lines: list[str], n: int, markdown: bool) -> list[str]:
    """In markdown, the lines after the table's first ``n`` (each fold's choices) as a text block,
    so a page shows them line by line; as they are otherwise."""
    if not markdown:
        return lines
    tail = lines[n:]
    while tail and not tail[0]:
        tail = tail[1:]
    return [*lines[:n], "", "```text", *tail, "```"] if tail else lines


def table_lines(
    table, notes: list[str], head: str, markdown: bool, against: tuple[str, ...] = ("cosine", "recency")
) -> list[str]:
    """A held-out table (``compare_systems``) as text or markdown, with a d column per reference
    in ``against`` (keys of ``D_COLUMNS``)."""
    cols = ["group", "measure", "system", "n", "value", *(f"{D_COLUMNS[a]} [95% CI]" for a in against)]
    rows = [
        [
            r["group"],
            r["measure"],
            r["system"],
            str(r["n"]),
            f"{r['value']:.3f}",
            *(diff_cell(r, a) for a in against),
        ]
        for r in table.to_dict("records")
    ]
    return text_table(head, notes, cols, rows, markdown)


def text_table(
    head: str, notes: list[str], cols: list[str], rows: list[list[str]], markdown: bool
) -> list[str]:
    """A head line, its notes and the rows: a markdown table (head and notes on one line), or
    columns padded to their widest cell."""
    if markdown:
        lines = [f"{head}; {'; '.join(notes)}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        return lines + ["| " + " | ".join(row) + " |" for row in rows]
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(cols)]
    lines = [head, *notes, "  ".join(f"{c:<{w}}" for c, w in zip(cols, widths, strict=True))]
    return lines + ["  ".join(f"{v:<{w}}" for v, w in zip(row, widths, strict=True)) for row in rows]


def rerank_defaults() -> dict:
    """Each reranker option's default as ``add_tune_benchmark`` declares it (from the same adders,
        so one default in one place), but ``--rerank-url``, which turns the stage on (``--rerank-subset``,
    declared with the command, defaults to None)."""
    from memlab.app.cli.rerank import add_reranker_options, add_stage_grid_options

    probe = argparse.ArgumentParser(add_help=False)
    add_reranker_options(probe)
    add_stage_grid_options(probe)
    return {k: v for k, v in vars(probe.parse_args([])).items() if k != "rerank_url"}


def rerank_plan(args: argparse.Namespace):
    """The reranker's options checked before anything is scored (``RerankPlan``), or None
    without ``--rerank-url``."""
    if not args.rerank_url:
        from memlab.core.errors import InputError

        # and the subset's options, declared with the command (the seed's default is --seed's)
        defaults = {
            **rerank_defaults(),
            "rerank_subset": None,
            "rerank_subset_seed": None,
            "no_rerank_cache": False,
        }
        given = [f"--{n.replace('_', '-')}" for n, v in defaults.items() if getattr(args, n) != v]
        if given:  # they shape only the + rerank system: without a reranker they would be ignored
            raise InputError(
                f"{', '.join(given)}: {'it shapes' if len(given) == 1 else 'they shape'} the held-out "
                "+ rerank system, which runs only with --rerank-url: add it, or drop "
                f"{'it' if len(given) == 1 else 'them'}"
            )
        return None
    from memlab.app.cli.rerank import number_list, reranker_config
    from memlab.core.numbers import check_number
    from memlab.core.rerank_stage import check_blend, check_depth
    from memlab.rerank.cache import ScoreCache
    from memlab.rerank.scoring import check_concurrency
    from memlab.studies.pipeline import RerankPlan

    depths = [check_depth(d, "--rerank-depth") for d in number_list(args.rerank_depth, "--rerank-depth", int)]
    blends = [check_blend(b, "--rerank-blend") for b in number_list(args.rerank_blend, "--rerank-blend")]
    check_concurrency(args.rerank_concurrency)
    if args.rerank_subset is not None:
        check_number(args.rerank_subset, "--rerank-subset", integer=True, minimum=1)
    subset_seed = args.seed if args.rerank_subset_seed is None else args.rerank_subset_seed
    check_number(subset_seed, "--rerank-subset-seed", integer=True, minimum=0)
    return RerankPlan(
        reranker_config(args),
        tuple(depths),
        tuple(blends),
        args.rerank_subset,
        subset_seed,
        None if args.no_rerank_cache else ScoreCache(getattr(args, "cache_dir", None)),
        args.rerank_concurrency,
    )


def mmr_plan(args: argparse.Namespace):
    """``--mmr``'s grid checked before anything is scored (``MmrPlan``), or None without it."""
    if not args.mmr:
        return None
    from memlab.app.cli.rerank import number_list
    from memlab.studies.mmr_held import check_grid
    from memlab.studies.pipeline import MmrPlan

    pools, diversities = check_grid(
        number_list(args.mmr_pools, "--mmr-pools", int),
        number_list(args.mmr_diversities, "--mmr-diversities"),
    )
    return MmrPlan(pools, diversities)


def rerank_text(result, staged, seconds: float, markdown: bool = False) -> str:
    from memlab.studies.stages import MEANING, SYSTEM

    d = staged.details
    head = (
        f"{SYSTEM} held out on {d['subset']}: the {d.get('reranker', '')} reranker "
        f"{d.get('endpoint', '')} (model {d.get('model') or 'unnamed'}), {d['pairs']} pairs, "
        f"{d.get('requests', 0)} requests sent, {d.get('cache_hits', 0)} from the cache"
    )
    notes = [
        f"{SYSTEM}: {MEANING}",
        f"stage grid: depths {','.join(map(str, d['depths']))}, "
        f"blends {','.join(f'{b:g}' for b in d['blends'])} "
        "(blend 0: the tuned spec itself)",
        "every system over the same subset questions, d as above",
    ]
    lines = table_lines(staged.table, notes, head, markdown)
    n = len(lines)
    lines += ["", f"{SYSTEM} chosen per fold:"]
    for c in staged.chosen.to_dict("records"):
        stage = (
            f"stage depth={c['stage_depth']} blend={c['stage_blend']:g} threshold={c['stage_threshold']:.6g} "
            f"objective={c['stage_objective']}"
            if "stage_depth" in c and c["stage_depth"] == c["stage_depth"]
            else "no stage in the grid"
        )
        lines.append(
            f"  fold {c['fold']}: {stage}; tuned spec objective={c['spec_objective']} "
            f"(of {c['tuning_questions']} tuning questions): "
            + ("stage kept" if c["kept"] else "tuned spec kept")
        )
    lines.append(f"reranked in {seconds:.1f} s")
    return "\n".join(fence_tail(lines, n, markdown))


def hybrids_from(args: argparse.Namespace) -> tuple[str, ...]:
    """The ``--hybrids`` list, each name checked before anything is scored."""
    from memlab.core.registry import lookup
    from memlab.retrieval.retrievers import RETRIEVERS
    from memlab.studies.heldout import HYBRIDS

    hybrids = (
        HYBRIDS if args.hybrids is None else tuple(h.strip() for h in args.hybrids.split(",") if h.strip())
    )
    for name in hybrids:  # said with every name there is
        lookup(RETRIEVERS, name, "retriever for --hybrids")
    return hybrids


def heldout_grid(args: argparse.Namespace, problem):
    """The held-out grid the options give; no ``--bonus-range``: the model's, in 10 steps."""
    from memlab.app.cli.studies import retriever_grid_from

    if args.bonus_range is None:
        from memlab.core.grid import parse_axis

        values = parse_axis(problem.defaults.bonus_range, "bonus")
        args.bonus_range = ",".join(f"{v:g}" for v in np.round(np.linspace(min(values), max(values), 11), 6))
    return retriever_grid_from(args, bonus=args.bonus_range, tau=args.tau_range)


def pipeline_text(outcome, markdown: bool = False) -> str:
    """The pipeline table (``memlab.studies.pipeline``): the single stages, the best combination,
    d to cosine, to the tuned spec and to the best single stage; each fold's choices."""
    from memlab.studies.mmr_held import MEANING as MMR_MEANING
    from memlab.studies.mmr_held import SYSTEM as MMR
    from memlab.studies.pipeline import COMBINED, COMBINED_MEANING

    p = outcome.pipeline
    d = p.details
    over = outcome.staged.details["subset"] if outcome.staged is not None else "every question"
    head = (
        f"pipeline held out on {over}: {', '.join(d['combinations'])} and the {COMBINED} "
        f"({d['questions']} questions)"
    )
    notes = []
    from memlab.studies.combos import MEANINGS

    notes += [f"{n}: {MEANINGS[n]}" for n in d["combinations"] if n in MEANINGS]
    if outcome.mmr is not None:
        m = outcome.mmr.details
        notes.append(
            f"{MMR}: {MMR_MEANING}; grid: pools {','.join(map(str, m['pools']))}, diversities "
            f"{','.join(f'{x:g}' for x in m['diversities'])} (MMR before the bonus, as Qdrant runs it)"
        )
    notes += [
        f"{COMBINED}: {COMBINED_MEANING}; not modelled: {d['not_modelled']}",
        f"d vs best single: to {d['best_single']}, the single stage with the highest held-out utility "
        "over all (chosen in hindsight: the hardest reference); other d as above",
    ]
    systems = [*dict.fromkeys(("cosine", *d["combinations"], COMBINED))]
    table = p.table[p.table["system"].isin(systems)]
    lines = table_lines(table, notes, head, markdown, against=("cosine", "recency", "best"))
    n = len(lines)
    lines += ["", "chosen per fold:"]
    if outcome.mmr is not None:
        for c in outcome.mmr.chosen.to_dict("records"):
            lines.append(
                f"  fold {c['fold']} {MMR}: pool={c['mmr_pool']} diversity={c['diversity']:g} "
                f"objective={c['stage_objective']}; tuned spec objective={c['spec_objective']} "
                f"(of {c['tuning_questions']} tuning questions): "
                + ("stage kept" if c["kept"] else "tuned spec kept")
            )
    for name, records in d.get("combined", {}).items():
        for c in records:
            if "mmr_pool" in c:  # hybrid + MMR
                stage = f"{c['retriever']} with pool={c['mmr_pool']} diversity={c['diversity']:g}"
                under = c["hybrid_objective"]
            else:
                stage = (
                    f"depth={c['stage_depth']} blend={c['stage_blend']:g} "
                    f"threshold={c['stage_threshold']:.6g}"
                    if "stage_depth" in c and c["stage_depth"] == c["stage_depth"]
                    else "no stage (no blend above 0)"
                )
                under = c["spec_objective"]
            value = c.get("stage_objective")
            lines.append(
                f"  fold {c['fold']} {name}: {stage} objective="
                + ("-" if value is None or value != value else f"{int(value)}")
                + f"; under it {under} (of {c['tuning_questions']} tuning questions): "
                + ("stage kept" if c["kept"] else "stage not kept")
            )
    for c in p.chosen.to_dict("records"):
        scores = ", ".join(
            f"{k.removeprefix('objective ')} {int(v)}"
            for k, v in c.items()
            if k.startswith("objective ") and v == v
        )
        lines.append(
            f"  fold {c['fold']} {COMBINED}: {c['chosen']} (objectives of {c['tuning_questions']} tuning "
            f"questions: {scores})"
        )
    lines.append(f"computed in {outcome.pipeline_seconds:.1f} s")
    return "\n".join(fence_tail(lines, n, markdown))


def saved_text(saved, path, markdown: bool = False) -> str:
    from memlab.studies.pipeline import SAVED_NOTE

    s = saved.tuned.spec
    mmr = f" mmr_pool={s.mmr_pool} diversity={s.diversity:g}" if s.mmr else ""
    stage = saved.tuned.rerank
    rerank = (
        f"; rerank stage depth={stage.depth} blend={stage.blend:g} threshold={stage.threshold:.6g} "
        "(in the application)"
        if stage is not None
        else ""
    )
    lines = [
        f"saved {path}: {saved.pipeline}, {spec_line(s)}{mmr}{rerank}",
        f"  {SAVED_NOTE}",
        "  objectives on the "
        + f"{saved.questions} questions: "
        + ", ".join(f"{k} {v}" for k, v in saved.objectives.items()),
    ]
    if saved.best != saved.pipeline:
        lines.append(f"  the best was {saved.best}, which a tuned file cannot hold (it is no vector spec)")
    return "\n".join(fence_tail(lines, 0, markdown))


def cmd_tune_benchmark(args: argparse.Namespace) -> int:
    from memlab.studies.pipeline import benchmark_study

    if args.units is not None or args.benchmark_file is not None:
        return cmd_tune_units(args)
    if args.systems is not None:  # it names the systems compared across units: here it would be ignored
        from memlab.core.errors import InputError

        raise InputError(
            "--systems: it names the systems compared across --units (with --benchmark-file): add those "
            "two, or drop it (the held-out table compares every system)"
        )
    hybrids = hybrids_from(args)
    family_values(args)
    plan = rerank_plan(args)  # None without --rerank-url
    mmr = mmr_plan(args)  # None without --mmr
    problem = problem_from(args, decay=None, combine=None)  # the family is a grid axis here
    grid = heldout_grid(args, problem)
    outcome = benchmark_study(
        problem,
        folds=args.folds,
        seed=args.seed,
        grid=grid,
        n_boot=args.boot,
        false_rate=args.false_rate,
        probes=args.probes,
        hybrids=hybrids,
        mmr=mmr,
        rerank=plan,
        save=bool(args.save),
        progress=sys.stderr.isatty(),
    )
    result, elapsed, staged = outcome.held, outcome.seconds, outcome.staged
    path = None
    if outcome.saved is not None:
        from memlab.tuning.tuned import save_tuned

        path = save_tuned(args.save, outcome.saved.tuned)
    if args.format == "json":
        doc = {
            **result.details,
            "seconds": elapsed,
            "table": result.table.to_dict("records"),
            "chosen": result.chosen.to_dict("records"),
        }
        if staged is not None:
            doc["rerank"] = {
                **staged.details,
                "seconds": outcome.rerank_seconds,
                "table": staged.table.to_dict("records"),
                "chosen": staged.chosen.to_dict("records"),
            }
        if outcome.pipeline is not None and (mmr is not None or staged is not None):
            p = outcome.pipeline
            doc["pipeline"] = {
                **p.details,
                "seconds": outcome.pipeline_seconds,
                "table": p.table.to_dict("records"),
                "chosen": p.chosen.to_dict("records"),
                **({"mmr_chosen": outcome.mmr.chosen.to_dict("records")} if outcome.mmr is not None else {}),
            }
        if outcome.saved is not None:
            doc["saved"] = {
                "path": str(path),
                "pipeline": outcome.saved.pipeline,
                "best": outcome.saved.best,
                "objectives": outcome.saved.objectives,
                "tuned": outcome.saved.tuned.as_dict(),
                # what a command reading the file injects again, per question
                "injected": {
                    problem.dataset.questions[r].id: [problem.dataset.memory_ids[m] for m in got]
                    for r, got in sorted(outcome.saved.lists.items())
                },
            }
        emit(json.dumps(json_ready(doc), indent=2, ensure_ascii=False), args.output)
        return 0
    markdown = args.format == "markdown"
    text = heldout_text(result, elapsed, markdown=markdown)
    if staged is not None:
        text += "\n\n" + rerank_text(result, staged, outcome.rerank_seconds, markdown=markdown)
    if outcome.pipeline is not None and (mmr is not None or staged is not None):
        text += "\n\n" + pipeline_text(outcome, markdown=markdown)
    if outcome.saved is not None:
        text += "\n\n" + saved_text(outcome.saved, path, markdown=markdown)
    emit(text, args.output)
    if sys.stderr.isatty():
        print(f"held-out study in {elapsed:.1f} s", file=sys.stderr)
    return 0


def units_text(result, elapsed: float, markdown: bool = False) -> str:
    d = result.details
    ref = d["reference"]
    bench = (d.get("benchmark") or {}).get("name", "")
    head = (
        f"memory units held out: {bench} as {', '.join(d['units'])} ("
        + ", ".join(
            f"{u}: {d['memories'][u]:,} memories, {d['questions'][u]:,} questions" for u in d["units"]
        )
        + f"), {d['source']} {d['model']}; {d['folds']} folds by haystack over {d['haystacks']} haystacks "
        f"(seed {d['seed']}), candidates={d['candidates']} inject={d['inject']}"
    )
    left = ", ".join(f"{u} {n}" for u, n in d["left_out"].items() if n)
    notes = [
        f"each unit tuned on its own memories, on the other folds, for: {d['objective']}",
        f"compared on the {d['common_questions']:,} questions every unit keeps"
        + (
            f" (left out of a unit's own: {left}; no memory of another unit holds their evidence)"
            if left
            else ""
        ),
        "value: all = mean utility per question (+1 answered, -1 no-hit with an injection); a category = "
        "recall_any of the injected list, or the false-injection rate for a no-hit one (lower is better)",
        f"tokens: mean tokens of the injected memories per question ({d['tokenizer']}; the block's fixed "
        "instructions and date prefixes not counted)",
        f"d = paired difference to {ref} (same system, same questions), 95% bootstrap over questions "
        f"({d['boot']} resamples); +/-: questions the unit does better / worse on than {ref}",
    ]
    cols = ["group", "measure", "system", "unit", "n", "value", "tokens", f"d vs {ref} [95% CI]"]
    cols += [f"d tokens vs {ref} [95% CI]", "+/-"]
    rows = []
    for r in result.table.to_dict("records"):
        wins = r.get(f"wins_{ref}")
        rows.append(
            [
                r["group"],
                r["measure"],
                r["system"],
                r["unit"],
                str(r["n"]),
                f"{r['value']:.3f}",
                f"{r['tokens']:.1f}",
                diff_cell(r, ref),
                "-"
                if r[f"tokens_diff_{ref}"] != r[f"tokens_diff_{ref}"]
                else (
                    f"{r[f'tokens_diff_{ref}']:+.1f} [{r[f'tokens_diff_{ref}_lo']:+.1f}, "
                    f"{r[f'tokens_diff_{ref}_hi']:+.1f}]"
                ),
                "-" if wins is None or wins != wins else f"+{int(wins)}/-{int(r[f'losses_{ref}'])}",
            ]
        )
    lines = text_table(head, notes, cols, rows, markdown)
    lines += ["", "chosen per fold (each unit's own tuning):"]
    chosen = [f"  fold {f}: evaluated on {', '.join(names)}" for f, names in d["fold_haystacks"].items()]
    for unit, run in result.runs.items():
        for c in run.chosen.to_dict("records"):
            if c["system"] not in d["systems"]:
                continue
            chosen.append(
                f"  {unit:<12} fold {c['fold']} {c['system']:<8} {c['retriever']}{fusion_text(c)} "
                f"bonus={c['bonus']:g} "
                f"tau={c['tau_days']:g} threshold={c['threshold']:.9g} objective={int(c['objective'])} "
                f"(of {c['tuning_questions']} tuning questions)"
            )
    lines += fenced(chosen, markdown)
    lines.append(f"computed in {elapsed:.1f} s")
    return "\n".join(lines)


def cmd_tune_units(args: argparse.Namespace) -> int:
    """``--units``: one import of the benchmark file per unit (in a scratch folder), each run held
    out with its own tuning (``memlab.studies.units``)."""
    import tempfile
    from pathlib import Path

    from memlab.core.errors import InputError
    from memlab.core.registry import lookup
    from memlab.datasets.schema import load_dataset
    from memlab.drift.arrays import default_token_counter
    from memlab.embedding.models import model_card
    from memlab.importers.benchmarks import import_benchmark, unit_names
    from memlab.studies.heldout import SYSTEMS
    from memlab.studies.units import UNIT_SYSTEMS, held_out_units

    if args.units is None or args.benchmark_file is None:
        raise InputError("--units and --benchmark-file go together: the units are imported from that file")
    units = [u.strip() for u in args.units.split(",") if u.strip()]
    given = args.systems if args.systems is not None else ",".join(UNIT_SYSTEMS)
    systems = [s.strip() for s in given.split(",") if s.strip()]
    for system in systems:  # said before anything is imported or scored
        lookup(SYSTEMS, system, "system for --systems")
    unit_names(args.benchmark_file, units)  # each unit checked against the file's benchmark
    hybrids = hybrids_from(args)
    if "hybrid" in systems and not hybrids:
        raise InputError("--systems names hybrid, and --hybrids names no hybrid retriever to choose it from")
    family_values(args)
    with tempfile.TemporaryDirectory(prefix="memlab-units-") as scratch:
        problems = {}
        for unit in units:
            result = import_benchmark(args.benchmark_file, Path(scratch) / unit, granularity=unit)
            problems[unit] = problem_from(args, dataset=load_dataset(result.path), decay=None, combine=None)
        first = problems[units[0]]
        grid = heldout_grid(args, first)
        name = first.model.name if first.model is not None else None
        count_tokens, tokenizer = default_token_counter(name if name and model_card(name) else None)
        t0 = time.perf_counter()
        result = held_out_units(
            problems,
            count_tokens,
            tokenizer=tokenizer,
            systems=systems,
            folds=args.folds,
            seed=args.seed,
            n_boot=args.boot,
            grid=grid,
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
            "chosen": {u: run.chosen.to_dict("records") for u, run in result.runs.items()},
        }
        emit(json.dumps(json_ready(doc), indent=2, ensure_ascii=False), args.output)
        return 0
    emit(units_text(result, elapsed, markdown=args.format == "markdown"), args.output)
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
    u = p.add_argument_group("memory units (what is stored, compared held out on the same questions)")
    u.add_argument(
        "--units",
        default=None,
        help="a comma list of granularities to compare, the first the reference (LoCoMo: turn, "
        "observation, session; LongMemEval: session, turn), each imported from --benchmark-file and "
        "tuned on its own; in place of --dataset",
    )
    u.add_argument(
        "--benchmark-file",
        default=None,
        help="--units: the LoCoMo or LongMemEval JSON file, downloaded by you",
    )
    u.add_argument(
        "--systems",
        # None: memlab.studies.units.UNIT_SYSTEMS (not imported here: the parser is built for every
        # command); None also tells a --systems given without --units, which would be ignored
        default=None,
        help="--units: the held-out systems compared across units (default: cosine,recency,hybrid)",
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
    add_reranker_options(p)  # with --rerank-url: the + rerank system, held out
    s = p.add_argument_group("rerank stage, held out (with --rerank-url)")
    add_stage_grid_options(s)
    s.add_argument(
        "--rerank-subset",
        type=int,
        default=None,
        metavar="N",
        help="rerank only N questions of each conversation, drawn at random (--rerank-subset-seed); "
        "the + rerank table is over those (default: every question)",
    )
    s.add_argument(
        "--rerank-subset-seed",
        type=int,
        default=None,
        help="the seed of --rerank-subset's random choice (default: --seed)",
    )
    s.add_argument("--no-rerank-cache", action="store_true", help="ask the reranker again for every pair")
    m = p.add_argument_group("MMR stage and the best combination, held out")
    m.add_argument(
        "--mmr",
        action="store_true",
        help="add + MMR (pool and diversity tuned per fold on the tuned recency spec) and the best "
        "combination of the stages (also with --rerank-url alone)",
    )
    # memlab.studies.mmr_held.POOLS and DIVERSITIES (not imported here: the parser is built for
    # every command)
    m.add_argument("--mmr-pools", default="16,32", help="--mmr: MMR's pools tried (default: %(default)s)")
    m.add_argument(
        "--mmr-diversities", default="0.1,0.25,0.5", help="--mmr: diversities tried (default: %(default)s)"
    )
    m.add_argument(
        "--save",
        default=None,
        metavar="FILE",
        help="write the chosen pipeline, tuned on every conversation after the held-out evaluation, "
        "as a tuned file every --spec reads (a rerank stage as an application-side stage)",
    )
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
