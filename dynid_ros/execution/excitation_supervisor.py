"""The start / wait / supervise / abort logic of ``excitation_node``, without ROS.

:class:`ExcitationSupervisor` owns one :class:`~dynid_ros.execution.trajectory_execution.ExcitationRun`
and the robot's live joint states (:class:`~dynid_ros.execution.joint_state_cache.JointStateCache`),
and talks to the controller only through a :class:`ControllerLink` the node gives it (a
FollowJointTrajectory client, a JointTrajectory publisher or a position stream). Its rules:

- a start takes a snapshot of the pose (every robot joint, fresh at the start of the attempt), then
  builds and checks the whole motion from it; that heavy work runs in the caller's thread with no
  lock held, so the node calls :meth:`start` from a thread that is not the one delivering joint
  states and ticks (with a single thread, the pose counts as fresh as it was when the work began);
- before sending, the pose is read again: if the robot moved more than :data:`START_POSE_TOLERANCE`
  since the snapshot, nothing is sent and the motion is built again from the new pose; that, and a
  controller not yet reachable, are waited for up to ``wait_timeout``;
- joint-state staleness while moving counts from the later of the last message and the motion's own
  start, so the time spent preparing never makes a motion that was just sent look stale;
- where the controller does not report the end (topic and stream modes), the run is ``done`` only
  when the link has sent the whole motion (:meth:`ControllerLink.sent_until`: a stream sends it one command
  at a time and, after a stall of its process, runs late), the measured joints followed what was sent
  (:func:`path_tolerances`) and reached its end pose; a stream more than :data:`FOLLOW_LAG_S` late is stopped;
- the motion's time is the controller's (:class:`~dynid_ros.execution.controller_clock.ControllerClock`, from the
  FollowJointTrajectory feedback or the controller's state topic; the stream's own in stream mode), not the wall
  clock: a speed-scaled or paused controller makes the motion longer, and a paused arm is waiting, not failing
  (progress, the end and the deadlines follow the controller's time);
- every stop (``~/stop``, an abort, shutdown) is a decelerating trajectory to a hold from the measured state within
  the robot's acceleration limits (:func:`~dynid_ros.execution.stop_motion.plan_stop`), and the arm is watched until
  it is at rest.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

import numpy as np

from dynid_ros.errors import DynidError
from dynid_ros.execution.command_latency import CommandLatency
from dynid_ros.execution.controller_clock import ControllerClock, profile_time_of
from dynid_ros.execution.joint_state_cache import JointStateCache
from dynid_ros.execution.robot_limits import RobotLimits
from dynid_ros.execution.stop_motion import LeadIn, StopMotion, plan_stop, usable_stamp
from dynid_ros.execution.trajectory_execution import (
    ControllerError,
    ExcitationRun,
    ExecutionProfile,
    prepare_profile,
)

TICK_PERIOD_S = 0.1
"""The period [s] the node calls :meth:`ExcitationSupervisor.tick` at."""

START_POSE_TOLERANCE = 1e-3
"""Largest motion [rad or m] of any joint between the pose snapshot a motion is built from and the
moment it is sent; beyond it the robot was not at rest and nothing is sent."""

MIN_PATH_TOLERANCE = 0.05
"""Smallest path tolerance [rad or m] derived from a profile (:func:`path_tolerances`)."""

TRACKING_LAG_S = 0.1
"""Lag [s] a controller may have behind its reference: the derived path tolerance of a joint is its
peak speed times this lag (at least :data:`MIN_PATH_TOLERANCE`)."""

FOLLOW_LAG_S = 2.0
"""Topic and stream modes: how late a controller may start the motion (delivery, its own checks: sim_node
checks every trajectory against the robot's limits first, about a second on a loaded machine): while
moving, the measured pose must be within the path tolerance of the reference at some time of the last
``FOLLOW_LAG_S`` before it arrived (and before what the link sent); at the end, within the path tolerance
of the end pose. Stream mode: also how far the stream's profile time may fall behind the wall-clock time
(:class:`~dynid_ros.execution.stream_clock.StreamClock` after stalls) before the motion is stopped."""

RESULT_GRACE_S = 10.0
"""Action mode: seconds after the profile's end on the controller's clock (plus the goal time tolerance) to wait for
the result."""

REPORT_SILENCE_S = 2.0
"""A controller that reported its time and then stays silent longer than this (or ``wait_timeout`` if longer) while
moving is lost: the motion is stopped."""

STOP_SETTLE_S = 1.0
"""Seconds after a stop's planned end at which the arm must be at rest (else the stop was not executed)."""

REST_SPEED = 0.02
"""Largest joint speed [rad/s or m/s] of an arm at rest."""

STOP_ACCELERATION_FRACTION = 0.8
"""A stop decelerates at most this fraction of the robot's acceleration limits: the controller blends from the
arm's state on arrival into the stop's first point (joint_trajectory_controller's spline from the current state),
which adds to the stop's own deceleration (sim_node refused a stop planned at 97 % of the limit: 105 % with the
blend)."""

MAX_CARRY_S = 0.5
"""A measurement is carried forward along the motion by at most this age [s] when a stop is planned from it."""

LOCATE_WINDOW_S = 0.5
"""A stop locates the measured state on the motion within this [s] of the controller's last reported time (before
the measurement's age, after it)."""

MOVING_STATE_TIMEOUT_FACTOR = 4.0
"""While moving, joint states older than this many ``state_timeout`` (and at least 1 s) stop the motion."""


def stop_deceleration(robot: RobotLimits, joints: tuple[str, ...] | list[str]) -> np.ndarray:
    """(n,) the deceleration [rad/s^2] a stop of ``joints`` keeps to: :data:`STOP_ACCELERATION_FRACTION` of the
    robot's acceleration limits (also the ``max_deceleration_on_cancel`` of the controllers the package launches,
    :func:`~dynid_ros.execution.stop_motion.cancel_constraints`)."""
    return STOP_ACCELERATION_FRACTION * robot.limits.acceleration[robot.indices(joints)]


def path_tolerances(profile: ExecutionProfile, rate_hz: float = 100.0) -> np.ndarray:
    """Per-joint path position tolerance of ``profile``: ``max(MIN_PATH_TOLERANCE, TRACKING_LAG_S * peak |q'|)``.

    Finite by construction: a motion that leaves its reference by more than a tenth of a second of
    its own speed (or 0.05 rad) is not the motion that was checked against the limits.
    """
    _, _, dq, _ = profile.sample_at_rate(rate_hz)
    return np.maximum(MIN_PATH_TOLERANCE, TRACKING_LAG_S * np.abs(dq).max(axis=0))


class ControllerLink(Protocol):
    """The node's transport to one controller."""

    confirms_end: bool
    """True when the controller reports the end of the motion (action mode)."""

    def problem(self, joints: tuple[str, ...]) -> str | None:
        """Why the controller cannot take a motion of ``joints`` now (None: it can); raises ControllerError when it
        never will (its checks refuse it: :mod:`~dynid_ros.execution.controller_check`)."""

    def send(self, profile: ExecutionProfile) -> None:
        """Send the whole motion (raises DynidError when it cannot)."""

    def halt(self, stop: StopMotion | None) -> None:
        """Stop the motion along ``stop`` (a decelerating trajectory to a hold; None: hold where it is)."""

    def awaiting_answer(self) -> bool:
        """True while a sent goal has had no answer from the controller."""

    def sent_until(self) -> float:
        """Profile time [s] up to which the motion was sent: ``math.inf`` once all of it was (action and topic
        modes send it at once; a stream sends one command per period and runs late after a stall)."""


@dataclass(frozen=True)
class SupervisorSettings:
    """The node's parameters the supervisor uses."""

    cycles: int = 1
    check_rate_hz: float = 1000.0
    state_timeout: float = 0.5
    wait_timeout: float = 10.0
    settle_time: float = 0.2
    goal_time_tolerance: float = 0.5
    joint_states_topic: str = "/joint_states"
    controller: str = "the controller"
    mode: str = "action"
    stop_rate_hz: float = 50.0
    """Waypoints per second of a stop trajectory."""


class Phase(str, Enum):
    """Where a start is: nothing pending, building the motion, waiting to send it, sent."""

    IDLE = "idle"
    PREPARING = "preparing"
    WAITING = "waiting"
    SENT = "sent"


@dataclass
class _Pending:
    deadline: float
    wait_for_states: bool
    profile: ExecutionProfile | None = None
    snapshot: np.ndarray | None = None
    stop_reason: str | None = None
    prepared: bool = False


class ExcitationSupervisor:
    """One excitation at a time, from ``start`` to ``done`` or ``aborted``.

    Args:
        settings: timeouts and rates (:class:`SupervisorSettings`).
        load: returns ``(excitation, robot)``: the loaded trajectory file and the robot's limits.
        link: the controller transport.
        on_change: called (no lock held) after every change of the status.
        log: ``log(level, message)``, level ``info`` | ``warning`` | ``error``.
        clock: monotonic seconds.
        stamp_clock: seconds on the clock of the joint states' header stamps (the node's ROS clock).
    """

    def __init__(self, settings: SupervisorSettings, load: Callable[[], tuple[object, object]],
                 link: ControllerLink, on_change: Callable[[], None] = lambda: None,
                 log: Callable[[str, str], None] = lambda level, message: None,
                 clock: Callable[[], float] = time.monotonic, stamp_clock: Callable[[], float] = time.time) -> None:
        self.settings, self._load, self.link = settings, load, link
        self._on_change, self._log, self.clock, self.stamp_clock = on_change, log, clock, stamp_clock
        self.states = JointStateCache(settings.joint_states_topic)
        self.latency = CommandLatency()  # how late commands reach the controller: the lead of a stop
        self._last_tick: float | None = None
        self.run = ExcitationRun()
        self.phase = Phase.IDLE
        self.tolerance = np.zeros(0)
        self._pending: _Pending | None = None
        self._sent_at = 0.0
        self._end_sent_at: float | None = None  # when the link was first seen to have sent the profile's end
        self._end_reached_at: float | None = None  # when the motion time first reached the profile's end
        self.motion_clock: ControllerClock | None = None
        self._report: tuple | None = None  # the controller's last report, not yet given to the motion clock
        self._robot = None
        self.stopping: tuple[StopMotion, float] | None = None  # the stop sent last and when (watched until at rest)
        self._lock = threading.RLock()
        self._attempting = threading.Lock()  # one start attempt at a time (service thread or tick)

    # ------------------------------------------------------------------------------------------
    # Inputs

    def on_joint_state(self, names: list[str], positions: list[float], velocities: list[float] = (),
                       stamp: float = 0.0) -> None:
        """Merge one JointState message (by joint name; other publishers' joints are kept); ``stamp``: its header
        stamp [s] (0: none)."""
        with self._lock:
            first = self.states.empty
            now = self.clock()
            try:
                self.states.update(names, positions, now, velocities, stamp)
            except DynidError as err:
                self._log("warning", str(err))
                return
            if stamp > 0.0:
                received = self.stamp_clock()
                if usable_stamp(stamp, received):
                    self.latency.record_age(age=received - stamp, at=now)
        if first:
            self._on_change()  # an orchestrator waits for joint_states_ready

    def start(self, wait_for_states: bool = False) -> tuple[bool, str]:
        """Check, build and send the motion (or wait for the controller); returns (accepted, message).

        Refused (False, reason) when a run is active or starting, the trajectory or the robot is bad, the
        pose is unknown or stale, or the motion leaves the robot's limits.
        """
        with self._lock:
            if self.run.active or self.phase in (Phase.PREPARING, Phase.WAITING):
                busy = self.run.state.value if self.run.active else "starting"
                return False, f"already {busy}"
            self.run = ExcitationRun()
            self._pending = _Pending(self.clock() + self.settings.wait_timeout, wait_for_states)
            self.phase = Phase.WAITING
        result = self._attempt()
        self._on_change()
        return result

    def stop(self, reason: str = "stopped on request") -> tuple[bool, str]:
        """Stop the motion, or the start being prepared or waited for."""
        result = self._stop(reason)
        self._on_change()
        return result

    def _stop(self, reason: str) -> tuple[bool, str]:
        with self._lock:
            if self.phase is Phase.PREPARING:
                self._pending.stop_reason = reason
                return True, reason
            if self.phase is Phase.WAITING:
                self._finish_abort(f"{reason} before moving")
                return True, reason
            if not self.run.active:
                return False, f"not moving (state {self.run.state.value})"
            self._halt(self.clock())
            self._finish_abort(reason)
        return True, reason

    def on_controller_state(self, names: list[str], positions: list[float], velocities: list[float] = (),
                            time_from_start: float | None = None) -> None:
        """The controller's report of its desired state (FollowJointTrajectory feedback ``desired``, or ``reference``
        of its state topic) and, when it tells it, its trajectory time: the motion's time
        (:class:`~dynid_ros.execution.controller_clock.ControllerClock`)."""
        with self._lock:  # kept: located on the profile when the time is needed (10 Hz), not at the report's rate
            self._report = (self.clock(), list(names), list(positions), list(velocities), time_from_start)

    def _feed_clock(self) -> None:
        """Give the controller's last report, if new, to the motion clock."""
        report, clock = self._report, self.motion_clock
        if report is None or clock is None or not self.run.active:
            return
        self._report = None
        wall, names, positions, velocities, time_from_start = report
        index = {name: k for k, name in enumerate(names)}
        if any(j not in index for j in clock.profile.joints) or len(positions) != len(names):
            return
        q = np.array([positions[index[j]] for j in clock.profile.joints], dtype=float)
        dq = (np.array([velocities[index[j]] for j in clock.profile.joints], dtype=float)
              if len(velocities) == len(names) else None)
        clock.report(wall, q, dq, time_from_start)

    def motion_time(self, now: float) -> float:
        """The motion's time at ``now``: what the link sent (stream mode), else the controller's clock."""
        if self.run.profile is None or self.run.t_start is None:
            return 0.0
        if self.settings.mode == "stream":
            return min(self.link.sent_until(), self.run.profile.duration)
        with self._lock:
            self._feed_clock()
        return self.motion_clock.now(now) if self.motion_clock is not None else 0.0

    def controller_ended(self, success: bool, message: str) -> None:
        """The controller's verdict on the motion (action mode)."""
        with self._lock:
            if not self.run.active:
                return
            if success:
                if self.motion_clock is not None:
                    self.motion_clock.finish(self.clock())
                self.run.finish(message)
                self._log("info", f"excitation done: {message}")
                self.phase = Phase.IDLE
            else:
                self._finish_abort(message)
        self._on_change()

    def tick(self) -> None:
        """Called periodically (every :data:`TICK_PERIOD_S`): retry a waiting start, supervise a running motion, watch
        a stop; how late it runs is this process's scheduling delay (the stop's lead without stamped joint states)."""
        now = self.clock()
        if self._last_tick is not None:
            self.latency.record_lateness(lateness=now - self._last_tick - TICK_PERIOD_S, at=now)
        self._last_tick = now
        if self.phase is Phase.WAITING:
            self._attempt()
            self._on_change()
            return
        with self._lock:
            if self.stopping is not None:
                self._watch_stop(self.clock())
            if not self.run.active:
                return
            now = self.clock()
            self._feed_clock()
            self.run.update(self.run.t_start + self.motion_time(now))  # progress: the controller's time
            problem = self._supervise(now)
            if problem is not None:
                self._halt(now)
                self._finish_abort(problem)
        self._on_change()

    # ------------------------------------------------------------------------------------------
    # Stop

    def stop_plan(self, now: float) -> StopMotion | None:
        """The stop of the running motion at ``now``, within the robot's acceleration limits; None before a motion
        was sent.

        Its deceleration starts ``lead`` from now (:meth:`CommandLatency.lead
        <dynid_ros.execution.command_latency.CommandLatency.lead>`: the measured delivery delay, at least
        :data:`~dynid_ros.execution.stop_motion.LEAD_S`), from the measured state when that is fresh, carried forward
        to then along the motion (the arm goes on with it until the stop arrives: measured plus the motion's change
        since the measurement, located on the motion by its own position and velocity,
        :func:`~dynid_ros.execution.controller_clock.profile_time_of`, not by the controller's last report, which is
        as late as the reports are). When the measurement's stamp is on the sender's clock the stop is stamped and
        begins now with that carried motion as its lead-in (:class:`~dynid_ros.execution.stop_motion.LeadIn`): a
        controller that receives it at any time before its deceleration takes it up where the arm is. Else it starts
        ``lead`` after its receipt. Without fresh joint states it starts from the motion's reference at the controller's
        time."""
        run, robot = self.run, self._robot
        if run.profile is None or robot is None:
            return None
        joints = tuple(run.profile.joints)
        limits = stop_deceleration(robot, joints)
        received = self.states.received(joints)
        t_now = self.motion_time(now)
        if received is None or now - received > max(self.settings.state_timeout, 0.1):
            q, dq, _ = run.profile.sample(np.array([t_now]))
            return plan_stop(joints, q[0], dq[0], limits)
        measured = self.states.measured(joints)
        stamp_now = self.stamp_clock()
        stamped = usable_stamp(measured.stamp, stamp_now)
        age = min(max(stamp_now - measured.stamp if stamped else now - received, 0.0), MAX_CARRY_S)
        clock = self.motion_clock
        # the controller's speed where it last reported (its time then, not now: a report is late on a loaded machine)
        speed = clock.speed(clock.last_report) if clock is not None and clock.reporting and \
            self.settings.mode != "stream" else 1.0
        # where the measurement is along the motion: its own state located on the profile, around the controller's
        # last reported time (stale by that report's delay, which must not shift the carried state along the path)
        velocity = measured.v if np.all(np.isfinite(measured.v)) else None
        then = profile_time_of(run.profile, measured.q, velocity, low=t_now - age * speed - LOCATE_WINDOW_S,
                               high=t_now + LOCATE_WINDOW_S, near=t_now - age * speed)
        lead = self.latency.lead(now=now)
        step = 1.0 / self.settings.stop_rate_hz
        wall = np.append(np.arange(0.0, lead - 0.25 * step, step), lead) if stamped else np.array([lead])
        times = np.clip(then + (age + wall) * speed, 0.0, run.profile.duration)
        q, dq, ddq = run.profile.sample(np.concatenate([[then], times]))
        carried_q = measured.q + q[1:] - q[0]  # the measured state carried along the motion
        carried_dq = measured.v + speed * (dq[1:] - dq[0])
        lead_in = LeadIn(wall[:-1] - lead, carried_q[:-1], carried_dq[:-1], speed**2 * ddq[1:-1]) if stamped else None
        return plan_stop(joints, carried_q[-1], carried_dq[-1], limits, stamp=stamp_now + lead if stamped else 0.0,
                         lead=0.0 if stamped else lead, lead_in=lead_in)

    def _halt(self, now: float) -> None:
        """Send the stop (:meth:`stop_plan`) and watch it (:meth:`_watch_stop`)."""
        stop = self.stop_plan(now)
        self.link.halt(stop)
        if stop is not None:
            self.stopping = (stop, now)
            speed = float(np.abs(stop.v0).max(initial=0.0))
            self._log("info", f"stopping: from {speed:.3f} rad/s to rest in {stop.duration:.2f} s (within the "
                              f"acceleration limits), then holding; decelerating "
                              f"{max(stop.lead, stop.lead_in_span):.3f} s after the plan (measured delivery)")

    def _watch_stop(self, now: float) -> None:
        """After a stop's planned end (plus :data:`STOP_SETTLE_S`), the arm must be at rest: say so, or that the
        controller did not execute the stop (and hold where the arm is)."""
        stop, sent = self.stopping
        if now - sent < stop.duration + STOP_SETTLE_S:
            return
        self.stopping = None
        received = self.states.received(stop.joints)
        if received is None or received < sent:
            self._log("warning", "stop sent, but no joint states arrived since: cannot tell whether the arm is at rest")
            return
        measured = self.states.measured(stop.joints)
        worst = int(np.argmax(np.abs(measured.v)))
        if abs(measured.v[worst]) <= REST_SPEED:
            self._log("info", f"at rest {now - sent:.2f} s after the stop")
            return
        self._log("error", f"the controller did not execute the stop: joint {stop.joints[worst]} still moves at "
                           f"{measured.v[worst]:.3f} {stop.duration + STOP_SETTLE_S:.1f} s after it; holding it "
                           f"where it is")
        self.link.halt(plan_stop(stop.joints, measured.q, np.zeros_like(measured.q), stop.limits))

    # ------------------------------------------------------------------------------------------
    # Start

    def _attempt(self) -> tuple[bool, str]:
        """One try of the pending start (none while another runs in another thread)."""
        if not self._attempting.acquire(blocking=False):
            return True, "starting"
        try:
            return self._attempt_once() if self._pending is not None else (True, self.run.message)
        finally:
            self._attempting.release()

    def _attempt_once(self) -> tuple[bool, str]:
        """Abort on bad input, keep waiting for what may still come, send when everything is there."""
        pending = self._pending
        now = self.clock()
        timed_out = now >= pending.deadline
        try:
            if pending.profile is None:
                excitation, robot = self._load()
                self._robot = robot
                moved = robot.indices(excitation.trajectory.joints)  # a joint the robot lacks: refused
                if pending.wait_for_states and not timed_out and self._states_missing_or_stale(robot, now):
                    return True, "waiting for joint states"
                with self._lock:
                    q_robot = self.states.positions(robot.joints, now, self.settings.state_timeout)
                    self.phase = Phase.PREPARING
                profile = prepare_profile(excitation, q_robot[moved], self.settings.cycles,  # heavy: no lock
                                          max(self.settings.check_rate_hz, 1000.0), robot, held=q_robot)
                with self._lock:
                    self.phase = Phase.WAITING
                    pending.profile, pending.snapshot = profile, q_robot[moved]
                    if not pending.prepared:  # the wait for the controller counts from here, not the checks' time
                        pending.prepared = True
                        pending.deadline = max(pending.deadline, self.clock() + self.settings.wait_timeout)
                        timed_out = False
                if pending.stop_reason is not None:
                    raise ControllerError(f"{pending.stop_reason} before moving")
            with self._lock:
                return self._send_when_ready(pending, now, timed_out)
        except DynidError as err:
            with self._lock:
                self._finish_abort(str(err))
            return False, str(err)

    def _send_when_ready(self, pending: _Pending, attempt_start: float, timed_out: bool) -> tuple[bool, str]:
        """Send unless the controller is unreachable or the robot moved; joint states count as fresh when they
        were at the start of this attempt (a single-threaded executor delivers none while the motion is built)."""
        problem = self.link.problem(tuple(pending.profile.joints))
        if problem is not None:
            if timed_out:
                raise ControllerError(f"{problem} within {self.settings.wait_timeout:g} s: not moving")
            message = f"waiting for the controller: {problem}"
            if message != self.run.message:
                self.run.message = message
                self._log("info", message)
            return True, message
        profile = pending.profile
        q_now = self.states.positions(profile.joints, attempt_start, self.settings.state_timeout, "the trajectory")
        drift = float(np.abs(q_now - pending.snapshot).max())
        if drift > START_POSE_TOLERANCE:  # not at rest: build the motion again from where it is now
            message = (f"the robot moved {drift:.4f} while the motion was prepared (limit {START_POSE_TOLERANCE:g}): "
                       f"it must be at rest")
            if timed_out:
                raise ControllerError(f"{message}; not moving after {self.settings.wait_timeout:g} s")
            pending.profile = pending.snapshot = None
            self.run.message = f"waiting: {message}"
            return True, self.run.message
        self.link.send(profile)
        self._pending = None
        self.phase = Phase.SENT
        self._sent_at = self.clock()
        self._end_sent_at = self._sent_at if self.link.sent_until() >= profile.duration else None  # topic, action
        self._end_reached_at = None
        self.motion_clock = ControllerClock(profile, self._sent_at)
        self.tolerance = path_tolerances(profile)
        self.run.start(profile, self._sent_at, f"{self.settings.mode} mode, {profile.duration:.1f} s")
        self._log("info", f"excitation started: approach {profile.t_excitation_start:.1f} s, "
                          f"{self.settings.cycles} cycle(s), total {profile.duration:.1f} s")
        return True, f"moving: {profile.duration:.1f} s ({self.settings.mode} mode)"

    def _states_missing_or_stale(self, robot: object, now: float) -> bool:
        received = self.states.received(robot.joints)
        return received is None or now - received > self.settings.state_timeout

    def _finish_abort(self, message: str) -> None:
        self._pending = None
        self.phase = Phase.IDLE
        self.run.abort(message)
        self._log("error", f"excitation aborted: {message}")

    # ------------------------------------------------------------------------------------------
    # Supervision of a sent motion

    def _supervise(self, now: float) -> str | None:
        """The reason to stop the running motion now, or None."""
        s, run = self.settings, self.run
        joints = run.profile.joints
        received = self.states.received(joints)
        since = max(received if received is not None else -np.inf, run.t_start)
        stale_limit = max(1.0, MOVING_STATE_TIMEOUT_FACTOR * s.state_timeout)
        if now - since > stale_limit:
            return f"{s.joint_states_topic} stopped arriving while moving (none for {now - since:.1f} s)"
        clock = self.motion_clock
        if clock is not None and clock.reporting and s.mode != "stream":
            silent = now - clock.last_report
            if silent > max(REPORT_SILENCE_S, s.wait_timeout):
                return f"{s.controller} stopped reporting its state while moving (nothing for {silent:.1f} s)"
        if self._end_reached_at is None:
            self._end_reached_at = self._end_time(now)
        if self.link.confirms_end:
            if self.link.awaiting_answer() and now - self._sent_at > s.wait_timeout:
                return f"{s.controller} did not answer the goal within {s.wait_timeout:g} s"
            past_end = now - self._end_reached_at if self._end_reached_at is not None else -np.inf
            if past_end > RESULT_GRACE_S + s.goal_time_tolerance:
                return "no result from the action server after the trajectory's end"
            return None
        return self._follow_check(now)

    def _end_time(self, now: float) -> float | None:
        """Wall time at which the motion reached its end on its own clock (None: not yet)."""
        duration = self.run.profile.duration
        if self.settings.mode == "stream":
            return now if self.motion_time(now) >= duration else None
        return self.motion_clock.reached(duration, now)

    def paused(self, now: float) -> bool:
        """Whether the controller is paused (it reports, its time stands still) during the motion."""
        clock = self.motion_clock
        return bool(self.run.active and clock is not None and self.settings.mode != "stream" and clock.paused(now))

    def _follow_check(self, now: float) -> str | None:
        """Topic/stream mode: stop a motion the robot does not follow or a stream hopelessly late; ``done`` once
        the whole motion was sent and the robot reached its end."""
        run = self.run
        sent = min(self.link.sent_until(), run.profile.duration)
        late = now - run.t_start - sent if sent < run.profile.duration else 0.0
        if late > FOLLOW_LAG_S:
            return (f"the stream is {late:.2f} s late (it sent t = {sent:.2f} s of the {run.profile.duration:.2f} s "
                    f"motion; limit {FOLLOW_LAG_S:g} s): this process stalls too much to stream")
        if sent >= run.profile.duration and self._end_sent_at is None:
            self._end_sent_at = now
        received = self.states.received(run.profile.joints)
        if received is None or received < run.t_start:
            return None
        q = self.states.positions(run.profile.joints, now, np.inf, "the trajectory")
        # The controller's clock and the wall clock since the start bound the motion's time from both sides (a
        # controller that reports late, a paused or scaled one): the pose must be the reference at some time of
        # [earlier - FOLLOW_LAG_S, later].
        times = (min(self.motion_time(received), sent), min(received - run.t_start, sent))
        problem = self._path_error(q, max(times), earliest=min(times))
        if problem is not None or self._end_sent_at is None or self._end_reached_at is None:
            return problem
        return self._end_check(now, received, q)

    def _path_error(self, q: np.ndarray, elapsed: float, earliest: float | None = None) -> str | None:
        """Why ``q`` (measured at profile time ``elapsed``) is not the motion sent, None when it is: within the path
        tolerance of the reference at some time from :data:`FOLLOW_LAG_S` before ``earliest`` (default ``elapsed``)
        to ``elapsed`` (a controller may start late)."""
        joints = self.run.profile.joints
        low = max((elapsed if earliest is None else earliest) - FOLLOW_LAG_S, 0.0)
        window = np.linspace(low, elapsed, 101 + int(100 * (elapsed - low)))
        error = np.abs(self.run.profile.sample(window)[0] - q).min(axis=0)
        worst = int(np.argmax(error / self.tolerance))
        if error[worst] <= self.tolerance[worst]:
            return None
        return (f"the robot does not follow the motion: joint {joints[worst]} is {error[worst]:.3f} from the "
                f"reference at t = {elapsed:.2f} s (path tolerance {self.tolerance[worst]:.3f} after a lag of "
                f"up to {FOLLOW_LAG_S:g} s)")

    def _end_check(self, now: float, received: float, q: np.ndarray) -> str | None:
        """The whole motion was sent: ``done`` once joint states from ``settle_time`` after both the profile's end
        and the send of its end show the end pose; stopped when it is not reached in time."""
        run, s = self.run, self.settings
        end_at = max(self._end_reached_at, self._end_sent_at)
        past_end = now - end_at
        if past_end < s.settle_time:
            return None
        end_error = np.abs(run.profile.sample(np.array([run.profile.duration]))[0][0] - q)
        worst = int(np.argmax(end_error / self.tolerance))
        measured_after_end = received >= end_at
        if measured_after_end and end_error[worst] <= self.tolerance[worst]:
            run.finish("the robot followed the motion to its end")
            self.phase = Phase.IDLE
            self._log("info", "excitation done")
            return None
        allowed = s.wait_timeout + FOLLOW_LAG_S  # a controller may start (and so end) up to FOLLOW_LAG_S late
        if past_end > s.settle_time + allowed:
            return (f"the robot did not reach the end pose within {allowed:g} s after the motion's end "
                    f"(joint {run.profile.joints[worst]} {end_error[worst]:.3f} away)")
        return None

    def status(self) -> dict:
        """The ``~/status`` JSON content: the run's (state, progress, message, duration), ``joint_states_ready``, and
        while a motion was sent its ``time`` on the controller's clock [s], ``speed`` (controller seconds per wall
        second, the speed scaling), ``paused`` and ``clock`` (where the time comes from)."""
        with self._lock:
            status = self.run.status()
            status["joint_states_ready"] = not self.states.empty
            if self.run.profile is not None and self.motion_clock is not None:
                now = self.clock()
                clock = self.motion_clock
                status["time"] = round(self.motion_time(now), 3)
                status["paused"] = self.paused(now)
                status["speed"] = round(clock.speed(now), 3) if self.settings.mode != "stream" else 1.0
                status["clock"] = "stream" if self.settings.mode == "stream" else clock.source
        return status
