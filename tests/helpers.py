"""Building datasets from arrays, for property tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from memlab.core.criteria import Criterion
from memlab.core.spec import RetrievalSpec
from memlab.datasets.schema import Dataset, Memory, Question
from memlab.scores.problem import RetrievalProblem
from memlab.scores.sources import ScoreOptions, ScoreTable, Vectors

REF = datetime(2026, 9, 10, tzinfo=UTC)


def make_dataset(age_seconds, kinds, current, stale, asked_seconds_ago=None, relevant=None) -> Dataset:
    """Memories aged by whole seconds (the payload date's resolution) and labelled questions;
    ``relevant`` (per question, memory indices) defaults to the current and stale memories."""
    memories = tuple(
        Memory(f"m{i}", REF - timedelta(seconds=int(s)), {"en": f"memory {i}"}, "", "reconstructed")
        for i, s in enumerate(age_seconds)
    )
    questions = tuple(
        Question(
            f"q{j}",
            kind,
            {"en": f"question {j}"},
            current=None if current[j] < 0 else f"m{current[j]}",
            stale=tuple(f"m{s}" for s in stale[j]),
            relevant=tuple(
                f"m{m}"
                for m in (
                    relevant[j]
                    if relevant is not None
                    else (*((current[j],) if current[j] >= 0 else ()), *stale[j])
                )
            ),
            date=None if asked_seconds_ago is None else REF - timedelta(seconds=int(asked_seconds_ago[j])),
        )
        for j, kind in enumerate(kinds)
    )
    return Dataset("random", REF, ("en",), memories, questions)


def score_table(dataset: Dataset, raw: np.ndarray, vectors: Vectors | None = None) -> ScoreTable:
    return ScoreTable(
        dataset.question_ids, dataset.memory_ids, np.asarray(raw, dtype=np.float64), "test", vectors=vectors
    )


def problem_of(
    dataset: Dataset,
    spec: RetrievalSpec,
    raw: np.ndarray | None = None,
    *,
    memories: np.ndarray | None = None,
    questions: np.ndarray | None = None,
    lang: str = "en",
) -> RetrievalProblem:
    """A retrieval problem over given scores, or over given vectors (raw = questions . memories)."""
    vectors = None
    if memories is not None:
        questions = np.zeros((len(dataset.questions), memories.shape[1])) if questions is None else questions
        vectors = Vectors(memories, questions)
        raw = questions @ memories.T if raw is None else raw
    raw = np.zeros((len(dataset.questions), len(dataset.memories))) if raw is None else raw
    return RetrievalProblem.of(dataset, score_table(dataset, raw, vectors), spec, ScoreOptions(lang=lang))


def criteria_for(dataset: Dataset) -> tuple[Criterion, ...]:
    """Every kind of criterion the labels allow: no-hit, reaches/injected per current, and the
    stale kinds over every question and per question with stale labels."""
    out = [Criterion("nohit", "nohit_below")]
    for q in dataset.questions:
        if q.current:
            out.append(Criterion(f"reach_{q.id}", "current_reaches", q.id))
            out.append(Criterion(f"inj_{q.id}", "current_injected", q.id))
        if q.stale:
            out.append(Criterion(f"nostale_{q.id}", "no_stale_injected", q.id))
            out.append(Criterion(f"first_{q.id}", "current_above_stale", q.id))
    out.append(Criterion("nostale", "no_stale_injected"))
    out.append(Criterion("first", "current_above_stale"))
    return tuple(out)
