"""Executing an excitation on a robot: pre-move checks and the progress state machine.

What ``excitation_node`` does, without ROS: before moving it needs fresh joint states naming every
joint of the robot (:func:`current_positions`), and the whole motion from the current pose within the
robot's own limits (:func:`prepare_profile`); then one :class:`ExcitationRun` tracks the state
``idle -> approaching -> running -> done`` (or ``aborted`` from anywhere) and the progress 0..1 that
the node publishes as JSON on ``~/status`` (:meth:`ExcitationRun.status_json`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

from dynid_ros.errors import DataError, DynidError, TrajectoryError
from dynid_ros.excitation.trajectory_file import ExcitationTrajectory
from dynid_ros.execution.execution_profile import ExecutionProfile
from dynid_ros.execution.robot_limits import RobotLimits, checked_profile

MODES = ("action", "topic", "stream")
"""``action``: control_msgs/FollowJointTrajectory; ``topic``: trajectory_msgs/JointTrajectory on
``/<controller>/joint_trajectory``; ``stream``: std_msgs/Float64MultiArray positions on
``/<controller>/commands`` (a forward command controller)."""


class ControllerError(DynidError):
    """The controller cannot be reached (no subscriber, no action server) or refused the motion."""


class ExecutionState(str, Enum):
    """The ``state`` field of ``~/status``."""

    IDLE = "idle"
    APPROACHING = "approaching"
    RUNNING = "running"
    DONE = "done"
    ABORTED = "aborted"


ACTIVE_STATES = (ExecutionState.APPROACHING, ExecutionState.RUNNING)


def current_positions(joints: Sequence[str], names: Sequence[str], positions: Sequence[float],
                      age_s: float | None, max_age_s: float, topic: str = "/joint_states",
                      whose: str = "the trajectory") -> np.ndarray:
    """Positions of ``joints`` (in that order) from the last JointState, indexed by name.

    Args:
        joints: the joints needed (the trajectory's, or every joint of the robot); ``whose`` says which.
        names, positions: the message's ``name`` and ``position`` fields.
        age_s: seconds since the message arrived, None if none arrived.
        max_age_s: older messages are stale.

    Raises:
        DataError: no message, a stale one, a joint of the trajectory absent from it (extra joints, e.g.
            gripper fingers, are ignored), mismatched field lengths, or a non-finite position.
    """
    if age_s is None:
        raise DataError(f"no {topic} received: cannot start from an unknown pose")
    if age_s > max_age_s:
        raise DataError(f"{topic} is stale: last message {age_s:.2f} s old (limit {max_age_s:.2f} s)")
    if len(names) != len(positions):
        raise DataError(f"{topic}: {len(names)} names but {len(positions)} positions")
    index = {name: i for i, name in enumerate(names)}
    missing = [j for j in joints if j not in index]
    if missing:
        raise DataError(f"{topic} does not name joint(s) {', '.join(missing)} of {whose} "
                        f"(it names: {', '.join(names) or 'nothing'})")
    q = np.array([float(positions[index[j]]) for j in joints])
    bad = [j for j, v in zip(joints, q) if not math.isfinite(v)]
    if bad:
        raise DataError(f"{topic}: position of joint {bad[0]} is not finite")
    return q


def prepare_profile(excitation: ExcitationTrajectory, q_start: np.ndarray, cycles: int, rate_hz: float,
                    robot: RobotLimits,
                    held: np.ndarray | None = None) -> ExecutionProfile:
    """The motion to send: the excitation approached from ``q_start``, checked against the robot's limits.

    ``excitation`` is a loaded trajectory file; ``robot`` the robot's limits
    (:func:`dynid_ros.execution.robot_limits.robot_limits`), the authority: the file's ``limits:`` only
    narrow them. ``held``: every robot joint's current position (robot order). Raises TrajectoryError
    when a trajectory joint is not the robot's, or the profile (approach, periods, hold) violates a
    limit on the ``rate_hz`` grid (:func:`dynid_ros.execution.robot_limits.checked_profile`).
    """

    if cycles < 1:
        raise TrajectoryError(f"cycles must be >= 1, got {cycles}")
    return checked_profile(excitation, robot, q_start, cycles, rate_hz, held=held)


def trajectory_samples(profile: ExecutionProfile, point_rate_hz: float
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Waypoints ``(t, q, dq, ddq)`` for a JointTrajectory: the profile at ``point_rate_hz`` after ``t = 0``.

    The point at ``t = 0`` is the current pose and is left out (a controller starts there anyway); the
    last point is the end of the profile. Between points the controller interpolates quintically.
    """
    if not point_rate_hz > 0:
        raise TrajectoryError(f"point rate must be positive, got {point_rate_hz}")
    t, q, dq, ddq = profile.sample_at_rate(point_rate_hz)
    keep = t > 1e-9
    t, q, dq, ddq = t[keep], q[keep], dq[keep], ddq[keep]
    if t.size == 0 or t[-1] < profile.duration - 1e-9:
        q_end, dq_end, ddq_end = profile.sample(profile.duration)
        t = np.append(t, profile.duration)
        q, dq, ddq = (np.vstack([a, np.atleast_2d(b)]) for a, b in ((q, q_end), (dq, dq_end), (ddq, ddq_end)))
    return t, q, dq, ddq


@dataclass
class ExcitationRun:
    """Progress of one execution of a profile, by elapsed time since it started.

    ``approaching`` before ``profile.t_excitation_start``, ``running`` until the profile ends, then
    ``done`` once :meth:`finish` confirms it (action result, or the end time plus a settle time);
    :meth:`abort` ends it from any state. ``progress`` is the elapsed fraction of the whole profile.
    """

    profile: ExecutionProfile | None = None
    t_start: float | None = None
    state: ExecutionState = ExecutionState.IDLE
    message: str = ""
    _progress: float = 0.0

    def start(self, profile: ExecutionProfile, t_now: float, message: str = "") -> None:
        """Start executing ``profile`` at ``t_now``: approaching."""
        self.profile, self.t_start, self.message, self._progress = profile, t_now, message, 0.0
        self.state = ExecutionState.APPROACHING

    def update(self, t_now: float) -> ExecutionState:
        """Advance ``approaching -> running`` with time; other states only change by events."""
        if self.state in ACTIVE_STATES and self.profile is not None and self.t_start is not None:
            elapsed = t_now - self.t_start
            self._progress = float(min(max(elapsed / max(self.profile.duration, 1e-9), 0.0), 1.0))
            if elapsed >= self.profile.t_excitation_start:
                self.state = ExecutionState.RUNNING
        return self.state

    def elapsed_past_end(self, t_now: float) -> float:
        """Seconds since the profile's end (negative before it)."""
        if self.profile is None or self.t_start is None:
            return -math.inf
        return t_now - self.t_start - self.profile.duration

    def finish(self, message: str = "") -> None:
        """End an active run as done."""
        if self.state in ACTIVE_STATES:
            self.state, self._progress, self.message = ExecutionState.DONE, 1.0, message

    def abort(self, message: str) -> None:
        """End the run as aborted, with ``message``."""
        self.state, self.message = ExecutionState.ABORTED, message

    @property
    def active(self) -> bool:
        """Whether the run is approaching or running."""
        return self.state in ACTIVE_STATES

    @property
    def progress(self) -> float:
        """Share of the profile's duration elapsed, 0 to 1."""
        return self._progress

    def status(self) -> dict:
        """State, progress, message and (with a profile) duration, as published."""
        status = {"state": self.state.value, "progress": round(self.progress, 4), "message": self.message}
        if self.profile is not None:
            status["duration"] = round(float(self.profile.duration), 3)
        return status

    def status_json(self) -> str:
        """The :meth:`status` as JSON text."""
        return json.dumps(self.status())
