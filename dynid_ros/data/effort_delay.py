"""A per-joint delay of the recorded effort behind the recorded position and velocity.

Some drives report the effort (a motor current, a torque estimate) later than the encoder position and velocity of
the same sample: the torque of the motion at time ``t`` is recorded at ``t + d``. Fitted as is, the lag looks like a
negative rotor inertia (``fv q'(t - d) ~ fv q'(t) - fv d q''(t)``), which a physically consistent fit (rotor inertia
>= 0) cannot absorb. :func:`advance_effort` realigns the effort: ``effort_j(t) <- effort_j(t + d_j)`` (linear
interpolation in the stamps, so irregular samples work), dropping the samples at the end that have no effort
``d`` later (at the start with a negative ``d``).
"""

from __future__ import annotations

import numpy as np

from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.errors import DataError


def advance_effort(series: JointStateSeries, delays: np.ndarray) -> JointStateSeries:
    """``series`` with each joint's effort taken ``delays[j]`` seconds later (module docstring)."""
    delays = np.asarray(delays, dtype=float)
    if series.effort is None:
        raise DataError("the joint states have no effort (torque)")
    if delays.shape != (len(series.names),) or not np.all(np.isfinite(delays)):
        raise DataError(f"effort delays: expected {len(series.names)} finite values, got {delays.tolist()}")
    if not np.any(delays):
        return series
    t = np.asarray(series.t, dtype=float)
    keep = (t + delays.min() >= t[0]) & (t + delays.max() <= t[-1])
    if np.count_nonzero(keep) < 2:
        raise DataError(f"effort delays {delays.tolist()} s leave no sample of the {t[-1] - t[0]:.3f} s recording")
    effort = np.column_stack([np.interp(t[keep] + d, t, series.effort[:, j]) for j, d in enumerate(delays)])
    velocity = None if series.velocity is None else series.velocity[keep]
    return JointStateSeries(list(series.names), t[keep], series.position[keep], velocity, effort,
                            {**series.info, "effort_delay_s": delays.tolist()})
