"""How late a command reaches the controller, measured while the arm moves: the lead a stop is given.

A stop sent to a joint trajectory controller is a stamped trajectory. What the controller does with it depends on
when it arrives (ros2_controllers jazzy, joint_trajectory_controller.cpp ``JointTrajectoryController::update``:
the first update after a new message calls ``Trajectory::set_point_before_trajectory_msg`` with the arm's state
of now, then ``Trajectory::sample`` at now): before the trajectory's first point it interpolates from the arm's state
to that point; after it, it takes the trajectory's own state at now, whatever the arm was doing. So a stop whose
deceleration begins before it arrives makes the arm jump onto it (measured on the real controller with mock hardware
at machine load ~7: 3.5 times the acceleration limit with a fixed 0.05 s lead). The deceleration must begin after
the stop's arrival, and how long that takes is a property of the machine and its load, not a constant:
:class:`CommandLatency` measures it from the age of every joint state on arrival (the receiver's clock minus the
header stamp, both on the robot's clock): one hop between the controller manager and this process, under the same
load as the way there. :meth:`CommandLatency.lead` is :data:`LATENCY_FACTOR` times a high quantile
(:data:`LATENCY_QUANTILE`) of the recent ages (the way there is not seen: it is taken as long as the way back, plus
as much again for the controller's own executor and update period), at least
:data:`~dynid_ros.execution.stop_motion.LEAD_S`, at most :data:`MAX_LEAD_S`. (The delay between a sent excitation
and the controller's first report of it is not used: it includes the controller's handling of a long trajectory,
e.g. sim_node's check of it against the limits, about a second on a loaded machine, which a short stop does not
take.) Joint states without a usable stamp (none, another clock: some drivers, simulated time) give no age; the lead
then follows this process's own scheduling delay, how late its periodic callbacks run
(:meth:`CommandLatency.record_lateness`): the delay a stop suffers on its way out, under the same load.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dynid_ros.execution.stop_motion import LEAD_S

MAX_LEAD_S = 0.5
"""The longest lead [s]: a stop never waits longer than this along the checked motion before it decelerates."""

LATENCY_WINDOW_S = 10.0
"""Joint-state ages of the last this many seconds [s] give the latency."""

LATENCY_QUANTILE = 0.99
"""The quantile of the recent ages taken (a stop must arrive in time on a bad moment, not an average one)."""

LATENCY_FACTOR = 2.0
"""The lead is this many times the quantile of the one-way age: the stop's way to the controller (unseen) is
taken as long as the joint states' way back, and as much again for the controller's executor and update period."""

CAPACITY = 16384
"""Ages kept (a ring): 16 s of joint states at 1 kHz."""


@dataclass
class CommandLatency:
    """The recent delivery delays between this process and the controller (see the module's docstring)."""

    window_s: float = LATENCY_WINDOW_S
    capacity: int = CAPACITY
    _at: np.ndarray = field(init=False, repr=False)
    _age: np.ndarray = field(init=False, repr=False)
    _count: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        self._at = np.full(self.capacity, -np.inf)
        self._age = np.zeros(self.capacity)
        self._late_at = np.full(self.capacity, -np.inf)
        self._late = np.zeros(self.capacity)
        self._late_count = 0

    def record_lateness(self, *, lateness: float, at: float) -> None:
        """A periodic callback of this process ran ``lateness`` [s] after it was due, at monotonic time ``at`` [s]
        (early: 0; non-finite: ignored)."""
        if not np.isfinite(lateness):
            return
        k = self._late_count % self.capacity
        self._late_at[k], self._late[k] = at, max(float(lateness), 0.0)
        self._late_count += 1

    def record_age(self, *, age: float, at: float) -> None:
        """One joint state arrived ``age`` [s] after its stamp, at monotonic time ``at`` [s]. Negative ages (clocks a
        little apart) count as 0; non-finite ones are ignored."""
        if not np.isfinite(age):
            return
        k = self._count % self.capacity
        self._at[k], self._age[k] = at, max(float(age), 0.0)
        self._count += 1

    def age_quantile(self, *, now: float, quantile: float = LATENCY_QUANTILE) -> float:
        """The ``quantile`` of the ages recorded in the last ``window_s`` before ``now`` (0 when none)."""
        recent = self._age[self._at >= now - self.window_s]
        return float(np.quantile(recent, quantile)) if recent.size else 0.0

    def lateness_quantile(self, *, now: float, quantile: float = LATENCY_QUANTILE) -> float:
        """The ``quantile`` of the callbacks' lateness in the last ``window_s`` before ``now`` (0 when none)."""
        recent = self._late[self._late_at >= now - self.window_s]
        return float(np.quantile(recent, quantile)) if recent.size else 0.0

    def lead(self, *, now: float) -> float:
        """How long [s] after it is planned a stop may begin to decelerate: the measured delivery (see the module's
        docstring) within ``[LEAD_S, MAX_LEAD_S]``; without recent ages, this process's scheduling delay."""
        ages = self._age[self._at >= now - self.window_s]
        measured = self.age_quantile(now=now) if ages.size else self.lateness_quantile(now=now)
        return float(min(max(LATENCY_FACTOR * measured, LEAD_S), MAX_LEAD_S))
