"""Criteria as declared records, checked by small kernels over arrays.

A criterion is data: ``Criterion(name, kind, question)``. Its kind names a kernel in
``CRITERION_KINDS``. Kernels take per-question summaries whose last axis is the question and
whose leading axes (if any) are configurations, so one config and a whole sweep use the same code.

The seed's conditions are the defaults:
- ``a`` (nohit_below): every no-hit question's best post-bonus candidate score stays below the
  threshold, so nothing is injected into an unrelated conversation;
- ``b`` (current_reaches, C1): C1's current memory (café au lait, Sep 1) reaches the threshold;
- ``c`` (current_reaches, H2): H2's current memory (the article, Sep 9) reaches the threshold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from memlab.core.errors import InputError
from memlab.core.registry import unknown_message


class QuestionSummary(NamedTuple):
    """Per-question facts a criterion can look at; arrays shaped (..., questions)."""

    best_final: np.ndarray  # best post-bonus score among the candidates (NaN: no candidate)
    current_final: np.ndarray  # post-bonus score of the current memory if it is a candidate, else NaN
    current_injected: np.ndarray  # bool: the current memory is injected


@dataclass(frozen=True)
class Criterion:
    name: str
    kind: str
    question: str | None = None  # None: every question the kind applies to
    description: str = ""

    def __post_init__(self) -> None:
        if self.kind not in CRITERION_KINDS:
            raise InputError(
                f"criterion {self.name!r}: {unknown_message('kind', [self.kind], CRITERION_KINDS)}"
            )
        if CRITERION_KINDS[self.kind].needs_question and self.question is None:
            raise InputError(f"criterion {self.name!r} of kind {self.kind!r} needs a question")


def nohit_max(best_final: np.ndarray, nohit: np.ndarray) -> np.ndarray:
    """Best post-bonus score over the no-hit questions; -inf when none has a candidate."""
    masked = np.where(nohit & ~np.isnan(best_final), best_final, -np.inf)
    return masked.max(axis=-1)


def headroom(best_final: np.ndarray, nohit: np.ndarray, threshold: np.ndarray | float) -> np.ndarray:
    """Threshold minus the best post-bonus score over the no-hit questions (> 0: nothing leaks)."""
    return threshold - nohit_max(best_final, nohit)


def _nohit_below(s: QuestionSummary, cols: np.ndarray, threshold) -> tuple[np.ndarray, np.ndarray]:
    value = nohit_max(s.best_final, cols)
    return value, value < threshold


def _current_reaches(s: QuestionSummary, cols: np.ndarray, threshold) -> tuple[np.ndarray, np.ndarray]:
    value = s.current_final[..., cols.argmax()]
    return value, np.nan_to_num(value, nan=-np.inf) >= threshold


def _current_injected(s: QuestionSummary, cols: np.ndarray, threshold) -> tuple[np.ndarray, np.ndarray]:
    q = cols.argmax()
    return s.current_final[..., q], s.current_injected[..., q]


def _below_margin(value: np.ndarray, passed: np.ndarray, threshold) -> np.ndarray:
    """How far the value stays under the threshold (+inf when nothing was retrieved)."""
    return threshold - value


def _above_margin(value: np.ndarray, passed: np.ndarray, threshold) -> np.ndarray:
    """How far the value clears the threshold (-inf when the memory is not a candidate). A check
    that fails for another reason (ranked below `inject`) has margin 0 at most: never positive."""
    margin = np.nan_to_num(value, nan=-np.inf) - threshold
    return np.where(passed, margin, np.minimum(margin, 0.0))


@dataclass(frozen=True)
class CriterionKind:
    kernel: Callable[[QuestionSummary, np.ndarray, object], tuple[np.ndarray, np.ndarray]]
    needs_question: bool
    applies_to: str | None  # question kind selected when no question is named
    meaning: str
    # signed distance of the value from the threshold, positive on the passing side
    margin: Callable[[np.ndarray, np.ndarray, object], np.ndarray] = _above_margin


CRITERION_KINDS: dict[str, CriterionKind] = {
    "nohit_below": CriterionKind(
        _nohit_below,
        False,
        "nohit",
        "best post-bonus score over the no-hit questions stays below the threshold",
        _below_margin,
    ),
    "current_reaches": CriterionKind(
        _current_reaches, True, None, "the question's current memory reaches the threshold"
    ),
    "current_injected": CriterionKind(
        _current_injected,
        True,
        None,
        "the question's current memory reaches the threshold and is among the first `inject`",
    ),
}

SEED_CRITERIA: tuple[Criterion, ...] = (
    Criterion("a", "nohit_below", None, "no memory reaches the threshold on a no-hit question"),
    Criterion("b", "current_reaches", "C1", "C1's current memory (café au lait) reaches the threshold"),
    Criterion("c", "current_reaches", "H2", "H2's current memory (the article) reaches the threshold"),
)


def generic_criteria(
    question_ids: tuple[str, ...], kinds: tuple[str, ...], has_current
) -> tuple[Criterion, ...]:
    """For a dataset that declares none: nothing leaks into no-hit questions, and every current
    memory reaches the threshold."""
    out = []
    if "nohit" in kinds:
        out.append(
            Criterion("nohit", "nohit_below", None, "no memory reaches the threshold on a no-hit question")
        )
    for qid, has in zip(question_ids, has_current, strict=True):
        if has:
            out.append(
                Criterion(
                    f"current_{qid}", "current_reaches", qid, f"{qid}'s current memory reaches the threshold"
                )
            )
    return tuple(out)


def dataset_criteria(dataset) -> tuple[Criterion, ...]:
    """The criteria a dataset declares in dataset.json, else ``generic_criteria``."""
    if dataset.criteria:
        return dataset.criteria
    return generic_criteria(
        dataset.question_ids,
        tuple(q.kind for q in dataset.questions),
        [q.current is not None for q in dataset.questions],
    )


def question_mask(criterion: Criterion, question_ids: tuple[str, ...], kinds: tuple[str, ...]) -> np.ndarray:
    """Which questions (columns) a criterion looks at."""
    if criterion.question is not None:
        if criterion.question not in question_ids:
            raise InputError(
                f"criterion {criterion.name!r} names question {criterion.question!r}, "
                f"which is not in the dataset ({', '.join(question_ids)})"
            )
        return np.array([q == criterion.question for q in question_ids])
    wanted = CRITERION_KINDS[criterion.kind].applies_to
    return np.array([k == wanted for k in kinds])


def check(
    criteria: tuple[Criterion, ...],
    summary: QuestionSummary,
    question_ids: tuple[str, ...],
    kinds: tuple[str, ...],
    threshold: np.ndarray | float,
) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """name -> (value, pass, margin) per criterion, shaped like the summary's leading axes."""
    names = [c.name for c in criteria]
    if len(set(names)) != len(names):
        raise InputError(f"criterion names must be unique, got {names}")
    out = {}
    for c in criteria:
        cols = question_mask(c, question_ids, kinds)
        kind = CRITERION_KINDS[c.kind]
        value, passed = kind.kernel(summary, cols, threshold)
        out[c.name] = (value, passed, kind.margin(value, passed, threshold))
    return out
