"""index.html of a results folder: every run, notebook, figure and table, written for people.

A table of contents with an anchor per run and notebook; under each figure a line saying what it
shows; numbers to three significant figures, intervals as ``[0.245, 0.285)``, booleans as ✓ and
✗, nothing where there is nothing (never ``nan``, ``None`` or a Python list).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

CSS = """
body{font-family:Arial,Helvetica,sans-serif;max-width:1150px;margin:2em auto;padding:0 1em;color:#222;
  font-size:15px;line-height:1.4}
h1{font-size:1.6em} h2{border-bottom:2px solid #0072B2;padding-bottom:.2em;margin-top:2em}
h3{margin-top:1.6em} h4{margin:1.2em 0 .3em} .ok{color:#009E73;font-weight:bold}
.failed{color:#D55E00;font-weight:bold} nav.toc{background:#f4f8fb;padding:.6em 1em;border:1px solid #d6e4ef}
nav.toc ul{margin:.2em 0;padding-left:1.2em} nav.toc li{margin:.1em 0}
figure{margin:1em 0} figure img{max-width:100%;border:1px solid #ddd}
figure iframe{width:100%;height:560px;border:1px solid #ddd} figcaption{color:#333}
.about{color:#555;font-size:.93em;margin:.2em 0}
.scroll{overflow-x:auto;max-width:100%} table.data{border-collapse:collapse;font-size:.88em;margin:.4em 0}
table.data td,table.data th{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top;
  max-width:28em;overflow-wrap:anywhere} table.data td.num{text-align:right;white-space:nowrap}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto} .meta{color:#666;font-size:.9em}
"""


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
        parsed = _json_list(value)
        return value if parsed is None else fmt_cell(parsed)
    if isinstance(value, list | tuple):
        return ", ".join(s for s in (fmt_cell(v) for v in value) if s)
    if isinstance(value, dict):
        return ", ".join(f"{k} {fmt_cell(v)}" for k, v in value.items() if fmt_cell(v))
    return str(value)


def _json_list(text: str) -> Any:
    """A cell that holds a JSON list (how intervals are stored in tables), else None."""
    if not (text.startswith("[") and text.endswith("]")):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _rows(records: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Records made readable; an ``intervals`` column with its ``closed`` flags becomes one text."""
    out = []
    for r in records:
        r = dict(r)
        if "intervals" in r and "closed" in r:
            ivs = r.pop("intervals")
            closed = r.pop("closed")
            ivs = _json_list(ivs) if isinstance(ivs, str) else ivs
            closed = _json_list(closed) if isinstance(closed, str) else closed
            r["feasible bonus"] = (
                " ∪ ".join(
                    fmt_interval(lo, hi, tuple(c))
                    for (lo, hi), c in zip(ivs or [], closed or [], strict=False)
                )
                or "empty"
            )
        out.append(
            {k: (v if isinstance(v, str) and k == "feasible bonus" else fmt_cell(v)) for k, v in r.items()}
        )
    return out


def table_html(path: Path, limit: int = 25) -> str:
    records = json.loads(path.read_text(encoding="utf-8"))
    if not records:
        return "<p class='meta'>(no rows)</p>"
    rows = _rows(records[:limit])
    cols = list(dict.fromkeys(k for r in rows for k in r))
    e = html.escape
    numeric = {
        c
        for c in cols
        if all(isinstance(r.get(c), int | float) for r in records[:limit] if r.get(c) is not None)
    }
    head = "".join(f"<th>{e(c)}</th>" for c in cols)
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=num' if c in numeric else ''}>{e(r.get(c, ''))}</td>" for c in cols)
        + "</tr>"
        for r in rows
    )
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


def render_index(
    manifest: dict[str, Any],
    reports: list[dict[str, Any]],
    out: Path,
    figure_notes: Mapping[str, Mapping[str, str]] | None = None,
) -> str:
    """The page. ``manifest["notebooks"]`` lists every (run, notebook) in batch order; ``reports``
    holds each one's report.json (empty for a failed notebook); paths are made relative to ``out``;
    ``figure_notes`` says, per notebook, what each of its figures shows (the notebook registry's)."""
    figure_notes = figure_notes or {}
    e = html.escape
    nbs = manifest["notebooks"]
    runs = list(dict.fromkeys(n["run"] for n in nbs))
    toc = ["<nav class='toc'><b>Contents</b><ul>"]
    for run in runs:
        toc.append(f"<li><a href='#{anchor(run)}'>{e(run)}</a><ul>")
        for n in (n for n in nbs if n["run"] == run):
            mark = "✓" if n["status"] == "ok" else "✗"
            toc.append(
                f"<li><a href='#{anchor(run, n['notebook'])}'>{e(n['notebook'])}</a> "
                f"<span class='{e(n['status'])}'>{mark}</span></li>"
            )
        toc.append("</ul></li>")
    toc.append("</ul></nav>")
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>memlab results</title>"
        f"<style>{CSS}</style></head><body><h1>memlab results</h1>",
        f"<p class='meta'>{e(manifest['started'])} · {fmt_number(manifest['duration_s'])} s · status "
        f"<span class='{e(manifest['status'])}'>{e(manifest['status'])}</span> · commit "
        f"{e(str(manifest.get('git_commit') or '')[:12])} · batch {e(manifest['batch'])} · "
        "<a href='manifest.json'>manifest.json</a></p>",
        *toc,
    ]
    for run in runs:
        parts.append(f"<h2 id='{anchor(run)}'>{e(run)}</h2>")
        for n, report in ((n, r) for n, r in zip(nbs, reports, strict=True) if n["run"] == run):
            rel_nb = Path(n["output"]).relative_to(out).as_posix()
            parts.append(
                f"<h3 id='{anchor(run, n['notebook'])}'>{e(n['notebook'])} "
                f"<span class='{e(n['status'])}'>{'✓ ok' if n['status'] == 'ok' else '✗ failed'}</span></h3>"
                f"<p class='meta'><a href='{e(rel_nb)}'>executed notebook</a> · "
                f"{fmt_number(n.get('duration_s') or 0)} s</p>"
            )
            if n.get("error"):
                parts.append(f"<pre>{e(n['error'])}</pre>")
            base = Path(n["out_dir"])
            rel = base.relative_to(out).as_posix()
            for entry in report.get("entries", []):
                name, caption = entry["name"], entry.get("caption") or entry["name"]
                if entry["type"] == "figure":
                    page = f"{rel}/figures/{name}.html"
                    body = (
                        f"<img src='{e(rel)}/figures/{e(name)}.png' alt='{e(caption)}'>"
                        if (base / "figures" / f"{name}.png").is_file()
                        else f"<iframe src='{e(page)}' loading='lazy'></iframe>"
                    )
                    notes = figure_notes.get(n["notebook"], {})
                    about = entry.get("about") or next(
                        (v for k, v in notes.items() if name == k or name.startswith(f"{k}_")), ""
                    )
                    parts.append(
                        f"<figure>{body}<figcaption>{e(caption)} · <a href='{e(page)}'>interactive</a>"
                        f"</figcaption>{f'<p class=about>{e(about)}</p>' if about else ''}</figure>"
                    )
                elif entry["type"] == "table":
                    files = " · ".join(
                        f"<a href='{e(rel)}/{e(f)}'>{e(Path(f).suffix[1:])}</a>" for f in entry["files"]
                    )
                    json_file = next((base / f for f in entry["files"] if f.endswith(".json")), None)
                    table = table_html(json_file) if json_file and json_file.is_file() else ""
                    parts.append(f"<h4>{e(caption)}</h4>{table}<p class='meta'>{files}</p>")
                elif entry["type"] == "value":
                    parts.append(f"<h4>{e(caption)}</h4>{value_html(entry['value'])}")
    parts.append("</body></html>")
    return "\n".join(parts)
