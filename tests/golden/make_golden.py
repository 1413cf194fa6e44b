"""The commands that read an embedded score table, run on a LoCoMo-shaped file of memlab's own
(tests/data/locomo_heldout.json, both granularities) with the word-count embedding server of
tests/embed_fake.py, their outputs written to tests/golden/*.out: what test_golden.py holds every
later tree to, byte for byte (timings and the cache's path left out).

The recorded outputs were made by main before issue 38 (d051f6f, score tables read back from
Qdrant's local mode point by point), so the product that replaced it is held to the old path's
every printed number:

    git worktree add /tmp/golden-base d051f6f
    PYTHONPATH=/tmp/golden-base .venv/bin/python tests/golden/make_golden.py

Run from the repository root; PYTHONPATH names the tree whose outputs are written.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
sys.path.insert(0, str(TESTS))

from embed_fake import MODEL, EmbedServer  # noqa: E402

TIMING_KEYS = {"seconds", "elapsed", "elapsed_s"}


def commands(obs: Path, turn: Path) -> dict[str, list[str]]:
    """Each golden file's command (the dataset folders given; the server's flags added by ``run``)."""
    return {
        "tune-benchmark": [
            "tune-benchmark", "--dataset", str(obs), "--folds", "2", "--boot", "200",
            "--threshold-steps", "41", "--bonus", "0,0.05,0.1", "--tau", "3,30",
            "--decay", "exp,gauss", "--format", "json",
        ],
        "tune-benchmark-turn": [
            "tune-benchmark", "--dataset", str(turn), "--folds", "2", "--boot", "200",
            "--threshold-steps", "41", "--bonus", "0,0.1", "--tau", "7", "--format", "json",
        ],
        "metrics": ["metrics", "--dataset", str(turn), "--k", "1,2", "--per-question", "--format", "json"],
        "compare": [
            "compare", "--dataset", str(obs), "--threshold-steps", "41", "--bonus", "0,0.05",
            "--tau", "3,30", "--format", "json",
        ],
        "evaluate": ["evaluate", "--dataset", str(turn), "--threshold", "0.3", "--format", "json"],
        "sweep": [
            "sweep", "--dataset", str(obs), "--bonus", "0:0.1:0.05", "--tau", "3,30",
            "--threshold", "0.2:0.6:0.1", "-o", "-",
        ],
    }  # fmt: skip


def clean(text: str, tmp: Path, url: str) -> str:
    """The output without what differs between runs of one tree: timings, the scratch folder and
    the server's port."""
    text = text.replace(str(tmp), "<tmp>").replace(url, "<server>")
    try:
        doc = json.loads(text)
    except ValueError:
        return text

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in TIMING_KEYS}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    return json.dumps(strip(doc), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def run(tmp: Path, python: str = sys.executable, env: dict | None = None) -> dict[str, str]:
    """Import the file twice and run every command against the word-count server: name -> output."""
    obs, turn, cache = tmp / "locomo-observation", tmp / "locomo-turn", tmp / "cache"
    source = TESTS / "data" / "locomo_heldout.json"

    def memlab(args: list[str]) -> str:
        out = subprocess.run(
            [python, "-m", "memlab", *args], capture_output=True, text=True, env=env, timeout=600
        )
        if out.returncode != 0:
            raise RuntimeError(f"memlab {' '.join(args)}: {out.stderr.strip()}")
        return out.stdout

    memlab(["import-locomo", str(source), "-o", str(obs)])
    memlab(["import-locomo", str(source), "--granularity", "turn", "-o", str(turn)])
    with EmbedServer() as url:
        server = [
            "--embed-url",
            url,
            "--embed-model",
            MODEL,
            "--no-embed-fallback",
            "--cache-dir",
            str(cache),
        ]
        return {name: clean(memlab([*args, *server]), tmp, url) for name, args in commands(obs, turn).items()}


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="memlab-golden-") as tmp:
        for name, text in run(Path(tmp)).items():
            (HERE / f"{name}.out").write_text(text)
            print(f"wrote tests/golden/{name}.out ({len(text):,} characters)")


if __name__ == "__main__":
    main()
