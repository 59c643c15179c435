"""``sim_node``: the embedded MuJoCo robot (:class:`dynid_ros.sim.Simulator`) as a ros2_control-like robot.

ROS interface:

Parameters:
    urdf_path (str) or robot_description (str, URDF text): the robot ('' both: a message on
        ``robot_description_topic`` if set, else the config's ``robot.urdf``); meshes are not needed; its
        gripper and mimic joints are locked (:func:`dynid_ros.robot.model.load_model`).
    xacro_args (str[]): ``name:=value`` arguments of a ``.urdf.xacro`` urdf_path.
    rate_hz (double): control and publishing rate, one simulator step per message (1000).
    controller_name (str): ``joint_trajectory_controller``.
    start_positions (double[]): start pose in the robot's joint order ([]: the config's ``simulation.start``,
        else the middle of each joint's excitation limits, so any excitation of the robot may start there;
        :func:`dynid_ros.sim.trajectory_controller.start_pose`). initial_positions (double[]): its former
        name, still read.
    truth (str): ``config`` (the ``simulation:`` section of the robot config: perturbed inertials,
        friction, armature, sensor noise and bias) | ``nominal`` (exactly the URDF, no sensor errors).
        The section's ``controller:`` gains are used in both cases.
    seed (int): seed of the perturbation and the noise (-1: the config's).
    effort_noise (double): torque sensor noise standard deviation [N m] (-1: the truth's).
    joint_states_topic (str): ``/joint_states``.
    ft_sensor_frame (str): a URDF frame on a moving link (e.g. the flange) where a simulated 6-axis force/torque
        sensor measures the wrench on everything beyond it ('' = no sensor; :mod:`dynid_ros.sim.mujoco_model`).
    wrench_topic (str): where its wrenches go (``/ft_sensor/wrench``, what ``dynid identify-body --wrench-topic``
        reads; record it with the joint states).
    contacts (bool): MuJoCo gets the robot's collision geometry and its workcell with contacts on (true, the
        default; the URDF's meshes are then read) and the node reports what the arm touched; false: no geometry.
        Meshes that cannot be found or read leave the simulation without geometry, with a warning naming the mesh
        (the physics does not need them; the excitation node's collision check does, and refuses without them).
    collision.self, collision.srdf, collision.margin, collision.environment, package_dirs: the robot's collision
        geometry and workcell, the config's ``collision:`` section key by key (as excitation_node checks motions):
        the pairs MuJoCo collides are exactly the pairs the check keeps apart.

Publishes:
    ``joint_states_topic`` (sensor_msgs/JointState: position, velocity, effort), stamped with the
    simulation time added to the node clock at start, so stamps are exactly uniform.
    ``wrench_topic`` (geometry_msgs/WrenchStamped, only with ``ft_sensor_frame``): the sensor's noise-free wrench
    ``[force; torque]`` in ``ft_sensor_frame`` (its frame_id), with the stamp of the joint state of the same step.
    ``~/contacts`` (std_msgs/String, transient local, with ``contacts``): JSON of what the arm touched during the
    motion that just ended (a FollowJointTrajectory goal, or a trajectory on the topic once its end is reached):
    ``{"motion": goal|topic, "outcome": succeeded|aborted|canceled|preempted|closing|done, "contacts": N,
    "contact_pairs": [...], "smallest_clearance_m": m or null (more than watch_m), "between": pair, "at_s": s,
    "kept_m", "margin_m", "watch_m"}`` (:meth:`dynid_ros.sim.contacts.ContactReport.summary`); the same as one
    log line, a warning when there were contacts. A goal that touched something still ends as the tolerances say,
    its result's ``error_string`` then names the contacts.

Subscribes:
    ``/<controller_name>/joint_trajectory`` (trajectory_msgs/JointTrajectory), followed like
    ros2_control's joint_trajectory_controller (:mod:`dynid_ros.execution.trajectory_reference`): times from the
    header stamp (zero: on receipt), quintic/cubic/linear interpolation, a new trajectory replaces the
    old one starting from the MEASURED state (as joint_trajectory_controller in closed loop); one without
    points or joint names is rejected and the running one goes on (as joint_trajectory_controller does: stop
    with a trajectory to a hold); joints must be exactly the robot's. A reference leaving the
    robot's limits (URDF + config, :func:`dynid_ros.execution.robot_limits.check_motion`) is refused.

Action server (when control_msgs is importable):
    ``/<controller_name>/follow_joint_trajectory`` (control_msgs/FollowJointTrajectory), with path and
    goal tolerances (:func:`dynid_ros.execution.follow_joint_trajectory.tolerance_violation`), cancel and preemption.
    Goals naming other joints than the robot's are rejected; on cancel or abort the arm holds where it is.
    Feedback every 10 ms while a goal runs (desired = the reference at the simulation's time, actual, error), as
    joint_trajectory_controller sends it.
    ``/<controller_name>/controller_state`` (control_msgs/JointTrajectoryControllerState, when control_msgs is
    importable): reference and measured state every 10 ms of simulation time.

Clients that time the motion by the controller (excitation_node) follow the simulation's time: when the machine
cannot keep the simulation in real time, it slows down and so does the motion they supervise.

The simulation runs in real time: a 2 ms timer runs every step that is due by the wall clock. The
controller and the goal checks are :mod:`dynid_ros.sim.trajectory_controller`; this node wires them to ROS.
"""

from __future__ import annotations

import time

from builtin_interfaces.msg import Time
from geometry_msgs.msg import WrenchStamped
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

from dynid_ros.data.wrench_io import WRENCH_TOPIC
from dynid_ros.errors import ConfigError, DynidError, ModelError
from dynid_ros.execution.follow_joint_trajectory import tolerances_from_message
from dynid_ros.execution.robot_limits import robot_limits
from dynid_ros.ros.common import (
    COLLISION_PARAMS,
    ROBOT_DESCRIPTION_PARAMS,
    Param,
    declare_parameters,
    json_message,
    latched_qos,
    node_collision_settings,
    robot_source,
    robot_urdf,
    run,
    xacro_args,
)
from dynid_ros.sim import Simulator
from dynid_ros.sim.trajectory_controller import GoalSupervision, SimulatedTrajectoryController, run_goal, start_pose

NAME = "sim_node"

PARAMETERS = (
    Param("urdf_path", "", "robot URDF file ('' and no robot_description: the config's robot.urdf)"),
    Param("robot_description", "", "robot URDF text (instead of urdf_path)"),
    *ROBOT_DESCRIPTION_PARAMS,
    Param("rate_hz", 1000.0, "simulation and /joint_states rate [Hz]", low=1.0, high=100000.0),
    Param("controller_name", "joint_trajectory_controller", "name of the simulated trajectory controller"),
    Param("start_positions", [], "start pose, one value per joint in the robot's order ([] = the config's "
          "simulation.start, else the middle of each joint's excitation limits)"),
    Param("initial_positions", [], "former name of start_positions"),
    Param("truth", "config", "config (simulation section of the robot config) | nominal (the URDF exactly)"),
    Param("seed", -1, "seed of the perturbation and sensor noise (-1: the config's)"),
    Param("effort_noise", -1.0, "torque sensor noise standard deviation [N m] (-1: the truth's)"),
    Param("joint_states_topic", "/joint_states", "sensor_msgs/JointState topic"),
    Param("ft_sensor_frame", "", "URDF frame of a simulated force/torque sensor ('' = none)"),
    Param("wrench_topic", WRENCH_TOPIC, "geometry_msgs/WrenchStamped topic of the force/torque sensor"),
    Param("contacts", True, "collision geometry and workcell in MuJoCo, contacts on, reported on ~/contacts "
          "(false: no geometry, meshes not read)"),
    *COLLISION_PARAMS,
)


STATE_PERIOD_S = 0.01
"""``~/controller_state`` every this much simulation time [s] (a controller manager's 100 Hz update)."""


def duration_s(duration: object) -> float:  # builtin_interfaces/Duration
    """A ``builtin_interfaces/Duration`` in seconds."""
    return duration.sec + 1e-9 * duration.nanosec


class SimNode(Node):
    """Simulate the robot and follow joint trajectories (see the module docstring)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(NAME, **kwargs)
        self.params = p = declare_parameters(self, PARAMETERS)
        if not p["rate_hz"] > 0:
            raise ConfigError(f"rate_hz must be positive, got {p['rate_hz']}")
        sim = self._make_simulator()
        robot = robot_limits(sim.model, p["_config"], source=robot_source(p, sim.model.urdf_path))
        self.joints = tuple(sim.joints)
        self.controller = SimulatedTrajectoryController(sim, robot, self._start_pose(robot))
        controller = p["controller_name"].strip("/")
        self.state_pub = self.create_publisher(
            JointState, p["joint_states_topic"], QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        self.wrench_pub = None if sim.ft_sensor is None else self.create_publisher(
            WrenchStamped, p["wrench_topic"], QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        # trajectories are checked (a fraction of a second) in their own callback group: the stepping goes on
        self.create_subscription(JointTrajectory, f"/{controller}/joint_trajectory", self._on_trajectory, 10,
                                 callback_group=MutuallyExclusiveCallbackGroup())
        self._active_goal = None
        self._closing = False
        self._state_msg, self._state_due = None, 0.0
        self._controller_state_pub = self._make_state_publisher(controller)
        self.contacts_pub = None if sim.collision is None else self.create_publisher(String, "~/contacts",
                                                                                     latched_qos())
        self._topic_end = None  # end of the trajectory followed from the topic, until its contacts are reported
        self._action_server = self._make_action_server(f"/{controller}/follow_joint_trajectory")
        self._t_wall0 = time.monotonic()
        self._stamp0_ns = self.get_clock().now().nanoseconds
        self._behind_warned = False
        self.create_timer(min(1.0 / p["rate_hz"], 0.002), self._step_due)
        server = "action server on" if self._action_server is not None else "no control_msgs: no action server"
        self.get_logger().info(f"simulating {', '.join(self.joints)} at {p['rate_hz']:g} Hz; trajectories on "
                               f"/{controller}/joint_trajectory, {server} /{controller}/follow_joint_trajectory")

    @property
    def sim(self) -> object:
        """The simulator the controller drives."""
        return self.controller.sim

    def _make_simulator(self) -> object:
        p = self.params
        if p["truth"] not in ("config", "nominal"):
            raise ConfigError(f"truth must be config or nominal, not {p['truth']!r}")
        section = dict(p["_config"].get("simulation") or {})
        if p["truth"] == "nominal":  # exactly the URDF; the controller's gains are kept
            section = {"controller": section.get("controller")}
        section["timestep"] = 1.0 / p["rate_hz"]
        urdf = robot_urdf(p, self)

        def simulator(collision: object) -> Simulator:
            return Simulator.from_config(urdf, section, seed=None if p["seed"] < 0 else p["seed"],
                                         noise=p["effort_noise"] if p["effort_noise"] >= 0 else None,
                                         xacro_args=xacro_args(p), ft_sensor_frame=p["ft_sensor_frame"] or None,
                                         collision=collision)

        if not p["contacts"]:
            return simulator(None)
        settings = node_collision_settings(p)  # a bad collision.* parameter or config key is an error
        try:
            return simulator(settings)
        except ModelError as err:  # the physics needs no meshes: simulate without geometry, and say so
            sim = simulator(None)  # raises when the robot itself is the problem
            self.get_logger().warning(f"no contacts simulated: {err}; give package_dirs, or contacts:=false "
                                      "to silence this")
            return sim

    def _start_pose(self, robot: object) -> object:
        start, initial = list(self.params["start_positions"]), list(self.params["initial_positions"])
        if start and initial and start != initial:
            raise ConfigError("start_positions and initial_positions (its former name) differ: set one")
        section = self.params["_config"].get("simulation") or {}
        return start_pose(self.joints, start or initial, section.get("start"), robot,
                          "start_positions" if start else "initial_positions")

    # ------------------------------------------------------------------------------------------

    def _step_due(self) -> None:
        if self._closing:
            return
        count, dropped = self.controller.steps_due(time.monotonic() - self._t_wall0)
        if dropped and not self._behind_warned:
            self.get_logger().warning(f"simulation {dropped} steps behind real time: slowing down")
            self._behind_warned = True
        for _ in range(count):
            self._publish(self.controller.step())
        if count:
            self._publish_controller_state()
        if self._topic_end is not None and self.sim.time >= self._topic_end:
            self._topic_end = None
            self._report_contacts("topic", "done")

    def _report_contacts(self, motion: str, outcome: str) -> str | None:
        """Log and publish on ``~/contacts`` what the arm touched since the motion started; the log line (None:
        contacts off)."""
        report = self.controller.take_contacts()
        if report is None:
            return None
        line = report.line()
        if report.contacts:  # rclpy: one severity per call site
            self.get_logger().warning(f"{motion} motion {outcome}: {line}")
        else:
            self.get_logger().info(f"{motion} motion {outcome}: {line}")
        if self.contacts_pub is not None and not self._closing:
            self.contacts_pub.publish(json_message({"motion": motion, "outcome": outcome, **report.summary()}))
        return line

    def _stamp(self, sim_time: float) -> object:
        """The header stamp of a simulation time (the node's clock at start plus the simulation time)."""
        stamp = Time()
        stamp.sec, stamp.nanosec = divmod(self._stamp0_ns + int(round(sim_time * 1e9)), 1_000_000_000)
        return stamp

    def _make_state_publisher(self, controller: str) -> object | None:
        """``/<controller>/controller_state`` as joint_trajectory_controller publishes it (control_msgs
        JointTrajectoryControllerState: ``reference`` = the desired state at its own time, ``feedback`` = the
        measured one; joint_trajectory_controller.cpp ``publish_state``, lines 1080-1105 of 4.19.0, on
        ``~/controller_state`` with the system default QoS, line 819); None without control_msgs."""
        try:
            from control_msgs.msg import JointTrajectoryControllerState  # deferred: control_msgs is optional
        except ImportError:
            return None
        self._state_msg = JointTrajectoryControllerState
        return self.create_publisher(JointTrajectoryControllerState, f"/{controller}/controller_state", 10)

    def _publish_controller_state(self) -> None:
        """The controller's state, at most every :data:`STATE_PERIOD_S` of simulation time."""
        state = self.controller.tracking()
        if self._controller_state_pub is None or state is None or state[0] < self._state_due:
            return
        self._state_due = state[0] + STATE_PERIOD_S
        now, sample, q_ref, dq_ref = state
        msg = self._state_msg(joint_names=list(self.joints))
        msg.header.stamp = self._stamp(now)
        msg.reference.positions, msg.reference.velocities = q_ref.tolist(), dq_ref.tolist()
        msg.feedback.positions, msg.feedback.velocities = sample.position.tolist(), sample.velocity.tolist()
        msg.error.positions = (q_ref - sample.position).tolist()
        msg.error.velocities = (dq_ref - sample.velocity).tolist()
        self._controller_state_pub.publish(msg)

    def _publish(self, sample: object) -> None:
        msg = JointState()
        msg.header.stamp = self._stamp(sample.t)
        msg.name = list(self.joints)
        msg.position = sample.position.tolist()
        msg.velocity = sample.velocity.tolist()
        msg.effort = sample.effort.tolist()
        self.state_pub.publish(msg)
        if self.wrench_pub is not None:
            wrench = WrenchStamped()
            wrench.header.stamp = msg.header.stamp
            wrench.header.frame_id = self.sim.ft_sensor.name
            w = self.sim.last_wrench
            force, torque = wrench.wrench.force, wrench.wrench.torque
            force.x, force.y, force.z, torque.x, torque.y, torque.z = (float(v) for v in w)
            self.wrench_pub.publish(wrench)

    def _sim_time_of(self, stamp: object) -> float | None:
        """Simulation time of a header stamp; None for a zero stamp (start on receipt)."""
        ns = stamp.sec * 1_000_000_000 + stamp.nanosec
        return None if ns == 0 else (ns - self._stamp0_ns) * 1e-9

    def set_trajectory(self, msg: JointTrajectory) -> float:
        """Follow ``msg`` from the measured state; its end time (TrajectoryError when it does not fit)."""
        points = msg.points
        return self.controller.follow(self._sim_time_of(msg.header.stamp), msg.joint_names,
                                      [duration_s(p.time_from_start) for p in points], [p.positions for p in points],
                                      [p.velocities for p in points], [p.accelerations for p in points])

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        try:
            end = self.set_trajectory(msg)
        except DynidError as err:
            self.get_logger().error(f"trajectory ignored: {err}")
            return
        self.controller.take_contacts()  # what the arm touched is reported per motion, from its start
        self._topic_end = end
        self.get_logger().info(f"following a trajectory of {len(msg.points)} points ({end - self.sim.time:.2f} s)")

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

        def on_goal(goal: object) -> object:
            names = list(goal.trajectory.joint_names)
            return GoalResponse.ACCEPT if sorted(names) == sorted(self.joints) else GoalResponse.REJECT

        return ActionServer(self, FollowJointTrajectory, name, execute_callback=self._execute_goal,
                            goal_callback=on_goal, cancel_callback=lambda _: CancelResponse.ACCEPT,
                            callback_group=ReentrantCallbackGroup())

    def _execute_goal(self, goal_handle: object) -> object:
        goal, result = goal_handle.request, self._fjt.Result()
        try:
            end = self.set_trajectory(goal.trajectory)
        except DynidError as err:
            result.error_code, result.error_string = -1, str(err)
            goal_handle.abort()
            return result
        previous, self._active_goal, self._topic_end = self._active_goal, goal_handle, None
        # what the arm touched is reported per goal, from its start: until now, the preempted goal's
        if previous is not None:
            self._report_contacts("goal", "preempted")
        else:
            self.controller.take_contacts()
        supervision = GoalSupervision(self.joints, tolerances_from_message(goal.path_tolerance),
                                      tolerances_from_message(goal.goal_tolerance),
                                      duration_s(goal.goal_time_tolerance), end)

        def feedback(state: tuple) -> None:
            if self._closing or self._action_server is None:  # shutting down: the server is being destroyed
                return
            message = self._fjt.Feedback(joint_names=list(self.joints))
            message.header.stamp = self._stamp(state[0])
            message.desired.positions, message.desired.velocities = state[2].tolist(), state[3].tolist()
            message.actual.positions = state[1].position.tolist()
            message.actual.velocities = state[1].velocity.tolist()
            message.error.positions = (state[2] - state[1].position).tolist()
            message.error.velocities = (state[3] - state[1].velocity).tolist()
            goal_handle.publish_feedback(message)

        verdict = run_goal(self.controller, supervision, lambda: self._closing or not self.context.ok(),
                           lambda: self._active_goal is not goal_handle, lambda: goal_handle.is_cancel_requested,
                           feedback=feedback)
        if self._active_goal is goal_handle:
            self._active_goal = None
        result.error_code, result.error_string = verdict.error_code, verdict.error_string
        contacts = None if verdict.outcome in ("closing", "preempted") else self._report_contacts(
            "goal", verdict.outcome)
        if contacts is not None and not contacts.startswith("contacts in MuJoCo: 0;"):
            result.error_string = "; ".join(filter(None, (verdict.error_string, contacts)))
        if verdict.outcome == "succeeded":
            goal_handle.succeed()
        elif verdict.outcome == "canceled":
            goal_handle.canceled()
        elif verdict.outcome != "closing" or self.context.ok():  # with the context gone nothing can be sent
            goal_handle.abort()
        return result

    def destroy_node(self) -> None:
        """Destroy the action server (its executing goal ends first), then the node."""
        if self._action_server is not None:  # rclpy's destroy_node leaves action servers alive
            self._closing = True
            time.sleep(0.05)  # the executing goal's loop sees it and ends its goal
            self._action_server.destroy()
            self._action_server = None
        self._closing = True
        super().destroy_node()


def main(args: list[str] | None = None) -> int:
    """Run the simulation node (multithreaded executor) until Ctrl-C or shutdown; the exit code."""
    # several executor threads: the action server's execute callback waits for the goal's end, and the
    # trajectory checks must not stop the stepping
    return run(SimNode, args, multithreaded=True)


if __name__ == "__main__":
    raise SystemExit(main())
