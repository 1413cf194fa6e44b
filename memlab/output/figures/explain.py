"""The figure of one logged query (``memlab explain``, the panel's ``logged_query``): its
candidates in re-sort order, raw cosine and recency bonus stacked, each labelled with the step
that decided it, the threshold drawn."""

from __future__ import annotations

from typing import TYPE_CHECKING

import plotly.graph_objects as go

from memlab.output.figures.style import OKABE_ITO, html_text, style, threshold_line, wrap_label

if TYPE_CHECKING:
    import pandas as pd

    from memlab.datasets.schema import Dataset
    from memlab.tuning.explain import QueryExplanation

STEP_COLOURS = {
    "injected": OKABE_ITO["blue"],
    "past_limit": OKABE_ITO["orange"],
    "below_threshold": OKABE_ITO["grey"],
}
STEP_LABELS = {
    "injected": "injected",
    "past_limit": "past the inject limit",
    "below_threshold": "below the threshold",
}


def candidate_frame(explanation: QueryExplanation, dataset: Dataset, lang: str = "en") -> pd.DataFrame:
    """One row per candidate, in re-sort order: memory, its text, raw, bonus, final, step,
    margin, stale."""
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "memory": c.memory_id,
                "text": dataset.memory(c.memory_id).texts.get(lang)
                or next(iter(dataset.memory(c.memory_id).texts.values())),
                "raw": c.raw,
                "bonus": c.bonus,
                "final": c.final,
                "step": c.step,
                "margin": c.margin,
                "stale": bool(c.stale),
            }
            for c in explanation.candidates
        ],
        columns=["memory", "text", "raw", "bonus", "final", "step", "margin", "stale"],
    )


def candidate_bars(frame: pd.DataFrame, threshold: float, title: str) -> go.Figure:
    """The candidates as bars (raw cosine, the recency bonus stacked on it), coloured by the step
    that decided each (blue injected, orange past the inject limit, grey below the threshold),
    stale memories hatched, the threshold dashed; each labelled by its words and id."""
    labels = [
        f"{wrap_label(str(t), 14, 3)}<br>({m})" for t, m in zip(frame["text"], frame["memory"], strict=True)
    ]
    hover = [
        f"{html_text(t)}<br>{STEP_LABELS[s]}, margin {m:+.4f}" + (" · stale" if st else "")
        for t, s, m, st in zip(frame["text"], frame["step"], frame["margin"], frame["stale"], strict=True)
    ]
    fig = go.Figure(
        [
            go.Bar(
                x=labels,
                y=frame["raw"],
                name="raw cosine",
                marker={
                    "color": OKABE_ITO["sky"],
                    "pattern": {"shape": ["/" if s else "" for s in frame["stale"]]},
                },
                hovertext=hover,
                hovertemplate="%{hovertext}<br>raw %{y:.4f}<extra></extra>",
            ),
            go.Bar(
                x=labels,
                y=frame["bonus"],
                name="recency bonus (colour: the step that decided it)",
                marker_color=[STEP_COLOURS[s] for s in frame["step"]],
                text=[STEP_LABELS[s] for s in frame["step"]],
                textposition="outside",
                hovertext=hover,
                hovertemplate="%{hovertext}<br>bonus %{y:+.4f}<extra></extra>",
            ),
        ]
    )
    fig.update_layout(barmode="stack", bargap=0.3)
    values = [*frame["raw"], *frame["final"], threshold]
    style(fig, title, "candidate (re-sort order)", "cosine score (raw + bonus = final)")
    fig.update_layout(width=max(900, 100 + 110 * len(frame)))
    fig.update_xaxes(tickangle=0, tickfont={"size": 12}, automargin=True)
    fig.update_yaxes(range=[max(-1.0, min(values) - 0.05), max(values) + 0.04])
    return threshold_line(fig, threshold)
