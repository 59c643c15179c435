"""How well an identification's window excites the parameters: the condition number of its base regressor (plain
and with unit-norm columns) and, per joint, the range and peak speed covered, absolute and as a share of the
description's limits (``report.json`` ``excitation``; Sousa & Cortesão 2014 sec. 5.2.2)."""

from __future__ import annotations

import numpy as np

from dynid_ros.dynamics.conditioning import condition_number, scaled_condition_number
from dynid_ros.dynamics.row_chunks import RowChunks
from dynid_ros.estimation.estimators import compress
from dynid_ros.robot.model import RobotModel


def excitation_quality(model: RobotModel, w_b: np.ndarray | RowChunks, q: np.ndarray, dq: np.ndarray) -> dict:
    """The window's condition numbers (None when infinite: a base parameter not excited) from its base regressor
    ``w_b`` (the one the estimate used, not built again), and per joint the range and speed covered."""
    factor = compress(w_b, np.zeros(w_b.shape[0]))[0]  # R^T R = W^T W: the same singular values and column norms
    joints = []
    for j, joint in enumerate(model.joints):
        lo, hi = model.position_limits[j]
        span = float(np.ptp(q[:, j]))
        speed = float(np.abs(dq[:, j]).max())
        limit_v = float(model.velocity_limits[j])
        joints.append({"joint": joint, "min": float(q[:, j].min()), "max": float(q[:, j].max()),
                       "range_share": span / (hi - lo) if np.isfinite(hi - lo) and hi > lo else None,
                       "peak_speed": speed,
                       "speed_share": speed / limit_v if np.isfinite(limit_v) and limit_v > 0 else None})
    return {"condition_number": _finite(condition_number(factor)),
            "condition_number_scaled": _finite(scaled_condition_number(factor)), "joints": joints}


def _finite(value: float) -> float | None:
    """``value``, or None when it is infinite (JSON has no infinity)."""
    return value if np.isfinite(value) else None
