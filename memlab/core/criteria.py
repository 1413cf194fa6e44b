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
    """Per-question facts a criterion can look at; arrays shaped (..., questions).

    The stale fields are None when the caller has no stale labels to offer; the stale kinds then
    see no stale memory at all. Kernels read the facts through ``question``, ``max``, ``min`` and
    ``any`` (a reduction over the questions a criterion looks at), so the sweep can hand them a
    summary that computes each reduction without laying out one value per configuration and
    question (``memlab.core.sweep_facts.SweepSummary``; the tests hold the two equal).
    """

    best_final: np.ndarray  # best post-bonus score among the candidates (NaN: no candidate)
    current_final: np.ndarray  # post-bonus score of the current memory if it is a candidate, else NaN
    current_injected: np.ndarray  # bool: the current memory is injected
    has_stale: np.ndarray | None = None  # (questions,) bool: the question labels stale memories
    stale_final: np.ndarray | None = None  # best post-bonus score of a stale candidate (NaN: none)
    stale_injected: np.ndarray | None = None  # bool: a stale memory is injected
    # bool: an injected stale memory is ranked before the current one (or the current one is
    # not injected while a stale one is)
    stale_over_current: np.ndarray | None = None
    # current final minus the best injected stale final; +inf when no stale memory is injected,
    # -inf when one is and the current memory is not
    stale_gap: np.ndarray | None = None

    def question(self, field: str, q: int) -> np.ndarray:
        """One question's values of ``field``."""
        return np.asarray(getattr(self, field))[..., q]

    def max(self, field: str, cols: np.ndarray) -> np.ndarray:
        """The largest value of ``field`` over the questions in ``cols``, NaN ignored; -inf when
        there is none."""
        return masked_max(getattr(self, field), cols)

    def min(self, field: str, cols: np.ndarray) -> np.ndarray:
        """The smallest value of ``field`` over the questions in ``cols``; +inf when there is none."""
        return np.where(cols, getattr(self, field), np.inf).min(axis=-1, initial=np.inf)

    def any(self, field: str, cols: np.ndarray) -> np.ndarray:
        """Whether ``field`` holds for some question in ``cols``."""
        return np.any(np.asarray(getattr(self, field)) & cols, axis=-1)


# a criterion writes <name>_value, <name>_pass and <name>_margin; these names would collide with
# the sweep's own min_margin, margin_<question> and injected_<question|kind> columns
RESERVED_NAMES = ("min", "margin", "injected")


@dataclass(frozen=True)
class Criterion:
    name: str
    kind: str
    question: str | None = None  # None: every question the kind applies to
    description: str = ""

    def __post_init__(self) -> None:
        for field, value in (("name", self.name), ("kind", self.kind), ("question", self.question)):
            if not (isinstance(value, str) and value) and not (field == "question" and value is None):
                raise InputError(f"criterion {field}: expected text, got {value!r}")
        if self.name in RESERVED_NAMES:
            raise InputError(
                f"criterion {self.name!r}: reserved name (a sweep writes min_margin, margin_<id> and "
                "injected_<id> columns of its own): choose another"
            )
        if self.kind not in CRITERION_KINDS:
            raise InputError(
                f"criterion {self.name!r}: {unknown_message('kind', [self.kind], CRITERION_KINDS)}"
            )
        if CRITERION_KINDS[self.kind].needs_question and self.question is None:
            raise InputError(f"criterion {self.name!r} of kind {self.kind!r} needs a question")


def masked_max(values: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The largest value over the questions (last axis) in ``cols``, NaN ignored; -inf when none."""
    values = np.asarray(values)
    return np.where(cols & ~np.isnan(values), values, -np.inf).max(axis=-1, initial=-np.inf)


def nohit_max(best_final: np.ndarray, nohit: np.ndarray) -> np.ndarray:
    """Best post-bonus score over the no-hit questions; -inf when none has a candidate."""
    return masked_max(best_final, nohit)


def headroom(best_final: np.ndarray, nohit: np.ndarray, threshold: np.ndarray | float) -> np.ndarray:
    """Threshold minus the best post-bonus score over the no-hit questions (> 0: nothing leaks)."""
    return threshold - nohit_max(best_final, nohit)


def _nohit_below(s: QuestionSummary, cols: np.ndarray, threshold) -> tuple[np.ndarray, np.ndarray]:
    value = s.max("best_final", cols)
    return value, value < threshold


def _current_reaches(s: QuestionSummary, cols: np.ndarray, threshold) -> tuple[np.ndarray, np.ndarray]:
    value = s.question("current_final", int(cols.argmax()))
    return value, np.nan_to_num(value, nan=-np.inf) >= threshold


def _current_injected(s: QuestionSummary, cols: np.ndarray, threshold) -> tuple[np.ndarray, np.ndarray]:
    q = int(cols.argmax())
    return s.question("current_final", q), s.question("current_injected", q)


def _stale_columns(s: QuestionSummary, cols: np.ndarray) -> np.ndarray:
    if s.has_stale is None:
        return np.zeros_like(cols)
    return cols & np.asarray(s.has_stale, dtype=bool)


def _no_stale_injected(s: QuestionSummary, cols: np.ndarray, threshold) -> tuple[np.ndarray, np.ndarray]:
    """Value: the best post-bonus score of a stale candidate (-inf: none); passes when no stale
    memory is injected."""
    cols = _stale_columns(s, cols)
    if not cols.any():
        return np.float64(-np.inf), np.True_
    return s.max("stale_final", cols), ~s.any("stale_injected", cols)


def _current_above_stale(s: QuestionSummary, cols: np.ndarray, threshold) -> tuple[np.ndarray, np.ndarray]:
    """Value: the smallest gap from the current memory down to an injected stale one (+inf: no
    stale memory injected); passes when the current memory is ranked before every injected
    stale memory."""
    cols = _stale_columns(s, cols)
    if not cols.any():
        return np.float64(np.inf), np.True_
    return s.min("stale_gap", cols), ~s.any("stale_over_current", cols)


def _stale_margin(value: np.ndarray, passed: np.ndarray, threshold) -> np.ndarray:
    """How far the best stale candidate stays under the threshold; 0 when it reaches the threshold
    but is ranked out of the injected ones (passing on the rank alone), never positive on failure."""
    margin = threshold - value
    return np.where(passed, np.maximum(margin, 0.0), np.minimum(margin, 0.0))


def _gap_margin(value: np.ndarray, passed: np.ndarray, threshold) -> np.ndarray:
    """The score gap from the current memory down to the best injected stale one."""
    return np.where(passed, np.maximum(value, 0.0), np.minimum(value, 0.0))


def _below_margin(value: np.ndarray, passed: np.ndarray, threshold) -> np.ndarray:
    """How far the value stays under the threshold (+inf when nothing was retrieved)."""
    return threshold - value


def _reach_margin(value: np.ndarray, passed: np.ndarray, threshold) -> np.ndarray:
    """How far the value clears the threshold (-inf when the memory is not a candidate): the check
    passes exactly when this is >= 0, so it is already signed the right way (``_above_margin``
    without its clamp)."""
    return np.nan_to_num(value, nan=-np.inf) - threshold


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
    label: str = "value"  # what the criterion's value is, as a table column says it


CRITERION_KINDS: dict[str, CriterionKind] = {
    "nohit_below": CriterionKind(
        _nohit_below,
        False,
        "nohit",
        "best post-bonus score over the no-hit questions stays below the threshold",
        _below_margin,
        "no-hit max",
    ),
    "current_reaches": CriterionKind(
        _current_reaches,
        True,
        None,
        "the question's current memory reaches the threshold",
        _reach_margin,
        label="current",
    ),
    "current_injected": CriterionKind(
        _current_injected,
        True,
        None,
        "the question's current memory reaches the threshold and is among the first `inject`",
        label="current",
    ),
    "no_stale_injected": CriterionKind(
        _no_stale_injected,
        False,
        "*",
        "no memory labelled stale for the question is injected",
        _stale_margin,
        "best stale",
    ),
    "current_above_stale": CriterionKind(
        _current_above_stale,
        False,
        "*",
        "the current memory is injected and ranked before every injected stale memory",
        _gap_margin,
        "gap to stale",
    ),
}


def value_edge(kind: str, threshold: float) -> float:
    """What a criterion's value is checked against, as its margin measures it: 0 for a score gap
    (``current_above_stale``), the threshold for every other kind."""
    return 0.0 if CRITERION_KINDS[kind].margin is _gap_margin else threshold


SEED_CRITERIA: tuple[Criterion, ...] = (
    Criterion("a", "nohit_below", None, "no memory reaches the threshold on a no-hit question"),
    Criterion("b", "current_reaches", "C1", "C1's current memory (café au lait) reaches the threshold"),
    Criterion("c", "current_reaches", "H2", "H2's current memory (the article) reaches the threshold"),
)


def generic_criteria(
    question_ids: tuple[str, ...], kinds: tuple[str, ...], has_current, has_stale=None
) -> tuple[Criterion, ...]:
    """For a dataset that declares none: nothing leaks into no-hit questions, every current
    memory reaches the threshold, and, where questions label stale memories, no stale memory is
    injected and none is ranked before the current one. For a companion agent the stale
    injection is the failure that matters most."""
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
    if has_stale is not None and any(has_stale):
        out.append(
            Criterion("no_stale", "no_stale_injected", None, CRITERION_KINDS["no_stale_injected"].meaning)
        )
        out.append(
            Criterion(
                "current_first", "current_above_stale", None, CRITERION_KINDS["current_above_stale"].meaning
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
        [bool(q.stale) for q in dataset.questions],
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
    if wanted == "*":  # every question (the kernel keeps those it applies to)
        return np.ones(len(kinds), dtype=bool)
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
