"""Which joints look coupled: the residual of joint j explained by the motion of another joint k.

A fit that ignores a motor-to-joint coupling (a coupled wrist, recordings in motor coordinates; Wang et al.
2019 section II-B) leaves in joint j's residual the friction and rotor inertia of the motor of joint k:
terms in ``sign(q_k')``, ``q_k'`` and ``q_k''``. For every ordered pair (j, k) the share of the residual of j
that those three signals of k explain, beyond what j's own signals explain, is

    share_jk = 1 - ||r_j - P_{j,k} r_j||^2 / ||r_j - P_j r_j||^2

with ``P_j`` the least-squares projection on ``[sign(q_j'), q_j', q_j'', 1]`` and ``P_{j,k}`` on those and
k's. Noise and unmodelled effects of j itself give shares near 0; a coupling gives a large share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.estimation.estimators import triangular_factor

COUPLED_SHARE = 0.25
"""A pair whose shares are both at least this is reported as coupled."""


@dataclass(frozen=True)
class CoupledPair:
    """Joints ``a`` and ``b``: ``share_a`` of a's residual is explained by b's motion, ``share_b`` of b's by a's."""

    a: str
    b: str
    share_a: float
    share_b: float

    def message(self) -> str:
        """The console's warning for this pair, suggesting a ``coupling:`` config."""
        return (f"joints {self.a} and {self.b} look coupled: their residuals are {100 * self.share_a:.0f} % and "
                f"{100 * self.share_b:.0f} % explained by each other's motion (sign, velocity, acceleration); if "
                "motors drive both, give the robot a 'coupling:' config (motor-to-joint matrix)")


def coupled_pairs(residual: np.ndarray, dq: np.ndarray, ddq: np.ndarray, names: tuple[str, ...] | list[str],
                  threshold: float = COUPLED_SHARE) -> list[CoupledPair]:
    """The pairs of joints whose shares (module docstring) are both at least ``threshold`` (a coupling
    ``tau_m = C^T tau_j`` acts both ways), largest smaller share first.

    ``residual``, ``dq``, ``ddq``: (N, n) measured minus predicted torque and the motion of the n joints."""
    share = shares(residual, dq, ddq)
    n = residual.shape[1]
    out = [CoupledPair(str(names[j]), str(names[k]), float(share[j, k]), float(share[k, j]))
           for j in range(n) for k in range(j + 1, n) if min(share[j, k], share[k, j]) >= threshold]
    return sorted(out, key=lambda p: -min(p.share_a, p.share_b))


CHUNK_SAMPLES = 50_000
"""Samples stacked at a time into the compressed fit (a long recording is never expanded whole)."""


def shares(residual: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    """(n, n) ``share_jk`` of the module docstring (zero on the diagonal and for a residual j's own signals
    explain entirely).

    Every projection is a least-squares fit on columns of ``X = [signals of every joint, 1, residuals]``; they
    all follow from the triangular factor ``R`` of ``X`` (``R^T R = X^T X``: ``||X_S c - x_y||`` =
    ``||R_S c - R_y||``), accumulated ``CHUNK_SAMPLES`` at a time."""
    n = residual.shape[1]
    count = max(dq.shape[0], 1)  # mean squares without a temporary the size of the series
    scale = np.sqrt(np.column_stack([np.count_nonzero(dq, axis=0) / count, np.einsum("ij,ij->j", dq, dq) / count,
                                     np.einsum("ij,ij->j", ddq, ddq) / count]))
    scale = np.where(scale > 0, scale, 1.0)

    def blocks():
        for a in range(0, residual.shape[0], CHUNK_SAMPLES):
            b = slice(a, a + CHUNK_SAMPLES)
            signals = [np.column_stack([np.sign(dq[b, k]), dq[b, k], ddq[b, k]]) / scale[k] for k in range(n)]
            yield np.hstack([*signals, np.ones((signals[0].shape[0], 1)), residual[b]])

    factor = triangular_factor(blocks(), 4 * n + 1)
    rcond = np.finfo(float).eps * max(residual.shape[0], 1)  # lstsq's default cut-off for the samples themselves
    out = np.zeros((n, n))
    for j in range(n):
        own = [3 * j, 3 * j + 1, 3 * j + 2, 3 * n]
        target = factor[:, 3 * n + 1 + j]
        left = _unexplained(factor[:, own], target, rcond)
        if left <= 1e-12 * max(float(target @ target), 1e-300):
            continue
        for k in range(n):
            if k != j:
                out[j, k] = 1.0 - _unexplained(factor[:, own + [3 * k, 3 * k + 1, 3 * k + 2]], target, rcond) / left
    return out


def _unexplained(features: np.ndarray, target: np.ndarray, rcond: float) -> float:
    """Squared norm of ``target`` minus its least-squares projection on the columns of ``features``."""
    coef = np.linalg.lstsq(features, target, rcond=rcond)[0]
    rest = target - features @ coef
    return float(rest @ rest)
