"""What the criteria know about each question: its kind, its current and its stale memories."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memlab.core import criteria as crit

# time: the question names a time ("yesterday", 8月20日) and its current memory is the one from
# then; ``stale`` lists same-topic memories from outside that time (the wrong day's lunch).
QUESTION_KINDS = ("hit", "contradiction", "nohit", "time")


@dataclass(frozen=True)
class Labels:
    """What the criteria need to know about each question, as arrays over memory indices."""

    question_ids: tuple[str, ...]
    kinds: tuple[str, ...]
    current: np.ndarray  # (Q,) memory index of the current memory, -1 if none
    stale: tuple[tuple[int, ...], ...]  # per question, memory indices of stale memories

    def criteria(self) -> tuple[crit.Criterion, ...]:
        """``generic_criteria`` for these labels (used when none are given)."""
        return crit.generic_criteria(self.question_ids, self.kinds, self.current >= 0)

    @classmethod
    def from_dataset(cls, dataset) -> Labels:
        """Labels of a dataset (anything with ``memory_ids``, ``question_ids`` and ``questions``)."""
        index = {m: i for i, m in enumerate(dataset.memory_ids)}
        return cls(
            dataset.question_ids,
            tuple(q.kind for q in dataset.questions),
            np.array([index[q.current] if q.current else -1 for q in dataset.questions]),
            tuple(tuple(index[s] for s in q.stale) for q in dataset.questions),
        )
