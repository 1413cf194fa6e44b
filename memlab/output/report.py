"""What a notebook writes: tables and figures under its output folder, listed in report.json.

A notebook makes one ``Report(out_dir, fig_formats)``, calls ``table`` and ``figure`` for each
result, and ``finish`` at the end (or ``skip`` when it has nothing to do). ``memlab run`` reads
``report.json`` to build its index page. The file is rewritten after every entry, so a notebook
that fails half-way still lists what it wrote (``"finished": false``), and the page shows it under
the failure.

Under ``memlab run`` (``MEMLAB_DEFER_STATIC=1`` in the kernel's environment) PNG and SVG are
left to the runner, which makes them for the whole batch with one kaleido browser.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlab.core.errors import InputError
from memlab.core.files import atomic_write_bytes, atomic_write_text
from memlab.core.registry import check_names
from memlab.output.figures.export import STATIC_FORMATS, export_figure, export_static_batch, static_export
from memlab.output.io import TABLE_FORMATS, json_ready

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go


FIG_FORMATS = ("html", "png", "svg")  # a figure's files (its JSON is always written)


def check_fig_formats(fig_formats) -> list[str]:
    """The figure formats asked for (``json`` aside: always written), each one of ``FIG_FORMATS``."""
    formats = [f for f in fig_formats if f != "json"]
    check_names(dict.fromkeys(FIG_FORMATS), formats, "figure format")
    return formats


class Report:
    def __init__(
        self,
        out_dir: str | Path,
        fig_formats: list[str] | tuple[str, ...] = ("html", "png"),
        table_formats: tuple[str, ...] = ("parquet", "json"),
    ):
        self.out_dir = Path(out_dir)
        self.fig_formats = check_fig_formats(fig_formats)
        check_names(dict.fromkeys(TABLE_FORMATS), table_formats, "table format")
        self.table_formats = table_formats
        self.entries: list[dict[str, Any]] = []
        self.skipped: str | None = None
        self.fill: dict[str, str] = {}  # the parameters that fill a skipped notebook, an example each
        self.how = ""  # what the user provides to fill it, in words
        self.deferred = os.environ.get("MEMLAB_DEFER_STATIC") == "1"
        (self.out_dir / "figures").mkdir(parents=True, exist_ok=True)
        (self.out_dir / "tables").mkdir(parents=True, exist_ok=True)

    def table(self, name: str, df: pd.DataFrame, caption: str = "") -> pd.DataFrame:
        """Write a table as parquet and JSON (records) under tables/; returns it for display."""
        check_name(name)
        files = []
        for fmt in self.table_formats:
            path = self.out_dir / "tables" / f"{name}.{fmt}"
            if fmt == "parquet":
                import io

                buf = io.BytesIO()
                df.to_parquet(buf, index=False)
                atomic_write_bytes(path, buf.getvalue())
            elif fmt == "csv":
                atomic_write_text(path, df.to_csv(index=False))
            else:
                records = json.loads(df.to_json(orient="records", double_precision=15))
                atomic_write_text(path, json.dumps(records, indent=1, ensure_ascii=False) + "\n")
            files.append(str(path.relative_to(self.out_dir)))
        self.entries.append(
            {"type": "table", "name": name, "caption": caption, "files": files, "rows": len(df)}
        )
        self._save()
        return df

    def figure(self, name: str, fig: go.Figure, caption: str = "") -> go.Figure:
        """Write a figure under figures/ (HTML always; PNG/SVG now, or by the runner)."""
        check_name(name)
        stem = self.out_dir / "figures" / name
        formats = ["html"] if self.deferred else self.fig_formats
        written = export_figure(fig, stem, formats)
        self.entries.append(
            {
                "type": "figure",
                "name": name,
                "caption": caption or (fig.layout.title.text or name),
                "files": [str(p.relative_to(self.out_dir)) for p in written],
                "static": [f for f in self.fig_formats if f in STATIC_FORMATS],
            }
        )
        self._save()
        return fig

    def value(self, name: str, value: Any, caption: str = "") -> Any:
        """A single named result (a chosen configuration, a headroom...)."""
        self.entries.append({"type": "value", "name": name, "caption": caption, "value": value})
        self._save()
        return value

    def skip(
        self,
        reason: str,
        parameters: dict[str, Any] | None = None,
        fill: dict[str, str] | None = None,
        how: str = "",
    ) -> Path:
        """The notebook has nothing to do (``reason`` says why): the page gives it one line,
        with what fills it: ``how`` (what the user provides, in words) and ``fill`` (the
        parameters to pass, each with an example value), which the page writes as the
        ``memlab run ... -p key=value`` command."""
        self.skipped = reason
        self.fill = dict(fill or {})
        self.how = how
        return self.finish(parameters)

    def finish(self, parameters: dict[str, Any] | None = None) -> Path:
        """Write report.json listing everything this notebook wrote."""
        return self._save(parameters or {}, finished=True)

    def _save(self, parameters: dict[str, Any] | None = None, finished: bool = False) -> Path:
        doc: dict[str, Any] = {"parameters": parameters or {}, "entries": self.entries, "finished": finished}
        if self.skipped is not None:
            doc["skipped"] = self.skipped
            if self.fill or self.how:
                doc["fill"] = {"parameters": self.fill, "how": self.how}
        return atomic_write_text(
            self.out_dir / "report.json",
            json.dumps(json_ready(doc), indent=2, ensure_ascii=False) + "\n",
        )


def safe_name(text: str) -> str:
    """A file-name part from free text (a dataset's name or folder): letters, digits, . _ -."""
    return re.sub(r"[^\w.-]+", "_", text).strip("._") or "_"


def check_name(name: str, where: Path | None = None) -> None:
    """Tables and figures are files directly under tables/ and figures/: no paths."""
    if not isinstance(name, str) or safe_name(name) != name:
        at = f"{where}: " if where is not None else ""
        raise InputError(f"{at}report entry name {name!r} is not a plain file name; use safe_name()")


def export_deferred(out_dirs: list[Path]) -> list[Path]:
    """Make the PNG/SVG every report under ``out_dirs`` asked for, with one kaleido browser."""
    jobs: dict[tuple[str, ...], list[Path]] = {}
    for d in out_dirs:
        report = d / "report.json"
        if not report.is_file():
            continue
        for e in json.loads(report.read_text(encoding="utf-8"))["entries"]:
            if e["type"] == "figure" and e.get("static"):
                check_name(e["name"], report)  # a report.json written by hand: still inside figures/
                jobs.setdefault(tuple(e["static"]), []).append(d / "figures" / f"{e['name']}.json")
    written: list[Path] = []
    with static_export():  # one browser for every group
        for formats, files in jobs.items():
            written += export_static_batch(files, formats)
    return written
