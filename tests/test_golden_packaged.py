"""Every command that reads a packaged dataset prints, byte for byte, what main printed at 5603828
(before issue 39 moved defaults, declarations and studies): stdout, stderr, the exit status and
every file it wrote (timings left out). The commands and how the recording was made:
tests/golden/packaged.py."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "golden"))

from packaged import COMMANDS, OUT, run, whole


def test_a_large_output_is_held_by_its_digest():
    assert whole("ab\n") == "ab\n"
    big = "x" * 200_001
    assert whole(big) != whole(big[:-1] + "y") and "sha256" in whole(big)


@pytest.mark.parametrize(
    "tier",
    [
        "fast",
        pytest.param("slow", marks=pytest.mark.slow),
        pytest.param("embedded", marks=pytest.mark.slow),
        pytest.param("model", marks=[pytest.mark.model, pytest.mark.slow]),
    ],
)
def test_every_packaged_output_is_printed_again(tier):
    got = run(tier)
    assert sorted(got) == sorted(n for n, (_, t) in COMMANDS.items() if t == tier)
    diffs = []
    for name, text in got.items():
        want = (OUT / f"{name}.out").read_text(encoding="utf-8")
        if text != want:
            lines = difflib.unified_diff(want.splitlines(True), text.splitlines(True), "recorded", "now", n=1)
            diffs.append(f"memlab {' '.join(COMMANDS[name][0])} prints otherwise:\n{''.join(lines)[:3000]}")
    assert not diffs, "\n".join(diffs)
