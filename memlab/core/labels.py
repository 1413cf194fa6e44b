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
    # per question, memory indices labelled relevant; None: no relevance labels (nothing counts
    # as a wrong injection)
    relevant: tuple[tuple[int, ...], ...] | None = None

    def criteria(self) -> tuple[crit.Criterion, ...]:
        """``generic_criteria`` for these labels (used when none are given)."""
        return crit.generic_criteria(
            self.question_ids, self.kinds, self.current >= 0, [bool(s) for s in self.stale]
        )

    def labelled(self, q: int) -> tuple[int, ...]:
        """Memories labelled for question ``q`` (relevant, current, stale): an injected memory
        outside them is a wrong injection."""
        extra = () if self.relevant is None else self.relevant[q]
        own = (int(self.current[q]),) if self.current[q] >= 0 else ()
        return tuple(dict.fromkeys((*own, *self.stale[q], *extra)))

    @classmethod
    def from_dataset(cls, dataset) -> Labels:
        """Labels of a dataset (anything with ``memory_ids``, ``question_ids`` and ``questions``)."""
        index = {m: i for i, m in enumerate(dataset.memory_ids)}
        return cls(
            dataset.question_ids,
            tuple(q.kind for q in dataset.questions),
            np.array([index[q.current] if q.current else -1 for q in dataset.questions]),
            tuple(tuple(index[s] for s in q.stale) for q in dataset.questions),
            tuple(tuple(index[r] for r in q.relevant) for q in dataset.questions),
        )
