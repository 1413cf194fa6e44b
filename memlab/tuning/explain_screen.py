"""``memlab explain``'s top candidates without the whole float32 product: an int8 screen (torch's
int8 matrix product, exact in int32, about twice float32's speed here), then the exact float32
scores of the few memories the screen's proven bound cannot rule out
(``memlab.core.screen_kernels``). The result is the whole-block path's, position for position and
bit for bit; a block the screen cannot narrow (a row keeps more than ``CAP`` memories: near-equal
scores) is scored whole instead, and the first block is checked against the product.
"""

from __future__ import annotations

import numpy as np

from memlab.core.screen_kernels import fma_dot, quantize, rescore_top_k, screen_candidates, screen_margin

CAP = 1024  # memories a row may keep for rescoring; more, and its block is scored whole
MIN_MEMORIES = 20_000  # below this the whole product is cheap (and small products use other kernels)


class Screen:
    """The store's vectors quantised once, screening blocks of queries against them."""

    def __init__(self, memories: np.ndarray, dates: np.ndarray, k: int, cap: int | None = None) -> None:
        import torch  # only here: an int8 product exact in int32 that numpy does not have

        self._torch = torch
        self.memories, self.dates, self.k = memories, dates, k
        self.cap = CAP if cap is None else cap
        self.d = memories.shape[1]
        q, self.scale, norm, err = quantize(memories)
        self.mem_norm, self.mem_err = float(norm.max()), float(err.max())
        self._mem_t = torch.from_numpy(self._pad(q)).T  # (d', n): torch's int8 product wants d' % 8 == 0
        self.screened = 0  # blocks screened
        self.whole = 0  # blocks the screen could not narrow
        self.rescored = 0  # (query, memory) pairs kept by the screen and scored exactly

    def _pad(self, q: np.ndarray) -> np.ndarray:
        extra = -q.shape[1] % 8  # zero dimensions add nothing to an int8 product
        return np.ascontiguousarray(np.pad(q, ((0, 0), (0, extra))) if extra else q)

    def top_k(self, queries: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The block's top ``k`` (positions, float64 scores) as ``visible_top_k`` gives them from
        the whole product, or None when a row keeps more than ``cap`` memories."""
        q, scale, norm, err = quantize(queries)
        products = self._torch._int_mm(self._torch.from_numpy(self._pad(q)), self._mem_t).numpy()
        margin = screen_margin(norm, err, self.mem_norm, self.mem_err, self.d)
        keep, count = screen_candidates(
            products, self.scale, scale, margin, self.dates, times, self.k, self.cap
        )
        if (count < 0).any():
            self.whole += 1
            return None
        self.screened += 1
        self.rescored += int(count.sum())
        return rescore_top_k(queries, self.memories, keep, count, self.k)

    def score(self, query: np.ndarray, memory: int) -> float:
        """One float32 score, with the bits the whole product gives it."""
        return float(fma_dot(query, self.memories[memory]))
