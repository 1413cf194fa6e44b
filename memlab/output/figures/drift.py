"""Figures of the drifting-facts benchmark: recall and staleness against the token budget."""

from __future__ import annotations

from typing import TYPE_CHECKING

import plotly.graph_objects as go

if TYPE_CHECKING:
    import pandas as pd


from memlab.core.registry import lookup
from memlab.output.figures.style import OKABE_ITO, style

DRIFT_METRICS = {
    "recall": (
        "Current-fact recall against the token budget",
        "recall of the current fact (share of queries)",
    ),
    "staleness": (
        "Stale contamination against the token budget",
        "staleness (share of contexts with a superseded value)",
    ),
}
SYSTEM_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star", "cross", "triangle-down")


def budget_curves(table: pd.DataFrame, metric: str, tokenizer: str = "") -> go.Figure:
    """``recall`` or ``staleness`` against the token budget: one panel per write policy, one line
    per system (colour and marker), 95% bootstrap intervals as error bars; budget on a log axis."""
    from plotly.subplots import make_subplots

    title, y_label = lookup(DRIFT_METRICS, metric, "metric")
    writes = list(dict.fromkeys(table["write_policy"]))
    systems = list(dict.fromkeys(table["system"]))
    colours = [c for name, c in OKABE_ITO.items() if name != "yellow"]  # yellow is faint on white
    fig = make_subplots(rows=1, cols=len(writes), shared_yaxes=True, subplot_titles=writes)
    for col, write in enumerate(writes, start=1):
        for k, system in enumerate(systems):
            rows = table[(table["write_policy"] == write) & (table["system"] == system)].sort_values("budget")
            fig.add_trace(
                go.Scatter(
                    x=rows["budget"],
                    y=rows[metric],
                    error_y={
                        "type": "data",
                        "symmetric": False,
                        "array": rows[f"{metric}_hi"] - rows[metric],
                        "arrayminus": rows[metric] - rows[f"{metric}_lo"],
                        "thickness": 1.2,
                        "width": 3,
                    },
                    mode="lines+markers",
                    name=system,
                    legendgroup=system,
                    showlegend=col == 1,
                    line={"color": colours[k % len(colours)], "width": 2.5},
                    marker={"symbol": SYSTEM_SYMBOLS[k % len(SYSTEM_SYMBOLS)], "size": 8},
                    hovertemplate=f"{system} / {write}<br>budget %{{x}} tokens<br>{metric} %{{y:.3f}}"
                    "<extra></extra>",
                ),
                row=1,
                col=col,
            )
    budgets = sorted(table["budget"].unique())
    unit = f"token budget (tokens, {tokenizer})" if tokenizer else "token budget (tokens)"
    style(fig, title + " (held-out streams, 95% bootstrap intervals)", "", y_label)
    fig.update_xaxes(type="log", tickvals=budgets, ticktext=[str(b) for b in budgets])
    fig.update_yaxes(range=[-0.03, 1.03])
    fig.update_layout(
        width=max(900, 420 * len(writes)),
        height=620,
        margin={"b": 170, "t": 90},
        legend={"orientation": "h", "x": 0.5, "xanchor": "center", "y": -0.22, "yanchor": "top"},
    )
    fig.add_annotation(
        text=unit, xref="paper", yref="paper", x=0.5, y=-0.15, showarrow=False, font={"size": 15}
    )
    return fig
