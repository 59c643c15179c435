"""Is a joint's residual noise, or a torque the model lacks? Per-joint fit diagnostics.

A model that is right up to noise leaves a residual that no smooth function of the joint's own position or
velocity explains. A spring, a cable, a tool or a sensor offset leaves one that does. For each joint the
residual ``e`` is regressed on a low-order series in the joint's scaled position (``x, x^2, x^3``) and, apart,
in its scaled velocity (``v, v^2, v^3``), each with a constant; the share of ``e``'s variance the series
explains is ``s``. Neighbouring samples of a filtered residual are alike, so the significance of ``s`` is
judged with the effective sample count ``N / tau_int`` (:func:`dynid_ros.estimation.residual_model.
integrated_autocorrelation_time`) in the F test of a regression with ``p`` regressors:
``F = (s / p) / ((1 - s) / (N_eff - p - 1))``. A joint is *structured* when the share is both significant
(p-value below :data:`SIGNIFICANCE`) and the larger part of the residual (at least :data:`STRUCTURED_SHARE` of
its variance): significance alone would flag every joint of a long recording, and a smaller share is a slight
bias of the fitted terms (e.g. Coulomb vs viscous friction traded against each other), not a missing torque.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from dynid_ros.estimation.fit_quality import relative_norm
from dynid_ros.estimation.residual_model import integrated_autocorrelation_time

STRUCTURED_SHARE = 0.5
"""Least share of a joint's residual variance a position or velocity series must explain to flag the joint: the
structured part is the larger part of the residual."""
SIGNIFICANCE = 0.01
"""Largest p-value (F test with the effective sample count) of a flagged share."""
SERIES_ORDER = 3
"""Order of the polynomial series in the scaled position or velocity."""


@dataclass
class JointDiagnostics:
    """One joint's fit: relative error ``||e|| / ||tau||``, ``R^2 = 1 - ||e||^2 / ||tau - mean(tau)||^2``,
    residual autocorrelation time ``tau_int`` [samples], the shares of the residual variance explained by its
    position and velocity series, and whether the residual is structured (and by what)."""

    joint: str
    relative_error: float
    r2: float
    autocorrelation_time: float
    position_share: float
    velocity_share: float
    structured: bool
    explained_by: str | None

    def to_dict(self) -> dict:
        """The joint's diagnostics as a dict."""
        return asdict(self)


def explained_share(residual: np.ndarray, signal: np.ndarray, order: int = SERIES_ORDER) -> float:
    """Share of ``residual``'s variance explained by a polynomial of ``order`` in ``signal`` (scaled to [-1, 1])."""
    e = np.asarray(residual, dtype=float) - np.mean(residual)
    x = np.asarray(signal, dtype=float)
    span = float(np.ptp(x))
    if span <= 0 or not np.any(e):
        return 0.0
    x = 2.0 * (x - x.min()) / span - 1.0
    basis = np.column_stack([np.ones_like(x)] + [x**k for k in range(1, order + 1)])
    coefficients = np.linalg.lstsq(basis, e, rcond=None)[0]
    explained = basis @ coefficients
    return float(np.clip(np.sum(explained**2) / np.sum(e**2), 0.0, 1.0))


def share_p_value(share: float, n_effective: float, regressors: int = SERIES_ORDER) -> float:
    """p-value of an explained share under white residuals with ``n_effective`` independent samples (F test)."""
    from scipy.stats import f as f_distribution  # scipy: deferred, only the report needs it

    dof = n_effective - regressors - 1.0
    if dof <= 0:
        return 1.0
    if share >= 1.0:
        return 0.0
    statistic = (share / regressors) / ((1.0 - share) / dof)
    return float(f_distribution.sf(statistic, regressors, dof))


def joint_diagnostics(joints: list[str], tau: np.ndarray, tau_hat: np.ndarray, q: np.ndarray,
                      dq: np.ndarray) -> list[JointDiagnostics]:
    """The diagnostics of every joint (module docstring); arrays are (samples, joints)."""
    out = []
    for j, joint in enumerate(joints):
        e = tau[:, j] - tau_hat[:, j]
        centred = tau[:, j] - np.mean(tau[:, j])
        r2 = 1.0 - float(np.sum(e**2)) / max(float(np.sum(centred**2)), 1e-300)
        tau_int = integrated_autocorrelation_time(e)
        n_eff = e.size / tau_int
        shares = {"position": explained_share(e, q[:, j]), "velocity": explained_share(e, dq[:, j])}
        by = max(shares, key=shares.get)
        structured = shares[by] >= STRUCTURED_SHARE and share_p_value(shares[by], n_eff) < SIGNIFICANCE
        out.append(JointDiagnostics(joint, relative_norm(e, tau[:, j]), r2,
                                    tau_int, shares["position"], shares["velocity"], bool(structured),
                                    by if structured else None))
    return out
