"""The grid a sweep runs over: values per axis, in a deterministic C order, and the axis parser.

An axis is an ``Axis``: explicit values, or a range ``start:stop:step`` kept as those numbers and
generated on demand, so an axis of 10^8 thresholds costs nothing until a chunk of it is swept.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memlab.core.errors import InputError
from memlab.core.numbers import check_number
from memlab.core.registry import check_names
from memlab.core.spec import COMBINES, DECAYS, SPEC_BOUNDS, RetrievalSpec

# the decay family and how the bonus combines are the outermost axes (names, not numbers)
FAMILY_AXES = ("decay", "combine")
AXES = (*FAMILY_AXES, "bonus", "tau_days", "threshold", "candidates", "inject")
NUMERIC_AXES = AXES[len(FAMILY_AXES) :]
INTEGER_AXES = ("candidates", "inject")
MAX_CONFIGURATIONS = 2**62  # rows a sweep can number (int64)
TAU_RANGE = "1:60:1"  # the tau axis a sweep takes when none is given (memlab sweep, the tuned condition)
AXIS_BOUNDS = SPEC_BOUNDS  # each axis is checked like the spec field of its name


class Axis(Sequence):
    """The values of one axis: explicit, or ``start + step * i`` for ``i < n`` (generated lazily).

    A range's values are rounded to 12 decimals (0.1 * 3 is 0.3, not 0.30000000000000004), the
    same whether one value or a block of them is asked for.
    """

    __slots__ = ("_n", "_values", "integer", "label", "start", "step", "stop")

    def __init__(
        self,
        values: Sequence[Any] | None = None,
        *,
        integer: bool = False,
        label: str = "axis",
        start: Any = None,
        stop: Any = None,
        step: Any = None,
    ):
        self.integer = integer
        self.label = label  # the name a check uses when no one checked the axis before its use
        self._values = None if values is None else tuple(values)
        self.start, self.stop, self.step = start, stop, step
        self._n = len(self._values) if self._values is not None else None

    @classmethod
    def of(cls, raw: Any, integer: bool = False) -> Axis:
        """An axis from an Axis, a sequence of numbers or one number."""
        if isinstance(raw, Axis):
            return raw
        return cls(tuple(np.atleast_1d(np.asarray(raw)).tolist()), integer=integer)

    @classmethod
    def range(cls, start: Any, stop: Any, step: Any, integer: bool = False, label: str = "axis") -> Axis:
        """``start:stop:step``, stop included (within 1e-9 of a step)."""
        return cls(None, integer=integer, label=label, start=start, stop=stop, step=step)

    @property
    def is_range(self) -> bool:
        return self._values is None

    def check(self, name: str, **bounds: float) -> Axis:
        """Every value finite, in ``bounds`` and (integer axes) an integer; one message otherwise."""
        integer = self.integer or name in INTEGER_AXES
        if self._values is not None:
            if not self._values:
                raise InputError(f"{name}: the axis has no values")
            self._values = tuple(check_number(v, name, integer=integer, **bounds) for v in self._values)
            return self
        for v in (self.start, self.stop):
            check_number(v, name, integer=integer, **bounds)
        check_number(self.step, f"{name} step", integer=integer, above=0)
        if self.stop < self.start:
            raise InputError(
                f"{name}: the range {self.start:g}:{self.stop:g}:{self.step:g} needs stop >= start"
            )
        n = math.floor((self.stop - self.start) / self.step + 1e-9) + 1
        if n > MAX_CONFIGURATIONS:
            raise InputError(
                f"{name}: the range {self.start:g}:{self.stop:g}:{self.step:g} has {n:.3g} values, "
                "more than a sweep can number (2^62)"
            )
        self._n = n
        return self

    def __len__(self) -> int:
        if self._n is None:
            self.check(self.label)
        return self._n  # type: ignore[return-value]

    def array(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Values ``lo .. hi-1`` as an array."""
        hi = len(self) if hi is None else min(hi, len(self))
        return self.take(np.arange(lo, hi))

    def take(self, index: np.ndarray) -> np.ndarray:
        """The values at ``index`` (an integer array)."""
        if self._values is not None:
            return np.asarray(self._values)[index]
        if self.integer:
            return self.start + self.step * np.asarray(index, dtype=np.int64)
        return np.round(self.start + self.step * np.asarray(index, dtype=np.float64), 12)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return tuple(self.array()[i].tolist()) if self._values is None else self._values[i]
        n = len(self)
        if not -n <= i < n:
            raise IndexError(i)
        return self.take(np.array([i % n]))[0].item()

    def __iter__(self) -> Iterator[Any]:
        n, block = len(self), 1 << 16
        for lo in range(0, n, block):
            yield from self.array(lo, lo + block).tolist()

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self.array()
        return out if dtype is None else out.astype(dtype)

    @property
    def lo(self) -> Any:
        """The smallest value (without generating the axis)."""
        return min(self._values) if self._values is not None else self[0]

    @property
    def hi(self) -> Any:
        """The largest value."""
        return max(self._values) if self._values is not None else self[-1]

    def _key(self) -> tuple:
        return (self._values,) if self._values is not None else (self.start, self.stop, self.step)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Axis) and self.is_range == other.is_range:
            return self._key() == other._key()
        if isinstance(other, Sequence):
            return len(self) == len(other) and tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        if self._values is not None:
            return f"Axis({self._values!r})"
        return f"Axis.range({self.start!r}, {self.stop!r}, {self.step!r}, n={self._n})"


@dataclass(frozen=True)
class Grid:
    """Values per axis; axes not given take the RetrievalSpec defaults (one value).

    Each axis is an ``Axis`` (a tuple of numbers or one number is turned into one); every value
    is checked once here, with the same message as ``RetrievalSpec`` gives."""

    bonus: Axis | Sequence[float] = (RetrievalSpec.bonus,)
    tau_days: Axis | Sequence[float] = (RetrievalSpec.tau_days,)
    threshold: Axis | Sequence[float] = (RetrievalSpec.threshold,)
    candidates: Axis | Sequence[int] = (RetrievalSpec.candidates,)
    inject: Axis | Sequence[int] = (RetrievalSpec.inject,)
    decay: tuple[str, ...] = (RetrievalSpec.decay,)
    combine: tuple[str, ...] = (RetrievalSpec.combine,)

    def __post_init__(self) -> None:
        for name, registry in zip(FAMILY_AXES, (DECAYS, COMBINES), strict=True):
            raw = getattr(self, name)
            values = (raw,) if isinstance(raw, str) else tuple(raw)
            if not values:
                raise InputError(f"{name}: the axis has no values")
            object.__setattr__(self, name, check_names(registry, values, name))
        for name in NUMERIC_AXES:
            axis = Axis.of(getattr(self, name), integer=name in INTEGER_AXES).check(name, **AXIS_BOUNDS[name])
            object.__setattr__(self, name, axis)
        if self.size > MAX_CONFIGURATIONS:
            raise InputError(f"grid: {self.size:.3g} configurations, more than a sweep can number (2^62)")

    @classmethod
    def of(cls, spec: RetrievalSpec) -> Grid:
        """The grid of one configuration: the whole spec, decay family included."""
        return cls(
            bonus=(spec.bonus,),
            tau_days=(spec.tau_days,),
            threshold=(spec.threshold,),
            candidates=(spec.candidates,),
            inject=(spec.inject,),
            decay=(spec.decay,),
            combine=(spec.combine,),
        )

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(getattr(self, a)) for a in AXES)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def values(self, start: int = 0, stop: int | None = None) -> dict[str, np.ndarray]:
        """Each axis's value for configurations ``start .. stop-1`` (C order)."""
        flat = np.arange(start, self.size if stop is None else stop)
        idx = np.unravel_index(flat, self.shape)
        out = {
            a: np.asarray(getattr(self, a), dtype=object)[i] for a, i in zip(FAMILY_AXES, idx, strict=False)
        }
        for a, i in zip(NUMERIC_AXES, idx[len(FAMILY_AXES) :], strict=True):
            out[a] = getattr(self, a).take(i)
        return out

    def edges(self, values: dict[str, float]) -> list[tuple[str, str, float]]:
        """Axes (with more than one value) on whose lowest or highest value ``values`` sits:
        (axis, "lowest" | "highest", value). A choice on an edge may be better outside the grid;
        widen that axis. Bonus 0 is the natural floor, not an edge; a decay family is no edge; and
        with bonus 0, tau is none either (no bonus to decay: every tau gives the same finals)."""
        out = []
        for name in NUMERIC_AXES:
            axis = getattr(self, name)
            if len(axis) < 2 or name not in values:
                continue
            if name == "tau_days" and values.get("bonus") == 0:
                continue
            v = values[name]
            if v == axis.hi:
                out.append((name, "highest", float(v)))
            elif v == axis.lo and not (name == "bonus" and v == 0):
                out.append((name, "lowest", float(v)))
        return out

    def spec(self, i: int) -> RetrievalSpec:
        """Configuration ``i`` as a RetrievalSpec (for the one-config reference)."""
        v = self.values(i, i + 1)
        return RetrievalSpec.from_row({k: vs[0] for k, vs in v.items()})


def parse_axis(text: str, name: str = "value", integer: bool = False) -> Axis:
    """``start:stop:step`` (stop included, kept as a lazy range), a comma list, or one number.

    Only the syntax is checked here (``--NAME: 'TEXT' is not ...``); the values are checked by
    whatever takes the axis (``Grid``, the feasible region, the studies), with the same message
    as every other entry point gives for that quantity."""
    conv = int if integer else float
    try:
        if ":" in text:
            parts = text.split(":")
            if len(parts) != 3:
                raise ValueError
            start, stop, step = (conv(p) for p in parts)
            if step <= 0 or stop < start:
                raise InputError(f"--{name}: '{text}' needs step > 0 and stop >= start")
            return Axis.range(start, stop, step, integer=integer, label=name)
        return Axis(tuple(conv(p) for p in text.split(",")), integer=integer, label=name)
    except ValueError as e:
        if e.args and str(e.args[0]).startswith("--"):
            raise
        kind = "an integer" if integer else "a number"
        raise InputError(
            f"--{name}: '{text}' is not start:stop:step (stop included), a comma list or {kind}"
        ) from None
