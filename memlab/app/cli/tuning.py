"""Commands that score one spec: evaluate, table, prompt, spec (the grid's: ``memlab.app.cli.sweep``)."""

from __future__ import annotations

import argparse
import json
import sys
import warnings

from memlab.app.cli.options import (
    Command,
    add_collection_options,
    add_family_options,
    add_mmr_options,
    add_output_options,
    add_parameters,
    add_source_options,
    add_spec_options,
    emit,
    fmt,
    problem_from,
    scope_from,
    spec_file_shortfall,
    spec_line,
)
from memlab.core.criteria import CRITERION_KINDS, value_edge
from memlab.core.errors import InputError, MemlabWarning
from memlab.datasets.schema import load_dataset
from memlab.output.io import json_ready


def cmd_evaluate(args: argparse.Namespace) -> int:
    from memlab.tuning.evaluate import evaluate

    problem = problem_from(args)
    dataset = problem.dataset
    ev = evaluate(problem)
    if args.format == "json":
        scope = {} if problem.scope.trivial else {"collection": problem.scope.as_dict()}
        emit(json.dumps(json_ready({**ev.to_dict(), **scope}), indent=2, ensure_ascii=False), args.output)
        return 0
    model = problem.scores.model_label or ""
    lines = [
        f"source: {ev.source} ({model}), lang={ev.lang}, dataset={dataset.name}",
        f"spec: {spec_line(ev.spec)}",
        *([f"collection: {problem.scope.describe()}"] if not problem.scope.trivial else []),
    ]
    if not problem.threshold_given:
        lines.append(f"threshold: {ev.spec.threshold:g}, the default {problem.defaults.basis}")
    vectors = ev.details.get("vectors")
    if vectors:
        lines.append("vectors: " + ", ".join(f"{n} from {path}" for path, n in vectors.items() if n))
    lines.append("")
    # ids as long as an imported benchmark's (answer_tiny0001_2) keep their column
    width = max([6, *(len(c.memory_id) for r in ev.results for c in r.candidates)]) + 2
    for r in ev.results:
        lines.append(f"{r.question_id} ({r.kind}) {r.text}")
        if not r.candidates:
            lines.append("  no known scores")
        else:
            lines.append(f"  {'memory':<{width}}{'date':<12}{'raw':>7}{'bonus':>8}{'final':>7}  injected")
            for c in r.candidates:
                mark = "yes" if c.injected else ("over threshold" if c.reaches else "")
                if c.injected and c.memory_id in r.stale_injected:
                    mark = "yes, STALE"
                elif c.injected and c.memory_id in r.wrong_injected:
                    mark = "yes, not relevant"
                lines.append(
                    f"  {c.memory_id:<{width}}{ev.details['dates'][c.index]:<12}{c.raw:>7.3f}"
                    f"{c.bonus:>+8.3f}{fmt(c.final, beside=ev.spec.threshold):>7}  {mark}"
                )
        lines.append("")
    lines.append("criteria")
    named = max([1, *(len(c.name) for c in ev.criteria)])
    labelled = max([1, *(len(CRITERION_KINDS[c.kind].label) for c in ev.criteria)])
    for c in ev.criteria:
        verdict = "pass" if c.passed else "FAIL"
        edge = value_edge(c.kind, ev.spec.threshold)
        label = CRITERION_KINDS[c.kind].label  # what the value is: "best stale 0.893", not "0.893"
        lines.append(
            f"  {c.name:<{named}}  {label:>{labelled}} {fmt(c.value, beside=edge):>6}  {verdict}  "
            f"{c.description}"
        )
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
    if not str(text).strip():
        raise InputError(
            "--pairs: empty: expected BONUS:TAU_DAYS pairs separated by commas, or no --pairs for the "
            "dataset's own candidates"
        )
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
    pairs = parse_pairs(args.pairs) if args.pairs is not None else declared  # '' is no pair: refused
    if not pairs:
        pairs = SEED_CANDIDATES
        shown = ", ".join(f"{b:g}:{t:g}" for b, t in pairs)
        warnings.warn(
            f"{dataset.name} declares no candidate pairs (dataset.json: tables.candidates); showing the "
            f"seed's {shown}; pass --pairs BONUS:TAU_DAYS,... for your own",
            MemlabWarning,
            stacklevel=1,
        )
    table = candidate_table(dataset, scores, pairs, base, rule=args.select, lang=args.lang, pool=problem.pool)
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
    widths = [max(8, len(n)) for n in names]  # each column as wide as its name
    header = (
        f"{'bonus':>6} {'tau_days':>8} "
        + " ".join(f"{n:>{w}}" for n, w in zip(names, widths, strict=True))
        + f" {'headroom':>9}  verdict"
    )
    lines = [f"source: {args.source}, threshold={base.threshold:g}, rule: {args.select}", header]
    records = table.to_dict("records")
    for r in records:
        values = " ".join(
            f"{fmt(r[f'{c.name}_value'], beside=value_edge(c.kind, r['threshold'])):>{w}}"
            for c, w in zip(criteria, widths, strict=True)
        )
        lines.append(f"{r['bonus']:>6g} {r['tau_days']:>8g} {values} {fmt(r['headroom']):>9}  {r['verdict']}")
    if not any(r["feasible"] for r in records):
        lines.append(
            f"no pair meets every criterion at threshold {base.threshold:g}: memlab sweep searches the "
            "whole grid (bonus, tau, threshold) and says which criteria conflict"
        )
    emit("\n".join(lines), args.output)
    return 0


def cmd_prompt(args: argparse.Namespace) -> int:
    from memlab.output.prompt import chat_messages, memory_block
    from memlab.tuning.evaluate import evaluate

    dataset = load_dataset(args.dataset)
    if args.question is None:
        ids = dataset.question_ids
        shown = ", ".join(ids[:8]) + (f", ... ({len(ids)} in all)" if len(ids) > 8 else "")
        raise InputError(
            f"prompt needs --question ID, one of the dataset's questions: {shown or '(none: add some)'}"
        )
    problem = problem_from(args, dataset)
    question = problem.dataset.question(args.question)  # the filter's: another tenant's is said
    ev = evaluate(problem)
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
    from memlab.datasets.payload import field_type, filter_text
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
    schema, scope = schema_from(args, dataset), scope_from(args, dataset)
    for key, value in scope.filters:  # one field cannot hold both the date and a tenant's keyword
        if key in (schema.date_field, schema.id_field):
            role = "date" if key == schema.date_field else "id"
            raise InputError(
                f"--filter {key}={value}: {key!r} is the collection's {role} field (--{role}-field), "
                "which the exported query reads as such; store the tenant under another payload field"
            )
    conditions = scope.conditions()
    if scope.shards > 1 or scope.shard_key is not None:
        print(
            f"collection: {scope.describe()}: the query is the same on every shard; its prefetch "
            "limit (candidates) applies per shard, as memlab modelled it",
            file=sys.stderr,
        )
    if args.format == "setup":  # the collection's indexes: nothing of the spec
        collection = args.collection or (dataset.qdrant or {}).get("collection") or "NAME"
        fields = {k: field_type(dataset.memories, k) or "keyword" for k, _ in scope.filters}
        emit(setup_text(schema, collection, fields), args.output)
        return 0
    # the problem settles the whole spec (a threshold not given follows the scores) and the model:
    # the question is embedded with the model the dataset's vectors came from
    problem = problem_from(args, dataset, questions=False)
    spec = problem.spec
    shortfall = spec_file_shortfall(args, problem)  # the sweep's fallback, exported: said
    if shortfall:
        warnings.warn(shortfall, MemlabWarning, stacklevel=1)
    vector = problem.embed_queries([question.text(args.lang)])[0] if question is not None else None
    # a rerank stage after the query (memlab rerank --save): the query returns its pool, unthresholded
    stage = getattr(getattr(args, "tuned", None), "rerank", None)
    pool = None if stage is None else stage.depth
    if stage is not None and args.format != "setup":
        print(f"rerank stage: {stage.describe()}", file=sys.stderr)
    if args.format == "qdrant-json":
        holes = (["the query vector (pass --question ID to embed one)"] if vector is None else []) + (
            ["the query time (the decay's target and the cut-off; --at DATE freezes it)"]
            if at is None
            else []
        )
        if holes:
            print(f"placeholders to fill: {'; '.join(holes)}", file=sys.stderr)
        body = spec_query_json(spec, vector, schema, at, exact=args.exact, conditions=conditions, pool=pool)
        emit(body, args.output)
    elif args.format == "python":
        emit(
            python_snippet(spec, schema, at, exact=args.exact, conditions=conditions, pool=pool), args.output
        )
    elif args.format == "json":
        extra = {"filter": {"must": conditions}} if conditions else {}
        rerank = {"rerank": stage.as_dict()} if stage is not None else {}
        emit(json.dumps({**spec.as_dict(), **extra, **rerank}, indent=2), args.output)
    else:
        line = spec_line(spec) + (f"; filter {filter_text(scope.filters)}" if conditions else "")
        emit(line + (f"; then {stage.describe()}" if stage is not None else ""), args.output)
    return 0


# arguments: each command declares its own


def add_evaluate_arguments(p: argparse.ArgumentParser) -> None:
    add_source_options(p)
    add_spec_options(p)
    add_family_options(p)
    add_mmr_options(p)
    add_collection_options(p)
    add_output_options(p, ["table", "json"])


def add_table_arguments(p: argparse.ArgumentParser) -> None:
    add_source_options(p)
    add_spec_options(p, spec_file=False)  # it compares (bonus, tau) pairs, not one tuned spec
    add_collection_options(p)
    # the seed's rule: its table adopts the smallest bonus that satisfies every criterion
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

    # not required by argparse: without it the error names the dataset's questions, not the usage
    p.add_argument("--question", default=None, help="question id, e.g. C1 (required)")
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
    add_collection_options(p)
    add_output_options(p, ["text", "messages"])


def add_spec_arguments(p: argparse.ArgumentParser) -> None:
    from memlab.datasets.records import DATE_FORMATS

    add_source_options(p)
    add_spec_options(p)
    add_family_options(p)
    add_mmr_options(p)
    add_collection_options(p)
    p.add_argument(
        "--question",
        default=None,
        help="embed this question as the prefetch vector, with the model the dataset's scores come from",
    )
    g = p.add_argument_group("your collection (default: what import-qdrant recorded, else memlab's own)")
    add_parameters(g, ["date_field"], command="spec")
    # the formats a query writes, not the registry's --date-format (which reads, auto included)
    g.add_argument(
        "--date-format",
        choices=list(DATE_FORMATS),
        default=None,
        help="how the date is stored (default: iso)",
    )
    add_parameters(g, ["vector_name", "id_field", "collection"], command="spec")
    p.add_argument(
        "--at",
        default=None,
        help="freeze the query time (YYYY-MM-DD or ISO 8601) instead of leaving a placeholder",
    )
    p.add_argument("--exact", action="store_true", help="search without the HNSW index (params.exact)")
    add_output_options(p, ["qdrant-json", "python", "setup", "json", "table"])


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
)
