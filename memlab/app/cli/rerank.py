"""``memlab rerank``: the rerank stage (``memlab.studies.rerank``) applied to a dataset and its
effect printed beside the spec as it is; ``--save`` writes the spec with the chosen stage."""

from __future__ import annotations

import argparse
import json
import sys

from memlab.app.cli.options import (
    Command,
    add_collection_options,
    add_family_options,
    add_output_options,
    add_source_options,
    add_spec_options,
    emit,
    problem_from,
    spec_line,
)
from memlab.core.errors import InputError
from memlab.core.rerank_stage import RERANKERS
from memlab.output.io import json_ready
from memlab.rerank.clients import REQUEST_SHAPES, RerankerConfig
from memlab.studies.rerank import BLENDS, DEPTHS


def number_list(text: str, flag: str, kind=float) -> list:
    try:
        values = [kind(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"{flag}: expected comma-separated numbers, got {text!r:.80}") from None
    if not values:
        raise InputError(f"{flag}: give at least one value")
    return values


def measured(row) -> str:
    return (
        f"answered {int(row['answered'])}, no-hit injected {int(row['nohit_injected'])}, "
        f"utility {int(row['utility'])}, recall_any {row['recall_any']:.3f}, "
        f"{row['injected_mean']:.2f} injected per question"
    )


def cmd_rerank(args: argparse.Namespace) -> int:
    from memlab.rerank.cache import ScoreCache
    from memlab.rerank.clients import Reranker
    from memlab.rerank.scoring import check_concurrency
    from memlab.studies.rerank import choose, rerank_study

    if not args.rerank_url:
        raise InputError(
            "--rerank-url: required (a chat endpoint's or a rerank endpoint's base URL, e.g. http://127.0.0.1:8080/v1)"
        )
    depths = number_list(args.rerank_depth, "--rerank-depth", int)
    blends = number_list(args.rerank_blend, "--rerank-blend")
    check_concurrency(args.rerank_concurrency)
    config = reranker_config(args)
    problem = problem_from(args, used_elsewhere=("cache_dir",))  # the rerank score cache lives there too
    reranker = Reranker(config)
    cache = None if args.no_cache else ScoreCache(getattr(args, "cache_dir", None))
    try:
        study = rerank_study(
            problem, reranker, depths=depths, blends=blends, cache=cache, concurrency=args.rerank_concurrency
        )
    finally:
        reranker.close()
    if args.save:
        from memlab.tuning.tuned import save_tuned, tuned_spec

        selection = {"rule": "max-utility", "asked": "rerank: answered minus no-hit injected"}
        path = save_tuned(
            args.save, tuned_spec(problem, problem.spec, selection=selection, rerank=study.stage)
        )
        print(f"wrote {path}", file=sys.stderr)
    d = study.details
    if args.format == "json":
        out = {
            "spec": problem.spec.as_dict(),
            "reranker": d,
            "baseline": study.baseline,
            "chosen": study.chosen,
            "stage": study.stage.as_dict(),
            "table": study.table.to_dict(orient="records"),
        }
        emit(json.dumps(json_ready(out), indent=2, ensure_ascii=False), args.output)
        return 0
    # per (depth, blend), the row the study's rule would choose among its thresholds
    groups = study.table.groupby(["depth", "blend"], sort=False)
    best = [sub.iloc[choose(sub)] for _, sub in groups]
    lines = [
        f"dataset {problem.dataset.name}, {d['questions']} questions, {problem.source} scores, "
        f"lang={problem.lang}",
        f"spec: {spec_line(problem.spec)}",
        f"reranker: {d['reranker']} {d['endpoint']} (model {d['model'] or 'unnamed'}): {d['pairs']} pairs, "
        f"{d['requests']} requests sent, {d['cache_hits']} from the cache",
        "",
        f"the spec as it is (candidates {problem.spec.candidates}, no rerank, "
        f"threshold {problem.spec.threshold:g}):",
        f"  {measured(study.baseline)}",
        f"with the chosen stage (depth {study.stage.depth}, blend {study.stage.blend:g}, "
        f"threshold {study.stage.threshold:.4g}):",
        f"  {measured(study.chosen)}",
        f"  change in utility: {int(study.chosen['utility']) - int(study.baseline['utility']):+d} "
        "(measured on the questions it was tuned on: held-out folds are memlab tune-benchmark's)",
        "",
        "best threshold per depth and blend",
        f"  {'depth':>5} {'blend':>6} {'threshold':>10} {'answered':>9} {'nohit inj':>10} {'utility':>8}",
    ]
    for r in best:
        lines.append(
            f"  {int(r['depth']):>5} {r['blend']:>6.2f} {r['threshold']:>10.4g} {int(r['answered']):>9} "
            f"{int(r['nohit_injected']):>10} {int(r['utility']):>8}"
        )
    lines += ["", f"stage: {study.stage.describe()}"]
    emit("\n".join(lines), args.output)
    return 0


def add_reranker_options(p: argparse.ArgumentParser) -> None:
    """The reranker's options (``memlab rerank``, ``memlab tune-benchmark``)."""
    g = p.add_argument_group("reranker (run by the application after the exported query)")
    g.add_argument(
        "--reranker",
        choices=list(RERANKERS),
        default="chat",
        help="chat: the chat model's probability of 'yes' (POST {url}/chat/completions with logprobs); "
        "endpoint: a rerank endpoint (POST {url}/rerank) (default: %(default)s)",
    )
    g.add_argument(
        "--rerank-url", default=None, help="the reranking server's base URL, e.g. http://127.0.0.1:8080/v1"
    )
    g.add_argument(
        "--rerank-model",
        default=None,
        help="the model name sent (default: the chat server's first; none for an endpoint)",
    )
    g.add_argument(
        "--rerank-api-key-env",
        default=None,
        metavar="ENV",
        help="the environment variable holding its API key",
    )
    g.add_argument(
        "--rerank-timeout",
        type=float,
        default=RerankerConfig.timeout,
        help="seconds one request may take, whole (default: %(default)s)",
    )
    g.add_argument(
        "--rerank-attempts",
        type=int,
        default=RerankerConfig.attempts,
        help="tries per request (default: %(default)s)",
    )
    g.add_argument(
        "--rerank-concurrency", type=int, default=1, help="requests in flight at once (default: %(default)s)"
    )
    g.add_argument(
        "--rerank-top-logprobs",
        type=int,
        default=RerankerConfig.top_logprobs,
        help="the chat reranker's top logprobs asked for (default: %(default)s)",
    )
    g.add_argument(
        "--rerank-request",
        choices=list(REQUEST_SHAPES),
        default=RerankerConfig.request_shape,
        help="the endpoint's request: {model, query, documents, top_n} (llama.cpp, vLLM, Jina, Cohere) or "
        "TEI's {query, texts} (default: %(default)s)",
    )


def add_stage_grid_options(s) -> None:
    """The stage's depth and blend axes."""
    s.add_argument(
        "--rerank-depth",
        default=",".join(map(str, DEPTHS)),
        help="pool depths to sweep, comma-separated (default: %(default)s)",
    )
    s.add_argument(
        "--rerank-blend",
        default=",".join(f"{b:g}" for b in BLENDS),
        help="weights w of the reranker's score, (1 - w) * final + w * rerank, comma-separated "
        "(default: %(default)s)",
    )


def reranker_config(args: argparse.Namespace) -> RerankerConfig:
    """The reranker the options name (``--rerank-url`` given)."""
    return RerankerConfig(
        args.reranker,
        args.rerank_url,
        model=args.rerank_model or "",
        api_key_env=args.rerank_api_key_env,
        timeout=args.rerank_timeout,
        attempts=args.rerank_attempts,
        top_logprobs=args.rerank_top_logprobs,
        request_shape=args.rerank_request,
    )


def add_rerank_arguments(p: argparse.ArgumentParser) -> None:
    add_source_options(p)
    add_spec_options(p)
    add_family_options(p)
    add_collection_options(p, shards=False)
    add_reranker_options(p)
    s = p.add_argument_group("stage")
    add_stage_grid_options(s)
    s.add_argument("--no-cache", action="store_true", help="ask the reranker again for every pair")
    s.add_argument(
        "--save",
        default=None,
        metavar="FILE",
        help="write the spec with the chosen stage as a tuned-spec file",
    )
    add_output_options(p, ["table", "json"])


COMMANDS = (
    Command(
        "rerank",
        "a rerank stage after the query (the chat model's P(yes), or a rerank endpoint) swept over "
        "depth and blend, beside the spec as it is",
        add_rerank_arguments,
        cmd_rerank,
    ),
)
