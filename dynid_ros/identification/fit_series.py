"""The per-sample fit an identification or a validation ends with: what the report plots and diagnoses.

Kept beside the estimate so that the human-readable report (:mod:`dynid_ros.reporting.identification_report`)
shows exactly the window, processing and prediction the numbers of ``report.json`` come from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class FitSeries:
    """Processed motion, recorded effort and predicted torque at the N samples of a window (n joints).

    Attributes:
        joints: joint names (columns).
        t: sample times [s] (N,).
        q, dq, ddq: filtered position [rad or m], velocity and acceleration (N, n).
        tau: recorded effort, unfiltered (the reference of the relative error) (N, n).
        tau_hat: torque predicted by the identified model (N, n).
        rows: the rows the estimate was fitted to, sample-major (N * n,) (joints below ``min_speed`` left out);
            None: all, or a fit to another torque than ``tau`` (the signs chosen for ``|tau|``).
    """

    joints: list[str]
    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    tau: np.ndarray
    tau_hat: np.ndarray
    rows: np.ndarray | None = None

    @property
    def residual(self) -> np.ndarray:
        """``tau - tau_hat`` (N, n)."""
        return self.tau - self.tau_hat
