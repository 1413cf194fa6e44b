"""The live panel's speed as a user feels it: JupyterLab in headless Chromium, from a slider key
press to the repainted plot.

Starts JupyterLab on loopback with notebooks/03_tune.ipynb, runs it in Debian's Chromium through
Playwright, then presses ArrowRight/ArrowLeft on the bonus slider ``--moves`` times. Each move is
timed in the browser's own clock: from just before the key press to the first animation frame
after the plot's title shows the new bonus (plotly has redrawn the bars by then). Prints the
median and the 95th percentile; target: median <= 150 ms, p95 <= 300 ms on 2 cores. The last
line is one JSON object.

Usage: python bench/bench_panel_browser.py [--moves 40] [--source published]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from lab import ARGS, jupyterlab_server, run_all_cells

from memlab.output.figures import find_browser

WATCH = """() => {
  window.__memlab_times = [];
  const title = document.querySelector('.js-plotly-plot .gtitle');
  const observer = new MutationObserver(() => {
    requestAnimationFrame(() => window.__memlab_times.push(performance.now()));
  });
  observer.observe(title.closest('.js-plotly-plot'), {subtree: true, childList: true, characterData: true});
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=40)
    args = parser.parse_args()
    path = find_browser()
    if path is None:
        raise SystemExit("no Chromium: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, jupyterlab_server(Path(tmp)) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        run_all_cells(page, Path(tmp))
        page.locator(".memlab-bonus .noUi-handle").first.click()
        page.evaluate(WATCH)
        latencies = []
        for i in range(args.moves + 3):  # the first three warm the path up and are not counted
            before = page.locator(".js-plotly-plot .gtitle").first.text_content()
            seen = page.evaluate("window.__memlab_times.length")
            t0 = page.evaluate("performance.now()")
            page.keyboard.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
            page.wait_for_function(
                f"document.querySelector('.js-plotly-plot .gtitle').textContent !== {json.dumps(before)}"
                f" && window.__memlab_times.length > {seen}",
                timeout=30_000,
            )
            t1 = page.evaluate(f"window.__memlab_times[{seen}]")
            if i >= 3:
                latencies.append(t1 - t0)
        browser.close()
    latencies.sort()
    median = statistics.median(latencies)
    p95 = latencies[min(len(latencies) - 1, round(0.95 * (len(latencies) - 1)))]
    print(
        f"panel in JupyterLab (headless Chromium): slider key press to repainted plot "
        f"{median:.0f} ms median, {p95:.0f} ms p95 over {len(latencies)} moves "
        f"(target: median <= 150 ms, p95 <= 300 ms)"
    )
    print(json.dumps({"median_ms": round(median, 1), "p95_ms": round(p95, 1), "moves": len(latencies)}))


if __name__ == "__main__":
    main()
