"""Correlated noise of a known integrated autocorrelation time, as real torque residuals are."""

from __future__ import annotations

import numpy as np


def ar1(rng: np.random.Generator, n: int, phi: float, columns: int) -> np.ndarray:
    """AR(1) noise of unit variance per column: ``tau_int = (1 + phi) / (1 - phi)``."""
    e = np.zeros((n, columns))
    innovation = rng.normal(0.0, np.sqrt(1.0 - phi**2), (n, columns))
    e[0] = rng.normal(size=columns)
    for i in range(1, n):
        e[i] = phi * e[i - 1] + innovation[i]
    return e
