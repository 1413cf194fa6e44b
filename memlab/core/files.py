"""Atomic file output: write to a temporary file beside the target, then rename over it.

Standard library only, so every layer (dataset import, the embedding cache, reports) writes
files the same way.

- Only regular files are replaced. A symlink is written through: its target is replaced
  atomically and the link is kept. A FIFO, a device, a socket or a folder is refused
  (``InputError``), so ``-o /dev/stdout`` never swaps a terminal or a pipe for a file.
- A write in progress is recorded in ``PENDING`` until it is renamed into place or removed, so
  a command stopped by a signal can remove it (``discard_pending``).
- A file the command reads as its input (``note_input``: the dataset's files, a query log, a
  benchmark file, a YAML file) is never the file it writes: ``-o dataset/memories.jsonl`` is
  refused before anything is read over.
- Temporary names carry the writing process's id, ``.NAME.PID.TOKEN.tmp``: the first write into a
  folder removes those left there by processes that no longer exist (a SIGKILL leaves one).
"""

from __future__ import annotations

import copy
import errno
import hashlib
import json
import os
import secrets
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memlab.core.errors import InputError, MemlabError
from memlab.core.paths import check_links

TEMP_SUFFIX = ".tmp"
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # every POSIX system has it
PENDING: set[Path] = set()  # temporary files and folders of the writes in progress
INTERRUPTED: list[Path] = []  # writes a signal's exception removed, until discard_pending reads them
INPUTS: set[str] = set()  # the files the running command reads (their real paths): never written
_SWEPT: set[Path] = set()  # folders already cleared of dead processes' temporary files

FILE_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def not_regular(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file (``a FIFO``...), else None."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in FILE_KINDS if test(mode)), "not a regular file")


def file_kind(path: str | Path) -> str | None:
    """What ``path`` is when it exists and is not a regular file (links followed), else None."""
    try:
        return not_regular(os.stat(path).st_mode)
    except OSError:  # missing, a link loop or to nothing: the caller's own message
        return None


def file_mode(path: Path) -> int:
    """The mode a new file gets: the replaced file's, else 0666 less the umask."""
    if path.exists():
        return path.stat().st_mode & 0o777
    return 0o666 & ~_umask()


def note_input(path: str | Path) -> None:
    """Remember ``path`` as one of the running command's input files (``INPUTS``)."""
    INPUTS.add(os.path.realpath(path))


def forget_inputs() -> None:
    """A new command starts: the files the previous one read are no longer its inputs."""
    INPUTS.clear()


def output_target(path: str | Path) -> Path:
    """The regular file a write to ``path`` replaces: ``path`` itself, or a symlink's target.

    Anything that exists and is not a regular file is refused with one line, and so is a path
    through a symbolic link loop or a link to nothing (``memlab.core.paths.check_links``)."""
    path = check_links(path)
    try:
        mode = os.stat(path).st_mode  # follows symlinks
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        kind = not_regular(mode)
        raise InputError(
            f"{path}: is {kind}, not a regular file: memlab writes only regular files "
            "(for standard output pass -o -)"
        )
    if os.path.realpath(path) in INPUTS:
        raise InputError(
            f"{path}: is one of this command's input files: memlab never writes over what it reads; "
            "give another output path"
        )
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def temp_name(target: Path) -> Path:
    """A fresh temporary name beside ``target``: ``.NAME.PID.TOKEN.tmp``."""
    return target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}"


def remove_stale_temps(folder: Path) -> list[Path]:
    """Remove the temporary files and folders that dead processes left in ``folder`` (once per
    folder and process); returns what was removed."""
    folder = Path(folder)
    if folder in _SWEPT or not folder.is_dir():
        return []
    _SWEPT.add(folder)
    removed = []
    for entry in os.scandir(folder):
        pid = _temp_owner(entry.name)
        if pid is None or pid == os.getpid() or pid_alive(pid):
            continue
        p = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
        removed.append(p)
    return removed


def _temp_owner(name: str) -> int | None:
    """The process id in a temporary name ``.NAME.PID.TOKEN.tmp``, else None."""
    if not (name.startswith(".") and name.endswith(TEMP_SUFFIX)):
        return None
    parts = name[: -len(TEMP_SUFFIX)].rsplit(".", 2)
    if len(parts) != 3 or not parts[1].isdigit() or len(parts[2]) != 8:
        return None
    return int(parts[1])


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` is running (someone else's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def new_temp_file(target: Path) -> Path:
    """Create an empty temporary file beside ``target`` (recorded in ``PENDING``)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(target.parent)
    mode = file_mode(target)
    tmp = temp_name(target)
    PENDING.add(tmp)  # before it exists: a signal between the two still finds it
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
    except OSError as e:  # said of the user's path, not of a temporary name they never gave
        PENDING.discard(tmp)
        raise user_error(e, target) from None
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    return tmp


def commit(tmp: Path, target: Path) -> None:
    """Rename ``tmp`` over ``target`` (one atomic step) and forget it."""
    try:
        os.replace(tmp, target)
    except OSError as e:
        raise user_error(e, target) from None
    PENDING.discard(tmp)


def user_error(e: OSError, target: Path) -> OSError:
    """``e`` (raised on a temporary file) told of ``target``, the file the user named."""
    why = e.strerror or str(e)
    if e.errno == errno.ENAMETOOLONG:
        extra = len(temp_name(target).name) - len(target.name)
        why += f" (memlab writes it through a temporary file beside it, {extra} characters longer): "
        why += "shorten the name"
    return type(e)(e.errno, why, str(target))


def discard(tmp: Path) -> None:
    """Remove a temporary file or folder of a write that did not finish."""
    if tmp.is_dir() and not tmp.is_symlink():
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        tmp.unlink(missing_ok=True)
    PENDING.discard(tmp)
    if isinstance(sys.exc_info()[1], KeyboardInterrupt):  # a signal (SIGINT, memlab's SIGTERM)
        INTERRUPTED.append(tmp)


def discard_pending() -> list[Path]:
    """Remove every write in progress (after a signal stopped them); returns every write the
    signal undid: those still pending, and those its exception already removed on its way out."""
    pending = sorted(PENDING)
    for tmp in pending:
        discard(tmp)
    undone = sorted({*pending, *INTERRUPTED})
    INTERRUPTED.clear()
    return undone


@contextmanager
def atomic_file(path: str | Path) -> Iterator[Path]:
    """A temporary path to write; on success it replaces ``path`` (or a symlink's target) in one
    rename, on any exception (a signal included) it is removed and ``path`` is left as it was."""
    target = output_target(path)
    tmp = new_temp_file(target)
    try:
        yield tmp
        commit(tmp, target)
    except BaseException:
        discard(tmp)
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` so readers see the old file or the new one, never a part."""
    with atomic_file(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    return Path(path)


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def write_new_file(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` without ever following a symbolic link (the embedding cache's
    entries): the temporary file is created exclusively (``O_CREAT | O_EXCL | O_NOFOLLOW``), and
    the entry itself appears by a hard link, which is exclusive too: it fails rather than
    follow or replace anything at ``path``. Whatever is at ``path`` (an unusable entry the reader
    refused, a link planted there) is removed first; ``unlink`` removes a link, never its target.
    Readers see no entry or a whole one."""
    path = Path(path)
    remove_stale_temps(path.parent)
    tmp = temp_name(path)
    PENDING.add(tmp)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if os.path.lexists(path):
            os.unlink(path)
        try:
            os.link(tmp, path, follow_symlinks=False)
        except FileExistsError:
            pass  # another process wrote it meanwhile: its reader checks it like any entry
        except OSError:  # a file system without hard links: rename, which never follows either
            os.replace(tmp, path)
    finally:
        discard(tmp)
    return path


def write_folder_atomically(
    out: str | Path,
    files: dict[str, str | bytes],
    check: Callable[[Path], object] | None = None,
    replace: bool = False,
) -> Path:
    """Write a folder of files so it appears whole or not at all.

    The files are written into a temporary folder beside ``out``; ``check(tmp)`` (e.g. the dataset
    loader) may raise to refuse it; then it is renamed into place. ``out`` must not exist or be
    an empty folder, so nothing a user made is overwritten; with ``replace`` (the caller has made
    sure ``out`` is its own earlier output) a non-empty ``out`` is swapped for the new folder once
    that is whole and checked, and removed after (a failure before leaves it as it was).
    """
    out = check_links(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} already exists and is a file, not a folder: give a new folder's name")
    if out.exists() and any(out.iterdir()) and not replace:
        raise FileExistsError(f"{out} already exists and is not an empty folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(out.parent)
    tmp = temp_name(out)
    PENDING.add(tmp)
    try:
        tmp.mkdir(mode=0o700)
        os.chmod(tmp, 0o777 & ~_umask())
        for name, data in files.items():
            (tmp / name).write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        if check is not None:
            try:
                check(tmp)
            except MemlabError as e:  # its message names the folder the user asked for, not ours
                raise renamed(e, tmp, out) from None
        earlier = None
        if out.exists() and replace and any(out.iterdir()):
            earlier = temp_name(out)
            PENDING.add(earlier)
            out.rename(earlier)
        elif out.exists():
            out.rmdir()
        try:
            tmp.rename(out)
        except BaseException:
            if earlier is not None:
                earlier.rename(out)
                PENDING.discard(earlier)
            raise
        PENDING.discard(tmp)
        if earlier is not None:
            shutil.rmtree(earlier, ignore_errors=True)
            PENDING.discard(earlier)
    except BaseException:
        discard(tmp)
        raise
    return out


def renamed(error: MemlabError, tmp: Path, out: Path) -> MemlabError:
    """``error`` with every mention of the temporary folder ``tmp`` replaced by ``out``: the same
    class, the same fields (a dataset's ``problems`` too)."""
    fix = lambda text: str(text).replace(str(tmp), str(out))  # noqa: E731
    new = copy.copy(error)
    new.args = tuple(fix(a) if isinstance(a, str) else a for a in error.args)
    if isinstance(getattr(error, "problems", None), list):
        new.problems = [fix(p) for p in error.problems]  # type: ignore[attr-defined]
        new.args = ("\n".join(new.problems),)  # type: ignore[attr-defined]
    return new


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, read in blocks (a vectors file or a model can be large): the
    one file hash the caches, the reuse check, the tuned spec and the importers record."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def text_sha256(text: str) -> str:
    """The SHA-256 (hex) of a text's UTF-8 bytes: the one text hash (cache keys are made of it, so
    its value never changes)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def json_sha256(value: Any, **dumps: Any) -> str:
    """The SHA-256 (hex) of ``json.dumps(value, sort_keys=True, **dumps)``: each caller keeps its
    own JSON form (separators, ascii, default), on which its keys on disk depend."""
    return text_sha256(json.dumps(value, sort_keys=True, **dumps))
