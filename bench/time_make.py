"""Time one make target and print pytest's count beside the wall time: the README's test-suite figure.

Usage: python bench/time_make.py test-fast
Prints one line, e.g. ``make test-fast: 1,821 passed in 88 s (99.8 s wall with make)``; the load
is stated by memlab.app.record's record line beside it.
"""

import re
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    target = argv[0] if argv else "test-fast"
    start = time.perf_counter()
    # the install steps taken as done (-o): only the target's own recipe is timed, and a stale
    # .venv stamp never reinstalls anything under the clock
    keep = [a for stamp in (".venv/.installed", ".venv/.installed-test") for a in ("-o", stamp)]
    done = subprocess.run(["make", *keep, target], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    summary = [ln for ln in done.stdout.splitlines() if re.search(r"\b(passed|failed)\b.* in [\d.]+s", ln)]
    if done.returncode != 0 or not summary:
        why = summary[-1] if summary else done.stderr[-300:]
        print(f"make {target} exited {done.returncode}: {why}", file=sys.stderr)
        return 1
    line = summary[-1].strip("= ")
    m = re.search(r"(\d+) passed.* in ([\d.]+)s", line)
    passed, seconds = int(m.group(1)), float(m.group(2))
    print(f"`make {target}`: {passed:,} passed in {seconds:.0f} s ({wall:.1f} s wall with make)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
