"""JupyterLab in headless Chromium, for the browser tests and the panel latency benchmark."""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-sync",
    "--disable-background-networking",
    "--disable-component-update",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_parameters(source: Path, target: Path, notebook: str, parameters: dict) -> None:
    """Copy a notebook and its jupytext pair with values of the parameters cell changed in both, as
    a user edits the cell (the pair first, so the notebook is the newer of the two)."""
    import json

    import nbformat

    def edit(text: str) -> str:
        lines = []
        for line in text.splitlines():
            name = line.split(":", 1)[0]
            if name in parameters and " = " in line:
                kind = line.split(":", 1)[1].split("=", 1)[0].strip()
                line = f"{name}: {kind} = {json.dumps(parameters[name])}"
            lines.append(line)
        return "\n".join(lines) + ("\n" if text.endswith("\n") else "")

    (target / f"{notebook}.py").write_text(edit((source / f"{notebook}.py").read_text()))
    nb = nbformat.read(source / f"{notebook}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    cell.source = edit(cell.source)
    nbformat.write(nb, target / f"{notebook}.ipynb")


@contextlib.contextmanager
def jupyterlab_server(tmp_path: Path, notebook: str = "03_tune", parameters: dict | None = None):
    """A JupyterLab server on loopback, started as ``make lab`` starts it (the repository's
    jupyter_server_config.py), with one notebook and its jupytext pair in its root folder
    (``parameters``: values of its parameters cell changed in both); yields its URL."""
    # the seed's published scores by default: no embedding model in the browser tests
    with_parameters(NB_DIR, tmp_path, notebook, {"source": "published", **(parameters or {})})
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "MEMLAB_DEFER_STATIC": "1"}
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--config={ROOT / 'jupyter_server_config.py'}",
        "--no-browser",
        "--allow-root",
        f"--ServerApp.port={port}",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={tmp_path}",
        "--LabApp.expose_app_in_browser=True",
        "--LabApp.news_url=None",
    ]
    log = (tmp_path / "lab.log").open("w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError(
                        f"JupyterLab did not start: {(tmp_path / 'lab.log').read_text()[-2000:]}"
                    ) from None
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/lab/tree/{notebook}.ipynb?token={token}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


KERNEL_IDLE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const kernel = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!(kernel && kernel.status === 'idle' && w.content && w.content.widgets.length);
}"""


def run_all_cells(page, tmp_path: Path) -> None:
    """Run the notebook once its kernel is idle; on failure keep a screenshot and the server log."""
    try:
        page.wait_for_function(KERNEL_IDLE, timeout=120_000)
        page.evaluate("async () => { await window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        page.wait_for_selector(".memlab-bonus .noUi-handle", timeout=120_000)
        page.wait_for_selector(".js-plotly-plot .gtitle", timeout=60_000)
    except Exception as e:
        page.screenshot(path=str(tmp_path / "failure.png"))
        log = (tmp_path / "lab.log").read_text()[-3000:]
        raise AssertionError(
            f"the panel did not render ({e}); screenshot {tmp_path / 'failure.png'}; server log:\n{log}"
        ) from None
