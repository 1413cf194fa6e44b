"""Recorded figures: each measured table in README.md and docs/*.md rerun from its own command.

A block in a page reads::

    <!-- recorded: memlab metrics --dataset seed16 -->
    ...what the command printed...
    <sub>Recorded by `memlab metrics --dataset seed16` at commit 1a2b3c4 on 2026-12-03 (load 1.9).</sub>
    <!-- /recorded -->

``recorded`` takes the command's stdout as markdown (``--format markdown`` tables);
``recorded text`` fences it as a code block; ``recorded timing`` fences it too and marks its
seconds as load-dependent: ``--check`` compares a timing block with every number masked (its
rows and labels must not change, its figures may), every other block byte for byte but for the
seconds a command prints of its own run (``computed in 12.3 s``: the record line carries them
too), masked as the golden outputs mask them (``tests/golden/packaged.py``). The record
line is rewritten on every run (the commit, the date, the load average over the last minute at
the start, the seconds the command took), so a reader sees what produced the figures and can
rerun them.

``needs=WHAT`` (one or more, before the colon) names what a block's command needs that a fresh
clone may not have: a path relative to the repository (public benchmark data, fetched by the
reader and never committed, such as ``needs=data/external/locomo10.json``) or ``module:NAME``
(an optional extra, such as ``needs=module:llama_cpp``). When one is missing the block is skipped
with one line saying what it needs, and it is left as it stands (``--check`` does not call it
stale): the figures stay the ones recorded where the data was at hand.

``python -m memlab.app.record [PAGES...]`` reruns every block in page order (so an import block
runs before the blocks that read its folder) and rewrites each page atomically; ``--check``
writes nothing and exits 1 naming the stale blocks; ``--only TEXT`` runs only the blocks whose
command contains TEXT. A command is split as a shell would (no shell runs it): a leading
``memlab`` or ``python`` runs on this interpreter, with the page's repository first on the path.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from memlab.core.errors import InputError
from memlab.core.files import atomic_write_text

OPEN = re.compile(
    r"^<!-- recorded(?P<kinds>(?: (?:text|timing))*)(?P<needs>(?: needs=\S+)*): (?P<command>.+?) -->$"
)
CLOSE = "<!-- /recorded -->"
RECORD_LINE = re.compile(r"^<sub>Recorded by `.*` at commit \S+ on \S+.*</sub>$")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
ELAPSED = re.compile(r"\bcomputed in \d+(?:\.\d+)? s\b")  # a command's own seconds: load-dependent


@dataclass(frozen=True)
class Block:
    """One recorded block of a page: its command, its kinds and the lines between the markers."""

    page: Path
    line: int  # 1-based line of the opening marker
    command: str
    fenced: bool
    timing: bool
    body: tuple[str, ...]  # what the command printed, as it stands in the page (no record line)
    end: int  # 1-based line of the closing marker
    needs: tuple[str, ...] = ()  # paths (relative to the repository) or module:NAME the command needs


def parse(page: Path, text: str) -> list[Block]:
    """Every recorded block of ``text``; an unclosed, nested or empty marker is one line naming it."""
    blocks: list[Block] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = OPEN.match(lines[i])
        if lines[i].startswith("<!-- recorded") and not m:
            raise InputError(
                f"{page}:{i + 1}: recorded marker: expected "
                "'<!-- recorded[ text][ timing][ needs=PATH|module:NAME ...]: COMMAND -->'"
            )
        if lines[i] == CLOSE:
            raise InputError(f"{page}:{i + 1}: '{CLOSE}' without an opening '<!-- recorded: ... -->'")
        if not m:
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and lines[j] != CLOSE:
            if OPEN.match(lines[j]):
                raise InputError(
                    f"{page}:{j + 1}: recorded block opened inside the block of line {start + 1}"
                )
            j += 1
        if j == len(lines):
            raise InputError(f"{page}:{start + 1}: recorded block never closed by '{CLOSE}'")
        body = [ln for ln in lines[start + 1 : j] if not RECORD_LINE.match(ln)]
        kinds = m.group("kinds").split()
        needs = tuple(n.removeprefix("needs=") for n in m.group("needs").split())
        for need in needs:  # a page read on another machine: nothing outside its repository
            if Path(need).is_absolute() or ".." in Path(need).parts:
                raise InputError(
                    f"{page}:{i + 1}: needs={need}: name a path inside the repository or module:NAME"
                )
        blocks.append(
            Block(
                page,
                start + 1,
                m.group("command").strip(),
                "text" in kinds or "timing" in kinds,
                "timing" in kinds,
                tuple(body),
                j + 1,
                needs,
            )
        )
        i = j + 1
    return blocks


def argv_of(command: str) -> list[str]:
    """The command as arguments: ``memlab ...`` and ``python ...`` run on this interpreter."""
    try:
        args = shlex.split(command)
    except ValueError as e:
        raise InputError(f"recorded command {command!r}: {e}") from None
    if not args:
        raise InputError("recorded command is empty")
    if args[0] == "memlab":
        return [sys.executable, "-m", "memlab", *args[1:]]
    if args[0] in ("python", "python3"):
        return [sys.executable, *args[1:]]
    return args


def render(block: Block, output: str) -> list[str]:
    """The lines a block's command output becomes in the page (without the record line)."""
    out = output.rstrip("\n").split("\n")
    return ["```text", *out, "```"] if block.fenced else out


def comparable(block: Block, lines: list[str] | tuple[str, ...]) -> list[str]:
    """What ``--check`` compares: the lines, with every number masked in a timing block and a
    command's own ``computed in N s`` in every block."""
    if block.timing:
        return [NUMBER.sub("#", ln) for ln in lines]
    return [ELAPSED.sub("computed in <t> s", ln) for ln in lines]


def commit_of(root: Path) -> str:
    """HEAD's short hash, ``+dirty`` when the code (not the pages) has uncommitted changes."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)*.md")
    return head + ("+dirty" if dirty else "")


def run(block: Block, root: Path) -> str:
    """The block's command's stdout, run in ``root`` with ``root`` first on the path."""
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)
    )
    done = subprocess.run(
        argv_of(block.command), cwd=root, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise InputError(f"{block.page}:{block.line}: `{block.command}` exited {done.returncode}: {tail}")
    return done.stdout


def missing(block: Block, root: Path) -> list[str]:
    """What the block needs and this checkout lacks: paths under ``root`` or importable modules."""
    absent: list[str] = []
    for need in block.needs:
        if need.startswith("module:"):
            if importlib.util.find_spec(need.removeprefix("module:")) is None:
                absent.append(need)
        elif not (root / need).exists():
            absent.append(need)
    return absent


def record_line(block: Block, commit: str, load: float, today: str, seconds: float) -> str:
    what = f" (load {load:.1f}, {seconds:.0f} s)"
    return f"<sub>Recorded by `{block.command}` at commit {commit} on {today}{what}.</sub>"


def rewrite(text: str, results: dict[int, list[str]]) -> str:
    """``text`` with each block (by its opening line) replaced by its new lines."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i + 1 in results:
            out.append(lines[i])
            out.extend(results[i + 1])
            i += 1
            while lines[i] != CLOSE:
                i += 1
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def root_of(page: Path) -> Path:
    """Where a page's commands run: its git repository's top folder, else the page's folder."""
    folder = page.parent.resolve()
    done = subprocess.run(
        ["git", "-C", str(folder), "rev-parse", "--show-toplevel"],
        capture_output=True,
        text=True,
        check=False,
    )
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else folder


def pages_of(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for p in map(Path, paths):
        found.extend(sorted(p.glob("*.md")) if p.is_dir() else [p])
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memlab.app.record")
    ap.add_argument("pages", nargs="*", default=["README.md", "docs"], help="pages or folders of pages")
    ap.add_argument("--check", action="store_true", help="exit 1 naming the stale blocks, writing nothing")
    ap.add_argument("--only", default="", help="run only the blocks whose command contains this text")
    ap.add_argument("--list", action="store_true", help="list the recorded blocks and run nothing")
    ns = ap.parse_args(argv)
    try:
        pages = pages_of(ns.pages)
        parsed = [(page, page.read_text(encoding="utf-8")) for page in pages]
        blocks = {page: parse(page, text) for page, text in parsed}  # every page parsed before anything runs
        if ns.list:
            for page, _ in parsed:
                for b in blocks[page]:
                    kind = "timing" if b.timing else "text" if b.fenced else "markdown"
                    needs = ",".join(b.needs) or "-"
                    print(f"{page}:{b.line}\t{kind}\t{needs}\t{b.command}")
            return 0
        stale: list[str] = []
        for page, text in parsed:
            root = root_of(page)
            results: dict[int, list[str]] = {}
            for b in blocks[page]:
                if ns.only not in b.command:
                    continue
                absent = missing(b, root)
                if absent:
                    print(
                        f"skipped: {page}:{b.line} `{b.command}` (needs {', '.join(absent)})", file=sys.stderr
                    )
                    continue
                load = os.getloadavg()[0]
                started = time.perf_counter()
                new = render(b, run(b, root))
                seconds = time.perf_counter() - started
                if comparable(b, new) != comparable(b, b.body):
                    stale.append(f"{page}:{b.line} `{b.command}`")
                today = dt.datetime.now(dt.UTC).date().isoformat()
                results[b.line] = [*new, record_line(b, commit_of(root), load, today, seconds)]
            if results and not ns.check:
                atomic_write_text(page, rewrite(text, results))
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for s in stale:
        print(("stale: " if ns.check else "changed: ") + s, file=sys.stderr)
    return 1 if stale and ns.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
