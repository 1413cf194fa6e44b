"""The chunk runner: ``ordered_map`` hands results back in the items' order whatever order the
threads finish in, with at most ``workers`` items in flight, passes a worker's error on, and
cancels what has not started when the caller stops early."""

from __future__ import annotations

import threading
import time

import pytest

from memlab.core.chunks import ordered_map


def test_results_come_in_item_order_though_threads_finish_out_of_order():
    # the first item sleeps longest: its thread finishes last
    def slow_first(i: int) -> int:
        time.sleep(0.05 * (3 - i) if i < 3 else 0)
        return i * i

    assert list(ordered_map(slow_first, range(6), 3)) == [0, 1, 4, 9, 16, 25]
    assert list(ordered_map(slow_first, range(6), 1)) == [0, 1, 4, 9, 16, 25]


def test_at_most_workers_items_are_in_flight():
    lock, running, most = threading.Lock(), [0], [0]

    def track(i: int) -> int:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        return i

    assert list(ordered_map(track, range(10), 2)) == list(range(10))
    assert most[0] == 2


def test_a_workers_error_reaches_the_caller():
    def fail_on_two(i: int) -> int:
        if i == 2:
            raise ValueError("chunk 2 failed")
        return i

    got = []
    with pytest.raises(ValueError, match=r"^chunk 2 failed$"):
        for r in ordered_map(fail_on_two, range(5), 2):
            got.append(r)
    assert got == [0, 1]


def test_stopping_early_starts_no_more_items():
    started = []

    def record(i: int) -> int:
        started.append(i)
        time.sleep(0.01)
        return i

    results = ordered_map(record, range(100), 2)
    assert next(results) == 0
    results.close()  # the caller stops after one result
    assert max(started) <= 2  # the two in flight and the one submitted when the first came back
