"""``excitation_node``: move the robot along an excitation trajectory through its controller.

ROS interface:

Parameters:
    urdf_path (str) or robot_description (str, URDF text) or robot_description_topic (str, latched, e.g.
        ``/robot_description``; with xacro_args, robot_description_timeout): the robot ('' all: the config's
        ``robot.urdf``); its collision meshes are read (``package://`` through ``package_dirs``,
        AMENT_PREFIX_PATH, ROS_PACKAGE_PATH). Its limits (URDF position, velocity, effort; the config's
        ``excitation:`` margins and accelerations; its collision geometry and the config's ``collision:`` workcell)
        are the authority: the trajectory file's ``limits:`` can only narrow them.
    trajectory_file (str): excitation trajectory YAML (``dynid excite`` output; relative paths are also
        looked up in the package, e.g. ``robot/trajectories/panda_identification.yaml``).
    controller_name (str): ``joint_trajectory_controller`` (a UR driver: ``scaled_joint_trajectory_controller``,
        the one it starts active).
    controller_manager (str): ``/controller_manager``: its ``list_controllers`` tells whether the controller is
        active (and which are, when it is not); stream mode matches its ``update_rate``.
    mode (str): ``action`` (control_msgs/FollowJointTrajectory on ``/<controller>/follow_joint_trajectory``;
        the default, for real robots) | ``topic`` (trajectory_msgs/JointTrajectory on
        ``/<controller>/joint_trajectory``) | ``stream`` (std_msgs/Float64MultiArray positions on
        ``/<controller>/commands``, a forward command controller whose ``interface_name`` is ``position``:
        anything else is refused).
    stream_joints (str[]): stream mode: the forward controller's joints in the order of its commands (its
        ``joints`` parameter); required in stream mode; joints the trajectory does not move hold their pose.
    stream_rate_hz (double): stream mode: commands per second, each the profile sampled at the command's
        wall-clock time; 0 (default): the ``update_rate`` of ``controller_manager`` (ros2_control), so the
        forward controller gets a new command at every update and never sees a step the profile does not
        make; a rate below it, or a controller manager without ``update_rate``, is refused.
    point_rate_hz (double): waypoints
        per second in action/topic mode (50; each carries positions, velocities and accelerations, so the
        controller interpolates quintically).
    cycles (int): periods of the excitation (1). autostart (bool): start when ready (false).
    joint_states_topic (str): ``/joint_states``. state_timeout (double): joint states older than this
        are stale (0.5 s). wait_timeout (double): how long a start waits for the controller (and, on
        autostart, for the first joint states; in action mode, for the server's answer to the goal)
        before aborting (10 s).
    settle_time (double): topic/stream mode: ``done`` this long after the profile's end (0.2 s), once the
        measured joints followed the motion and reached its end pose.
    path_tolerance (double): action mode: per-joint path position tolerance (0: derived from the profile,
        :func:`dynid_ros.execution.excitation_supervisor.path_tolerances`; negative: the controller's).
    goal_tolerance (double): action mode: per-joint goal position tolerance (0: the controller's);
        goal_time_tolerance (double): 0.5 s.
    check_rate_hz (double): rate of the limit check (1000; never less).
    collision.self, collision.srdf, collision.margin, collision.environment, package_dirs: the robot's
        collision geometry and its workcell, the config's ``collision:`` section key by key
        (:data:`dynid_ros.ros.common.COLLISION_PARAMS`); the meshes of the URDF are then needed.

Services:
    ``~/start``, ``~/stop`` (std_srvs/Trigger). ``~/start`` answers at once: refused (with the reason)
    when the trajectory or the joint states are bad; otherwise accepted, and the motion begins as soon
    as the controller is reachable and active (``~/status`` tells). ``~/stop``, every abort and Ctrl-C stop the
    arm the same way, with a stop the controller executes: a short trajectory decelerating from the measured
    state to a hold within the robot's acceleration limits (:mod:`dynid_ros.execution.stop_motion`), on the
    topic (topic mode), as a goal that preempts the running one (action mode; a cancel only if the server
    refuses it), or streamed (stream mode: from the last command). Ctrl-C waits for the stop to be in the
    controller's hands (action mode: its goal answered, up to 2 s; stream mode: the deceleration streamed).

Publishes:
    ``~/status`` (std_msgs/String, transient local): JSON ``{"state": idle|approaching|running|done|aborted,
    "progress": 0..1, "message": ..., "duration": s, "time": s, "speed": ..., "paused": bool, "clock": ...}`` on
    every change and at 10 Hz while moving. ``time`` is the motion's time on the controller's clock (its
    FollowJointTrajectory feedback, or its ``~/controller_state`` in topic mode: a speed-scaled or paused
    controller runs it slower than the wall clock), ``progress`` is ``time / duration``, ``speed`` the controller
    seconds per wall second (its speed scaling), ``paused`` true while the controller reports but its time stands
    still (the node waits: a paused arm is not a failure), ``clock`` where the time comes from.

Subscribes:
    ``joint_states_topic`` (sensor_msgs/JointState), indexed by joint name; its header stamps anchor a stop on
    the robot's clock. Topic mode: ``/<controller>/controller_state`` (control_msgs/JointTrajectoryControllerState),
    the controller's reference, for the motion's time.

Before moving, every check passes or nothing moves: every trajectory joint is a joint of the robot,
fresh joint states name every joint of the robot, the whole motion from the current pose (approach,
periods, hold) is within the robot's limits and its collision geometry clear of itself and the workcell on a 1 kHz
grid (:func:`dynid_ros.execution.robot_limits.check_motion`), a reachable controller. The logic is
:class:`dynid_ros.execution.excitation_supervisor.ExcitationSupervisor`; this node wires it to ROS.
Joint states are merged by joint name across messages and publishers (arm and gripper drivers on the
same topic). The node spins on one thread (rclpy's MultiThreadedExecutor, before ros2/rclpy#1547, spins
holding the GIL while a callback waits in its thread pool: the stream then got 10-66 of 200 commands/s); so
joint states, ticks and ``~/stop`` wait while ``~/start`` checks the motion (a second or so): the supervisor
counts the pose as fresh as it was when that work began, and staleness from the motion's start. Waiting is
done by timers, the action by futures, the stream by a thread of its own.
"""

from __future__ import annotations

import time

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from dynid_ros.errors import ConfigError, DynidError
from dynid_ros.excitation.trajectory_file import load_trajectory
from dynid_ros.execution.excitation_supervisor import TICK_PERIOD_S, ExcitationSupervisor, SupervisorSettings
from dynid_ros.execution.robot_limits import robot_limits
from dynid_ros.execution.trajectory_execution import MODES
from dynid_ros.robot.model import load_model
from dynid_ros.ros.common import (
    COLLISION_PARAMS,
    ROBOT_DESCRIPTION_PARAMS,
    Param,
    declare_parameters,
    json_message,
    latched_qos,
    node_collision,
    resolve_file,
    robot_source,
    robot_urdf,
    run,
    trigger_service,
    xacro_args,
)
from dynid_ros.ros.controller_links import ActionLink, StreamLink, TopicLink

NAME = "excitation_node"

SHUTDOWN_WAIT_S = 2.0
"""Action mode: on shutdown, seconds to wait for the server's answer to the stop goal."""

TOPIC_FLUSH_S = 0.3
"""Topic mode: on shutdown, seconds left to the stop trajectory to leave before its publisher is destroyed."""

PARAMETERS = (
    Param("urdf_path", "", "robot URDF file ('' and no robot_description: the config's robot.urdf)"),
    Param("robot_description", "", "robot URDF text (instead of urdf_path)"),
    *ROBOT_DESCRIPTION_PARAMS,
    Param("trajectory_file", "", "excitation trajectory YAML (dynid excite output)"),
    Param("controller_name", "joint_trajectory_controller", "controller that executes the motion"),
    Param("mode", "action", "action (FollowJointTrajectory) | topic (JointTrajectory) | stream (Float64MultiArray)"),
    Param("stream_rate_hz", 0.0, "stream mode: position commands per second, each sampled from the profile "
          "(0 = the controller manager's update_rate; below it is refused)", low=0.0, high=10000.0),
    Param("controller_manager", "/controller_manager", "controller manager: its list_controllers tells which "
          "controllers are active; stream mode matches its update_rate"),
    Param("stream_joints", [], "stream mode: the forward controller's joints, in the order of its commands"),
    Param("point_rate_hz", 50.0, "action/topic mode: waypoints per second", low=1.0, high=10000.0),
    Param("cycles", 1, "periods of the excitation", low=1, high=100000),
    Param("autostart", False, "start as soon as joint states and the controller are there"),
    Param("joint_states_topic", "/joint_states", "sensor_msgs/JointState topic"),
    Param("state_timeout", 0.5, "joint states older than this [s] are stale", low=0.0),
    Param("wait_timeout", 10.0, "seconds a start waits for the controller (and, on autostart, joint states; "
          "in action mode, for the answer to the goal)", low=0.0),
    Param("settle_time", 0.2, "topic/stream mode: done this long [s] after the profile ends", low=0.0),
    Param("path_tolerance", 0.0, "action mode: per-joint path position tolerance [rad] (0: derived from the "
          "profile, negative: the controller's default)"),
    Param("goal_tolerance", 0.0, "action mode: per-joint goal position tolerance [rad] (0: controller default)",
          low=0.0),
    Param("goal_time_tolerance", 0.5, "action mode: goal time tolerance [s]", low=0.0),
    Param("check_rate_hz", 1000.0, "rate [Hz] at which the trajectory is checked against its limits",
          low=1000.0, high=100000.0),
    *COLLISION_PARAMS,
)


class ExcitationNode(Node):
    """Execute the excitation on ``~/start`` (see the module docstring)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(NAME, **kwargs)
        self.params = p = declare_parameters(self, PARAMETERS)
        if p["mode"] not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, not {p['mode']!r}")
        if p["mode"] == "stream" and not p["stream_joints"]:
            raise ConfigError("mode stream needs stream_joints: the forward controller's joints in its order")
        self._trajectory_cache: tuple | None = None
        self._robot_limits = None
        controller = p["controller_name"].strip("/")
        self.link = self._make_link(controller)
        settings = SupervisorSettings(p["cycles"], p["check_rate_hz"], p["state_timeout"], p["wait_timeout"],
                                      p["settle_time"], p["goal_time_tolerance"], p["joint_states_topic"],
                                      f"action server {getattr(self.link, 'action_name', '')}"
                                      if p["mode"] == "action" else f"controller /{controller}", p["mode"],
                                      p["point_rate_hz"])
        self.supervisor = ExcitationSupervisor(settings, self._load, self.link, self._publish_status, self._log,
                                               stamp_clock=lambda: self.get_clock().now().nanoseconds * 1e-9)
        self.status_pub = self.create_publisher(String, "~/status", latched_qos())
        self.create_subscription(JointState, p["joint_states_topic"], self._on_joint_state, 10)
        if p["mode"] == "topic":
            self._subscribe_controller_state(controller)
        # ~/start builds and checks the motion (a second or so); each in its own callback group, so that a
        # multi-threaded executor (a test's, or a caller's) runs joint states, ticks and ~/stop meanwhile
        trigger_service(self, "~/start", self.start, MutuallyExclusiveCallbackGroup())
        trigger_service(self, "~/stop", self.supervisor.stop, MutuallyExclusiveCallbackGroup())
        self.create_timer(TICK_PERIOD_S, self._tick, callback_group=MutuallyExclusiveCallbackGroup())
        self._publish_status()
        if p["trajectory_file"]:
            try:  # check the file and the robot early (and import the excitation code) so that ~/start is quick
                self._load()
            except DynidError as err:
                self.get_logger().error(f"trajectory_file: {err}")
        if p["autostart"]:
            self.get_logger().info("autostart: waiting for joint states and the controller")
            self.supervisor.start(wait_for_states=True)

    @property
    def run_state(self) -> object:
        """The supervisor's current run (state, progress, message)."""
        return self.supervisor.run

    def _make_link(self, controller: str) -> object:
        p = self.params
        if p["mode"] == "topic":
            return TopicLink(self, controller, p["point_rate_hz"], p["controller_manager"])
        if p["mode"] == "stream":
            held = lambda joints: self.supervisor.states.positions(joints, 0.0, float("inf"))  # noqa: E731
            return StreamLink(self, controller, p["stream_rate_hz"], p["stream_joints"], held,
                              lambda: self.supervisor.run.active, p["controller_manager"])
        return ActionLink(self, controller, p, self.supervisor_ended,
                          lambda *report: self.supervisor.on_controller_state(*report), p["controller_manager"])

    def _subscribe_controller_state(self, controller: str) -> None:
        """Topic mode: the controller's reference on ``~/controller_state`` tells the motion's time."""
        try:
            from control_msgs.msg import JointTrajectoryControllerState  # deferred: control_msgs is optional
        except ImportError:
            self.get_logger().info("control_msgs is not installed: the motion's time is the wall clock's")
            return

        def on_state(msg: object) -> None:
            reference = msg.reference
            self.supervisor.on_controller_state(list(msg.joint_names), list(reference.positions),
                                                list(reference.velocities), None)

        self.create_subscription(JointTrajectoryControllerState, f"/{controller}/controller_state", on_state,
                                 QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))

    def supervisor_ended(self, success: bool, message: str) -> None:
        """The controller ended the motion: hand ``(success, message)`` to the supervisor."""
        self.supervisor.controller_ended(success, message)

    def start(self) -> tuple[bool, str]:
        """Check everything and move, or wait (timer) for the controller; returns (accepted, message)."""
        return self.supervisor.start()

    def stop(self, reason: str = "stopped on request") -> tuple[bool, str]:
        """Stop the motion, or the start being prepared or waited for; returns (accepted, message)."""
        return self.supervisor.stop(reason)

    def _load(self) -> tuple[object, object]:
        """The checked trajectory file (loaded again only when it changed) and the robot's limits (once)."""
        path = resolve_file(self.params["trajectory_file"], "trajectory_file")
        key = (str(path), path.stat().st_mtime_ns)
        if self._trajectory_cache is None or self._trajectory_cache[0] != key:
            self._trajectory_cache = (key, load_trajectory(path))
        if self._robot_limits is None:
            urdf = robot_urdf(self.params, self)
            model = load_model(urdf=urdf, xacro_args=xacro_args(self.params))
            self._robot_limits = robot_limits(model, self.params["_config"], source=robot_source(self.params, urdf),
                                              collision=node_collision(self.params, model))
        return self._trajectory_cache[1], self._robot_limits

    def _on_joint_state(self, msg: JointState) -> None:
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        self.supervisor.on_joint_state(list(msg.name), list(msg.position), list(msg.velocity), stamp)

    def _tick(self) -> None:
        if self.context.ok():
            self.supervisor.tick()

    def _log(self, level: str, message: str) -> None:
        logger = self.get_logger()  # one call site per severity: rclpy refuses to change it at a call site
        if level == "error":
            logger.error(message)
        elif level == "warning":
            logger.warning(message)
        else:
            logger.info(message)

    def _publish_status(self) -> None:
        if self.context.ok():  # callbacks may still run while the context shuts down
            self.status_pub.publish(json_message(self.supervisor.status()))

    def destroy_node(self) -> None:
        """Stop a running motion (waiting for the controller to take the stop), then destroy the node."""
        if self.supervisor.run.active:
            if self.context.ok():
                self.supervisor.stop("node shutting down")
                if isinstance(self.link, ActionLink) and not self.link.wait_for_end(SHUTDOWN_WAIT_S):
                    self.get_logger().error(f"the controller did not answer the stop within {SHUTDOWN_WAIT_S} s")
                if isinstance(self.link, TopicLink):
                    time.sleep(TOPIC_FLUSH_S)  # the stop trajectory leaves before its publisher is destroyed
            else:
                self.get_logger().error("shutting down while moving with ROS already shut down: nothing could be "
                                        "sent to the controller")
        self.link.destroy()  # a stream's thread ends (after its deceleration) before its publisher is destroyed
        super().destroy_node()


def main(args: list[str] | None = None) -> int:
    """Run the excitation node until Ctrl-C or shutdown; the exit code."""
    # on Ctrl-C: cancel the goal, wait for its end; one thread: see the module docstring (stream mode measured
    # 200, 495-500, 968-999 of 200, 500, 1000 commands/s so; 10-575 with the MultiThreadedExecutor)
    return run(ExcitationNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
