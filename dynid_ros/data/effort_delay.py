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
from dynid_ros.data.signal_processing import Fetch
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


def advanced_rows(t: np.ndarray, fetch: Fetch, delays: np.ndarray) -> tuple[np.ndarray, Fetch]:
    """:func:`advance_effort` of samples read in order (``fetch``: their rows ``[a, b)``, e.g. a bag streamed by
    :class:`~dynid_ros.data.bag_stream.BagRows`): the kept stamps, and a fetch of the kept rows whose effort is
    interpolated ``delays`` later from the rows around it, read with them (the same interpolation as on the whole
    series: only the two bracketing samples enter)."""
    delays = np.asarray(delays, dtype=float)
    t = np.asarray(t, dtype=float)
    if not np.any(delays):
        return t, fetch
    keep = (t + delays.min() >= t[0]) & (t + delays.max() <= t[-1])
    count = int(np.count_nonzero(keep))
    if count < 2:
        raise DataError(f"effort delays {delays.tolist()} s leave no sample of the {t[-1] - t[0]:.3f} s recording")
    start = int(np.argmax(keep))  # the kept samples are consecutive: the stamps increase

    def kept(a: int, b: int) -> list[np.ndarray | None]:
        stamps = t[start + a:start + b]
        if not stamps.size:
            return fetch(start + a, start + b)
        lo = max(0, int(np.searchsorted(t, stamps[0] + delays.min(), side="right")) - 1)
        hi = min(t.size, int(np.searchsorted(t, stamps[-1] + delays.max(), side="left")) + 1)
        first, last = min(lo, start + a), max(hi, start + b)
        position, velocity, effort = fetch(first, last)
        rows = slice(start + a - first, start + b - first)
        shifted = np.column_stack([np.interp(stamps + d, t[first:last], effort[:, j]) for j, d in enumerate(delays)])
        return [position[rows], None if velocity is None else velocity[rows], shifted]

    return t[start:start + count], kept
