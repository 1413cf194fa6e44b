"""Figures of the held-out benchmark study: the systems (the stages) side by side per category."""

from __future__ import annotations

from typing import TYPE_CHECKING

import plotly.graph_objects as go

from memlab.output.figures.style import OKABE_ITO, legend_below, style

if TYPE_CHECKING:
    import pandas as pd

# each system's colour, fixed so a figure with + rerank and one without read alike
SYSTEM_COLOURS = {
    "cosine": OKABE_ITO["grey"],
    "cosine+threshold": OKABE_ITO["sky"],
    "recency": OKABE_ITO["blue"],
    "recency+calibrated": OKABE_ITO["green"],
    "bm25": OKABE_ITO["yellow"],
    "hybrid": OKABE_ITO["orange"],
    "+ rerank": OKABE_ITO["vermillion"],
    "+ MMR": OKABE_ITO["purple"],
    "best combination": OKABE_ITO["black"],
    # the stages combined (memlab.studies.combos): the colour of the pipeline under the stage,
    # hatched by the stage on top (SYSTEM_PATTERNS)
    "+ MMR + rerank": OKABE_ITO["purple"],
    "hybrid + MMR": OKABE_ITO["orange"],
    "hybrid + rerank": OKABE_ITO["orange"],
}
SYSTEM_PATTERNS = {"+ MMR + rerank": "x", "hybrid + MMR": "/", "hybrid + rerank": "x"}  # x: rerank, /: MMR
MEASURES = {
    "utility": "utility",
    "recall_any": "recall_any",
    "false_injection_rate": "false-injection rate (lower is better)",
}


def stage_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The plotted data of ``stage_bars``: one row per (group, system) of a held-out table
    (``memlab.studies.heldout.compare_systems``), with the axis label of its group (its name and
    what it measures) and the difference to the tuned recency spec with its interval."""
    out = table[["group", "measure", "system", "n", "value"]].copy()
    out["label"] = [f"{g}<br>{MEASURES[m]}" for g, m in zip(table["group"], table["measure"], strict=True)]
    for c in ("diff_recency", "diff_recency_lo", "diff_recency_hi"):
        out[c] = table[c] if c in table else float("nan")
    return out.reset_index(drop=True)


def stage_bars(table: pd.DataFrame, title: str = "") -> go.Figure:
    """Each system's value per group (over all questions: utility; per category: recall_any, or the
    false-injection rate of a no-hit category), bars side by side in the table's system order;
    hovering a bar gives n and its paired difference to the tuned recency spec. Draws the systems
    the table holds: + rerank only when it was run."""
    frame = stage_frame(table)
    fig = go.Figure()
    labels = list(dict.fromkeys(frame["label"]))
    for i, system in enumerate(dict.fromkeys(frame["system"])):
        rows = frame[frame["system"] == system].set_index("label").reindex(labels)
        colours = list(OKABE_ITO.values())
        fig.add_bar(
            name=system,
            x=labels,
            y=rows["value"].tolist(),
            marker_color=SYSTEM_COLOURS.get(system, colours[i % len(colours)]),
            marker_pattern_shape=SYSTEM_PATTERNS.get(system, ""),
            customdata=rows[["n", "diff_recency", "diff_recency_lo", "diff_recency_hi"]].to_numpy(),
            hovertemplate=(
                f"{system}<br>%{{x}}: %{{y:.3f}} (n %{{customdata[0]}})<br>"
                "d vs recency %{customdata[1]:+.3f} [%{customdata[2]:+.3f}, %{customdata[3]:+.3f}]"
                "<extra></extra>"
            ),
        )
    fig = style(
        fig,
        title or "Held-out systems per LoCoMo category",
        "question group and what is measured",
        "mean over the group's held-out questions (share)",
        barmode="group",
    )
    fig.update_layout(width=1100 + 40 * max(0, len(dict.fromkeys(frame["system"])) - 7))  # up to six groups
    return legend_below(fig)
