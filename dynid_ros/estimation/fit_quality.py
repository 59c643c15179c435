"""How well predicted torques fit measured ones: the relative error of Sousa & Cortesão 2014 eq. 84."""

from __future__ import annotations

import numpy as np


def relative_error(tau: np.ndarray, tau_hat: np.ndarray) -> tuple[float, list[float]]:
    """``||tau - tau_hat|| / ||tau||`` over all joints and samples, and per joint (Sousa & Cortesão 2014 eq. 84)."""
    total = float(np.linalg.norm(tau - tau_hat) / max(np.linalg.norm(tau), 1e-300))
    per_joint = [float(np.linalg.norm(tau[:, j] - tau_hat[:, j]) / max(np.linalg.norm(tau[:, j]), 1e-300))
                 for j in range(tau.shape[1])]
    return total, per_joint
