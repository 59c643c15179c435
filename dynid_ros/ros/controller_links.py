"""``excitation_node``'s transports to a controller, one
:class:`~dynid_ros.execution.excitation_supervisor.ControllerLink` per mode (``action``:
control_msgs/FollowJointTrajectory, ``topic``: trajectory_msgs/JointTrajectory, ``stream``:
std_msgs/Float64MultiArray positions for a forward command controller).

Each link only moves messages; what to send and when to stop is the supervisor's. Before a motion each link asks
what the controller manager and the controller tell (:class:`~dynid_ros.ros.controller_probe.ControllerProbe`) and
refuses, with the reason, what the controller would refuse or misread
(:func:`~dynid_ros.execution.controller_check.controller_problem`); a stop is a decelerating trajectory the
controller executes (:class:`~dynid_ros.execution.stop_motion.StopMotion`): a trajectory on the topic, a goal that
preempts the running one, or the stream's own deceleration.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Callable

import numpy as np
from builtin_interfaces.msg import Duration
from rcl_interfaces.srv import GetParameters
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from dynid_ros.execution.controller_check import (
    activation_problem,
    controller_problem,
    interface_problem,
    joints_problem,
)
from dynid_ros.execution.excitation_supervisor import path_tolerances
from dynid_ros.execution.execution_profile import ExecutionProfile
from dynid_ros.execution.follow_joint_trajectory import (
    GoalPhase,
    GoalTracker,
    build_goal_spec,
    fill_goal,
    fill_trajectory,
    load_control_msgs,
)
from dynid_ros.execution.stop_motion import StopMotion, plan_stop
from dynid_ros.execution.stream_clock import StreamClock
from dynid_ros.execution.trajectory_execution import ControllerError, trajectory_samples
from dynid_ros.ros.controller_probe import ControllerProbe

HALT_JOIN_S = 1.0
"""Stream mode: how long a halt waits for the stream's thread to end (it publishes nothing after the halt anyway)."""

STALL_WARNING_S = 1.0
"""Stream mode: at most one stall warning per this many seconds."""

GIL_SWITCH_PERIODS = 0.25
"""Stream mode: while the stream's thread runs, the interpreter's thread switch interval is at most this many
command periods (Python's default, 5 ms, is five periods at 1 kHz: a thread that wakes up for its command waits
that long for the GIL while another thread runs Python, e.g. the executor building its wait set)."""


def stop_trajectory(stop: StopMotion, rate_hz: float) -> JointTrajectory:
    """The stop as a JointTrajectory: stamped with the start of its lead-in on the robot's clock when it has a stamp
    (else its points from ``lead`` after receipt), waypoints with positions, velocities and accelerations from there
    to rest."""
    t, q, dq, ddq = stop.waypoints(rate_hz)
    begin = stop.lead_in_span
    trajectory = fill_trajectory(JointTrajectory(), stop.joints, t + begin + stop.lead, q, dq, ddq,
                                 JointTrajectoryPoint, Duration)
    if stop.stamp > 0.0:
        stamp = stop.stamp - begin
        seconds = math.floor(stamp)
        trajectory.header.stamp.sec, trajectory.header.stamp.nanosec = int(seconds), int((stamp - seconds) * 1e9)
    return trajectory


def _checked(probe: ControllerProbe, joints: tuple[str, ...], stream: bool = False) -> str | None:
    """What the probe waits for, None once the controller takes ``joints``; ControllerError with the reason of
    a refusal. A controller that is not loaded or not active (yet) is waited for: it may be being switched."""
    setup, waiting = probe.poll()
    if setup is None:
        return waiting
    if stream and (problem := interface_problem(setup)) is not None:  # whatever its state: it never takes positions
        raise ControllerError(problem)
    waiting = activation_problem(setup)
    if waiting is not None:
        probe.refresh()
        return waiting
    problem = joints_problem(setup, joints)
    if problem is not None:
        raise ControllerError(problem)
    return None


class TopicLink:
    """The whole motion as one JointTrajectory on ``/<controller>/joint_trajectory``; a stop is another one."""

    confirms_end = False

    def __init__(self, node: Node, controller: str, point_rate_hz: float,
                 manager: str = "/controller_manager") -> None:
        self.node, self.point_rate_hz = node, point_rate_hz
        self.topic = f"/{controller}/joint_trajectory"
        self.publisher = node.create_publisher(JointTrajectory, self.topic, 10)
        self.probe = ControllerProbe(node, controller, manager)

    def problem(self, joints: tuple[str, ...]) -> str | None:
        """What sending waits for (a subscriber, the controller); None when the motion can be sent."""
        if self.node.count_subscribers(self.topic) == 0:
            return f"no subscriber on {self.topic}"
        return _checked(self.probe, joints)

    def send(self, profile: ExecutionProfile) -> None:
        """Publish the whole profile as one JointTrajectory."""
        t, q, dq, ddq = trajectory_samples(profile, self.point_rate_hz)
        self.publisher.publish(fill_trajectory(JointTrajectory(), profile.joints, t, q, dq, ddq,
                                               JointTrajectoryPoint, Duration))

    def halt(self, stop: StopMotion | None) -> None:
        """Publish the stop trajectory (nothing without a stop)."""
        if stop is not None:
            self.publisher.publish(stop_trajectory(stop, self.point_rate_hz))

    def awaiting_answer(self) -> bool:
        """Always False: a topic has no answer to wait for."""
        return False

    def sent_until(self) -> float:
        """Infinity: the whole motion goes in one message."""
        return math.inf  # the whole motion in one message

    def destroy(self) -> None:
        """Destroy the controller probe."""
        self.probe.destroy()


class StreamLink:
    """Positions of the named ``joints`` (the forward controller's, in its order, checked against its ``joints``
    parameter) at ``rate_hz``.

    Each command is the profile at the wall-clock time of the command, at the controller manager's
    ``update_rate`` (or a given ``rate_hz`` at least that): the forward controller gets a new position at every
    update, so it never sees a step the checked profile does not make; after a stall of this process the profile
    time advances by two periods at most (:class:`~dynid_ros.execution.stream_clock.StreamClock`: no jump, the
    motion runs late). A controller manager that does not tell its rate, or a slower stream, is refused, and so is
    a controller whose ``interface_name`` is not ``position`` (the UR driver's ``forward_velocity_controller`` and
    ``forward_effort_controller`` have the same joints as its position one: positions sent there would be applied
    as rad/s or N m). Joints of the controller the profile does not move hold the position measured at the start.

    The commands go out from a thread of the link's own (rclpy publishers may publish from any thread), paced on
    a monotonic clock with absolute deadlines, so the node's executor (joint states, the supervisor's ticks,
    services) never delays one; it starts on :meth:`send` and ends after the motion, or after the deceleration
    :meth:`halt` asks for (stop, abort, shutdown, Ctrl-C): a forward controller holds its last command, so a stream
    that just ended would stop the arm at once; it decelerates from the last command (the controller's setpoint)
    within the stop's acceleration limits instead. :meth:`halt` without a stop, or :meth:`join`, ends the thread
    (joined): nothing is published after it. :meth:`sent_until` tells the supervisor how far along the profile the
    stream is. (A timer at the stream's rate on the node's MultiThreadedExecutor stalled: rclpy before
    ros2/rclpy#1547 yields a task again while it still waits in the thread pool's queue and then does not block, so
    its main thread spins rebuilding the wait set, holding the GIL the pool's threads need to start the task.)
    """

    confirms_end = False

    def __init__(self, node: Node, controller: str, rate_hz: float, joints: list[str],
                 held: Callable[[list[str]], np.ndarray], active: Callable[[], bool],
                 manager: str = "/controller_manager") -> None:
        self.node, self.rate_hz, self.joints = node, rate_hz, list(joints)
        self.manager = "/" + manager.strip("/")
        self._update_rate: float | None = None
        self._rate_request = None  # asked at once: its discovery runs while the node waits for a start
        self._rate_client = node.create_client(GetParameters, f"{self.manager}/get_parameters")
        self.topic, self.controller = f"/{controller}/commands", f"/{controller}"
        self.publisher = node.create_publisher(Float64MultiArray, self.topic, 10)
        self.probe = ControllerProbe(node, controller, manager)
        self._held, self._active = held, active
        self._lock = threading.Lock()  # the stream's thread and the executor's: the last command, halting
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sent, self._streaming = 0.0, False
        self._decelerate: StopMotion | None = None  # the stop asked for (the thread decelerates, then ends)
        self._warned = -float("inf")  # when the stream's thread last logged a stall

    def problem(self, joints: tuple[str, ...] = ()) -> str | None:
        """Reachable once the controller subscribes, commands positions and its ``joints`` parameter
        (forward_command_controller) is exactly ``stream_joints``, in order; anything else is refused."""
        if self.node.count_subscribers(self.topic) == 0:
            return f"no subscriber on {self.topic}"
        if self._rate_request is None and self._rate_client.service_is_ready():  # asked beside the joints
            self._rate_request = self._rate_client.call_async(GetParameters.Request(names=["update_rate"]))
        waiting = _checked(self.probe, tuple(self.joints), stream=True)
        if waiting is not None:
            return waiting
        setup, _ = self.probe.poll()
        theirs = list(setup.joints) if setup.joints is not None else []
        if theirs != self.joints:
            listed = ", ".join(theirs) or "its joints parameter is unset"
            raise ControllerError(f"stream_joints ({', '.join(self.joints)}) are not the joints of {self.controller} "
                                  f"in its order ({listed})")
        if self._update_rate is None:
            return self._ask_update_rate()
        return None

    def _ask_update_rate(self) -> str | None:
        """The controller manager's ``update_rate`` [Hz]; the stream's rate is it (``rate_hz`` 0) or above."""
        if self._rate_request is None and self._rate_client.service_is_ready():
            self._rate_request = self._rate_client.call_async(GetParameters.Request(names=["update_rate"]))
        if self._rate_request is None or not self._rate_request.done():
            return f"waiting for the update_rate of {self.manager}"
        response = self._rate_request.result()
        value = response.values[0] if response is not None and response.values else None
        rate = float(value.integer_value or value.double_value) if value is not None else 0.0
        if rate <= 0:
            raise ControllerError(f"{self.manager} has no update_rate: stream mode cannot match the controller's "
                                  "rate (its commands would step); use mode action or topic")
        if 0 < self.rate_hz < rate:
            raise ControllerError(f"stream_rate_hz {self.rate_hz:g} is below {self.manager}'s update_rate {rate:g} "
                                  "Hz: the forward controller would see steps between commands (leave "
                                  "stream_rate_hz at 0 to match it)")
        self._update_rate = rate
        self.rate_hz = self.rate_hz or rate
        return None

    def send(self, profile: ExecutionProfile) -> None:
        """Start streaming ``profile`` from a thread of its own (the one of an earlier motion is stopped first)."""
        unknown = [j for j in profile.joints if j not in self.joints]
        if unknown:
            raise ControllerError(f"stream_joints ({', '.join(self.joints)}) lack trajectory joint(s) "
                                  f"{', '.join(unknown)}: the forward controller cannot move them")
        self.join()
        base = np.asarray(self._held(self.joints), dtype=float)
        order = np.array([self.joints.index(j) for j in profile.joints])
        with self._lock:
            self._sent, self._streaming, self._decelerate = 0.0, False, None
        self._stop = threading.Event()
        clock = StreamClock(self.rate_hz, profile.duration, time.monotonic())
        self._thread = threading.Thread(target=self._stream, args=(profile, base, order, clock, self._stop),
                                        name="dynid_stream", daemon=True)
        self._thread.start()

    def _stream(self, profile: ExecutionProfile, base: np.ndarray, order: np.ndarray, clock: StreamClock,
                stop: threading.Event) -> None:
        """The stream's thread: one command per period on absolute monotonic deadlines (a late wake-up does not
        shift the next ones; after a stall it restarts from now, with no burst), until ``stop``, the run's end, or
        the end of the deceleration :meth:`halt` asked for."""
        period = 1.0 / self.rate_hz
        switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(switch_interval, GIL_SWITCH_PERIODS * period))
        deadline = time.monotonic()
        decelerating: tuple[StopMotion, float] | None = None
        try:
            while True:
                deadline += period
                now = time.monotonic()
                if now > deadline + period:  # woke up more than a period late: no catching up in a burst
                    deadline = now
                if stop.wait(max(deadline - now, 0.0)):
                    return
                with self._lock:
                    asked = self._decelerate
                if asked is not None and decelerating is None:
                    plan = self._deceleration(profile, asked)
                    decelerating = (plan, StreamClock(self.rate_hz, plan.duration, time.monotonic()))
                if decelerating is not None:
                    if not self._publish_stop(*decelerating, base, order, stop):
                        return
                    continue
                if not self._active():  # the run is marked active right after send(): stop only once it was
                    if self._streaming:
                        return
                    continue
                if not self._publish(profile, base, order, clock, stop):
                    return
        except Exception as err:  # noqa: BLE001 - the supervisor sees the stream stop (it falls late) and stops
            self.node.get_logger().error(f"the stream to {self.topic} failed: {err}")
        finally:
            sys.setswitchinterval(switch_interval)

    def _deceleration(self, profile: ExecutionProfile, asked: StopMotion) -> StopMotion:
        """The stop of the stream: from the last command (position and velocity of the profile there: the forward
        controller's setpoint, which the arm follows), within the acceleration limits of the stop asked for."""
        with self._lock:
            elapsed = self._sent
        q, dq, _ = profile.sample(np.array([elapsed]))
        return plan_stop(profile.joints, q[0], dq[0] if self._streaming else np.zeros_like(q[0]), asked.limits)

    def _publish_stop(self, plan: StopMotion, clock: StreamClock, base: np.ndarray, order: np.ndarray,
                      stop: threading.Event) -> bool:
        """Publish the deceleration's command of now; False once at rest (the last command holds) or halted. Its time
        runs on a :class:`~dynid_ros.execution.stream_clock.StreamClock` as the motion's did: after a stall of this
        process it continues where it was (the forward controller held the last command meanwhile) instead of
        jumping ahead along the deceleration, a position step of the stall's length."""
        elapsed = clock.tick(time.monotonic())
        command = base.copy()
        command[order] = plan.sample(np.array([elapsed]))[0][0]
        with self._lock:
            if stop.is_set():
                return False
            self.publisher.publish(self._message(command))
        return elapsed < plan.duration

    def _message(self, command: np.ndarray) -> Float64MultiArray:
        message = Float64MultiArray(data=command.tolist())
        message.layout.dim = [MultiArrayDimension(label=",".join(self.joints), size=len(self.joints),
                                                  stride=len(self.joints))]
        return message

    def _publish(self, profile: ExecutionProfile, base: np.ndarray, order: np.ndarray, clock: StreamClock,
                 stop: threading.Event) -> bool:
        """Publish the command of now (False: halted meanwhile, nothing published)."""
        stalls = len(clock.stalls)
        elapsed = clock.tick(time.monotonic())
        if len(clock.stalls) > stalls and time.monotonic() - self._warned >= STALL_WARNING_S:
            # throttled here: rclpy's own throttle looks up the caller's source file at every call (milliseconds)
            self._warned = time.monotonic()
            at, gap = clock.stalls[-1]
            self.node.get_logger().warning(f"the stream stalled for {gap:.3f} s at t = {at:.2f} s of the motion: it "
                                           f"continues from there, {clock.lag:.2f} s late "
                                           f"({len(clock.stalls)} stall(s) so far)")
        command = base.copy()
        command[order] = profile.sample(np.array([elapsed]))[0][0]
        with self._lock:  # halt() sets stop under this lock: nothing is published once it returned
            if stop.is_set() or self._decelerate is not None:
                return not stop.is_set()
            self.publisher.publish(self._message(command))
            self._sent, self._streaming = elapsed, True
        return True

    def halt(self, stop: StopMotion | None) -> None:
        """Stop streaming: with ``stop``, the stream decelerates to rest within its acceleration limits and then
        ends (its last command holds the pose; :meth:`join` waits for it); without, it ends now (joined)."""
        if stop is None or self._thread is None or not self._thread.is_alive():
            self.join()
            return
        with self._lock:
            self._decelerate = stop

    def join(self, timeout: float = HALT_JOIN_S) -> None:
        """Wait up to ``timeout`` s (plus a deceleration under way) for the stream's thread, then end it."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            with self._lock:
                decelerating = self._decelerate
            thread.join(timeout=timeout + (decelerating.duration if decelerating is not None else 0.0))
        with self._lock:
            self._stop.set()
        self._thread = None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=HALT_JOIN_S)
            if thread.is_alive():
                self.node.get_logger().error(f"the stream's thread did not end within {HALT_JOIN_S:g} s (it "
                                             "publishes nothing more)")

    def awaiting_answer(self) -> bool:
        """Always False: a stream has no answer to wait for."""
        return False

    def sent_until(self) -> float:
        """Profile time of the last command sent (0 before the first)."""
        with self._lock:
            return self._sent

    def destroy(self) -> None:
        """Wait for the streaming thread to end, then destroy the controller probe."""
        self.join()
        self.probe.destroy()


class ActionLink:
    """One FollowJointTrajectory goal per motion; the server's result ends it (``on_end(success, message)``), its
    feedback tells the motion's time (``on_feedback(names, positions, velocities, time_from_start)``).

    The goal's path tolerance is ``path_tolerance`` for every joint, or when that is 0 the profile's
    own (:func:`dynid_ros.execution.excitation_supervisor.path_tolerances`); negative: none (the
    controller's default). A rejected goal is ended with the reason the controller's checks give
    (:mod:`~dynid_ros.execution.controller_check`). A stop is a goal of its own (the decelerating trajectory, no
    tolerances) that preempts the running one (joint_trajectory_controller's ``goal_accepted_callback`` ->
    ``preempt_active_goal``, the new trajectory from the measured state); only if the server refuses it is the
    running goal canceled (the controller then holds at once, or decelerates where its ``decelerate_on_cancel``
    is set).
    """

    confirms_end = True

    def __init__(self, node: Node, controller: str, params: dict, on_end: Callable[[bool, str], None],
                 on_feedback: Callable[[list, list, list, float | None], None] = lambda *_: None,
                 manager: str = "/controller_manager") -> None:
        self.node, self.params, self._on_end, self._on_feedback = node, params, on_end, on_feedback
        self.action_name = f"/{controller}/follow_joint_trajectory"
        self.probe = ControllerProbe(node, controller, manager)
        self.client = None
        self.tracker: GoalTracker | None = None
        self._handle = None
        self.stop_tracker: GoalTracker | None = None
        self._joints: tuple[str, ...] = ()

    def problem(self, joints: tuple[str, ...] = ()) -> str | None:
        """What sending waits for (the action server, the controller); None when the goal can be sent."""
        if self.client is None:
            from rclpy.action import ActionClient

            self.client = ActionClient(self.node, load_control_msgs().FollowJointTrajectory, self.action_name)
        if not self.client.server_is_ready():  # the first thing a user must fix; the controller's checks then
            return f"action server {self.action_name} not available"
        return _checked(self.probe, joints)

    def send(self, profile: ExecutionProfile) -> None:
        """Send the profile as one FollowJointTrajectory goal with its path and goal tolerances."""
        from control_msgs.msg import JointTolerance

        p = self.params
        path = p["path_tolerance"] if p["path_tolerance"] else path_tolerances(profile)
        spec = build_goal_spec(profile, p["point_rate_hz"], np.maximum(path, 0.0), p["goal_tolerance"],
                               goal_time_tolerance=p["goal_time_tolerance"])
        goal = fill_goal(load_control_msgs().FollowJointTrajectory.Goal(), spec, JointTrajectoryPoint,
                         JointTolerance, Duration)
        self.tracker = tracker = GoalTracker()
        self._handle = None
        self._joints = tuple(profile.joints)
        self.client.send_goal_async(goal, feedback_callback=self._feedback).add_done_callback(
            lambda f: self._on_goal_response(tracker, f))

    def _feedback(self, message: object) -> None:
        feedback = message.feedback
        desired = feedback.desired
        tfs = desired.time_from_start.sec + 1e-9 * desired.time_from_start.nanosec
        self._on_feedback(list(feedback.joint_names), list(desired.positions), list(desired.velocities), tfs)

    def _on_goal_response(self, tracker: GoalTracker, future: object) -> None:
        try:
            handle = future.result()
        except Exception as err:  # noqa: BLE001 - transport errors end the goal
            return self._end(tracker, tracker.on_error(f"sending the goal failed: {err}"))
        cancel_now = tracker.on_goal_response(bool(handle.accepted))
        if not handle.accepted:
            return self._rejected(tracker)
        if tracker is self.tracker:
            self._handle = handle
        handle.get_result_async().add_done_callback(lambda f: self._on_result(tracker, f))
        if cancel_now:  # stopped while the goal was on its way (also a goal of an earlier run)
            handle.cancel_goal_async()

    def _rejected(self, tracker: GoalTracker) -> None:
        """A rejected goal ends with the reason the controller's checks give, asked now (a timer polls the probe:
        this runs in a future's callback)."""
        self.probe.refresh()
        deadline = time.monotonic() + 2.0
        timer = None

        def diagnose() -> None:
            setup, _ = self.probe.poll()
            if setup is None and time.monotonic() < deadline:
                return
            timer.cancel()
            self.node.destroy_timer(timer)
            reason = None
            if setup is not None:
                reason = controller_problem(setup, self._joints)
            text = reason or "the controller gave no reason (its log says why)"
            self._end(tracker, tracker.on_error(f"goal rejected by {self.action_name}: {text}"))

        timer = self.node.create_timer(0.05, diagnose)

    def _on_result(self, tracker: GoalTracker, future: object) -> None:
        try:
            response = future.result()
            outcome = tracker.on_result(int(response.status), int(response.result.error_code),
                                        str(response.result.error_string))
        except Exception as err:  # noqa: BLE001
            outcome = tracker.on_error(f"getting the result failed: {err}")
        self._end(tracker, outcome)

    def _end(self, tracker: GoalTracker, outcome: object) -> None:
        if tracker is not self.tracker:  # an earlier run's goal: this run is not concerned
            self.node.get_logger().info(f"earlier goal ended: {outcome.message}")
            return
        self._handle = None
        self._on_end(outcome.success, outcome.message)

    def halt(self, stop: StopMotion | None) -> None:
        """Stop the running goal: a stop goal preempts it (or, without a stop, or when the stop goal is rejected,
        the goal is canceled)."""
        if stop is None or self.client is None or self.tracker is None or self.tracker.finished:
            self._cancel()
            return
        goal = load_control_msgs().FollowJointTrajectory.Goal()
        goal.trajectory = stop_trajectory(stop, self.params["point_rate_hz"])
        self.stop_tracker = tracker = GoalTracker()
        if self.tracker is not None:
            self.tracker.cancel_wanted = True  # its end (preempted) is the stop asked for
        self.client.send_goal_async(goal).add_done_callback(lambda f: self._on_stop_response(tracker, f))

    def _on_stop_response(self, tracker: GoalTracker, future: object) -> None:
        try:
            handle = future.result()
        except Exception as err:  # noqa: BLE001
            handle, error = None, str(err)
        else:
            error = None
        accepted = handle is not None and bool(handle.accepted)
        tracker.on_goal_response(accepted)
        if accepted:
            handle.get_result_async().add_done_callback(lambda f: self._on_stop_result(tracker, f))
            return
        tracker.on_error("rejected")
        self.node.get_logger().error(f"the stop goal was {'not sent: ' + error if error else 'rejected'} by "
                                     f"{self.action_name}: canceling the goal instead (the controller holds where "
                                     f"the arm is)")
        self._cancel()

    def _on_stop_result(self, tracker: GoalTracker, future: object) -> None:
        try:
            response = future.result()
            outcome = tracker.on_result(int(response.status), int(response.result.error_code),
                                        str(response.result.error_string))
        except Exception as err:  # noqa: BLE001
            outcome = tracker.on_error(f"getting the result of the stop failed: {err}")
        if outcome.success:
            self.node.get_logger().info("the stop goal ended: the arm holds")
        else:
            self.node.get_logger().warning(f"the stop goal ended: {outcome.message}")

    def _cancel(self) -> None:
        if self.tracker is not None and self.tracker.request_cancel() and self._handle is not None:
            self._handle.cancel_goal_async()

    def awaiting_answer(self) -> bool:
        """Whether the goal was sent and the server has not accepted or rejected it yet."""
        return self.tracker is not None and self.tracker.phase is GoalPhase.SENDING

    def sent_until(self) -> float:
        """Infinity: the whole motion goes in one goal."""
        return math.inf  # the whole motion in one goal

    def wait_for_end(self, timeout: float) -> bool:
        """Spin the node (its executor has stopped) until the stop is in the controller's hands (the stop goal
        answered) or the goal ended, at most ``timeout`` s."""
        from rclpy.executors import SingleThreadedExecutor

        def settled() -> bool:
            stop = self.stop_tracker
            if stop is not None:
                return stop.phase is not GoalPhase.SENDING
            return self.tracker is None or self.tracker.finished

        if settled():
            return True
        executor = SingleThreadedExecutor(context=self.node.context)
        executor.add_node(self.node)
        deadline = time.monotonic() + timeout
        try:
            while not settled() and time.monotonic() < deadline and self.node.context.ok():
                executor.spin_once(timeout_sec=0.05)
        finally:
            executor.remove_node(self.node)
            executor.shutdown()  # its guard condition now, not at garbage collection after the context's end
        return settled()

    def destroy(self) -> None:
        """Destroy the controller probe and the action client."""
        self.probe.destroy()
        if self.client is not None:  # rclpy's destroy_node leaves action clients alive
            self.client.destroy()
            self.client = None
