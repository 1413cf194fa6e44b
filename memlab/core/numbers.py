"""The one check of a number a user passes: finite, in range, an integer where something is counted.

Every entry point of the library (the spec, the grid and its axes, the studies) checks its
numbers here, so a bad value gets the same message whatever command or notebook passed it:
``NAME: expected a finite number > 0, got inf``.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

from memlab.core.errors import InputError


def shown(value: object) -> str:
    """A value as a message shows it: ``nan``, ``inf``, ``-5``, ``0.5``; anything else as repr."""
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, Integral):  # a thousand digits read back as their count, not in full
        v = int(value)
        digits = int(v.bit_length() * 0.30103) + 1  # log10(2): no str() of 5,000 digits
        return str(v) if abs(v) < 10**21 else f"an integer of about {digits} digits"
    if isinstance(value, Real):
        return f"{float(value):g}"
    return repr(value)


def expected(
    integer: bool = False,
    minimum: float | None = None,
    above: float | None = None,
    maximum: float | None = None,
    below: float | None = None,
) -> str:
    """What the check wants, in words: ``an integer >= 1``, ``a finite number in [0, 1)``."""
    what = "an integer" if integer else "a finite number"
    if minimum is not None and (maximum is not None or below is not None):
        close = f"{shown(maximum)}]" if maximum is not None else f"{shown(below)})"
        return f"{what} in [{shown(minimum)}, {close}"
    if above is not None:
        return f"{what} > {shown(above)}"
    if minimum is not None:
        return f"{what} >= {shown(minimum)}"
    if maximum is not None:
        return f"{what} <= {shown(maximum)}"
    if below is not None:
        return f"{what} < {shown(below)}"
    return what


def check_number(
    value: object,
    name: str,
    *,
    integer: bool = False,
    minimum: float | None = None,
    above: float | None = None,
    maximum: float | None = None,
    below: float | None = None,
) -> float | int:
    """``value`` as a float (an int when ``integer``), or ``InputError``:
    ``NAME: expected <what>, got <value>``. ``above`` and ``below`` are strict bounds."""
    ok = isinstance(value, Real) and not isinstance(value, bool)
    if ok and integer:
        ok = isinstance(value, Integral)  # 8.0 is refused: a count is written as an integer
    if ok and not integer:
        ok = math.isfinite(float(value))
    if ok:
        x = value if integer else float(value)  # an int compared as itself: 10**400 is no float
        ok = (
            (minimum is None or x >= minimum)
            and (above is None or x > above)
            and (maximum is None or x <= maximum)
            and (below is None or x < below)
        )
    if not ok:
        want = expected(integer, minimum, above, maximum, below)
        raise InputError(f"{name}: expected {want}, got {shown(value)}")
    return int(value) if integer else float(value)  # type: ignore[arg-type]


MEMORY_BUDGET = 2 << 30  # bytes a study's result or working arrays may hold, about (2 GiB)


def nbytes(n: float) -> str:
    """A byte count for people: ``1.5 GiB``."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} PiB"


def check_fits(count: int, name: str, each_bytes: float, what: str, budget: int = MEMORY_BUDGET) -> int:
    """``count`` when ``count`` times ``each_bytes`` fits the memory budget; otherwise one line
    that says what it would take and the largest count that fits."""
    most = int(budget // max(each_bytes, 1))
    if count > most:
        raise InputError(
            f"{name}: {count:,} {what} would take about {nbytes(count * each_bytes)} of memory, more than "
            f"memlab's budget of {nbytes(budget)}: at most {most:,} fit"
        )
    return count


def check_work(count: int, name: str, most: int, what: str, why: str) -> int:
    """``count`` when it is at most ``most``; otherwise one line naming the largest size that
    finishes and why (``why``: what one unit costs, as measured)."""
    if count > most:
        raise InputError(
            f"{name}: {count:,} {what} cannot finish in reasonable time ({why}): at most {most:,}"
        )
    return count


def plural(count: int, noun: str) -> str:
    """``noun`` as it follows ``count`` in a message: ``1 probe``, ``2 probes``, ``1 memory``,
    ``0 memories`` (a consonant and y: ies; otherwise s)."""
    if count == 1:
        return noun
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return noun[:-1] + "ies"
    return noun + "s"


def counted(count: int, noun: str) -> str:
    """``1 probe``, ``3 probes``: a count and its noun, as a message says it."""
    return f"{count} {plural(count, noun)}"
