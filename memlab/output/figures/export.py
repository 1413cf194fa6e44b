"""Figure export: offline HTML always, PNG/SVG through kaleido when a Chromium is found."""

from __future__ import annotations

import contextlib
import os
import shutil
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import plotly.graph_objects as go

from memlab.core.files import atomic_write_bytes, atomic_write_text
from memlab.core.registry import check_names

if TYPE_CHECKING:
    pass

from memlab.output.figures.style import BROWSER_NAMES, STATIC_FORMATS

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


SHARED_PLOTLY_JS = "MEMLAB_PLOTLY_JS"  # set by `memlab run`: one plotly.min.js per results folder


def write_html(fig: go.Figure, path: Path) -> Path:
    """Offline HTML: plotly.min.js is loaded from a local copy, never a CDN. Under ``memlab run``
    every figure of the results folder shares one copy (``$MEMLAB_PLOTLY_JS``, linked by a
    relative path, so the folder can move); otherwise it is copied beside the page."""
    shared = os.environ.get(SHARED_PLOTLY_JS)
    js = Path(shared) if shared else path.parent / "plotly.min.js"
    if not js.is_file():
        js.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(js, plotly_js_path().read_bytes())
    path.parent.mkdir(parents=True, exist_ok=True)
    src = os.path.relpath(js, path.parent.resolve()) if shared else "plotly.min.js"
    html = fig.to_html(
        include_plotlyjs=False, full_html=True, include_mathjax=False, config={"displaylogo": False}
    )
    tag = f'<script charset="utf-8" src="{Path(src).as_posix()}"></script>'
    html = html.replace("<head>", f"<head>{tag}", 1) if "<head>" in html else tag + html
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
    check_names(dict.fromkeys(("html", "json", *STATIC_FORMATS)), formats, "figure format")
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
