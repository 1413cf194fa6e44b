"""Names and paths that come from a file (a batch file, a dataset, an imported sample) or from a
run, checked so that what memlab executes, writes or removes stays inside the folder it belongs
to.

- ``plain_name``: one file-name part, never a path (no ``/`` or ``\\``, not ``.`` or ``..``, no
  control character): a notebook's or a run's name, an imported conversation's id in a folder name;
- ``inside``: ``folder / name`` with every symbolic link resolved, refused unless it lies in
  ``folder`` (also resolved);
- ``link_problem``, ``check_links``: a path to read or to write refused when the nearest part of
  it that exists is a symbolic link loop, or a link to nothing (a write through a dangling link
  would create its target, and every folder above it, wherever the link points), or a file where
  a folder must be.

Each refusal is one ``InputError`` naming where the name came from.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from memlab.core.errors import InputError


def plain_name(name: object, where: str) -> str:
    """``name`` when it is one plain file-name part, else one line saying why not."""
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: expected a name, got {name!r}")
    if "/" in name or "\\" in name or name in (".", "..") or any(ord(c) < 32 or c == "\x7f" for c in name):
        raise InputError(
            f"{where}: {name!r} is not a plain name (no '/', '\\', '.' or '..', no control characters)"
        )
    return name


def within(folder: str | Path, name: str | Path) -> bool:
    """``folder / name``, every link resolved, lies inside ``folder``."""
    base = Path(os.path.realpath(folder))
    path = Path(os.path.realpath(base / name))
    return path == base or base in path.parents


def inside(folder: str | Path, name: str | Path, where: str) -> Path:
    """``folder / name``, resolved (symbolic links included), when it lies inside ``folder``;
    otherwise one line naming both."""
    base = Path(os.path.realpath(folder))
    path = Path(os.path.realpath(base / name))
    if path != base and base not in path.parents:
        raise InputError(f"{where}: {str(name)!r} resolves to {path}, outside {base}: refused")
    return path


def link_problem(path: str | Path) -> str | None:
    """Why ``path``, a name that exists, leads nowhere: ``PATH is a symbolic link loop`` or ``PATH
    is a symbolic link to TARGET, which does not exist``; None when it leads somewhere."""
    try:
        os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return f"{path} is a symbolic link loop"
        if os.path.islink(path):
            return f"{path} is a symbolic link to {os.readlink(path)}, which does not exist"
    return None


def check_links(path: str | Path, writing: bool = True) -> Path:
    """``path``, unless the nearest of it and its parents that exists (as a name) is a symbolic
    link loop or a link whose target does not exist: then one line naming the link (``writing``:
    saying that memlab does not create the link's target)."""
    path = Path(path)
    for part in (path, *path.parents):
        if not os.path.lexists(part):
            continue
        problem = link_problem(part)
        if problem is not None and problem.endswith("loop"):
            raise InputError(f"{path}: {problem}: give another path")
        if problem is not None:
            why = ": memlab does not create a link's target (remove the link, or give the path itself)"
            raise InputError(f"{path}: {problem}{why if writing else ''}")
        if part != path and not os.path.isdir(part):  # a file where a folder of the path must be
            raise InputError(f"{path}: {part} is a file, not a folder")
        return path
    return path
