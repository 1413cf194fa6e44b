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
