"""index.html of a results folder: every run, notebook, figure and table, written for people.

A table of contents with an anchor per run and notebook; under each figure a line saying what it
shows; numbers to three significant figures, intervals as ``[0.245, 0.285)``, booleans as ✓ and
✗, nothing where there is nothing (never ``nan``, ``None`` or a Python list).
"""

from __future__ import annotations

import html
import json
import math
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

CSS = """
body{font-family:Arial,"Liberation Sans","DejaVu Sans",Helvetica,sans-serif;max-width:1150px;margin:2em auto;
  padding:0 1em;color:#222;font-size:15px;line-height:1.4}
h1{font-size:1.6em} h2{border-bottom:2px solid #0072B2;padding-bottom:.2em;margin-top:2em}
h3{margin-top:1.6em} h4{margin:1.2em 0 .3em} .ok{color:#009E73;font-weight:bold}
.failed{color:#D55E00;font-weight:bold} .skipped{color:#666} .skipped code{color:#222;
  background:#f6f6f6;padding:1px 4px;white-space:nowrap}
nav.toc{background:#f4f8fb;padding:.6em 1em;border:1px solid #d6e4ef}
nav.toc ul{margin:.2em 0;padding-left:1.2em} nav.toc li{margin:.1em 0}
figure{margin:1em 0} figure img{width:100%;border:1px solid #ddd}
figure .plot{border:1px solid #ddd;display:inline-block} figcaption{color:#333}
.about{color:#555;font-size:.93em;margin:.2em 0} .fact{margin:.3em 0}
details{margin:.8em 0;border:1px solid #d6e4ef;padding:.3em .8em}
details>summary{cursor:pointer;color:#0072B2}
.scroll{overflow-x:auto;max-width:100%} table.data{border-collapse:collapse;font-size:.88em;margin:.4em 0}
table.data td,table.data th{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top;
  overflow-wrap:break-word} table.data td.num{text-align:right;white-space:nowrap}
table.data td.word,table.data th{white-space:nowrap} table.data td.long{min-width:22em}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto} .meta{color:#666;font-size:.9em}
"""
PAGE_WIDTH = 1100  # what the body (max-width 1150px, padding 1em) leaves a figure, in px
# Figures without a PNG are drawn inline from their JSON by the page's one plotly.min.js: those
# shown at once when the page loads, those inside a closed disclosure when it is opened.
DRAW = """<script>
function memlabDraw(el){if(el.dataset.drawn)return;el.dataset.drawn='1';
const fig=JSON.parse(document.getElementById(el.id+'-data').textContent);
Plotly.newPlot(el,fig.data,fig.layout,{displaylogo:false});}
document.querySelectorAll('div.plot').forEach(el=>{if(!el.closest('details:not([open])'))memlabDraw(el);});
document.querySelectorAll('details').forEach(d=>d.addEventListener('toggle',()=>{
if(d.open)d.querySelectorAll('div.plot').forEach(memlabDraw);}));
</script>"""


def fmt_number(x: float) -> str:
    """Three significant figures, plain notation for people; integers stay whole."""
    if x == 0:
        return "0"
    if float(x).is_integer() and abs(x) < 1e15:
        return f"{int(x):,}" if abs(x) >= 10_000 else str(int(x))
    if 1e-3 <= abs(x) < 1e6:
        digits = max(0, 2 - math.floor(math.log10(abs(x))))
        return f"{x:.{digits}f}".rstrip("0").rstrip(".") if digits else f"{x:.0f}"
    return f"{x:.3g}"


def fmt_interval(lo: Any, hi: Any, closed: tuple[bool, bool] = (True, False)) -> str:
    left = "[" if closed[0] else "("
    right = "]" if closed[1] else ")"
    lo_s = "−∞" if lo is None else fmt_number(lo)
    hi_s = "+∞" if hi is None else fmt_number(hi)
    return f"{left}{lo_s}, {hi_s}{right}"


def fmt_cell(value: Any) -> str:
    """A table cell or a value as a person reads it (plain text, unescaped)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "✓" if value else "✗"
    if isinstance(value, int | float):
        return "" if isinstance(value, float) and not math.isfinite(value) else fmt_number(value)
    if isinstance(value, str):
        parsed = _json_value(value)
        return value if parsed is None else fmt_cell(parsed)
    if isinstance(value, list | tuple):
        return ", ".join(s for s in (fmt_cell(v) for v in value) if s)
    if isinstance(value, dict):
        # "k = v" kept on one line (no-break spaces): a list of them breaks only after its commas
        return ", ".join(f"{k}\u00a0=\u00a0{fmt_cell(v)}" for k, v in value.items() if fmt_cell(v))
    return str(value)


def _json_value(text: str) -> Any:
    """A cell that holds a JSON list or object (how intervals and parameters are stored in
    tables), else None."""
    if not ((text.startswith("[") and text.endswith("]")) or (text.startswith("{") and text.endswith("}"))):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _rows(records: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Records made readable: an ``intervals`` column with its ``closed`` flags becomes one text,
    and a column ``x`` with ``x_lo`` and ``x_hi`` beside it becomes ``x [lo, hi]``."""
    out = []
    for r in records:
        r = dict(r)
        if "intervals" in r and "closed" in r:
            ivs = r.pop("intervals")
            closed = r.pop("closed")
            ivs = _json_value(ivs) if isinstance(ivs, str) else ivs
            closed = _json_value(closed) if isinstance(closed, str) else closed
            r["feasible bonus"] = (
                " ∪ ".join(
                    fmt_interval(lo, hi, tuple(c))
                    for (lo, hi), c in zip(ivs or [], closed or [], strict=False)
                )
                or "empty"
            )
        # x with x_lo and x_hi beside it (all numbers): one cell "x [lo, hi]"
        bases = {k for k in r if all(_is_number(r.get(c)) for c in (k, f"{k}_lo", f"{k}_hi"))}
        beside = {f"{b}_{end}" for b in bases for end in ("lo", "hi")}
        cells = {}
        for k, v in r.items():
            if k in beside:
                continue
            if k == "feasible bonus" and isinstance(v, str):
                cells[k] = v
            elif k in bases:
                cells[k] = f"{fmt_number(v)} [{fmt_number(r[f'{k}_lo'])}, {fmt_number(r[f'{k}_hi'])}]"
            else:
                cells[k] = fmt_cell(v)
        out.append(cells)
    return out


def table_html(path: Path, limit: int = 25) -> str:
    records = json.loads(path.read_text(encoding="utf-8"))
    if not records:
        return "<p class='meta'>(no rows)</p>"
    rows = _rows(records[:limit])
    cols = list(dict.fromkeys(k for r in rows for k in r))
    e = html.escape
    numeric = {c for c in cols if all(_is_number(r.get(c)) for r in records[:limit] if r.get(c) is not None)}

    def cell(c: str, text: str) -> str:
        # a number, or one word (a name such as store-everything): never broken across lines
        word = len(text) <= 40 and " " not in text
        long = len(text) > 60  # a sentence or a parameter list: wide enough to read in a few lines
        kind = " class=num" if c in numeric else (" class=word" if word else " class=long" if long else "")
        return f"<td{kind}>{e(text)}</td>"

    head = "".join(f"<th>{e(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(cell(c, r.get(c, "")) for c in cols) + "</tr>" for r in rows)
    more = f"<p class='meta'>first {limit} of {len(records)} rows</p>" if len(records) > limit else ""
    return f"<div class='scroll'><table class='data'><tr>{head}</tr>{body}</table></div>{more}"


def value_html(value: Any) -> str:
    e = html.escape
    if isinstance(value, dict):
        rows = "".join(f"<tr><th>{e(str(k))}</th><td>{e(fmt_cell(v))}</td></tr>" for k, v in value.items())
        return f"<div class='scroll'><table class='data'>{rows}</table></div>"
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return "<ul>" + "".join(f"<li>{e(v)}</li>" for v in value) + "</ul>"
    if isinstance(value, list) and not value:
        return "<p class='meta'>none</p>"
    return f"<p>{e(fmt_cell(value))}</p>"


def anchor(*parts: str) -> str:
    return "-".join("".join(ch if ch.isalnum() or ch == "_" else "-" for ch in p) for p in parts)


def lead_figure(figures: list[dict[str, Any]], notes: Mapping[str, str]) -> dict[str, Any] | None:
    """The figure a notebook's section shows: the first its registry describes (the notes' first
    key, or a figure named after it), else its first figure."""
    for key in notes:
        for f in figures:
            if f["name"] == key or f["name"].startswith(f"{key}_"):
                return f
    return figures[0] if figures else None


class _Page:
    """One page being written: the inline figures it draws (each needs a unique id)."""

    def __init__(self, out: Path, figure_notes: Mapping[str, Mapping[str, str]], batch: str = ""):
        self.out = out
        self.figure_notes = figure_notes
        self.batch = batch  # the batch file the run read ("(defaults)": none), for the commands it suggests
        self.inline = 0

    def figure(self, entry: dict[str, Any], base: Path, notebook: str) -> str:
        """A figure without an iframe: its PNG, else its plotly figure drawn into a div."""
        e = html.escape
        name, caption = entry["name"], entry.get("caption") or entry["name"]
        rel = base.relative_to(self.out).as_posix()
        page = f"{rel}/figures/{name}.html"
        data = base / "figures" / f"{name}.json"
        png = base / "figures" / f"{name}.png"
        if png.is_file():
            # shown at the figure's own width (PNGs are written at scale 2), at most the page's
            with png.open("rb") as fh:
                width = int.from_bytes(fh.read(24)[16:20], "big") // 2
            body = (
                f"<img src='{e(rel)}/figures/{e(name)}.png' alt='{e(caption)}' "
                f"style='max-width:min(100%,{width}px)'>"
            )
        elif data.is_file():
            self.inline += 1
            fig_id = f"memlab-fig-{self.inline}"
            spec = json.loads(data.read_text(encoding="utf-8"))
            # a figure wider than the page is laid out again at the page's width (plotly reflows it)
            layout = spec.get("layout", {})
            layout["width"] = min(int(layout.get("width") or 900), PAGE_WIDTH)
            size = f"width:{layout['width']}px;height:{int(layout.get('height') or 520)}px"
            # JSON inside a script element: "</" would end it, so it is written "<\/" (same JSON)
            text = json.dumps({"data": spec.get("data", []), "layout": layout}).replace("</", "<\\/")
            body = (
                f"<div class='scroll'><div class='plot' id='{fig_id}' style='{size}'></div></div>"
                f"<script type='application/json' id='{fig_id}-data'>{text}</script>"
            )
        else:
            body = "<p class='meta'>(figure file missing)</p>"
        notes = self.figure_notes.get(notebook, {})
        about = entry.get("about") or next(
            (v for k, v in notes.items() if name == k or name.startswith(f"{k}_")), ""
        )
        return (
            f"<figure>{body}<figcaption>{e(caption)} · <a href='{e(page)}'>interactive</a>"
            f"</figcaption>{f'<p class=about>{e(about)}</p>' if about else ''}</figure>"
        )

    def fill(self, fill: dict[str, Any]) -> str:
        """What fills a skipped notebook: what to provide, and the command that runs it with it
        (this batch, each parameter with its example value)."""
        params = fill.get("parameters") or {}
        if not params:
            return f". To fill it: {html.escape(fill['how'])}" if fill.get("how") else ""
        config = ["--config", self.batch] if self.batch and not self.batch.startswith("(") else []
        given = [x for k, v in params.items() for x in ("-p", f"{k}={v}")]
        command = shlex.join(["memlab", "run", *config, *given])
        how = f"{html.escape(fill['how'])}, then run" if fill.get("how") else "run"
        return f". To fill it: {how}<br><code>{html.escape(command)}</code>"

    def entry(self, entry: dict[str, Any], base: Path, notebook: str) -> str:
        e = html.escape
        caption = entry.get("caption") or entry["name"]
        if entry["type"] == "figure":
            return self.figure(entry, base, notebook)
        if entry["type"] == "table":
            rel = base.relative_to(self.out).as_posix()
            files = " · ".join(
                f"<a href='{e(rel)}/{e(f)}'>{e(Path(f).suffix[1:])}</a>" for f in entry["files"]
            )
            json_file = next((base / f for f in entry["files"] if f.endswith(".json")), None)
            table = table_html(json_file) if json_file and json_file.is_file() else ""
            return f"<h4>{e(caption)}</h4>{table}<p class='meta'>{files}</p>"
        if entry["type"] == "value":
            return f"<h4>{e(caption)}</h4>{value_html(entry['value'])}"
        return ""

    def section(self, n: dict[str, Any], report: dict[str, Any]) -> list[str]:
        """One notebook: its lead figure and its short values shown, everything else behind one
        disclosure; a skipped notebook is one line."""
        e = html.escape
        nb, status = n["notebook"], n["status"]
        here = anchor(n["run"], nb)
        if status == "ok" and report.get("skipped"):
            return [
                f"<p id='{here}' class='skipped'><b>{e(nb)}</b> · skipped: {e(report['skipped'])}"
                f"{self.fill(report.get('fill') or {})}</p>"
            ]
        rel_nb = Path(n["output"]).relative_to(self.out).as_posix()
        parts = [
            f"<h3 id='{here}'>{e(nb)} "
            f"<span class='{e(status)}'>{'✓ ok' if status == 'ok' else '✗ failed'}</span></h3>"
            f"<p class='meta'><a href='{e(rel_nb)}'>executed notebook</a> · "
            f"{fmt_number(n.get('duration_s') or 0)} s</p>"
        ]
        if n.get("error"):
            parts.append(f"<pre>{e(n['error'])}</pre>")
        entries = report.get("entries", [])
        if status != "ok" and entries:
            parts.append("<p class='meta'>what the notebook wrote before it failed:</p>")
        base = Path(n["out_dir"])
        lead = lead_figure([x for x in entries if x["type"] == "figure"], self.figure_notes.get(nb, {}))
        if lead is not None:
            parts.append(self.figure(lead, base, nb))
        rest = []
        for x in entries:
            if x is lead:
                continue
            if x["type"] == "value" and not isinstance(x["value"], dict | list):
                caption = x.get("caption") or x["name"]
                parts.append(f"<p class='fact'><b>{e(caption)}</b>: {e(fmt_cell(x['value']) or 'none')}</p>")
            else:
                rest.append(x)
        if rest:
            counts = [
                (sum(x["type"] == t for x in rest), word)
                for t, word in (("figure", "figure"), ("table", "table"), ("value", "result"))
            ]
            more = "more figure" if lead is not None else "figure"
            label = " · ".join(
                f"{k} {more if word == 'figure' else word}{'s' * (k > 1)}" for k, word in counts if k
            )
            parts.append(
                f"<details><summary>{e(label)}</summary>"
                + "".join(self.entry(x, base, nb) for x in rest)
                + "</details>"
            )
        return parts


def render_index(
    manifest: dict[str, Any],
    reports: list[dict[str, Any]],
    out: Path,
    figure_notes: Mapping[str, Mapping[str, str]] | None = None,
) -> str:
    """The page. ``manifest["notebooks"]`` lists every (run, notebook) in batch order; ``reports``
    holds each one's report.json (what a failed notebook wrote before it failed; empty if
    nothing); paths are made relative to ``out``; ``figure_notes`` says, per notebook, what each of
    its figures shows (the notebook registry's; the first one a notebook lists is the figure its
    section shows). One figure per notebook is shown, the rest behind a disclosure; figures are
    their PNG, else drawn inline by one plotly.min.js (``out/plotly.min.js``): no iframes."""
    page = _Page(out, figure_notes or {}, str(manifest.get("batch") or ""))
    e = html.escape
    nbs = manifest["notebooks"]
    runs = list(dict.fromkeys(n["run"] for n in nbs))
    toc = ["<nav class='toc'><b>Contents</b><ul>"]
    for run in runs:
        links = " · ".join(
            f"<a href='#{anchor(run, n['notebook'])}'>{e(n['notebook'])}</a> "
            f"<span class='{e(n['status'])}'>{'✓' if n['status'] == 'ok' else '✗'}</span>"
            for n in nbs
            if n["run"] == run
        )
        toc.append(f"<li><a href='#{anchor(run)}'>{e(run)}</a>: {links}</li>")
    toc.append("</ul></nav>")
    body = []
    for run in runs:
        body.append(f"<h2 id='{anchor(run)}'>{e(run)}</h2>")
        for n, report in ((n, r) for n, r in zip(nbs, reports, strict=True) if n["run"] == run):
            body += page.section(n, report or {})
    plotly = "<script charset='utf-8' src='plotly.min.js'></script>" if page.inline else ""
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>memlab results</title>"
        f"<style>{CSS}</style>{plotly}</head><body><h1>memlab results</h1>",
        f"<p class='meta'>{e(manifest['started'])} · {fmt_number(manifest['duration_s'])} s · status "
        f"<span class='{e(manifest['status'])}'>{e(manifest['status'])}</span> · commit "
        f"{e(str(manifest.get('git_commit') or '')[:12])} · batch {e(manifest['batch'])} · "
        "<a href='manifest.json'>manifest.json</a></p>",
        *toc,
        *body,
    ]
    if page.inline:
        parts.append(DRAW)
    parts.append("</body></html>")
    return "\n".join(parts)
