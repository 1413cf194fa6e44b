"""Executing a batch: notebooks in parallel kernels, into a staging folder swapped in at the end.

Guarantees, whatever happens to the process:

- one ``memlab run`` owns a results folder at a time: a lock file beside it holds the owner's
  pid; a second run names the owner and stops; a lock whose process is dead is taken over, and
  the log says so;
- results are written to ``.<name>.staging-<pid>`` beside the folder and swapped in at the end
  with one atomic exchange (``renameat2(RENAME_EXCHANGE)``): a run killed at any point leaves the
  earlier results or the new ones, never a mix; what a dead run left behind is removed by the next;
- kernels die with their runner: each worker process asks the kernel to die when its parent
  does (``PR_SET_PDEATHSIG``) and kills its process group on SIGTERM;
- a kernel that dies while starting is started once more, and the log says so;
- kernels talk over IPC sockets in a private folder (no "running over TCP" warning).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import ctypes
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import memlab.output  # noqa: F401  (imported before papermill: spares jsonschema's 1 s IRI grammar)
from memlab.app.exporter import Exporter
from memlab.app.notebooks import figure_notes
from memlab.app.reuse import Reuse, keep_fresh, reuse_earlier
from memlab.app.runner import Batch, Result, git_commit, kernel_name, now, versions
from memlab.core.errors import InputError, MissingFileError
from memlab.core.files import atomic_write_text, pid_alive
from memlab.core.numbers import check_number
from memlab.core.paths import inside
from memlab.core.urls import SECRETS_ENV, hide_secrets, redact

RENAME_EXCHANGE = 2
PR_SET_PDEATHSIG = 1
STARTUP_ERRORS = ("Kernel died before replying to kernel_info", "Kernel didn't respond")


# ---------------------------------------------------------------------------------------------
# owning a results folder


def lock_path(out: Path) -> Path:
    return out.parent / f".{out.name}.lock"


def acquire(out: Path, log) -> Path:
    """Create the lock beside ``out``; a live owner is an error, a dead one is taken over."""
    lock = lock_path(out)
    lock.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if lock.is_symlink() or not lock.is_file():
                raise InputError(
                    f"{lock}: the run lock is not a regular file: memlab leaves it alone; remove it "
                    f"yourself if no memlab run is writing into {out}"
                ) from None
            owner = lock_owner(lock)
            if owner["pid"] > 0 and pid_alive(owner["pid"]):
                raise InputError(
                    f"{out} is being written by another memlab run (pid {owner['pid']}, "
                    f"since {owner['started']}); wait for it or choose another --out"
                ) from None
            gone = f"pid {owner['pid']}" if owner["pid"] > 0 else "an unreadable lock"
            log(f"took over the lock of a memlab run that is gone ({gone}): {lock}")
            lock.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as fh:
            json.dump({"pid": os.getpid(), "started": now()}, fh)
        return lock
    raise InputError(f"could not take the lock {lock}")


def results_folder(out: Path) -> Path:
    """``--out``, resolved: a folder that does not exist yet, an empty one, or the results of an
    earlier run (its ``manifest.json`` names memlab); anything else is refused, never replaced."""
    given, out = out, out.resolve()
    if not out.exists():
        return out
    if not out.is_dir():
        raise InputError(
            f"--out {given}: is an existing file, not a results folder: memlab neither replaces nor "
            "hides it; choose another --out"
        )
    if any(out.iterdir()) and not earlier_run(out):
        raise InputError(
            f"--out {given}: is a folder that holds no earlier memlab run (no manifest.json of one): "
            "memlab replaces only its own results; choose a new or empty folder"
        )
    return out


def earlier_run(folder: Path) -> bool:
    """``folder`` holds the results of a ``memlab run`` (its manifest, written by memlab)."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and "memlab" in manifest and "notebooks" in manifest


def lock_owner(lock: Path) -> dict[str, Any]:
    """The pid (-1 when unreadable: empty, truncated, not JSON, not a pid) and start time a lock
    file records."""
    try:
        doc = json.loads(lock.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        doc = None
    pid = doc.get("pid") if isinstance(doc, dict) else None
    valid = isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid < 2**31
    return {
        "pid": pid if valid else -1,
        "started": str(doc.get("started", "?")) if isinstance(doc, dict) else "?",
    }


def clean_leftovers(out: Path) -> None:
    """Remove the staging folders of runs into ``out`` whose process is gone."""
    for d in out.parent.glob(f".{out.name}.staging-*"):
        pid = d.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)


def swap_in(staging: Path, out: Path) -> None:
    """Make ``staging`` the results folder in one atomic step; the old one is removed after."""
    if not out.exists():
        os.rename(staging, out)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    at_fdcwd = -100
    if (
        renameat2 is not None
        and renameat2(at_fdcwd, bytes(staging), at_fdcwd, bytes(out), RENAME_EXCHANGE) == 0
    ):
        shutil.rmtree(staging, ignore_errors=True)  # now holds the old results
        return
    # no atomic exchange here: move the old folder aside first, so no mix is ever in place
    aside = out.parent / f".{out.name}.old-{os.getpid()}"
    os.rename(out, aside)
    os.rename(staging, out)
    shutil.rmtree(aside, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# one notebook, in a worker process


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (a worker's kernels start their own session, so a process
    group does not hold them), read from /proc; empty where there is no /proc."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and everything below it, children first gathered, then all at once."""
    for p in [*descendants(pid), pid]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, signal.SIGKILL)


def _die_with_parent(log_path: str | None = None) -> None:
    """Worker start-up: die when the runner dies, and take the kernels along. The worker's and
    its kernels' own output goes to ``log_path`` (the staging folder's ``kernels.log``), not to
    the terminal: a kernel that outlives a stopped run must not print after the runner's last
    line."""
    if log_path is not None:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    os.setpgrp()  # the worker and its kernels: one group to kill

    def kill_group(signum, frame):
        for p in descendants(os.getpid()):  # the kernels, in their own sessions
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGKILL)
        os.killpg(0, signal.SIGKILL)

    signal.signal(signal.SIGTERM, kill_group)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner handles ^C for the whole batch


def execute(job: dict[str, Any]) -> dict[str, Any]:
    """Run one notebook; a kernel that dies while starting gets one more try."""
    import papermill as pm
    from traitlets.config import Config

    out: dict[str, Any] = {"start": now(), "status": "ok", "error": None, "retried": False}
    t0 = time.perf_counter()
    started = Path(job["output"]).with_suffix(".running")  # lets the runner say what runs now
    started.touch()
    ipc = tempfile.mkdtemp(prefix="memlab-ipc-")
    config = Config()
    config.KernelManager.transport = "ipc"
    config.KernelManager.ip = os.path.join(ipc, "kernel")
    os.environ.update(job["env"])
    try:
        for attempt in (1, 2):
            try:
                pm.execute_notebook(
                    job["input"],
                    job["output"],
                    parameters=job["parameters"],
                    kernel_name=job["kernel"],
                    cwd=job["cwd"],
                    progress_bar=False,
                    log_output=False,
                    config=config,
                )
                break
            except pm.PapermillExecutionError as e:
                out["status"], out["error"] = "failed", f"{e.ename}: {e.evalue}"
                break
            except Exception as e:  # a kernel that died, a notebook that could not be read...
                if attempt == 1 and any(s in str(e) for s in STARTUP_ERRORS):
                    out["retried"] = True
                    continue
                out["status"], out["error"] = "failed", f"{type(e).__name__}: {e}"
                break
    finally:
        shutil.rmtree(ipc, ignore_errors=True)
        started.unlink(missing_ok=True)
    redact_outputs(Path(job["output"]))
    if out["error"]:
        out["error"] = redact(out["error"])
    out["end"], out["duration_s"] = now(), round(time.perf_counter() - t0, 2)
    return out


REDACTED_OUTPUTS = ("error", "stream")  # where a traceback or a warning quotes what it was given


def redact_outputs(path: Path) -> bool:
    """Every URL in the tracebacks and printed streams of an executed notebook redacted
    (``memlab.core.urls.redact``): the kernel holds the real URLs (``SECRETS_ENV``), and an HTTP
    library's error quotes the URL it was given, credentials and all. The file is rewritten only
    when something changed (a notebook that printed no secret stays byte for byte as papermill
    wrote it); returns whether it was."""
    import nbformat

    try:
        nb = nbformat.read(path, as_version=4)
    except (OSError, ValueError):  # not written, or not a notebook: nothing to redact
        return False
    changed = False
    for cell in nb.cells:
        for output in cell.get("outputs", ()):
            if output.get("output_type") not in REDACTED_OUTPUTS:
                continue
            for key in ("text", "evalue", "traceback"):
                value = output.get(key)
                new = [redact(v) for v in value] if isinstance(value, list) else value
                new = redact(new) if isinstance(new, str) else new
                if new != value:
                    output[key] = new
                    changed = True
    if changed:
        text = nbformat.writes(nb)
        atomic_write_text(path, text if text.endswith("\n") else text + "\n")
    return changed


# ---------------------------------------------------------------------------------------------
# the batch


MAX_JOBS = 64  # kernels at once, each a process of a few hundred MB: more is no machine's count


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def run_batch(
    batch: Batch,
    out: Path,
    overrides: dict[str, Any] | None = None,
    notebooks_dir: Path | None = None,
    log=print,
    jobs: int | None = None,
    force: bool = False,
) -> tuple[list[Result], Path]:
    """Execute every (run, notebook) with ``jobs`` kernels at a time; results in batch order.
    A notebook whose inputs are those of an earlier success is reused instead
    (``memlab.app.reuse``), unless ``force``. Returns the results and the path of index.html."""
    from memlab.app.runner import absolute_datasets, check_taken, find_notebooks_dir
    from memlab.output.figures.export import SHARED_PLOTLY_JS
    from memlab.output.index_page import render_index

    notebooks_dir = find_notebooks_dir(notebooks_dir)
    check_taken(batch, overrides or {})
    overrides = absolute_datasets(overrides or {}, Path.cwd(), "-p ")
    jobs = default_jobs() if jobs is None else jobs
    check_number(jobs, "--jobs", integer=True, minimum=1, maximum=MAX_JOBS)
    out = results_folder(out)
    pairs = [(r, nb) for r in batch.runs for nb in (r.notebooks or batch.notebooks)]
    for nb in dict.fromkeys(nb for _, nb in pairs):
        # a plain name (the batch checks it) in the notebooks folder, not a link out of it
        if not inside(notebooks_dir, f"{nb}.ipynb", f"notebook {nb}").is_file():
            raise MissingFileError(f"no notebook {nb}.ipynb in {notebooks_dir}")

    lock = acquire(out, log)
    staging = out.parent / f".{out.name}.staging-{os.getpid()}"
    pool: cf.ProcessPoolExecutor | None = None
    exporter = Exporter()

    def stop(signum, frame):
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        clean_leftovers(out)
        staging.mkdir(parents=True)
        env = {"MEMLAB_DEFER_STATIC": "1", SHARED_PLOTLY_JS: str(staging / "plotly.min.js")}
        kernel = kernel_name()
        started, t0 = now(), time.perf_counter()
        results, tasks = _tasks(pairs, staging, overrides, notebooks_dir, kernel, env)
        reuse = Reuse(batch=batch.path)
        keys, fresh = reuse_earlier(reuse, tasks, results, force, Path(env[SHARED_PLOTLY_JS]), log)
        log(
            f"{len(fresh)} of {len(tasks)} notebooks to execute, {min(jobs, len(fresh))} at a time, "
            f"into {out}"
            + (
                f" ({len(tasks) - len(fresh)} reused; --force executes every one)"
                if len(fresh) < len(tasks)
                else ""
            )
        )
        # spawn, not fork: a forked copy of a process with threads (grpc, jupyter channels, torch)
        # can crash in its first garbage collection
        import multiprocessing

        pool = cf.ProcessPoolExecutor(
            max_workers=max(1, min(jobs, len(fresh))),
            initializer=_die_with_parent,
            initargs=(str(staging / "kernels.log"),),
            mp_context=multiprocessing.get_context("spawn"),
        )
        futures = {pool.submit(execute, tasks[i]): i for i in fresh}
        for done, future in enumerate(cf.as_completed(futures), start=1):
            i = futures[future]
            res = results[i]
            res.__dict__.update(future.result())
            if res.error:  # where the user will find it: the results folder, not the staging one
                res.error = res.error.replace(str(staging), str(out))
            running = [
                f"{r.run}/{r.notebook}"
                for f, j in futures.items()
                if not f.done() and Path((r := results[j]).output).with_suffix(".running").exists()
            ]
            report = Path(res.out_dir) / "report.json"
            if report.is_file():  # a failed notebook's lists what it wrote before it failed
                res.report = json.loads(report.read_text(encoding="utf-8"))
            exporter.submit(Path(res.out_dir))  # its PNGs while the others run (a failed one's too)
            queued = len(fresh) - done - len(running)
            left = (f"; running {', '.join(running)}" if running else "") + (
                f"; {queued} queued" if queued else ""
            )
            note = " (its kernel died while starting: retried once)" if res.retried else ""
            log(
                f"[{done}/{len(fresh)}] {res.run}/{res.notebook} {res.status} in {res.duration_s:.1f} s"
                + note
                + (f": {res.error}" if res.error else "")
                + left
            )
        pool.shutdown()
        pool = None
        static_t = time.perf_counter()
        written, busy = exporter.finish()
        if written:
            log(
                f"exported {len(written)} PNG/SVG files in {busy:.1f} s beside the notebooks "
                f"({time.perf_counter() - static_t:.1f} s after the last one)"
            )
        keep_fresh(reuse, keys, results, fresh)  # whole and exported: kept for the next run
        final = [relocated(r, staging, out) for r in results]  # where each lives after the swap
        manifest = _manifest(batch, notebooks_dir, kernel, jobs, started, t0, results, final)
        atomic_write_text(staging / "manifest.json", json.dumps(manifest, indent=2, default=str) + "\n")
        staged = {
            **manifest,
            "notebooks": [
                {**n, "output": r.output, "out_dir": r.out_dir}
                for n, r in zip(manifest["notebooks"], results, strict=True)
            ],
        }
        atomic_write_text(
            staging / "index.html", render_index(staged, [r.report for r in results], staging, figure_notes())
        )
        swap_in(staging, out)
        for r, paths in zip(results, final, strict=True):  # now in the folder swapped in
            r.__dict__.update(paths)
        return results, out / "index.html"
    except KeyboardInterrupt:
        raise InputError(f"stopped: nothing in {out} was changed") from None
    finally:
        if pool is not None:
            for proc in list(getattr(pool, "_processes", {}).values()):
                kill_tree(proc.pid)
            # waited for: its manager thread, seeing its processes dead, closes its wake-up pipe; at
            # exit, concurrent.futures' atexit hook writes to that pipe, and a thread still closing
            # it made a "Bad file descriptor" traceback after the one-line message
            pool.shutdown(wait=True, cancel_futures=True)
        exporter.stop()  # a run stopped or failed exports nothing more
        shutil.rmtree(staging, ignore_errors=True)
        lock.unlink(missing_ok=True)
        for s, handler in previous.items():
            signal.signal(s, handler)


def _tasks(
    pairs: list,
    staging: Path,
    overrides: dict[str, Any],
    notebooks_dir: Path,
    kernel: str,
    env: dict[str, str],
) -> tuple[list[Result], list[dict[str, Any]]]:
    """Each (run, notebook)'s result record and the task its kernel executes, in batch order."""
    from memlab.app.parameters import defaults
    from memlab.app.runner import notebook_params

    results: list[Result] = []
    tasks = []
    for run, nb in pairs:
        out_dir = staging / run.name / nb
        out_dir.mkdir(parents=True, exist_ok=True)
        params = notebook_params(nb, {**defaults(), **run.parameters, **overrides, "out_dir": str(out_dir)})
        # a URL's secrets never reach the executed notebook, the manifest or the page: the
        # kernel gets them in its environment (memlab.core.urls.reveal)
        params, secrets = hide_secrets(params)
        results.append(Result(run.name, nb, params, str(out_dir.parent / f"{nb}.ipynb"), str(out_dir)))
        tasks.append(
            {
                "input": str(notebooks_dir / f"{nb}.ipynb"),
                "output": results[-1].output,
                "parameters": params,
                "kernel": kernel,
                "cwd": str(notebooks_dir),
                "env": {**env, SECRETS_ENV: json.dumps(secrets)},
            }
        )
    return results, tasks


def _manifest(
    batch: Batch,
    notebooks_dir: Path,
    kernel: str,
    jobs: int,
    started: str,
    t0: float,
    results: list[Result],
    final: list[dict[str, str]],
) -> dict[str, Any]:
    """What manifest.json records of a run: versions, timing, status, every notebook where it lives."""
    return {
        "memlab": versions()["memlab"],
        "batch": batch.path,
        "notebooks_dir": str(notebooks_dir),
        "kernel": kernel,
        "jobs": jobs,
        "git_commit": git_commit(),
        "python": sys.version.split()[0],
        "packages": versions(),
        "started": started,
        "finished": now(),
        "duration_s": round(time.perf_counter() - t0, 2),
        "status": "ok" if all(r.status == "ok" for r in results) else "failed",
        "notebooks": [
            {
                **{k: v for k, v in r.__dict__.items() if k != "report"},
                **paths,
                "parameters": {**r.parameters, "out_dir": paths["out_dir"]},
            }
            for r, paths in zip(results, final, strict=True)
        ],
    }


def relocated(r: Result, staging: Path, out: Path) -> dict[str, str]:
    """A result's paths once the staging folder is the results folder."""
    return {
        "output": str(out / Path(r.output).relative_to(staging))
        if r.output.startswith(str(staging))
        else r.output,
        "out_dir": str(out / Path(r.out_dir).relative_to(staging))
        if r.out_dir.startswith(str(staging))
        else r.out_dir,
    }
