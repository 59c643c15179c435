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


def shares(residual: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    """(n, n) ``share_jk`` of the module docstring (zero on the diagonal and for a residual j's own signals
    explain entirely)."""
    n = residual.shape[1]
    signals = [_signals(dq[:, k], ddq[:, k]) for k in range(n)]
    out = np.zeros((n, n))
    for j in range(n):
        own = np.column_stack([signals[j], np.ones(len(residual))])
        left = _unexplained(own, residual[:, j])
        if left <= 1e-12 * max(float(residual[:, j] @ residual[:, j]), 1e-300):
            continue
        for k in range(n):
            if k != j:
                out[j, k] = 1.0 - _unexplained(np.column_stack([own, signals[k]]), residual[:, j]) / left
    return out


def _signals(dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    """``[sign(q'), q', q'']``, each column scaled to unit RMS (a still joint gives zero columns)."""
    columns = np.column_stack([np.sign(dq), dq, ddq])
    rms = np.sqrt(np.mean(columns ** 2, axis=0))
    return columns / np.where(rms > 0, rms, 1.0)


def _unexplained(features: np.ndarray, target: np.ndarray) -> float:
    """Squared norm of ``target`` minus its least-squares projection on the columns of ``features``."""
    coef = np.linalg.lstsq(features, target, rcond=None)[0]
    rest = target - features @ coef
    return float(rest @ rest)
