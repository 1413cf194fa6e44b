"""Figures of one spec and of the sweep: the bonus curve, per-question bars, feasibility and headroom maps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go

from memlab.core.numbers import plural
from memlab.core.registry import lookup
from memlab.core.spec import DECAYS, recency_bonus

if TYPE_CHECKING:
    import pandas as pd

    from memlab.datasets.schema import Dataset
    from memlab.tuning.evaluate import Evaluation

from memlab.output.figures.style import (
    CHAR_EM,
    DIVERGING,
    FEASIBLE_SCALE,
    OKABE_ITO,
    days,
    fit_titles,
    html_text,
    legend_below,
    short_text,
    style,
    text_width,
    threshold_line,
    wrap_label,
)


def bonus_curve(
    bonus: float,
    tau_days: float,
    max_age: float = 60.0,
    marks: Sequence[float] = (1, 14, 30),
    decay: str = "exp",
) -> go.Figure:
    """The recency bonus over age (``bonus`` times the decay family's weight), with the given
    ages marked and labelled."""
    age = np.linspace(0, max_age, 241)
    fig = go.Figure(
        go.Scatter(
            x=age,
            y=recency_bonus(age, bonus, tau_days, decay),
            mode="lines",
            name="bonus",
            line={"color": OKABE_ITO["blue"], "width": 3},
        )
    )
    at = np.asarray(marks, dtype=float)
    values = recency_bonus(at, bonus, tau_days, decay)
    labels = [f"+{v:.3f} at {a:g} {plural(a, 'day')}" for a, v in zip(at, values, strict=True)]
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
        f"Recency bonus {bonus:g} × {lookup(DECAYS, decay, 'decay').title.format(tau=days(tau_days))}",
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
                "text": r.text,
                "kind": r.kind,
                "memory": None if shown is None else shown.memory_id,
                "memory_text": None if shown is None else dataset.memory(shown.memory_id).text(ev.lang),
                "role": role,
                "raw": np.nan if shown is None else shown.raw,
                "final": np.nan if shown is None else shown.final,
                "injected": bool(shown is not None and shown.injected),
                "n_injected": len(r.injected),
            }
        )
    return pd.DataFrame(rows)


def question_labels(frame: pd.DataFrame, width: int = 12, lines: int = 3) -> list[str]:
    """Each question by its words (shortened and wrapped, English and Japanese alike), its id
    under them: what a reader recognises, written horizontally."""
    texts = frame["text"] if "text" in frame else frame["question"]
    return [
        f"{wrap_label(str(t), width, lines)}<br>({q})" for t, q in zip(texts, frame["question"], strict=True)
    ]


LABEL_PX = 80  # the width each question's label gets on a bar chart: 12 Latin or 6 CJK characters


def question_bars(
    frame: pd.DataFrame,
    threshold: float,
    title: str | None = None,
    y_range: tuple[float, float] | None = None,
    width: int | None = None,
) -> go.Figure:
    """Raw versus post-bonus score per question, with the threshold line. ``y_range`` fixes the
    axis (the live panel keeps it still while the sliders move). The question labels stay
    horizontal: about ``LABEL_PX`` each, the figure growing with the questions unless ``width``
    fixes it (the panel's), when the labels wrap narrower."""
    width = width or max(900, 100 + LABEL_PX * len(frame))
    per = (width - 100) / max(1, len(frame))
    chars = max(5, int(per / 6.5))
    label = question_labels(frame, chars, 3 if chars >= 10 else 4)
    memory = frame["memory_text"] if "memory_text" in frame else frame["memory"]
    hover = [
        f"{html_text(q)}<br>{role}: {html_text(m) if isinstance(m, str) else '-'}"
        for q, role, m in zip(frame.get("text", frame["question"]), frame["role"], memory, strict=True)
    ]
    fig = go.Figure(
        [
            go.Bar(
                x=label,
                y=frame["raw"],
                name="raw cosine",
                marker_color=OKABE_ITO["sky"],
                hovertext=hover,
                hovertemplate="%{hovertext}<br>raw %{y:.3f}<extra></extra>",
            ),
            go.Bar(
                x=label,
                y=frame["final"],
                name="after the recency bonus",
                marker_color=OKABE_ITO["blue"],
                text=["injected" if i else "" for i in frame["injected"]],
                textposition="outside",
                hovertext=hover,
                hovertemplate="%{hovertext}<br>after the bonus %{y:.3f}<extra></extra>",
            ),
        ]
    )
    fig.update_layout(barmode="group", bargap=0.25)
    if y_range is None:
        values = frame[["raw", "final"]].to_numpy(dtype=float)
        lo = float(np.nanmin(values)) if np.isfinite(values).any() else threshold
        hi = float(np.nanmax(values)) if np.isfinite(values).any() else threshold
        y_range = (max(0.0, min(lo, threshold) - 0.05), max(hi, threshold) + 0.04)
    style(
        fig,
        title or "Current memory (or best candidate) per question",
        "question (the current memory, else the best candidate)",
        "cosine score",
    )
    # labels stay horizontal (wrapped above); a chart with many questions grows wider instead
    fig.update_layout(width=width)
    fig.update_xaxes(tickangle=0, tickfont={"size": 12}, automargin=True)
    fig.update_yaxes(range=list(y_range))
    return threshold_line(fig, threshold)


def margin_frame(ev: Evaluation, dataset: Dataset) -> pd.DataFrame:
    """Per question, how far it is from the threshold on the side it should be, in cosine units.

    A question with a current memory (else labelled ones) should have it injected: its margin is
    that memory's post-bonus score minus the threshold (NaN: not a candidate); ``ok`` when it is
    injected and no stale memory is. A no-hit question should get nothing: its margin is the
    threshold minus its best candidate's score (NaN: no candidate); ``ok`` when nothing is
    injected. Positive margins are on the right side; ``ok`` can still be False at a positive
    margin (a stale memory injected beside it, or it ranked past ``inject``): ``why`` says."""
    import pandas as pd

    thr = ev.spec.threshold
    rows = []
    for q, r in zip(dataset.questions, ev.results, strict=True):
        if r.kind == "nohit":
            best = r.candidates[0] if r.candidates else None
            margin = np.nan if best is None else thr - best.final
            ok, memory = not r.injected, None if best is None else best.memory_id
            wants = "nothing injected"
            why = "" if ok else f"{len(r.injected)} injected"
        else:
            wanted = [c for c in r.candidates if c.memory_id == q.current] if q.current else []
            fresh = [c for c in r.candidates if c.memory_id in r.labelled and c.memory_id not in r.stale]
            target = (wanted or fresh or [None])[0]
            margin = np.nan if target is None else target.final - thr
            ok = target is not None and target.injected and not r.stale_injected
            memory = q.current if target is None else target.memory_id
            wants = f"{memory} injected" + (", no stale memory" if r.stale else "")
            why = "" if ok else _why_not(target, memory, r, thr, ev.spec.inject)
        rows.append(
            {
                "question": r.question_id,
                "text": r.text,
                "kind": r.kind,
                "memory": memory,
                "wants": wants,
                "margin": margin,
                "ok": bool(ok),
                "why": why,
            }
        )
    return pd.DataFrame(rows)


def _why_not(target, memory: str | None, r, threshold: float, inject: int) -> str:
    """Why a question with a memory to inject does not get what it should, in a few words."""
    if target is None:
        return f"{memory or 'no labelled memory'} not a candidate"
    if r.stale_injected:
        return "stale injected"
    return "below the threshold" if target.final < threshold else f"past inject {inject}"


LABEL_FONT = 13  # the question labels of a horizontal bar chart


def margin_bars(frame: pd.DataFrame, threshold: float, title: str | None = None) -> go.Figure:
    """Per question (by its words, top to bottom), its margin to the threshold from
    ``margin_frame``: blue when the question gets what it should, vermillion when it does not;
    the threshold at zero. The question that flips first under a change of the spec is the
    shortest bar."""
    labels = [
        f"{html_text(short_text(str(t), 44))} ({q})"
        for t, q in zip(frame["text"], frame["question"], strict=True)
    ]
    fig = go.Figure()
    for ok, name, colour in (
        (True, "gets what it should", OKABE_ITO["blue"]),
        (False, "does not", OKABE_ITO["vermillion"]),
    ):
        rows = frame["ok"].to_numpy() == ok
        if not rows.any():
            continue
        margins = frame["margin"].to_numpy(dtype=float)[rows]
        fig.add_trace(
            go.Bar(
                y=[label for label, keep in zip(labels, rows, strict=True) if keep],
                x=np.nan_to_num(margins, nan=0.0),  # no memory to measure: its words at zero
                orientation="h",
                name=name,
                marker_color=colour,
                text=[
                    " · ".join(x for x in ("" if np.isnan(m) else f"{m:+.3f}", why) if x)
                    for m, why in zip(margins, frame.loc[rows, "why"], strict=True)
                ],
                textposition="outside",
                customdata=frame.loc[rows, ["kind", "wants"]].to_numpy(),
                hovertemplate="%{y}<br>%{customdata[0]}: wants %{customdata[1]}<br>margin %{x:+.4f}"
                "<extra></extra>",
            )
        )
    values = frame["margin"].to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    lo, hi = (min(0.0, finite.min()), max(0.0, finite.max())) if finite.size else (0.0, 0.0)
    pad = 0.3 * max(hi - lo, 0.01)  # room for the value labels outside the bars
    fig.add_vline(
        x=0,
        line={"dash": "dash", "color": OKABE_ITO["black"], "width": 2},
        layer="above",
        annotation_text=f"threshold {threshold:g}",
        annotation_position="top",
    )
    style(
        fig,
        title or "Margin to the threshold per question",
        "margin to the threshold (cosine units)",
        "",
        barmode="overlay",
    )
    # the labels' room set here, not by automargin, so the titles are fitted to the plot's width
    left = 20 + int(max(text_width(x) for x in labels) * CHAR_EM * LABEL_FONT) if labels else 70
    fig.update_layout(height=max(360, 160 + 34 * len(frame)), margin={"l": left, "t": 100})
    fig.update_xaxes(range=[float(lo - pad), float(hi + pad)], zeroline=False)
    fig.update_yaxes(categoryorder="array", categoryarray=labels[::-1], tickfont={"size": LABEL_FONT})
    return fit_titles(fig)


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
    zoom = fitted_ranges(grid, chosen)
    if zoom is not None:  # a sliver of a wide grid: show where the criteria hold, with room
        fig.update_xaxes(range=zoom[0])
        fig.update_yaxes(range=zoom[1])
    _star_in_view(fig, grid, chosen, "tau_days")
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
    return legend_below(
        style(fig, f"Feasible (bonus, tau) at threshold {threshold:g}", "bonus (cosine units)", "tau (days)")
    )


def fitted_ranges(
    grid: pd.DataFrame, chosen: dict[str, float] | None = None, share: float = 0.5
) -> tuple[list[float], list[float]] | None:
    """Axis ranges around the feasible cells (and the chosen point) when they fill less than
    ``share`` of the grid in either direction, padded by half their extent and at least three
    grid steps; None when nothing is feasible or the region already fills the plot."""
    z = np.nan_to_num(grid.to_numpy(), nan=0.0) > 0
    if not z.any():
        return None
    xs, ys = np.asarray(grid.columns, dtype=float), np.asarray(grid.index, dtype=float)
    cols, rows = np.flatnonzero(z.any(axis=0)), np.flatnonzero(z.any(axis=1))
    x_lo, x_hi, y_lo, y_hi = xs[cols[0]], xs[cols[-1]], ys[rows[0]], ys[rows[-1]]
    if chosen:
        x_lo, x_hi = min(x_lo, chosen["bonus"]), max(x_hi, chosen["bonus"])
        y_lo, y_hi = min(y_lo, chosen["tau_days"]), max(y_hi, chosen["tau_days"])
    out, zoomed = [], False
    for lo, hi, axis in ((x_lo, x_hi, xs), (y_lo, y_hi, ys)):
        full = axis[-1] - axis[0]
        step = float(np.min(np.diff(axis))) if len(axis) > 1 else 1.0
        if full <= 0 or (hi - lo) >= share * full:
            out.append([float(axis[0] - step / 2), float(axis[-1] + step / 2)])
            continue
        zoomed = True
        pad = max(0.5 * (hi - lo), 3 * step)
        out.append([float(max(axis[0], lo - pad) - step / 2), float(min(axis[-1], hi + pad) + step / 2)])
    return (out[0], out[1]) if zoomed else None


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
    _star_in_view(fig, grid, chosen, "tau_days")
    return legend_below(
        style(
            fig,
            f"Headroom on no-hit questions at threshold {threshold:g}",
            "bonus (cosine units)",
            "tau (days)",
        )
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
    _star_in_view(fig, grid, chosen, "threshold")
    return legend_below(
        style(
            fig,
            f"Smallest criterion margin over threshold × bonus at tau {days(tau_days)}",
            "bonus (cosine units)",
            "threshold (post-bonus cosine)",
        )
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
    """The chosen configuration as a star, its values in the legend: a label beside the star
    would cover the band's edges, which it usually sits on."""
    if not chosen:
        return
    value = days(chosen[y]) if y == "tau_days" else f"{chosen[y]:.4g}"
    fig.add_trace(
        go.Scatter(
            x=[chosen["bonus"]],
            y=[chosen[y]],
            mode="markers",
            name=f"chosen: bonus {chosen['bonus']:.4g}, {'tau' if y == 'tau_days' else y} {value}",
            marker={
                "symbol": "star",
                "size": 18,
                "color": OKABE_ITO["vermillion"],
                "line": {"color": "white", "width": 1},
            },
        )
    )


STAR_ROOM = 0.04  # share of an axis kept between the star and the plot's edge (its radius, 9 px)


def _star_in_view(fig: go.Figure, grid: pd.DataFrame, chosen: dict[str, float] | None, y: str) -> None:
    """Widen an axis whose end the chosen point sits on (often: a selection rule's choice at the
    grid's edge), so the whole star is drawn, not half of it."""
    if not chosen:
        return
    for axis, values, at in (
        (fig.layout.xaxis, np.asarray(grid.columns, dtype=float), chosen["bonus"]),
        (fig.layout.yaxis, np.asarray(grid.index, dtype=float), chosen[y]),
    ):
        if axis.range is not None:
            lo, hi = (float(v) for v in axis.range)
        else:  # the heatmap's own extent: half a cell beyond the first and last value
            step = float(np.min(np.diff(values))) if len(values) > 1 else 1.0
            lo, hi = float(values[0] - step / 2), float(values[-1] + step / 2)
        room = STAR_ROOM * (hi - lo)
        axis.range = [min(lo, at - room), max(hi, at + room)]


# ---------------------------------------------------------------------------------------------
# export
