"""What the retrievers read, per question and memory: cosine, BM25, ages, named times, labels."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core import criteria as crit
from memlab.core.labels import Labels
from memlab.datasets.schema import Dataset
from memlab.datasets.timeparse import DateRange, parse_time

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class RetrievalInputs:
    """Everything the retrievers read, per question (Q) and memory (M)."""

    question_ids: tuple[str, ...]
    vector: np.ndarray  # (Q, M) cosine, NaN where not retrievable
    keyword: np.ndarray | None  # (Q, M) BM25, 0 = no shared term, NaN where not retrievable
    ages: np.ndarray  # (Q, M) days from the memory to when the question is asked, inf if later
    memory_dates: tuple[date, ...]  # (M,) calendar day of each memory
    time_ranges: tuple[DateRange | None, ...]  # (Q,) the time each question names, if any
    labels: Labels
    criteria: tuple[crit.Criterion, ...]
    meta: dict[str, Any] = field(default_factory=dict, compare=False)
    # (Q, W) the memory behind each column of a compacted question (-1: none), None: column j is
    # memory j; see ``compact``
    slots: np.ndarray | None = field(default=None, compare=False)

    @property
    def visible(self) -> np.ndarray:
        return np.isfinite(self.ages)

    def memory_days(self) -> np.ndarray:
        """Each column's calendar day as an ordinal: (M,), or (Q, W) when compacted."""
        days = np.array([d.toordinal() for d in self.memory_dates], dtype=np.int64)
        if self.slots is None:
            return days
        return np.where(self.slots >= 0, days[np.maximum(self.slots, 0)], 0)

    def memory_slots(self, long: pd.DataFrame) -> pd.DataFrame:
        """A one-configuration long frame (one row per question, in order) whose ``slot_j``
        columns name memories by their dataset index, not by this inputs' columns."""
        if self.slots is None:
            return long
        out = long.copy()
        rows = np.arange(len(long)) % len(self.question_ids)
        for name in [c for c in long.columns if c.startswith("slot_") and c[5:].isdigit()]:
            col = long[name].to_numpy(dtype=np.int64)
            out[name] = np.where(col >= 0, self.slots[rows, np.maximum(col, 0)], -1)
        return out


def compact(inputs: RetrievalInputs) -> RetrievalInputs:
    """The same inputs over each question's own columns: the memories it can see (its haystack,
    written by then) and those labelled for it, in dataset order, padded to the widest question
    with columns no path ranks (NaN scores, infinite ages). Every retriever, the sweep and the
    tie rule work along a question's row and break ties by column order, which is dataset order
    here too, so they choose the same memories (``memory_slots`` maps columns back); on a benchmark,
    where a question sees one conversation of ten, the tables are a tenth as wide."""
    if inputs.slots is not None:
        return inputs
    lab = inputs.labels
    keep = inputs.visible.copy()
    for q in range(len(inputs.question_ids)):
        keep[q, list(lab.labelled(q))] = True
    width = max(1, int(keep.sum(axis=1).max(initial=0)))
    order = np.argsort(~keep, axis=1, kind="stable")[:, :width]  # kept columns first, in order
    slots = np.where(np.take_along_axis(keep, order, axis=1), order, -1)
    safe = np.maximum(slots, 0)

    def gather(a: np.ndarray | None, empty: float) -> np.ndarray | None:
        if a is None:
            return None
        return np.where(slots >= 0, np.take_along_axis(np.asarray(a, dtype=np.float64), safe, axis=1), empty)

    def column(q: int, m: int) -> int:
        return int(np.searchsorted(slots[q, : int((slots[q] >= 0).sum())], m))

    labels = Labels(
        lab.question_ids,
        lab.kinds,
        np.array([column(q, int(m)) if m >= 0 else -1 for q, m in enumerate(lab.current)], dtype=np.int64),
        tuple(tuple(column(q, m) for m in stale) for q, stale in enumerate(lab.stale)),
        None
        if lab.relevant is None
        else tuple(tuple(column(q, m) for m in r) for q, r in enumerate(lab.relevant)),
    )
    return replace(
        inputs,
        vector=gather(inputs.vector, np.nan),
        keyword=gather(inputs.keyword, np.nan),
        ages=gather(inputs.ages, np.inf),
        labels=labels,
        slots=slots,
    )


def question_time_ranges(dataset: Dataset, lang: str, explicit: dict[str, DateRange] | None = None):
    """Each question's time range. An explicit one skips the parser: ``explicit[qid]`` (what an
    application's tool call passes), else the question's own ``time_range`` field; otherwise
    ``parse_time`` on the question's text, relative to when it is asked."""
    explicit = explicit or {}
    out = []
    for q in dataset.questions:
        if q.id in explicit:
            out.append(explicit[q.id])
        elif q.time_range is not None:
            out.append(DateRange(*q.time_range, "time_range"))
        else:
            out.append(parse_time(q.text(lang), (q.date or dataset.reference_date).date()))
    return tuple(out)


def visible_keyword_scores(dataset: Dataset, lang: str, visible: np.ndarray | None = None) -> np.ndarray:
    """BM25 of every memory for every question, (Q, M), NaN where not retrievable. A question
    asked before some memories were written is scored against an index of only the memories it
    can see, so later memories change neither its term statistics (IDF, mean length) nor its
    candidates; ``visible`` (Q, M): what each question sees (default: ``dataset.visible()``)."""
    from memlab.retrieval.keyword import KeywordIndex

    visible = dataset.visible() if visible is None else visible
    texts = [m.text(lang) for m in dataset.memories]
    out = np.full(visible.shape, np.nan)
    masks: dict[bytes, list[int]] = {}
    for q in range(len(dataset.questions)):
        masks.setdefault(visible[q].tobytes(), []).append(q)
    for rows in masks.values():
        seen = np.flatnonzero(visible[rows[0]])
        if seen.size == 0:
            continue
        index = KeywordIndex.build([texts[i] for i in seen], lang)
        scores = index.scores([dataset.questions[q].text(lang) for q in rows])
        out[np.ix_(rows, seen)] = scores
    return out


def build_inputs(
    dataset: Dataset,
    vector: np.ndarray,
    *,
    lang: str = "en",
    time_ranges: dict[str, DateRange] | None = None,
    criteria: tuple[crit.Criterion, ...] | None = None,
    keyword: bool = True,
    allowed: np.ndarray | None = None,
) -> RetrievalInputs:
    """Inputs for a dataset: ``vector`` is its (Q, M) cosine table (from any score source); BM25
    is computed here over the memory texts in ``lang`` (``keyword=False`` skips it, for the
    vector-only retrievers, e.g. in a language without a keyword tokenizer). ``allowed`` (M,):
    the memories a tenant filter keeps (None: all); the others are as if never written, for
    every route: the keyword index holds the tenant's memories only."""
    visible = dataset.visible()
    ages = dataset.ages()
    if allowed is not None:
        visible = visible & allowed
        ages = np.where(allowed, ages, np.inf)
    return RetrievalInputs(
        dataset.question_ids,
        np.where(visible, np.asarray(vector, dtype=np.float64), np.nan),
        visible_keyword_scores(dataset, lang, visible) if keyword else None,
        ages,
        tuple(m.date.date() for m in dataset.memories),
        question_time_ranges(dataset, lang, time_ranges),
        Labels.from_dataset(dataset),
        crit.dataset_criteria(dataset) if criteria is None else criteria,
        {"dataset": dataset.name, "lang": lang},
    )
