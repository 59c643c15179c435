"""How much independent information correlated residuals carry: the integrated autocorrelation time.

Least-squares uncertainties (Sousa & Cortesão 2014 eq. 81-82) assume white residuals. Real torque residuals
are not: model error, friction hysteresis and the filters make neighbouring samples alike. For a stationary
residual with autocorrelation ``rho(k)`` the variance of an average over ``n`` samples is
``sigma^2 tau_int / n`` with ``tau_int = 1 + 2 sum_k rho(k)``: the data behave like ``n / tau_int``
independent samples, and every covariance of the estimate is ``tau_int`` times the white-noise one.
The sum is truncated with Sokal's automatic window (the smallest ``M`` with ``M >= 5 tau_int(M)``).
"""

from __future__ import annotations

import numpy as np

NOISE_FLOOR = 1e-9
"""Smallest torque noise level, relative to the RMS torque: below it a residual is round-off (noise-free
data), not information (identifiability test, per-joint weights)."""
WINDOW_FACTOR = 5.0
"""Sokal's window: sum the autocorrelation up to lag ``M`` with ``M >= WINDOW_FACTOR * tau_int(M)``."""


def integrated_autocorrelation_time(residual: np.ndarray, present: np.ndarray | None = None) -> float:
    """``tau_int >= 1`` of one residual series (module docstring).

    ``present``: mask of the samples that are observations (e.g. rows left out of a fit are not); the
    autocorrelation at lag ``k`` is then averaged over the pairs of present samples ``k`` apart, tapered by
    ``(m - k) / m`` for ``m`` present samples (as the full series is by ``(n - k) / n``): one run of present
    samples gives what that run alone gives."""
    e = np.asarray(residual, dtype=float).reshape(-1)
    m = np.ones(e.size) if present is None else np.asarray(present, dtype=float).reshape(-1)
    count = int(m.sum())
    if count < 4:
        return 1.0
    e = (e - np.sum(e * m) / count) * m
    n = e.size
    if not np.any(e):
        return 1.0
    acf = _autocorrelation(e)
    if present is None:
        rho = acf / acf[0]
    else:
        pairs = _autocorrelation(m)
        usable = pairs > 0.5
        rho = np.zeros(n)
        rho[usable] = acf[usable] / pairs[usable] * np.clip(count - np.flatnonzero(usable), 0, None) / count
        rho /= rho[0]
    tau = 1.0 + 2.0 * np.cumsum(rho[1:])
    lags = np.arange(1, n)
    window = np.flatnonzero(lags >= WINDOW_FACTOR * tau)
    value = tau[window[0]] if window.size else tau[-1]
    return float(min(max(value, 1.0), count))


def _autocorrelation(x: np.ndarray) -> np.ndarray:
    """``sum_t x_t x_{t+k}`` for every lag ``k`` (FFT, zero-padded: no wrap-around)."""
    spectrum = np.fft.rfft(x, 2 * x.size)
    return np.fft.irfft(spectrum * np.conj(spectrum))[:x.size]


def residual_inflation(residual: np.ndarray, weights: np.ndarray | None = None,
                       present: np.ndarray | None = None, per_joint_inflation: np.ndarray | None = None) -> float:
    """Variance inflation of a (samples, n_dof) residual: each joint's ``tau_int``, averaged with the
    weight of that joint's share of the (weighted) squared residual. ``present``: (samples, n_dof) mask of
    the entries that are observations (the others, left out of the fit, count for nothing).
    ``per_joint_inflation``: each joint's inflation when already known (it replaces ``tau_int``)."""
    e = np.asarray(residual, dtype=float)
    mask = None if present is None else np.asarray(present, dtype=bool).reshape(e.shape)
    if mask is not None:
        e = np.where(mask, e, 0.0)
    per_joint = np.ones(e.shape[1]) if weights is None else np.asarray(weights, dtype=float)
    energy = np.sum((e * per_joint) ** 2, axis=0)
    if energy.sum() <= 0:
        return 1.0
    if per_joint_inflation is not None:
        taus = np.asarray(per_joint_inflation, dtype=float)
    else:
        taus = np.array([integrated_autocorrelation_time(e[:, j], None if mask is None else mask[:, j])
                         for j in range(e.shape[1])])
    return float(np.sum(taus * energy) / energy.sum())
