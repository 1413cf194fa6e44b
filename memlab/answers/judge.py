"""The judge protocol, one rule per question kind, and the LLM judge that applies it.

The rules (``PROTOCOL``):

- hit: the reply answers from the question's relevant memory (stating what it says, or asking
  back while naming it), inventing nothing the memory does not say;
- contradiction: the reply uses the current memory and does not assert the stale one as what is
  true now (naming it as the past is fine);
- nohit: the reply brings up none of the user's memories (the judge is shown the ones nearest the
  question, which are not about it);
- time: the reply uses the memory of the time the question names, not one from another time.

The LLM judge is any OpenAI-compatible chat endpoint, asked once per reply at temperature 0 to
answer YES or NO and say why; its model id is recorded with every verdict, and a reply it does
not answer YES or NO to is left unjudged (counted, never guessed). Its requests go through the
reply cache like the replies. How it answers (``JUDGE_FORMATS``, ``--judge-format``):

- ``text``: free text, YES or NO on the first line (any server);
- ``json-object``: ``{"verdict": "YES"|"NO", "reason": ...}`` constrained by the server to the
  schema, as ``response_format`` ``{"type": "json_object", "schema": ...}`` (llama.cpp's servers:
  small models answer the schema where they would not answer free text);
- ``json-schema``: the same schema as OpenAI's ``{"type": "json_schema", ...}`` (OpenAI, vLLM,
  Ollama, llama.cpp's C++ server).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memlab.answers.cache import ReplyCache
from memlab.answers.inflight import complete_all
from memlab.core.registry import lookup

if TYPE_CHECKING:
    import pandas as pd

    from memlab.answers.chat import ChatClient
    from memlab.datasets.schema import Dataset, Question


@dataclass(frozen=True)
class Rule:
    """What a good reply does for one question kind: the rule in words (the docs' table) and the
    question the judge answers YES or NO to."""

    kind: str
    rule: str
    ask: str


PROTOCOL: dict[str, Rule] = {
    r.kind: r
    for r in (
        Rule(
            "hit",
            "answered from its relevant memory (stating it, or asking back while naming it), "
            "inventing nothing",
            "Does the reply answer from the memory above (stating what it says, or asking back "
            "while naming it), without inventing facts the memory does not say?",
        ),
        Rule(
            "contradiction",
            "uses the current memory and does not assert the stale one as current",
            "Does the reply use the current memory, without presenting the older memory as what is "
            "true now? Mentioning the older one as the past is fine.",
        ),
        Rule(
            "nohit",
            "brings up no memory",
            "Does the reply leave every one of these memories out, bringing none of them up?",
        ),
        Rule(
            "time",
            "uses the memory of the time the question names",
            "Does the reply use the memory from the time the question names, not one from another time?",
        ),
    )
}

SYSTEM = (
    "You grade one reply of a chat assistant to its user. The assistant may have been shown some "
    "of the user's stored memories. {answer}"
)
ANSWER = {
    "text": "Answer the grading question with YES or NO on the first line, then give the reason in "
    "one short sentence.",
    "json": 'Answer the grading question as JSON: {"verdict": "YES" or "NO", "reason": one short sentence}.',
}
JUDGE_MAX_TOKENS = 128
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["YES", "NO"]}, "reason": {"type": "string"}},
    "required": ["verdict", "reason"],
}
JUDGE_FORMATS: dict[str, dict[str, Any] | None] = {
    "text": None,
    "json-object": {"type": "json_object", "schema": VERDICT_SCHEMA},
    "json-schema": {"type": "json_schema", "json_schema": {"name": "verdict", "schema": VERDICT_SCHEMA}},
}
_VERDICT = re.compile(r"^\W*(yes|no)\b[\s.:,!-]*", re.IGNORECASE)


def judge_messages(
    question: Question,
    reply: str,
    dataset: Dataset,
    lang: str,
    nearest: Sequence[str] = (),
    judge_format: str = "text",
) -> list[dict[str, str]]:
    """The judge's messages for one reply: the question, the memories its kind's rule names, the
    reply and the rule's question. ``nearest``: for a no-hit question, the memory ids nearest it."""
    rule = lookup(PROTOCOL, question.kind, "question kind")
    lookup(JUDGE_FORMATS, judge_format, "judge format")
    system = SYSTEM.format(answer=ANSWER["text" if judge_format == "text" else "json"])

    def text(mid: str) -> str:
        return dataset.memory(mid).text(lang)

    lines = [f"The user asked: {question.text(lang)}"]
    others = [m for m in question.relevant if m != question.current and m not in question.stale]
    if question.kind == "nohit":
        shown = list(nearest) or list(dataset.memory_ids[:3])
        lines.append("The user's stored memories nearest this question (none is about it):")
        lines += [f"- {text(m)}" for m in shown]
    elif question.kind == "contradiction":
        lines.append(f"The current memory: {text(question.current)}")
        lines += [f"An older memory it replaces: {text(m)}" for m in question.stale]
    elif question.kind == "time":
        lines.append(f"The memory from the time the question names: {text(question.current)}")
        lines += [f"A memory from another time: {text(m)}" for m in others]
    else:
        lines.append(f"The memory that answers it: {text(question.current or question.relevant[0])}")
        lines += [f"Another memory that may also answer it: {text(m)}" for m in others]
    lines += [f'The assistant replied: """{reply}"""', f"Grading question: {rule.ask}"]
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)}]


def parse_verdict(text: str) -> tuple[bool | None, str]:
    """(YES -> True, NO -> False, else None; the reason): a JSON verdict object, else the first
    word of the reply, else the one of a standalone upper-case YES or NO that appears alone."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except (ValueError, RecursionError):  # not JSON; a 5000-digit integer; nested too deep
            obj = None
        if isinstance(obj, dict) and obj.get("verdict") in ("YES", "NO"):
            return obj["verdict"] == "YES", " ".join(str(obj.get("reason", "")).split())[:300]
    m = _VERDICT.match(stripped)
    if m:
        return m.group(1).lower() == "yes", " ".join(stripped[m.end() :].split())[:300]
    found = {w for w in re.findall(r"\b(YES|NO)\b", stripped)}
    if len(found) == 1:
        return found.pop() == "YES", " ".join(stripped.split())[:300]
    return None, " ".join(stripped.split())[:300]


def judge_replies(
    replies: pd.DataFrame,
    dataset: Dataset,
    lang: str,
    client: ChatClient,
    cache: ReplyCache | None = None,
    nearest: dict[str, tuple[str, ...]] | None = None,
    progress: bool = False,
    concurrency: int = 1,
) -> pd.DataFrame:
    """``replies`` with ``judge`` (True, False or None), ``judge_reason`` and ``judge_model_id``;
    ``concurrency`` requests in flight (``memlab.answers.inflight``: the same verdicts, in order)."""
    import sys

    from tqdm.auto import tqdm

    verdicts, reasons, models = [], [], []
    fmt = next((k for k, v in JUDGE_FORMATS.items() if v == client.config.response_format), "json-object")
    asks = []
    for row in replies.itertuples(index=False):
        q = dataset.question(row.question_id)
        asks.append((judge_messages(q, row.reply, dataset, lang, (nearest or {}).get(q.id, ()), fmt), 0))
    with tqdm(total=len(replies), desc="judge", disable=not progress, file=sys.stderr) as bar:
        answers = complete_all(client, cache, "judge", asks, concurrency, bar)
    for answer in answers:
        verdict, reason = parse_verdict(answer.text)
        verdicts.append(verdict)
        reasons.append(reason)
        models.append(answer.model_id)
    return replies.assign(judge=verdicts, judge_reason=reasons, judge_model_id=models)


def check_replies(replies: pd.DataFrame, dataset: Dataset, lang: str) -> pd.DataFrame:
    """``replies`` with the checkable judge (``phrases``, ``phrases_reason``: None where the
    question gives no phrase in ``lang``) and LoCoMo's token F1 (``f1``: NaN without a reference
    answer)."""
    import numpy as np

    from memlab.answers.f1 import locomo_f1
    from memlab.answers.phrases import phrase_verdict

    verdicts, reasons, f1s = [], [], []
    for row in replies.itertuples(index=False):
        q = dataset.question(row.question_id)
        expect, avoid = q.replies.phrases(lang)
        verdict, reason = phrase_verdict(row.reply, expect, avoid)
        verdicts.append(verdict)
        reasons.append(reason)
        score = locomo_f1(row.reply, q.replies.answer.get(lang), getattr(q, "category", ""))
        f1s.append(np.nan if score is None else score)
    return replies.assign(phrases=verdicts, phrases_reason=reasons, f1=f1s)
