"""Atomic file output: write to a temporary file beside the target, then rename over it.

Standard library only, so every layer (dataset import, the embedding cache, reports) writes
files the same way.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def file_mode(path: Path) -> int:
    """The mode a new file gets: the replaced file's, else 0666 less the umask."""
    if path.exists():
        return path.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` so readers see the old file or the new one, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.chmod(tmp, file_mode(path))  # mkstemp makes 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def write_folder_atomically(
    out: str | Path, files: dict[str, str | bytes], check: Callable[[Path], object] | None = None
) -> Path:
    """Write a folder of files so it appears whole or not at all.

    The files are written into a temporary folder beside ``out``; ``check(tmp)`` (e.g. the dataset
    loader) may raise to refuse it; then it is renamed into place. ``out`` must not exist or be
    an empty folder, so nothing a user made is overwritten.
    """
    import shutil

    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} already exists and is not an empty folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700
        for name, data in files.items():
            (tmp / name).write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        if check is not None:
            check(tmp)
        if out.exists():
            out.rmdir()
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask
