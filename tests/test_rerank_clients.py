"""The rerankers' clients (memlab.rerank): the chat reranker's P(yes) from the logprobs a server
returns, the /v1/rerank shapes, hostile replies refused in one line, the score cache, and the
requests N at a time giving what one at a time gives. The chat replies come from tests/chat_fake
(replies the test decides); the endpoint is tests/rerank_standin (a stand-in scoring by embedding
cosine, not a reranking model)."""

from __future__ import annotations

import json
import math
import os
import warnings

import pytest

from memlab.core.errors import InputError
from memlab.core.http import BadReply, ServerFailure, TooLarge
from memlab.rerank.cache import ScoreCache
from memlab.rerank.clients import (
    Reranker,
    RerankerConfig,
    is_yes,
    rerank_scores,
    yes_probability,
)
from memlab.rerank.scoring import score_pairs
from tests.chat_fake import FakeChat, Raw
from tests.rerank_standin import MODEL, StandinRerankServer, cosine


def chat_reply(top: list[tuple[str, float]]) -> dict:
    """An OpenAI chat completion with the first token's top logprobs, as llama-server sends it."""
    listed = [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in top]
    content = [{"token": top[0][0], "logprob": top[0][1], "top_logprobs": listed}]
    return {
        "model": "fake-1",
        "choices": [
            {"message": {"role": "assistant", "content": top[0][0]}, "logprobs": {"content": content}}
        ],
    }


def as_json(reply: object, status: int = 200) -> Raw:
    return Raw([json.dumps(reply).encode()], "application/json", status)


@pytest.fixture
def fake():
    server = FakeChat(stream=False)
    yield server
    server.close()


def chat_reranker(url: str, **kw) -> Reranker:
    return Reranker(RerankerConfig("chat", url, attempts=kw.pop("attempts", 1), backoff=0, **kw))


@pytest.mark.parametrize("token", ["yes", "Yes", " YES", "▁Yes", "Ġyes", " yes "])
def test_every_spelling_of_yes_counts(token):
    assert is_yes(token)


@pytest.mark.parametrize("token", ["no", "yess", "ye", "y", " Yes!"])
def test_other_tokens_do_not(token):
    assert not is_yes(token)


def test_p_yes_sums_the_distinct_yes_tokens():
    top = [("Yes", math.log(0.5)), ("No", math.log(0.3)), (" yes", math.log(0.1)), ("Yes", math.log(0.5))]
    assert yes_probability(top) == pytest.approx(0.6)  # "Yes" once, " yes" once
    assert yes_probability([("No", -0.1)]) == 0.0  # no yes listed: nothing


def test_the_chat_reranker_asks_one_token_with_logprobs_and_reads_p_yes(fake):
    fake.reply = lambda body: as_json(
        chat_reply([("Yes", math.log(0.7)), ("No", math.log(0.2)), (" yes", math.log(0.05))])
    )
    reranker = chat_reranker(fake.url)
    assert reranker.score("What do I drink?", ["2026-09-01: café au lait"]) == [pytest.approx(0.75)]
    body = fake.bodies[-1]
    assert body["max_tokens"] == 1 and body["logprobs"] is True and body["top_logprobs"] == 20
    assert body["temperature"] == 0 and body["stream"] is False and body["model"] == "fake-1"
    assert "What do I drink?" in body["messages"][1]["content"]
    assert "café au lait" in body["messages"][1]["content"]


def test_the_completions_shape_is_read_too(fake):
    legacy = {
        "choices": [
            {
                "text": " Yes",
                "logprobs": {
                    "tokens": [" Yes"],
                    "top_logprobs": [{" Yes": math.log(0.4), " No": math.log(0.6)}],
                },
            }
        ]
    }
    fake.reply = lambda body: as_json(legacy)
    assert chat_reranker(fake.url).score("q", ["m"]) == [pytest.approx(0.4)]


def test_a_reply_without_logprobs_is_one_line(fake):
    fake.reply = lambda body: as_json({"choices": [{"message": {"content": "Yes"}}]})
    with pytest.raises(BadReply, match=r"without logprobs: .*llama-server returns them") as e:
        chat_reranker(fake.url).score("q", ["m"])
    assert "\n" not in str(e.value) and len(fake.bodies) == 1  # not retried


@pytest.mark.hostile
@pytest.mark.parametrize(
    "reply, message",
    [
        (Raw([b"<html>oops</html>"], "text/html"), "not JSON"),
        (Raw([b"\xff\xfe{}"], "application/json"), "not UTF-8"),
        (Raw([b"[" * 5000 + b"]" * 5000], "application/json"), "nested deeper"),
        (as_json({"choices": []}), "no choices"),
        (as_json({"choices": [{"logprobs": {"content": [{"token": "Yes"}]}}]}), "top_logprobs"),
        (as_json(chat_reply([("Yes", 0.5)])), "not a log-probability"),
        (as_json(chat_reply([("Yes", "high")])), "not a log-probability"),
        (as_json({"choices": [{"logprobs": ["Yes"]}]}), "not an object"),
    ],
)
def test_a_hostile_chat_reply_is_one_line(fake, reply, message):
    fake.reply = lambda body: reply
    with pytest.raises(BadReply, match=message) as e:
        chat_reranker(fake.url).score("q", ["m"])
    assert "\n" not in str(e.value)


@pytest.mark.hostile
def test_a_reply_too_large_or_too_slow_is_refused_in_bounded_time(fake):
    fake.reply = lambda body: Raw([b"{"], "application/json", forever=b" " * 65536, pause=0.001)
    cfg = RerankerConfig("chat", fake.url, model="m", attempts=1, max_bytes=1 << 20)
    with pytest.raises(TooLarge, match="more than 1,048,576 bytes"):
        Reranker(cfg).score("q", ["m"])
    fake.reply = lambda body: Raw([b"{"], "application/json", forever=b" ", pause=0.2)
    cfg = RerankerConfig("chat", fake.url, model="m", attempts=1, timeout=1.0)
    with pytest.raises(ServerFailure, match=r"failed after 1 attempt: no answer within 1 s"):
        Reranker(cfg).score("q", ["m"])


@pytest.mark.hostile
def test_a_server_error_is_retried_then_named_redacted(fake):
    calls = []

    def flaky(body):
        calls.append(1)
        return (503, "busy") if len(calls) < 2 else as_json(chat_reply([("Yes", math.log(0.9))]))

    fake.reply = flaky
    url = fake.url.replace("http://", "http://user:secret@")
    assert chat_reranker(url, attempts=2).score("q", ["m"]) == [pytest.approx(0.9)]
    fake.reply = lambda body: (500, "down")
    with pytest.raises(ServerFailure) as e:
        chat_reranker(url, attempts=2).score("q", ["m"])
    assert "secret" not in str(e.value) and "HTTP 500: down" in str(e.value)


def test_the_endpoint_against_the_standin_scores_by_cosine():
    server = StandinRerankServer()
    with server as url:
        reranker = Reranker(RerankerConfig("endpoint", url, model=MODEL, attempts=1))
        docs = ["coffee with milk every morning", "the dentist appointment", "morning coffee habits"]
        got = reranker.score("what coffee do I drink in the morning", docs)
        tei = Reranker(RerankerConfig("endpoint", url, request_shape="texts", attempts=1))
        got_tei = tei.score("what coffee do I drink in the morning", docs)
    want = [cosine("what coffee do I drink in the morning", d) for d in docs]
    assert got == pytest.approx(want) and got_tei == pytest.approx(want)
    assert got[0] > got[1] and got[2] > got[1]  # the coffee memories over the dentist
    sent, sent_tei = server.bodies
    assert sent["path"] == "/v1/rerank" and sent["documents"] == docs and sent["top_n"] == 3
    assert sent["model"] == MODEL and sent_tei["texts"] == docs and "documents" not in sent_tei


@pytest.mark.hostile
@pytest.mark.parametrize(
    "reply, message",
    [
        ({"results": [{"index": 0, "relevance_score": 0.5}]}, "scored 1 documents of the 2 sent"),
        (
            {"results": [{"index": 0, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.4}]},
            "scored document 0 twice",
        ),
        (
            {"results": [{"index": 2, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.4}]},
            r"index in \[0, 2\)",
        ),
        ({"results": [{"index": True, "score": 0.5}, {"index": 0, "score": 0.4}]}, "index"),
        (
            {"results": [{"index": 1, "relevance_score": "high"}, {"index": 0, "relevance_score": 0.4}]},
            "not a finite number",
        ),
        (
            {"results": [{"index": 1, "relevance_score": float("nan")}, {"index": 0, "score": 0.4}]},
            "not a finite number",
        ),
        ({"scores": [0.1, 0.2]}, "no rerank results"),
    ],
)
def test_a_hostile_rerank_reply_is_one_line(reply, message):
    with pytest.raises(BadReply, match=message):
        rerank_scores(reply, 2, "endpoint reranker X")


def test_the_common_reply_variants_are_read():
    assert rerank_scores([{"index": 1, "score": 0.2}, {"index": 0, "score": 0.9}], 2, "x") == [0.9, 0.2]
    assert rerank_scores({"data": [{"index": 0, "relevance_score": -3.5}]}, 1, "x") == [-3.5]  # a logit
    assert rerank_scores({"rerank": [{"index": 0, "relevance_score": 1}]}, 1, "x") == [1.0]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"kind": "llm"}, "--reranker: expected one of chat, endpoint"),
        ({"url": "ftp://x"}, "--rerank-url"),
        ({"top_logprobs": 21}, "--rerank-top-logprobs"),
        ({"request_shape": "pairs"}, "--rerank-request"),
        ({"attempts": 0}, "--rerank-attempts"),
    ],
)
def test_a_bad_configuration_is_one_line(kwargs, message):
    fields = {"kind": "chat", "url": "http://127.0.0.1:1/v1", **kwargs}
    with pytest.raises(InputError, match=message):
        RerankerConfig(**fields)


def test_scores_are_cached_by_server_model_and_texts(tmp_path, fake):
    fake.reply = lambda body: as_json(
        chat_reply([("Yes", math.log(0.25 if "dentist" in json.dumps(body) else 0.8))])
    )
    pairs = [("q1", "coffee"), ("q1", "dentist"), ("q2", "coffee"), ("q1", "coffee")]
    cache = ScoreCache(tmp_path)
    first = score_pairs(chat_reranker(fake.url), pairs, cache)
    assert first == pytest.approx([0.8, 0.25, 0.8, 0.8])
    assert len(fake.bodies) == 3  # the repeated pair asked once
    again_cache = ScoreCache(tmp_path)
    assert score_pairs(chat_reranker(fake.url), pairs, again_cache) == first
    assert len(fake.bodies) == 3 and again_cache.hits == 3  # nothing sent
    other = Reranker(RerankerConfig("chat", fake.url, model="other", attempts=1))
    score_pairs(other, pairs[:1], again_cache)
    assert len(fake.bodies) == 4  # another model: its own entry


@pytest.mark.hostile
def test_a_bad_cache_entry_is_warned_and_asked_again_a_link_is_not_followed(tmp_path, fake):
    fake.reply = lambda body: as_json(chat_reply([("Yes", math.log(0.5))]))
    cache = ScoreCache(tmp_path)
    reranker = chat_reranker(fake.url)
    score_pairs(reranker, [("q", "m")], cache)
    (entry,) = list((tmp_path / "rerank").rglob("*.json"))
    data = json.loads(entry.read_text())
    data["score"] = float("inf")
    entry.write_text(json.dumps(data))
    with pytest.warns(Warning, match="its score is not a finite number; asking again"):
        assert score_pairs(reranker, [("q", "m")], ScoreCache(tmp_path)) == [0.5]
    target = tmp_path / "elsewhere.json"
    target.write_text("keep")
    entry.unlink()
    os.symlink(target, entry)
    with pytest.warns(Warning, match="symbolic link"):
        score_pairs(reranker, [("q", "m")], ScoreCache(tmp_path))
    assert target.read_text() == "keep" and not entry.is_symlink()


def test_n_at_a_time_gives_what_one_at_a_time_gives(tmp_path, fake):
    fake.reply = lambda body: as_json(chat_reply([("Yes", -len(body["messages"][1]["content"]) / 100)]))
    pairs = [(f"question {i % 3}", f"memory {'x' * i}") for i in range(12)]
    one = score_pairs(chat_reranker(fake.url), pairs)
    four = score_pairs(chat_reranker(fake.url), pairs, concurrency=4)
    assert one == four and len(set(one)) == 12


def test_the_endpoint_groups_a_querys_missing_memories_in_one_request(tmp_path):
    server = StandinRerankServer()
    pairs = [("coffee please", "coffee"), ("coffee please", "tea"), ("dentist", "coffee")]
    with server as url:
        reranker = Reranker(RerankerConfig("endpoint", url, attempts=1))
        got = score_pairs(reranker, pairs, ScoreCache(tmp_path), concurrency=2)
    assert got == pytest.approx([cosine(q, d) for q, d in pairs])
    assert sorted(len(b["documents"]) for b in server.bodies) == [1, 2]


@pytest.mark.hostile
def test_the_first_error_in_input_order_is_raised_and_nothing_after_is_cached(tmp_path, fake):
    def reply(body):
        text = body["messages"][1]["content"]
        return (
            as_json({"choices": [{"message": {}}]}) if "bad" in text else as_json(chat_reply([("Yes", -0.1)]))
        )

    fake.reply = reply
    pairs = [("q", "ok 1"), ("q", "bad"), ("q", "ok 2")]
    cache = ScoreCache(tmp_path)
    with warnings.catch_warnings(), pytest.raises(BadReply, match="without logprobs"):
        score_pairs(chat_reranker(fake.url), pairs, cache, concurrency=1)
    assert len(list((tmp_path / "rerank").rglob("*.json"))) == 1  # the one before the error
