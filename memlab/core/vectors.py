"""What makes a vector trustworthy, checked once wherever vectors enter memlab: a model's or a
server's output before it is used or cached, a collection's stored vectors on import, a
dataset's ``vectors.npy``.
"""

from __future__ import annotations

import numpy as np

NORM_TOLERANCE = 1e-3  # cached vectors are L2-normalised; float32 rounding stays far below this
NORM_RANGE = (1e-6, 1e6)  # lengths a vector may have before normalising: no model comes near either


def raw_vector_problem(vec: np.ndarray) -> str | None:
    """Why a vector as a model or a server gave it (any length) cannot be trusted, or None: every
    component finite and a number float32 holds, a length within ``NORM_RANGE`` (a zero vector
    has no direction; no model memlab knows comes near either end), and of unit length within
    ``NORM_TOLERANCE`` once normalised in float32, as the cache keeps it."""
    vec = np.asarray(vec, dtype=np.float64)
    if vec.ndim != 1 or vec.size == 0:
        return f"not a vector (shape {vec.shape})"
    with np.errstate(over="ignore", invalid="ignore"):
        norm = float(np.linalg.norm(vec))
    if NORM_RANGE[0] <= norm <= NORM_RANGE[1]:  # finite, every component far inside float32: the
        # common case, one check (a query log holds 10^5 vectors); only the unit length is left
        unit = (vec / norm).astype(np.float32)
        if abs(float(np.linalg.norm(unit.astype(np.float64))) - 1.0) <= NORM_TOLERANCE:
            return None
    bad = np.flatnonzero(~np.isfinite(vec))
    if bad.size:
        return f"component {int(bad[0]) + 1} is {float(vec[bad[0]])}"
    huge = np.flatnonzero(np.abs(vec) > np.finfo(np.float32).max)
    if huge.size:
        return f"component {int(huge[0]) + 1} is {vec[huge[0]]:.3g}, beyond float32"
    with np.errstate(over="ignore"):
        norm = float(np.linalg.norm(vec))
    if norm == 0:
        return "a zero vector"
    if not NORM_RANGE[0] <= norm <= NORM_RANGE[1]:
        return f"its length {norm:.3g} is outside [{NORM_RANGE[0]:g}, {NORM_RANGE[1]:g}]"
    unit = (vec / norm).astype(np.float32)
    if abs(float(np.linalg.norm(unit.astype(np.float64))) - 1.0) > NORM_TOLERANCE:
        return "it does not normalise to unit length in float32"
    return None


COSINE_CHUNK_BYTES = 64 << 20  # the float64 queries one step of the product converts at a time


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to unit length in float32, as Qdrant keeps a vector of a Cosine collection
    (it normalises every vector on the way in, queries too; a zero row stays zero)."""
    x = np.asarray(vectors, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"expected a 2-d array of row vectors, got shape {x.shape}")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, np.float32(1))


def cosine_table(
    queries: np.ndarray, memories: np.ndarray, *, chunk_bytes: int = COSINE_CHUNK_BYTES
) -> np.ndarray:
    """Raw cosine of every query against every memory, (queries, memories) in float64 holding
    float32 values: both sides as unit float32 rows (``unit_rows``, as Qdrant keeps them), their
    product, and each score rounded to float32 as Qdrant returns it. The product accumulates in
    float64 (as local mode's does), so a score does not depend on which block of queries BLAS was
    handed: float32 sums would differ in their last bit between a block and a single row.
    Computed a block of queries at a time, so that beside the table itself no more than
    ``chunk_bytes`` is held, whatever the store's size."""
    q, m = unit_rows(queries), unit_rows(memories)
    if q.shape[1] != m.shape[1]:
        raise ValueError(f"queries have {q.shape[1]} dimensions, memories {m.shape[1]}")
    table = np.empty((len(q), len(m)), dtype=np.float64)
    mt = m.T.astype(np.float64)
    step = max(1, chunk_bytes // max(1, 8 * len(m)))
    for start in range(0, len(q), step):
        block = table[start : start + step]
        np.matmul(q[start : start + step].astype(np.float64), mt, out=block)
        block[...] = block.astype(np.float32)  # Qdrant's scores are float32
    return table
