"""`memlab run` under faults and concurrency: a results folder holds the old run or the new one,
never a mix; one run owns it at a time; kernels die with their runner."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.notebook, pytest.mark.hostile]
ROOT = Path(__file__).resolve().parents[1]


def batch(tmp_path: Path, bonus: float, name: str) -> Path:
    path = tmp_path / name
    path.write_text(
        "notebooks: [01_reproduce]\nparameters: {fig_formats: [html], source: published}\n"
        f"runs:\n  - {{name: a, parameters: {{bonus: {bonus}}}}}\n  - {{name: b, parameters: {{bonus: {bonus}}}}}\n"
    )
    return path


def start(config: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memlab",
            "run",
            "--config",
            str(config),
            "--out",
            str(out),
            "--jobs",
            "1",
            *extra,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (workers and their kernels), from /proc."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(predicate, timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while not predicate():
        if time.time() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def bonus_of(out: Path) -> float:
    manifest = json.loads((out / "manifest.json").read_text())
    return {n["parameters"]["bonus"] for n in manifest["notebooks"]}.pop()


def bonuses_on_disk(out: Path) -> set[float]:
    """The bonus every report on disk was made with: one value when nothing is mixed."""
    found = set()
    for report in out.glob("*/*/report.json"):
        found.add(json.loads(report.read_text())["parameters"]["bonus"])
    return found


@pytest.fixture(scope="module")
def old_template(tmp_path_factory):
    """One complete run (bonus 0.05), made once and copied into each test's folder."""
    tmp = tmp_path_factory.mktemp("old")
    out = tmp / "out"
    proc = start(batch(tmp, 0.05, "old.yaml"), out)
    assert proc.wait(timeout=240) == 0, proc.stderr.read()
    assert bonus_of(out) == 0.05 and bonuses_on_disk(out) == {0.05}
    return out


@pytest.fixture
def old_run(tmp_path, old_template):
    shutil.copytree(old_template, tmp_path / "out", symlinks=True)
    return tmp_path / "out"


@pytest.mark.parametrize("when", ["early", "after one notebook", "at the end"])
def test_sigkill_leaves_the_old_run_or_the_new_one_and_kernels_die(tmp_path, old_run, when):
    out = old_run
    proc = start(batch(tmp_path, 0.04, "new.yaml"), out)
    staging = f".{out.name}.staging-{proc.pid}"
    if when == "early":
        wait_for(lambda: (out.parent / staging).is_dir())
    elif when == "after one notebook":
        wait_for(lambda: any((out.parent / staging).glob("*/*/report.json")))
    else:
        wait_for(lambda: (out.parent / staging / "manifest.json").exists() or proc.poll() is not None)
    family = descendants(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    wait_for(lambda: not any(alive(p) for p in family), timeout=5)  # kernels died with it
    assert bonus_of(out) in (0.05, 0.04)
    assert bonuses_on_disk(out) == {bonus_of(out)}  # never a mix
    if when != "after one notebook":
        return
    # the next run recovers: takes the lock over, removes what the dead run left
    again = start(batch(tmp_path, 0.03, "again.yaml"), out)
    assert again.wait(timeout=240) == 0, again.stderr.read()
    assert bonus_of(out) == 0.03 and bonuses_on_disk(out) == {0.03}
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(".")] == []


def test_sigterm_stops_with_one_line_and_changes_nothing(tmp_path, old_run):
    out = old_run
    proc = start(batch(tmp_path, 0.04, "new.yaml"), out)
    wait_for(lambda: (out.parent / f".{out.name}.staging-{proc.pid}").is_dir())
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 2
    err = proc.stderr.read()
    assert "Traceback" not in err
    assert err.splitlines()[-1] == f"memlab: error: stopped: nothing in {out} was changed"
    assert bonus_of(out) == 0.05 and bonuses_on_disk(out) == {0.05}
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(".")] == []


def test_a_second_run_into_the_same_folder_is_refused(tmp_path):
    out = tmp_path / "out"
    first = start(batch(tmp_path, 0.05, "one.yaml"), out)
    wait_for(lambda: (tmp_path / ".out.lock").exists())
    second = start(batch(tmp_path, 0.04, "two.yaml"), out)
    assert second.wait(timeout=60) == 2
    assert (
        second.stderr.read()
        .splitlines()[-1]
        .startswith(f"memlab: error: {out} is being written by another memlab run (pid {first.pid}, since ")
    )
    assert first.wait(timeout=240) == 0
    assert bonus_of(out) == 0.05 and bonuses_on_disk(out) == {0.05}


def test_a_stale_lock_is_taken_over_and_said_so(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    out = tmp_path / "out"
    (tmp_path / ".out.lock").write_text(json.dumps({"pid": dead.pid, "started": "earlier"}))
    proc = start(batch(tmp_path, 0.05, "one.yaml"), out)
    assert proc.wait(timeout=240) == 0
    assert f"took over the lock of a memlab run that is gone (pid {dead.pid})" in proc.stderr.read()
    assert not (tmp_path / ".out.lock").exists()
    assert os.listdir(out)  # written


def test_a_failed_notebooks_message_points_into_the_results_not_the_staging_folder(tmp_path):
    """A notebook that fails naming its own output folder (a missing file there, say): the log
    and the manifest name the results folder the user has, not the staging one (gone by then)."""
    import nbformat

    nb_dir = tmp_path / "notebooks"
    nb_dir.mkdir()
    shutil.copy(ROOT / "notebooks" / "01_reproduce.ipynb", nb_dir / "01_reproduce.ipynb")
    failing = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('out_dir = ""')
    params.metadata["tags"] = ["parameters"]
    failing.cells = [params, nbformat.v4.new_code_cell('open(out_dir + "/missing.txt")')]
    failing.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(failing, nb_dir / "fails.ipynb")
    config = tmp_path / "b.yaml"
    config.write_text("notebooks: [fails]\nruns:\n  - {name: r}\n")
    out = tmp_path / "out"
    proc = start(config, out, "--notebooks", str(nb_dir))
    assert proc.wait(timeout=240) == 1
    log = proc.stderr.read()
    error = json.loads((out / "manifest.json").read_text())["notebooks"][0]["error"]
    assert error == f"FileNotFoundError: [Errno 2] No such file or directory: '{out}/r/fails/missing.txt'"
    assert ".staging-" not in log and ".staging-" not in (out / "manifest.json").read_text()
