"""The grid a sweep runs over: values per axis, in a deterministic C order, and the axis parser."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from memlab.core.errors import InputError
from memlab.core.registry import check_names
from memlab.core.spec import COMBINES, DECAYS, RetrievalSpec

# the decay family and how the bonus combines are the outermost axes (names, not numbers)
FAMILY_AXES = ("decay", "combine")
AXES = (*FAMILY_AXES, "bonus", "tau_days", "threshold", "candidates", "inject")
NUMERIC_AXES = AXES[len(FAMILY_AXES) :]
INTEGER_AXES = ("candidates", "inject")


@dataclass(frozen=True)
class Grid:
    """Values per axis; axes not given take the RetrievalSpec defaults (one value)."""

    bonus: tuple[float, ...] = (RetrievalSpec.bonus,)
    tau_days: tuple[float, ...] = (RetrievalSpec.tau_days,)
    threshold: tuple[float, ...] = (RetrievalSpec.threshold,)
    candidates: tuple[int, ...] = (RetrievalSpec.candidates,)
    inject: tuple[int, ...] = (RetrievalSpec.inject,)
    decay: tuple[str, ...] = (RetrievalSpec.decay,)
    combine: tuple[str, ...] = (RetrievalSpec.combine,)

    def __post_init__(self) -> None:
        for name, registry in zip(FAMILY_AXES, (DECAYS, COMBINES), strict=True):
            raw = getattr(self, name)
            values = (raw,) if isinstance(raw, str) else tuple(raw)
            if not values:
                raise InputError(f"grid axis {name!r} is empty")
            object.__setattr__(self, name, check_names(registry, values, name))
        for name in NUMERIC_AXES:
            raw = getattr(self, name)
            values = tuple(np.atleast_1d(np.asarray(raw)).tolist())
            if not values:
                raise InputError(f"grid axis {name!r} is empty")
            if name in INTEGER_AXES:
                if not all(isinstance(v, int) and v >= 1 for v in values):
                    raise InputError(f"grid axis {name!r} needs integers >= 1, got {list(values)}")
            elif not all(isinstance(v, int | float) and math.isfinite(v) for v in values):
                raise InputError(f"grid axis {name!r} needs finite numbers, got {list(values)}")
            object.__setattr__(self, name, values)
        if min(self.tau_days) <= 0:
            raise InputError(f"grid axis 'tau_days' needs values > 0, got {min(self.tau_days)}")
        if min(self.bonus) < 0:
            raise InputError(f"grid axis 'bonus' needs values >= 0, got {min(self.bonus)}")

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
        return {a: np.asarray(getattr(self, a))[i] for a, i in zip(AXES, idx, strict=True)}

    def edges(self, values: dict[str, float]) -> list[tuple[str, str, float]]:
        """Axes (with more than one value) on whose lowest or highest value ``values`` sits:
        (axis, "lowest" | "highest", value). A choice on an edge may be better outside the grid;
        widen that axis. Bonus 0 is the natural floor, not an edge."""
        out = []
        for name in AXES:
            axis = getattr(self, name)
            if len(axis) < 2 or name not in values:
                continue
            v = values[name]
            if v == max(axis):
                out.append((name, "highest", float(v)))
            elif v == min(axis) and not (name == "bonus" and v == 0):
                out.append((name, "lowest", float(v)))
        return out

    def spec(self, i: int) -> RetrievalSpec:
        """Configuration ``i`` as a RetrievalSpec (for the one-config reference)."""
        v = self.values(i, i + 1)
        return RetrievalSpec(
            candidates=int(v["candidates"][0]),
            inject=int(v["inject"][0]),
            threshold=float(v["threshold"][0]),
            bonus=float(v["bonus"][0]),
            tau_days=float(v["tau_days"][0]),
            decay=str(v["decay"][0]),
            combine=str(v["combine"][0]),
        )


def parse_axis(text: str, name: str = "value", integer: bool = False) -> tuple[float, ...] | tuple[int, ...]:
    """``start:stop:step`` (stop included), a comma list, or one number."""
    conv = int if integer else float
    try:
        if ":" in text:
            parts = text.split(":")
            if len(parts) != 3:
                raise ValueError
            start, stop, step = (conv(p) for p in parts)
            if step <= 0 or stop < start:
                raise InputError(f"--{name}: '{text}' needs step > 0 and stop >= start")
            n = math.floor((stop - start) / step + 1e-9) + 1
            values = start + step * np.arange(n)
            # round away binary noise (0.1 * 3 = 0.30000000000000004) for readable output
            return tuple(int(v) for v in values) if integer else tuple(np.round(values, 12).tolist())
        return tuple(conv(p) for p in text.split(","))
    except ValueError as e:
        if e.args and str(e.args[0]).startswith("--"):
            raise
        kind = "an integer" if integer else "a number"
        raise InputError(
            f"--{name}: '{text}' is not start:stop:step (stop included), a comma list or {kind}"
        ) from None
