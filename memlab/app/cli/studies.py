"""Commands of the studies: scale, robustness, drift, compare."""

from __future__ import annotations

import argparse
import json
import sys

from memlab.app.cli.options import (
    Command,
    add_collection_options,
    add_criteria_option,
    add_family_options,
    add_output_options,
    add_parameters,
    add_server_options,
    add_source_options,
    add_spec_options,
    criteria_from,
    emit,
    family_values,
    fmt,
    problem_from,
    server_from,
    spec_file_shortfall,
    spec_line,
)
from memlab.core.errors import InputError
from memlab.core.numbers import counted
from memlab.core.registry import check_names
from memlab.drift.arrays import DRIFT_MODEL
from memlab.drift.study import DRIFT_BOOT, parse_budgets
from memlab.output.io import json_ready


def drift_table(result) -> str:
    """The held-out table as text (with paired differences to top-k under store-everything), the
    frontier per budget with the oracle line, then the configuration each pair was tuned to."""
    from memlab.drift.intervals import MAX_STALENESS, RECALL_GAP, REFERENCE

    ref = " / ".join(REFERENCE)
    lines = [
        f"held-out seeds {result.held_out.start}:{result.held_out.stop} ({len(result.held_out)} streams), "
        f"tuned on seeds {result.tune_range.start}:{result.tune_range.stop}; "
        "95% bootstrap intervals over held-out streams; d = paired difference to "
        f"{ref} (same resampled streams)",
        f"embeddings: {result.embedding_model}; tokens: {result.tokenizer}",
        "oracle, oracle-*: ceilings that read the generator's truth, not memory systems",
        f"{'system':<20} {'write policy':<20} {'budget':>6}  {'recall [95% CI]':<22} "
        f"{'staleness [95% CI]':<22} {'d recall [95% CI]':<25} {'d staleness [95% CI]':<25} {'tokens':>7}",
    ]

    def diff(r, metric):
        v, lo, hi = r[f"{metric}_diff"], r[f"{metric}_diff_lo"], r[f"{metric}_diff_hi"]
        return "-" if v != v else f"{v:+.3f} [{lo:+.3f}, {hi:+.3f}]"

    for r in result.table.to_dict("records"):
        lines.append(
            f"{r['system']:<20} {r['write_policy']:<20} {r['budget']:>6}  "
            f"{r['recall']:.3f} [{r['recall_lo']:.3f}, {r['recall_hi']:.3f}]   "
            f"{r['staleness']:.3f} [{r['staleness_lo']:.3f}, {r['staleness_hi']:.3f}]   "
            f"{diff(r, 'recall'):<25} {diff(r, 'staleness'):<25} {r['tokens']:>7.1f}"
        )
    lines.append("")
    lines.append(
        f"frontier: per budget, the memory system with the highest recall among those that meet the target "
        f"(staleness <= {MAX_STALENESS} and the lower end of d recall >= -{RECALL_GAP}), else the highest "
        f"recall at staleness <= {MAX_STALENESS} (the oracle reads the true labels)"
    )
    for r in result.frontier().to_dict("records"):
        oracle = (
            ""
            if r["oracle_recall"] != r["oracle_recall"]
            else f"; oracle {r['oracle_recall']:.3f} / {r['oracle_staleness']:.3f}"
        )
        if not r["system"]:
            lines.append(f"  {r['budget']:>4}: no memory system at staleness <= {MAX_STALENESS}{oracle}")
            continue
        lines.append(
            f"  {r['budget']:>4}: {r['system']} / {r['write_policy']} recall {r['recall']:.3f}, "
            f"staleness {r['staleness']:.3f}, d recall {diff(r, 'recall')}: "
            f"{'met' if r['meets'] else 'missed'}{oracle}"
        )
    told = result.table[result.table["oracle"] & (result.table["system"] != "oracle")]
    if len(told):
        lines.append(
            "told a part of the truth (content-supersession re-tuned; not memory systems): "
            "recall / staleness per budget"
        )
        for system, rows in told.groupby("system", sort=False):
            cells = ", ".join(f"{r.budget}: {r.recall:.3f} / {r.staleness:.3f}" for r in rows.itertuples())
            lines.append(f"  {system:<20} {cells}")
    lines.append("")
    lines.append("tuned on the tuning seeds (objective: mean over budgets of recall - staleness)")
    for (system, write_policy), c in result.chosen.items():
        params = ", ".join(
            f"{k}={v:g}" if isinstance(v, int | float) else f"{k}={v}"
            for k, v in {**c.write_params, **c.read_params}.items()
        )
        lines.append(
            f"  {system} / {write_policy}: {params or '-'} "
            f"(objective {c.objective:.3f}, best of {c.configurations})"
        )
    lines.append("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in result.seconds.items()))
    return "\n".join(lines)


def retriever_grid_from(args: argparse.Namespace, bonus: str | None = None, tau: str | None = None):
    """The hybrid grid of ``args``; ``bonus`` and ``tau`` in place of the hybrid command's own
    ranges (tune-benchmark names them as the sweep does)."""
    from memlab.core.grid import parse_axis
    from memlab.retrieval.fusion import NORMALIZATIONS
    from memlab.studies.hybrid import RetrieverGrid

    norms = tuple(n.strip() for n in args.norm.split(","))
    check_names(NORMALIZATIONS, norms, "normalisation")
    decays, combines = family_values(args)
    return RetrieverGrid(
        alphas=parse_axis(args.alpha_range, "alpha"),
        norms=norms,
        rrf_ks=parse_axis(args.rrf_k_range, "rrf-k"),
        bonus=parse_axis(args.hybrid_bonus_range if bonus is None else bonus, "bonus"),
        tau_days=parse_axis(args.hybrid_tau_range if tau is None else tau, "tau"),
        decay=decays,
        combine=combines,
        threshold_steps=args.threshold_steps,
        candidates=args.candidates,
        inject=args.inject,
    )


def cmd_scale(args: argparse.Namespace) -> int:
    from memlab.core.grid import parse_axis
    from memlab.studies.scale import check_scale_work, distractor_pool, scale_sizes, scale_study, store_size

    if args.n_range is not None and not args.n_range.strip():  # given, and empty: no size at all
        raise InputError(
            "--n: empty: expected memory counts (start:stop:step or a comma list), or no --n for the "
            "dataset's own size and the default sizes above it"
        )
    n_range = args.n_range or ""  # not given: the dataset's own size, then the default sizes above it
    if n_range.strip():
        parse_axis(n_range, "n", integer=True)  # the syntax first, as every axis
    if args.source != "embedded":
        raise InputError(
            "the scale study needs vectors: distractors are embedded, so use --source embedded "
            "(published scores come from another model and cannot be mixed with them)"
        )
    problem = problem_from(args)
    sizes = scale_sizes(  # before any embedding
        problem.dataset, n_range, args.pool, name="--n", stored=store_size(problem)
    )
    check_scale_work(problem, sizes[-1])  # before the pool is embedded
    # the one slow step of a first run, said before it starts (calibrate says its own alike): on
    # two shared cores 2,000 template texts took about a minute quiet, three under load
    print(
        f"embedding {args.pool:,} template distractors with {problem.model_id} (--pool): about a "
        "minute per 2,000 on 2 cores the first time, cached after",
        file=sys.stderr,
    )
    pool = distractor_pool(problem, args.pool, seed=args.seed)  # embedded with the problem's model
    result = scale_study(problem, sizes, pool, seed=args.seed, progress=sys.stderr.isatty())
    if args.format == "json":  # every row, the crossings and what they rest on
        emit(json.dumps(json_ready(result.to_dict()), indent=2), args.output)
        return 0
    emit(scale_text(result), args.output)
    return 0


def n_text(n: float) -> str:
    """A store size: whole memories up to 1e15, then in powers of ten (an extrapolation)."""
    return f"{n:,.0f}" if n < 1e15 else f"{n:.2g}"


def scale_text(result) -> str:
    """The scale study as text: the rows, then when the headroom is gone and when a distractor
    passes each hit question's current memory (now, at a predicted N, or never)."""
    spec = result.spec
    lines = [
        f"basis: {result.basis}",
        f"spec: {spec_line(spec)}",
        f"{'n':>10} {'no-hit max':>11} {'(real)':>8} {'headroom':>9} {'predicted [5%, 95%]':>28}",
    ]
    for r in result.rows:
        pred = (
            "-"
            if r["predicted_nohit_max"] is None
            else (f"{r['predicted_nohit_max']:.3f} [{r['predicted_lo']:.3f}, {r['predicted_hi']:.3f}]")
        )
        lines.append(
            f"{r['n']:>10,} {fmt(r['nohit_max']):>11} {fmt(r['nohit_max_real']):>8} "
            f"{fmt(r['headroom']):>9} {pred:>28}"
        )
    nz, bound = result.n_zero_headroom, result.nohit_bound
    if nz is not None and nz <= result.n0:
        zero = f"now (N = {result.n0:,}: the dataset's own no-hit memories reach the threshold)"
    elif nz is not None:
        zero = n_text(nz)
    elif bound <= spec.threshold:
        zero = f"never (the fitted no-hit maximum is bounded at {bound:.3f}, below the threshold)"
    else:
        zero = "beyond 1e15"
    lines.append(f"predicted N where the headroom reaches zero (median): {zero}")
    for h in result.hits:
        n = h["n_distractor_passes_current"]
        if h["crossing"] == "now":
            why = {
                "below the threshold": "already below the threshold",
                "not a candidate": f"not among the top {spec.candidates} by raw score",
                "ranked past inject": f"ranked past the first {spec.inject}",
            }[h["lost_now"]]
            when = f"{why} at N = {result.n0:,}: not injected now"
        elif h["crossing"] == "never":
            when = (
                f"a distractor never passes it (the fitted best distractor is bounded at "
                f"{h['distractor_bound']:.3f})"
            )
        else:
            when = f"a distractor passes it at N ~ {n_text(n)}"
        lines.append(
            f"  {h['question']}: current {h['current']} at {h['current_final']:.3f} "
            f"(margin {fmt(h['margin'], signed=True, beside=0.0)}); {when}"
        )
    return "\n".join(lines)


def cmd_robustness(args: argparse.Namespace) -> int:
    from memlab.studies.robustness import robustness_study

    problem = problem_from(args)
    spec = problem.spec
    criteria = criteria_from(args, problem.dataset)
    study = robustness_study(
        problem, criteria, n_boot=args.boot, seed=args.seed, progress=sys.stderr.isatty()
    )
    summary = study.summary
    if args.format == "json":
        doc = {
            "spec": spec.as_dict(),
            "summary": summary.to_dict("records"),
            "resamples": study.resamples.to_dict("records"),
        }
        emit(json.dumps(json_ready(doc), indent=2), args.output)
        return 0
    lines = [
        f"spec: {spec_line(spec)}; {args.boot} bootstrap resamples, seed {args.seed}",
        f"{'resamples':>20} {'n':>5} {'feasible':>9} {'lower end [5%, 95%]':>26} "
        f"{'upper end [5%, 95%]':>26} {'headroom (median, 5%)':>22}",
    ]
    for r in summary.to_dict("records"):
        ends = (
            f"{fmt(r['lo_median']):>7} [{fmt(r['lo_p05'])}, {fmt(r['lo_p95'])}]   "
            f"{fmt(r['hi_median']):>7} [{fmt(r['hi_p05'])}, {fmt(r['hi_p95'])}]"
            if r["lo_median"] == r["lo_median"]
            else f"{'no feasible bonus in any resample':>55}"
        )
        lines.append(
            f"{r['kind']:>20} {r['resamples']:>5} {r['feasible_share']:>8.1%} {ends}   "
            f"{fmt(r['headroom_median'])}, {fmt(r['headroom_p05'])}"
        )
    for r in study.moved.to_dict("records"):
        interval = (
            "no feasible bonus" if r["lo"] != r["lo"] else f"bonus interval [{fmt(r['lo'])}, {fmt(r['hi'])})"
        )
        lines.append(f"  without {r['left_out']}: {interval}")
    if not study.feasible:
        # the sweep's fallback: that sweep found nothing feasible, so say what this one fails
        shortfall = spec_file_shortfall(args, problem, criteria)
        lines.append(
            "the spec is not feasible on all the questions (no bonus meets every criterion at this "
            "tau and threshold): " + (shortfall or "memlab sweep or memlab feasible finds one that is")
        )
    emit("\n".join(lines), args.output)
    return 0


def cmd_drift(args: argparse.Namespace) -> int:
    from memlab.drift.streams import held_out_seeds, parse_seed_range
    from memlab.drift.study import drift_study

    held_out = held_out_seeds(args.seed_range, args.streams)
    tune_range = parse_seed_range(args.tune_range, "--tune-range")
    server = server_from(args)  # an --embed-* option without --embed-url is refused, before any work
    decays, combines = family_values(args)
    result = drift_study(
        held_out,
        tune_range,
        parse_budgets(args.budgets),
        model=args.model,
        cache_dir=args.cache_dir,
        n_boot=args.boot,
        seed=args.seed,
        progress=sys.stderr.isatty(),
        server=server,
        decay=decays,
        combine=combines,
        announce=lambda line: print(line, file=sys.stderr, flush=True),  # the work said before it starts
    )
    if args.format == "json":
        emit(json.dumps(json_ready(result.rows()), indent=2), args.output)
        return 0
    emit(drift_table(result), args.output)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from memlab.retrieval.retrievers import RETRIEVERS, check_retrievers
    from memlab.studies.hybrid import compare_problem

    retrievers = (
        None if args.retrievers is None else [p.strip() for p in args.retrievers.split(",") if p.strip()]
    )
    check_retrievers(retrievers)  # unknown names fail before any embedding
    grid = retriever_grid_from(args)
    problem = problem_from(args, decay=None, combine=None)  # the family is a grid axis here
    dataset, scores = problem.dataset, problem.scores
    result = compare_problem(problem, retrievers, grid, progress=sys.stderr.isatty())
    if args.format == "json":
        doc = {
            "dataset": dataset.name,
            "lang": args.lang,
            "source": scores.source,
            "model": scores.model_label,
            "configs": result.configs,
            "retrievers": result.chosen.to_dict("records"),
            "by_kind": result.by_kind.to_dict("records"),
            "fusion_landscape": result.landscape.to_dict("records"),
            "questions": result.questions[
                [
                    "retriever",
                    "question",
                    "kind",
                    "names_time",
                    "current_injected",
                    "injected",
                    "stale_injected",
                ]
            ].to_dict("records"),
        }
        emit(json.dumps(json_ready(doc), indent=2), args.output)
        return 0
    lines = [
        f"dataset {dataset.name} ({args.lang}, {counted(len(dataset.questions), 'question')}, "
        f"{result.time_questions} naming a time), "
        f"scores: {scores.source} {scores.model_label or ''}".rstrip(),
        f"{result.configs:,} configurations; each retriever at its best: current memories injected minus "
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


# arguments: each command declares its own


def add_scale_arguments(p: argparse.ArgumentParser) -> None:
    add_source_options(p)
    add_spec_options(p)
    add_family_options(p)
    add_collection_options(p, shards=False)  # N counts the tenant's memories, on one shard
    add_parameters(p, ["n_range", "pool", "seed"])
    add_output_options(p, ["table", "json"])


def add_robustness_arguments(p: argparse.ArgumentParser) -> None:
    add_source_options(p)
    add_spec_options(p)
    add_family_options(p)
    add_collection_options(p, shards=False)  # the feasible region of one shard
    add_parameters(p, ["boot", "seed"])
    add_criteria_option(p)
    add_output_options(p, ["table", "json"])


def add_drift_arguments(p: argparse.ArgumentParser) -> None:
    add_parameters(
        p, ["streams"], defaults={"streams": None}, help_extra={"streams": "empty: all of seed_range"}
    )
    add_parameters(p, ["seed_range", "tune_range", "budgets"])
    add_parameters(p, ["boot", "seed"], defaults={"boot": DRIFT_BOOT})
    p.add_argument(
        "--model",
        default=None,
        help=f"embedding model (default: {DRIFT_MODEL}, the scale the memory systems' cosine grids are "
        f"set on); a sentence-transformers model's tokenizer counts the tokens, else the packaged "
        f"{DRIFT_MODEL}'s",
    )
    add_parameters(p, ["cache_dir"])
    add_server_options(p)
    add_family_options(p, many=True)
    add_output_options(p, ["table", "json"])


def add_compare_arguments(p: argparse.ArgumentParser) -> None:
    add_source_options(p)
    add_collection_options(p, shards=False)  # each retriever over the tenant's memories, one shard
    add_parameters(p, ["retrievers"])
    g = p.add_argument_group("grid (start:stop:step with stop included, a comma list, or one value)")
    add_parameters(g, ["alpha_range"])
    g.add_argument(
        "--norm", default="min-max,z-score,none", help="weighted fusion normalisations (comma list)"
    )
    add_parameters(g, ["rrf_k_range"])
    add_parameters(g, ["hybrid_bonus_range", "hybrid_tau_range"])
    g.add_argument(
        "--threshold-steps",
        type=int,
        default=201,
        help="thresholds per setting, spanning the retriever's own score range (default: %(default)s)",
    )
    add_parameters(g, ["candidates", "inject"], help_extra={"candidates": "per route"})
    add_family_options(p, many=True)
    add_output_options(p, ["table", "json"])


COMMANDS = (
    Command(
        "scale",
        "headroom as the memory count grows: measured, and an extreme-value prediction",
        add_scale_arguments,
        cmd_scale,
    ),
    Command(
        "robustness",
        "leave-one-question-out and bootstrap: does the tuned spec hold?",
        add_robustness_arguments,
        cmd_robustness,
    ),
    Command(
        "drift",
        "drifting facts: memory systems tuned on some streams, measured on held-out ones",
        add_drift_arguments,
        cmd_drift,
    ),
    Command(
        "compare",
        "tune retrievers (vector, hybrid, RRF, time gate) and compare them",
        add_compare_arguments,
        cmd_compare,
    ),
)
