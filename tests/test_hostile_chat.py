"""The fault-and-hostile-input tier (issue 37), the chat client: a server that answers anything
but a chat reply, trickles, or never ends gets one line in bounded time and nothing cached; no
URL credential or key is printed or written; the reply cache never follows a link and tells
servers apart; counts that would never finish are refused before the first request.
"""

from __future__ import annotations

import json
import os
import socket
import time
import warnings
from pathlib import Path

import nbformat
import pytest
from chat_fake import FakeChat, Raw

from memlab.answers.cache import ChatCacheError, ReplyCache, cached_complete, chat_request
from memlab.answers.chat import ChatClient, ChatConfig, Reply
from memlab.answers.judge import parse_verdict
from memlab.answers.replay import MAX_REPEATS, MAX_REQUESTS, Turn, replay
from memlab.app.answer_parameters import MAX_REPEATS as REGISTRY_MAX_REPEATS
from memlab.app.cli import main
from memlab.app.execution import redact_outputs
from memlab.app.parameters import BY_NAME
from memlab.core.errors import InputError, MemlabError
from memlab.core.http import MAX_ATTEMPTS, MAX_TIMEOUT, ServerFailure
from memlab.core.urls import SECRETS_ENV, hide_secrets
from memlab.embedding.cache import CacheWarning
from memlab.embedding.server import ServerConfig

pytestmark = pytest.mark.hostile
ROOT = Path(__file__).resolve().parents[1]
ASK = [{"role": "user", "content": "q"}]


def sse(*events: object, done: bool = True) -> Raw:
    """A server-sent event stream of ``events`` (dicts as JSON, bytes as they are)."""
    lines = [b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n" for e in events]
    return Raw([*lines, *([b"data: [DONE]\n\n"] if done else [])])


def body(data: object) -> Raw:
    """One JSON body (bytes as they are)."""
    return Raw([data if isinstance(data, bytes) else json.dumps(data).encode()], "application/json")


def ask(tmp_path: Path, reply: Raw, **config) -> tuple[str, int, int, float]:
    """What asking a server that sends ``reply`` gives: (the message, the requests it got, the
    cache entries written, the seconds it took)."""
    server = FakeChat(lambda b: reply)
    cache = ReplyCache(tmp_path / "cache")
    client = ChatClient(ChatConfig(server.url, "m", backoff=0.01, **{"attempts": 1, **config}))
    t0 = time.perf_counter()
    try:
        with pytest.raises(MemlabError) as e:
            cached_complete(client, cache, "reply", ASK)
    finally:
        client.close()
        server.close()
    entries = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    message = str(e.value).replace(f"chat server {server.url}/chat/completions", "{server}")
    return message, len(server.bodies), len(entries), time.perf_counter() - t0


def content(value: object) -> dict:
    return {"choices": [{"message": {"role": "assistant", "content": value}, "finish_reason": "stop"}]}


DEEP = b"[" * 100_000 + b"]" * 100_000
SURROGATE = b'{"choices": [{"message": {"content": "a\\ud800"}}]}'
UNICODE = "lone surrogate escape \\ud800 at character 2: not valid Unicode text"


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            body({"choices": "x"}),
            """{server} sent no chat reply (no list of 'choices'): '{"choices": "x"}'""",
        ),
        (body({"choices": []}), """{server} sent no chat reply (no list of 'choices'): '{"choices": []}'"""),
        (
            body({"choices": [{"message": "hi"}]}),
            """{server} sent a choice whose 'message' is not an object: '{"message": "hi"}'""",
        ),
        (body(content(5)), "{server} sent a 'content' that is neither text nor a list of text parts: '5'"),
        (
            body(content([3])),
            "{server} sent a 'content' that is neither text nor a list of text parts: '[3]'",
        ),
        (
            body(content([{"type": "text", "text": 3}])),
            """{server} sent a 'content' that is neither text nor a list of text parts: '[{"type": "text", "text": 3}]'""",
        ),
        (
            body({**content("a"), "usage": "many"}),
            """{server} sent a 'usage' that is not an object of token counts: '"many"'""",
        ),
        (
            body({**content("a"), "usage": {"prompt_tokens": True}}),
            """{server} sent a 'usage' whose 'prompt_tokens' is not a count: '{"prompt_tokens": true}'""",
        ),
        (body({**content("a"), "model": 5}), "{server} sent a 'model' that is not text: '5'"),
        (
            body(SURROGATE),
            f"{{server}} sent a reply with text that is not Unicode: choices[0].message.content: {UNICODE}",
        ),
        (body(DEEP), "{server} sent a reply nested deeper than memlab reads (about 1000 levels)"),
        (
            body(b'{"choices": ' + b"1" * 5000 + b"}"),
            "{server} sent a reply that holds an integer of more than 4300 digits: not a number memlab reads",
        ),
        (body(b'{"choices": "\xff"}'), "{server} sent a reply that is not UTF-8 (byte 0xff)"),
        (
            body({"error": {"message": "model overloaded"}}),
            """{server} sent an error, not a reply: '{"message": "model overloaded"}'""",
        ),
        (
            sse({"choices": "x"}),
            """{server} sent a stream event whose 'choices' is not a list: '{"choices": "x"}'""",
        ),
        (sse({"choices": ["x"]}), """{server} sent a stream choice without a 'delta' object: '"x"'"""),
        (
            sse({"choices": [{"delta": "x"}]}),
            """{server} sent a stream choice without a 'delta' object: '{"delta": "x"}'""",
        ),
        (
            sse({"choices": [{"delta": {"content": 7}}]}),
            "{server} sent a 'content' that is neither text nor a list of text parts: '7'",
        ),
        (
            sse({"choices": [], "usage": []}),
            "{server} sent a 'usage' that is not an object of token counts: '[]'",
        ),
        (
            sse({"choices": [{"delta": {"content": "a"}, "finish_reason": 1}]}),
            "{server} sent a 'finish_reason' that is not text: '1'",
        ),
        (
            sse({"error": {"message": "boom"}}),
            """{server} sent an error in its stream: '{"message": "boom"}'""",
        ),
        (sse([1]), "{server} sent a stream event that is no chunk: '[1]'"),
        (sse(b"hello"), "{server} sent a stream event that is not JSON: 'hello'"),
        (sse(DEEP), "{server} sent a stream event nested deeper than memlab reads (about 1000 levels)"),
        (
            sse(b'{"choices": [{"delta": {"content": "a\\ud800"}}]}'),
            f"{{server}} sent a stream event with text that is not Unicode: choices[0].delta.content: {UNICODE}",
        ),
    ],
)
def test_a_reply_that_is_no_chat_reply_is_one_line_asked_once_and_never_cached(tmp_path, reply, message):
    said, requests, cached, seconds = ask(tmp_path, reply, attempts=3)
    assert (said, requests, cached) == (message, 1, 0)
    assert seconds < 5


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (
            sse({"choices": [{"delta": {"content": "half a rep"}}]}, done=False),
            "the stream ended before its [DONE] event (after 1 event)",
        ),
        (Raw([]), "the stream ended before its [DONE] event (no event at all: an empty reply)"),
        (
            Raw([b": keep-alive\n\n"]),
            "the stream ended before its [DONE] event (no event at all: an empty reply)",
        ),
        (Raw([], "application/json"), "an empty reply (no body)"),
    ],
)
def test_a_reply_cut_short_or_empty_is_retried_then_one_line_never_a_reply(tmp_path, reply, reason):
    said, requests, cached, _ = ask(tmp_path, reply, attempts=2)
    assert (said, requests, cached) == (
        f"{{server}} failed after 2 attempts: RemoteProtocolError: {reason}",
        2,
        0,
    )


@pytest.mark.parametrize(
    "forever",
    [b": keep-alive\n\n", b'data: {"choices": [{"delta": {"content": "a"}}]}\n\n'],
    ids=["keep-alive", "a token"],
)
def test_a_server_trickling_every_tenth_of_a_second_meets_the_deadline(tmp_path, forever):
    said, requests, cached, seconds = ask(tmp_path, Raw([], pause=0.1, forever=forever), timeout=0.5)
    assert (said, requests, cached) == ("{server} failed after 1 attempt: no answer within 0.5 s", 1, 0)
    assert seconds < 3  # a wait per read would never end: each read gets its byte in 0.1 s


@pytest.mark.parametrize(
    "reply", [sse(*[{"choices": [{"delta": {"content": "x" * 50}}]}] * 30), body(content("x" * 2000))]
)
def test_a_reply_longer_than_the_limit_is_refused(tmp_path, reply):
    said, requests, cached, _ = ask(tmp_path, reply, max_bytes=1000)
    assert (said, requests, cached) == (
        "{server} sent a reply of more than 1,000 bytes: not a reply memlab reads",
        1,
        0,
    )


@pytest.mark.parametrize(
    ("listed", "message"),
    [
        ((404, "no such route"), "chat server {url}/models failed after 1 attempt: HTTP 404: no such route"),
        (
            Raw([b'{"data": "x"}'], "application/json"),
            "chat server {url}/models lists no model: name one with --chat-model",
        ),
        (
            Raw([b'{"data": [{"id": 5}]}'], "application/json"),
            "chat server {url}/models lists no model: name one with --chat-model",
        ),
        (
            Raw([DEEP], "application/json"),
            "chat server {url}/models sent a model list nested deeper than memlab reads (about 1000 levels)",
        ),
    ],
)
def test_a_model_list_that_names_no_model_is_one_line(listed, message):
    server = FakeChat()
    server.listing = listed
    try:
        with pytest.raises(MemlabError) as e:
            ChatClient(ChatConfig(server.url, attempts=1)).complete(ASK)
    finally:
        server.close()
    assert str(e.value) == message.format(url=server.url)


def test_a_redirect_is_named_with_where_it_points_not_followed(tmp_path):
    reply = Raw([b"moved"], "text/plain", status=301)
    said, requests, cached, _ = ask(tmp_path, reply, attempts=3)
    assert (said, requests, cached) == (
        "{server} failed after 1 attempt: HTTP 301, a redirect: give the address the server names",
        1,
        0,
    )


@pytest.mark.parametrize("stream", [True, False])
def test_content_as_a_list_of_parts_reads_its_text_parts(stream):
    parts = [
        {"type": "text", "text": "café "},
        {"type": "image_url", "image_url": {}},
        {"type": "text", "text": "au lait"},
    ]
    reply = (
        sse({"model": "m-2", "choices": [{"delta": {"content": parts}}]}) if stream else body(content(parts))
    )
    server = FakeChat(lambda b: reply)
    try:
        got = ChatClient(ChatConfig(server.url, "m")).complete(ASK)
    finally:
        server.close()
    assert got.text == "café au lait"


def test_null_usage_and_null_content_are_what_servers_send():
    # vLLM sends "usage": null in every chunk; a reply of only a tool call has "content": null
    reply = sse(
        {"model": "m-3", "usage": None, "choices": [{"delta": {"content": None}}]},
        {"choices": [{"delta": {"content": "ok"}}], "usage": {"prompt_tokens": 4, "completion_tokens": 1}},
    )
    server = FakeChat(lambda b: reply)
    try:
        got = ChatClient(ChatConfig(server.url, "m")).complete(ASK)
    finally:
        server.close()
    assert (got.text, got.model_id, got.prompt_tokens, got.completion_tokens) == ("ok", "m-3", 4, 1)


@pytest.mark.parametrize(
    "reply",
    ['{"verdict": ' + "[" * 100_000 + "]" * 100_000 + "}", '{"verdict": ' + "1" * 5000 + "}"],
    ids=["deep", "long integer"],
)
def test_a_judges_reply_that_is_hostile_json_is_left_unjudged(reply):
    verdict, reason = parse_verdict(reply)
    assert verdict is None and len(reason) == 300


# -- secrets ------------------------------------------------------------------------------------


def test_credentials_in_the_chat_url_are_never_printed():
    server = FakeChat(lambda b: (503, "busy"))
    port = server.server.server_address[1]
    try:
        for option in ("--chat-url", "--judge-url"):
            url = f"http://alice:PW@127.0.0.1:{port}/v1?api-key=SECRETKEY"
            with pytest.raises(ServerFailure) as e:
                ChatClient(ChatConfig(url, "m", attempts=1, option=option)).complete(ASK)
            assert str(e.value) == (
                f"chat server http://***@127.0.0.1:{port}/v1/chat/completions?api-key=*** failed after 1 "
                "attempt: HTTP 503: busy"
            )
    finally:
        server.close()
    assert server.bodies and all(h["Authorization"].startswith("Basic ") for h in server.headers)


def test_a_chat_url_memlab_run_injected_redacted_is_sent_whole(monkeypatch):
    real = "http://alice:PW@127.0.0.1:8080/v1?api-key=SECRET"
    shown, secrets = hide_secrets({"chat_url": real})
    monkeypatch.setenv(SECRETS_ENV, json.dumps(secrets))  # what notebook 09's kernel holds
    assert ChatConfig(shown["chat_url"]).url == real
    monkeypatch.delenv(SECRETS_ENV)
    assert ChatConfig(shown["chat_url"]).url == "http://***@127.0.0.1:8080/v1?api-key=***"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_credentials_in_the_chat_or_judge_url_never_reach_the_command_line(tmp_path, capsys):
    port = closed_port()
    bad = f"http://alice:PW@127.0.0.1:{port}/v1?api-key=SECRETKEY"
    shown = f"chat server http://***@127.0.0.1:{port}/v1/chat/completions?api-key=*** failed after 1 attempt"
    argv = ["answer", "--source", "published", "--chat-model", "m", "--chat-attempts", "1"]
    assert main([*argv, "--chat-url", bad, "--cache-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"memlab: error: {shown}: cannot connect") and "PW" not in err and "SECRET" not in err
    )
    fake = FakeChat()
    try:
        more = [
            "--chat-url",
            fake.url,
            "--judge-url",
            bad,
            "--judge-model",
            "m",
            "--questions",
            "H1",
            "--conditions",
            "off",
        ]
        assert main([*argv, *more, "--cache-dir", str(tmp_path)]) == 2
    finally:
        fake.close()
    err = capsys.readouterr().err
    assert (
        err.startswith(f"memlab: error: {shown}: cannot connect") and "PW" not in err and "SECRET" not in err
    )


@pytest.mark.parametrize("key", ["sk-1\r\n", "sk-1\n", "  sk-1\t"])
def test_an_api_key_read_with_a_line_ending_is_sent_without_it(monkeypatch, key):
    monkeypatch.setenv("CHAT_KEY", key)
    server = FakeChat()
    try:
        ChatClient(ChatConfig(server.url, "m", api_key_env="CHAT_KEY")).complete(ASK)
    finally:
        server.close()
    assert server.headers[-1]["Authorization"] == "Bearer sk-1"
    assert ServerConfig("http://127.0.0.1:1/v1", api_key_env="CHAT_KEY").api_key() == "sk-1"


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("sk-12\nX-Evil: 1", "holds U+000A at character 6 of 15"),
        ("sk-12\r34", "holds U+000D at character 6 of 8"),
        ("sk-clé", "holds U+00E9 at character 6 of 6"),
        ("   ", "is empty"),
    ],
)
def test_an_api_key_no_header_can_carry_is_refused_without_showing_it(monkeypatch, key, message):
    monkeypatch.setenv("CHAT_KEY", key)
    server = FakeChat()
    try:
        with pytest.raises(InputError) as e:
            ChatClient(ChatConfig(server.url, "m", api_key_env="CHAT_KEY", option="--judge-url")).complete(
                ASK
            )
    finally:
        server.close()
    tail = ": not an API key (an HTTP header carries printable ASCII only)" if "U+" in message else ""
    assert str(e.value) == f"--judge-api-key-env: the environment variable CHAT_KEY {message}{tail}"
    assert not server.bodies and (key.strip() not in str(e.value) or not key.strip())


def test_an_executed_notebooks_tracebacks_and_streams_are_redacted(tmp_path):
    secret = "http://alice:hunter2@127.0.0.1:9/v1/embeddings?api-key=SECRETKEY"
    shown = "http://***@127.0.0.1:9/v1/embeddings?api-key=***"
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("embed()")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stderr", text=f"warning: retrying {secret}\n"),
        nbformat.v4.new_output(
            "error",
            ename="HTTPStatusError",
            evalue=f"Client error '401 Unauthorized' for url '{secret}'",
            traceback=["\x1b[31mHTTPStatusError\x1b[39m", f"for url '{secret}'\x1b[0m"],
        ),
        nbformat.v4.new_output("display_data", data={"text/html": '<a href="https://x.org/p?q=1#t">x</a>'}),
    ]
    nb.cells = [cell]
    path = tmp_path / "run.ipynb"
    nbformat.write(nb, path)
    assert redact_outputs(path)
    text = path.read_text()
    assert "hunter2" not in text and "SECRETKEY" not in text
    out = nbformat.read(path, as_version=4).cells[0].outputs
    assert out[0].text == f"warning: retrying {shown}\n"
    assert out[1].evalue == f"Client error '401 Unauthorized' for url '{shown}'"
    assert out[1].traceback[1] == f"for url '{shown}'\x1b[0m"
    assert out[2].data["text/html"] == '<a href="https://x.org/p?q=1#t">x</a>'  # a figure's output is its own
    before = path.read_bytes()
    assert not redact_outputs(path) and path.read_bytes() == before  # nothing to redact: not rewritten


@pytest.mark.notebook
def test_memlab_run_writes_no_credential_of_the_embed_url(tmp_path):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Refuse(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(401)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"no")

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://alice:hunter2@127.0.0.1:{httpd.server_address[1]}/v1?api-key=SECRETKEY"
    config = tmp_path / "batch.yaml"
    config.write_text("notebooks: [01_reproduce]\nruns:\n  - {name: r, parameters: {}}\n")
    out = tmp_path / "out"
    argv = [
        "run",
        "--config",
        str(config),
        "--out",
        str(out),
        "--jobs",
        "1",
        "--notebooks",
        str(ROOT / "notebooks"),
    ]
    try:
        code = main([*argv, "-p", f"embed_url={url}", "-p", "embed_model=tiny", "-p", "source=embedded"])
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert code == 1  # the notebook failed, as it must: the server refuses
    written = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.suffix == ".ipynb" for p in written)
    for p in written:
        assert b"hunter2" not in p.read_bytes() and b"SECRETKEY" not in p.read_bytes(), p


# -- the reply cache ------------------------------------------------------------------------------


def test_the_cache_tells_servers_apart_at_one_model_name(tmp_path):
    first, second = FakeChat(lambda b: "from the first"), FakeChat(lambda b: "from the second")
    cache = ReplyCache(tmp_path)
    try:
        a = cached_complete(ChatClient(ChatConfig(first.url)), cache, "reply", ASK)
        b = cached_complete(ChatClient(ChatConfig(second.url)), cache, "reply", ASK)
        again = cached_complete(ChatClient(ChatConfig(first.url)), cache, "reply", ASK)
    finally:
        first.close()
        second.close()
    assert (a.text, a.cached, b.text, b.cached, again.text, again.cached) == (
        "from the first",
        False,
        "from the second",
        False,
        "from the first",
        True,
    )
    assert first.model == second.model == "fake-1"


def test_the_cache_key_names_the_server_without_its_credentials(tmp_path):
    cfg = ChatConfig("http://alice:PW@127.0.0.1:8080/v1?api-key=SECRET&api-version=2")
    assert cfg.server == "http://127.0.0.1:8080/v1/chat/completions?api-key=***&api-version=2"
    request = chat_request("reply", ASK, "m", cfg.parameters(), 0, 0, cfg.server)
    ReplyCache(tmp_path).put(request, Reply("hi", "m", 0.1, 0.2))
    (entry,) = (p for p in tmp_path.rglob("*.json"))
    assert "PW" not in entry.read_text() and "SECRET" not in entry.read_text()
    assert ReplyCache(tmp_path).get(request).text == "hi"


def test_a_link_planted_as_an_entry_is_neither_read_nor_written_through(tmp_path):
    server = FakeChat(lambda b: "the server's")
    client = ChatClient(ChatConfig(server.url, "m"))
    cache = ReplyCache(tmp_path / "cache")
    request = chat_request("reply", ASK, "m", client.config.parameters(), 0, 0, client.config.server)
    path = cache.path(request)
    planted = {"memlab_chat_cache": 1, "request": request, "reply": Reply("planted", "m", 0, 0).to_dict()}
    victim = tmp_path / "victim.json"
    victim.write_text(json.dumps(planted))
    path.parent.mkdir(parents=True)
    path.symlink_to(victim)
    try:
        with pytest.warns(CacheWarning) as caught:
            got = cached_complete(client, cache, "reply", ASK)
    finally:
        server.close()
    assert str(caught[0].message) == f"chat cache: {path}: a symbolic link, not a regular file; asking again"
    assert (got.text, got.cached) == ("the server's", False)
    assert json.loads(victim.read_text()) == planted  # the link's target is untouched
    assert not path.is_symlink() and json.loads(path.read_text())["reply"]["text"] == "the server's"


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_fifo_or_a_folder_planted_as_an_entry_is_refused_not_waited_on(tmp_path, kind):
    server = FakeChat(lambda b: "the server's")
    client = ChatClient(ChatConfig(server.url, "m"))
    cache = ReplyCache(tmp_path)
    request = chat_request("reply", ASK, "m", client.config.parameters(), 0, 0, client.config.server)
    path = cache.path(request)
    path.parent.mkdir(parents=True)
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    try:
        with pytest.warns(CacheWarning) as caught:
            if kind == "fifo":
                got = cached_complete(client, cache, "reply", ASK)
            else:
                with pytest.raises(ChatCacheError) as e:
                    cached_complete(client, cache, "reply", ASK)
    finally:
        server.close()
    if kind == "fifo":
        assert str(caught[0].message) == f"chat cache: {path}: not a regular file; asking again"
        assert got.text == "the server's" and path.is_file()  # the FIFO replaced by the entry
    else:
        assert str(caught[0].message) == f"chat cache: {path}: not a regular file; asking again"
        assert str(e.value) == f"chat cache: {path} is a folder, not an entry: remove it"


@pytest.mark.parametrize("linked", ["chat", "chat/xx"])
def test_a_linked_cache_folder_is_refused_before_anything_is_asked(tmp_path, linked):
    server = FakeChat()
    client = ChatClient(ChatConfig(server.url, "m"))
    cache = ReplyCache(tmp_path / "cache")
    request = chat_request("reply", ASK, "m", client.config.parameters(), 0, 0, client.config.server)
    folder = cache.folder if linked == "chat" else cache.path(request).parent
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder.parent.mkdir(parents=True)
    folder.symlink_to(elsewhere)
    try:
        with pytest.raises(ChatCacheError) as e:
            cached_complete(client, cache, "reply", ASK)
    finally:
        server.close()
    assert str(e.value) == (
        f"chat cache: {folder} is a symbolic link or not a folder: memlab never writes through links in "
        "its cache; remove it (it is rebuilt)"
    )
    assert list(elsewhere.iterdir()) == [] and server.bodies == []


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            lambda r: {**r, "text": "a\ud800"},
            "text: lone surrogate escape \\ud800 at character 2: not valid Unicode text",
        ),
        (lambda r: {**r, "finish_reason": 3}, "text, model_id or finish_reason is not a string"),
        (lambda r: {**r, "completion_tokens": -1}, "completion_tokens is not a count"),
        (lambda r: {**r, "ttft_s": float("nan")}, "ttft_s is not a time in seconds"),
    ],
)
def test_a_tampered_entry_is_asked_again(tmp_path, edit, problem):
    server = FakeChat(lambda b: "the server's")
    client = ChatClient(ChatConfig(server.url, "m"))
    cache = ReplyCache(tmp_path)
    try:
        cached_complete(client, cache, "reply", ASK)
        (path,) = tmp_path.rglob("*.json")
        entry = json.loads(path.read_text())
        path.write_text(json.dumps({**entry, "reply": edit(entry["reply"])}))
        with pytest.warns(CacheWarning) as caught:
            again = cached_complete(client, cache, "reply", ASK)
    finally:
        server.close()
    assert str(caught[0].message) == f"chat cache: {path}: {problem}; asking again"
    assert (again.text, again.cached, len(server.bodies)) == ("the server's", False, 2)


def test_an_entry_far_larger_than_a_reply_is_not_read(tmp_path, monkeypatch):
    from memlab.answers import cache as cache_module

    monkeypatch.setattr(cache_module, "MAX_ENTRY_BYTES", 100)
    server = FakeChat(lambda b: "x" * 200)
    client = ChatClient(ChatConfig(server.url, "m"))
    try:
        cached_complete(client, ReplyCache(tmp_path), "reply", ASK)
        (path,) = tmp_path.rglob("*.json")
        with pytest.warns(CacheWarning) as caught:
            assert not cached_complete(client, ReplyCache(tmp_path), "reply", ASK).cached
    finally:
        server.close()
    assert str(caught[0].message) == (
        f"chat cache: {path}: larger than 100 bytes, not an entry memlab wrote; asking again"
    )


# -- counts that never finish -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"attempts": 1_000_000_000}, "--chat-attempts: expected an integer in [1, 10], got 1000000000"),
        (
            {"attempts": 11, "option": "--judge-url"},
            "--judge-attempts: expected an integer in [1, 10], got 11",
        ),
        ({"timeout": 1e300}, "--chat-timeout: expected a finite number <= 3600, got 1e+300"),
        ({"timeout": 0}, "--chat-timeout: expected a finite number > 0, got 0"),
        ({"url": "http://[::1/v1"}, "--chat-url: 'http://[::1/v1' is not a valid URL (Invalid IPv6 URL)"),
        ({"url": "http://u:PW@/v1"}, "--chat-url: 'http://***@/v1' names no host"),
        (
            {"url": "http://u:PW@xn--a.com/v1"},
            "--chat-url: 'http://***@xn--a.com/v1' is not a valid URL (Codepoint U+0080 at position 1 of "
            "'\\x80' not allowed)",
        ),
    ],
)
def test_chat_options_beyond_their_limits_are_refused(kwargs, message):
    with pytest.raises(InputError) as e:
        ChatConfig(**{"url": "http://127.0.0.1:1/v1", **kwargs})
    assert str(e.value) == message


def test_an_embed_url_no_request_can_go_to_is_refused_at_once():
    with pytest.raises(InputError) as e:
        ServerConfig("http://xn--a.com/v1")
    assert str(e.value).startswith("--embed-url: 'http://xn--a.com/v1' is not a valid URL (Codepoint U+0080")


def test_repeats_beyond_the_limit_are_refused_before_the_first_request(capsys):
    server = FakeChat()
    try:
        argv = ["answer", "--source", "published", "--chat-url", server.url, "--chat-model", "m"]
        assert main([*argv, "--repeats", "1000000", "--no-cache"]) == 2
    finally:
        server.close()
    assert (
        capsys.readouterr().err == "memlab: error: --repeats: expected an integer in [1, 100], got 1000000\n"
    )
    assert server.bodies == []


def test_a_replay_of_more_requests_than_finish_is_refused():
    turns = [Turn(f"q{i}", "hit", "q", "off", (), tuple(ASK)) for i in range(1001)]
    client = ChatClient(ChatConfig("http://127.0.0.1:1/v1", "m"))
    with pytest.raises(InputError) as e:
        replay(turns, client, None, 100, progress=False)
    assert str(e.value) == (
        "--repeats: 100,100 chat requests (1,001 turns x 100 repeats) cannot finish in reasonable time "
        "(each is one request to the chat server, a second or more): at most 100,000"
    )


def test_the_parameter_tables_state_the_limits_the_library_checks():
    assert REGISTRY_MAX_REPEATS == MAX_REPEATS and MAX_REQUESTS == 100_000
    assert BY_NAME["repeats"].bounds == {"minimum": 1, "maximum": MAX_REPEATS}
    assert BY_NAME["chat_attempts"].bounds == {"minimum": 1, "maximum": MAX_ATTEMPTS}
    assert BY_NAME["chat_timeout"].bounds == {"above": 0, "maximum": MAX_TIMEOUT}


def test_no_warning_and_no_thread_outlives_a_good_reply(tmp_path):
    import threading

    server = FakeChat()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            reply = cached_complete(
                ChatClient(ChatConfig(server.url, "m")), ReplyCache(tmp_path), "reply", ASK
            )
    finally:
        server.close()
    assert reply.text == "I do not know." and reply.finish_reason == "stop"
    assert not [t for t in threading.enumerate() if t.name == "memlab-http-request"]
    assert os.listdir(tmp_path / "chat")
