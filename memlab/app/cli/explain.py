"""``memlab explain``: replay a query log on the store under the current spec and candidate specs,
and say why each memory went in or not (``memlab.tuning.explain``)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from memlab.app.cli.options import (
    Command,
    add_family_options,
    add_group,
    add_output_options,
    add_parameters,
    add_source_options,
    add_spec_options,
    emit,
    problem_from,
    qdrant_dataset,
    spec_line,
)
from memlab.core.errors import InputError
from memlab.core.numbers import counted
from memlab.core.spec import RetrievalSpec
from memlab.output.io import json_ready

MAX_ROWS = 2**31 - 1  # rows a list option may ask for, as every count memlab takes
DETAIL_ALL = 20  # a log this short shows every query in detail
# (query, memory, dimension) products a second on two free cores, the log, the store and the
# summaries included: what the estimate printed for a long replay assumes (docs/explain.md's
# Speed: 48 to 69 s at 10^5 x 10^5 x 384 on this workplace's 2-core machine)
EXPLAIN_RATE = 6e10
SPEC_TYPES = {
    "candidates": int,
    "inject": int,
    "threshold": float,
    "bonus": float,
    "tau_days": float,
    "decay": str,
    "combine": str,
}


def against_spec(text: str, current: RetrievalSpec, problem) -> tuple[str, RetrievalSpec]:
    """One ``--against``: a tuned-spec file (held to the problem's model), or FIELD=VALUE changes
    to the current spec; (its label, the spec)."""
    from memlab.tuning.tuned import check_tuned, load_tuned

    if Path(text).is_file() or text.endswith((".yaml", ".yml")):
        tuned = load_tuned(text)
        check_tuned(tuned, problem)
        return Path(text).name, replace(tuned.spec, reference_date=current.reference_date)
    changes: dict[str, Any] = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        name = name.strip().replace("-", "_")
        name = "tau_days" if name == "tau" else name
        if not sep or name not in SPEC_TYPES:
            raise InputError(
                f"--against {text}: neither a tuned-spec file nor FIELD=VALUE changes "
                f"(fields: {', '.join(SPEC_TYPES)})"
            )
        try:
            changes[name] = SPEC_TYPES[name](value.strip())
        except ValueError:
            raise InputError(
                f"--against {text}: {name}: {value.strip()!r} is not a {SPEC_TYPES[name].__name__}"
            ) from None
    try:
        return text, replace(current, **changes)
    except InputError as e:  # a value the spec refuses (tau_days=0): say which --against
        raise InputError(f"--against {text}: {e}") from None


def _labels(specs: list[tuple[str, RetrievalSpec]]) -> list[tuple[str, RetrievalSpec]]:
    """Labels made unique (a second ``tuned.yaml`` becomes ``tuned.yaml#2``)."""
    seen: dict[str, int] = {"current": 1}
    out = []
    for label, spec in specs:
        seen[label] = seen.get(label, 0) + 1
        out.append((label if seen[label] == 1 else f"{label}#{seen[label]}", spec))
    return out


def replay_from(args: argparse.Namespace):
    """The log, the store (a dataset, or a Qdrant collection read as import-qdrant reads it), the
    current spec and the candidates, replayed."""
    from memlab.datasets.querylog import load_log, questions_log
    from memlab.tuning.explain import replay, store_vectors

    log = load_log(args.log, args.time_format) if args.log else None  # checked before anything is embedded
    counts = shard_counts(args.shards)
    args.shards = counts[0]
    in_qdrant = bool(args.qdrant_path or args.qdrant_url)
    if args.collection and not in_qdrant:
        raise InputError("--collection: name the store holding it with --qdrant-path or --qdrant-url")
    if in_qdrant and not args.collection:
        raise InputError(
            "--qdrant-path/--qdrant-url: explain reads the store from a collection there: name it with "
            "--collection (and --preset, or --date-field and --text-field, as import-qdrant takes them), "
            "or give --dataset"
        )
    with tempfile.TemporaryDirectory(prefix="memlab-explain-") as tmp:
        dataset = qdrant_dataset(args, Path(tmp)) if in_qdrant else None
        where = {"qdrant_path": args.qdrant_path, "qdrant_url": args.qdrant_url}
        args.qdrant_path = args.qdrant_url = None  # the collection was read: nothing is scored there
        problem = problem_from(args, dataset=dataset, questions=False)  # no log: questions_log says so
        memories = store_vectors(problem)  # read now: the collection's copy is temporary
    args.qdrant_path, args.qdrant_url = where["qdrant_path"], where["qdrant_url"]
    if log is None:
        log = questions_log(problem.dataset, problem.lang)
        print(
            f"log: not given: the {len(log)} questions of {problem.dataset.name}, asked at their dates",
            file=sys.stderr,
        )
    specs = _labels([against_spec(t, problem.spec, problem) for t in args.against or []])
    progress = sys.stderr.isatty()
    seconds = len(log) * memories.size / EXPLAIN_RATE
    if seconds >= 10 and not progress:  # no bar (stderr is no terminal): said before it starts
        print(
            f"explain: replaying {counted(len(log), 'query')} on {counted(len(memories), 'memory')}: "
            f"about {seconds:.0f} s on two cores",
            file=sys.stderr,
        )
    main = replay(problem, log, specs, watch=args.memory or (), memory_vectors=memories, progress=progress)
    if main.screened or main.screen_stop:
        print(screen_line(main), file=sys.stderr)
    others = {
        n: replay(problem.with_scope(replace(problem.scope, shards=n)), log, memory_vectors=memories)
        for n in counts[1:]
    }
    return problem, main, others


def screen_line(rep) -> str:
    """What the int8 screen did (``memlab.tuning.explain``), for the standard error."""
    from memlab.tuning.explain import BATCH, SCREEN_STOPS

    blocks = -(-len(rep.queries) // BATCH)
    line = (
        f"explain: int8 screen: {rep.screened} of {blocks} blocks screened, {rep.screen_fallbacks} "
        f"fell back to the whole product, {rep.rescored:,} (query, memory) pairs rescored in float32"
    )
    return line + (f"; stopped: {SCREEN_STOPS[rep.screen_stop]}" if rep.screen_stop else "")


def shard_counts(text: str | int | None) -> list[int]:
    """``--shards 1,2,4``: the first is the collection's count, the others are compared with it."""
    from memlab.core.numbers import check_number

    if text is None:
        return [1]
    out = []
    for item in str(text).split(","):
        try:
            n = int(item)
        except ValueError:
            raise InputError(
                f"--shards: expected shard counts separated by commas, got {item!r} in {text!r}"
            ) from None
        check_number(n, "--shards", integer=True, minimum=1, maximum=1024)
        out.append(n)
    if len(set(out)) != len(out):
        raise InputError(f"--shards {text}: a shard count is listed twice")
    return out


def cmd_explain(args: argparse.Namespace) -> int:
    from memlab.core.numbers import check_number
    from memlab.tuning.explain_summary import explain_document

    check_number(args.fragile, "--fragile", integer=True, minimum=0, maximum=MAX_ROWS)  # before any work
    problem, rep, others = replay_from(args)
    chosen = [rep.query_index(q) for q in args.query] if args.query else None
    # the table prints each query from the replay itself: the document's per-query part (every
    # query under every spec, most of the time on a large log) is for JSON only
    doc = explain_document(rep, args.fragile, chosen if args.format == "json" else [], others)
    if args.format == "json":
        emit(json.dumps(json_ready(doc), indent=2, ensure_ascii=False), args.output)
        return 0
    if chosen is None and len(rep.queries) <= DETAIL_ALL:
        chosen = list(range(len(rep.queries)))
    listed = chosen if args.query else None  # --query: the queries listed (the summaries stay whole)
    emit(explain_text(problem, rep, doc, chosen or [], listed), args.output)
    return 0


def _pct(k: int, n: int) -> str:
    return f"{k} ({100 * k / n:.1f}%)" if n else "0"


def _short(text: str | None, width: int = 60) -> str:
    if text is None:
        return "(vector)"
    text = " ".join(text.split())
    return repr(text if len(text) <= width else text[: width - 1] + "…")


def _margin(w: dict[str, Any]) -> str:
    return "" if w["margin"] is None else f"{w['margin']:+.4f} ({w['margin_of']})"


def explain_text(
    problem, rep, doc: dict[str, Any], detail: list[int], listed: list[int] | None = None
) -> str:
    """The table: the store, the log, the specs, the summaries, one line per query (those in
    ``listed``; None: all), and the queries in ``detail`` with their candidates and each memory's
    step and margin."""
    s, labels = doc["summary"], rep.labels
    store, log = doc["store"], doc["log"]
    lines = [
        f"store: {store['name']} ({counted(store['memories'], 'memory')}; supersession labels: "
        f"{'yes' if store['supersession'] else 'none'}), model {store['model']}",
        f"log: {log['path']}: {counted(log['queries'], 'query')} "
        f"({counted(log['embedded'], 'text')} embedded), "
        f"{log['logged_injections']} with production's injections",
    ]
    for r in rep.runs:
        lines.append(f"spec {r.label}: {spec_line(r.spec).rsplit(' reference=', 1)[0]}")
    if not problem.threshold_given:
        lines.append(f"threshold: {problem.spec.threshold:g}, the default {problem.defaults.basis}")
    if not problem.scope.trivial:
        lines.append(f"collection: {problem.scope.describe()}")
    # each spec's column as wide as its label (a --against of several changes is long), 2 apart
    width = {label: max(16, len(label)) + 2 for label in labels}
    lines += ["", f"{'summary':<30}" + "".join(f"{label:>{width[label]}}" for label in labels)]
    n = len(rep.queries)
    rows = [
        ("injecting", lambda x: _pct(x["injecting"], n)),
        ("empty", lambda x: _pct(x["empty"], n)),
        ("  no memory written yet", lambda x: str(x["empty_no_memory"])),
        ("  all below the threshold", lambda x: str(x["empty_below_threshold"])),
        ("injected per query", lambda x: f"{x['injected_per_query']:.2f}"),
        (
            "stale injected (queries)",
            lambda x: "-" if x["stale_injected"] is None else f"{x['stale_injected']} ({x['stale_queries']})",
        ),
    ]
    for name, cell in rows:
        cells = "".join(f"{cell(s['specs'][label]):>{width[label]}}" for label in labels)
        lines.append(f"{name:<30}{cells}")
    for label, c in s["changes"].items():
        shown = "; ".join(
            f"{x['query']}" + "".join(f" +{m}" for m in x["gained"]) + "".join(f" -{m}" for m in x["lost"])
            for x in c["queries"][:10]
        )
        lines.append(
            f"changes from current to {label}: {c['changed']} of {n} queries change their injected set"
            + (f" ({shown}{'; …' if c['changed'] > 10 else ''})" if shown else "")
        )
    for x in s.get("shards", [])[1:]:
        shown = "; ".join(
            f"{c['query']}" + "".join(f" +{m}" for m in c["gained"]) + "".join(f" -{m}" for m in c["lost"])
            for c in x["queries"][:10]
        )
        lines.append(
            f"shards {s['shards'][0]['shards']} -> {x['shards']} (current spec): "
            f"{x['changed']} of {n} queries change their injected set, {x['injecting']} inject"
            + (f" ({shown}{'; …' if x['changed'] > 10 else ''})" if shown else "")
        )
    lines += ["", "fragile decisions (current spec: each query's closest decision, nearest first)"]
    for f in s["fragile"]:
        lines.append(f"  {f['query']:<14}{f['margin']:>9.4f}  {f['decides']}  {_short(f['text'], 40)}")
    if not s["fragile"]:
        lines.append("  none (no query has a candidate)")
    p = s["production"]
    lines += [
        "",
        f"production's logged injections against memlab's reading (current spec): {p['logged']} logged, "
        f"{p['agree']} agree, {len(p['differ'])} differ",
    ]
    for d in p["differ"][:20]:
        only = ", ".join(
            f"{w['memory']} ({STEP_WORDS[w['step']]}{', ' + _margin(w) if w['margin'] is not None else ''})"
            for w in d["logged_only"]
        )
        lines.append(
            f"  {d['query']}: production only: {only or '-'}; "
            f"memlab only: {', '.join(d['memlab_only']) or '-'}"
        )
    lines += ["", f"{'query':<14}{'time':<22}" + "".join(f"{label[:20]:<22}" for label in labels) + "text"]
    ids = rep.store.memory_ids
    for qi in range(len(rep.queries)) if listed is None else listed:
        q = rep.queries[qi]
        sets = [",".join(ids[i] for i in r.index[qi][r.injected[qi]]) or "-" for r in rep.runs]
        when = q.time.isoformat().replace("+00:00", "Z")
        lines.append(f"{q.id:<14}{when:<22}" + "".join(f"{x[:20]:<22}" for x in sets) + _short(q.text, 50))
    for qi in detail:
        lines += ["", *query_block(rep, qi)]
    if not detail:
        lines += ["", "each query's candidates, steps and margins: --query ID, or --format json"]
    return "\n".join(lines)


def query_block(rep, qi: int) -> list[str]:
    """One query in detail: under each spec, its candidates (raw, bonus, final, step, margin,
    stale), the memories watched, and how many were decided before the candidates."""
    q = rep.queries[qi]
    when = q.time.isoformat().replace("+00:00", "Z")
    out = [f"{q.id} (line {q.line}, {when}) {_short(q.text, 80)}"]
    if q.injected is not None:
        out.append(f"  production injected: {', '.join(q.injected) or 'nothing'}")
    for r in rep.runs:
        e = rep.explain(qi, r.label).to_dict()
        head = (
            f"injected {', '.join(e['injected'])}"
            if e["injected"]
            else f"nothing injected: {e['empty_reason']}"
        )
        out.append(f"  {r.label}: {head}")
        if e["decision_margin"] is not None:
            out.append(f"    closest decision {e['decision_margin']:.4f}: {e['decides']}")
        out.append(f"    {'memory':<12}{'date':<12}{'raw':>8}{'bonus':>8}{'final':>8}  {'step':<24}margin")
        for w in (*e["candidates"], *(w for w in e["memories"] if w["rank"] is None)):
            stale = f"  STALE (superseded by {w['superseded_by']})" if w["stale"] else ""
            nums = "".join(
                f"{'' if w[k] is None else format(w[k], '.4f'):>8}" for k in ("raw", "bonus", "final")
            )
            out.append(
                f"    {w['memory']:<12}{w['date']:<12}{nums}  {STEP_WORDS[w['step']]:<24}{_margin(w)}{stale}"
            )
        st = dict(e["steps"])
        for w in e["memories"]:  # the watched ones listed above are not counted again
            if w["rank"] is None and w["step"] in st:
                st[w["step"]] -= 1
        out.append(
            f"    + {st['not_candidate']} more not among the candidates, "
            f"{st['not_written']} written after the query"
            + (f", {st['filtered_out']} left out by the filter" if st["filtered_out"] else "")
        )
    return out


STEP_WORDS = {
    "not_written": "written after the query",
    "filtered_out": "left out by the filter",
    "not_candidate": "not a candidate",
    "below_threshold": "below the threshold",
    "past_limit": "past the inject limit",
    "injected": "injected",
    "not_in_store": "not in the store",
}


def add_explain_arguments(p: argparse.ArgumentParser) -> None:
    from memlab.datasets.records import READ_DATE_FORMATS

    add_parameters(p, ["log"])
    p.add_argument(
        "--time-format",
        choices=list(READ_DATE_FORMATS),
        default="auto",
        help="how the log writes a query's time (default: auto: ISO strings, or numbers as epoch seconds)",
    )
    add_parameters(p, ["against"])
    add_source_options(p)
    add_spec_options(p)
    add_family_options(p)
    add_group(
        p,
        "collection",
        lists=["shards"],
        help_extra={
            "shards": "explain: a comma list (1,2,4) shows how the injected sets change with the count"
        },
    )
    g = p.add_argument_group(
        "the store in Qdrant (with --qdrant-path or --qdrant-url; read as import-qdrant reads it)"
    )
    add_parameters(
        g,
        ["collection", "preset", "date_field", "text_field", "vector_name", "id_field", "date_format"],
        command="explain",
    )
    o = p.add_argument_group("what to show")
    o.add_argument(
        "--query", action="append", default=None, help="show this logged query in detail (repeatable)"
    )
    o.add_argument(
        "--memory", action="append", default=None, help="explain this memory in every query too (repeatable)"
    )
    o.add_argument("--fragile", type=int, default=10, help="how many fragile decisions to list (default: 10)")
    add_output_options(p, ["table", "json"])


COMMANDS = (
    Command(
        "explain",
        "replay a query log: why each memory was injected or not, under the current and candidate specs",
        add_explain_arguments,
        cmd_explain,
    ),
)
