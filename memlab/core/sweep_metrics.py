"""The sweep's output columns: the metric groups (``METRICS``, one registry entry each), the
per-chunk facts they read (``ChunkFacts``), and the sums over questions and tracked memories
they count (``Counts``: memories injected per question kind, current, stale and wrong ones, one
kernel call for all of a chunk's groups)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memlab.core.labels import QUESTION_KINDS, Labels
from memlab.core.registry import check_names
from memlab.core.sweep_facts import SweepSummary

WRONG_KINDS = ("hit", "contradiction")  # the kinds whose injections outside the labels are wrong


class Counts:
    """The chunk's sums over questions and tracked memories (memories injected per question
    kind, stale ones, wrong ones), counted together in one call when a metric first asks."""

    def __init__(self, prep, labels, facts, thresholds, inject, kernels, metrics: tuple[str, ...]) -> None:
        self.prep, self.labels, self.facts = prep, labels, facts
        self.thresholds, self.inject, self.kernels = thresholds, inject, kernels
        self.groups = [g for m in metrics for g in COUNTED.get(m, ())]
        self.done: dict[str, np.ndarray] = {}

    def _weights(self, group: str) -> tuple[np.ndarray, np.ndarray]:
        """(per question, per tracked memory) weights of one group."""
        kinds = np.asarray(self.labels.kinds)
        wq = np.zeros(len(kinds), dtype=np.int64)
        wl = np.zeros(len(self.prep.tracked_q) + 1, dtype=np.int64)  # the last: the empty memory
        if group in QUESTION_KINDS:
            wq[kinds == group] = 1
        elif group == "stale":
            wl[self.prep.stale_l] = 1
        elif group == "current":  # each question's current memory, when it has one
            wl[self.prep.current_l[self.prep.current_l >= 0]] = 1
        else:  # wrong: injected on hit and contradiction questions, minus those labelled for them
            qs = np.flatnonzero(np.isin(kinds, WRONG_KINDS))
            wq[qs] = 1
            for q in qs:
                wl[list(self.prep.labelled_of[q])] = -1
        return wq, wl

    def get(self, group: str) -> np.ndarray:
        if not self.done:
            groups = self.groups or [group]
            wq, wl = zip(*(self._weights(g) for g in groups), strict=True)
            counted = self.kernels.count(self.facts, np.stack(wq), np.stack(wl), self.thresholds, self.inject)
            self.done = dict(zip(groups, counted, strict=True))
        if group not in self.done:
            wq, wl = self._weights(group)
            self.done[group] = self.kernels.count(
                self.facts, wq[None], wl[None], self.thresholds, self.inject
            )[0]
        return self.done[group]


@dataclass(frozen=True)
class ChunkFacts:
    """What the metric groups read about one chunk of configurations; arrays are shaped
    (bonus x tau pairs, threshold, candidates, inject)."""

    # a chunk array broadcast to the configuration axes, a view: the sweep writes every column
    # once, straight into its table (or the chunk's frame)
    flat: Callable[[np.ndarray], np.ndarray]
    summary: SweepSummary  # the per-question facts the criteria read
    labels: Labels
    counts: Counts  # injected memories per question kind, stale and wrong ones, counted on demand
    threshold: np.ndarray  # the threshold, broadcast to the configuration axes


@dataclass(frozen=True)
class Metric:
    """A group of output columns, computed from the chunk's per-question facts."""

    name: str
    meaning: str
    columns: Callable[[ChunkFacts], dict[str, np.ndarray]]


def _headroom(f: ChunkFacts) -> dict[str, np.ndarray]:
    nohit = np.array([k == "nohit" for k in f.labels.kinds])
    return {"headroom": f.flat(f.threshold - f.summary.max("best_final", nohit))}


def _current(f: ChunkFacts) -> dict[str, np.ndarray]:
    out = {}
    for q in np.flatnonzero(f.labels.current >= 0):
        qid = f.labels.question_ids[q]
        out[f"margin_{qid}"] = f.flat(f.summary.question("current_final", q) - f.threshold)
        out[f"injected_{qid}"] = f.flat(f.summary.question("current_injected", q))
    return out


def _injected(f: ChunkFacts) -> dict[str, np.ndarray]:
    out = {f"injected_{kind}": f.counts.get(kind) for kind in QUESTION_KINDS}
    out["current_injected"] = f.counts.get("current")  # questions whose current memory is injected
    return out


def _stale(f: ChunkFacts) -> dict[str, np.ndarray]:
    return {"stale_injected": f.counts.get("stale")}


def _wrong(f: ChunkFacts) -> dict[str, np.ndarray]:
    return {"wrong_injected": f.counts.get("wrong")}


def _answered(f: ChunkFacts) -> dict[str, np.ndarray]:
    """The answered counts, one kernel call (``memlab.core.sweep_facts.answered_numpy`` says how)."""
    c = f.counts
    nohit = np.array([k == "nohit" for k in f.labels.kinds], dtype=bool)
    counted = c.kernels.answered(c.facts, c.prep.relevant_of, nohit, c.thresholds, c.inject)
    return {
        "answered_any": counted[0],
        "answered_all": counted[1],
        "nohit_injected_questions": counted[2],
    }


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("headroom", "threshold minus the best post-bonus score over the no-hit questions", _headroom),
        Metric(
            "current",
            "per question with a current memory: margin_<id> (final minus threshold, NaN "
            "when not a candidate) and injected_<id>",
            _current,
        ),
        Metric(
            "injected",
            "memories injected over the questions of each kind: injected_<kind>; questions whose "
            "current memory is injected: current_injected",
            _injected,
        ),
        Metric("stale", "stale memories injected: stale_injected", _stale),
        Metric(
            "wrong",
            "memories injected on hit and contradiction questions that are labelled neither relevant, "
            "current nor stale: wrong_injected",
            _wrong,
        ),
        Metric(
            "answered",
            "questions with a relevant (or current) memory injected: answered_any, answered_all (every "
            "one of them); no-hit questions with any memory injected: nohit_injected_questions",
            _answered,
        ),
    )
}


# the groups each metric's columns count (``Counts``)
COUNTED: dict[str, tuple[str, ...]] = {
    "injected": (*QUESTION_KINDS, "current"),
    "stale": ("stale",),
    "wrong": ("wrong",),
}


def check_metrics(names: Sequence[str] | None) -> tuple[str, ...]:
    """The metric groups to compute (all when None), in registry order; unknown names are an error."""
    if names is None:
        return tuple(METRICS)
    check_names(METRICS, names, "metric")
    return tuple(m for m in METRICS if m in names)
