"""``sim_node``: the embedded MuJoCo robot (:class:`dynid_ros.sim.Simulator`) as a ros2_control-like robot.

ROS interface:

Parameters:
    urdf_path (str) or robot_description (str, URDF text): the robot ('' both: a message on
        ``robot_description_topic`` if set, else the config's ``robot.urdf``); meshes are not needed; its
        gripper and mimic joints are locked (:func:`dynid_ros.robot.model.load_model`).
    xacro_args (str[]): ``name:=value`` arguments of a ``.urdf.xacro`` urdf_path.
    rate_hz (double): control and publishing rate, one simulator step per message (1000).
    controller_name (str): ``joint_trajectory_controller``.
    initial_positions (double[]): start pose ([] = the middle of each joint's range).
    truth (str): ``config`` (the ``simulation:`` section of the robot config: perturbed inertials,
        friction, armature, sensor noise and bias) | ``nominal`` (exactly the URDF, no sensor errors).
        The section's ``controller:`` gains are used in both cases.
    seed (int): seed of the perturbation and the noise (-1: the config's).
    effort_noise (double): torque sensor noise standard deviation [N m] (-1: the truth's).
    joint_states_topic (str): ``/joint_states``.

Publishes:
    ``joint_states_topic`` (sensor_msgs/JointState: position, velocity, effort), stamped with the
    simulation time added to the node clock at start, so stamps are exactly uniform.

Subscribes:
    ``/<controller_name>/joint_trajectory`` (trajectory_msgs/JointTrajectory), followed like
    ros2_control's joint_trajectory_controller (:mod:`dynid_ros.execution.trajectory_reference`): times from the
    header stamp (zero: on receipt), quintic/cubic/linear interpolation, a new trajectory replaces the
    old one, an empty one holds the current position; joints must be exactly the robot's. A trajectory
    whose reference leaves the robot's limits (URDF + the config's ``excitation:`` margins and
    accelerations, checked at 1 kHz by :func:`dynid_ros.execution.robot_limits.check_motion`) is refused.

Action server (when control_msgs is importable):
    ``/<controller_name>/follow_joint_trajectory`` (control_msgs/FollowJointTrajectory), with path and
    goal tolerances (:func:`dynid_ros.execution.follow_joint_trajectory.tolerance_violation`), cancel and preemption.
    Goals naming other joints than the robot's are rejected; on cancel or abort the arm holds where it is.

The simulation runs in real time: a 2 ms timer runs every step that is due by the wall clock.
"""

from __future__ import annotations

import threading
import time

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from dynid_ros.errors import ConfigError, DynidError
from dynid_ros.excitation.limits import CHECK_RATE_HZ
from dynid_ros.execution.follow_joint_trajectory import (
    GOAL_TOLERANCE_VIOLATED,
    PATH_TOLERANCE_VIOLATED,
    tolerance_violation,
    tolerances_from_message,
)
from dynid_ros.execution.robot_limits import check_motion, robot_limits
from dynid_ros.execution.trajectory_reference import TrajectoryReference
from dynid_ros.ros.common import (
    ROBOT_DESCRIPTION_PARAMS,
    Param,
    declare_parameters,
    robot_source,
    robot_urdf,
    run,
    xacro_args,
)
from dynid_ros.sim import Gains, GroundTruth, Simulator

NAME = "sim_node"

PARAMETERS = (
    Param("urdf_path", "", "robot URDF file ('' and no robot_description: the config's robot.urdf)"),
    Param("robot_description", "", "robot URDF text (instead of urdf_path)"),
    *ROBOT_DESCRIPTION_PARAMS,
    Param("rate_hz", 1000.0, "simulation and /joint_states rate [Hz]"),
    Param("controller_name", "joint_trajectory_controller", "name of the simulated trajectory controller"),
    Param("initial_positions", [], "start pose, one value per joint ([] = middle of each joint's range)"),
    Param("truth", "config", "config (simulation section of the robot config) | nominal (the URDF exactly)"),
    Param("seed", -1, "seed of the perturbation and sensor noise (-1: the config's)"),
    Param("effort_noise", -1.0, "torque sensor noise standard deviation [N m] (-1: the truth's)"),
    Param("joint_states_topic", "/joint_states", "sensor_msgs/JointState topic"),
)

MAX_CATCH_UP_STEPS = 200
"""Most steps one timer callback runs; further behind, the simulation slows down instead."""


class SimNode(Node):
    """Simulate the robot and follow joint trajectories (see the module docstring)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(NAME, **kwargs)
        self.params = p = declare_parameters(self, PARAMETERS)
        if not p["rate_hz"] > 0:
            raise ConfigError(f"rate_hz must be positive, got {p['rate_hz']}")
        self.sim = self._make_simulator()
        self.joints = tuple(self.sim.joints)
        self.robot = self._robot_limits()
        q0 = self._initial_positions()
        self.sim.reset(q0)
        self._lock = threading.Lock()
        self.reference = TrajectoryReference.hold(self.joints, 0.0, q0)
        self.last_sample = None
        self.steps = 0
        controller = p["controller_name"].strip("/")
        self.state_pub = self.create_publisher(
            JointState, p["joint_states_topic"], QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        self.create_subscription(JointTrajectory, f"/{controller}/joint_trajectory", self._on_trajectory, 10)
        self._action_server = self._make_action_server(f"/{controller}/follow_joint_trajectory")
        self._t_wall0 = time.monotonic()
        self._stamp0_ns = self.get_clock().now().nanoseconds
        self._behind_warned = False
        self.create_timer(min(1.0 / p["rate_hz"], 0.002), self._step_due)
        self.get_logger().info(f"simulating {', '.join(self.joints)} at {p['rate_hz']:g} Hz; trajectories on "
                               f"/{controller}/joint_trajectory"
                               + (", action server on" + f" /{controller}/follow_joint_trajectory"
                                  if self._action_server is not None else " (no control_msgs: no action server)"))

    def _make_simulator(self) -> object:

        p = self.params
        urdf = robot_urdf(p, self)
        if p["truth"] not in ("config", "nominal"):
            raise ConfigError(f"truth must be config or nominal, not {p['truth']!r}")
        section = p["_config"].get("simulation") or {}
        seed = None if p["seed"] < 0 else p["seed"]
        truth = GroundTruth.from_config(section if p["truth"] == "config" else {}, seed=seed)
        if p["effort_noise"] >= 0:
            from dataclasses import replace

            truth = replace(truth, noise=float(p["effort_noise"]))
        gains = Gains.from_config(section.get("controller"))
        return Simulator(urdf, truth=truth, timestep=1.0 / p["rate_hz"], seed=truth.seed, gains=gains,
                         xacro_args=xacro_args(p))

    def _robot_limits(self) -> object:

        return robot_limits(self.sim.model, self.params["_config"],
                            source=robot_source(self.params, self.sim.model.urdf_path))

    def _initial_positions(self) -> np.ndarray:
        given = [float(v) for v in self.params["initial_positions"]]
        n = len(self.joints)
        if not given:
            limits = np.asarray(self.sim.model.position_limits, dtype=float)
            mid = 0.5 * (limits[:, 0] + limits[:, 1])
            return np.where(np.isfinite(mid), mid, 0.0)
        if len(given) != n:
            raise ConfigError(f"initial_positions has {len(given)} values; the robot has {n} joints "
                              f"({', '.join(self.joints)})")
        return np.array(given)

    # ------------------------------------------------------------------------------------------

    def _step_due(self) -> None:
        due = int((time.monotonic() - self._t_wall0) / self.sim.timestep) - self.steps
        if due > MAX_CATCH_UP_STEPS:
            if not self._behind_warned:
                self.get_logger().warning(f"simulation {due} steps behind real time: slowing down")
                self._behind_warned = True
            self._t_wall0 += (due - MAX_CATCH_UP_STEPS) * self.sim.timestep
            due = MAX_CATCH_UP_STEPS
        for _ in range(max(due, 0)):
            with self._lock:
                q_ref, dq_ref, ddq_ref = self.reference.sample(self.sim.time)
                sample = self.sim.step(q_ref, dq_ref, ddq_ref)
                self.last_sample = sample
            self.steps += 1
            self._publish(sample)

    def _publish(self, sample: object) -> None:
        msg = JointState()
        stamp_ns = self._stamp0_ns + int(round(sample.t * 1e9))
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
        msg.name = list(self.joints)
        msg.position = sample.position.tolist()
        msg.velocity = sample.velocity.tolist()
        msg.effort = sample.effort.tolist()
        self.state_pub.publish(msg)

    def _sim_time_of(self, stamp: object) -> float | None:
        """Simulation time of a header stamp; None for a zero stamp (start on receipt)."""
        ns = stamp.sec * 1_000_000_000 + stamp.nanosec
        return None if ns == 0 else (ns - self._stamp0_ns) * 1e-9

    def set_trajectory(self, msg: JointTrajectory) -> None:
        """Replace the reference by ``msg`` (TrajectoryError when it does not fit this robot or its limits)."""

        points = msg.points
        args = (self._sim_time_of(msg.header.stamp), msg.joint_names,
                [p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in points],
                [p.positions for p in points], [p.velocities for p in points], [p.accelerations for p in points])
        with self._lock:
            now = self.sim.time
            candidate = self.reference.replace(now, *args)
        # checked off the lock (the simulation keeps running): the reference from now to its end, at 1 kHz
        t = np.append(np.arange(now, candidate.end_time, 1.0 / CHECK_RATE_HZ), max(candidate.end_time, now))
        check_motion(self.robot, self.joints, t, *candidate.sample_many(t))
        with self._lock:
            self.reference = self.reference.replace(self.sim.time, *args)

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        try:
            self.set_trajectory(msg)
        except DynidError as err:
            self.get_logger().error(f"trajectory ignored: {err}")
            return
        self.get_logger().info(f"following a trajectory of {len(msg.points)} points "
                               f"({self.reference.end_time - self.sim.time:.2f} s)")

    # ------------------------------------------------------------------------------------------
    # FollowJointTrajectory (only with control_msgs)

    def _make_action_server(self, name: str) -> object | None:
        try:
            from control_msgs.action import FollowJointTrajectory
        except ImportError:
            return None
        from rclpy.action import ActionServer, CancelResponse, GoalResponse
        from rclpy.callback_groups import ReentrantCallbackGroup

        self._fjt = FollowJointTrajectory
        self._active_goal = None
        self._closing = False

        def on_goal(goal: object) -> object:
            names = list(goal.trajectory.joint_names)
            return GoalResponse.ACCEPT if sorted(names) == sorted(self.joints) else GoalResponse.REJECT

        return ActionServer(self, FollowJointTrajectory, name, execute_callback=self._execute_goal,
                            goal_callback=on_goal, cancel_callback=lambda _: CancelResponse.ACCEPT,
                            callback_group=ReentrantCallbackGroup())

    def _execute_goal(self, goal_handle: object) -> object:

        goal = goal_handle.request
        result = self._fjt.Result()
        try:
            self.set_trajectory(goal.trajectory)
        except DynidError as err:
            result.error_code, result.error_string = -1, str(err)
            goal_handle.abort()
            return result
        self._active_goal = goal_handle
        path_tol = tolerances_from_message(goal.path_tolerance)
        goal_tol = tolerances_from_message(goal.goal_tolerance)
        slack = goal.goal_time_tolerance.sec + 1e-9 * goal.goal_time_tolerance.nanosec
        end = self.reference.end_time
        while True:
            time.sleep(0.01)
            if self._closing or not self.context.ok():  # shutting down: end this thread (or the exit hangs)
                result.error_string = "sim_node shutting down"
                if self.context.ok():
                    self._hold()
                    goal_handle.abort()
                return result
            if self._active_goal is not goal_handle:
                result.error_string = "preempted by a new goal"
                goal_handle.abort()
                return result
            if goal_handle.is_cancel_requested:
                self._hold()
                goal_handle.canceled()
                return result
            with self._lock:
                now, sample = self.sim.time, self.last_sample
                q_ref, dq_ref, _ = self.reference.sample(now)
            if sample is None:
                continue
            error = sample.position - q_ref
            violation = tolerance_violation(self.joints, path_tol, error, sample.velocity - dq_ref)
            if violation is not None:
                self._hold()
                result.error_code, result.error_string = PATH_TOLERANCE_VIOLATED, violation
                goal_handle.abort()
                return result
            if now >= end:
                violation = tolerance_violation(self.joints, goal_tol, error, sample.velocity)
                if violation is None:
                    self._active_goal = None
                    goal_handle.succeed()
                    return result
                if now >= end + slack:
                    result.error_code, result.error_string = GOAL_TOLERANCE_VIOLATED, violation
                    goal_handle.abort()
                    return result

    def destroy_node(self) -> None:
        if self._action_server is not None:  # rclpy's destroy_node leaves action servers alive
            self._closing = True
            time.sleep(0.05)  # the executing goal's loop sees it and ends its goal
            self._action_server.destroy()
            self._action_server = None
        super().destroy_node()

    def _hold(self) -> None:
        """Stop where the arm is (its measured position, as joint_trajectory_controller holds on cancel/abort)."""
        with self._lock:
            now = self.sim.time
            where = self.last_sample.position if self.last_sample is not None else self.reference.sample(now)[0]
            self.reference = TrajectoryReference.hold(self.joints, now, where)
        self._active_goal = None


def main(args: list[str] | None = None) -> int:
    from importlib.util import find_spec

    # the action server's execute callback waits for the goal's end: it needs a second executor thread
    return run(SimNode, args, multithreaded=find_spec("control_msgs") is not None)


if __name__ == "__main__":
    raise SystemExit(main())
