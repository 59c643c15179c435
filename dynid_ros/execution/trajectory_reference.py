"""The reference a joint trajectory controller follows, as ros2_control's joint_trajectory_controller.

A trajectory_msgs/JointTrajectory (as arrays) starts at ``t0`` (its header stamp; zero means "on
receipt"); ``time_from_start`` of each point is relative to ``t0``. Before the first point the
reference goes from the state held when the trajectory arrived to that point; between points it is
a quintic (positions, velocities and accelerations given), a cubic (positions and velocities) or a
linear segment (positions only); after the last point it holds the last position. A new
trajectory replaces the old one, starting from the given state (the measured one, in ``sim_node``)
or else the current reference. A trajectory with no points stops and holds the current position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dynid_ros.errors import TrajectoryError


def segment(t: float, duration: float, p0: tuple[np.ndarray, np.ndarray, np.ndarray],
            p1: tuple[np.ndarray, np.ndarray, np.ndarray], order: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """State at ``t`` in [0, duration] of the polynomial from ``p0`` to ``p1`` (each (q, dq, ddq)).

    ``order`` 5: quintic matching positions, velocities, accelerations; 3: cubic matching positions and
    velocities; 1: linear in positions.
    """
    if duration <= 0.0:
        return tuple(a.copy() for a in p1)
    s = min(max(t, 0.0), duration)
    return _evaluate(s, coefficients(duration, p0, p1, order))


def coefficients(duration: float | np.ndarray, p0: tuple[np.ndarray, np.ndarray, np.ndarray],
                 p1: tuple[np.ndarray, np.ndarray, np.ndarray], order: int) -> tuple[np.ndarray, ...]:
    """``c0 .. c5`` of the segment polynomial :func:`segment` evaluates (``duration`` may be a column of durations)."""
    (q0, v0, a0), (q1, v1, a1) = p0, p1
    T = duration
    zero = np.zeros_like(q0 * T)
    if order == 1:
        return q0, (q1 - q0) / T, zero, zero, zero, zero
    if order == 3:
        c0, c1 = q0, v0
        c2 = (3 * (q1 - q0) - (2 * v0 + v1) * T) / T**2
        c3 = (-2 * (q1 - q0) + (v0 + v1) * T) / T**3
        c4 = c5 = zero
    else:
        c0, c1, c2 = q0, v0, 0.5 * a0
        h = q1 - q0 - v0 * T - 0.5 * a0 * T**2
        dv = v1 - v0 - a0 * T
        da = a1 - a0
        c3 = (10 * h - 4 * dv * T + 0.5 * da * T**2) / T**3
        c4 = (-15 * h + 7 * dv * T - da * T**2) / T**4
        c5 = (6 * h - 3 * dv * T + 0.5 * da * T**2) / T**5
    return c0, c1, c2, c3, c4, c5


def _evaluate(s: float | np.ndarray, c: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    c0, c1, c2, c3, c4, c5 = c
    q = c0 + s * (c1 + s * (c2 + s * (c3 + s * (c4 + s * c5))))
    dq = c1 + s * (2 * c2 + s * (3 * c3 + s * (4 * c4 + s * 5 * c5)))
    ddq = 2 * c2 + s * (6 * c3 + s * (12 * c4 + s * 20 * c5))
    return q, dq, ddq


@dataclass
class TrajectoryReference:
    """The current reference of the joints ``joints`` (in that order), sampled by time."""

    joints: tuple[str, ...]
    t0: float
    times: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    order: int

    @classmethod
    def hold(cls, joints: Sequence[str], t: float, q: np.ndarray) -> TrajectoryReference:
        """Stand still at ``q`` from time ``t``."""
        q = np.asarray(q, dtype=float).reshape(1, -1)
        zero = np.zeros_like(q)
        return cls(tuple(joints), t, np.zeros(1), q, zero, zero.copy(), 1)

    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Reference ``(q, dq, ddq)`` at time ``t``."""
        s = t - self.t0
        if s <= self.times[0]:
            return self.q[0].copy(), self.dq[0].copy(), self.ddq[0].copy()
        if s >= self.times[-1]:
            return self.q[-1].copy(), np.zeros(len(self.joints)), np.zeros(len(self.joints))
        i = int(np.searchsorted(self.times, s, side="right")) - 1
        p0 = (self.q[i], self.dq[i], self.ddq[i])
        p1 = (self.q[i + 1], self.dq[i + 1], self.ddq[i + 1])
        return segment(s - self.times[i], self.times[i + 1] - self.times[i], p0, p1, self.order)

    def sample_many(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`sample` at every time of ``t`` (N,), vectorized: three (N, n) arrays."""
        s = np.atleast_1d(np.asarray(t, dtype=float)) - self.t0
        n = len(self.joints)
        q, dq, ddq = (np.zeros((s.size, n)) for _ in range(3))
        before, after = s <= self.times[0], s >= self.times[-1]
        q[before], dq[before], ddq[before] = self.q[0], self.dq[0], self.ddq[0]
        q[after] = self.q[-1]
        mid = ~before & ~after
        if mid.any():
            i = np.searchsorted(self.times, s[mid], side="right") - 1
            duration = (self.times[i + 1] - self.times[i])[:, None]
            c = coefficients(duration, (self.q[i], self.dq[i], self.ddq[i]),
                             (self.q[i + 1], self.dq[i + 1], self.ddq[i + 1]), self.order)
            q[mid], dq[mid], ddq[mid] = _evaluate((s[mid] - self.times[i])[:, None], c)
        return q, dq, ddq

    @property
    def end_time(self) -> float:
        """Time the reference ends: its start plus its last point's time."""
        return self.t0 + float(self.times[-1])

    def replace(self, t_now: float, t0: float | None, names: Sequence[str], times: Sequence[float],
                positions: Sequence[Sequence[float]], velocities: Sequence[Sequence[float]],
                accelerations: Sequence[Sequence[float]],
                start: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> TrajectoryReference:
        """The reference after a new JointTrajectory arrives at ``t_now`` (``t0`` None: start now).

        Joint names may come in any order but must be exactly this controller's joints. Each point
        has positions; velocities and accelerations are used when every point has them. ``start``:
        the state ``(q, dq, ddq)`` the new reference starts from (and an empty trajectory holds): the
        measured one, as ros2_controllers' joint_trajectory_controller does (its
        ``set_point_before_trajectory_msg`` with the current state unless ``open_loop_control`` or
        ``interpolate_from_desired_state``); None: the current reference.

        Raises:
            TrajectoryError: unknown or missing joints, wrong point sizes, times not increasing.
        """
        start = self.sample(t_now) if start is None else tuple(np.asarray(a, dtype=float).copy() for a in start)
        if not len(times):
            return TrajectoryReference.hold(self.joints, t_now, start[0])
        names = list(names)
        unknown = [n for n in names if n not in self.joints]
        missing = [j for j in self.joints if j not in names]
        if unknown or missing or len(set(names)) != len(names):
            raise TrajectoryError(f"trajectory joints must be exactly {', '.join(self.joints)}; unknown: "
                                  f"{', '.join(unknown) or '-'}, missing: {', '.join(missing) or '-'}")
        order_idx = [names.index(j) for j in self.joints]
        n = len(names)

        def block(rows: Sequence[Sequence[float]], what: str) -> np.ndarray | None:
            if not all(len(r) == n for r in rows):
                if all(len(r) == 0 for r in rows):
                    return None
                raise TrajectoryError(f"every point needs {n} {what} (or none)")
            return np.array([[float(r[k]) for k in order_idx] for r in rows], dtype=float).reshape(-1, n)

        q = block(positions, "positions")
        if q is None:
            raise TrajectoryError("trajectory points have no positions")
        dq, ddq = block(velocities, "velocities"), block(accelerations, "accelerations")
        times_arr = np.asarray(times, dtype=float)
        if np.any(np.diff(times_arr) <= 0) or times_arr[0] < 0:
            raise TrajectoryError("time_from_start must be >= 0 and strictly increasing")
        if not np.all(np.isfinite(q)):
            raise TrajectoryError("trajectory positions must be finite")
        order = 5 if (dq is not None and ddq is not None) else 3 if dq is not None else 1
        dq = dq if dq is not None else np.zeros_like(q)
        ddq = ddq if ddq is not None else np.zeros_like(q)
        t0 = t_now if t0 is None else t0
        first = max(t_now - t0, 0.0)  # the start state sits at the arrival time
        if times_arr[0] > first + 1e-9:
            times_arr = np.concatenate([[first], times_arr])
            q, dq, ddq = (np.vstack([s[None, :], a]) for s, a in zip(start, (q, dq, ddq)))
            if order == 1:
                dq[0] = ddq[0] = 0.0
        return TrajectoryReference(self.joints, t0, times_arr, q, dq, ddq, order)
