"""The text and JSON digests (memlab.core.files) keep the values the caches on disk are keyed by."""

from __future__ import annotations

import hashlib
import json

import pytest

from memlab.app.reuse import Reuse
from memlab.core.files import file_sha256, json_sha256, text_sha256
from memlab.embedding.cache import request_key
from memlab.embedding.embedder import Embedder

# FIPS 180-2's published vectors: SHA-256 of "" and of "abc"
EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_text_sha256_is_the_published_vector():
    assert text_sha256("") == EMPTY and text_sha256("abc") == ABC


@pytest.mark.parametrize("text", ["", "abc", "café\x00日本", "a\nb"])
def test_text_keys_equal_hashlib(text):
    expected = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert text_sha256(text) == expected
    assert Embedder.text_key(text) == expected[:32]


def test_json_keys_equal_hashlib_on_each_form(tmp_path):
    value = {"b": [1, 2.5, None], "a": "é", "z": {"y": True}}
    # the reuse key: sorted keys, default separators, ascii, str() for the rest
    assert (
        Reuse.key({**value, "p": tmp_path})
        == hashlib.sha256(json.dumps({**value, "p": str(tmp_path)}, sort_keys=True).encode()).hexdigest()
    )
    # the request cache: canonical JSON, no spaces, UTF-8 kept
    compact = '{"a":"é","b":[1,2.5,null],"z":{"y":true}}'
    assert request_key(value) == hashlib.sha256(compact.encode("utf-8")).hexdigest()
    # the embedder's namespace folder: sorted keys, default separators
    spaced = '{"a": "\\u00e9", "b": [1, 2.5, null], "z": {"y": true}}'
    assert json_sha256(value) == hashlib.sha256(spaced.encode()).hexdigest()
    emb = Embedder(cache_dir=tmp_path)
    folder = emb.namespace_path("document").name
    assert (
        folder
        == hashlib.sha256(json.dumps(emb.namespace_key("document"), sort_keys=True).encode()).hexdigest()[:24]
    )


def test_file_sha256_is_the_published_vector(tmp_path):
    (tmp_path / "abc").write_bytes(b"abc")
    assert file_sha256(tmp_path / "abc") == ABC
