"""``memlab answer --concurrency N`` against the fake server: the same replies, cache entries,
verdicts and tables as one at a time, in the same order; N in flight at the server; a request
asked twice sent once; the first error in input order, in one line; the flag bounded."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from chat_fake import FakeChat, echo_block

from memlab.answers.cache import ReplyCache
from memlab.answers.chat import ChatClient, ChatConfig
from memlab.answers.inflight import complete_all
from memlab.app.answer_parameters import MAX_CONCURRENCY as DECLARED_MAX
from memlab.app.cli import main
from memlab.app.parameters import BY_NAME
from memlab.core.http import MAX_CONCURRENCY

TIMES = ("ttft_s", "total_s")


class Gauge:
    """The fake's replies, each held until ``hold`` requests are in flight (at most 2 s): the
    highest number in flight at once is then what the client sent, not what the timing allowed."""

    def __init__(self, hold: int, reply=None):
        self.hold, self.reply = hold, reply
        self.now = self.most = 0
        self.cond = threading.Condition()

    def __call__(self, body):
        with self.cond:
            self.now += 1
            self.most = max(self.most, self.now)
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.now >= self.hold, timeout=2)
        try:
            return (self.reply or judge_or_echo)(body)
        finally:
            with self.cond:
                self.now -= 1


def judge_or_echo(body):
    """The judge says YES when the reply holds café au lait; the chat echoes the block."""
    if body["messages"][0]["content"].startswith("You grade"):
        replied = body["messages"][1]["content"].split("replied:")[1]
        return "YES\nfine" if "café au lait" in replied else "NO\nno"
    return echo_block(body)


def answer(url: str, cache: Path, capsys, *more: str) -> tuple[int, str, str]:
    argv = ["answer", "--source", "published", "--chat-url", url, "--conditions", "off,raw,today"]
    argv += ["--cache-dir", str(cache), "--boot", "100", "--chat-attempts", "1", *more]
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def entries(cache: Path) -> dict[str, dict]:
    """Every reply cache entry by its name, without the times (which no two runs share)."""
    out = {}
    for path in sorted((cache / "chat").rglob("*.json")):
        entry = json.loads(path.read_text())
        for k in TIMES:
            entry["reply"].pop(k)
        out[path.name] = entry
    return out


def untimed(table_text: str) -> str:
    """The printed tables up to the time per turn (whose figures no two runs share)."""
    return table_text.split("\ntime per turn\n")[0]


@pytest.mark.slow  # 5 s per format: make test holds it, test-fast keeps the other concurrency tests
@pytest.mark.parametrize("fmt", ["json", "table"])
def test_four_in_flight_give_what_one_at_a_time_gives(tmp_path, capsys, fmt):
    runs = {}
    gauge = Gauge(hold=1)
    server = FakeChat(gauge, model="fake-judge")  # one server: the cache's keys name it
    try:
        for n in (1, 4):
            gauge.hold, gauge.most, server.bodies = n, 0, []
            code, out, err = answer(
                server.url, tmp_path / str(n), capsys, "--format", fmt, "--concurrency", str(n)
            )
            assert code == 0, err
            bodies = sorted(json.dumps(b, sort_keys=True) for b in server.bodies)
            runs[n] = (out, entries(tmp_path / str(n)), bodies, gauge.most)
    finally:
        server.close()
    (out1, cache1, bodies1, most1), (out4, cache4, bodies4, most4) = runs[1], runs[4]
    assert (most1, most4) == (1, 4)
    # 30 replies, of which N1-N4 get no memory under raw and today either: the request sent under
    # off, read from the cache (22 sent); 30 verdicts, N1-N4's the same under the three (22 asked)
    assert bodies4 == bodies1 and len(set(bodies4)) == len(bodies4) == 44
    assert cache4 == cache1 and len(cache4) == 44
    if fmt == "table":
        assert untimed(out4) == untimed(out1)
        notes1 = [ln for ln in out1.splitlines() if ln.startswith("note: ")]
        notes4 = [ln for ln in out4.splitlines() if ln.startswith("note: ")]
        assert notes1[0] == (
            "note: chat times measured one request at a time (--concurrency 1): each from its own "
            "send, a single user's turn"
        )
        assert (
            notes1[1]
            == notes4[1]
            == (
                "note: 8 of 30 replies read from the cache: their chat times are those of the run that "
                "first sent them, at whatever concurrency that was"
            )
        )
        assert notes4[0] == (
            "note: chat times measured with up to 4 requests in flight (--concurrency 4): each from its "
            "own send (memlab's queue left out), but the server shared its time among them, so they are "
            "longer than one user's turn; --concurrency 1 times a single user's turn"
        )
        return
    one, four = json.loads(out1), json.loads(out4)
    for r in one["replies"] + four["replies"]:
        for k in TIMES:
            r.pop(k)
    assert four["replies"] == one["replies"]  # the same rows, in the same order
    assert [r["cached"] for r in four["replies"]].count(True) == 8 and four["rates"] == one["rates"]
    assert [(t["condition"], t["step"], t["n"]) for t in four["timing"]] == [
        (t["condition"], t["step"], t["n"]) for t in one["timing"]
    ]
    # each says how its chat times were measured, and that the 8 cached replies' are not this run's
    assert one["notes"][0].startswith("chat times measured one request at a time (--concurrency 1)")
    assert four["notes"][0].startswith("chat times measured with up to 4 requests in flight")
    assert one["notes"][1:] == four["notes"][1:]
    assert four["notes"][1].startswith("8 of 30 replies read from the cache: their chat times are those")


def test_without_a_cache_a_repeated_request_is_sent_each_time_as_at_one(tmp_path):
    server = FakeChat(Gauge(hold=1, reply=lambda body: "same"))
    client = ChatClient(ChatConfig(server.url, "m"))
    ask = [{"role": "user", "content": "hello"}]
    try:
        uncached = complete_all(client, None, "reply", [(ask, 0)] * 3 + [(ask, 1)], concurrency=4)
        sent_uncached = len(server.bodies)
        cached = complete_all(client, ReplyCache(tmp_path), "reply", [(ask, 0)] * 3 + [(ask, 1)], 4)
    finally:
        client.close()
        server.close()
    assert sent_uncached == 4 and [r.cached for r in uncached] == [False] * 4
    assert len(server.bodies) == 4 + 2 and [r.cached for r in cached] == [False, True, True, False]
    assert [b["seed"] for b in server.bodies[4:]] in ([0, 1], [1, 0])
    assert client.requests == 6  # the workers' requests counted on the client they stand for


def test_the_first_error_in_input_order_is_the_one_line_and_nothing_is_left_running(tmp_path, capsys):
    """C1's replies fail late (0.5 s), C2's at once: one at a time C1's error comes first, so it
    must at 4 in flight too; the requests after it are never sent, no worker outlives the call."""

    arrived, refused = [], []

    def reply(body):
        arrived.append(time.monotonic())
        block = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
        if "café au lait" in block:  # C1's memories
            time.sleep(0.5)
            refused.append(time.monotonic())
            return 400, "C1 refused"
        if "Kyoto" in block:
            return 400, "another refused"
        return echo_block(body)

    found = {}
    server = FakeChat(reply)
    try:
        for n in (1, 4):
            server.bodies = []
            code, out, err = answer(server.url, tmp_path / str(n), capsys, "--concurrency", str(n))
            found[n] = (code, out, err, len(server.bodies))
    finally:
        server.close()
    assert found[1][:3] == found[4][:3]
    code, out, err, _ = found[4]
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("memlab: error: chat server ") and err.endswith("HTTP 400: C1 refused\n")
    # one at a time: C1 off, then C1 raw refused; at 4 the requests after it went on until then, and
    # none was sent once the refusal was back (a little later: the reply's way to the client)
    assert found[1][3] == 2 and found[4][3] > 2
    assert [t for t in arrived if t > refused[-1] + 0.3] == []
    assert not [t for t in threading.enumerate() if t.name.startswith("memlab-chat")]


@pytest.mark.hostile
@pytest.mark.parametrize("given", ["0", "65", "-1"])
def test_concurrency_is_bounded_in_one_line(capsys, given):
    start = time.monotonic()
    code = main(
        ["answer", "--source", "published", "--chat-url", "http://127.0.0.1:9/v1", "--concurrency", given]
    )
    assert code == 2 and time.monotonic() - start < 10
    assert capsys.readouterr().err == (
        f"memlab: error: --concurrency: expected an integer in [1, 64], got {given}\n"
    )


def test_the_declared_bound_is_the_enforced_one():
    assert DECLARED_MAX == MAX_CONCURRENCY == 64
    assert BY_NAME["concurrency"].bounds == {"minimum": 1, "maximum": MAX_CONCURRENCY}
    assert BY_NAME["concurrency"].default == 1 and BY_NAME["concurrency"].notebook


def test_ctrl_c_stops_the_requests_in_flight_and_sends_no_more(tmp_path):
    import signal

    def slow(body):
        time.sleep(1.0)
        return "late"

    server = FakeChat(slow)
    client = ChatClient(ChatConfig(server.url, "m"))
    asks = [([{"role": "user", "content": f"question {i}"}], 0) for i in range(12)]
    main_thread = threading.main_thread().ident
    timer = threading.Timer(0.5, signal.pthread_kill, (main_thread, signal.SIGINT))
    # Python's own ^C handler, whatever this process inherited: a suite run as a background job
    # (CI's) starts with SIGINT ignored, and the signal would then never arrive
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            complete_all(client, ReplyCache(tmp_path), "reply", asks, concurrency=4)
        stopped = time.monotonic() - start
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
        client.close()
        server.close()
    # the ones in flight were stopped (12 requests, 4 at a time, take 3 s) and no fifth was sent
    assert stopped < 2.5 and 1 <= len(server.bodies) <= 4
    assert not [t for t in threading.enumerate() if t.name.startswith("memlab-chat")]
    assert not list((tmp_path / "chat").rglob("*.json"))  # nothing half-done stored
