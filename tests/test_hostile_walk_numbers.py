"""Counts past any store's size, found by the hostile walkthrough (``bench/hostile_walk.py``,
issue 37): ``--candidates`` and ``--inject`` of 10**30 were accepted by every command and exported
as the query's limit; each is now one line naming the option, in bounded time."""

from __future__ import annotations

import time

import pytest

from memlab.app.cli import main

pytestmark = pytest.mark.hostile
HUGE = "1" + "0" * 30


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["evaluate", "--candidates", HUGE],
            "candidates: expected an integer in [1, 2147483647], got an integer of about 31 digits",
        ),
        (
            ["evaluate", "--inject", HUGE],
            "inject: expected an integer in [1, 2147483647], got an integer of about 31 digits",
        ),
        (["spec", "--candidates", HUGE], "candidates: expected an integer in [1, 2147483647]"),
        (["prompt", "--question", "H1", "--inject", HUGE], "inject: expected an integer in [1, 2147483647]"),
        (["metrics", "--candidates", HUGE], "candidates: expected an integer in [1, 2147483647]"),
        (["table", "--inject", HUGE], "inject: expected an integer in [1, 2147483647]"),
        (["feasible", "--candidates", HUGE], "candidates: expected an integer in [1, 2147483647]"),
        (["robustness", "--inject", HUGE], "inject: expected an integer in [1, 2147483647]"),
        (["sweep", "--candidates", f"8,{HUGE}"], "candidates: expected an integer in [1, 2147483647]"),
    ],
)
def test_a_count_past_any_store_is_one_line(capsys, argv, message):
    t0 = time.monotonic()
    assert main([*argv, "--source", "published"]) == 2
    assert time.monotonic() - t0 < 20
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("memlab: error: ") and message in err[-1], err


def test_the_largest_count_is_still_taken(capsys):
    assert (
        main(["evaluate", "--source", "published", "--candidates", str(2**31 - 1), "--format", "json"]) == 0
    )
