"""Figures of the scale and robustness studies."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go

if TYPE_CHECKING:
    import pandas as pd


from memlab.output.figures.style import OKABE_ITO, fit_titles, marked_line, style, threshold_line


def scale_curve(rows: pd.DataFrame, threshold: float, n_zero: float | None, basis: str = "") -> go.Figure:
    """The no-hit maximum against N (log scale): measured on model and real vectors, the
    extreme-value prediction with its 5-95% band, and the threshold."""
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=list(rows["n"]) + list(rows["n"])[::-1],
            y=list(rows["predicted_hi"]) + list(rows["predicted_lo"])[::-1],
            fill="toself",
            fillcolor="rgba(86,180,233,0.25)",
            line={"width": 0},
            mode="lines",
            name="prediction, 5-95%",
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=rows["n"],
            y=rows["predicted_nohit_max"],
            mode="lines",
            line={"color": OKABE_ITO["blue"], "width": 3},
            name="prediction, median",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=rows["n"],
            y=rows["nohit_max"],
            mode="markers+lines",
            marker={"size": 9, "color": OKABE_ITO["orange"]},
            line={"dash": "dot", "color": OKABE_ITO["orange"]},
            name="measured, model vectors",
        )
    )
    real = rows.dropna(subset=["nohit_max_real"])
    fig.add_trace(
        go.Scatter(
            x=real["n"],
            y=real["nohit_max_real"],
            mode="markers",
            marker={"size": 11, "symbol": "diamond", "color": OKABE_ITO["green"]},
            name="measured, real embeddings",
        )
    )
    threshold_line(fig, threshold)
    if n_zero is not None and rows["n"].min() <= n_zero <= rows["n"].max():
        fig.add_vline(
            x=float(np.log10(n_zero)),  # on a log axis, shape coordinates are log10 of the data
            line={"dash": "dot", "color": OKABE_ITO["black"]},
            annotation_text=f"headroom 0 at N ~ {n_zero:,.0f}",
            annotation_position="bottom right",
        )
    fig.update_xaxes(type="log")
    style(
        fig,
        "Best no-hit score after the bonus as memories accumulate",
        "memories stored (N, log scale)",
        "best post-bonus cosine on no-hit questions",
    )
    if basis:
        import textwrap

        fig.add_annotation(
            text="<br>".join(textwrap.wrap(basis, 150)),
            xref="paper",
            yref="paper",
            x=0,
            y=-0.32,
            xanchor="left",
            showarrow=False,
            font={"size": 11},
            align="left",
        )
        fig.update_layout(margin={"b": 150}, height=600)
    return fit_titles(fig)


RESAMPLING_WORDS = {
    "all": "all questions",
    "loqo": "one question left out",
    "questions": "questions resampled",
    "memories": "unlabelled memories resampled",
}


def robustness_ends(df: pd.DataFrame, bonus: float) -> go.Figure:
    """Where the exact feasible bonus interval begins and ends across resamples, per kind."""
    fig = go.Figure()
    for col, name, colour in (
        ("lo", "lower end", OKABE_ITO["blue"]),
        ("hi", "upper end", OKABE_ITO["orange"]),
    ):
        finite = df[np.isfinite(df[col])]
        fig.add_trace(
            go.Box(
                x=finite["kind"].map(lambda k: RESAMPLING_WORDS.get(k, k)),
                y=finite[col],
                name=name,
                marker_color=colour,
                boxpoints="all",
                jitter=0.4,
                pointpos=0,
            )
        )
    fig.update_layout(boxmode="group")
    marked_line(fig, bonus, f"chosen bonus {bonus:g}")
    return style(fig, "Feasible bonus interval across resamples", "resampling", "bonus (cosine units)")
