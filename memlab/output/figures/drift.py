"""Figures of the drifting-facts study: recall and staleness against the token budget."""

from __future__ import annotations

from typing import TYPE_CHECKING

import plotly.graph_objects as go

if TYPE_CHECKING:
    import pandas as pd


from memlab.core.registry import lookup
from memlab.output.figures.style import OKABE_ITO, fit_titles, short_text, style

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
SYSTEM_SYMBOLS = (
    "circle",
    "square",
    "diamond",
    "triangle-up",
    "x",
    "star",
    "cross",
    "triangle-down",
    "pentagon",
    "hexagon",
    "star-triangle-up",
    "hourglass",
)
# yellow is faint on white: the other seven Okabe-Ito colours and grey
SYSTEM_COLOURS = tuple(c for name, c in OKABE_ITO.items() if name != "yellow")


def system_styles(systems: list[str], oracles: set[str] = frozenset()) -> dict[str, dict[str, str]]:
    """One look per system, told apart without colour: its own marker (12 before any repeats, so
    no two systems of the study share one), a colour from the colour-blind-safe palette (the
    memory systems in palette order, the oracle lines, dashed, from its other end, so a memory
    system and an oracle line drawn alike in colour differ in marker and dash)."""
    regular = [s for s in systems if s not in oracles]
    ceiling = [s for s in systems if s in oracles]
    n = len(SYSTEM_COLOURS)
    colour = {s: SYSTEM_COLOURS[k % n] for k, s in enumerate(regular)}
    colour |= {s: SYSTEM_COLOURS[n - 1 - k % n] for k, s in enumerate(ceiling)}
    return {
        system: {
            "color": colour[system],
            "symbol": SYSTEM_SYMBOLS[k % len(SYSTEM_SYMBOLS)],
            "dash": "dash" if system in oracles else "solid",
        }
        for k, system in enumerate(systems)
    }


def budget_curves(table: pd.DataFrame, metric: str, tokenizer: str = "") -> go.Figure:
    """``recall`` or ``staleness`` against the token budget: one panel per write policy, one line
    per system (colour and marker), 95% bootstrap intervals as error bars; budget on a log axis."""
    title, y_label = lookup(DRIFT_METRICS, metric, "metric")
    return _curves(
        table, metric, metric, title + " (held-out streams, 95% bootstrap intervals)", y_label, tokenizer
    )


def difference_curves(table: pd.DataFrame, metric: str, tokenizer: str = "", gap: float = 0.02) -> go.Figure:
    """The paired difference of ``recall`` or ``staleness`` to top-k under store-everything,
    against the budget, with paired 95% bootstrap intervals; for recall, the target's ``-gap``
    drawn as a dashed line."""
    _title, _ = lookup(DRIFT_METRICS, metric, "metric")
    column = f"{metric}_diff"
    fig = _curves(
        table,
        column,
        metric,
        f"Paired difference to top-k / store-everything: {metric} (held-out streams, paired 95% intervals)",
        f"{metric} minus top-k's (same streams)",
        tokenizer,
        y_range=None,
    )
    if metric == "recall":
        fig.add_hline(y=-gap, line_dash="dash", line_color="black", annotation_text=f"target: -{gap}")
    fig.add_hline(y=0.0, line_color="grey", line_width=1)
    return fig


def _curves(
    table: pd.DataFrame,
    column: str,
    metric: str,
    title: str,
    y_label: str,
    tokenizer: str,
    y_range: tuple[float, float] | None = (-0.03, 1.03),
) -> go.Figure:
    from plotly.subplots import make_subplots

    writes = list(dict.fromkeys(table["write_policy"]))
    systems = list(dict.fromkeys(table["system"]))
    oracles = set(table.loc[table["oracle"].astype(bool), "system"]) if "oracle" in table else set()
    looks = system_styles(systems, oracles)
    fig = make_subplots(rows=1, cols=len(writes), shared_yaxes=True, subplot_titles=writes)
    for col, write in enumerate(writes, start=1):
        for system in systems:
            rows = table[(table["write_policy"] == write) & (table["system"] == system)].sort_values("budget")
            if rows.empty:  # the oracle line runs under one write policy only
                continue
            fig.add_trace(
                go.Scatter(
                    x=rows["budget"],
                    y=rows[column],
                    error_y={
                        "type": "data",
                        "symmetric": False,
                        "array": rows[f"{column}_hi"] - rows[column],
                        "arrayminus": rows[column] - rows[f"{column}_lo"],
                        "thickness": 1.2,
                        "width": 3,
                    },
                    mode="lines+markers",
                    name=system,
                    legendgroup=system,
                    showlegend=col == 1,
                    line={"color": looks[system]["color"], "width": 2.5, "dash": looks[system]["dash"]},
                    marker={"symbol": looks[system]["symbol"], "size": 8},
                    hovertemplate=f"{system} / {write}<br>budget %{{x}} tokens<br>{metric} %{{y:.3f}}"
                    "<extra></extra>",
                ),
                row=1,
                col=col,
            )
    budgets = sorted(table["budget"].unique())
    style(fig, title, "", y_label)
    fig.update_xaxes(type="log", tickvals=budgets, ticktext=[str(b) for b in budgets])
    if y_range is not None:
        fig.update_yaxes(range=list(y_range))
    fig.update_layout(
        width=max(900, 420 * len(writes)),
        height=620,
        margin={"b": 195, "t": 90},
        legend={"orientation": "h", "x": 0.5, "xanchor": "center", "y": -0.22, "yanchor": "top"},
    )
    fig.add_annotation(
        text="token budget (tokens)",
        xref="paper",
        yref="paper",
        x=0.5,
        y=-0.15,
        showarrow=False,
        font={"size": 15},
    )
    if tokenizer:  # the detail goes in a caption under the legend, not in the axis title
        fig.add_annotation(
            text=f"tokens counted with {short_text(tokenizer, 70)}; memory texts only, no prompt wrapper",
            xref="paper",
            yref="paper",
            x=0,
            y=-0.48,  # under a legend of two rows
            xanchor="left",
            showarrow=False,
            font={"size": 12, "color": "#555"},
        )
    return fit_titles(fig)
