"""The answer study's parts on paper: LoCoMo's token F1, the phrases, the judge's protocol and
parsing, the reply cache, the rates and their intervals, the conditions, the prompt sent against
``memlab prompt``, and the chat client against a tiny server that fails as told."""

from __future__ import annotations

import json
import socket
import threading
import warnings

import numpy as np
import pandas as pd
import pytest
from chat_fake import FakeChat

from memlab.answers.cache import ReplyCache, cached_complete, chat_request
from memlab.answers.chat import ChatClient, ChatConfig, Reply
from memlab.answers.conditions import Condition, TuneGrid, build_conditions, parse_variant
from memlab.answers.f1 import f1_score, locomo_f1, multi_answer_f1, normalize_answer
from memlab.answers.judge import JUDGE_FORMATS, PROTOCOL, judge_messages, parse_verdict
from memlab.answers.phrases import contains, fold, phrase_verdict
from memlab.answers.rates import rates
from memlab.answers.replay import build_turns, replay
from memlab.app.cli import main
from memlab.core.errors import InputError, MemlabWarning, UnknownNameError
from memlab.core.http import BadReply, ServerFailure
from memlab.datasets.schema import DatasetError, load_dataset
from memlab.embedding.cache import CacheWarning
from memlab.scores.problem import build_problem
from memlab.scores.sources import ScoreOptions

PUBLISHED = ScoreOptions("published")


@pytest.fixture
def fake():
    server = FakeChat()
    yield server
    server.close()


# -- LoCoMo's token F1 ------------------------------------------------------------------------


def test_normalisation_drops_commas_case_punctuation_articles_and_and():
    assert normalize_answer("The Cat, and a DOG!") == "cat dog"
    assert normalize_answer("7 May 2023.") == "7 may 2023"


@pytest.mark.parametrize(
    ("prediction", "truth", "f1"),
    [
        ("the cat sat", "a cat sat down", 0.8),  # cat sat | cat sat down: P 1, R 2/3
        ("running dogs", "dog runs", 1.0),  # Porter: run dog | dog run
        ("Paris", "London", 0.0),
        ("", "London", 0.0),
        ("London London", "London", 2 * 0.5 * 1 / 1.5),  # P 1/2, R 1
    ],
)
def test_f1_score_by_hand(prediction, truth, f1):
    assert f1_score(prediction, truth) == pytest.approx(f1)


def test_the_per_category_rules():
    # multi-hop: per answer part, the best prediction part, averaged: London 1, Rome 0
    assert multi_answer_f1("Paris, London", "London, Rome") == pytest.approx(0.5)
    assert locomo_f1("Paris, London", "London, Rome", "multi-hop") == pytest.approx(0.5)
    # open-domain: the answer up to its first ;
    assert locomo_f1("psychology", "psychology; counseling", "open-domain") == 1.0
    assert locomo_f1("psychology", "psychology; counseling", "single-hop") == pytest.approx(2 / 3)
    # adversarial: the reply says there is nothing to say
    assert locomo_f1("That was not mentioned.", None, "adversarial") == 1.0
    assert locomo_f1("She went to Paris.", None, "adversarial") == 0.0
    assert locomo_f1("anything", None, "") is None


# -- phrases ----------------------------------------------------------------------------------


def test_phrases_fold_case_accents_width_and_dashes():
    assert fold("Café-au-Lait") == "cafe au lait"
    assert contains("I drink CAFE AU LAIT now", "café au lait")
    assert contains("最近はカフェオレだね", "カフェオレ")
    assert not contains("three hits today", "TTS")  # whole words for Latin phrases
    assert contains("the TTS server", "TTS")


def test_phrase_verdicts():
    assert phrase_verdict("Sweet café au lait lately!", ["café au lait"], []) == (
        True,
        "holds 'café au lait'",
    )
    assert phrase_verdict("Black, as always.", ["café au lait"], []) == (False, "lacks 'café au lait'")
    assert phrase_verdict("About your keyboard...", [], ["keyboard", "coffee"]) == (
        False,
        "mentions 'keyboard'",
    )
    assert phrase_verdict("Qubits.", [], ["keyboard", "coffee"]) == (
        True,
        "mentions none of 2 avoided phrases",
    )
    assert phrase_verdict("anything", [], []) == (None, "")


def test_seed16_carries_the_checkable_judge():
    data = load_dataset("seed16")
    assert data.question("C1").replies.phrases("en") == (("café au lait",), ())
    assert data.question("C1").replies.phrases("ja") == (("カフェオレ",), ())
    for qid in ("N1", "N2", "N3", "N4"):
        expect, avoid = data.question(qid).replies.phrases("en")
        assert not expect and {"keyboard", "fall anime", "café au lait", "mentaiko"} <= set(avoid)
    assert not data.question("H1").replies.has_phrases("en")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"expect": "café au lait"},
            "questions.jsonl:5: expect: expected a non-empty list of phrases, got 'café au lait'",
        ),
        ({"expect": []}, "questions.jsonl:5: expect: expected a non-empty list of phrases, got []"),
        (
            {"avoid_ja": ["", "x"]},
            "questions.jsonl:5: avoid_ja: expected phrases (non-empty strings), got ''",
        ),
        ({"expect": ["x"], "avoid": ["x"]}, "questions.jsonl:5: avoid: 'x' is also expected"),
        ({"answer": ""}, "questions.jsonl:5: answer: empty"),
        ({"answer": ["x"]}, "questions.jsonl:5: answer: expected a string, got ['x']"),
        ({"expect_fr": ["x"]}, "questions.jsonl:5: expect_fr: unknown field"),
    ],
)
def test_bad_reply_fields_are_located(dataset_copy, changes, message):
    root, edit = dataset_copy
    edit("questions.jsonl", 5, **changes)
    with pytest.raises(DatasetError) as e:
        load_dataset(root)
    assert any(p.split("/")[-1].startswith(message) for p in e.value.problems), e.value.problems


def test_a_numeric_answer_reads_as_text(dataset_copy):
    root, edit = dataset_copy
    edit("questions.jsonl", 1, answer=2022)
    assert load_dataset(root).question("H1").replies.answer == {"en": "2022"}


# -- the judge ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "verdict", "reason"),
    [
        ("YES\nIt names café au lait.", True, "It names café au lait."),
        ("no. It says black coffee.", False, "It says black coffee."),
        ('{"verdict": "NO", "reason": "mentions the keyboard"}', False, "mentions the keyboard"),
        ("The reply is fine, so: YES", True, "The reply is fine, so: YES"),
        ("Maybe.", None, "Maybe."),
        ("Both YES and NO", None, "Both YES and NO"),
        ('{"verdict": "maybe"}', None, '{"verdict": "maybe"}'),
    ],
)
def test_parse_verdict(text, verdict, reason):
    assert parse_verdict(text) == (verdict, reason)


def test_judge_messages_name_what_the_rule_needs():
    data = load_dataset("seed16")
    c1 = judge_messages(data.question("C1"), "Café au lait!", data, "en")[1]["content"]
    assert "The current memory: 2026-09-01: The user has been drinking sweet café au lait lately." in c1
    assert "An older memory it replaces: 2026-08-20: The user drinks coffee black." in c1
    assert c1.endswith(PROTOCOL["contradiction"].ask)
    n1 = judge_messages(data.question("N1"), "Qubits.", data, "en", ("m06", "m07"))[1]["content"]
    assert "- 2026-09-03: The user is torn over which keyboard to buy." in n1
    h2 = judge_messages(data.question("H2"), "Which one?", data, "en")[1]["content"]
    assert "The memory that answers it: 2026-09-09: The user finished writing the benchmark article." in h2
    assert h2.count("Another memory that may also answer it:") == 2
    system = judge_messages(data.question("H1"), "x", data, "en", judge_format="json-object")[0]["content"]
    assert '{"verdict": "YES" or "NO"' in system
    assert set(PROTOCOL) == {"hit", "contradiction", "nohit", "time"}
    with pytest.raises(UnknownNameError, match="judge format"):
        judge_messages(data.question("H1"), "x", data, "en", judge_format="xml")


# -- the cache ---------------------------------------------------------------------------------


def test_the_cache_returns_what_it_stored_and_rebuilds_a_bad_entry(tmp_path, fake):
    client = ChatClient(ChatConfig(fake.url, max_tokens=8))
    cache = ReplyCache(tmp_path)
    messages = [{"role": "system", "content": "memo"}, {"role": "user", "content": "q"}]
    first = cached_complete(client, cache, "reply", messages)
    again = cached_complete(client, cache, "reply", messages)
    assert (first.text, first.cached, again.text, again.cached) == ("memo", False, "memo", True)
    assert len(fake.bodies) == 1
    other = cached_complete(client, cache, "reply", messages, repeat=1)  # seed 1: its own entry
    assert not other.cached and fake.bodies[-1]["seed"] == 1
    request = chat_request(
        "reply", messages, "fake-1", client.config.parameters(), 0, 0, client.config.server
    )
    path = cache.path(request)
    entry = json.loads(path.read_text())
    assert entry["reply"]["model_id"] == "fake-1" and "url" not in json.dumps(entry)
    path.write_text(json.dumps({**entry, "request": {**entry["request"], "model": "other"}}))
    with pytest.warns(CacheWarning, match="holds another request; asking again"):
        assert not cached_complete(client, cache, "reply", messages).cached
    path.write_text("{not json")
    with pytest.warns(CacheWarning, match="unreadable"):
        assert not cached_complete(client, cache, "reply", messages).cached
    assert cached_complete(client, cache, "reply", messages).cached  # rewritten whole


def test_the_api_key_is_sent_and_never_stored(tmp_path, fake, monkeypatch):
    monkeypatch.setenv("MY_CHAT_KEY", "sk-secret-123")
    client = ChatClient(ChatConfig(fake.url, api_key_env="MY_CHAT_KEY"))
    cached_complete(client, ReplyCache(tmp_path), "reply", [{"role": "user", "content": "q"}])
    assert fake.headers[-1]["Authorization"] == "Bearer sk-secret-123"
    assert not any("sk-secret" in p.read_text() for p in tmp_path.rglob("*.json"))
    monkeypatch.delenv("MY_CHAT_KEY")
    with pytest.raises(
        InputError, match="--chat-api-key-env: the environment variable MY_CHAT_KEY is not set"
    ):
        ChatClient(ChatConfig(fake.url, api_key_env="MY_CHAT_KEY")).complete([])


# -- the chat client -----------------------------------------------------------------------------


def test_streamed_and_whole_replies_read_alike():
    for stream in (True, False):
        server = FakeChat(lambda body: "café au lait lately", stream=stream, model="m-7")
        try:
            reply = ChatClient(ChatConfig(server.url, "asked", temperature=0.2, seed=5)).complete(
                [{"role": "user", "content": "q"}]
            )
        finally:
            server.close()
        assert (reply.text, reply.model_id, reply.finish_reason) == ("café au lait lately", "m-7", "stop")
        assert 0 < reply.ttft_s <= reply.total_s
        sent = server.bodies[0]
        assert (sent["model"], sent["seed"], sent["temperature"], sent["stream"]) == ("asked", 5, 0.2, True)


def test_the_model_defaults_to_the_first_the_server_lists(fake):
    assert ChatClient(ChatConfig(fake.url)).model == "fake-1"


def test_a_5xx_is_retried_then_fails_with_one_line():
    server = FakeChat(lambda body: (503, "busy"))
    try:
        client = ChatClient(ChatConfig(server.url, "m", attempts=3, backoff=0.01))
        with pytest.raises(ServerFailure) as e:
            client.complete([{"role": "user", "content": "q"}])
    finally:
        server.close()
    assert (
        str(e.value) == f"chat server {server.url}/chat/completions failed after 3 attempts: HTTP 503: busy"
    )
    assert len(server.bodies) == 3


def test_a_client_error_is_not_retried():
    server = FakeChat(lambda body: (400, "bad model"))
    try:
        with pytest.raises(ServerFailure, match="failed after 1 attempt: HTTP 400: bad model"):
            ChatClient(ChatConfig(server.url, "m", attempts=3, backoff=0.01)).complete([])
    finally:
        server.close()
    assert len(server.bodies) == 1


def test_an_unreachable_or_silent_server_is_one_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    refused = ChatClient(ChatConfig(f"http://127.0.0.1:{port}/v1", "m", attempts=2, backoff=0.01))
    with pytest.raises(ServerFailure, match=r"failed after 2 attempts: cannot connect"):
        refused.complete([])
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    held = []
    threading.Thread(target=lambda: held.extend(silent.accept() for _ in range(2)), daemon=True).start()
    url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
    try:
        slow = ChatClient(ChatConfig(url, "m", timeout=0.3, attempts=2, backoff=0.01))
        with pytest.raises(ServerFailure, match=r"failed after 2 attempts: no answer within 0.3 s"):
            slow.complete([])
    finally:
        silent.close()


def test_a_reply_that_is_no_chat_reply_stops_at_once():
    server = FakeChat(lambda body: "x", stream=False)
    server.reply = lambda body: (200, "<html>")
    try:
        with pytest.raises(BadReply, match="sent no chat reply"):
            ChatClient(ChatConfig(server.url, "m")).complete([])
    finally:
        server.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"url": "ftp://x"}, "--chat-url: expected an http:// or https:// URL, got 'ftp://x'"),
        ({"temperature": 3.0}, "--temperature: expected a finite number in [0, 2], got 3"),
        ({"max_tokens": 0}, "--max-tokens: expected an integer in [1, 8388608], got 0"),
        ({"attempts": 0}, "--chat-attempts: expected an integer in [1, 10], got 0"),
    ],
)
def test_bad_chat_options(kwargs, message):
    with pytest.raises(InputError) as e:
        ChatConfig(**{"url": "http://127.0.0.1:1/v1", **kwargs})
    assert str(e.value) == message


# -- rates --------------------------------------------------------------------------------------


def test_rates_take_questions_as_the_unit():
    rows = [
        # q1 (hit): 2 repeats, yes and no -> 0.5; q2 (hit): yes -> 1; q3 (nohit): unjudged
        ("q1", "hit", "b", True),
        ("q1", "hit", "b", False),
        ("q2", "hit", "b", True),
        ("q3", "nohit", "b", None),
    ]
    judged = pd.DataFrame(rows, columns=["question_id", "kind", "condition", "judge"])
    table = rates(judged, n_boot=500, seed=0).set_index(["kind", "score"])
    hit = table.loc[("hit", "judge")]
    assert (hit["questions"], hit["replies"], hit["unscored"], hit["rate"]) == (2, 3, 0, 0.75)
    assert 0.5 <= hit["lo"] <= 0.75 <= hit["hi"] <= 1.0  # resampling two questions: 0.5, 0.75 or 1
    nohit = table.loc[("nohit", "judge")]
    assert (nohit["questions"], nohit["unscored"]) == (0, 1) and np.isnan(nohit["rate"])
    assert table.loc[("all", "judge")]["rate"] == 0.75


# -- conditions and the prompt sent --------------------------------------------------------------


def test_variants_are_parsed_and_checked():
    assert parse_variant("wide:bonus=0.04,tau_days=30,inject=2") == (
        "wide",
        {"bonus": 0.04, "tau_days": 30.0, "inject": 2},
    )
    with pytest.raises(InputError, match="expected NAME:field=value"):
        parse_variant("wide")
    with pytest.raises(InputError, match="'today' names a condition already"):
        parse_variant("today:bonus=0.1")
    with pytest.raises(InputError, match="expected field=value with a field of candidates"):
        parse_variant("w:alpha=1")
    with pytest.raises(InputError, match="bonus: expected a number, got 'x'"):
        parse_variant("w:bonus=x")


def test_conditions_and_their_blocks():
    problem = build_problem("seed16", PUBLISHED)
    conditions = build_conditions(problem, ("off", "raw", "today", "tuned"), ("wide:bonus=0.03,tau_days=30",))
    assert [c.name for c in conditions] == ["off", "raw", "today", "tuned", "wide"]
    assert [c.block for c in conditions] == [None, "raw", "b", "b", "b"]
    assert conditions[4].spec.bonus == 0.03 and conditions[2].spec == problem.spec
    with pytest.raises(UnknownNameError, match="unknown condition 'on'; available: off, raw, today, tuned"):
        build_conditions(problem, ("on",))
    turns = {(t.question_id, t.condition): t for t in build_turns(problem, conditions)}
    c1 = turns[("C1", "today")]
    assert c1.injected == ("m01", "m02")  # the seed's (0.05, 14) injects stale black coffee first
    assert c1.messages[0]["content"].startswith("<retrieved_memory>\nToday is 2026-09-10.")
    assert turns[("C1", "raw")].messages[0]["content"] == (
        "2026-08-20: The user drinks coffee black.\n2026-09-01: The user has been drinking sweet café au lait lately."
    )
    assert turns[("C1", "off")].messages == ({"role": "user", "content": "How do I take my coffee again?"},)
    assert turns[("N1", "today")].messages == turns[("N1", "off")].messages  # nothing injected: no block


def test_the_tuned_spec_is_the_sweeps_choice():
    problem = build_problem("seed16", PUBLISHED)
    grid = TuneGrid("smallest-bonus", "0.03,0.04,0.05", "14,30", "0.45")
    (tuned,) = build_conditions(problem, ("tuned",), tune=grid)
    # the seed's own table: of its four candidates only (0.05, 14) satisfies a, b and c
    assert (tuned.spec.bonus, tuned.spec.tau_days, tuned.spec.threshold) == (0.05, 14.0, 0.45)
    # nothing feasible: as memlab sweep, the fallback (max-utility), and what its spec fails said
    # (was: refused, while the sweep on the same grid fell back)
    with pytest.warns(MemlabWarning) as said:
        (fallback,) = build_conditions(
            problem, ("tuned",), tune=TuneGrid("smallest-bonus", "0.03", "30", "0.45")
        )
    assert (fallback.spec.bonus, fallback.spec.tau_days) == (0.03, 30.0)
    assert fallback.about.endswith("(max-utility over bonus 0.03, tau 30, threshold 0.45, the fallback)")
    assert [str(w.message) for w in said if w.category is MemlabWarning] == [
        # on paper: C1 injects m01 (stale; C2's m11 is not); H2, H3, H4 miss m05, m09, m06
        "the tuned condition's spec is a fallback: nothing in the grid it was tuned on is feasible "
        "(never hold: c), so max-utility chose it; it fails c on seed16: it injects a stale memory on 1 of "
        "the 2 questions that have one, misses the current memory on 3 of the 6 questions that have one"
    ]


def cli_prompt(capsys, *args) -> list[dict]:
    assert main(["prompt", "--source", "published", "--format", "messages", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_prompt_sent_is_what_memlab_prompt_prints(capsys):
    problem = build_problem("seed16", PUBLISHED)
    conditions = build_conditions(problem, ("off", "raw", "today"), ("wide:bonus=0.03,tau_days=30",))
    turns = build_turns(problem, conditions)
    flags = {"raw": ["--block", "raw"], "today": [], "wide": ["--bonus", "0.03", "--tau", "30"]}
    for t in turns:
        if t.condition == "off":
            assert t.messages == (
                {"role": "user", "content": problem.dataset.question(t.question_id).text("en")},
            )
            continue
        printed = cli_prompt(capsys, "--question", t.question_id, *flags[t.condition])
        assert printed == list(t.messages), (t.question_id, t.condition)
    text_form = main(["prompt", "--source", "published", "--question", "C1"])
    assert text_form == 0 and capsys.readouterr().out.rstrip("\n") == turns[4 * 4 + 2].block


def test_replay_records_each_reply(tmp_path, fake):
    problem = build_problem("seed16", PUBLISHED)
    conditions = [Condition("off", None, None, "no memory"), build_conditions(problem, ("today",))[0]]
    turns = [t for t in build_turns(problem, conditions) if t.question_id in ("C1", "N1")]
    client = ChatClient(ChatConfig(fake.url, temperature=0.3, seed=7))
    frame = replay(turns, client, ReplyCache(tmp_path), repeats=2, progress=False)
    assert list(frame["condition"]) == ["off", "off", "today", "today", "off", "off", "today", "today"]
    assert list(frame["seed"]) == [7, 8] * 4 and set(frame["temperature"]) == {0.3}
    assert set(frame["model_id"]) == {"fake-1"}
    c1 = frame[(frame["question_id"] == "C1") & (frame["condition"] == "today")]
    assert c1["reply"].iloc[0] == c1["block"].iloc[0]  # the fake echoes the block
    # N1 today sends what N1 off sent: the same request, answered from the cache
    assert list(frame["cached"]) == [False, False, False, False, False, False, True, True]


def test_reply_checks_against_the_echo(tmp_path, fake, capsys):
    """The fake server echoes the block: C1's reply holds café au lait exactly when the block
    does, and a no-hit reply mentions nothing (nothing is injected)."""
    code = main(
        [
            "answer",
            "--source",
            "published",
            "--chat-url",
            fake.url,
            "--conditions",
            "off,raw,today",
            "--no-llm-judge",
            "--cache-dir",
            str(tmp_path),
            "--boot",
            "100",
            "--format",
            "json",
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    got = {(r["condition"], r["kind"]): r["rate"] for r in out["rates"] if r["score"] == "phrases"}
    assert got == {
        ("off", "contradiction"): 0.0,
        ("off", "nohit"): 1.0,
        ("off", "all"): 0.8,
        ("raw", "contradiction"): 1.0,
        ("raw", "nohit"): 1.0,
        ("raw", "all"): 1.0,
        ("today", "contradiction"): 1.0,
        ("today", "nohit"): 1.0,
        ("today", "all"): 1.0,
    }
    assert out["chat"]["model_ids"] == ["fake-1"] and out["judge"] is None
    assert out["notes"] == [
        "chat times measured one request at a time (--concurrency 1): each from its own send, a single "
        "user's turn",
        # N1-N4 get no memory under raw and today: the request sent under off, read from the cache
        "8 of 30 replies read from the cache: their chat times are those of the run that first sent them, "
        "at whatever concurrency that was",
        "question embedding and store query not timed: the published scores of 'seed16' come from a model "
        "memlab cannot run here: nothing new can be embedded alike (use --source embedded)",
    ]
    steps = {(t["condition"], t["step"]) for t in out["timing"]}
    assert steps == {(c, s) for c in ("off", "raw", "today") for s in ("chat: first token", "chat: total")}


def test_the_llm_judge_verdicts_and_its_model_are_recorded(tmp_path, capsys):
    def reply(body):
        if body["messages"][0]["content"].startswith("You grade"):
            return (
                "YES\nfine"
                if "café au lait" in body["messages"][1]["content"].split("replied:")[1]
                else "NO\nno"
            )
        return echo_block_or_none(body)

    def echo_block_or_none(body):
        system = [m["content"] for m in body["messages"] if m["role"] == "system"]
        return system[0] if system else "No idea."

    server = FakeChat(reply, model="judge-and-chat")
    try:
        assert (
            main(
                [
                    "answer",
                    "--source",
                    "published",
                    "--chat-url",
                    server.url,
                    "--conditions",
                    "off,today",
                    "--cache-dir",
                    str(tmp_path),
                    "--boot",
                    "100",
                    "--format",
                    "json",
                ]
            )
            == 0
        )
    finally:
        server.close()
    out = json.loads(capsys.readouterr().out)
    judged = {(r["condition"], r["question_id"]): (r["judge"], r["judge_model_id"]) for r in out["replies"]}
    assert judged[("today", "C1")] == (True, "judge-and-chat")
    assert judged[("off", "C1")] == (False, "judge-and-chat")
    assert out["judge"]["temperature"] == 0.0
    judge_bodies = [b for b in server.bodies if b["messages"][0]["content"].startswith("You grade")]
    # 20 replies, but N1-N4 get the same reply under both conditions (nothing is injected): the
    # same judge request, asked once
    assert {b["temperature"] for b in judge_bodies} == {0.0} and len(judge_bodies) == 16


def test_answer_without_a_chat_url_is_one_line(capsys):
    assert main(["answer", "--source", "published"]) == 2
    assert capsys.readouterr().err.strip() == (
        "memlab: error: --chat-url: required (an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1)"
    )


def test_answer_against_a_closed_port_is_one_line(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    code = main(
        ["answer", "--source", "published", "--chat-url", url, "--chat-model", "m", "--chat-attempts", "1"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith(
        f"memlab: error: chat server {url}/chat/completions failed after 1 attempt: cannot connect"
    )


def test_judge_formats_are_the_wire_forms():
    assert JUDGE_FORMATS["text"] is None
    assert JUDGE_FORMATS["json-object"]["type"] == "json_object"
    assert JUDGE_FORMATS["json-schema"]["json_schema"]["schema"]["required"] == ["verdict", "reason"]
    assert Reply("x", "m", 0.1, 0.2).to_dict()["model_id"] == "m"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ChatConfig("https://api.example.org/v1", response_format=JUDGE_FORMATS["json-schema"])


@pytest.mark.model
@pytest.mark.qdrant_edge
def test_the_turn_is_timed_on_local_mode_and_on_the_engine(cache_dir):
    from memlab.answers.timing import embedding_times, store_times, timing_table, turn_times

    problem = build_problem("seed16", ScoreOptions("embedded", cache_dir=str(cache_dir)))
    conditions = [Condition("off", None, None, "no memory"), *build_conditions(problem, ("today",))]
    embedding = embedding_times(problem)
    local, edge = store_times(problem, conditions, "local"), store_times(problem, conditions, "edge")
    assert len(embedding) == 10 and all(s > 0 for s in embedding)
    assert set(local) == set(edge) == {"today"} and len(local["today"]) == len(edge["today"]) == 10
    replies = pd.DataFrame({"condition": ["off", "today"], "ttft_s": [0.1, 0.3], "total_s": [1.0, 2.0]})
    table = timing_table(turn_times(replies, conditions, embedding, local)).set_index(["condition", "step"])
    assert table.loc[("today", "chat: total"), "median_s"] == 2.0
    assert table.loc[("today", "question embedding"), "n"] == 10
    assert ("off", "question embedding") not in table.index  # no memory: nothing embedded
    with pytest.raises(InputError, match="--store: expected one of local, edge, got 'disk'"):
        store_times(problem, conditions, "disk")


def test_the_figures_show_questions_by_their_words_and_steps_in_order():
    from memlab.answers.timing import STEPS
    from memlab.output.figures.answers import (
        TURN_ORDER,
        VERDICT_FILL,
        rate_bars,
        replies_table,
        turn_time_bars,
    )

    assert TURN_ORDER == STEPS
    replies = pd.DataFrame(
        [
            ("C1", "contradiction", "How do I take my coffee again?", c, 0, reply, verdict)
            for c, reply, verdict in (("off", "Black.", False), ("today", "Café au lait lately.", True))
        ],
        columns=["question_id", "kind", "question", "condition", "repeat", "reply", "judge"],
    )
    table = replies_table(replies, ["off", "today"]).data[0]
    assert (
        table.cells.values[0][0].replace("<br>", " ")
        == "<b>C1</b> (contradiction) How do I take my coffee again?"
    )
    assert table.cells.values[2][0] == "<i>judge: yes</i><br>Café au lait lately."
    assert [f[0] for f in table.cells.fill.color] == ["#F2F2F2", VERDICT_FILL[False], VERDICT_FILL[True]]
    rates_frame = rates(replies, n_boot=50)
    bars = rate_bars(rates_frame, "judge")
    assert [t.name for t in bars.data] == ["contradiction (1 question)", "all (1 question)"]
    assert list(bars.data[0].y) == [0.0, 1.0]
    timing = pd.DataFrame(
        [(c, s, 1, 0.5, 0.9, 0.1, 1.0) for c in ("off", "today") for s in reversed(STEPS)],
        columns=["condition", "step", "n", "median_s", "p95_s", "min_s", "max_s"],
    )
    assert [t.name for t in turn_time_bars(timing).data] == list(STEPS)
