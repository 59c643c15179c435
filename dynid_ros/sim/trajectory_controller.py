"""The simulated robot as ros2_control shows it: a joint trajectory controller over the embedded robot.

What ``sim_node`` runs, without ROS:

- :class:`SimulatedTrajectoryController` steps the :class:`~dynid_ros.sim.simulator.Simulator` in real
  time (:meth:`~SimulatedTrajectoryController.steps_due`), and replaces its reference by each new
  trajectory starting from the MEASURED state, as ros2_controllers' joint_trajectory_controller does
  in closed loop (``set_point_before_trajectory_msg(time, state_current_)``): a trajectory built from
  the pose the robot reports starts seamlessly, however long the arm held before. Every new reference
  is checked against the robot's limits (URDF + config) at 1 kHz before it replaces the old one.
- :class:`GoalSupervision` is the FollowJointTrajectory goal's verdict (path tolerance while moving,
  goal tolerance at the end, goal time tolerance after it) and :func:`run_goal` the goal loop.
- :func:`start_pose`: where the simulated arm starts (:func:`config_start_pose` from the config alone).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dynid_ros.errors import ConfigError, TrajectoryError
from dynid_ros.excitation.limits import ExcitationLimits
from dynid_ros.execution.follow_joint_trajectory import (
    GOAL_TOLERANCE_VIOLATED,
    PATH_TOLERANCE_VIOLATED,
    JointToleranceSpec,
    tolerance_violation,
)
from dynid_ros.execution.robot_limits import CHECK_RATE_HZ, RobotLimits, check_motion, robot_limits
from dynid_ros.execution.trajectory_reference import TrajectoryReference
from dynid_ros.robot.model import RobotModel
from dynid_ros.sim.contacts import ContactReport

MAX_CATCH_UP_STEPS = 200
"""Most steps one call runs; further behind real time, the simulation slows down instead."""

RECHECK_TOLERANCE = 1e-3
"""Largest change [rad, rad/s] of the measured state while a trajectory is checked for it to be
installed from the new state unchecked (an arm holding still); beyond it, it is checked again."""


def start_pose(joints: Sequence[str], given: Sequence[float], config_start: object, robot: RobotLimits,
               given_name: str = "start_positions") -> np.ndarray:
    """The simulated arm's start pose, in ``joints`` order (the robot's).

    ``given`` (a node parameter) if not empty, else the config's ``simulation.start`` if set, else the
    middle of each joint's excitation position limits (URDF range narrowed by the config's
    ``excitation:`` limits and margins): a pose every excitation of the robot may start from.

    Raises:
        ConfigError: a pose with the wrong number of values, or outside the URDF position limits.
    """
    n = len(joints)
    source = given_name if len(given) else "simulation.start"
    value = given if len(given) else config_start
    if value is None:
        limits = robot.limits.position[robot.indices(tuple(joints), "simulated")]
        return 0.5 * (limits[:, 0] + limits[:, 1])
    try:
        q = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{source} must be {n} numbers, got {value!r}") from err
    if q.size != n:
        raise ConfigError(f"{source} has {q.size} values; the robot has {n} joints ({', '.join(joints)})")
    urdf = np.asarray(robot.model.position_limits, dtype=float)[robot.indices(tuple(joints), "simulated")]
    outside = np.flatnonzero(~((q >= urdf[:, 0]) & (q <= urdf[:, 1])))
    if outside.size:
        k = int(outside[0])
        raise ConfigError(f"{source}: joint {joints[k]} at {q[k]:.4f} is outside its URDF range "
                          f"[{urdf[k, 0]:.4f}, {urdf[k, 1]:.4f}]")
    return q


def config_start_pose(model: RobotModel, config: dict | None) -> np.ndarray:
    """:func:`start_pose` of ``model`` from its config alone (``simulation.start``, else the middle of the
    excitation limits), in ``model.joints`` order: what a simulator launched without a start pose (Gazebo's
    ``initial_value``, say) should start from."""
    config = config or {}
    return start_pose(model.joints, [], (config.get("simulation") or {}).get("start"), robot_limits(model, config))


class SimulatedTrajectoryController:
    """The simulator following one reference at a time; thread-safe (the node's timer steps it, goals read it)."""

    def __init__(self, simulator: object, robot: RobotLimits, q0: np.ndarray) -> None:
        self.sim, self.robot = simulator, robot
        self.joints = tuple(simulator.joints)
        simulator.reset(np.asarray(q0, dtype=float))
        self.reference = TrajectoryReference.hold(self.joints, 0.0, q0)
        self.last_sample = None
        self.steps = 0
        self._lock = threading.Lock()
        # What a trajectory must keep to be followed: the robot's position and velocity limits. Accelerations and
        # torques are not checked, as joint_trajectory_controller.cpp (4.19.0) checks neither: a stop blended from
        # the measured state briefly exceeds the acceleration limit and must still be executed; the excitation node
        # checks its own motion against every limit before sending it.
        unchecked = np.full(len(robot.joints), 1e12)  # ExcitationLimits takes finite bounds only
        self._accepted = dataclasses.replace(robot, limits=ExcitationLimits(
            robot.limits.position, robot.limits.velocity, unchecked), effort=np.full(len(robot.joints), np.inf),
            collision=None)

    def steps_due(self, elapsed_s: float) -> tuple[int, int]:
        """``(steps to run now, steps dropped)`` to be at ``elapsed_s`` of real time (at most
        :data:`MAX_CATCH_UP_STEPS`; the dropped ones are never run: the simulation slows down)."""
        due = int(elapsed_s / self.sim.timestep) - self.steps
        dropped = max(due - MAX_CATCH_UP_STEPS, 0)
        self.steps += dropped
        return max(min(due, MAX_CATCH_UP_STEPS), 0), dropped

    def step(self) -> object:
        """One simulator step following the reference; the sample (time, position, velocity, effort)."""
        with self._lock:
            sample = self.sim.step(*self.reference.sample(self.sim.time))
            self.last_sample = sample
        self.steps += 1
        return sample

    def measured(self) -> tuple[float, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``(time, (q, dq, 0))``: the measured state (the reference before the first step)."""
        with self._lock:
            return self._measured()

    def _measured(self) -> tuple[float, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        now, sample, zero = self.sim.time, self.last_sample, np.zeros(len(self.joints))
        if sample is None:
            return now, (self.reference.sample(now)[0], zero, zero.copy())
        return now, (sample.position.copy(), sample.velocity.copy(), zero)

    def follow(self, t0: float | None, names: Sequence[str], times: Sequence[float],
               positions: Sequence[Sequence[float]], velocities: Sequence[Sequence[float]],
               accelerations: Sequence[Sequence[float]]) -> float:
        """Follow a new trajectory from the measured state; returns the time it ends.

        The check runs off the lock (the simulation keeps stepping); the reference is then rebuilt from
        the state measured when it is installed (``t0`` None: it starts then), which must be the checked
        start state within :data:`RECHECK_TOLERANCE`, else it is checked again from there.

        A trajectory with no joint names or no points is rejected as joint_trajectory_controller rejects it
        (``validate_trajectory_msg``, ros2_controllers 4.19.0 joint_trajectory_controller.cpp lines 1378-1390):
        the running one goes on; to stop, send a trajectory to a hold.

        Raises:
            TrajectoryError: it does not fit this robot (joints, sizes, times) or, from the measured state
                to its end, it leaves the robot's position or velocity limits on a 1 kHz grid; the old reference
                then stays.
        """
        if not len(names):  # joint_trajectory_controller.cpp validate_trajectory_msg (4.19.0, line 1380)
            raise TrajectoryError("Empty joint names on incoming trajectory.")
        if not len(times):  # ... line 1386: rejected, the running trajectory goes on (no hold)
            raise TrajectoryError("Empty trajectory received.")
        args = (t0, names, times, positions, velocities, accelerations)
        now, start = self.measured()
        while True:
            candidate = self.reference.replace(now, *args, start=start)
            t = np.append(np.arange(now, candidate.end_time, 1.0 / CHECK_RATE_HZ), max(candidate.end_time, now))
            check_motion(self._accepted, self.joints, t, *candidate.sample_many(t))
            with self._lock:
                now, state = self._measured()
                if all(np.abs(a - b).max() <= RECHECK_TOLERANCE for a, b in zip(state[:2], start[:2])):
                    self.reference = self.reference.replace(now, *args, start=state)
                    return self.reference.end_time
            start = state  # the arm moved while the trajectory was checked (a running one): check again

    def hold(self) -> None:
        """Stop where the arm is (its measured position, as joint_trajectory_controller holds on cancel and abort:
        ``set_hold_position()``, joint_trajectory_controller.cpp lines 359, 397, 1168 of 4.19.0, which has no
        ``decelerate_on_cancel``)."""
        now, (q, _, _) = self.measured()
        with self._lock:
            self.reference = TrajectoryReference.hold(self.joints, now, q)

    def take_contacts(self) -> ContactReport | None:
        """The simulator's contact report since the last call (:meth:`~dynid_ros.sim.Simulator.take_contacts`);
        None: contacts off."""
        with self._lock:
            return self.sim.take_contacts()

    def tracking(self) -> tuple[float, object, np.ndarray, np.ndarray] | None:
        """``(time, last sample, q_ref, dq_ref)`` now, or None before the first step."""
        with self._lock:
            if self.last_sample is None:
                return None
            now = self.sim.time
            q_ref, dq_ref, _ = self.reference.sample(now)
            return now, self.last_sample, q_ref, dq_ref


@dataclass(frozen=True)
class GoalVerdict:
    """How a FollowJointTrajectory goal ends: ``outcome`` succeeded | aborted | canceled | preempted |
    closing (the node shuts down), with the result's error code and string."""

    outcome: str
    error_code: int = 0
    error_string: str = ""

    @property
    def success(self) -> bool:
        """Whether the goal succeeded."""
        return self.outcome == "succeeded"


@dataclass(frozen=True)
class GoalSupervision:
    """The checks of one goal as joint_trajectory_controller applies them (control_msgs/JointTolerance)."""

    joints: tuple[str, ...]
    path_tolerance: Sequence[JointToleranceSpec]
    goal_tolerance: Sequence[JointToleranceSpec]
    goal_time_tolerance: float
    end_time: float

    def verdict(self, now: float, position: np.ndarray, velocity: np.ndarray, q_ref: np.ndarray,
                dq_ref: np.ndarray) -> GoalVerdict | None:
        """The goal's end at ``now`` from the measured and reference states, or None while it runs."""
        error = position - q_ref
        violation = tolerance_violation(self.joints, self.path_tolerance, error, velocity - dq_ref)
        if violation is not None:
            return GoalVerdict("aborted", PATH_TOLERANCE_VIOLATED, violation)
        if now < self.end_time:
            return None
        violation = tolerance_violation(self.joints, self.goal_tolerance, error, velocity)
        if violation is None:
            return GoalVerdict("succeeded")
        if now >= self.end_time + self.goal_time_tolerance:
            return GoalVerdict("aborted", GOAL_TOLERANCE_VIOLATED, violation)
        return None


def run_goal(controller: SimulatedTrajectoryController, supervision: GoalSupervision,
             closing: Callable[[], bool], preempted: Callable[[], bool], cancel_requested: Callable[[], bool],
             period_s: float = 0.01, feedback: Callable[[tuple], None] | None = None) -> GoalVerdict:
    """Watch the running goal every ``period_s`` until it ends; the arm holds where it is on cancel, on a path
    tolerance violation and on shutdown (a preempting goal has already replaced the reference). ``feedback``
    gets :meth:`SimulatedTrajectoryController.tracking` each period while the goal runs: the desired state at the
    simulation's time, as joint_trajectory_controller sends its feedback (``desired = state_desired_``, sampled at
    its own trajectory time, each update of an active goal: joint_trajectory_controller.cpp lines 331-342 of
    4.19.0), so a client follows the controller's time however fast the simulation runs."""
    while True:
        time.sleep(period_s)
        if closing():
            controller.hold()
            return GoalVerdict("closing", error_string="sim_node shutting down")
        if preempted():
            return GoalVerdict("preempted", error_string="preempted by a new goal")
        if cancel_requested():
            controller.hold()
            return GoalVerdict("canceled")
        state = controller.tracking()
        if state is not None and feedback is not None:
            feedback(state)
        verdict = None if state is None else supervision.verdict(state[0], state[1].position, state[1].velocity,
                                                                 state[2], state[3])
        if verdict is not None:
            if verdict.error_code == PATH_TOLERANCE_VIOLATED:
                controller.hold()
            return verdict
