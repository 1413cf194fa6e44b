"""Options shared by several commands, declared once, and the helpers that read them."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memlab.app.parameters import add_group
from memlab.core.errors import InputError
from memlab.core.files import atomic_write_text
from memlab.core.spec import COMBINES, DECAYS, RetrievalSpec
from memlab.datasets.schema import load_dataset

DEFAULTS = RetrievalSpec()


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, one-line help, the arguments it declares and what runs it."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def add_source_options(p: argparse.ArgumentParser, default_source: str = "embedded") -> None:
    """The score options (``memlab.app.parameters`` group ``scores``) and the embedding server's."""
    add_group(p, "scores", defaults={"source": default_source})
    add_server_options(p)


def add_server_options(p: argparse.ArgumentParser) -> None:
    add_group(p, "server")


def server_from(args: argparse.Namespace):
    """The ServerConfig the --embed-* options describe, or None without --embed-url."""
    if getattr(args, "embed_url", None) is None:
        return None
    from memlab.embedding.server import ServerConfig

    return ServerConfig(
        url=args.embed_url,
        model=args.embed_model,
        api_key_env=args.embed_api_key_env,
        roles=args.embed_roles,
        encoding=args.embed_encoding,
        batch_size=args.embed_batch,
        timeout=args.embed_timeout,
        attempts=args.embed_attempts,
        fallback=args.embed_fallback,
    )


def add_spec_options(p: argparse.ArgumentParser) -> None:
    """``--bonus --tau --threshold --candidates --inject``; ``--threshold`` defaults to the one that
    follows the scores (the model's)."""
    add_group(p, "spec", defaults={"threshold": None})


def add_family_options(p: argparse.ArgumentParser, many: bool = False) -> None:
    """``--decay`` and ``--combine``; ``many``: comma lists (sweep and feasible axes)."""
    add_group(p, "family", lists=FAMILY_NAMES if many else ())


FAMILY_NAMES = ("decay", "combine")


def family_values(args: argparse.Namespace) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The comma lists of ``--decay`` and ``--combine``, each name checked."""
    from memlab.core.registry import check_names

    decays = check_names(DECAYS, [d.strip() for d in args.decay.split(",")], "decay")
    combines = check_names(COMBINES, [c.strip() for c in args.combine.split(",")], "combine")
    return decays, combines


EMBEDDING_OPTIONS = ("model", "truncate_dim", "qdrant_path", "qdrant_url", "cache_dir", "embed_url")


def options_from(args: argparse.Namespace, used_elsewhere: tuple[str, ...] = ()):
    """The ``ScoreOptions`` the score and server options describe. An embedding option given
    with a source that embeds nothing (``--source published``) is refused, not ignored, unless the
    command uses it for something else too (``used_elsewhere``: ``memlab answer``'s reply cache
    lives in ``--cache-dir``)."""
    from memlab.scores.sources import EMBEDDING_SOURCES, ScoreOptions

    source = getattr(args, "source", "embedded")
    unused = [
        f"--{n.replace('_', '-')}"
        for n in EMBEDDING_OPTIONS
        if n not in used_elsewhere and getattr(args, n, None) is not None
    ]
    if source not in EMBEDDING_SOURCES and unused:
        raise InputError(
            f"{', '.join(unused)}: --source {source} reads stored scores and embeds nothing, so "
            f"{'it' if len(unused) == 1 else 'they'} would be ignored: drop "
            f"{'it' if len(unused) == 1 else 'them'}, or use --source embedded"
        )

    return ScoreOptions(
        source=getattr(args, "source", "embedded"),
        lang=getattr(args, "lang", "en"),
        model=getattr(args, "model", None),
        truncate_dim=getattr(args, "truncate_dim", None),
        qdrant_path=getattr(args, "qdrant_path", None),
        qdrant_url=getattr(args, "qdrant_url", None),
        cache_dir=getattr(args, "cache_dir", None),
        server=server_from(args),
        progress=sys.stderr.isatty(),
    )


def spec_fields(args: argparse.Namespace) -> dict[str, object]:
    """The spec fields the command's options give (None: the default; a threshold not given
    follows the scores)."""
    from memlab.scores.problem import SPEC_FIELDS

    return {name: getattr(args, name) for name in SPEC_FIELDS if hasattr(args, name)}


def problem_from(args: argparse.Namespace, dataset=None, used_elsewhere: tuple[str, ...] = (), **fields):
    """The retrieval problem the options describe: the dataset, its scores and the whole spec,
    built once (``memlab.scores.problem.build_problem``)."""
    from memlab.scores.problem import build_problem

    dataset = load_dataset(args.dataset) if dataset is None else dataset
    return build_problem(dataset, options_from(args, used_elsewhere), **{**spec_fields(args), **fields})


def add_output_options(p: argparse.ArgumentParser, formats: Sequence[str]) -> None:
    p.add_argument(
        "--format", choices=list(formats), default=formats[0], help="output format (default: %(default)s)"
    )
    p.add_argument("-o", "--output", default=None, help="write to this file instead of stdout (- for stdout)")


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
    ref = spec.reference_date.date().isoformat() if spec.reference_date else "dataset"
    return (
        f"candidates={spec.candidates} inject={spec.inject} threshold={spec.threshold:g} "
        f"bonus={spec.bonus:g} tau_days={spec.tau_days:g} reference={ref}"
        + (
            ""
            if (spec.decay, spec.combine) == ("exp", "add")
            else f" decay={spec.decay} combine={spec.combine}"
        )
    )


def criteria_from(args: argparse.Namespace, dataset):
    from memlab.core.criteria import dataset_criteria
    from memlab.datasets.criteria_file import load_criteria

    return load_criteria(args.criteria) if args.criteria else dataset_criteria(dataset)
