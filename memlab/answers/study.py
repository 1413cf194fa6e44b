"""The whole answer study in one call: the turns, the replies, both judges, the rates and the
time per turn. ``memlab answer`` and notebook 09 run it alike."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memlab.answers.cache import ReplyCache
from memlab.answers.inflight import check_concurrency
from memlab.answers.judge import check_replies, judge_replies
from memlab.answers.rates import rates
from memlab.answers.replay import build_turns, replay
from memlab.answers.timing import embedding_times, store_times, timing_table, turn_times
from memlab.core.errors import MemlabError
from memlab.core.numbers import check_fits, check_number

if TYPE_CHECKING:
    import pandas as pd

    from memlab.answers.chat import ChatClient
    from memlab.answers.conditions import Condition
    from memlab.scores.problem import RetrievalProblem

NEAREST = 3  # memories shown to the judge of a no-hit question


@dataclass
class AnswerStudy:
    """What the study measured: the replies with their verdicts, the rates, the time per turn."""

    conditions: list[Condition]
    replies: pd.DataFrame  # one row per question, condition and repeat, with the verdicts
    rates: pd.DataFrame  # condition, kind, score, questions, replies, unscored, rate, lo, hi
    times: pd.DataFrame  # condition, step, seconds (one row per measurement)
    timing: pd.DataFrame  # condition, step, n, median_s, p95_s, min_s, max_s
    chat_model: str = ""  # the model asked for
    judge_model: str = ""
    notes: list[str] = field(default_factory=list)  # what could not be measured, and why

    @property
    def model_ids(self) -> list[str]:
        return sorted(set(self.replies["model_id"]))

    @property
    def judge_model_ids(self) -> list[str]:
        if "judge_model_id" not in self.replies:
            return []
        return sorted(set(self.replies["judge_model_id"]))


def concurrency_note(concurrency: int) -> str:
    """How the chat's times were measured: one request at a time, or side by side."""
    if concurrency == 1:
        return (
            "chat times measured one request at a time (--concurrency 1): each from its own send, "
            "a single user's turn"
        )
    return (
        f"chat times measured with up to {concurrency} requests in flight (--concurrency "
        f"{concurrency}): each from its own send (memlab's queue left out), but the server shared "
        "its time among them, so they are longer than one user's turn; --concurrency 1 times a "
        "single user's turn"
    )


def cached_note(replies: pd.DataFrame) -> str | None:
    """Which chat times this run did not measure: a cached reply keeps its first run's."""
    n = int(replies["cached"].sum())
    if not n:
        return None
    return (
        f"{n} of {len(replies)} replies read from the cache: their chat times are those of the run "
        "that first sent them, at whatever concurrency that was"
    )


def nearest_memories(problem: RetrievalProblem, k: int = NEAREST) -> dict[str, tuple[str, ...]]:
    """Per question, the ``k`` memories nearest it at today's spec (after the re-sort)."""
    from memlab.tuning.evaluate import evaluate

    ev = evaluate(problem)
    return {r.question_id: tuple(c.memory_id for c in r.candidates[:k]) for r in ev.results}


def answer_study(
    problem: RetrievalProblem,
    conditions: list[Condition],
    chat: ChatClient,
    judge: ChatClient | None = None,
    cache: ReplyCache | None = None,
    *,
    repeats: int = 1,
    questions: tuple[str, ...] = (),
    store: str = "local",
    boot: int = 1000,
    seed: int = 0,
    timing: bool = True,
    progress: bool | None = None,
    concurrency: int = 1,
) -> AnswerStudy:
    """Replay, judge (the LLM judge when ``judge`` is given; the phrases and F1 always), rate,
    time. ``concurrency``: chat requests in flight at once, the replies' and the judge's (the same
    replies, verdicts and rates as one at a time)."""
    check_concurrency(concurrency)
    # the rates' resamples, checked before any chat request: a bad --boot once surfaced only after
    # every reply had been asked and judged
    check_number(boot, "--boot", integer=True, minimum=1)
    check_fits(boot, "--boot", 16 * max(len(problem.dataset.questions), 1), "bootstrap resamples")
    progress = sys.stderr.isatty() if progress is None else progress
    turns = build_turns(problem, conditions, questions)
    replies = replay(turns, chat, cache, repeats, progress, concurrency)
    replies = check_replies(replies, problem.dataset, problem.lang)
    if judge is not None:
        near = nearest_memories(problem)
        replies = judge_replies(
            replies, problem.dataset, problem.lang, judge, cache, near, progress, concurrency
        )
    order = [c.name for c in conditions]
    table = rates(replies, boot, seed, order=order)
    notes = [concurrency_note(concurrency)]
    if (cached := cached_note(replies)) is not None:
        notes.append(cached)
    embedding = queries = None
    if timing and any(c.spec is not None for c in conditions):
        try:
            embedding = embedding_times(problem)
            queries = store_times(problem, conditions, store)
        except MemlabError as e:  # published scores: no model, no vectors
            notes.append(f"question embedding and store query not timed: {e}")
    times = turn_times(replies, conditions, embedding, queries)
    return AnswerStudy(
        conditions,
        replies,
        table,
        times,
        timing_table(times),
        chat.model,
        judge.model if judge is not None else "",
        notes,
    )
