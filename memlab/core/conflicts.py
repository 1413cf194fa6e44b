"""Which criteria cannot hold together anywhere on a grid, from the pass/fail of each criterion.

A set of criteria holds together somewhere when one configuration passes all of them: when the
set is a subset of one configuration's *pass pattern* (the criteria it passes). So everything
there is to know is the set of distinct pass patterns, which ``ConflictFinder`` collects chunk by
chunk (one pass, as ``memlab.core.selection.choose_streaming`` reads the sweep; memory bounded by
the number of distinct patterns, pruned to the maximal ones when it grows) and ``Conflicts``
reads back:

- ``never``: the criteria no configuration passes (each a conflict on its own);
- ``pairs``: the pairs of the others that no configuration passes together;
- ``smallest``: every conflicting set of the smallest size, when that size is at most
  ``SMALLEST_UP_TO`` (triples are looked for among at most ``TRIPLES_UP_TO`` criteria); else one
  *minimal* conflicting set (no criterion can be left out of it and
  it still fail everywhere), found by leaving criteria out one by one in their declared order.

The closed-form feasible region (``memlab.core.feasible``) gives the same patterns exactly, one per
piece of the bonus axis between the criteria's interval ends (``criterion_patterns``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

SMALLEST_UP_TO = 3  # the size up to which every smallest conflicting set is listed
TRIPLES_UP_TO = 64  # criteria up to which triples are enumerated (beyond: one minimal set)
PRUNE_ABOVE = 50_000  # distinct patterns kept before pruning to the maximal ones


@dataclass(frozen=True)
class Conflicts:
    """What the pass patterns say about the criteria ``names``."""

    names: tuple[str, ...]
    satisfiable: bool  # some configuration passes every criterion
    never: tuple[str, ...]  # criteria no configuration passes
    pairs: tuple[tuple[str, str], ...]  # pairs (of the others) never passed together
    smallest: tuple[tuple[str, ...], ...]  # the smallest conflicting sets (or one minimal set)
    exhaustive: bool  # smallest lists every set of its size (else it is one minimal set)

    @classmethod
    def none(cls, names: Sequence[str]) -> Conflicts:
        """No conflict: some configuration satisfies every criterion."""
        return cls(tuple(names), True, (), (), (), True)

    def text(self) -> str:
        """One line: which criteria conflict."""
        if self.satisfiable:
            return "no conflict: some configuration satisfies every criterion"
        parts = []
        if self.never:
            more = f" and {len(self.never) - 8} more" if len(self.never) > 8 else ""
            parts.append(f"never hold: {', '.join(self.never[:8])}{more}")
        if self.pairs:
            shown = ", ".join(f"{a} + {b}" for a, b in self.pairs[:8])
            more = f" and {len(self.pairs) - 8} more" if len(self.pairs) > 8 else ""
            parts.append(f"pairs that never hold together: {shown}{more}")
        if not self.never and not self.pairs and self.smallest:
            size = len(self.smallest[0])
            sets = "; ".join(" + ".join(s) for s in self.smallest[:4])
            more = f" and {len(self.smallest) - 4} more" if len(self.smallest) > 4 else ""
            kind = (
                f"the smallest sets ({size} criteria)"
                if self.exhaustive
                else f"a minimal set ({size} criteria)"
            )
            parts.append(f"{kind} that never hold together: {sets}{more}")
        return "; ".join(parts)

    def as_dict(self) -> dict[str, object]:
        return {
            "satisfiable": self.satisfiable,
            "never": list(self.never),
            "pairs": [list(p) for p in self.pairs],
            "smallest": [list(s) for s in self.smallest],
            "exhaustive": self.exhaustive,
        }


class ConflictFinder:
    """Collects the distinct pass patterns of criteria ``names`` over chunks of a sweep."""

    def __init__(self, names: Sequence[str]):
        self.names = tuple(names)
        self._width = max(1, (len(self.names) + 7) // 8)
        self._packed = np.zeros((0, self._width), dtype=np.uint8)

    def add(self, frame: pd.DataFrame) -> None:
        """The ``<name>_pass`` columns of one chunk of the sweep's table."""
        if not self.names:
            return
        self.add_patterns(np.column_stack([frame[f"{n}_pass"].to_numpy(dtype=bool) for n in self.names]))

    def add_patterns(self, passes: np.ndarray) -> None:
        """Rows of booleans, one column per criterion."""
        if not self.names or len(passes) == 0:
            return
        packed = np.packbits(np.asarray(passes, dtype=bool), axis=1)
        self._packed = unique_rows(np.concatenate([self._packed, unique_rows(packed)]))
        if len(self._packed) > PRUNE_ABOVE:
            self._packed = maximal_rows(self._packed)

    def patterns(self) -> np.ndarray:
        """The distinct patterns seen, as booleans (patterns x criteria)."""
        return np.unpackbits(self._packed, axis=1, count=len(self.names)).astype(bool)

    def result(self) -> Conflicts:
        return conflicts_of(self.names, self.patterns())


def unique_rows(packed: np.ndarray) -> np.ndarray:
    """The distinct rows of packed bits (up to 64 criteria as one integer each: a fast sort)."""
    if len(packed) <= 1:
        return packed
    width = packed.shape[1]
    if width <= 8:
        wide = np.zeros((len(packed), 8), dtype=np.uint8)
        wide[:, :width] = packed
        keys = np.unique(wide.view(np.uint64).ravel())
        return keys.view(np.uint8).reshape(-1, 8)[:, :width].copy()
    view = np.ascontiguousarray(packed).view(np.dtype((np.void, width)))
    return np.unique(view).view(np.uint8).reshape(-1, width)


def maximal_rows(packed: np.ndarray) -> np.ndarray:
    """The patterns no other pattern contains (a set holds somewhere iff it is inside one of them)."""
    bits = np.unpackbits(packed, axis=1).sum(axis=1)
    kept: list[np.ndarray] = []
    for row in packed[np.argsort(-bits, kind="stable")]:
        if kept and bool(((np.asarray(kept) & row) == row).all(axis=1).any()):
            continue
        kept.append(row)
    return np.asarray(kept, dtype=np.uint8).reshape(-1, packed.shape[1])


def conflicts_of(names: Sequence[str], patterns: np.ndarray) -> Conflicts:
    """What a set of pass patterns (patterns x criteria, booleans) says about the criteria."""
    names = tuple(names)
    pats = np.asarray(patterns, dtype=bool).reshape(-1, len(names))
    if not names or pats.all(axis=1).any():
        return Conflicts.none(names)
    passed = pats.any(axis=0)
    never = tuple(n for n, ok in zip(names, passed, strict=True) if not ok)
    live = np.flatnonzero(passed)
    together = pats[:, live].T.astype(np.int64) @ pats[:, live].astype(np.int64)  # co-pass counts
    pairs = tuple(
        (names[live[i]], names[live[j]]) for i, j in combinations(range(len(live)), 2) if together[i, j] == 0
    )
    if never:
        return Conflicts(names, False, never, pairs, tuple((n,) for n in never), True)
    if pairs:
        return Conflicts(names, False, never, pairs, pairs, True)
    triples = []
    if SMALLEST_UP_TO >= 3 and len(names) <= TRIPLES_UP_TO:
        for i, j in combinations(range(len(names)), 2):
            both = pats[:, i] & pats[:, j]
            with_k = pats[both].any(axis=0)
            triples += [(names[i], names[j], names[k]) for k in range(j + 1, len(names)) if not with_k[k]]
    if triples:
        return Conflicts(names, False, (), (), tuple(triples), True)
    keep = np.ones(len(names), dtype=bool)  # leave criteria out one by one while all still fail
    for c in range(len(names)):
        keep[c] = False
        if pats[:, keep].all(axis=1).any():  # without c, they hold somewhere: c belongs
            keep[c] = True
    return Conflicts(names, False, (), (), (tuple(n for n, k in zip(names, keep, strict=True) if k),), False)
