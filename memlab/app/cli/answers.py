"""``memlab answer``: every question replayed through a chat model under several conditions,
judged per question kind, with the time per turn."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from urllib.parse import urlsplit, urlunsplit

from memlab.app.cli.options import (
    Command,
    add_collection_options,
    add_family_options,
    add_output_options,
    add_parameters,
    add_source_options,
    add_spec_options,
    emit,
    problem_from,
    spec_file_shortfall,
)
from memlab.app.parameters import BY_NAME
from memlab.core.errors import MemlabWarning
from memlab.core.numbers import counted
from memlab.output.io import json_ready

CHAT = ("chat_url", "chat_model", "chat_api_key_env", "temperature", "max_tokens", "repeats", "questions")
CHAT_MORE = ("chat_timeout", "chat_attempts", "concurrency")
JUDGE = ("judge_url", "judge_model", "judge_api_key_env", "judge_format", "llm_judge")


def shown_url(url: str) -> str:
    """A URL as printed: without user, password, query or fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def check_judge_options(args: argparse.Namespace) -> None:
    """``--judge-*`` given with ``--no-llm-judge`` is refused: no judge is asked, so they would be
    ignored."""
    from memlab.app.cli.options import given
    from memlab.app.parameters import parameter
    from memlab.core.errors import InputError

    if args.llm_judge:
        return
    told = given(args)
    unused = [str(parameter(n).flag) for n in JUDGE if n != "llm_judge" and n in told]
    if unused:
        one = len(unused) == 1
        raise InputError(
            f"{', '.join(unused)}: {'it shapes' if one else 'they shape'} the LLM judge, and "
            f"--no-llm-judge asks none, so {'it' if one else 'they'} would be ignored: drop "
            f"{'it' if one else 'them'}, or drop --no-llm-judge"
        )


def clients_from(args: argparse.Namespace):
    """The chat client and the judge's (None with --no-llm-judge)."""
    from memlab.answers.chat import ChatClient, ChatConfig
    from memlab.answers.judge import JUDGE_FORMATS, JUDGE_MAX_TOKENS

    if not args.chat_url:
        from memlab.core.errors import InputError

        raise InputError(
            "--chat-url: required (an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1)"
        )
    chat = ChatClient(
        ChatConfig(
            args.chat_url,
            args.chat_model or "",
            args.temperature,
            args.max_tokens,
            args.seed,
            api_key_env=args.chat_api_key_env,
            timeout=args.chat_timeout,
            attempts=args.chat_attempts,
        )
    )
    judge = None
    if args.llm_judge:
        same = not args.judge_url or args.judge_url == args.chat_url
        judge = ChatClient(
            ChatConfig(
                args.judge_url or args.chat_url,
                args.judge_model or (args.chat_model or "" if same else ""),
                0.0,
                JUDGE_MAX_TOKENS,
                0,
                JUDGE_FORMATS[args.judge_format],
                api_key_env=args.judge_api_key_env or (args.chat_api_key_env if same else None),
                timeout=args.chat_timeout,
                attempts=args.chat_attempts,
                option="--judge-url",
            )
        )
    return chat, judge


def cmd_answer(args: argparse.Namespace) -> int:
    from memlab.answers.cache import ReplyCache
    from memlab.answers.conditions import TuneGrid, build_conditions
    from memlab.answers.inflight import check_concurrency
    from memlab.answers.study import answer_study
    from memlab.answers.tables import study_text
    from memlab.output.io import TableWriter

    check_concurrency(args.concurrency)  # before the scores are built
    check_judge_options(args)
    problem = problem_from(args, used_elsewhere=("cache_dir",))  # the reply cache lives there too
    shortfall = spec_file_shortfall(args, problem)  # today's spec is the sweep's fallback: said
    if shortfall:
        warnings.warn(shortfall, MemlabWarning, stacklevel=1)
    chat, judge = clients_from(args)
    names = tuple(n.strip() for n in args.conditions.split(",") if n.strip())
    tune = TuneGrid(args.select, BY_NAME["bonus_range"].default, BY_NAME["tau_range"].default)
    conditions = build_conditions(problem, names, tuple(args.variant or ()), tune)
    cache = None if args.no_cache else ReplyCache(args.cache_dir)
    try:
        study = answer_study(
            problem,
            conditions,
            chat,
            judge,
            cache,
            repeats=args.repeats,
            questions=tuple(q.strip() for q in (args.questions or "").split(",") if q.strip()),
            store=args.store,
            boot=args.boot,
            seed=args.seed,
            progress=sys.stderr.isatty(),
            concurrency=args.concurrency,
        )
    finally:
        chat.close()
        if judge is not None:
            judge.close()
    if args.replies:
        fmt = args.replies.rsplit(".", 1)[-1] if "." in args.replies else "csv"
        with TableWriter(args.replies, {"jsonl": "json"}.get(fmt, fmt)) as out:
            out.write(study.replies)
        print(
            f"wrote {args.replies} ({counted(len(study.replies), 'reply')})",
            file=sys.stderr,
        )
    setup = {
        "chat": {
            "url": shown_url(args.chat_url),
            "model": study.chat_model,
            "model_ids": study.model_ids,
            "temperature": args.temperature,
            "max_tokens": args.max_tokens,
            "seed": args.seed,
            "repeats": args.repeats,
        },
        "judge": None
        if judge is None
        else {
            "url": shown_url(judge.config.url),
            "model": study.judge_model,
            "model_ids": study.judge_model_ids,
            "temperature": 0.0,
        },
        "dataset": problem.dataset.name,
        "lang": problem.lang,
        "source": problem.source,
        "scores_model": problem.model_id,
        "store": args.store,
    }
    if args.format == "json":
        out = {
            **setup,
            "conditions": [
                {"name": c.name, "block": c.block, "about": c.about, "spec": c.spec_text()}
                for c in conditions
            ],
            "rates": study.rates.to_dict("records"),
            "timing": study.timing.to_dict("records"),
            "replies": study.replies.to_dict("records"),
            "notes": study.notes,
        }
        emit(json.dumps(json_ready(out), indent=2, ensure_ascii=False), args.output)
        return 0
    c = setup["chat"]
    header = [
        f"chat: {c['model']} at {c['url']} (temperature {c['temperature']:g}, max_tokens {c['max_tokens']}, "
        f"seed {c['seed']}, {counted(c['repeats'], 'repeat')} per question)",
        "judge: "
        + (
            "none (--no-llm-judge)"
            if judge is None
            else f"{study.judge_model} at {setup['judge']['url']} (temperature 0)"
        ),
        f"dataset: {problem.dataset.name}, lang {problem.lang}, "
        f"{problem.source} scores ({problem.model_id}), "
        f"store query timed on {args.store}",
    ]
    emit(study_text(study, header, args.boot), args.output)
    return 0


def add_answer_arguments(p: argparse.ArgumentParser) -> None:
    add_source_options(p)
    add_spec_options(p)
    add_family_options(p)
    add_collection_options(p)
    g = p.add_argument_group("chat (OpenAI-compatible POST /v1/chat/completions, streamed)")
    add_parameters(g, CHAT, defaults={"chat_url": None, "chat_model": None, "chat_api_key_env": None})
    add_parameters(g, CHAT_MORE)
    c = p.add_argument_group("conditions")
    add_parameters(c, ["conditions"])
    c.add_argument(
        "--variant",
        action="append",
        metavar="NAME:FIELD=VALUE,...",
        help="another condition: the B-format block at today's spec with these fields changed, e.g. "
        "wide:bonus=0.04,tau_days=30 (repeatable)",
    )
    add_parameters(
        c,
        ["select"],
        help_extra={"select": "the rule that chooses the tuned condition's spec over the notebooks' grid"},
    )
    j = p.add_argument_group("judge (the LLM judge; the phrases and the token F1 need none)")
    add_parameters(j, JUDGE, defaults={"judge_url": None, "judge_model": None, "judge_api_key_env": None})
    s = p.add_argument_group("study")
    add_parameters(s, ["store", "boot", "seed"], defaults={"boot": 1000})
    s.add_argument("--no-cache", action="store_true", help="ask the server again for every reply")
    s.add_argument(
        "--replies",
        default=None,
        metavar="FILE",
        help="also write every reply with its verdicts (.csv, .parquet or .json by the suffix)",
    )
    add_output_options(p, ["table", "json"])


COMMANDS = (
    Command(
        "answer",
        "replay every question through a chat model under several conditions, judge the replies, "
        "time the turn",
        add_answer_arguments,
        cmd_answer,
    ),
)
