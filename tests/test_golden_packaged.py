"""Every command that reads a packaged dataset prints, byte for byte, what main printed at 5603828
(before issue 39 moved defaults, declarations and studies): stdout, stderr, the exit status and
every file it wrote (timings left out). The commands and how the recording was made:
tests/golden/packaged.py."""

from __future__ import annotations

import difflib
import math
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "golden"))

from packaged import COMMANDS, OUT, run, whole

NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def same_to_float32(want: str, got: str) -> bool:
    """The same text but for numbers that agree to float32's precision (1e-6, absolute or relative:
    a cosine is at most 1 and float32's step near 0.5 is 6e-8, a few steps over 384 terms): a raw
    score is a float32 product, and a BLAS kernel of another processor (or OPENBLAS_CORETYPE, set
    on some machines) sums it in another order, moving the last bits of a margin printed in full."""
    if NUMBER.split(want) != NUMBER.split(got):
        return False
    a, b = NUMBER.findall(want), NUMBER.findall(got)
    return len(a) == len(b) and all(
        x == y or math.isclose(float(x), float(y), rel_tol=1e-6, abs_tol=1e-6)
        for x, y in zip(a, b, strict=True)
    )


def test_same_to_float32_on_paper():
    # seen between two BLAS kernels: 3e-8 apart, a float32 step of the two scores it subtracts
    assert same_to_float32('"margin": 0.020763861801091854', '"margin": 0.020763831998769466')
    assert not same_to_float32('"margin": 0.0207638', '"margin": 0.0207738')  # 1e-5 apart: a change
    assert not same_to_float32('"n": 3', '"m": 3') and not same_to_float32("3 of 4", "3 of 5")


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
        if text != want and not same_to_float32(want, text):
            lines = difflib.unified_diff(want.splitlines(True), text.splitlines(True), "recorded", "now", n=1)
            diffs.append(f"memlab {' '.join(COMMANDS[name][0])} prints otherwise:\n{''.join(lines)[:3000]}")
    assert not diffs, "\n".join(diffs)
