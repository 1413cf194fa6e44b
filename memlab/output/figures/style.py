"""The one figure style: palette (Okabe-Ito), fonts, titles, the threshold line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

if TYPE_CHECKING:
    pass


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
# A sans-serif first wherever Arial is missing (Liberation Sans is metric-compatible, DejaVu Sans
# is on nearly every Linux), then IPAGothic / Noto Sans CJK for Japanese (Arial has no CJK glyphs)
FONT = {
    "family": 'Arial, "Liberation Sans", "DejaVu Sans", Helvetica, IPAGothic, "Noto Sans CJK JP", sans-serif',
    "size": 15,
}
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
    return fit_titles(fig)


# An axis title is drawn in the layout's font size (plotly's default); a Latin character
# of Arial, Liberation Sans or the wider DejaVu Sans takes at most about 0.62 of that size.
TITLE_SCALE = 1.0
CHAR_EM = 0.62


def title_length(text: str, size: float = FONT["size"] * TITLE_SCALE) -> float:
    """About how long ``text``'s longest line is drawn at font ``size``, in px."""
    return max(text_width(line) for line in text.split("<br>")) * CHAR_EM * size


def plot_area(fig: go.Figure) -> tuple[float, float]:
    """The plot area's width and height in px: the figure's size less its margins."""
    layout, m = fig.layout, fig.layout.margin
    return layout.width - m.l - m.r, layout.height - m.t - m.b


def fit_titles(fig: go.Figure) -> go.Figure:
    """Each axis title wrapped at spaces onto the lines it needs to fit along its axis: a y title
    longer than the plot is tall would run past the figure's top or into the legend (plotly's
    automargin makes room across an axis, never along it). Call it again after a change of size
    or margins."""
    import textwrap

    width, height = plot_area(fig)
    for axis, room in ((fig.layout.xaxis, width), (fig.layout.yaxis, height)):
        text = axis.title.text
        if not text or title_length(text) <= room:
            continue
        flat = " ".join(text.replace("<br>", " ").split())
        chars = max(8, int(room / (CHAR_EM * FONT["size"] * TITLE_SCALE)))
        lines = textwrap.wrap(flat, chars)
        # as few lines as that takes, of even length ("best post-bonus cosine / on no-hit
        # questions", not a last line of one word)
        shortest = -(-len(flat) // len(lines))
        even = next(w for w in range(shortest, chars + 1) if len(textwrap.wrap(flat, w)) <= len(lines))
        axis.title.text = "<br>".join(textwrap.wrap(flat, even))
    return fig


def legend_below(fig: go.Figure) -> go.Figure:
    """The legend under the plot, clear of the title: a legend with long entries that wraps onto
    two lines above the plot would run over the title."""
    fig.update_layout(
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": -0.2, "yanchor": "top"},
        margin={"b": 130},
        height=fig.layout.height + 70,
    )
    return fit_titles(fig)


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


def short_text(text: str, width: int = 26) -> str:
    """``text`` cut at a word boundary to about ``width`` characters, with an ellipsis; CJK text
    (no spaces) is cut by characters."""
    import textwrap

    text = " ".join(text.split())
    if len(text) <= width:
        return text
    if " " not in text[:width]:  # CJK: no spaces, and each character about twice as wide
        half = max(4, width // 2)
        return text if len(text) <= half else text[: half - 1] + "…"
    return textwrap.shorten(text, width, placeholder="…")


def text_width(text: str) -> int:
    """How wide ``text`` is in Latin characters: a CJK (wide or full-width) character counts two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def wrap_label(text: str, width: int = 12, lines: int = 3) -> str:
    """``text`` on at most ``lines`` lines of about ``width`` Latin characters each, joined by
    ``<br>``, the last one ending in an ellipsis when the text goes on: English is wrapped at
    spaces, CJK text (no spaces; each character about twice as wide) between characters. A bar
    chart's category labels then stay horizontal instead of being turned on their side."""
    import textwrap

    text = " ".join(text.split())
    if text_width(text) == len(text):  # no wide characters: wrap at word boundaries
        return "<br>".join(textwrap.wrap(text, width, max_lines=lines, placeholder="…"))
    out, line = [], ""
    for i, ch in enumerate(text):
        if text_width(line + ch) > width:
            out.append(line)
            line = ""
            if len(out) == lines:
                break
        line += "" if not line and ch == " " else ch
        if i == len(text) - 1:
            out.append(line)
    if len(out) == lines and "".join(out).replace(" ", "") != text.replace(" ", ""):
        last = out[-1]
        while last and text_width(last + "…") > width:
            last = last[:-1]
        out[-1] = last + "…"
    return "<br>".join(x for x in out if x)


def html_text(text: str) -> str:
    """Plain text made safe inside plotly's HTML-like labels."""
    import html

    return html.escape(text, quote=False)


def days(x: float) -> str:
    """``1 day``, ``14 days``: the unit agrees with the number."""
    return f"{x:g} day" if x == 1 else f"{x:g} days"
