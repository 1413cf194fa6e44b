"""Every question of a dataset replayed through a chat model under every condition, repeated.

``build_turns`` settles, per question and condition, the memories the condition's spec injects
(``memlab.tuning.evaluate``) and the messages sent (``memlab.output.prompt.chat_messages``): the
same ones ``memlab prompt --format messages`` prints. ``replay`` sends each turn ``repeats``
times (repeat r with seed + r) through the reply cache, ``concurrency`` requests in flight
(``memlab.answers.inflight``), and returns one row per reply, with the model id the server gave,
the temperature and the timings.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memlab.answers.cache import ReplyCache
from memlab.answers.inflight import check_concurrency, complete_all
from memlab.core.numbers import check_number, check_work
from memlab.output.prompt import chat_messages, memory_block

if TYPE_CHECKING:
    import pandas as pd

    from memlab.answers.chat import ChatClient
    from memlab.answers.conditions import Condition
    from memlab.scores.problem import RetrievalProblem
    from memlab.tuning.evaluate import Evaluation

MAX_REPEATS = 100  # replies per turn: enough for a rate's spread, far from a run that never ends
MAX_REQUESTS = 100_000  # chat requests of one replay (a second or more each: a day and more)


@dataclass(frozen=True)
class Turn:
    """One prompt: a question under a condition."""

    question_id: str
    kind: str
    question: str  # the question's words, in the problem's language
    condition: str
    injected: tuple[str, ...]  # the memory ids in the block, in injection order
    messages: tuple[dict[str, str], ...]

    @property
    def block(self) -> str:
        return self.messages[0]["content"] if self.messages[0]["role"] == "system" else ""


def evaluations(problem: RetrievalProblem, conditions: list[Condition]) -> dict[str, Evaluation]:
    """Per condition with a spec, the evaluation at that spec (each distinct spec evaluated once)."""
    from memlab.tuning.evaluate import evaluate

    by_spec: dict[object, Evaluation] = {}
    out = {}
    for c in conditions:
        if c.spec is None:
            continue
        if c.spec not in by_spec:
            by_spec[c.spec] = evaluate(problem.with_spec(c.spec))
        out[c.name] = by_spec[c.spec]
    return out


def build_turns(
    problem: RetrievalProblem, conditions: list[Condition], questions: tuple[str, ...] = ()
) -> list[Turn]:
    """Every question (or those named, each checked) under every condition, question by question
    in dataset order."""
    dataset, lang = problem.dataset, problem.lang
    chosen = {dataset.question(qid).id for qid in questions}
    evs = evaluations(problem, conditions)
    turns = []
    for q in dataset.questions:
        if chosen and q.id not in chosen:
            continue
        words = q.text(lang)
        for c in conditions:
            injected: tuple[str, ...] = ()
            block = ""
            if c.block is not None:
                ev = evs[c.name]
                injected = tuple(cand.memory_id for cand in ev.result(q.id).injected)
                block = memory_block(c.block, dataset, injected, ev.spec.reference_date, lang)
            messages = tuple(chat_messages(block, words))
            turns.append(Turn(q.id, q.kind, words, c.name, injected, messages))
    return turns


def replay(
    turns: list[Turn],
    client: ChatClient,
    cache: ReplyCache | None = None,
    repeats: int = 1,
    progress: bool | None = None,
    concurrency: int = 1,
) -> pd.DataFrame:
    """One row per turn and repeat: the reply, the server's model id, the seed, the temperature,
    the timings, and whether it came from the cache. ``concurrency``: requests in flight at once
    (``memlab.answers.inflight``: the same rows, in the same order)."""
    import pandas as pd
    from tqdm.auto import tqdm

    check_number(repeats, "--repeats", integer=True, minimum=1, maximum=MAX_REPEATS)
    check_concurrency(concurrency)
    check_work(
        len(turns) * repeats,
        "--repeats",
        MAX_REQUESTS,
        f"chat requests ({len(turns):,} turns x {repeats} repeats)",
        "each is one request to the chat server, a second or more",
    )
    progress = sys.stderr.isatty() if progress is None else progress
    rows = []
    cfg = client.config
    asks = [(list(t.messages), r) for t in turns for r in range(repeats)]
    total = len(asks)
    with tqdm(total=total, desc="replies", unit="reply", disable=not progress, file=sys.stderr) as bar:
        replies = iter(complete_all(client, cache, "reply", asks, concurrency, bar))
    for t in turns:
        for r in range(repeats):
            reply = next(replies)
            rows.append(
                {
                    "question_id": t.question_id,
                    "kind": t.kind,
                    "question": t.question,
                    "condition": t.condition,
                    "repeat": r,
                    "injected": ",".join(t.injected),
                    "block": t.block,
                    "reply": reply.text,
                    "model": client.model,
                    "model_id": reply.model_id,
                    "temperature": cfg.temperature,
                    "max_tokens": cfg.max_tokens,
                    "seed": cfg.seed + r,
                    "finish_reason": reply.finish_reason,
                    "ttft_s": reply.ttft_s,
                    "total_s": reply.total_s,
                    "completion_tokens": reply.completion_tokens,
                    "cached": reply.cached,
                }
            )
    return pd.DataFrame(rows)
