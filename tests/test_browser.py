"""Checked in a real browser: headless Debian Chromium driven by Playwright (no browser download)."""

from __future__ import annotations

import io
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from memlab.app.cli import main
from memlab.output.figures import find_browser

pytestmark = pytest.mark.browser
NB_DIR = Path(__file__).resolve().parents[1] / "notebooks"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-sync",
    "--disable-background-networking",
    "--disable-component-update",
]


@pytest.fixture(scope="module")
def browser():
    path = find_browser()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium (.ci/run does)")
        pytest.skip("no Chromium here")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=ARGS)
        yield b
        b.close()


def not_blank(png: bytes) -> int:
    """How many distinct colours the screenshot has (a blank page has one)."""
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB")
    return len(img.getcolors(maxcolors=1 << 20) or [])


@pytest.mark.notebook
def test_index_and_a_figure_page_render(browser, tmp_path):
    batch = tmp_path / "batch.yaml"
    batch.write_text(
        "notebooks: [01_reproduce]\nparameters: {fig_formats: [html, png]}\n"
        "runs:\n  - {name: published, parameters: {source: published}}\n"
    )
    out = tmp_path / "out"
    assert main(["run", "--config", str(batch), "--out", str(out)]) == 0
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto((out / "index.html").as_uri())
    assert page.locator("figure img").count() == 2  # the PNGs
    page.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
    assert not_blank(page.screenshot(full_page=True)) > 50
    assert page.locator("table.data").count() == 5

    page.goto((out / "published" / "01_reproduce" / "figures" / "bonus_curve.html").as_uri())
    page.wait_for_selector(".js-plotly-plot .main-svg")
    assert (
        page.locator(".js-plotly-plot .gtitle").text_content() == "Recency bonus 0.05 × exp(−age / 14 days)"
    )
    assert page.locator(".js-plotly-plot .scatterlayer .trace").count() == 2
    assert not_blank(page.screenshot()) > 20
    page.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def jupyterlab(tmp_path):
    """A JupyterLab server on loopback, with 03_tune in its root folder."""
    shutil.copy(NB_DIR / "03_tune.ipynb", tmp_path / "03_tune.ipynb")
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "MEMLAB_DEFER_STATIC": "1"}
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
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
        yield f"http://127.0.0.1:{port}/lab/tree/03_tune.ipynb?token={token}"
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


def test_jupyterlab_slider_moves_the_figure_and_the_criteria(browser, jupyterlab, tmp_path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(jupyterlab)
    run_all_cells(page, tmp_path)
    title = page.locator(".js-plotly-plot .gtitle").first
    criteria = page.locator(".memlab-criteria-box").first
    assert title.text_content() == "bonus 0.05, tau 14 days, threshold 0.45 · exp/add · published/en"
    assert "all criteria hold" in criteria.text_content()
    bar_before = page.locator(".js-plotly-plot .barlayer .trace").nth(1).inner_html()

    page.locator(".memlab-bonus .noUi-handle").first.click()
    for _ in range(10):  # 10 steps of 0.001: bonus 0.05 -> 0.04
        page.keyboard.press("ArrowLeft")
    page.wait_for_function(
        "document.querySelector('.js-plotly-plot .gtitle').textContent.startsWith('bonus 0.04,')",
        timeout=30_000,
    )
    assert title.text_content() == "bonus 0.04, tau 14 days, threshold 0.45 · exp/add · published/en"
    page.wait_for_function("document.querySelector('.memlab-criteria-box').textContent.includes('fails c')")
    assert "headroom 0.022" in criteria.text_content()
    assert page.locator(".js-plotly-plot .barlayer .trace").nth(1).inner_html() != bar_before
    page.close()
