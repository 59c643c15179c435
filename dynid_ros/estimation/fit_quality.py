"""How well predicted torques fit measured ones: the relative error of Sousa & Cortesão 2014 eq. 84.

One definition for the identification, the validation, the report, the M(q)/g(q) stack and the studies:
``||reference - estimate|| / ||reference||``, 0 when both are zero and infinite when only the reference is (a
joint that carries no torque has no relative error to speak of; no floor hides it).
"""

from __future__ import annotations

import math

import numpy as np


def relative_norm(difference: np.ndarray, reference: np.ndarray) -> float:
    """``||difference|| / ||reference||`` (Frobenius); 0 when both are zero, inf when only ``reference`` is."""
    num, den = float(np.linalg.norm(difference)), float(np.linalg.norm(reference))
    if den > 0:
        return num / den
    return 0.0 if num == 0 else math.inf


def relative_error(tau: np.ndarray, tau_hat: np.ndarray) -> tuple[float, list[float]]:
    """``||tau - tau_hat|| / ||tau||`` over all joints and samples, and per joint (Sousa & Cortesão 2014 eq. 84)."""
    diff = tau - tau_hat
    return relative_norm(diff, tau), [relative_norm(diff[:, j], tau[:, j]) for j in range(tau.shape[1])]
