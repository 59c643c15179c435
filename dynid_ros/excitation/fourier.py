"""Finite Fourier series joint trajectories (Sousa & Cortesão 2014 section 5.2.2, eq. 78-80; Swevers 1997).

Per joint ``k`` with fundamental pulsation ``wf`` and ``L`` harmonics::

    q_k(t)   = sum_l a_kl / (wf l) sin(wf l t) - b_kl / (wf l) cos(wf l t) + q_k0     (eq. 78)
    q_k'(t)  = sum_l a_kl cos(wf l t) + b_kl sin(wf l t)                               (eq. 79)
    q_k''(t) = sum_l -a_kl wf l sin(wf l t) + b_kl wf l cos(wf l t)                    (eq. 80)

The series is periodic with period ``2 pi / wf``. ``q'`` and ``q''`` vanish at ``t = 0`` (and so at
every period) exactly when ``sum_l a_kl = 0`` and ``sum_l l b_kl = 0``: both are linear in the
coefficients, as are ``q``, ``q'`` and ``q''`` at any time, which :mod:`.optimizer` exploits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.errors import TrajectoryError


@dataclass(frozen=True)
class FourierTrajectory:
    """A periodic joint trajectory given by its Fourier coefficients.

    Attributes:
        joints: joint names, in the order of the rows of ``q0``, ``a`` and ``b``.
        wf: fundamental pulsation [rad/s].
        q0: (n,) offsets [rad or m] (the mean position over a period).
        a, b: (n, L) coefficients [rad/s] (eq. 78).
    """

    joints: tuple[str, ...]
    wf: float
    q0: np.ndarray
    a: np.ndarray
    b: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "joints", tuple(str(j) for j in self.joints))
        object.__setattr__(self, "wf", float(self.wf))
        for name in ("q0", "a", "b"):
            object.__setattr__(self, name, np.array(getattr(self, name), dtype=float))
        n = len(self.joints)
        if not (np.isfinite(self.wf) and self.wf > 0):
            raise TrajectoryError(f"wf must be a positive number of rad/s, got {self.wf}")
        if self.q0.shape != (n,):
            raise TrajectoryError(f"q0 must have one value per joint ({n}), got shape {self.q0.shape}")
        if self.a.ndim != 2 or self.a.shape[0] != n or self.a.shape[1] < 1 or self.b.shape != self.a.shape:
            raise TrajectoryError(f"a and b must both be (joints={n}, harmonics>=1) arrays, got {self.a.shape} "
                                  f"and {self.b.shape}")
        if not all(np.all(np.isfinite(x)) for x in (self.q0, self.a, self.b)):
            raise TrajectoryError("q0, a and b must be finite numbers")

    @property
    def n_dof(self) -> int:
        """Number of joints."""
        return len(self.joints)

    @property
    def harmonics(self) -> int:
        """Number of harmonics ``L``."""
        return int(self.a.shape[1])

    @property
    def period(self) -> float:
        """Period ``2 pi / wf`` [s]."""
        return 2.0 * np.pi / self.wf

    def evaluate(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions, velocities, accelerations at times ``t`` (N,): three (N, n) arrays (eq. 78-80)."""
        s, c, wl = _harmonic_terms(np.atleast_1d(np.asarray(t, dtype=float)), self.wf, self.harmonics)
        q = self.q0 + (s / wl) @ self.a.T - (c / wl) @ self.b.T
        dq = c @ self.a.T + s @ self.b.T
        ddq = (-s * wl) @ self.a.T + (c * wl) @ self.b.T
        return q, dq, ddq

    def scaled(self, factor: float) -> FourierTrajectory:
        """The same trajectory with its motion about ``q0`` scaled by ``factor`` (limits scale with it)."""
        return FourierTrajectory(self.joints, self.wf, self.q0, factor * self.a, factor * self.b)


def _harmonic_terms(t: np.ndarray, wf: float, harmonics: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``sin(wf l t)``, ``cos(wf l t)`` (N, L) and ``wf l`` (L,)."""
    wl = wf * np.arange(1, harmonics + 1)
    phase = np.outer(t, wl)
    return np.sin(phase), np.cos(phase), wl


def basis_matrices(t: np.ndarray, wf: float, harmonics: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Linear maps from one joint's ``[a_1..a_L, b_1..b_L]`` to ``q - q0``, ``q'``, ``q''`` at times ``t``.

    Returns three (N, 2L) matrices (eq. 78-80 written as matrix products).
    """
    s, c, wl = _harmonic_terms(np.asarray(t, dtype=float), wf, harmonics)
    return np.hstack([s / wl, -c / wl]), np.hstack([c, s]), np.hstack([-s * wl, c * wl])


REST_TOLERANCE = 1e-6
"""Largest velocity [rad/s] or acceleration [rad/s^2] at t = 0 accepted as 'at rest'."""


def rest_residual(trajectory: FourierTrajectory) -> tuple[np.ndarray, np.ndarray]:
    """Velocity and acceleration at ``t = 0`` (and every period), each (n,): zero for a start at rest."""
    _, dq, ddq = trajectory.evaluate(np.zeros(1))
    return dq[0], ddq[0]
