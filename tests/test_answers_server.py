"""The chat tier: ``memlab answer`` and notebook 09 against a real OpenAI-compatible chat server,
llama-cpp-python's on SmolLM2-135M-Instruct (the ``chat`` extra), started on 127.0.0.1 for the
module and stopped after it. A 135M model proves the plumbing (streaming, seeds, model ids, the
cache, the judge's constrained verdicts), not answer quality: nothing here asserts a verdict."""

from __future__ import annotations

import json

import pytest

from memlab.answers.chat import ChatClient, ChatConfig
from memlab.answers.local_server import MODEL_ALIAS, LocalServer
from memlab.app.cli import main
from memlab.core.errors import UnreachableError

pytestmark = pytest.mark.chat


@pytest.fixture(scope="module")
def chat_server(tmp_path_factory):
    log = tmp_path_factory.mktemp("chat-server") / "server.log"
    server = LocalServer(log=log)
    try:
        server.start(timeout=120)
    except UnreachableError as e:  # one line: why the server is not there
        pytest.fail(str(e), pytrace=False)
    yield server
    server.stop()


def test_seeded_streamed_replies_with_the_servers_model_id(chat_server):
    client = ChatClient(ChatConfig(chat_server.url, temperature=0.8, max_tokens=12))
    messages = [{"role": "user", "content": "How do I take my coffee again?"}]
    first, again, other = (
        client.complete(messages, 3),
        client.complete(messages, 3),
        client.complete(messages, 4),
    )
    assert client.model == MODEL_ALIAS and {first.model_id, again.model_id, other.model_id} == {MODEL_ALIAS}
    assert first.text == again.text and first.text  # the server honours the seed
    assert 0 < first.ttft_s <= first.total_s
    assert first.finish_reason in ("length", "stop")


def test_memlab_answer_prints_rates_per_kind_and_the_time_per_turn(chat_server, tmp_path, capsys):
    args = [
        "answer",
        "--dataset",
        "seed16",
        "--source",
        "published",
        "--chat-url",
        chat_server.url,
        "--conditions",
        "off,today",
        "--questions",
        "C1,N1,H2",
        "--max-tokens",
        "12",
        "--judge-format",
        "json-object",
        "--boot",
        "200",
        "--cache-dir",
        str(tmp_path),
    ]
    assert main([*args, "--replies", str(tmp_path / "replies.json")]) == 0
    text = capsys.readouterr().out
    assert f"LLM judge ({MODEL_ALIAS}): YES rate, per question kind (questions)" in text
    head = next(line for line in text.splitlines() if line.startswith("condition") and "hit (1)" in line)
    assert "contradiction (1)" in head and "nohit (1)" in head and "all (3)" in head
    assert any(line.startswith("today      chat: first token") for line in text.splitlines())
    replies = json.loads((tmp_path / "replies.json").read_text())
    assert len(replies) == 6 and {r["model_id"] for r in replies} == {MODEL_ALIAS}
    assert {r["judge_model_id"] for r in replies} == {MODEL_ALIAS}
    # the schema the server enforces leaves no reply unjudged
    assert all(r["judge"] in (True, False) for r in replies)
    # a second run asks nothing: every reply and verdict from the cache, the same
    assert main([*args, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert all(r["cached"] for r in out["replies"])
    assert [(r["reply"], r["judge"]) for r in out["replies"]] == [(r["reply"], r["judge"]) for r in replies]


@pytest.mark.notebook
def test_09_draws_the_replies_side_by_side(chat_server, tmp_path, monkeypatch):
    from test_notebooks import execute

    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))
    out = execute(
        "09_answers",
        tmp_path,
        chat_url=chat_server.url,
        conditions="off,today",
        questions="C1,N1",
        max_tokens=8,
        llm_judge=False,
        boot=50,
    )
    fig = json.loads((out / "figures" / "replies.json").read_text())
    table = fig["data"][0]
    assert table["header"]["values"] == ["<b>question</b>", "<b>off</b>", "<b>today</b>"]
    shown = [cell.replace("<br>", " ") for cell in table["cells"]["values"][0]]
    assert shown[0] == "<b>C1</b> (contradiction) How do I take my coffee again?"  # by its words
    assert shown[1] == "<b>N1</b> (nohit) How do quantum computers work?"
    rates = json.loads((out / "tables" / "rates.json").read_text())
    assert {(r["condition"], r["kind"]) for r in rates if r["score"] == "phrases"} == {
        (c, k) for c in ("off", "today") for k in ("contradiction", "nohit", "all")
    }
    assert (out / "figures" / "turn_time.json").is_file()
