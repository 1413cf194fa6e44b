"""``memlab calibrate``: a threshold from off-topic probes, without labelled questions."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from memlab.app.cli.options import (
    Command,
    add_collection_options,
    add_family_options,
    add_output_options,
    add_parameters,
    add_spec_options,
    check_spec_file,
    emit,
    fmt,
    qdrant_dataset,
    scope_from,
    spec_fields,
)
from memlab.core.errors import InputError
from memlab.core.numbers import counted, plural
from memlab.datasets.schema import load_dataset
from memlab.output.io import json_ready


def cmd_calibrate(args: argparse.Namespace) -> int:
    from memlab.core.numbers import check_number
    from memlab.datasets.probes import load_probes
    from memlab.scores.problem import build_problem
    from memlab.scores.sources import ScoreOptions
    from memlab.studies.calibration import MIN_STORE_BASIS, calibrate, check_calibration, template_basis

    if bool(args.qdrant_path) and bool(args.qdrant_url):
        raise InputError("give one of --qdrant-path or --qdrant-url")
    check_number(args.show, "--show", integer=True, minimum=0, maximum=2**31 - 1)  # before any work
    probe_set = load_probes(args.probes)
    # calibrate()'s own checks, by their flags, before anything is embedded (the probe set speaks
    # the language asked for; the resamples of its probes fit)
    check_calibration(
        args.false_rate,
        args.boot,
        args.seed,
        len(probe_set.texts(args.lang)),
        ("--false-rate", "--boot", "--seed"),
    )
    # --qdrant-path/--qdrant-url name the collection read here, not a place to store one
    options = ScoreOptions(
        source="embedded",
        lang=args.lang,
        model=args.model,
        truncate_dim=args.truncate_dim,
        cache_dir=args.cache_dir,
        progress=sys.stderr.isatty(),
    )
    with tempfile.TemporaryDirectory(prefix="memlab-calibrate-") as tmp:
        if args.qdrant_path or args.qdrant_url:
            dataset = qdrant_dataset(args, Path(tmp))
        else:
            dataset = load_dataset(args.dataset)
        # the store's memory vectors (stored, or embedded), the model that made them, the whole spec
        problem = build_problem(dataset, options, scope=scope_from(args, dataset), **spec_fields(args))
        check_spec_file(args, problem)
        problem.memory_vectors()  # read (or embed) them now: the collection's copy is temporary
    basis = None
    allowed = problem.pool.allowed  # a tenant filter: the tenant's memories are the store
    stored = len(dataset.memories) if allowed is None else int(allowed.sum())
    if stored < MIN_STORE_BASIS:
        # the one slow step of a small store: said before it starts (the embeddings are cached)
        print(
            f"the store has {counted(stored, 'memory')} (fewer than {MIN_STORE_BASIS}): the "
            f"tails are fitted on {args.pool:,} template distractors embedded with {problem.model_id}, "
            "about a minute on 2 cores the first time, cached after",
            file=sys.stderr,
        )
        basis = template_basis(problem, args.pool, seed=args.seed)
    result = calibrate(
        problem, probe_set, false_rate=args.false_rate, basis=basis, n_boot=args.boot, seed=args.seed
    )
    if args.format == "json":
        emit(json.dumps(json_ready(result.to_dict()), indent=2, ensure_ascii=False), args.output)
    else:
        emit(calibration_table(result, args.show), args.output)
    return 0


def calibration_table(result, show: int) -> str:
    s, spec = result.summary, result.spec
    d = s["distribution"]
    lines = [
        f"dataset {s['dataset']} ({counted(s['memories'], 'memory')}), model {s['model']}, "
        f"probes {s['probe_set']} {s['probe_set_version']} ({s['probes_scored']}, {s['lang']})",
        f"spec: candidates={spec.candidates} bonus={spec.bonus:g} tau_days={spec.tau_days:g}, "
        f"probes asked at {spec.reference_date.date().isoformat()}",
        "best post-bonus score per probe: "
        + ", ".join(
            f"{k} {d[k]:.3f}" for k in ("min", "p5", "p25", "p50", "p75", "p90", "p95", "p99", "max")
        ),
        f"threshold for a false-injection rate <= {s['false_rate_target']:.2%}: {s['threshold']:.4f} "
        f"[{s['threshold_ci'][0]:.4f}, {s['threshold_ci'][1]:.4f}] "
        f"({s['ci_level']:.0%} bootstrap over probes, "
        f"{s['boot']} resamples, seed {s['seed']}); rate there {s['false_rate_at_threshold']:.2%}, "
        f"resolution {s['resolution']:.2%}",
        f"at the spec's threshold {spec.threshold:g}: "
        f"false-injection rate {s['false_rate_at_spec_threshold']:.2%}",
        "",
        f"closest probes (of {len(result.probes)}):",
        f"{'final':>7} {'raw':>7} {'margin':>8}  {'probe':<6} text -> memory",
    ]
    for p in result.probes[:show]:
        memory = f"{p['memory']}: {p['memory_text']}" if p["memory"] else "-"
        lines.append(
            f"{p['best_final']:>7.3f} {p['raw']:>7.3f} {p['margin']:>+8.3f}  {p['probe']:<6} "
            f"{p['text']} -> {_short(memory, 90)}"
        )
    lines.append("")
    lines.append("memories that are the best match of the most probes:")
    for a in result.attractors[:show]:
        lines.append(
            f"  {a['probes']:>3} {plural(a['probes'], 'probe'):<6} (best {a['best_final']:.3f}) "
            f"{a['memory']}: {_short(a['text'], 90)}"
        )
    lines.append("")
    lines.append(f"at scale ({s['basis']}):")
    lines.append(
        f"{'memories':>12} {'rate at calibrated':>19} {'rate at spec':>13} {'threshold for target':>21}"
    )
    for r in result.scale:
        tag = " (fit, now)" if r["measured"] else ""
        lines.append(
            f"{r['memories']:>12,} {r['false_rate_at_calibrated']:>19.2%} "
            f"{r['false_rate_at_spec_threshold']:>13.2%} "
            f"{r['threshold_for_target']:>21.4f}{tag}"
        )
    lab = result.labelled
    if lab:
        lines.append("")
        # the labelled threshold is the next float above the best no-hit score: said in words, not
        # as its six decimals (0.841469 beside 0.841)
        labelled = (
            "-"
            if lab["nohit_max"] is None
            else f"just above {fmt(lab['nohit_max'])} (the lowest that keeps every no-hit question out)"
        )
        lines.append(
            f"labelled ({lab['questions']} questions): {lab['nohit_questions']} no-hit, best no-hit score "
            f"{fmt(lab['nohit_max'])}, headroom at {spec.threshold:g}: {fmt(lab['headroom'], signed=True)}, "
            f"labelled threshold {labelled}"
        )
        if lab["nohit_false_rate_at_calibrated"] is not None:
            lines.append(
                "  no-hit questions reaching the calibrated threshold: "
                f"{lab['nohit_false_rate_at_calibrated']:.1%}"
                f" (at {spec.threshold:g}: {lab['nohit_false_rate_at_spec']:.1%})"
            )
        lines.append(
            f"  current memories ({lab['current_questions']} questions): {lab['current_kept']} kept, "
            f"{lab['current_cut']} cut by the calibrated threshold, "
            f"{lab['current_not_candidate']} not a candidate; "
            f"{lab['current_reaching_spec_threshold']} reach {spec.threshold:g}; injected: "
            f"{lab['current_injected_at_calibrated']} at the calibrated threshold, "
            f"{lab['current_injected_at_spec']} at {spec.threshold:g}"
        )
        for c in lab["cut"][:show]:
            lines.append(f"    cut: {c['question']} ({c['kind']}) current {c['current']} at {c['final']:.3f}")
    return "\n".join(lines)


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def add_calibrate_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("store (a dataset, or a Qdrant collection read without re-embedding)")
    add_parameters(
        g,
        [
            *("dataset", "qdrant_path", "qdrant_url", "collection", "preset", "date_field", "text_field"),
            *("vector_name", "model", "truncate_dim", "cache_dir", "lang"),
        ],
        command="calibrate",
    )
    add_spec_options(p)
    add_family_options(p)
    add_collection_options(p, shards=False)  # each probe's best over the tenant's whole store
    c = p.add_argument_group("calibration")
    c.add_argument(
        "--false-rate", type=float, default=0.01, help="target false-injection rate (default: %(default)s)"
    )
    c.add_argument("--probes", default="offtopic", help="packaged probe set or folder (default: %(default)s)")
    c.add_argument("--boot", type=int, default=1000, help="bootstrap resamples (default: %(default)s)")
    c.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the distractors")
    c.add_argument(
        "--pool",
        type=int,
        default=2000,
        help="template distractors embedded to fit the extreme-value laws when the store has fewer than "
        "500 memories (default: %(default)s)",
    )
    c.add_argument(
        "--show", type=int, default=10, help="rows of each list in the table (default: %(default)s)"
    )
    add_output_options(p, ["table", "json"])


COMMANDS = (
    Command(
        "calibrate",
        "a threshold without labels: off-topic probes against the store, at a target false-injection rate",
        add_calibrate_arguments,
        cmd_calibrate,
    ),
)
