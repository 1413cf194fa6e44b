"""PNG/SVG export beside the notebooks: ``memlab run`` hands each notebook's results folder to one
exporter as soon as the notebook succeeds, and the exporter makes the static images it asked for
(``memlab.output.report.export_deferred``) with one kaleido browser, in a thread of the runner,
while the other notebooks still run. Kaleido's browser does the work in its own processes; the
thread only waits for it, so the runner keeps reporting notebooks as they finish.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from pathlib import Path


class Exporter:
    """``submit(out_dir)`` queues a results folder; ``finish()`` waits for the queue to empty and
    returns the files written and the seconds the exports took. An export that fails raises in
    ``finish``."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Path | None] = queue.Queue()
        self._written: list[Path] = []
        self._busy = 0.0
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def submit(self, out_dir: Path) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="memlab-export", daemon=True)
            self._thread.start()
        self._queue.put(Path(out_dir))

    def _work(self) -> None:
        from memlab.output.figures.export import static_export
        from memlab.output.report import export_deferred

        try:
            with static_export():  # one browser for every folder
                while (out_dir := self._queue.get()) is not None:
                    t0 = time.perf_counter()
                    self._written += export_deferred([out_dir])
                    self._busy += time.perf_counter() - t0
        except BaseException as e:  # handed to finish(), in the runner's thread
            self._error = e

    def stop(self) -> None:
        """Drop what is queued, let the export in progress end and close the browser."""
        with contextlib.suppress(queue.Empty):
            while True:
                self._queue.get_nowait()
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def finish(self) -> tuple[list[Path], float]:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self._error is not None:
            raise self._error
        return self._written, self._busy
