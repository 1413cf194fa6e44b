"""The answer study's parameters (``memlab answer``, notebook 09), declared as the fields of
``memlab.app.parameters.Parameter``: ``PARAMETERS`` takes them in, so they are declared once like
every other parameter."""

from __future__ import annotations

from typing import Any

from memlab.answers.chat import MAX_TOKENS, ChatConfig
from memlab.answers.replay import MAX_REPEATS
from memlab.core.http import MAX_ATTEMPTS, MAX_CONCURRENCY, MAX_TIMEOUT

__all__ = ["ANSWER_PARAMETERS", "MAX_CONCURRENCY", "MAX_REPEATS"]  # the bounds, read where they are set


def _p(name: str, type: str, default: Any, help: str, flag: str | None = None, **more: Any) -> dict[str, Any]:
    return {"name": name, "type": type, "default": default, "help": help, "flag": flag, **more}


def _judge_formats() -> list[str]:
    from memlab.answers.judge import JUDGE_FORMATS

    return list(JUDGE_FORMATS)


def _stores() -> list[str]:
    from memlab.answers.timing import STORES

    return list(STORES)


ANSWER_PARAMETERS: tuple[dict[str, Any], ...] = (
    _p(
        "chat_url",
        "str",
        "",
        "answers: chat endpoint URL (OpenAI-compatible, e.g. http://127.0.0.1:8080/v1); empty: 09 "
        "does nothing",
        "--chat-url",
        group="chat",
    ),
    _p(
        "chat_model",
        "str",
        "",
        "answers: model asked of the chat server; empty: the first one it lists",
        "--chat-model",
        group="chat",
    ),
    _p(
        "chat_api_key_env",
        "str",
        "",
        "answers: environment variable holding the chat server's API key (never recorded)",
        "--chat-api-key-env",
        notebook=False,
        group="chat",
    ),
    _p(
        "temperature",
        "float",
        ChatConfig.temperature,
        "answers: the chat's sampling temperature (recorded with every reply)",
        "--temperature",
        bounds={"minimum": 0, "maximum": 2},
        group="chat",
    ),
    _p(
        "max_tokens",
        "int",
        ChatConfig.max_tokens,
        "answers: most tokens per reply",
        "--max-tokens",
        bounds={"minimum": 1, "maximum": MAX_TOKENS},
        group="chat",
    ),
    _p(
        "repeats",
        "int",
        1,
        "answers: replies per question and condition (repeat r sent with seed + r)",
        "--repeats",
        bounds={"minimum": 1, "maximum": MAX_REPEATS},
        group="chat",
    ),
    _p(
        "questions",
        "str",
        "",
        "answers: question ids to replay, a comma list (e.g. H2 with --repeats 3); empty: all",
        "--questions",
        group="chat",
    ),
    _p(
        "chat_timeout",
        "float",
        ChatConfig.timeout,
        "answers: seconds a chat request may take, whole (a deadline, not a wait per read)",
        "--chat-timeout",
        notebook=False,
        bounds={"above": 0, "maximum": MAX_TIMEOUT},
        group="chat",
    ),
    _p(
        "chat_attempts",
        "int",
        ChatConfig.attempts,
        f"answers: tries per chat request, backoff {ChatConfig.backoff:g} s doubling",
        "--chat-attempts",
        notebook=False,
        bounds={"minimum": 1, "maximum": MAX_ATTEMPTS},
        group="chat",
    ),
    _p(
        "concurrency",
        "int",
        1,
        "answers: chat requests in flight at once, the replies' and the judge's (the same replies, "
        "verdicts and tables as at 1; the chat's times then include the server's sharing)",
        "--concurrency",
        bounds={"minimum": 1, "maximum": MAX_CONCURRENCY},
        group="chat",
    ),
    _p(
        "conditions",
        "str",
        "off,raw,today,tuned",
        "answers: conditions, a comma list of off (no memory), raw (the memories without "
        "instructions), today (the B block at the spec given), tuned (the B block at the sweep's choice)",
        "--conditions",
        group="chat",
        short="answers: conditions, a comma list",
    ),
    _p(
        "judge_url",
        "str",
        "",
        "answers: the LLM judge's endpoint (OpenAI-compatible); empty: the chat endpoint",
        "--judge-url",
        group="chat",
    ),
    _p(
        "judge_model",
        "str",
        "",
        "answers: model asked of the judge's server; empty: the chat model on the chat endpoint, "
        "else the first one the judge's server lists",
        "--judge-model",
        group="chat",
    ),
    _p(
        "judge_api_key_env",
        "str",
        "",
        "answers: environment variable holding the judge server's API key (never recorded)",
        "--judge-api-key-env",
        notebook=False,
        group="chat",
    ),
    _p(
        "judge_format",
        "str",
        "text",
        "answers: how the judge answers: text (YES or NO on its first line, any server), json-object "
        "(a JSON verdict the server constrains, llama.cpp's servers) or json-schema (the same as "
        "OpenAI's json_schema: OpenAI, vLLM, Ollama)",
        "--judge-format",
        choices=_judge_formats,
        group="chat",
    ),
    _p(
        "llm_judge",
        "bool",
        True,
        "answers: skip the LLM judge (notebook 09: set llm_judge to False): only the checkable judge's "
        "phrases and the token F1 score the replies; by default the LLM judge is asked too",
        "--no-llm-judge",
        group="chat",
    ),
    _p(
        "store",
        "str",
        "local",
        "answers: where the store's query is timed: local (Qdrant's local mode) or edge (Qdrant's own "
        "engine, qdrant-edge-py)",
        "--store",
        choices=_stores,
        group="chat",
    ),
)
