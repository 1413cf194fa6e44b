"""The one configuration of every server client (``memlab.core.http.HttpConfig``) and its one
error (``ServerFailure``): the chat endpoint's and the judge's, the rerankers' and the embedding
server's records share their defaults, their redaction, their flags in messages and their error,
and the parameter registry and the CLI read the defaults from them."""

from __future__ import annotations

import argparse

import pytest

from memlab.answers.chat import ChatClient, ChatConfig
from memlab.app.parameters import parameter
from memlab.core.errors import InputError, MemlabError, UnreachableError
from memlab.core.http import MAX_REPLY_BYTES, HttpConfig, ServerFailure
from memlab.embedding.server import ServerClient, ServerConfig
from memlab.rerank.clients import Reranker, RerankerConfig
from tests.lab import free_port

URL = "http://127.0.0.1:8080/v1"
SECRET_URL = "http://alice:PW@127.0.0.1:8080/v1?api-key=SECRET&api-version=2"


MAKERS = {
    "chat": lambda url, **kw: ChatConfig(url, "m", **kw),
    "rerank": lambda url, **kw: RerankerConfig("endpoint", url, **kw),
    "embed": lambda url, **kw: ServerConfig(url, "m", **kw),
}


def config(kind: str, url: str = URL, **kw) -> HttpConfig:
    return MAKERS[kind](url, **kw)


def configs(url: str = URL, **kw) -> dict[str, HttpConfig]:
    return {kind: config(kind, url, **kw) for kind in MAKERS}


def test_the_defaults_on_paper():
    # 8 MiB = 8 * 2**20 bytes; the reranker's 4 MiB; the embedding server's limit follows its batch
    assert MAX_REPLY_BYTES == 8_388_608
    chat, rerank, embed = configs().values()
    assert (chat.timeout, chat.attempts, chat.backoff, chat.max_bytes) == (120.0, 3, 0.5, 8_388_608)
    assert (rerank.timeout, rerank.attempts, rerank.backoff, rerank.max_bytes) == (120.0, 3, 0.5, 4_194_304)
    assert (embed.timeout, embed.attempts, embed.backoff, embed.max_bytes) == (30.0, 3, 0.5, None)
    assert [c.api_key_env for c in (chat, rerank, embed)] == [None, None, None]
    assert [c.keep_alive for c in (chat, rerank, embed)] == [True, True, False]
    assert [c.what for c in (chat, rerank, embed)] == ["chat server", "reranker", "embedding server"]
    assert [c.option for c in (chat, rerank, embed)] == ["--chat-url", "--rerank-url", "--embed-url"]


def test_each_record_keeps_its_own_constructor_order():
    # the shared fields are keyword-only: the positional order is each client's own
    assert ChatConfig(URL, "m", 0.2, 12, 5).max_tokens == 12
    assert RerankerConfig("chat", URL, "m").kind == "chat"
    assert ServerConfig(URL, "m", "none").roles == "none"
    with pytest.raises(TypeError):
        ChatConfig(URL, "m", 0.2, 12, 5, None, "ENV")  # api_key_env is no longer positional
    with pytest.raises(TypeError):
        HttpConfig()  # the shared part alone is no client: it has no endpoint


def test_the_registry_and_the_cli_read_the_records_defaults():
    assert parameter("chat_timeout").default == ChatConfig.timeout == 120.0
    assert parameter("chat_attempts").default == ChatConfig.attempts == 3
    assert parameter("embed_timeout").default == ServerConfig.timeout == 30.0
    assert parameter("embed_attempts").default == ServerConfig.attempts == 3
    assert parameter("embed_batch").default == ServerConfig.batch_size == 32
    assert parameter("embed_api_key_env").default is ServerConfig.api_key_env is None
    assert "backoff 0.5 s doubling" in parameter("embed_attempts").help
    assert "backoff 0.5 s doubling" in parameter("chat_attempts").help
    from memlab.app.cli.rerank import add_reranker_options

    p = argparse.ArgumentParser()
    add_reranker_options(p)
    args = p.parse_args([])
    assert (args.rerank_timeout, args.rerank_attempts) == (RerankerConfig.timeout, RerankerConfig.attempts)


@pytest.mark.parametrize("kind", ["chat", "rerank", "embed"])
def test_every_client_redacts_alike(kind):
    made = config(kind, SECRET_URL)
    path = {"chat": "chat/completions", "rerank": "rerank", "embed": "embeddings"}[kind]
    assert made.url == SECRET_URL  # requests go to the URL whole
    assert made.endpoint == f"http://alice:PW@127.0.0.1:8080/v1/{path}?api-key=SECRET&api-version=2"
    assert made.shown == f"http://***@127.0.0.1:8080/v1/{path}?api-key=***&api-version=2"
    assert made.server == f"http://127.0.0.1:8080/v1/{path}?api-key=***&api-version=2"
    assert "PW" not in repr(ServerFailure(made.what, made.shown, 1, "x"))


@pytest.mark.parametrize(
    ("kind", "fields", "message"),
    [
        ("chat", {"attempts": 0}, "--chat-attempts: expected an integer in [1, 10], got 0"),
        ("rerank", {"attempts": 11}, "--rerank-attempts: expected an integer in [1, 10], got 11"),
        ("embed", {"timeout": 0}, "--embed-timeout: expected a finite number > 0, got 0"),
        ("rerank", {"timeout": 1e9}, "--rerank-timeout: expected a finite number <= 3600, got 1e+09"),
        ("embed", {"backoff": -1}, "backoff: expected a finite number in [0, 30], got -1"),
        ("embed", {"max_bytes": 0}, "max_bytes: expected an integer >= 1, got 0"),
        (
            "chat",
            {"option": "--judge-url", "timeout": -1},
            "--judge-timeout: expected a finite number > 0, got -1",
        ),
    ],
)
def test_the_shared_checks_name_each_clients_flag(kind, fields, message):
    with pytest.raises(InputError) as e:
        config(kind, **fields)
    assert str(e.value) == message


def test_a_bad_url_is_refused_under_each_clients_option():
    for kind, option in (("chat", "--chat-url"), ("rerank", "--rerank-url"), ("embed", "--embed-url")):
        with pytest.raises(InputError, match=f"^{option}: "):
            config(kind, "ftp://h/v1")


def test_the_api_key_comes_from_the_environment_under_each_clients_flag(monkeypatch):
    monkeypatch.setenv("HTTP_CONFIG_KEY", "  sk-1\r\n")
    assert [c.api_key() for c in configs(api_key_env="HTTP_CONFIG_KEY").values()] == ["sk-1"] * 3
    monkeypatch.delenv("HTTP_CONFIG_KEY")
    for kind, flag in (("chat", "--chat"), ("rerank", "--rerank"), ("embed", "--embed")):
        with pytest.raises(InputError) as e:
            config(kind, api_key_env="HTTP_CONFIG_KEY").api_key()
        assert str(e.value) == f"{flag}-api-key-env: the environment variable HTTP_CONFIG_KEY is not set"


def test_every_client_fails_with_the_one_error():
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    fast = {"attempts": 2, "backoff": 0.0, "timeout": 5.0}
    calls = {
        "chat server": (lambda: ChatClient(ChatConfig(url, "m", **fast)).complete([]), "chat/completions"),
        "reranker": (lambda: Reranker(RerankerConfig("endpoint", url, **fast)).score("q", ["d"]), "rerank"),
        "embedding server": (
            lambda: ServerClient(ServerConfig(url, "m", **fast), "m").encode_batch(["t"], "query"),
            "embeddings",
        ),
    }
    for what, (call, path) in calls.items():
        with pytest.raises(ServerFailure) as e:
            call()
        assert isinstance(e.value, UnreachableError) and isinstance(e.value, MemlabError)
        assert (e.value.what, e.value.endpoint, e.value.attempts) == (what, f"{url}/{path}", 2)
        assert str(e.value).startswith(f"{what} {url}/{path} failed after 2 attempts: cannot connect")


def test_the_embedding_servers_limit_follows_its_batch_unless_given():
    client = ServerClient(ServerConfig(URL, "m"), "m")
    client.dim = 384
    # 64 KiB around, and per text 1 KiB plus 64 bytes for each of its 384 numbers
    assert client.reply_limit(32) == 65_536 + 32 * (1_024 + 384 * 64) == 884_736
    assert ServerClient(ServerConfig(URL, "m", max_bytes=1000), "m").reply_limit(32) == 1000
