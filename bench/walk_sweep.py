"""The walk of ``memlab sweep``'s arguments: where the parsed ``args`` go, measured, not read.

A profile hook on one ``memlab sweep`` run records every call of a memlab function that receives
the command's ``argparse.Namespace`` (as a parameter, or as any value it is handed in a list,
tuple or dict): a **stop**. In call order:

- **files**: the distinct files those stops are in;
- a **return**: a stop in a file the walk had left (not the file of the stop just before);
- a **climb back up**: a stop in a higher layer (``tests/test_layout.py``'s ``LAYERS``) than the
  stop just before, once the walk had gone down: the arguments handed into a lower layer come
  back up through a callback. Within ``memlab/app`` the CLI (``app/cli``) is above the rest of
  ``app``; the walk starts in ``app/cli/__init__.py``.

docs/layout.md (The walk of a command's arguments) quotes the figures.

Usage: python bench/walk_sweep.py [ARGS OF memlab sweep] (default: --dataset seed16 --source
published, the cheapest sweep; the walk of the arguments does not depend on the scores)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "memlab"
sys.path.insert(0, str(ROOT.parent / "tests"))

from test_layout import LAYERS  # noqa: E402

ORDER = {**{layer: i for i, layer in enumerate(LAYERS)}, "cli": len(LAYERS)}


def level(path: Path) -> int:
    parts = path.relative_to(ROOT).parts
    if parts[0] == "app" and len(parts) > 2 and parts[1] == "cli":
        return ORDER["cli"]
    return ORDER.get(parts[0], len(LAYERS) + 1)  # memlab/__init__.py: above everything


def holds(value: object, args: argparse.Namespace) -> bool:
    if value is args:
        return True
    if isinstance(value, list | tuple):
        return any(v is args for v in value)
    if isinstance(value, dict):
        return any(v is args for v in value.values())
    return False


def walk(argv: list[str]) -> dict[str, object]:
    from memlab.app.cli import main

    stops: list[tuple[str, str]] = []
    found: list[argparse.Namespace] = []

    def hook(frame, event, _arg):
        if event != "call":
            return
        path = Path(frame.f_code.co_filename)
        if not path.is_relative_to(ROOT):
            return
        code = frame.f_code
        n = code.co_argcount + code.co_kwonlyargcount
        names = code.co_varnames[: n + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)]
        values = [frame.f_locals.get(name) for name in names]
        if not found:  # the Namespace the parser hands the command
            for value in values:
                if isinstance(value, argparse.Namespace) and getattr(value, "command", None) == "sweep":
                    found.append(value)
        if found and any(holds(v, found[0]) for v in values):
            stops.append((str(path.relative_to(ROOT.parent)), code.co_qualname))

    sink = io.StringIO()
    sys.setprofile(hook)
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            status = main(["sweep", *argv])
    finally:
        sys.setprofile(None)
    files: list[str] = []
    returns = climbs = 0
    went_down = False
    for i, (file, _) in enumerate(stops):
        if i and file != stops[i - 1][0] and file in files:
            returns += 1
        if i:
            before, now = level(ROOT.parent / stops[i - 1][0]), level(ROOT.parent / file)
            went_down |= now < before
            climbs += went_down and now > before
        if file not in files:
            files.append(file)
    return {
        "argv": ["sweep", *argv],
        "status": status,
        "stops": len(stops),
        "functions": len(set(stops)),
        "files": len(files),
        "climbs_back_up": climbs,
        "returns": returns,
        "walk": [f"{file}:{name}" for file, name in stops],
    }


if __name__ == "__main__":
    result = walk(sys.argv[1:] or ["--dataset", "seed16", "--source", "published"])
    for step in result["walk"]:
        print(step)
    print(json.dumps({k: v for k, v in result.items() if k != "walk"}))
