"""The sweep as a study: a grid swept over one problem per language (jointly when there are
several), one configuration chosen by a rule while the chunks stream past, and the decision
margin of a spec on each problem. What ``memlab sweep`` prints and saves, callable from a
notebook or the panel alike; the command only parses and prints.

``mmr`` (``memlab.core.sweep_mmr.MmrAxes``) adds MMR's pool and diversity as the outermost axes:
the sweep is then ``sweep_mmr_chunks`` (MMR per shard, as Qdrant runs it), one frame per (pool,
diversity); None (the default) is the sweep without MMR, frame for frame as before."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memlab.core.criteria import Criterion
from memlab.core.decisions import decision_margin
from memlab.core.grid import AXES, Grid
from memlab.core.selection import FALLBACK, choose_streaming, rule_metrics, utility
from memlab.core.spec import RetrievalSpec
from memlab.core.sweep_mmr import MMR_AXES, MmrAxes, sweep_mmr_chunks
from memlab.core.sweep_pool import pooled_sweep_chunks
from memlab.scores.problem import RetrievalProblem

JOINT_SUMS = ("current_injected", "stale_injected", "wrong_injected", "injected_nohit")


def joint_frames(streams: Sequence[Iterator], langs: Sequence[str], axes: Sequence[str]) -> Iterator:
    """One sweep over several languages: the per-language chunks (same grid, same row order) side
    by side, every column but the axes prefixed ``<lang>:``, with the joint columns the selection
    rules read: feasible in every language, the smallest min_margin and headroom, and the
    utility's counts summed over languages (so the utility is the sum of the languages')."""
    import pandas as pd

    for frames in zip(*streams, strict=True):
        first = frames[0]
        cols: dict[str, Any] = {a: first[a].to_numpy() for a in axes}
        cols["feasible"] = np.logical_and.reduce([f["feasible"].to_numpy(dtype=bool) for f in frames])
        cols["min_margin"] = np.minimum.reduce([f["min_margin"].to_numpy(dtype=float) for f in frames])
        if all("headroom" in f for f in frames):
            cols["headroom"] = np.minimum.reduce([f["headroom"].to_numpy(dtype=float) for f in frames])
        for name in JOINT_SUMS:
            if all(name in f for f in frames):
                cols[name] = sum(f[name].to_numpy() for f in frames)
        parts = [pd.DataFrame(cols, index=first.index)]
        for lang, frame in zip(langs, frames, strict=True):
            rest = frame.drop(columns=list(axes))
            parts.append(rest.rename(columns=lambda c, lang=lang: f"{lang}:{c}"))
        out = pd.concat(parts, axis=1)
        out.attrs.update(first.attrs)
        yield out


def sweep_chunks(
    problem: RetrievalProblem,
    grid: Grid,
    criteria: Sequence[Criterion],
    *,
    long: bool = False,
    metrics: Sequence[str] | None = None,
    progress: bool = False,
    mmr: MmrAxes | None = None,
) -> Iterator:
    """One problem's sweep over ``grid`` (and the MMR axes ``mmr``) as chunks of rows (``long``:
    one row per configuration and question, every metric)."""
    if mmr is not None:
        vectors = None if problem.scores.vectors is None else problem.scores.vectors.memories
        return sweep_mmr_chunks(
            problem.raw,
            problem.ages(),
            problem.labels(),
            grid,
            criteria,
            vectors=vectors,
            axes=mmr,
            pool=problem.pool,
            long=long,
            metrics=None if long else metrics,
        )
    return pooled_sweep_chunks(
        problem.raw,
        problem.ages(),
        problem.labels(),
        grid,
        criteria,
        problem.pool,
        long=long,
        progress=progress,
        metrics=None if long else metrics,
    )


@dataclass(frozen=True)
class SweepOutcome:
    """What a sweep chose: the rule's choice (``memlab.core.selection``), its row with the
    utility, the seconds the sweep took and the languages swept (jointly when several)."""

    choice: Any
    row: dict[str, Any] | None  # None: the grid is empty
    elapsed: float
    langs: tuple[str, ...]

    @property
    def joint(self) -> bool:
        return len(self.langs) > 1


def sweep_study(
    problems: Sequence[RetrievalProblem],
    grid: Grid,
    criteria: Sequence[Criterion],
    rule: str,
    *,
    nohit_weight: float,
    langs: Sequence[str],
    metrics: Sequence[str] | None = None,
    progress: bool = False,
    sink: Callable[[Any], None] | None = None,
    mmr: MmrAxes | None = None,
) -> SweepOutcome:
    """Sweep ``grid`` (and the MMR axes ``mmr``) on each language's problem (jointly: feasible in
    every one), and choose one configuration by ``rule`` as the chunks stream past; ``sink`` sees
    every chunk (the table written beside the choice). ``metrics``: the metric groups asked, the
    rule's own added."""
    metrics = None if metrics is None else (*metrics, *rule_metrics(rule, FALLBACK))
    langs = tuple(langs)
    t0 = time.perf_counter()
    streams = [sweep_chunks(p, grid, criteria, metrics=metrics, progress=progress, mmr=mmr) for p in problems]
    joint = len(langs) > 1
    axes = AXES if mmr is None else (*MMR_AXES, *AXES)
    wide = joint_frames(streams, langs, axes) if joint else streams[0]
    names = [f"{lang}:{c.name}" for lang in langs for c in criteria] if joint else [c.name for c in criteria]

    def passed() -> Iterator:
        for frame in wide:
            sink(frame)
            yield frame

    choice = choose_streaming(
        passed() if sink else wide, rule, fallback=FALLBACK, nohit_weight=nohit_weight, criteria=names
    )
    row = None
    if not choice.row.empty:
        row = choice.row.iloc[0].to_dict()
        row["utility"] = float(utility(choice.row, nohit_weight)[0])
    return SweepOutcome(choice, row, time.perf_counter() - t0, langs)


def decision_margins(problems: Sequence[RetrievalProblem], spec: RetrievalSpec) -> list | None:
    """The spec's decision margin on each problem (``memlab.core.decisions``); None under MMR
    with diversity above 0, where no margin is exact (``memlab.core.spec.MMR_NO_MARGIN``)."""
    if spec.mmr and spec.diversity > 0:
        return None
    return [
        decision_margin(p.raw, p.ages(), p.dataset.memory_ids, spec, p.dataset.question_ids, p.pool)
        for p in problems
    ]
