"""JupyterLab in headless Chromium, for the browser tests and the panel latency benchmark."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
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


@contextlib.contextmanager
def jupyterlab_server(tmp_path: Path, notebook: str = "03_tune"):
    """A JupyterLab server on loopback, started as ``make lab`` starts it (the repository's
    jupyter_server_config.py), with one notebook and its jupytext pair in its root folder; yields
    its URL."""
    for suffix in (".ipynb", ".py"):
        shutil.copy(NB_DIR / f"{notebook}{suffix}", tmp_path / f"{notebook}{suffix}")
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
