"""Figure builders and export.

Builders take tidy DataFrames (or an Evaluation) and return a ``plotly.graph_objects.Figure``;
they never show it. They are made for write-ups: a title, axis labels with units, a readable
font, the Okabe-Ito colour-blind-safe palette and the threshold drawn as a line.

``export_figure`` writes HTML always (self-contained and offline: plotly.js is copied beside
the figure, never loaded from a CDN) and PNG/SVG through kaleido when a Chrome or Chromium is
found; without one it warns once and writes HTML only. ``static_export`` keeps one kaleido
browser open for a whole batch of figures.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import plotly.graph_objects as go

from memlab.core.spec import recency_bonus
from memlab.output.io import atomic_write_bytes, atomic_write_text

if TYPE_CHECKING:
    import pandas as pd

    from memlab.datasets.model import Dataset
    from memlab.tuning.evaluate import Evaluation

# Okabe & Ito (2008), safe for the common colour-vision deficiencies.
OKABE_ITO = {
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "black": "#000000",
    "grey": "#999999",
}
KIND_COLOURS = {
    "hit": OKABE_ITO["blue"],
    "contradiction": OKABE_ITO["orange"],
    "nohit": OKABE_ITO["grey"],
    "time": OKABE_ITO["green"],
}
FONT = {"family": "Arial, Helvetica, sans-serif", "size": 15}
# Sequential and diverging scales that stay readable with colour-vision deficiencies.
SEQUENTIAL = "Cividis"
DIVERGING = "PuOr"
FEASIBLE_SCALE = [[0.0, "#F2F2F2"], [0.5, "#F2F2F2"], [0.5, OKABE_ITO["green"]], [1.0, OKABE_ITO["green"]]]
STATIC_FORMATS = ("png", "svg")
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def style(fig: go.Figure, title: str, x: str, y: str, **layout: Any) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0.02, "xanchor": "left"},
        font=FONT,
        template="simple_white",
        colorway=list(OKABE_ITO.values()),
        xaxis_title=x,
        yaxis_title=y,
        margin={"l": 70, "r": 30, "t": 70, "b": 60},
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
        width=900,
        height=520,
        **layout,
    )
    return fig


def marked_line(fig: go.Figure, y: float, label: str, colour: str = OKABE_ITO["vermillion"]) -> go.Figure:
    """A dashed, labelled horizontal line drawn above the data."""
    fig.add_hline(
        y=y,
        line={"dash": "dash", "color": colour, "width": 2.5},
        layer="above",
        opacity=1,
        annotation_text=label,
        annotation_position="top right",
        annotation_font={"color": colour, "size": 14},
    )
    return fig


def threshold_line(fig: go.Figure, threshold: float) -> go.Figure:
    """The threshold drawn as a dashed line, labelled."""
    return marked_line(fig, threshold, f"threshold {threshold:g}")


# ---------------------------------------------------------------------------------------------
# builders


def bonus_curve(
    bonus: float, tau_days: float, max_age: float = 60.0, marks: Sequence[float] = (1, 14, 30)
) -> go.Figure:
    """The recency bonus over age, with the given ages marked and labelled."""
    age = np.linspace(0, max_age, 241)
    fig = go.Figure(
        go.Scatter(
            x=age,
            y=recency_bonus(age, bonus, tau_days),
            mode="lines",
            name="bonus",
            line={"color": OKABE_ITO["blue"], "width": 3},
        )
    )
    at = np.asarray(marks, dtype=float)
    values = recency_bonus(at, bonus, tau_days)
    labels = [f"+{v:.3f} at {a:g} day{'s' if a != 1 else ''}" for a, v in zip(at, values, strict=True)]
    fig.add_trace(
        go.Scatter(
            x=at,
            y=values,
            mode="markers+text",
            text=labels,
            textposition="top right",
            marker={"size": 11, "color": OKABE_ITO["vermillion"]},
            name="marked ages",
        )
    )
    return style(
        fig,
        f"Recency bonus {bonus:g} × exp(−age / {tau_days:g} days)",
        "memory age (days)",
        "bonus added to the cosine score",
    )


def question_frame(ev: Evaluation, dataset: Dataset) -> pd.DataFrame:
    """Per question: the memory the figure shows (current memory, else the best candidate)."""
    import pandas as pd

    rows = []
    for q, r in zip(dataset.questions, ev.results, strict=True):
        current = q.current
        shown = next((c for c in r.candidates if c.memory_id == current), None)
        role = "current memory"
        if shown is None:
            shown = r.candidates[0] if r.candidates else None
            role = "best candidate"
        rows.append(
            {
                "question": r.question_id,
                "kind": r.kind,
                "memory": None if shown is None else shown.memory_id,
                "role": role,
                "raw": np.nan if shown is None else shown.raw,
                "final": np.nan if shown is None else shown.final,
                "injected": bool(shown is not None and shown.injected),
                "n_injected": len(r.injected),
            }
        )
    return pd.DataFrame(rows)


def question_bars(frame: pd.DataFrame, threshold: float, title: str | None = None) -> go.Figure:
    """Raw versus post-bonus score per question, with the threshold line."""
    label = [f"{q}<br>{m or '-'}" for q, m in zip(frame["question"], frame["memory"], strict=True)]
    fig = go.Figure(
        [
            go.Bar(x=label, y=frame["raw"], name="raw cosine", marker_color=OKABE_ITO["sky"]),
            go.Bar(
                x=label,
                y=frame["final"],
                name="after the recency bonus",
                marker_color=OKABE_ITO["blue"],
                text=["injected" if i else "" for i in frame["injected"]],
                textposition="outside",
            ),
        ]
    )
    fig.update_layout(barmode="group", bargap=0.25)
    values = frame[["raw", "final"]].to_numpy(dtype=float)
    lo = float(np.nanmin(values)) if np.isfinite(values).any() else threshold
    hi = float(np.nanmax(values)) if np.isfinite(values).any() else threshold
    style(
        fig, title or "Current memory (or best candidate) per question", "question and memory", "cosine score"
    )
    fig.update_yaxes(range=[max(0.0, min(lo, threshold) - 0.05), max(hi, threshold) + 0.04])
    return threshold_line(fig, threshold)


def _pivot(df: pd.DataFrame, value: str, x: str = "bonus", y: str = "tau_days") -> pd.DataFrame:
    return df.pivot_table(index=y, columns=x, values=value, aggfunc="first").sort_index()


def feasibility_heatmap(
    sweep_df: pd.DataFrame,
    threshold: float,
    bands: pd.DataFrame | None = None,
    chosen: dict[str, float] | None = None,
) -> go.Figure:
    """Where every criterion holds, over bonus x tau at one threshold, with the exact band."""
    at = sweep_df[np.isclose(sweep_df["threshold"], threshold)]
    grid = _pivot(at.assign(feasible=at["feasible"].astype(float)), "feasible")
    fig = go.Figure(
        go.Heatmap(
            x=grid.columns,
            y=grid.index,
            z=grid.to_numpy(),
            colorscale=FEASIBLE_SCALE,
            zmin=0,
            zmax=1,
            colorbar={"tickvals": [0.25, 0.75], "ticktext": ["fails", "all criteria hold"], "title": ""},
            hovertemplate="bonus %{x:.4f}<br>tau %{y:g} days<br>%{z}<extra></extra>",
        )
    )
    _add_bands(fig, bands, (float(grid.columns.min()), float(grid.columns.max())))
    _add_chosen(fig, chosen)
    if not np.nansum(grid.to_numpy()):
        fig.add_annotation(
            text="no (bonus, tau) on this grid satisfies every criterion",
            showarrow=False,
            xref="paper",
            yref="paper",
            x=0.5,
            y=0.5,
            font={"size": 18},
        )
    return style(
        fig, f"Feasible (bonus, tau) at threshold {threshold:g}", "bonus (cosine units)", "tau (days)"
    )


def headroom_heatmap(
    sweep_df: pd.DataFrame,
    threshold: float,
    bands: pd.DataFrame | None = None,
    chosen: dict[str, float] | None = None,
) -> go.Figure:
    """Headroom (threshold minus the best no-hit score) over bonus x tau, zero at the centre."""
    at = sweep_df[np.isclose(sweep_df["threshold"], threshold)]
    grid = _pivot(at.assign(headroom=at["headroom"].replace([np.inf, -np.inf], np.nan)), "headroom")
    fig = _diverging(grid, "headroom", "bonus %{x:.4f}<br>tau %{y:g} days<br>headroom %{z:.3f}")
    _add_bands(fig, bands, (float(grid.columns.min()), float(grid.columns.max())))
    _add_chosen(fig, chosen)
    return style(
        fig, f"Headroom on no-hit questions at threshold {threshold:g}", "bonus (cosine units)", "tau (days)"
    )


def threshold_bonus_plane(
    sweep_df: pd.DataFrame, tau_days: float, chosen: dict[str, float] | None = None
) -> go.Figure:
    """The smallest criterion margin over threshold x bonus at one tau (> 0: all criteria hold)."""
    at = sweep_df[np.isclose(sweep_df["tau_days"], tau_days)]
    grid = _pivot(
        at.assign(min_margin=at["min_margin"].replace([np.inf, -np.inf], np.nan)),
        "min_margin",
        x="bonus",
        y="threshold",
    )
    fig = _diverging(grid, "smallest margin", "bonus %{x:.4f}<br>threshold %{y:.3f}<br>margin %{z:.3f}")
    z = grid.to_numpy()
    fig.add_trace(
        go.Contour(
            x=grid.columns,
            y=grid.index,
            z=z,
            contours={"start": 0, "end": 0, "coloring": "none"},
            line={"color": OKABE_ITO["black"], "width": 2},
            showscale=False,
            name="margin = 0",
            hoverinfo="skip",
        )
    )
    _add_chosen(fig, chosen, y="threshold")
    return style(
        fig,
        f"Smallest criterion margin over threshold × bonus at tau {tau_days:g} days",
        "bonus (cosine units)",
        "threshold (post-bonus cosine)",
    )


def _diverging(grid: pd.DataFrame, label: str, hover: str) -> go.Figure:
    """A heatmap on a diverging scale centred on zero (sign = which side of a criterion)."""
    z = grid.to_numpy()
    span = float(np.nanmax(np.abs(z))) if np.isfinite(z).any() else 1.0
    return go.Figure(
        go.Heatmap(
            x=grid.columns,
            y=grid.index,
            z=z,
            colorscale=DIVERGING,
            zmid=0,
            zmin=-span,
            zmax=span,
            colorbar={"title": label},
            hovertemplate=hover + "<extra></extra>",
        )
    )


def _add_bands(fig: go.Figure, bands: pd.DataFrame | None, x_range: tuple[float, float]) -> None:
    """The exact feasible band as its lower and upper edges over tau, within the grid's bonus range."""
    if bands is None or bands.empty:
        return
    ordered = bands.sort_values("tau_days")
    taus = ordered["tau_days"].tolist()
    lower, upper = [], []
    for intervals in ordered["intervals"]:
        lo = intervals[0][0] if intervals else None
        hi = intervals[-1][1] if intervals else None
        lower.append(lo if lo is not None and lo <= x_range[1] else None)
        upper.append(hi if hi is not None and hi <= x_range[1] else None)  # beyond the grid: not drawn
    line = {"color": OKABE_ITO["black"], "width": 2.5}
    fig.add_trace(go.Scatter(x=lower, y=taus, mode="lines", name="exact band: lower edge", line=line))
    fig.add_trace(
        go.Scatter(x=upper, y=taus, mode="lines", name="exact band: upper edge", line={**line, "dash": "dot"})
    )
    fig.update_xaxes(range=list(x_range))


def _add_chosen(fig: go.Figure, chosen: dict[str, float] | None, y: str = "tau_days") -> None:
    if not chosen:
        return
    fig.add_trace(
        go.Scatter(
            x=[chosen["bonus"]],
            y=[chosen[y]],
            mode="markers+text",
            name="chosen",
            text=[f"chosen ({chosen['bonus']:.4g}, {chosen[y]:.4g})"],
            textposition="top left",
            marker={
                "symbol": "star",
                "size": 18,
                "color": OKABE_ITO["vermillion"],
                "line": {"color": "white", "width": 1},
            },
        )
    )


# ---------------------------------------------------------------------------------------------
# export

_warned = False


def find_browser() -> str | None:
    """A Chrome or Chromium for kaleido: $BROWSER_PATH, else the first on PATH."""
    env = os.environ.get("BROWSER_PATH")
    if env and Path(env).is_file():
        return env
    for name in BROWSER_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _warn_no_browser() -> None:
    global _warned
    if not _warned:
        warnings.warn(
            "no Chrome or Chromium found (looked for $BROWSER_PATH and "
            f"{', '.join(BROWSER_NAMES)} on PATH): figures are written as HTML only. "
            "Install one (Debian: apt-get install chromium) for PNG and SVG.",
            RuntimeWarning,
            stacklevel=3,
        )
        _warned = True


def plotly_js_path() -> Path:
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def write_html(fig: go.Figure, path: Path) -> Path:
    """Offline HTML: plotly.min.js is copied beside the page and loaded from there."""
    js = path.parent / "plotly.min.js"
    if not js.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(js, plotly_js_path().read_bytes())
    html = fig.to_html(
        include_plotlyjs="directory", full_html=True, include_mathjax=False, config={"displaylogo": False}
    )
    return atomic_write_text(path, html)


_kaleido_users = 0


@contextlib.contextmanager
def static_export() -> Iterator[bool]:
    """Keep one kaleido browser open for a batch of PNG/SVG exports; yields whether one runs.

    Nested uses share the browser the outermost one started.
    """
    global _kaleido_users
    browser = find_browser()
    if browser is None:
        yield False
        return
    import kaleido

    os.environ.setdefault("BROWSER_PATH", browser)
    if _kaleido_users == 0:
        kaleido.start_sync_server(plotlyjs=str(plotly_js_path()), mathjax=False, silence_warnings=True)
    _kaleido_users += 1
    try:
        yield True
    finally:
        _kaleido_users -= 1
        if _kaleido_users == 0:
            kaleido.stop_sync_server(silence_warnings=True)


def write_static(fig: go.Figure, path: Path) -> Path:
    """PNG or SVG (by suffix) through kaleido, written atomically."""
    import plotly.io as pio

    with warnings.catch_warnings():
        # plotly warns that per-call kaleido options are ignored while a server runs: intended
        warnings.filterwarnings("ignore", message="The kopts argument is ignored")
        data = pio.to_image(fig, format=path.suffix.lstrip("."), scale=2 if path.suffix == ".png" else 1)
    return atomic_write_bytes(path, data)


def export_figure(fig: go.Figure, stem: str | Path, formats: Iterable[str] = ("html", "png")) -> list[Path]:
    """Write ``stem.html`` always, plus ``stem.png`` / ``stem.svg`` when a browser is found.

    Also writes ``stem.json`` (the figure itself), so static images can be made later in one batch.
    """
    stem = Path(stem)
    formats = list(dict.fromkeys(formats))
    unknown = [f for f in formats if f not in ("html", "json", *STATIC_FORMATS)]
    if unknown:
        raise ValueError(f"unknown figure format(s) {unknown}; available: html, json, png, svg")
    written = [write_html(fig, stem.with_suffix(".html"))]
    written.append(atomic_write_text(stem.with_suffix(".json"), fig.to_json()))
    statics = [f for f in formats if f in STATIC_FORMATS]
    if statics:
        if find_browser() is None:
            _warn_no_browser()
        else:
            with static_export():
                written += [write_static(fig, stem.with_suffix(f".{f}")) for f in statics]
    return written


def export_static_batch(json_files: Iterable[Path], formats: Iterable[str]) -> list[Path]:
    """PNG/SVG for many saved figures with one kaleido browser; HTML-only with a warning if none."""
    import plotly.io as pio

    files = list(json_files)
    statics = [f for f in formats if f in STATIC_FORMATS]
    if not files or not statics:
        return []
    written: list[Path] = []
    with static_export() as running:
        if not running:
            _warn_no_browser()
            return []
        for f in files:
            fig = pio.from_json(f.read_text(encoding="utf-8"))
            written += [write_static(fig, f.with_suffix(f".{fmt}")) for fmt in statics]
    return written


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
    return fig


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
                x=finite["kind"],
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
    style(fig, figure_title, "retrieval retriever (each at its tuned configuration)", title)
    # many series: the legend goes under the plot, clear of the title
    fig.update_layout(
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": -0.2, "yanchor": "top"},
        margin={"b": 130},
        height=600,
    )
    return fig


def fusion_landscape(landscape: pd.DataFrame, title_suffix: str = "") -> go.Figure:
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
    return fig


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

    if metric not in DRIFT_METRICS:
        raise ValueError(f"unknown metric {metric!r}; available: {', '.join(DRIFT_METRICS)}")
    title, y_label = DRIFT_METRICS[metric]
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
