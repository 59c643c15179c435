"""The ``action`` mode of ``excitation_node``: control_msgs/FollowJointTrajectory without control_msgs.

Everything here is plain Python so it is tested where control_msgs is not installed; the node
passes the real message classes in. :func:`build_goal_spec` turns an execution profile into
waypoints and tolerances, :func:`fill_goal` writes them into a ``FollowJointTrajectory.Goal``,
:class:`GoalTracker` follows one goal (response, result, cancel) and :func:`interpret_result`
checks both the goal status and the result's ``error_code`` (a controller may report SUCCEEDED
with a non-zero error code, or ABORTED with code 0). :func:`tolerance_violation` is the check a
server applies (``sim_node``'s action server uses it).

Constants mirror action_msgs/msg/GoalStatus and control_msgs/action/FollowJointTrajectory (Result).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from types import ModuleType

import numpy as np

from dynid_ros.execution.trajectory_execution import ControllerError, ExecutionProfile, trajectory_samples


class GoalStatus(IntEnum):
    """action_msgs/msg/GoalStatus."""

    UNKNOWN = 0
    ACCEPTED = 1
    EXECUTING = 2
    CANCELING = 3
    SUCCEEDED = 4
    CANCELED = 5
    ABORTED = 6


ERROR_CODES: dict[int, str] = {
    0: "SUCCESSFUL",
    -1: "INVALID_GOAL",
    -2: "INVALID_JOINTS",
    -3: "OLD_HEADER_TIMESTAMP",
    -4: "PATH_TOLERANCE_VIOLATED",
    -5: "GOAL_TOLERANCE_VIOLATED",
}
"""control_msgs/action/FollowJointTrajectory Result.error_code values."""

SUCCESSFUL = 0
PATH_TOLERANCE_VIOLATED = -4
GOAL_TOLERANCE_VIOLATED = -5


def load_control_msgs() -> ModuleType:
    """``control_msgs.action``, or ControllerError saying how to get it."""
    try:
        import control_msgs.action as action
    except ImportError as err:
        raise ControllerError("mode 'action' needs control_msgs (not importable: install ros-$ROS_DISTRO-control-msgs) "
                              "or use mode 'topic' / 'stream'") from err
    return action


@dataclass(frozen=True)
class JointToleranceSpec:
    """control_msgs/msg/JointTolerance: 0 = the controller's default, negative = no limit."""

    name: str
    position: float = 0.0
    velocity: float = 0.0
    acceleration: float = 0.0


@dataclass
class GoalSpec:
    """A FollowJointTrajectory goal as arrays: waypoints after the start and tolerances."""

    joints: tuple[str, ...]
    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    path_tolerance: list[JointToleranceSpec] = field(default_factory=list)
    goal_tolerance: list[JointToleranceSpec] = field(default_factory=list)
    goal_time_tolerance: float = 0.0


def build_goal_spec(profile: ExecutionProfile, point_rate_hz: float,
                    path_position_tolerance: float | Sequence[float] = 0.0,
                    goal_position_tolerance: float = 0.0, goal_velocity_tolerance: float = 0.0,
                    goal_time_tolerance: float = 0.5) -> GoalSpec:
    """Waypoints of ``profile`` at ``point_rate_hz`` with tolerances (0: the controller's).

    ``path_position_tolerance``: one value for every joint or one per joint (profile order).
    """
    t, q, dq, ddq = trajectory_samples(profile, point_rate_hz)
    joints = tuple(profile.joints)
    path_tol = np.broadcast_to(np.asarray(path_position_tolerance, dtype=float), (len(joints),))
    path = [JointToleranceSpec(j, position=float(v)) for j, v in zip(joints, path_tol)] if np.any(path_tol) else []
    goal = ([JointToleranceSpec(j, position=goal_position_tolerance, velocity=goal_velocity_tolerance) for j in joints]
            if goal_position_tolerance or goal_velocity_tolerance else [])
    return GoalSpec(joints, t, q, dq, ddq, path, goal, float(goal_time_tolerance))


def seconds_to_duration(seconds: float, duration_type: Callable[..., object]) -> object:
    """builtin_interfaces/Duration (``sec``, ``nanosec``) of ``seconds`` >= 0."""
    sec = int(math.floor(seconds))
    nanosec = int(round((seconds - sec) * 1e9))
    if nanosec >= 1_000_000_000:
        sec, nanosec = sec + 1, nanosec - 1_000_000_000
    return duration_type(sec=sec, nanosec=nanosec)


def fill_trajectory(trajectory: object, joints: Sequence[str], t: np.ndarray, q: np.ndarray, dq: np.ndarray,
                    ddq: np.ndarray, point_type: Callable[..., object], duration_type: Callable[..., object]) -> object:
    """Fill a trajectory_msgs/JointTrajectory (header stamp left at zero: start on receipt)."""
    trajectory.joint_names = list(joints)
    trajectory.points = [point_type(positions=q[i].tolist(), velocities=dq[i].tolist(), accelerations=ddq[i].tolist(),
                                    time_from_start=seconds_to_duration(float(t[i]), duration_type))
                         for i in range(len(t))]
    return trajectory


def fill_goal(goal: object, spec: GoalSpec, point_type: Callable[..., object], tolerance_type: Callable[..., object],
              duration_type: Callable[..., object]) -> object:
    """Write ``spec`` into a FollowJointTrajectory.Goal (fields ``trajectory``, ``path_tolerance``,
    ``goal_tolerance``, ``goal_time_tolerance``)."""
    fill_trajectory(goal.trajectory, spec.joints, spec.t, spec.q, spec.dq, spec.ddq, point_type, duration_type)
    goal.path_tolerance = [tolerance_type(name=s.name, position=s.position, velocity=s.velocity,
                                          acceleration=s.acceleration) for s in spec.path_tolerance]
    goal.goal_tolerance = [tolerance_type(name=s.name, position=s.position, velocity=s.velocity,
                                          acceleration=s.acceleration) for s in spec.goal_tolerance]
    goal.goal_time_tolerance = seconds_to_duration(spec.goal_time_tolerance, duration_type)
    return goal


@dataclass(frozen=True)
class ActionOutcome:
    """The end of a goal: ``success`` only when the status is SUCCEEDED and the error code SUCCESSFUL."""

    success: bool
    message: str


def interpret_result(status: int, error_code: int, error_string: str = "") -> ActionOutcome:
    """Judge a FollowJointTrajectory result by both its goal status and its ``error_code``."""
    try:
        status_name = GoalStatus(status).name
    except ValueError:
        status_name = f"status {status}"
    code_name = ERROR_CODES.get(error_code, f"error code {error_code}")
    detail = f" ({error_string})" if error_string else ""
    if status == GoalStatus.SUCCEEDED and error_code == SUCCESSFUL:
        return ActionOutcome(True, "trajectory executed")
    if status == GoalStatus.SUCCEEDED:
        return ActionOutcome(False, f"controller reported SUCCEEDED but {code_name}{detail}")
    if status == GoalStatus.CANCELED:
        return ActionOutcome(False, f"goal canceled{detail}")
    return ActionOutcome(False, f"goal {status_name}: {code_name}{detail}")


class GoalPhase(str, Enum):
    """Where one goal is."""

    SENDING = "sending"
    ACTIVE = "active"
    CANCELING = "canceling"
    FINISHED = "finished"


@dataclass
class GoalTracker:
    """One goal's life seen by the client: send, response, result, cancel.

    The node calls :meth:`on_goal_response` and :meth:`on_result` from the futures' callbacks, and
    :meth:`request_cancel` on ``~/stop`` or shutdown; that returns whether a cancel request must be
    sent now (the goal is accepted and not yet finished) or later (still sending: the response
    callback then returns ``cancel_now`` True).
    """

    phase: GoalPhase = GoalPhase.SENDING
    cancel_wanted: bool = False
    outcome: ActionOutcome | None = None

    def on_goal_response(self, accepted: bool) -> bool:
        """Record the server's answer; returns True when the accepted goal must be canceled at once."""
        if self.phase is not GoalPhase.SENDING:
            return False
        if not accepted:
            self.phase = GoalPhase.FINISHED
            self.outcome = ActionOutcome(False, "goal rejected by the controller")
            return False
        self.phase = GoalPhase.ACTIVE
        if self.cancel_wanted:
            self.phase = GoalPhase.CANCELING
            return True
        return False

    def request_cancel(self) -> bool:
        """Ask to stop; returns True when the node must send the cancel request now."""
        if self.phase is GoalPhase.FINISHED:
            return False
        self.cancel_wanted = True
        if self.phase is GoalPhase.ACTIVE:
            self.phase = GoalPhase.CANCELING
            return True
        return False

    def on_result(self, status: int, error_code: int, error_string: str = "") -> ActionOutcome:
        """The goal's result arrived: its outcome (a failure after a stop request reads as stopped on request)."""
        self.phase = GoalPhase.FINISHED
        outcome = interpret_result(status, error_code, error_string)
        if self.cancel_wanted and not outcome.success:
            outcome = ActionOutcome(False, f"stopped on request ({outcome.message})")
        self.outcome = outcome
        return outcome

    def on_error(self, message: str) -> ActionOutcome:
        """The goal or result future failed (server died, transport error)."""
        self.phase = GoalPhase.FINISHED
        self.outcome = ActionOutcome(False, message)
        return self.outcome

    @property
    def finished(self) -> bool:
        """Whether the goal has ended."""
        return self.phase is GoalPhase.FINISHED


def tolerance_violation(joints: Sequence[str], tolerances: Sequence[JointToleranceSpec],
                        position_error: np.ndarray, velocity_error: np.ndarray | None = None,
                        acceleration_error: np.ndarray | None = None,
                        default_position: float = 0.0) -> str | None:
    """The first joint outside its tolerance, as a message, or None.

    A tolerance of 0 means ``default_position`` (0 there: not checked), negative means no limit
    (control_msgs/JointTolerance). Tolerances name their joints; unnamed joints use the default.
    """
    by_name = {s.name: s for s in tolerances}
    for k, joint in enumerate(joints):
        spec = by_name.get(joint, JointToleranceSpec(joint))
        checks = (("position", spec.position or default_position, position_error),
                  ("velocity", spec.velocity, velocity_error), ("acceleration", spec.acceleration, acceleration_error))
        for name, limit, error in checks:
            if error is None or limit <= 0:
                continue
            if abs(float(error[k])) > limit:
                return f"joint {joint}: {name} error {float(error[k]):.4g} exceeds tolerance {limit:.4g}"
    return None


def tolerances_from_message(items: Sequence[object]) -> list[JointToleranceSpec]:
    """control_msgs/JointTolerance messages (duck typed) as specs."""
    return [JointToleranceSpec(str(s.name), float(s.position), float(s.velocity), float(s.acceleration)) for s in items]
