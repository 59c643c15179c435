"""The stop of a running motion: a short decelerating trajectory to a hold, from the measured state.

What a joint trajectory controller does with the ways to stop it (ros2_controllers, joint_trajectory_controller.cpp,
jazzy): a trajectory without points is refused ("Empty trajectory received", ``validate_trajectory_msg``) and the
running one goes on; a canceled goal holds the measured position at once (``goal_cancelled_callback`` ->
``set_hold_position``), an arm at 2 rad/s included, unless ``constraints.decelerate_on_cancel`` is set (newer jazzy
releases: each joint then ramps down at its ``max_deceleration_on_cancel``, doc/decelerate_on_cancel.rst). What every
controller executes is an ordinary trajectory. :func:`plan_stop` makes it from the measured position and velocity:
every joint decelerates at a constant rate and all come to rest together, after ``T = max_j |v_j| / a_j`` with
``a_j`` the robot's acceleration limit, so no joint exceeds its limit and the arm stops on the tangent of its path
(in joint space: the stop is the motion slowed down uniformly); then it holds where it stopped, ``q0 + v0 T / 2``.

The deceleration starts ``lead`` after the stop is planned, from the measured state carried forward to then along the
motion. When the joint states' stamps are on the sender's clock the stop is stamped, and its trajectory begins at the
moment it is planned with a *lead-in*: the measured state carried along the motion up to the deceleration
(:class:`LeadIn`). A joint trajectory controller that receives it at any time of the lead-in takes the trajectory's
state of that time (``Trajectory::sample`` after the first point, joint_trajectory_controller's ``update``), which is
where the arm already is: no jump, and the deceleration starts on time, within its limits. Only a stop that arrives
after its lead-in makes the arm jump onto the deceleration under way, so the lead is the measured delivery delay
(:class:`~dynid_ros.execution.command_latency.CommandLatency`), at least :data:`LEAD_S`. With stamps on another clock
(none, simulated time) the stop starts ``lead`` after its receipt (the controller interpolates from the arm's state
on arrival to its first point, ``Trajectory::sample`` before the first point).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MIN_STOP_S = 0.1
"""Shortest stop [s]: an arm at (or nearly at) rest still gets a trajectory of a few controller periods."""

HOLD_S = 0.25
"""The stop's trajectory goes on this long [s] at rest after the stop (its end is never in the controller's past when
it arrives: joint_trajectory_controller refuses a stamped trajectory that ends before its now)."""

LEAD_S = 0.05
"""The shortest lead [s] of a stop (its deceleration starts at least this long after it is planned): an idle machine's
delivery and a controller period or two; a loaded machine's is measured
(:class:`~dynid_ros.execution.command_latency.CommandLatency`)."""

STAMP_TOLERANCE_S = 0.5
"""A measurement's stamp farther than this [s] from the sender's clock is not used (another clock, sim time)."""


@dataclass(frozen=True)
class LeadIn:
    """The motion the arm is on until the deceleration starts: waypoints at times ``t`` (m,) [s] before the
    deceleration's time 0 (negative, increasing), positions, velocities, accelerations (m, n)."""

    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray

    @property
    def span(self) -> float:
        """How long [s] before the deceleration the lead-in begins (0 without waypoints)."""
        return float(-self.t[0]) if self.t.size else 0.0


@dataclass(frozen=True)
class StopMotion:
    """Constant deceleration of every joint from ``(q0, v0)`` to rest at ``duration``, then a hold.

    Attributes:
        joints: the joints, in the order of every array.
        q0, v0: position and velocity at the stop's time 0.
        duration: time to rest [s] (at least :data:`MIN_STOP_S`).
        deceleration: (n,) signed, ``v0 / duration``: ``q'' = -deceleration`` until rest.
        limits: (n,) the acceleration limits the stop keeps to (a stop planned again from another state keeps them).
        stamp: the stop's time 0 on the controller's clock [s]; 0: ``lead`` after the controller receives it.
        lead: the stop's time 0 after its receipt [s], when it has no stamp.
        lead_in: the motion from the stop's plan to its time 0 (stamped stops; None: the trajectory begins at 0).
    """

    joints: tuple[str, ...]
    q0: np.ndarray
    v0: np.ndarray
    duration: float
    deceleration: np.ndarray
    limits: np.ndarray
    stamp: float = 0.0
    lead: float = 0.0
    lead_in: LeadIn | None = None

    @property
    def lead_in_span(self) -> float:
        """How long [s] before time 0 the stop's trajectory begins."""
        return self.lead_in.span if self.lead_in is not None else 0.0

    @property
    def q_end(self) -> np.ndarray:
        """Where the arm comes to rest."""
        return self.q0 + 0.5 * self.v0 * self.duration

    def sample(self, t: np.ndarray | float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, dq, ddq)`` at times ``t`` (N,) from the stop's time 0, each (N, n); at rest from ``duration`` on."""
        t = np.clip(np.atleast_1d(np.asarray(t, dtype=float)), 0.0, None)[:, None]
        s = np.minimum(t, self.duration)
        q = self.q0 + self.v0 * s - 0.5 * self.deceleration * s**2
        dq = self.v0 - self.deceleration * s
        ddq = np.where(t < self.duration, -self.deceleration, 0.0) * np.ones_like(q)
        return q, dq, ddq

    def waypoints(self, rate_hz: float, start: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(t, q, dq, ddq)``: the lead-in's waypoints (times before 0), then from ``start`` (included) every
        ``1 / rate_hz`` to ``duration``, then at rest there until ``duration + HOLD_S`` (zero velocity and
        acceleration: the controller holds the last point)."""
        step = 1.0 / rate_hz
        t = np.arange(start, self.duration, step)
        t = np.concatenate([t[t < self.duration - 0.25 * step], [self.duration, self.duration + HOLD_S]])
        q, dq, ddq = self.sample(t)
        dq[-2:], ddq[-2:] = 0.0, 0.0
        if self.lead_in is None or not self.lead_in.t.size:
            return t, q, dq, ddq
        lead = self.lead_in
        return (np.concatenate([lead.t, t]), np.vstack([lead.q, q]), np.vstack([lead.dq, dq]),
                np.vstack([lead.ddq, ddq]))


def plan_stop(joints: Sequence[str], q: np.ndarray, v: np.ndarray, acceleration: np.ndarray, *, stamp: float = 0.0,
              lead: float = 0.0, min_duration: float = MIN_STOP_S, lead_in: LeadIn | None = None) -> StopMotion:
    """The stop from position ``q`` and velocity ``v`` within the acceleration limits ``acceleration`` (n,, > 0):
    all joints at rest together, none decelerating faster than its limit (non-finite velocities count as 0);
    ``lead_in``: the motion before it (its trajectory begins there)."""
    q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
    acceleration = np.asarray(acceleration, dtype=float)
    v = np.where(np.isfinite(v), v, 0.0)
    duration = float(max(np.max(np.abs(v) / acceleration, initial=0.0), min_duration))
    return StopMotion(tuple(joints), q.copy(), v.copy(), duration, v / duration, acceleration.copy(), float(stamp),
                      float(lead), lead_in)


def usable_stamp(stamp: float, now: float) -> bool:
    """Whether a measurement's ``stamp`` can anchor a stop sent at ``now`` (the sender's clock): given, and within
    :data:`STAMP_TOLERANCE_S` of it (a stamp on another clock, e.g. simulated time, is not)."""
    return stamp > 0.0 and abs(now - stamp) <= STAMP_TOLERANCE_S


def cancel_constraints(joints: Sequence[str], deceleration: np.ndarray) -> dict:
    """The ``constraints`` of a joint_trajectory_controller that make a canceled goal decelerate like this module's
    stop instead of holding at once: ``decelerate_on_cancel: true`` and each joint's ``max_deceleration_on_cancel``
    [rad/s^2] (ros2_controllers, joint_trajectory_controller doc/decelerate_on_cancel.rst; every joint needs a positive
    value and a velocity state interface, else the controller holds). ``deceleration``: (n,) the stop's limits
    (:func:`dynid_ros.execution.excitation_supervisor.stop_deceleration`). A release without the parameters (Jazzy
    4.19) declares them from the file and holds as before."""
    deceleration = np.asarray(deceleration, dtype=float)
    if deceleration.shape != (len(joints),) or not np.all(deceleration > 0.0):
        raise ValueError(f"one positive deceleration per joint ({len(joints)}), not {deceleration.tolist()}")
    return {"decelerate_on_cancel": True,
            **{joint: {"max_deceleration_on_cancel": round(float(a), 3)} for joint, a in zip(joints, deceleration)}}
