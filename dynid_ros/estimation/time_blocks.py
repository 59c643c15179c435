"""The contiguous time blocks every data-driven choice cross-validates on (the filter cutoff, position-dependent
terms, the wide-prior check, effort gains, the comparison with least squares): blocked cross-validation for dependent
data, where neighbouring samples are alike and a random split would score the noise as signal (Roberts et al. 2017,
Bergmeir & Benítez 2012)."""

from __future__ import annotations

import numpy as np

BLOCKS = 4
"""Contiguous time blocks of the cross-validation."""


def time_blocks(n_samples: int) -> np.ndarray:
    """The block (0 .. ``BLOCKS - 1``) of each of ``n_samples`` samples: ``BLOCKS`` contiguous runs of equal length."""
    return np.minimum(np.arange(n_samples) * BLOCKS // max(n_samples, 1), BLOCKS - 1)
