"""Fault injection: signals sent to a real ``memlab`` process at several points of a write,
output paths that are not regular files, and hostile inputs with their exact messages.

Each signal test checks the invariant of an atomic write: afterwards the target holds the old
result or the new one, whole, never a mix; no temporary file is left (after SIGKILL, the next
write removes it); the process says one line, no traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from memlab.app.cli import main
from memlab.core import files
from memlab.core.chunks import plan_chunks
from memlab.core.grid import Grid, parse_axis
from memlab.core.labels import Labels
from memlab.core.sweep import sweep, sweep_chunks
from memlab.datasets.schema import dataset_dir, load_dataset
from memlab.embedding.cache import CacheWarning, fixed_shape_batches, folder_fingerprint, read_vector
from memlab.scores.sources import load_scores

pytestmark = pytest.mark.hostile  # the fault-and-hostile-input tier (docs/reliability.md)
ROOT = Path(__file__).resolve().parents[1]
# about 127k configurations: long enough (a few seconds) to be stopped at each point
# large enough that writing the table takes a while, so a signal lands mid-write on a quiet machine
GRID = ["--bonus", "0:0.1:0.001", "--tau", "1:60:1", "--threshold", "0.40:0.50:0.002"]
# four times GRID's rows: its write (streamed as the chunks are swept) lasts long enough on a quiet
# machine for a signal sent once the temporary file is seen to land before the rename
LONG_GRID = ["--bonus", "0:0.1:0.001", "--tau", "1:60:0.25", "--threshold", "0.40:0.50:0.002"]
STOPPED = "memlab: stopped by {}; the file being written was removed, earlier files are as they were"
# stopped before its write began (or by a command that writes nothing)
STOPPED_BEFORE = "memlab: stopped by {}; nothing was being written, earlier files are as they were"


def memlab(*argv: str, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "memlab", *argv],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # a background job (CI runs the suite as one) inherits SIGINT ignored, and Python then
        # keeps it ignored: give the child the default a user's terminal gives it
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def wait_for(test, timeout: float = 60.0, proc: subprocess.Popen | None = None) -> bool:
    """Poll ``test`` every 5 ms; False when the process ended first (or on timeout)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if test():
            return True
        if proc is not None and proc.poll() is not None:
            return bool(test())
        time.sleep(0.005)
    raise AssertionError("timed out")


def handles_sigterm(pid: int) -> bool:
    """memlab's SIGTERM handler is installed (Linux: bit 15 of SigCgt)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


def temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp"))


def sweep_rows() -> int:
    return 101 * 60 * 51


@pytest.fixture(scope="module")
def old_result(tmp_path_factory) -> bytes:
    """A complete earlier result, written by the same command on a one-value grid."""
    folder = tmp_path_factory.mktemp("old")
    out = folder / "out.csv"
    assert main(["sweep", "--source", "published", "--bonus", "0.05", "--tau", "14", "-o", str(out)]) == 0
    return out.read_bytes()


@pytest.mark.parametrize(
    ("point", "sig"),
    [("early", signal.SIGTERM), ("mid-write", signal.SIGTERM), ("mid-write", signal.SIGINT)],
)
def test_a_signal_leaves_the_old_result_and_no_temporary_file(tmp_path, old_result, point, sig):
    out = tmp_path / "out.csv"
    out.write_bytes(old_result)
    grid = LONG_GRID if point == "mid-write" else GRID
    proc = memlab("sweep", "--source", "published", *grid, "-o", "out.csv", cwd=tmp_path)
    wait_for(lambda: handles_sigterm(proc.pid), proc=proc)
    if point == "mid-write":
        assert wait_for(lambda: bool(temps(tmp_path)), proc=proc), "the sweep ended before its write began"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig
    said = {STOPPED.format(signal.Signals(sig).name)}
    if point == "early":  # the signal may land before the temporary file exists, or just after
        said.add(STOPPED_BEFORE.format(signal.Signals(sig).name))
    assert err.decode().strip() in said
    assert out.read_bytes() == old_result and temps(tmp_path) == []


def test_a_sigterm_at_the_rename_leaves_the_whole_new_result(tmp_path, old_result):
    out = tmp_path / "out.csv"
    out.write_bytes(old_result)
    before = out.stat().st_ino
    # the rename comes last whatever the grid's size: one threshold is enough to reach it
    grid = [*GRID[:4], "--threshold", "0.45"]
    proc = memlab("sweep", "--source", "published", *grid, "-o", "out.csv", cwd=tmp_path)
    wait_for(lambda: out.stat().st_ino != before, timeout=120)  # renamed into place
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    # finished (0), stopped in memlab (143), or after main() returned and restored the default (-15)
    assert proc.returncode in (0, 128 + signal.SIGTERM, -signal.SIGTERM)
    lines = out.read_text().splitlines()
    assert len(lines) == 1 + 101 * 60 and lines[0].startswith("decay,combine,bonus,tau_days,threshold")
    assert temps(tmp_path) == []


def test_sigkill_leaves_the_old_result_and_the_next_write_removes_its_temporary_file(tmp_path, old_result):
    out = tmp_path / "out.csv"
    out.write_bytes(old_result)
    proc = memlab("sweep", "--source", "published", *GRID, "-o", "out.csv", cwd=tmp_path)
    wait_for(lambda: bool(temps(tmp_path)), proc=proc)
    left = temps(tmp_path)
    proc.kill()
    proc.communicate(timeout=60)
    assert out.read_bytes() == old_result and temps(tmp_path) == left  # old result, one stale temp
    rerun = memlab(
        "sweep", "--source", "published", "--bonus", "0.05", "--tau", "14", "-o", "out.csv", cwd=tmp_path
    )
    rerun.communicate(timeout=120)
    assert rerun.returncode == 0 and temps(tmp_path) == [] and out.read_bytes() == old_result


def make_collection(path: Path, n: int = 3000) -> None:
    """A local Qdrant storage of ``n`` points at ``path``. Local mode commits every point to its
    SQLite file, a disk flush each (a minute for 3,000 on a busy disk): the storage is built in
    memory-backed /dev/shm where the machine has one, then copied into place."""
    import tempfile

    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else path.parent) as scratch:
        _build_collection(Path(scratch) / "q", n)
        shutil.copytree(Path(scratch) / "q", path)


def _build_collection(path: Path, n: int) -> None:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(path))
    client.create_collection(
        "mem", vectors_config=models.VectorParams(size=8, distance=models.Distance.COSINE)
    )
    rng = np.random.default_rng(0)
    client.upsert(
        "mem",
        points=[
            models.PointStruct(
                id=i, vector=rng.normal(size=8).tolist(), payload={"when": "2026-09-01", "body": f"m {i}"}
            )
            for i in range(n)
        ],
    )
    client.close()


def test_import_qdrant_stopped_or_killed_leaves_nothing_and_a_rerun_recovers(tmp_path):
    make_collection(tmp_path / "q")
    argv = (
        "import-qdrant",
        "--path",
        "q",
        "--collection",
        "mem",
        "--date-field",
        "when",
        "--text-field",
        "body",
    )
    proc = memlab(*argv, "-o", "ds", cwd=tmp_path)
    wait_for(lambda: handles_sigterm(proc.pid), proc=proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == 0:  # it finished first: then the folder is whole
        assert len((tmp_path / "ds" / "memories.jsonl").read_text().splitlines()) == 3000
        shutil.rmtree(tmp_path / "ds")
    else:
        # early, before the folder's write began or during it
        assert proc.returncode == 143
        assert err.decode().strip() in {STOPPED.format("SIGTERM"), STOPPED_BEFORE.format("SIGTERM")}
    assert not (tmp_path / "ds").exists() and temps(tmp_path) == []
    # what a SIGKILL mid-write leaves: a temporary folder named for a process that is gone
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f".ds.{dead.pid}.0badc0de.tmp"
    (stale).mkdir()
    (stale / "memories.jsonl").write_text('{"id": "half')
    rerun = memlab(*argv, "-o", "ds", cwd=tmp_path)
    rerun.communicate(timeout=120)
    assert rerun.returncode == 0 and temps(tmp_path) == []
    assert len((tmp_path / "ds" / "memories.jsonl").read_text().splitlines()) == 3000


# -- output paths that are not regular files -----------------------------------------------------


def test_a_symlink_is_written_through(tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    assert main(["spec", "--format", "json", "-o", str(link)]) == 0
    assert link.is_symlink() and json.loads(target.read_text())["bonus"] == 0.05


@pytest.mark.parametrize("kind", ["fifo", "folder", "device"])
def test_outputs_that_are_not_regular_files_are_refused(tmp_path, capsys, kind):
    path = {"fifo": tmp_path / "pipe", "folder": tmp_path / "dir", "device": Path("/dev/null")}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    what = {"fifo": "a FIFO", "folder": "a folder", "device": "a character device"}[kind]
    assert main(["spec", "--format", "json", "-o", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"memlab: error: {path}: is {what}, not a regular file: memlab writes only regular files "
        "(for standard output pass -o -)\n"
    )
    if kind == "fifo":
        assert path.is_fifo()
    assert main(["sweep", "--source", "published", "--bonus", "0.05", "--tau", "14", "-o", str(path)]) == 2


def test_dash_writes_to_stdout(capsys):
    assert main(["spec", "--format", "json", "-o", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["tau_days"] == 14.0
    assert (
        main(
            [
                "sweep",
                "--source",
                "published",
                "--bonus",
                "0.05",
                "--tau",
                "14",
                "--threshold",
                "0.45",
                "-o",
                "-",
            ]
        )
        == 0
    )
    out, err = capsys.readouterr()
    assert (
        out.splitlines()[0].startswith("decay,combine,bonus,tau_days,threshold")
        and len(out.splitlines()) == 2
    )
    assert "feasible: 1 of 1" in err  # the summary goes to stderr when the table owns stdout


def test_a_write_in_progress_is_pending_until_renamed(tmp_path):
    with files.atomic_file(tmp_path / "a.txt") as tmp:
        assert tmp in files.PENDING and tmp.name.startswith(f".a.txt.{os.getpid()}.")
    assert tmp not in files.PENDING and not tmp.exists()


# -- hostile inputs: one line each, naming the file, line and field ------------------------------


def seed_copy(tmp_path: Path, name: str, mem=None, questions=None, meta=None, raw=None) -> Path:
    d = tmp_path / name
    shutil.copytree(dataset_dir("seed16"), d)
    if meta is not None:
        m = json.loads((d / "dataset.json").read_text())
        meta(m)
        (d / "dataset.json").write_text(json.dumps(m))
    for fname, edit in (("memories.jsonl", mem), ("questions.jsonl", questions)):
        if edit is not None:
            rows = [json.loads(line) for line in (d / fname).read_text().splitlines()]
            edit(rows)
            (d / fname).write_text("".join(json.dumps(r) + "\n" for r in rows))
    if raw is not None:
        (d / "memories.jsonl").write_bytes(raw((d / "memories.jsonl").read_bytes()))
    return d


def criteria_file(tmp_path: Path, text: str) -> Path:
    (tmp_path / "c.yaml").write_text(text)
    return tmp_path / "c.yaml"


ONE = ["--source", "published", "--bonus", "0.05", "--tau", "14", "--threshold", "0.45"]
HOSTILE = [
    # (case, how to build argv from tmp_path, expected stderr with {tmp} for tmp_path)
    (
        "criterion name is a list",
        lambda t: [
            "sweep",
            *ONE,
            "--criteria",
            str(criteria_file(t, "- name: [a, b]\n  kind: nohit_below\n")),
        ],
        "memlab: error: {tmp}/c.yaml:1: name: expected text, got a list",
    ),
    (
        "criterion kind is a mapping",
        lambda t: ["sweep", *ONE, "--criteria", str(criteria_file(t, "- name: a\n  kind: {x: 1}\n"))],
        "memlab: error: {tmp}/c.yaml:2: kind: expected text, got a mapping",
    ),
    (
        "criterion named min",
        lambda t: ["sweep", *ONE, "--criteria", str(criteria_file(t, "- name: min\n  kind: nohit_below\n"))],
        "memlab: error: {tmp}/c.yaml:1: name: criterion 'min': reserved name (a sweep writes min_margin, "
        "margin_<id> and injected_<id> columns of its own): choose another",
    ),
    (
        "lone surrogate in a text",
        lambda t: [
            "validate",
            str(seed_copy(t, "d", mem=lambda r: r[2].__setitem__("text", r[2]["text"] + "\ud800"))),
        ],
        "memlab: invalid dataset:\n{tmp}/d/memories.jsonl:3: text: lone surrogate escape \\ud800 at character 63: "
        "not valid Unicode text",
    ),
    (
        "a Latin-1 line",
        lambda t: [
            "validate",
            str(seed_copy(t, "d", raw=lambda b: b.replace("café".encode(), b"caf\xe9", 1))),
        ],
        "memlab: invalid dataset:\n{tmp}/d/memories.jsonl:2: not UTF-8 text (byte 0xe9 at column 94): save the file as UTF-8",
    ),
    (
        "vectors is not an object",
        lambda t: ["validate", str(seed_copy(t, "d", meta=lambda m: m.__setitem__("vectors", 5)))],
        "memlab: invalid dataset:\n{tmp}/d/dataset.json: vectors: expected an object with file, dim and model, got 5",
    ),
    (
        "vectors file missing",
        lambda t: ["validate", str(seed_copy(t, "d", meta=lambda m: m.__setitem__("vectors", {"dim": 4})))],
        "memlab: invalid dataset:\n{tmp}/d/dataset.json: vectors: file: vectors.npy is missing in {tmp}/d",
    ),
    (
        "a memory supersedes itself",
        lambda t: ["validate", str(seed_copy(t, "d", mem=lambda r: r[1].__setitem__("supersedes", "m02")))],
        "memlab: invalid dataset:\n{tmp}/d/memories.jsonl:2: supersedes: memory 'm02' supersedes itself",
    ),
    (
        "a cycle of supersessions",
        lambda t: ["validate", str(seed_copy(t, "d", mem=lambda r: r[0].__setitem__("supersedes", "m02")))],
        "memlab: invalid dataset:\n{tmp}/d/memories.jsonl:1: supersedes: a cycle of supersessions: m01 -> m02 -> m01",
    ),
    (
        "duplicate criterion names in dataset.json",
        lambda t: [
            "validate",
            str(seed_copy(t, "d", meta=lambda m: m["criteria"].append(dict(m["criteria"][0])))),
        ],
        "memlab: invalid dataset:\n{tmp}/d/dataset.json: criteria: name 'a' is declared more than once "
        "(criteria 1, 4): each names a column of the sweep",
    ),
    (
        "a current_* criterion on a question without a current",
        lambda t: ["validate", str(seed_copy(t, "d", questions=lambda r: r[1].pop("current")))],
        "memlab: invalid dataset:\n{tmp}/d/dataset.json: criteria[3]: question: 'H2' has no current memory, "
        "so current_reaches cannot hold",
    ),
    (
        "a Qdrant URL that refuses connections",
        lambda t: [
            "import-qdrant",
            "--url",
            "http://127.0.0.1:9",
            "--collection",
            "c",
            "--date-field",
            "d",
            "--text-field",
            "x",
            "-o",
            str(t / "out"),
        ],
        "memlab: error: cannot reach a Qdrant server at http://127.0.0.1:9: [Errno 111] Connection refused",
    ),
]
NUMBERS = [
    (
        ["sweep", "--source", "published", "--bonus", "0:inf:1"],
        "bonus: expected a finite number >= 0, got inf",
    ),
    (["sweep", "--source", "published", "--tau", "inf"], "tau_days: expected a finite number > 0, got inf"),
    (
        ["sweep", "--source", "published", "--threshold", "0:1:1e-300"],
        "threshold: the range 0:1:1e-300 has 1e+300 values, more than a sweep can number (2^62)",
    ),
    (
        ["feasible", "--source", "published", "--threshold", "nan"],
        "threshold: expected a finite number, got nan",
    ),
    (
        ["feasible", "--source", "published", "--tau", "inf"],
        "tau_days: expected a finite number > 0, got inf",
    ),
    (
        ["feasible", "--source", "published", "--candidates", "0"],
        "candidates: expected an integer in [1, 2147483647], got 0",
    ),
    (
        ["evaluate", "--source", "published", "--tau", "inf"],
        "tau_days: expected a finite number > 0, got inf",
    ),
    (
        ["evaluate", "--source", "published", "--threshold", "nan"],
        "threshold: expected a finite number, got nan",
    ),
    (["robustness", "--source", "published", "--boot", "-5"], "n_boot: expected an integer >= 1, got -5"),
    (
        ["compare", "--source", "published", "--alpha", "nan"],
        "alphas: expected a finite number in [0, 1], got nan",
    ),
    (
        ["compare", "--source", "published", "--threshold-steps", "1"],
        "threshold_steps: expected an integer >= 2, got 1",
    ),
    (["compare", "--source", "published", "--rrf-k", "0"], "rrf_ks: expected a finite number > 0, got 0"),
    (["robustness", "--source", "published", "--seed", "-1"], "seed: expected an integer >= 0, got -1"),
    (["drift", "--seed", "-1"], "seed: expected an integer >= 0, got -1"),
    (["calibrate", "--false-rate", "1"], "--false-rate: expected a finite number in [0, 1), got 1"),
    (["calibrate", "--boot", "0"], "--boot: expected an integer >= 1, got 0"),
    (["spec", "--question", "H1", "--truncate-dim", "0"], "truncate_dim: expected an integer >= 1, got 0"),
]


def test_the_scale_study_checks_its_pool_before_embedding():
    from memlab.scores.problem import build_problem
    from memlab.studies.scale import distractor_pool

    with pytest.raises(ValueError) as e:
        distractor_pool(build_problem("seed16"), 0)
    assert str(e.value) == "pool: expected an integer >= 1, got 0"


@pytest.mark.parametrize(("case", "argv", "message"), HOSTILE, ids=[c for c, _, _ in HOSTILE])
def test_hostile_inputs_get_one_located_message(tmp_path, capsys, case, argv, message):
    assert main(argv(tmp_path)) == 2
    assert capsys.readouterr().err.strip() == message.format(tmp=tmp_path)


@pytest.mark.parametrize(
    ("argv", "message"),
    NUMBERS,
    ids=[" ".join(x for x in a if x not in ("--source", "published")) for a, _ in NUMBERS],
)
def test_every_command_checks_numbers_alike(capsys, argv, message):
    assert main(argv) == 2
    assert capsys.readouterr().err == f"memlab: error: {message}\n"


def test_a_hit_question_without_a_current_is_accepted_and_said(tmp_path, capsys):
    def drop(rows):
        rows[0].pop("current")

    def keep_criteria(m):
        m["criteria"] = m["criteria"][:1]

    d = seed_copy(tmp_path, "d", questions=drop, meta=keep_criteria)
    assert main(["validate", str(d)]) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        "note: 1 hit question without a current memory (H1): no current_* criterion or margin_<id> column "
        "scores it; it counts only in injected_hit and wrong_injected"
    )


# -- memory bounded in bytes ---------------------------------------------------------------------


def test_an_axis_of_any_length_is_not_materialised():
    tracemalloc.start()
    grid = Grid(threshold=parse_axis("0:1:1e-8", "threshold"))
    chunks = plan_chunks(grid, row_cost=1000, pair_cost=10_000, budget=1 << 20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert grid.size == 100_000_001 and grid.threshold.is_range and peak < 2 << 20
    # chunks are ranges of thresholds of the one (bonus, tau) pair: (1 MiB - 10 kB) / 1000 B = 1038
    assert chunks[0].h1 - chunks[0].h0 == 1038 and chunks[-1].h1 == 100_000_001


def sweep_peak(thresholds: str, budget: int) -> int:
    seed = load_dataset("seed16")
    scores = load_scores("published", seed)
    grid = Grid(bonus=(0.0, 0.05), tau_days=(14.0,), threshold=parse_axis(thresholds, "threshold"))
    tracemalloc.start()
    for _ in sweep_chunks(
        scores.retrievable(seed), seed.ages(), Labels.from_dataset(seed), grid, chunk_bytes=budget
    ):
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_the_peak_memory_of_a_sweep_does_not_grow_with_the_grid():
    small, large = sweep_peak("0:1:1e-4", 4 << 20), sweep_peak("0:1:1e-5", 4 << 20)  # 20k and 200k rows
    assert large < 1.3 * small


def test_chunked_and_whole_sweeps_agree():
    seed = load_dataset("seed16")
    scores = load_scores("published", seed)
    grid = Grid(
        bonus=(0.0, 0.05),
        tau_days=(7.0, 14.0),
        threshold=parse_axis("0.3:0.6:0.01", "threshold"),
        decay=("exp", "gauss"),
    )
    args = (scores.retrievable(seed), seed.ages(), Labels.from_dataset(seed), grid)
    whole = sweep(*args)
    parts = list(sweep_chunks(*args, chunk_rows=7))  # 31 thresholds per pair: 5 chunks of 7 or fewer
    assert len(parts) == 2 * 4 * 5 and [len(p) for p in parts[:5]] == [7, 7, 7, 7, 3]
    assert set(parts[20]["decay"]) == {"gauss"} and parts[20].index[0] == 124
    pd.testing.assert_frame_equal(pd.concat(parts), whole)


# -- the embedding cache -------------------------------------------------------------------------


def npy(vec) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, np.asarray(vec, dtype=np.float32))
    return buf.getvalue()


GOOD = np.full(4, 0.5, dtype=np.float32)
CORRUPT = {
    "empty": (b"", "unreadable (EOFError: No data left in file)"),
    "truncated": (npy(GOOD)[:-3], "unreadable (ValueError: "),
    "garbage": (b"not a numpy file at all", "unreadable (ValueError: "),
    "nan": (npy([np.nan, 0, 0, 1]), "contains NaN or infinity"),
    "zero": (npy(np.zeros(4)), "a zero vector"),
}


@pytest.mark.parametrize("case", list(CORRUPT))
def test_a_corrupt_cache_entry_is_reported_with_its_path(tmp_path, case):
    data, reason = CORRUPT[case]
    path = tmp_path / "entry.npy"
    path.write_bytes(data)
    with pytest.warns(CacheWarning) as caught:
        assert read_vector(path) is None
    message = str(caught[0].message)
    assert message.startswith(f"embedding cache: {path}: {reason}") and message.endswith(
        "; embedding it again"
    )
    path.write_bytes(npy(GOOD))
    assert read_vector(path).tobytes() == GOOD.tobytes()


def test_batches_have_one_length_and_one_size():
    batches = fixed_shape_batches([3, 5, 3, 3, 5], 2)
    assert batches == [[1, 4], [0, 2], [3, 3]]  # longest first; the last batch of length 3 filled


def test_a_model_folder_is_identified_by_every_files_content(tmp_path, monkeypatch):
    model = tmp_path / "model"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "model.safetensors").write_bytes(b"\x00" * 64)
    (model / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}')
    memo = tmp_path / "fingerprints.json"
    first = folder_fingerprint(model, memo)
    import memlab.embedding.cache as cache

    hashed = []
    monkeypatch.setattr(
        cache, "file_sha256", lambda p, real=cache.file_sha256: hashed.append(p.name) or real(p)
    )
    assert folder_fingerprint(model, memo) == first and hashed == []  # remembered by size and mtime
    (model / "model.safetensors").write_bytes(b"\x01" + b"\x00" * 63)  # same size, edited in place
    second = folder_fingerprint(model, memo)
    (model / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    third = folder_fingerprint(model, memo)
    assert len({first, second, third}) == 3 and hashed == ["model.safetensors", "config.json"]


@pytest.mark.model
@pytest.mark.parametrize("model", ["all-MiniLM-L6-v2", "multilingual-e5-small"])
def test_a_texts_cached_bytes_do_not_depend_on_its_batch(tmp_path, model):
    from memlab.embedding.embedder import Embedder

    seed = load_dataset("seed16")
    texts = [m.text("en") for m in seed.memories]
    long = "2026-09-09: " + " ".join(["The user wrote a very long memory about many unrelated things."] * 20)
    alone = np.stack(
        [Embedder(model, cache_dir=tmp_path / f"a{i}").encode_documents([t])[0] for i, t in enumerate(texts)]
    )
    together = Embedder(model, cache_dir=tmp_path / "b").encode_documents([long, *texts])[1:]
    assert alone.tobytes() == together.tobytes()


@pytest.mark.model
def test_stock_sentence_transformers_batches_would_not_be(tmp_path):
    """What the fixed-shape batches fix: the same text, alone and next to a long one, through
    sentence-transformers' own batching, differs in its bytes."""
    from memlab.embedding.embedder import Embedder

    model = Embedder("all-MiniLM-L6-v2", cache_dir=tmp_path)._load_model()._model
    text = load_dataset("seed16").memories[1].text("en")
    long = "2026-09-09: " + " ".join(["The user wrote a very long memory about many unrelated things."] * 20)
    alone = model.encode([text], convert_to_numpy=True)[0]
    beside = model.encode([text, long], convert_to_numpy=True)[0]
    assert alone.tobytes() != beside.tobytes() and np.abs(alone - beside).max() < 1e-6


@pytest.mark.model
def test_a_corrupt_entry_is_embedded_again_to_the_same_bytes(tmp_path):
    from memlab.embedding.embedder import Embedder

    texts = ["2026-09-01: The user drinks tea.", "2026-09-02: The user runs on Sundays."]
    want = Embedder(cache_dir=tmp_path).encode_documents(texts)
    entry = Embedder(cache_dir=tmp_path).namespace("document") / f"{Embedder.text_key(texts[0])}.npy"
    for data, _ in CORRUPT.values():
        entry.write_bytes(data)
        with pytest.warns(CacheWarning, match=str(entry)):
            assert Embedder(cache_dir=tmp_path).encode_documents(texts).tobytes() == want.tobytes()


def test_a_sigterm_while_the_handlers_are_put_back_exits_143_without_a_traceback(monkeypatch, capsys):
    import memlab.app.cli as cli

    def late(argv):  # what a SIGTERM raises when it lands in _main's finally, before the restore
        raise cli.Terminated(signal.SIGTERM)

    monkeypatch.setattr(cli, "_main", late)
    assert cli.main(["sweep"]) == 128 + signal.SIGTERM
    assert capsys.readouterr().err == ""


def test_a_sigint_outside_the_commands_own_handling_is_the_same_one_line(monkeypatch, capsys):
    import memlab.app.cli as cli

    def early(argv):  # a ^C as _main starts, before its try, or as it puts its handlers back
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_main", early)
    assert cli.main(["sweep"]) == 128 + signal.SIGINT
    assert capsys.readouterr().err.strip() == STOPPED_BEFORE.format("SIGINT")


def test_a_command_stopped_before_any_write_says_nothing_was_being_written(tmp_path):
    """A sweep without -o (its report only): after the signal nothing was pending, and the line
    says so instead of naming a removed file."""
    # 30 million configurations, some 3 s without -o (a coarser grid ends within 0.5 s): the signal
    # lands inside the sweep
    big = [*GRID[:4], "--threshold", "0.40:0.50:0.00002"]
    proc = memlab("sweep", "--source", "published", *big, cwd=tmp_path)
    wait_for(lambda: handles_sigterm(proc.pid), proc=proc)
    time.sleep(0.3)  # into the sweep itself
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT
    assert err.decode().strip() == STOPPED_BEFORE.format("SIGINT")
    assert list(tmp_path.iterdir()) == []
