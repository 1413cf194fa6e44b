"""What a dataset declares in dataset.json beyond its records: criteria and the seed-style tables."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from memlab.core.criteria import Criterion


@dataclass(frozen=True)
class DeclaredTables:
    """Tables a dataset asks notebook 01 for, as the seed write-up printed them.

    ``candidates``: hand-picked (bonus, tau_days) pairs, compared in one table with the selection
    rule's pick; ``reruns``: questions whose candidates are shown memory by memory. A dataset
    without them gets the generic per-kind tables instead.
    """

    candidates: tuple[tuple[float, float], ...] = ()
    reruns: tuple[str, ...] = ()


def declared_criteria(
    items: Any, question_ids: dict[str, int], problems: list[str]
) -> tuple[Any, ...] | None:
    """``criteria`` in dataset.json: a list of {name, kind, question, description}."""
    if items is None:
        return None
    if not isinstance(items, list) or not items:
        problems.append("dataset.json: criteria: expected a non-empty list")
        return None
    out = []
    for i, item in enumerate(items, start=1):
        where = f"dataset.json: criteria[{i}]"
        if not isinstance(item, dict) or not item.get("name") or not item.get("kind"):
            problems.append(f"{where}: expected an object with name and kind")
            continue
        q = item.get("question")
        if q is not None and not isinstance(q, str):
            problems.append(f"{where}: question: expected a question id, got {q!r}")
            continue
        if q is not None and q not in question_ids:
            problems.append(f"{where}: question: unknown question id {q!r}")
            continue
        try:
            out.append(Criterion(item["name"], item["kind"], q, item.get("description", "")))
        except ValueError as e:
            problems.append(f"{where}: {e}")
    return tuple(out)


def declared_tables(items: Any, question_ids: dict[str, int], problems: list[str]) -> DeclaredTables | None:
    """``tables`` in dataset.json: ``{"candidates": [[bonus, tau_days], ...], "reruns": [qid, ...]}``."""
    if items is None:
        return None
    where = "dataset.json: tables"
    if not isinstance(items, dict):
        problems.append(f"{where}: expected an object with candidates and/or reruns")
        return None
    for key in sorted(set(items) - {"candidates", "reruns"}):
        problems.append(f"{where}: {key}: unknown field (allowed: candidates, reruns)")
    pairs = items.get("candidates", [])
    ok_pairs = isinstance(pairs, list) and all(
        isinstance(p, list)
        and len(p) == 2
        and all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in p)
        and p[0] >= 0
        and p[1] > 0
        for p in pairs
    )
    if not ok_pairs:
        problems.append(f"{where}: candidates: expected a list of [bonus >= 0, tau_days > 0], got {pairs!r}")
    reruns = items.get("reruns", [])
    if not isinstance(reruns, list) or not all(isinstance(q, str) for q in reruns):
        problems.append(f"{where}: reruns: expected a list of question ids, got {reruns!r}")
        return None
    for q in reruns:
        if q not in question_ids:
            problems.append(f"{where}: reruns: unknown question id {q!r}")
    if not ok_pairs or any(q not in question_ids for q in reruns):
        return None
    return DeclaredTables(tuple((float(b), float(t)) for b, t in pairs), tuple(reruns))
