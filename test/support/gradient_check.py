"""The slope of a computed function along a direction, with its own uncertainty: for checking an analytic gradient
without depending on round-off (the BLAS kernel, the machine).

A single central difference ``(f(x + h d) - f(x - h d)) / 2h`` divides the round-off of ``f`` by ``h``: the
excitation objective, ``log cond`` of a regressor whose condition number is ~1e4-1e5, carries ~1e-7 of round-off
that changes with the BLAS kernel (``OPENBLAS_CORETYPE``), i.e. ~1e-2 of slope at ``h = 1e-5``. And ``f`` may be
only piecewise smooth: a ``sign(q')`` column (Coulomb friction) switches wherever a grid sample's velocity crosses
zero, a jump every ~1e-4 along a random direction. :func:`directional_slope` takes many small differences over a
span, their median (a jump spoils a few of them, not the median) and the median's standard error from their spread:
the check is then "within the difference's own uncertainty", whatever the kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

MEDIAN_EFFICIENCY = 1.2533
"""Standard error of a median of ``n`` normal samples: ``1.2533 sigma / sqrt(n)``."""
MAD_TO_SIGMA = 1.4826
"""Standard deviation of normal samples from their median absolute deviation."""


@dataclass(frozen=True)
class Slope:
    value: float
    std: float

    def agrees_with(self, analytic: float, sigmas: float = 4.0, rel: float = 1e-3) -> bool:
        """Whether ``analytic`` lies within ``sigmas`` standard errors (or ``rel`` relative) of the slope."""
        return abs(analytic - self.value) <= max(sigmas * self.std, rel * abs(self.value))


def directional_slope(f: Callable[[np.ndarray], float], x: np.ndarray, direction: np.ndarray, span: float,
                      steps: int = 40) -> Slope:
    """The slope of ``f`` at ``x`` along ``direction`` from ``steps`` differences over ``[-span, span]``."""
    t = np.linspace(-span, span, steps + 1)
    values = np.array([f(x + s * direction) for s in t])
    slopes = np.diff(values) / np.diff(t)
    median = float(np.median(slopes))
    spread = MAD_TO_SIGMA * float(np.median(np.abs(slopes - median)))
    return Slope(median, MEDIAN_EFFICIENCY * spread / np.sqrt(slopes.size))
