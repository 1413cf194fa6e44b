"""The answer study as text: the conditions, the rates per condition and kind with their
intervals, and the time per turn (the write-up's "added time" table)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from memlab.answers.rates import ALL_KINDS, SCORES
from memlab.answers.timing import STEPS

if TYPE_CHECKING:
    import pandas as pd

    from memlab.answers.study import AnswerStudy


def seconds(x: float) -> str:
    """A duration for people: milliseconds under one second, else seconds."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"


def _cell(row, unreliable: bool = False) -> str:
    cell = f"{row['rate']:.2f} [{row['lo']:.2f}, {row['hi']:.2f}]"
    return f"({cell})" if unreliable else cell


def rates_text(table: pd.DataFrame, score: str, conditions: list[str], unreliable: bool = False) -> list[str]:
    """One line per condition, one column per question kind (then all): rate [lo, hi];
    ``unreliable``: each in parentheses, not a result."""
    mine = table[table["score"] == score]
    if mine.empty:
        return []
    kinds = [k for k in dict.fromkeys(mine["kind"]) if k != ALL_KINDS] + [ALL_KINDS]
    counts = {k: int(mine[mine["kind"] == k]["questions"].max()) for k in kinds}
    width = 21 if unreliable else 19
    head = f"{'condition':<10}" + "".join(f"{f'{k} ({counts[k]})':>{width}}" for k in kinds)
    lines = [head]
    for c in conditions:
        cells = []
        for k in kinds:
            row = mine[(mine["condition"] == c) & (mine["kind"] == k)]
            cells.append(_cell(row.iloc[0], unreliable) if len(row) and row.iloc[0]["questions"] else "-")
        lines.append(f"{c:<10}" + "".join(f"{x:>{width}}" for x in cells))
    unscored = int(mine[mine["kind"] == ALL_KINDS]["unscored"].sum()) if score == "judge" else 0
    if unscored:
        lines.append(f"(unjudged: {unscored} replies the judge answered neither YES nor NO; left out)")
    return lines


def timing_text(timing: pd.DataFrame, conditions: list[str]) -> list[str]:
    """The time per turn: per condition and step, median, 95th percentile and range."""
    lines = [f"{'condition':<10} {'step':<20} {'n':>4} {'median':>10} {'p95':>10}  range"]
    for c in conditions:
        for step in STEPS:
            row = timing[(timing["condition"] == c) & (timing["step"] == step)]
            if row.empty:
                continue
            r = row.iloc[0]
            lines.append(
                f"{c:<10} {step:<20} {int(r['n']):>4} {seconds(r['median_s']):>10} "
                f"{seconds(r['p95_s']):>10}  "
                f"{seconds(r['min_s'])} to {seconds(r['max_s'])}"
            )
    return lines


def study_text(study: AnswerStudy, header: list[str], boot: int, seed: int = 0) -> str:
    """The study as text. Where both judges judged replies, their agreement is printed under the
    LLM judge's title (``memlab.answers.judge.judge_agreement``, ``boot`` resamples); below the
    floor its rates are in parentheses and the block says they are not results."""
    from memlab.answers.judge import judge_agreement

    names = [c.name for c in study.conditions]
    lines = [*header, "conditions:"]
    for c in study.conditions:
        spec = f" ({c.spec_text()})" if c.spec is not None else ""
        lines.append(f"  {c.name:<8} {c.about}{spec}")
    r = study.replies
    lines.append(
        f"replies: {len(r)} ({int(r['cached'].sum())} from the cache), model id(s) the server gave: "
        f"{', '.join(study.model_ids)}"
    )
    titles = {
        "judge": f"LLM judge ({', '.join(study.judge_model_ids)}): YES rate",
        "phrases": "checkable judge (the dataset's expect/avoid phrases): pass rate",
        "f1": "token F1 against the reference answers (LoCoMo's evaluation)",
    }
    agreement = judge_agreement(study.replies, boot, seed)
    for score in SCORES:
        unreliable = score == "judge" and agreement is not None and not agreement.reliable
        block = rates_text(study.rates, score, names, unreliable)
        if block:
            lines += [
                "",
                f"{titles[score]}, per question kind (questions), "
                f"95% interval over questions ({boot} resamples)",
            ]
            if score == "judge":
                lines.append(
                    "LLM judge unchecked: no reply it judged has phrases for the checkable judge"
                    if agreement is None
                    else agreement.text()
                )
            if unreliable:
                lines.append("(in parentheses: the LLM judge's rates, unreliable, not results)")
            lines += block
    lines += ["", "time per turn"]
    lines += timing_text(study.timing, names)
    lines += [f"note: {n}" for n in study.notes]
    return "\n".join(lines)
