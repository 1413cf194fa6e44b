"""Comparing what an engine injects with memlab's reference: ids and scores to a tolerance, tie
groups as sets, and memories within the tolerance of the threshold free either way."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

TOL = 1e-6  # the engine returns float32 scores; memlab computes in float64


@dataclass
class Agreement:
    """Running totals over the cases compared."""

    cases: int = 0
    memories: int = 0  # injected memories compared
    exact_cases: int = 0  # cases with no tie or threshold edge: lists compared element by element
    edge_cases: int = 0  # cases with a memory within TOL of the threshold
    tie_cases: int = 0  # cases with tied scores among the injected or at the cut
    edge_flips: int = 0  # memories within TOL of the threshold kept by one side only
    max_diff: float = 0.0
    notes: list[str] = field(default_factory=list)

    def summary(self, what: str) -> str:
        return (
            f"{what}: {self.cases} cases, {self.memories} injected memories compared, "
            f"{self.exact_cases} element by element, {self.tie_cases} with ties (compared as sets), "
            f"{self.edge_cases} with a score within {TOL:g} of the threshold "
            f"({self.edge_flips} kept by one side only); "
            f"largest score difference {self.max_diff:.3g}"
        )


def check(got, reference, threshold: float, inject: int, cls, stats: Agreement, where=None) -> None:
    """``got``: (point id, score) from an engine, in its order; ``reference``: memlab's
    candidates (``retrieve``), in re-sorted order; ``cls``: each memory's class (identical vector
    and date share one: they tie exactly, and an engine may return either twin)."""
    finals = {}
    for c in reference:  # a class's best final among the candidates
        finals.setdefault(int(cls[c.index]), c.final)
    got_cls = [int(cls[int(i)]) for i, _ in got]
    scores = [s for _, s in got]
    assert len(got) <= inject, where
    assert all(a >= b for a, b in itertools.pairwise(scores)), (where, got)
    for k, s in zip(got_cls, scores, strict=True):
        assert k in finals, (where, "not a candidate", k, got, reference)
        diff = abs(s - finals[k])
        stats.max_diff = max(stats.max_diff, diff)
        assert diff <= TOL, (where, k, s, finals[k])
    # a class appears at most as often as the reference has twins of it among the candidates
    count = {}
    for c in reference:
        count[int(cls[c.index])] = count.get(int(cls[c.index]), 0) + 1
    for k in set(got_cls):
        assert got_cls.count(k) <= count[k], (where, got)
    eligible = [(int(cls[c.index]), c.final) for c in reference if c.final >= threshold - TOL]
    sure = [(k, f) for k, f in eligible if f >= threshold + TOL]
    edge = len(eligible) != len(sure)
    # nothing missing: a surely eligible memory left out can only be tied with the last one kept
    for k, f in dict(sure).items():
        if got_cls.count(k) < count[k]:
            assert len(got) == inject and f <= min(scores) + TOL, (where, "left out", k, f, got, reference)
    for s in scores:
        assert s >= threshold - TOL, (where, s, threshold)
    want = [(int(cls[c.index]), c.final) for c in reference if c.injected]
    ties = _has_ties([f for _, f in eligible[: inject + 1]])
    on_edge = {k for k, f in eligible if f < threshold + TOL}
    stats.edge_flips += len(on_edge & set(got_cls) ^ on_edge & {k for k, _ in want})
    stats.cases += 1
    stats.memories += len(got)
    stats.edge_cases += edge
    stats.tie_cases += ties
    if not edge and not ties:
        assert got_cls == [k for k, _ in want], (where, got, want)
        stats.exact_cases += 1
    elif not edge:  # tie groups as sets: the same multiset of classes per score level
        assert _groups(got_cls, scores) == _groups([k for k, _ in want], [f for _, f in want]), (
            where,
            got,
            want,
        )


def _has_ties(values) -> bool:
    v = sorted(values)
    return any(b - a <= TOL for a, b in itertools.pairwise(v))


def _groups(classes, scores):
    """Tie groups (scores within TOL of the group's first) as sorted class lists, in score order;
    the last group is cut by the inject limit, so it is compared by its score only."""
    groups: list[tuple[float, list[int]]] = []
    for k, s in zip(classes, scores, strict=True):
        if groups and abs(groups[-1][0] - s) <= TOL:
            groups[-1][1].append(k)
        else:
            groups.append((s, [k]))
    return [sorted(g) for _, g in groups[:-1]], len(groups[-1][1]) if groups else 0
