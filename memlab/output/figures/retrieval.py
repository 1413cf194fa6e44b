"""Figures of the hybrid comparison: retrievers by question kind, the fusion landscape."""

from __future__ import annotations

from typing import TYPE_CHECKING

import plotly.graph_objects as go

if TYPE_CHECKING:
    import pandas as pd


from memlab.output.figures.style import KIND_COLOURS, OKABE_ITO, fit_titles, style

DATASET_PATTERNS = ("", "/", ".", "x", "-", "+")
RETRIEVER_METRICS = {
    # metric: (figure title, axis title, which question kinds it is about, the reference line drawn)
    "hit_at_inject": (
        "Current memory injected, by retriever",
        "current memory injected (share of questions)",
        ("hit", "contradiction", "time"),
        None,
    ),
    "false_injections": (
        "False injections on no-hit questions, by retriever",
        "memories injected on no-hit questions (count)",
        ("nohit",),
        None,
    ),
    "stale_injections": (
        "Stale and wrong-day injections, by retriever",
        "stale or wrong-day memories injected (count)",
        ("contradiction", "time"),
        None,
    ),
    "headroom": (
        "Headroom on no-hit questions, by retriever",
        "threshold minus best no-hit score (retriever's own units)",
        ("nohit",),
        0.0,
    ),
}


TEXT_FORMATS = {
    "hit_at_inject": "%{y:.0%}",
    "false_injections": "%{y}",
    "stale_injections": "%{y}",
    "headroom": "%{y:+.2f}",
}


def retriever_bars(by_kind: pd.DataFrame, metric: str) -> go.Figure:
    """One metric of ``memlab.studies.hybrid.compare`` per retriever: bars coloured by question kind and
    patterned by dataset (``by_kind`` needs a ``dataset`` column)."""
    figure_title, title, kinds, line = RETRIEVER_METRICS[metric]
    fig = go.Figure()
    datasets = list(dict.fromkeys(by_kind["dataset"]))
    retrievers = list(dict.fromkeys(by_kind["retriever"]))
    for d_i, name in enumerate(datasets):
        for kind in kinds:
            rows = by_kind[(by_kind["dataset"] == name) & (by_kind["kind"] == kind)]
            if rows.empty:
                continue
            rows = rows.set_index("retriever").reindex(retrievers)
            fig.add_trace(
                go.Bar(
                    x=retrievers,
                    y=rows[metric],
                    name=f"{name} · {kind}" if metric != "headroom" else name,
                    marker={
                        "color": KIND_COLOURS[kind],
                        "pattern": {"shape": DATASET_PATTERNS[d_i % len(DATASET_PATTERNS)]},
                        "line": {"color": OKABE_ITO["black"], "width": 1},
                    },
                    # a value of 0 draws no bar: the label still says it
                    texttemplate=TEXT_FORMATS[metric],
                    textposition="outside",
                    textangle=-90,  # upright labels overlap over narrow grouped bars
                    textfont={"size": 11},
                    cliponaxis=False,
                    hovertemplate="%{x}<br>%{y}<extra>" + f"{name} · {kind}" + "</extra>",
                )
            )
    fig.update_layout(barmode="group")
    if metric == "hit_at_inject":
        fig.update_yaxes(range=[0, 1.05], tickformat=".0%")
    if line is not None:  # labelled in the legend: bar labels crowd the line
        dash = {"dash": "dash", "color": OKABE_ITO["vermillion"], "width": 2.5}
        fig.add_hline(y=line, line=dash, layer="above", opacity=1)
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="lines",
                line=dash,
                name="the threshold (a no-hit memory reaches it at 0)",
            )
        )
    style(fig, figure_title, "retriever (each at its tuned configuration)", title)
    # every value label the same size (plotly shrinks labels that do not fit otherwise)
    fig.update_layout(uniformtext={"minsize": 11, "mode": "show"})
    # many series: the legend goes under the plot, clear of the title
    fig.update_layout(
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": -0.2, "yanchor": "top"},
        margin={"b": 130},
        height=600,
    )
    return fit_titles(fig)


def fusion_landscape_figure(landscape: pd.DataFrame, title_suffix: str = "") -> go.Figure:
    """The best utility (current memories injected minus wrong ones: no-hit or stale; a count of
    memories) reachable at each value of a
    fusion axis: alpha for weighted fusion (a line per retriever and normalisation), k for RRF (a
    line per retriever, log axis). Open markers: no configuration at that value meets every
    criterion. ``landscape`` is ``Comparison.landscape``."""
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,
        subplot_titles=("weighted fusion: alpha (weight of the vector route)", "RRF: k in 1/(k + rank)"),
    )
    # colour tells the retriever, the dash the normalisation
    palette = [c for name, c in OKABE_ITO.items() if name not in ("yellow", "grey")]
    colour_of = {p: palette[i % len(palette)] for i, p in enumerate(dict.fromkeys(landscape["retriever"]))}
    dashes = {"min-max": "solid", "z-score": "dash", "none": "dot", None: "solid"}
    for (retriever, norm), rows in landscape.groupby(["retriever", landscape["norm"].fillna("")], sort=False):
        col = 1 if rows["axis"].iloc[0] == "alpha" else 2
        name = f"{retriever} ({norm})" if norm else retriever
        fig.add_trace(
            go.Scatter(
                x=rows["value"],
                y=rows["best_utility"],
                mode="lines+markers",
                name=name,
                line={
                    "color": colour_of[retriever],
                    "dash": dashes.get(norm or None, "solid"),
                    "width": 2.5,
                },
                marker={"symbol": "circle-open" if not rows["any_feasible"].any() else "circle", "size": 8},
                hovertemplate=f"{name}<br>%{{x}}: best utility %{{y}}<extra></extra>",
            ),
            row=1,
            col=col,
        )
    style(
        fig,
        "Best reachable utility along each fusion axis" + title_suffix,
        "",
        "best utility (memories)",
    )
    ks = sorted(landscape.loc[landscape["axis"] == "rrf_k", "value"].unique())
    fig.update_xaxes(title_text="alpha", row=1, col=1)
    fig.update_xaxes(title_text="k", type="log", tickvals=ks, ticktext=[f"{k:g}" for k in ks], row=1, col=2)
    fig.update_layout(
        width=1100,
        height=600,
        margin={"b": 150},
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": -0.18, "yanchor": "top"},
    )
    return fit_titles(fig)
