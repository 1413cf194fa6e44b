"""The seed write-up's tables, rebuilt from an Evaluation as tidy DataFrames."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from memlab.datasets.schema import Dataset
    from memlab.tuning.evaluate import Evaluation


def rerun_table(ev: Evaluation, dataset: Dataset, question_id: str) -> pd.DataFrame:
    """One question's candidates: memory, date, text, raw, bonus, final, verdict."""
    import pandas as pd

    thr = ev.spec.threshold
    rows = []
    for c in ev.result(question_id).candidates:
        m = dataset.memory(c.memory_id)
        verdict = (
            ("injected" if c.injected else f"{thr:g} or higher, not injected")
            if c.reaches
            else (f"under {thr:g}")
        )
        rows.append(
            {
                "memory": c.memory_id,
                "date": m.date.date().isoformat(),
                "text": m.text(ev.lang),
                "raw": c.raw,
                "bonus": c.bonus,
                "final": c.final,
                "verdict": verdict,
            }
        )
    return pd.DataFrame(rows, columns=["memory", "date", "text", "raw", "bonus", "final", "verdict"])


def nohit_table(ev: Evaluation) -> pd.DataFrame:
    """Per no-hit question: the best score before and after the bonus, and which memory."""
    import pandas as pd

    rows = []
    for r in ev.results:
        if r.kind != "nohit":
            continue
        before = max(r.candidates, key=lambda c: c.raw, default=None)
        after = r.candidates[0] if r.candidates else None
        rows.append(
            {
                "question": r.question_id,
                "text": r.text,
                "max_before": np.nan if before is None else before.raw,
                "memory_before": None if before is None else before.memory_id,
                "max_after": np.nan if after is None else after.final,
                "memory_after": None if after is None else after.memory_id,
                "headroom_after": np.nan if after is None else ev.spec.threshold - after.final,
                "injected": len(r.injected),
            }
        )
    return pd.DataFrame(rows)


def criteria_table(ev: Evaluation) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "criterion": c.name,
                "kind": c.kind,
                "question": c.question,
                "value": c.value,
                "margin": c.margin,
                "pass": c.passed,
                "meaning": c.description,
            }
            for c in ev.criteria
        ]
    )


def kind_table(ev: Evaluation, dataset: Dataset, kind: str) -> pd.DataFrame:
    """The questions of one kind at this spec: the generic counterpart of the seed's rerun tables.

    Per question: its words, the current memory (its raw and final score and whether it is
    injected), what was injected, and the stale and wrong injections among them.
    """
    import pandas as pd

    rows = []
    for q, r in zip(dataset.questions, ev.results, strict=True):
        if r.kind != kind:
            continue
        current = next((c for c in r.candidates if c.memory_id == q.current), None)
        rows.append(
            {
                "question": r.question_id,
                "text": r.text,
                "current": q.current,
                "current_text": dataset.memory(q.current).text(ev.lang) if q.current else None,
                "current_raw": np.nan if current is None else current.raw,
                "current_final": np.nan if current is None else current.final,
                "current_injected": bool(current is not None and current.injected),
                "injected": ", ".join(c.memory_id for c in r.injected),
                "stale_injected": ", ".join(r.stale_injected),
                "wrong_injected": ", ".join(r.wrong_injected),
            }
        )
    return pd.DataFrame(rows)
