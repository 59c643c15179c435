"""Random joint states for kinematic and dynamic checks."""

from __future__ import annotations

import numpy as np


def random_states(n: int, samples: int = 6, seed: int = 0) -> tuple[np.ndarray, ...]:
    """``(q, q', q'')`` of ``n`` joints at ``samples`` states: q in [-1.5, 1.5] rad, q' ~ N(0, 1), q'' ~ N(0, 3)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.5, 1.5, (samples, n)), rng.normal(0, 1, (samples, n)), rng.normal(0, 3, (samples, n))
