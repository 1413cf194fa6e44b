"""Figures of the answer study (``memlab.answers``): the replies side by side per condition, the
judged rates per condition and question kind, the time per turn. Each takes the study's tidy
frames."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

import plotly.graph_objects as go

from memlab.core.numbers import counted
from memlab.output.figures.style import KIND_COLOURS, OKABE_ITO, html_text, style

if TYPE_CHECKING:
    import pandas as pd

VERDICT_FILL = {True: "#DCEFE6", False: "#F7DCCB", None: "#FFFFFF"}  # green / vermillion tints
VERDICT_WORD = {True: "yes", False: "no", None: "-"}
# the steps of a turn in the order they happen (memlab.answers.timing.STEPS)
TURN_ORDER = ("question embedding", "store query", "chat: first token", "chat: total")


def _wrapped(text: str, width: int = 34, lines: int = 6) -> str:
    """A reply as a table cell: wrapped, cut after ``lines`` lines, HTML-safe."""
    text = " ".join(str(text).split())
    if " " not in text[:width]:  # CJK: no spaces; about half as many characters per line
        rows = [text[i : i + width // 2] for i in range(0, len(text), width // 2)]
    else:
        rows = textwrap.wrap(text, width)
    cut = rows[:lines]
    if len(rows) > lines:
        cut[-1] = cut[-1][: max(0, len(cut[-1]) - 1)] + "…"
    return "<br>".join(html_text(r) for r in cut)


def _verdict(row, score: str):
    v = row.get(score)
    return None if v is None or v != v else bool(v)  # NaN: no verdict


def replies_table(
    replies: pd.DataFrame, conditions: list[str], score: str = "judge", repeat: int = 0
) -> go.Figure:
    """The replies side by side: one row per question (shown by its words), one column per
    condition, each cell the reply (repeat ``repeat``) tinted by its verdict (``score``: judge
    or phrases; green yes, vermillion no, white none) and headed by it."""
    shown = replies[replies["repeat"] == repeat]
    questions = list(dict.fromkeys(shown["question_id"]))
    first = shown.drop_duplicates("question_id").set_index("question_id")
    header = ["question", *conditions]
    cells, fills = [[] for _ in header], [[] for _ in header]
    for qid in questions:
        row = first.loc[qid]
        cells[0].append(f"<b>{html_text(qid)}</b> ({row['kind']})<br>{_wrapped(row['question'], 22, 4)}")
        fills[0].append("#F2F2F2")
        for i, c in enumerate(conditions, start=1):
            hit = shown[(shown["question_id"] == qid) & (shown["condition"] == c)]
            if hit.empty:
                cells[i].append("")
                fills[i].append(VERDICT_FILL[None])
                continue
            r = hit.iloc[0].to_dict()
            v = _verdict(r, score)
            cells[i].append(f"<i>{score}: {VERDICT_WORD[v]}</i><br>{_wrapped(r['reply'])}")
            fills[i].append(VERDICT_FILL[v])
    fig = go.Figure(
        go.Table(
            columnwidth=[170] + [230] * len(conditions),
            header={"values": [f"<b>{h}</b>" for h in header], "fill_color": "#E5E5E5", "align": "left"},
            cells={"values": cells, "fill_color": fills, "align": "left", "font": {"size": 11}, "height": 24},
        )
    )
    style(fig, f"Replies per condition, tinted by the {score} verdict (green yes, orange no)", "", "")
    fig.update_layout(width=max(900, 170 + 230 * len(conditions)), height=140 + 118 * len(questions))
    return fig


def rate_bars(rates: pd.DataFrame, score: str = "judge", title: str = "") -> go.Figure:
    """Per condition, one bar per question kind: the rate with its bootstrap interval."""
    mine = rates[(rates["score"] == score) & (rates["questions"] > 0)]
    fig = go.Figure()
    conditions = list(dict.fromkeys(mine["condition"]))
    for kind in dict.fromkeys(mine["kind"]):
        rows = mine[mine["kind"] == kind].set_index("condition").reindex(conditions)
        colour = KIND_COLOURS.get(kind, OKABE_ITO["black"])
        fig.add_trace(
            go.Bar(
                x=conditions,
                y=rows["rate"],
                name=f"{kind} ({counted(int(rows['questions'].max()), 'question')})",
                marker={"color": colour, "line": {"color": OKABE_ITO["black"], "width": 1}},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": rows["hi"] - rows["rate"],
                    "arrayminus": rows["rate"] - rows["lo"],
                    "color": OKABE_ITO["black"],
                },
                hovertemplate="%{x}: %{y:.2f}<extra>" + kind + "</extra>",
            )
        )
    fig.update_layout(barmode="group")
    fig.update_yaxes(range=[0, 1.05], tickformat=".0%")
    style(
        fig,
        title or f"{score}: rate per condition and question kind (95% interval over questions)",
        "condition",
        "rate",
    )
    return fig


def turn_time_bars(timing: pd.DataFrame) -> go.Figure:
    """Per condition, the median time of each step of a turn, in the turn's order, the 95th
    percentile as a whisker; seconds on a log axis (a store query takes milliseconds, a chat
    seconds)."""
    fig = go.Figure()
    conditions = list(dict.fromkeys(timing["condition"]))
    present = list(dict.fromkeys(timing["step"]))
    steps = [s for s in TURN_ORDER if s in present] + [s for s in present if s not in TURN_ORDER]
    colours = [OKABE_ITO[c] for c in ("orange", "blue", "sky", "green", "purple", "yellow")]
    for colour, step in zip(colours, steps, strict=False):
        rows = timing[timing["step"] == step].set_index("condition").reindex(conditions)
        fig.add_trace(
            go.Bar(
                x=conditions,
                y=rows["median_s"],
                name=step,
                marker={"color": colour, "line": {"color": OKABE_ITO["black"], "width": 1}},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": rows["p95_s"] - rows["median_s"],
                    "arrayminus": [0] * len(rows),
                    "color": OKABE_ITO["black"],
                },
                hovertemplate="%{x}: %{y:.3f} s<extra>" + step + "</extra>",
            )
        )
    fig.update_layout(barmode="group")
    fig.update_yaxes(type="log")
    style(
        fig,
        "Time per turn: median per step, whisker to the 95th percentile",
        "condition",
        "seconds (log scale)",
    )
    return fig
