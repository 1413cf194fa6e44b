"""Evaluate one spec on a dataset: per-question candidates, criteria verdicts and headroom.

``evaluate`` runs the one-config reference (``memlab.core.spec.retrieve``) for every question and
checks the declared criteria; ``candidate_table`` does that for a list of (bonus, tau) pairs and
applies a selection rule, reproducing the seed's four-candidate table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core import criteria as crit
from memlab.core.errors import InputError, UnknownNameError
from memlab.core.selection import select
from memlab.core.shards import Pool, narrow
from memlab.core.spec import Candidate, RetrievalSpec, check_mmr, retrieve
from memlab.datasets.schema import Dataset
from memlab.scores.problem import RetrievalProblem
from memlab.scores.sources import ScoreTable

if TYPE_CHECKING:
    import pandas as pd

# The seed's four hand-picked (bonus, tau_days) candidates.
SEED_CANDIDATES: tuple[tuple[float, float], ...] = ((0.03, 30), (0.04, 30), (0.04, 14), (0.05, 14))


# the kinds whose injections outside the labels count as wrong (the sweep's WRONG_KINDS)
WRONG_KINDS = ("hit", "contradiction")


@dataclass(frozen=True)
class QuestionResult:
    question_id: str
    kind: str
    text: str
    candidates: tuple[Candidate, ...]
    stale: tuple[str, ...] = ()  # memory ids labelled stale for the question
    labelled: tuple[str, ...] = ()  # memory ids labelled for it at all (relevant, current, stale)

    @property
    def injected(self) -> tuple[Candidate, ...]:
        return tuple(c for c in self.candidates if c.injected)

    @property
    def stale_injected(self) -> tuple[str, ...]:
        """Injected memories labelled stale for this question, in injection order."""
        return tuple(c.memory_id for c in self.injected if c.memory_id in self.stale)

    @property
    def wrong_injected(self) -> tuple[str, ...]:
        """Injected memories outside the question's labels, on hit and contradiction questions."""
        if self.kind not in WRONG_KINDS:
            return ()
        return tuple(c.memory_id for c in self.injected if c.memory_id not in self.labelled)


@dataclass(frozen=True)
class CriterionResult:
    name: str
    kind: str
    question: str | None
    value: float | None  # None: nothing to measure (e.g. no no-hit question has a candidate)
    passed: bool
    description: str
    margin: float | None = None  # signed distance from the threshold, positive when passing


@dataclass(frozen=True)
class Evaluation:
    spec: RetrievalSpec
    source: str
    lang: str
    results: tuple[QuestionResult, ...]
    criteria: tuple[CriterionResult, ...]
    headroom: float | None
    details: dict[str, Any]

    @property
    def feasible(self) -> bool:
        return all(c.passed for c in self.criteria)

    def result(self, question_id: str) -> QuestionResult:
        for r in self.results:
            if r.question_id == question_id:
                return r
        raise UnknownNameError(f"no question {question_id!r}")

    def failing(self) -> list[str]:
        return [c.name for c in self.criteria if not c.passed]

    @property
    def stale_injected(self) -> int:
        """Stale memories injected, over every question (the failure a companion cannot afford)."""
        return sum(len(r.stale_injected) for r in self.results)

    @property
    def wrong_injected(self) -> int:
        """Memories injected on hit and contradiction questions that are not labelled for them."""
        return sum(len(r.wrong_injected) for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec.as_dict(),
            "source": {"name": self.source, "lang": self.lang, **self.details},
            "questions": [
                {
                    "id": r.question_id,
                    "kind": r.kind,
                    "text": r.text,
                    "candidates": [
                        {
                            "memory": c.memory_id,
                            "date": self.details["dates"][c.index],
                            "raw": c.raw,
                            "bonus": c.bonus,
                            "final": c.final,
                            "reaches": c.reaches,
                            "injected": c.injected,
                        }
                        for c in r.candidates
                    ],
                    "stale_injected": list(r.stale_injected),
                    "wrong_injected": list(r.wrong_injected),
                }
                for r in self.results
            ],
            "stale_injected": self.stale_injected,
            "wrong_injected": self.wrong_injected,
            "criteria": {
                c.name: {
                    "value": c.value,
                    "pass": c.passed,
                    "margin": c.margin,
                    "kind": c.kind,
                    "question": c.question,
                    "description": c.description,
                }
                for c in self.criteria
            },
            "headroom": self.headroom,
            "feasible": self.feasible,
        }


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def question_summary(dataset: Dataset, results: Sequence[QuestionResult]) -> crit.QuestionSummary:
    """One configuration's per-question facts, as the arrays the criterion kernels take."""
    best, current, injected = [], [], []
    stale_final, stale_inj, over, gap = [], [], [], []
    for q, r in zip(dataset.questions, results, strict=True):
        best.append(max((c.final for c in r.candidates), default=np.nan))
        hit = next((c for c in r.candidates if c.memory_id == q.current), None)
        current.append(np.nan if hit is None else hit.final)
        injected.append(hit is not None and hit.injected)
        stale = [c for c in r.candidates if c.memory_id in q.stale and c.memory_id != q.current]
        stale_final.append(max((c.final for c in stale), default=np.nan))
        inj = [c for c in stale if c.injected]
        stale_inj.append(bool(inj))
        # candidates are in injection order: an injected stale memory before the current one
        rank = {c.memory_id: i for i, c in enumerate(r.candidates)}
        cur_in = hit is not None and hit.injected
        over.append(any(not cur_in or rank[c.memory_id] < rank[q.current] for c in inj))
        if not inj:
            gap.append(np.inf)
        else:
            gap.append((hit.final if cur_in else -np.inf) - max(c.final for c in inj))
    return crit.QuestionSummary(
        np.array(best),
        np.array(current),
        np.array(injected),
        np.array([bool(set(q.stale) - {q.current}) for q in dataset.questions]),
        np.array(stale_final),
        np.array(stale_inj),
        np.array(over),
        np.array(gap),
    )


def evaluate(
    dataset: Dataset | RetrievalProblem,
    scores: ScoreTable | None = None,
    spec: RetrievalSpec | None = None,
    criteria: tuple[crit.Criterion, ...] | None = None,
    lang: str = "en",
    pool: Pool | None = None,
) -> Evaluation:
    """Run the reference retrieval for every question and check the criteria: of a retrieval
    problem (``evaluate(problem)``: its dataset, scores, spec, language and candidate pool), or
    of a dataset's scores under a spec (``pool``: the tenant filter and the shards)."""
    if isinstance(dataset, RetrievalProblem):
        problem = dataset
        dataset, scores, lang, pool = problem.dataset, problem.scores, problem.lang, problem.pool
        spec = spec or problem.spec
    if scores is None:
        raise InputError("evaluate: give a retrieval problem, or a dataset and its score table")
    spec = (spec or RetrievalSpec()).with_reference(dataset.reference_date)
    criteria = crit.dataset_criteria(dataset) if criteria is None else criteria
    if scores.memory_ids != dataset.memory_ids or scores.question_ids != dataset.question_ids:
        raise InputError("score table and dataset disagree on question or memory ids")
    ages = dataset.ages(spec.reference_date)  # per question: its own date, else the spec's
    raw = narrow(scores.retrievable(dataset, spec.reference_date), pool)
    vectors = None if scores.vectors is None else scores.vectors.memories  # for an MMR stage
    check_mmr(spec, vectors, pool)
    results = tuple(
        QuestionResult(
            q.id,
            q.kind,
            q.text(lang),
            tuple(retrieve(raw[i], ages[i], dataset.memory_ids, spec, pool, vectors)),
            tuple(q.stale),
            tuple(dict.fromkeys((*((q.current,) if q.current else ()), *q.stale, *q.relevant))),
        )
        for i, q in enumerate(dataset.questions)
    )
    summary = question_summary(dataset, results)
    kinds = tuple(q.kind for q in dataset.questions)
    verdicts = crit.check(criteria, summary, dataset.question_ids, kinds, spec.threshold)
    checked = tuple(
        CriterionResult(
            c.name,
            c.kind,
            c.question,
            _finite_or_none(float(verdicts[c.name][0])),
            bool(verdicts[c.name][1]),
            c.description,
            _finite_or_none(float(verdicts[c.name][2])),
        )
        for c in criteria
    )
    nohit = np.array([k == "nohit" for k in kinds])
    room = float(crit.headroom(summary.best_final, nohit, spec.threshold))
    dates = [m.date.date().isoformat() for m in dataset.memories]
    if pool is not None and pool.allowed is not None:  # another tenant's memories: not even a date
        dates = [d if kept else None for d, kept in zip(dates, pool.allowed, strict=True)]
    details = {**scores.model_record(), **scores.details, "dates": dates}
    return Evaluation(spec, scores.source, lang, results, checked, _finite_or_none(room), details)


def candidate_table(
    dataset: Dataset,
    scores: ScoreTable,
    pairs: Sequence[tuple[float, float]] = SEED_CANDIDATES,
    base: RetrievalSpec | None = None,
    criteria: tuple[crit.Criterion, ...] | None = None,
    rule: str = "smallest-bonus",
    lang: str = "en",
    pool: Pool | None = None,
) -> pd.DataFrame:
    """Evaluate each (bonus, tau_days) pair and mark the one the selection rule picks.

    One row per pair: bonus, tau_days, threshold, headroom, each criterion's value and pass,
    feasible, verdict ("fails (c)", "feasible", "adopted") and chosen.
    """
    import pandas as pd  # only the table needs it; keeps `memlab evaluate` start-up short

    base = base or RetrievalSpec()
    criteria = crit.dataset_criteria(dataset) if criteria is None else criteria
    rows = []
    for bonus, tau in pairs:
        ev = evaluate(dataset, scores, replace(base, bonus=bonus, tau_days=tau), criteria, lang, pool)
        row: dict[str, Any] = {
            "bonus": bonus,
            "tau_days": tau,
            "threshold": ev.spec.threshold,
            "headroom": ev.headroom,
        }
        for c in ev.criteria:
            row[f"{c.name}_value"] = c.value
            row[f"{c.name}_pass"] = c.passed
        margins = [c.margin for c in ev.criteria if c.margin is not None]
        row["min_margin"] = min(margins) if margins else float("inf")
        row["feasible"] = ev.feasible
        row["failing"] = ", ".join(ev.failing())
        rows.append(row)
    table = pd.DataFrame(rows)
    chosen = select(table, rule)
    table["chosen"] = [i == chosen for i in range(len(table))]
    table["verdict"] = [
        "adopted" if ch else ("feasible" if ok else f"fails ({why})")
        for ch, ok, why in zip(table["chosen"], table["feasible"], table["failing"], strict=True)
    ]
    return table.drop(columns="failing")
