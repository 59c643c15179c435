"""``excitation_node``: move the robot along an excitation trajectory through its controller.

ROS interface:

Parameters:
    urdf_path (str) or robot_description (str, URDF text) or robot_description_topic (str, latched, e.g.
        ``/robot_description``; with xacro_args, robot_description_timeout): the robot ('' all: the config's
        ``robot.urdf``); meshes are not needed.
        Its limits (URDF position, velocity, effort; the config's ``excitation:`` margins and accelerations)
        are the authority: the trajectory file's ``limits:`` can only narrow them.
    trajectory_file (str): excitation trajectory YAML (``dynid excite`` output; relative paths are also
        looked up in the package, e.g. ``robot/trajectories/panda_identification.yaml``).
    controller_name (str): ``joint_trajectory_controller``.
    mode (str): ``action`` (control_msgs/FollowJointTrajectory on ``/<controller>/follow_joint_trajectory``;
        the default, for real robots) | ``topic`` (trajectory_msgs/JointTrajectory on
        ``/<controller>/joint_trajectory``) | ``stream`` (std_msgs/Float64MultiArray positions on
        ``/<controller>/commands``, a forward command controller, at ``stream_rate_hz``).
    stream_rate_hz (double): 100. point_rate_hz (double): waypoints per second in action/topic mode (50;
        each carries positions, velocities and accelerations, so the controller interpolates quintically).
    cycles (int): periods of the excitation (1). autostart (bool): start when ready (false).
    joint_states_topic (str): ``/joint_states``. state_timeout (double): joint states older than this
        are stale (0.5 s). wait_timeout (double): how long a start waits for the controller (and, on
        autostart, for the first joint states; in action mode, for the server's answer to the goal)
        before aborting (10 s).
    settle_time (double): topic/stream mode: ``done`` this long after the profile's end (0.2 s).
    path_tolerance, goal_tolerance (double): action mode, per-joint position tolerances (0: the
        controller's); goal_time_tolerance (double): 0.5 s.
    check_rate_hz (double): rate of the limit check (1000; never less).

Services:
    ``~/start``, ``~/stop`` (std_srvs/Trigger). ``~/start`` answers at once: refused (with the reason)
    when the trajectory or the joint states are bad; otherwise accepted, and the motion begins as soon
    as the controller is reachable (``~/status`` tells). ``~/stop`` cancels the goal (action), sends an
    empty trajectory (topic: the controller holds its position) or stops streaming. Ctrl-C while moving
    does the same; in action mode it waits (up to 2 s) for the server to end the canceled goal.

Publishes:
    ``~/status`` (std_msgs/String, transient local): JSON ``{"state": idle|approaching|running|done|aborted,
    "progress": 0..1, "message": ..., "duration": s}`` on every change and at 10 Hz while moving.

Subscribes:
    ``joint_states_topic`` (sensor_msgs/JointState), indexed by joint name.

Before moving, every check passes or nothing moves: every trajectory joint is a joint of the robot,
fresh joint states name every joint of the robot, the whole motion from the current pose (approach,
periods, hold) is within the robot's limits on a 1 kHz grid
(:func:`dynid_ros.execution.robot_limits.check_motion`), a reachable controller. Nothing blocks the
executor: waiting is done by timers, the action by futures.
"""

from __future__ import annotations

import time

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory

from dynid_ros.errors import ConfigError, DynidError
from dynid_ros.excitation.trajectory_file import load_trajectory
from dynid_ros.execution.follow_joint_trajectory import (
    GoalPhase,
    GoalTracker,
    build_goal_spec,
    fill_goal,
    fill_trajectory,
    load_control_msgs,
)
from dynid_ros.execution.robot_limits import robot_limits
from dynid_ros.execution.trajectory_execution import (
    MODES,
    ControllerError,
    ExcitationRun,
    ExecutionState,
    current_positions,
    prepare_profile,
    trajectory_samples,
)
from dynid_ros.robot.model import load_model
from dynid_ros.ros.common import (
    ROBOT_DESCRIPTION_PARAMS,
    Param,
    declare_parameters,
    json_message,
    latched_qos,
    resolve_file,
    robot_source,
    robot_urdf,
    run,
    trigger_service,
    xacro_args,
)

NAME = "excitation_node"

RESULT_GRACE_S = 10.0
"""Action mode: seconds after the profile's end (plus the goal time tolerance) to wait for the result."""

SHUTDOWN_WAIT_S = 2.0
"""Action mode: on shutdown, seconds to wait for the canceled goal's end (the server's answer)."""

PARAMETERS = (
    Param("urdf_path", "", "robot URDF file ('' and no robot_description: the config's robot.urdf)"),
    Param("robot_description", "", "robot URDF text (instead of urdf_path)"),
    *ROBOT_DESCRIPTION_PARAMS,
    Param("trajectory_file", "", "excitation trajectory YAML (dynid excite output)"),
    Param("controller_name", "joint_trajectory_controller", "controller that executes the motion"),
    Param("mode", "action", "action (FollowJointTrajectory) | topic (JointTrajectory) | stream (Float64MultiArray)"),
    Param("stream_rate_hz", 100.0, "stream mode: position commands per second"),
    Param("point_rate_hz", 50.0, "action/topic mode: waypoints per second"),
    Param("cycles", 1, "periods of the excitation"),
    Param("autostart", False, "start as soon as joint states and the controller are there"),
    Param("joint_states_topic", "/joint_states", "sensor_msgs/JointState topic"),
    Param("state_timeout", 0.5, "joint states older than this [s] are stale"),
    Param("wait_timeout", 10.0, "seconds a start waits for the controller (and, on autostart, joint states; "
          "in action mode, for the answer to the goal)"),
    Param("settle_time", 0.2, "topic/stream mode: done this long [s] after the profile ends"),
    Param("path_tolerance", 0.0, "action mode: per-joint path position tolerance [rad] (0: controller default)"),
    Param("goal_tolerance", 0.0, "action mode: per-joint goal position tolerance [rad] (0: controller default)"),
    Param("goal_time_tolerance", 0.5, "action mode: goal time tolerance [s]"),
    Param("check_rate_hz", 1000.0, "rate [Hz] at which the trajectory is checked against its limits"),
)


class ExcitationNode(Node):
    """Execute the excitation on ``~/start`` (see the module docstring)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(NAME, **kwargs)
        self.params = p = declare_parameters(self, PARAMETERS)
        if p["mode"] not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, not {p['mode']!r}")
        controller = p["controller_name"].strip("/")
        self.trajectory_topic = f"/{controller}/joint_trajectory"
        self.stream_topic = f"/{controller}/commands"
        self.action_name = f"/{controller}/follow_joint_trajectory"
        self.run_state = ExcitationRun()
        self._last_state: tuple[list[str], list[float], float] | None = None
        self._profile_joints: tuple[str, ...] = ()
        self._trajectory_cache: tuple | None = None
        self._robot_limits = None
        self._pending: dict | None = None
        self._stream_timer = None
        self._action_client = None
        self._goal_handle = None
        self._tracker: GoalTracker | None = None
        self._goal_sent_at = 0.0
        self.status_pub = self.create_publisher(String, "~/status", latched_qos())
        self.trajectory_pub = self.create_publisher(JointTrajectory, self.trajectory_topic, 10) \
            if p["mode"] == "topic" else None
        self.stream_pub = self.create_publisher(Float64MultiArray, self.stream_topic, 10) \
            if p["mode"] == "stream" else None
        self.create_subscription(JointState, p["joint_states_topic"], self._on_joint_state, 10)
        trigger_service(self, "~/start", self.start)
        trigger_service(self, "~/stop", self.stop)
        self.create_timer(0.1, self._tick)
        self._publish_status()
        if p["trajectory_file"]:
            try:  # check the file and the robot early (and import the excitation code) so that ~/start is quick
                self._load_trajectory()
                self._robot()
            except DynidError as err:
                self.get_logger().error(f"trajectory_file: {err}")
        if p["autostart"]:
            self.get_logger().info("autostart: waiting for joint states and the controller")
            self._pending = {"deadline": time.monotonic() + p["wait_timeout"], "wait_for_states": True}

    # ------------------------------------------------------------------------------------------
    # Start

    def start(self, wait_for_states: bool = False) -> tuple[bool, str]:
        """Check everything and move, or wait (timer) for the controller; returns (accepted, message)."""
        if self.run_state.active or self._pending is not None:
            return False, f"already {self.run_state.state.value if self.run_state.active else 'starting'}"
        self.run_state = ExcitationRun()
        self._pending = {"deadline": time.monotonic() + self.params["wait_timeout"],
                         "wait_for_states": wait_for_states}
        return self._attempt_start()

    def _attempt_start(self) -> tuple[bool, str]:
        """One try of a pending start: abort on bad input, keep waiting for what may still come."""
        pending = self._pending
        now = time.monotonic()  # before any work: the executor delivers no joint states meanwhile
        timed_out = now >= pending["deadline"]
        try:
            excitation = self._load_trajectory()
            robot = self._robot()
            moved = robot.indices(excitation.trajectory.joints)  # a joint the robot lacks: refused
            if pending["wait_for_states"] and not timed_out and self._states_missing_or_stale(now):
                return True, "waiting for joint states"
            q_robot = self._current_positions(robot.joints, now)  # every robot joint, or refused
            profile = prepare_profile(excitation, q_robot[moved], self.params["cycles"],
                                      max(self.params["check_rate_hz"], 1000.0), robot, held=q_robot)
            problem = self._controller_problem()
            if problem is not None:
                if not timed_out:
                    self._set_message(f"waiting for the controller: {problem}")
                    return True, self.run_state.message
                raise ControllerError(f"{problem} within {self.params['wait_timeout']} s: not moving")
            self._pending = None
            self._send(profile)
            return True, f"moving: {profile.duration:.1f} s ({self.params['mode']} mode)"
        except DynidError as err:
            self._pending = None
            self._abort(str(err))
            return False, str(err)

    def _load_trajectory(self) -> object:
        """The checked trajectory file, loaded again only when it changed."""

        path = resolve_file(self.params["trajectory_file"], "trajectory_file")
        key = (str(path), path.stat().st_mtime_ns)
        if self._trajectory_cache is None or self._trajectory_cache[0] != key:
            self._trajectory_cache = (key, load_trajectory(path))
        excitation = self._trajectory_cache[1]
        self._profile_joints = excitation.trajectory.joints
        return excitation

    def _robot(self) -> object:
        """The robot's limits (URDF + config), loaded once."""
        if self._robot_limits is None:

            urdf = robot_urdf(self.params, self)
            model = load_model(urdf=urdf, xacro_args=xacro_args(self.params))
            self._robot_limits = robot_limits(model, self.params["_config"], source=robot_source(self.params, urdf))
        return self._robot_limits

    def _states_missing_or_stale(self, now: float) -> bool:
        if self._last_state is None:
            return True
        return now - self._last_state[2] > self.params["state_timeout"]

    def _current_positions(self, joints: tuple[str, ...], now: float) -> np.ndarray:
        state = self._last_state
        if state is None:
            return current_positions(joints, [], [], None, self.params["state_timeout"],
                                     self.params["joint_states_topic"], "the robot")
        names, positions, received = state
        return current_positions(joints, names, positions, max(now - received, 0.0),
                                 self.params["state_timeout"], self.params["joint_states_topic"], "the robot")

    def _controller_problem(self) -> str | None:
        mode = self.params["mode"]
        if mode == "topic":
            if self.count_subscribers(self.trajectory_topic) == 0:
                return f"no subscriber on {self.trajectory_topic}"
        elif mode == "stream":
            if self.count_subscribers(self.stream_topic) == 0:
                return f"no subscriber on {self.stream_topic}"
        else:
            if self._action_client is None:
                from rclpy.action import ActionClient

                action = load_control_msgs()
                self._action_client = ActionClient(self, action.FollowJointTrajectory, self.action_name)
            if not self._action_client.server_is_ready():
                return f"action server {self.action_name} not available"
        return None

    # ------------------------------------------------------------------------------------------
    # Motion

    def _send(self, profile: object) -> None:
        mode = self.params["mode"]
        now = time.monotonic()
        if mode == "topic":
            from builtin_interfaces.msg import Duration
            from trajectory_msgs.msg import JointTrajectoryPoint


            t, q, dq, ddq = trajectory_samples(profile, self.params["point_rate_hz"])
            msg = fill_trajectory(JointTrajectory(), profile.joints, t, q, dq, ddq, JointTrajectoryPoint, Duration)
            self.trajectory_pub.publish(msg)
        elif mode == "stream":
            self._stream_timer = self.create_timer(1.0 / self.params["stream_rate_hz"], self._stream)
        else:
            self._send_goal(profile)
        self.run_state.start(profile, now, f"{mode} mode, {profile.duration:.1f} s")
        self.get_logger().info(f"excitation started ({mode} mode): approach {profile.t_excitation_start:.1f} s, "
                               f"{self.params['cycles']} cycle(s), total {profile.duration:.1f} s")
        self._publish_status()

    def _stream(self) -> None:
        if not self.run_state.active:
            return
        elapsed = time.monotonic() - self.run_state.t_start
        q = self.run_state.profile.sample(min(elapsed, self.run_state.profile.duration))[0][0]
        self.stream_pub.publish(Float64MultiArray(data=q.tolist()))

    def _send_goal(self, profile: object) -> None:
        from builtin_interfaces.msg import Duration
        from control_msgs.msg import JointTolerance
        from trajectory_msgs.msg import JointTrajectoryPoint

        action = load_control_msgs()
        p = self.params
        spec = build_goal_spec(profile, p["point_rate_hz"], p["path_tolerance"], p["goal_tolerance"],
                               goal_time_tolerance=p["goal_time_tolerance"])
        goal = fill_goal(action.FollowJointTrajectory.Goal(), spec, JointTrajectoryPoint, JointTolerance, Duration)
        self._tracker = tracker = GoalTracker()
        self._goal_sent_at = time.monotonic()
        future = self._action_client.send_goal_async(goal)
        future.add_done_callback(lambda f: self._on_goal_response(tracker, f))

    def _on_goal_response(self, tracker: GoalTracker, future: object) -> None:
        try:
            handle = future.result()
        except Exception as err:  # noqa: BLE001 - transport errors end the goal
            self._end_goal(tracker, tracker.on_error(f"sending the goal failed: {err}"))
            return
        cancel_now = tracker.on_goal_response(bool(handle.accepted))
        if not handle.accepted:
            self._end_goal(tracker, tracker.outcome)
            return
        if tracker is self._tracker:
            self._goal_handle = handle
        handle.get_result_async().add_done_callback(lambda f: self._on_result(tracker, f))
        if cancel_now:  # stopped while the goal was on its way (also a goal of an earlier run)
            handle.cancel_goal_async()

    def _on_result(self, tracker: GoalTracker, future: object) -> None:
        try:
            response = future.result()
            outcome = tracker.on_result(int(response.status), int(response.result.error_code),
                                        str(response.result.error_string))
        except Exception as err:  # noqa: BLE001
            outcome = tracker.on_error(f"getting the result failed: {err}")
        self._end_goal(tracker, outcome)

    def _end_goal(self, tracker: GoalTracker, outcome: object) -> None:
        if tracker is not self._tracker:  # the end of an earlier run's goal: this run is not concerned
            self.get_logger().info(f"earlier goal ended: {outcome.message}")
            return
        self._goal_handle = None
        if outcome.success:
            self.run_state.finish(outcome.message)
            self.get_logger().info(f"excitation done: {outcome.message}")
        elif self.run_state.state is not ExecutionState.ABORTED:
            self._abort(outcome.message)
        self._publish_status()

    def stop(self, reason: str = "stopped on request") -> tuple[bool, str]:
        """Stop the motion (cancel, hold or stop streaming)."""
        if self._pending is not None:
            self._pending = None
            self._abort(f"{reason} before moving")
            return True, reason
        if not self.run_state.active:
            return False, f"not moving (state {self.run_state.state.value})"
        mode = self.params["mode"]
        if mode == "topic":
            self.trajectory_pub.publish(JointTrajectory(joint_names=list(self._profile_joints)))
        elif mode == "stream":
            self._stop_stream()
        elif self._tracker is not None and self._tracker.request_cancel() and self._goal_handle is not None:
            self._goal_handle.cancel_goal_async()
        self._abort(reason)
        return True, reason

    def _stop_stream(self) -> None:
        if self._stream_timer is not None:
            self.destroy_timer(self._stream_timer)
            self._stream_timer = None

    def destroy_node(self) -> None:
        if self.run_state.active:
            if self.context.ok():
                self.stop("node shutting down")
                self._await_goal_end(SHUTDOWN_WAIT_S)
            else:
                self.get_logger().error("shutting down while moving with ROS already shut down: nothing could be "
                                        "sent to the controller")
        if self._action_client is not None:  # rclpy's destroy_node leaves action clients alive
            self._action_client.destroy()
            self._action_client = None
        super().destroy_node()

    def _await_goal_end(self, timeout: float) -> None:
        """Spin this node (its executor has stopped) until the canceled goal has ended, at most ``timeout`` s."""
        from rclpy.executors import SingleThreadedExecutor

        tracker = self._tracker
        if self.params["mode"] != "action" or tracker is None or tracker.finished:
            return
        executor = SingleThreadedExecutor(context=self.context)
        executor.add_node(self)
        deadline = time.monotonic() + timeout
        try:
            while not tracker.finished and time.monotonic() < deadline and self.context.ok():
                executor.spin_once(timeout_sec=0.05)
        finally:
            executor.remove_node(self)
        if not tracker.finished:
            self.get_logger().error(f"the controller did not confirm the end of the goal within {timeout} s")

    # ------------------------------------------------------------------------------------------
    # Callbacks

    def _on_joint_state(self, msg: JointState) -> None:
        first = self._last_state is None
        self._last_state = (list(msg.name), list(msg.position), time.monotonic())
        if first:  # tell an orchestrator that ~/start can now check the pose
            self._publish_status()

    def _tick(self) -> None:
        if self._pending is not None:
            self._attempt_start()
            return
        if not self.run_state.active:
            return
        before = self.run_state.state
        self.run_state.update(time.monotonic())
        if self.params["mode"] != "action" and \
                self.run_state.elapsed_past_end(time.monotonic()) >= self.params["settle_time"]:
            self._stop_stream()
            self.run_state.finish("trajectory sent to the end")
            self.get_logger().info("excitation done")
        elif self.params["mode"] == "action" and self._tracker is not None and \
                self._tracker.phase is GoalPhase.SENDING and \
                time.monotonic() - self._goal_sent_at > self.params["wait_timeout"]:
            self.stop(f"action server {self.action_name} did not answer the goal within "
                      f"{self.params['wait_timeout']} s")
            return
        elif self.params["mode"] == "action" and self.run_state.elapsed_past_end(time.monotonic()) > \
                RESULT_GRACE_S + self.params["goal_time_tolerance"]:
            self.stop("no result from the action server after the trajectory's end")
            return
        elif self._last_state is not None and \
                time.monotonic() - self._last_state[2] > max(1.0, 4 * self.params["state_timeout"]):
            self.stop(f"{self.params['joint_states_topic']} stopped arriving while moving")
            return
        if before is not self.run_state.state or self.run_state.active:
            self._publish_status()

    def _abort(self, message: str) -> None:
        self._stop_stream()
        self.run_state.abort(message)
        self.get_logger().error(f"excitation aborted: {message}")
        self._publish_status()

    def _set_message(self, message: str) -> None:
        if message != self.run_state.message:
            self.run_state.message = message
            self.get_logger().info(message)
            self._publish_status()

    def _publish_status(self) -> None:
        status = self.run_state.status()
        status["joint_states_ready"] = self._last_state is not None
        self.status_pub.publish(json_message(status))




def main(args: list[str] | None = None) -> int:
    return run(ExcitationNode, args, talk_on_shutdown=True)  # on Ctrl-C: cancel the goal, wait for its end


if __name__ == "__main__":
    raise SystemExit(main())
