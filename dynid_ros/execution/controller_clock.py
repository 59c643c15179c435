"""The motion's time as the controller runs it, not the wall clock.

A speed-scaled joint trajectory controller advances the trajectory by the robot's speed scaling: Universal Robots'
``scaled_joint_trajectory_controller`` (ur_controllers/src/scaled_joint_trajectory_controller.cpp,
``traj_time_ += period * scaling_factor_``) and the JTC of newer ros2_controllers releases (its ``speed_scaling``
state interface), driven by the teach pendant's slider, reduced mode or a paused program (scaling 0). The motion
then takes longer than its nominal duration, by any factor, and a paused arm is waiting, not failing.
:class:`ControllerClock` follows the controller's own time from what it reports:

- ``desired.time_from_start`` of FollowJointTrajectory feedback where the controller fills it (newer JTCs set
  ``state_desired_.time_from_start = traj_time_ - trajectory start``);
- otherwise its desired state (feedback ``desired``, or ``reference`` of ``~/controller_state``), which is the sent
  profile sampled at the controller's time (``Trajectory::sample(traj_time_, ...)``): the time found is the profile
  time, at or after the one found last, whose position and velocity are closest to it; where the profile stands
  still (an approach of an arm already at the start, the final rest) the state tells no time and the time runs on
  at the speed observed before;
- with no report at all (a controller that sends none): the wall clock since the motion was sent.

``speed`` is the recent rate of the motion (controller seconds per wall second, the speed scaling) and ``paused``
says that reports arrive while the time stands still.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

SPEED_WINDOW_S = 1.0
"""Wall time [s] over which ``speed`` and ``paused`` are measured."""

PAUSED_SPEED = 0.02
"""Below this speed (2 % of real time) the controller is paused."""

REPORT_TIMEOUT_S = 1.0
"""A controller whose last report is older than this [s] is not known to be paused."""

VELOCITY_WEIGHT_S = 0.05
"""Weight [s] of the velocity error against the position error when a desired state is located on the profile."""

SEARCH_GRID_S = 1e-3
"""Resolution [s] of the search on the profile."""

FLAT_TOLERANCE = 1e-6
"""Profile states within this [rad] of the best fit fit as well: a stretch of them is a profile standing still."""


def profile_time_of(profile: object, q: np.ndarray, dq: np.ndarray | None, *, low: float, high: float,
                    near: float) -> float:
    """The profile time in ``[low, high]`` whose position and velocity are closest to ``(q, dq)`` (a measured state:
    where the arm is along the motion, whatever the reports' delays); where the profile stands still and a stretch
    fits as well, its time nearest ``near``."""
    t = np.arange(max(low, 0.0), min(high, profile.duration) + SEARCH_GRID_S, SEARCH_GRID_S)
    if not t.size:
        return float(min(max(near, 0.0), profile.duration))
    pq, pdq, _ = profile.sample(t)
    cost = ((pq - q) ** 2).sum(axis=1)
    if dq is not None and np.all(np.isfinite(dq)):
        cost = cost + VELOCITY_WEIGHT_S**2 * ((pdq - dq) ** 2).sum(axis=1)
    error = np.sqrt(cost)
    fits = np.flatnonzero(error <= error.min() + FLAT_TOLERANCE)
    return float(t[fits[np.argmin(np.abs(t[fits] - near))]])


@dataclass
class ControllerClock:
    """The motion time of one sent ``profile`` (``sample(t)``, ``duration``), sent at wall time ``start``."""

    profile: object
    start: float
    time: float = 0.0
    source: str = "wall clock"
    _last_report: float | None = None
    _history: deque = field(default_factory=lambda: deque(maxlen=4096))
    _observed: deque = field(default_factory=lambda: deque(maxlen=512))
    _last_hint: float = 1.0

    def __post_init__(self) -> None:
        self._history.append((self.start, 0.0))

    @property
    def duration(self) -> float:
        """Duration [s] of the sent profile."""
        return float(self.profile.duration)

    def report(self, now: float, q: np.ndarray | None = None, dq: np.ndarray | None = None,
               time_from_start: float | None = None) -> float:
        """The controller's report at wall time ``now``: its desired state in the profile's joint order, and the
        trajectory time when it tells it (> 0). Returns the motion time."""
        if time_from_start is not None and time_from_start > 0.0:
            found, self.source = float(time_from_start), "controller time"
        elif q is not None:
            found, self.source = self._locate(now, np.asarray(q, dtype=float), dq), "controller state"
        else:
            return self.time
        self.time = float(min(max(found, self.time), self.duration))
        self._last_report = now
        self._history.append((now, self.time))
        return self.time

    def finish(self, now: float) -> None:
        """The controller reports the whole trajectory executed (its result): the motion time is its end."""
        self.time = self.duration
        self._last_report = now
        self._history.append((now, self.time))

    def _locate(self, now: float, q: np.ndarray, dq: np.ndarray | None) -> float:
        """The profile time, at or after the last one found, of the desired state ``(q, dq)``. Where the profile
        stands still (the approach of an arm already at the start, the final rest) every time of the stretch fits:
        the time then runs on at the speed last observed (nominal before any), within the stretch."""
        last_wall = self._history[-1][0]
        horizon = max(2.0 * (now - last_wall), 0.1)
        t = np.arange(self.time, min(self.time + horizon, self.duration) + SEARCH_GRID_S, SEARCH_GRID_S)
        pq, pdq, _ = self.profile.sample(t)
        cost = ((pq - q) ** 2).sum(axis=1)
        if dq is not None and len(dq) == q.shape[0]:
            cost = cost + VELOCITY_WEIGHT_S**2 * ((pdq - np.asarray(dq, dtype=float)) ** 2).sum(axis=1)
        error = np.sqrt(cost)
        best = int(np.argmin(error))
        fits = error <= error[best] + FLAT_TOLERANCE
        first, last = best, best
        while first > 0 and fits[first - 1]:
            first -= 1
        while last < len(t) - 1 and fits[last + 1]:
            last += 1
        if last - first <= 1:  # one time fits: the controller's
            self._observed.append((now, float(t[best])))
            return float(t[best])
        guess = self.time + self._speed_hint(now) * (now - last_wall)
        return float(min(max(guess, t[first]), t[last]))

    def _speed_hint(self, now: float) -> float:
        """The speed of the motion where its time was observed last (1 before: nominal)."""
        recent = [(w, t) for w, t in self._observed if w >= now - 2.0 * SPEED_WINDOW_S]
        if len(recent) < 2 or recent[-1][0] - recent[0][0] < 0.2:
            return 1.0 if not self._observed else self._last_hint
        (w0, t0), (w1, t1) = recent[0], recent[-1]
        self._last_hint = max((t1 - t0) / (w1 - w0), 0.0)
        return self._last_hint

    def now(self, now: float) -> float:
        """The motion time at wall time ``now``: the controller's (its last report), or the wall clock since the start
        when it reported nothing."""
        if self._last_report is None:
            return float(min(max(now - self.start, 0.0), self.duration))
        return self.time

    def reached(self, t: float, now: float) -> float | None:
        """Wall time at which the motion time reached ``t`` (the wall clock's when the controller reports nothing),
        None when it has not by ``now``."""
        if self._last_report is None:
            return self.start + t if now >= self.start + t else None
        return next((w for w, time in self._history if time >= t - 1e-9), None)

    @property
    def last_report(self) -> float | None:
        """Wall time of the controller's last report (None: none yet)."""
        return self._last_report

    @property
    def reporting(self) -> bool:
        """Whether the controller reported its time (else the wall clock stands in)."""
        return self._last_report is not None

    def speed(self, now: float) -> float:
        """Controller seconds per wall second over the last :data:`SPEED_WINDOW_S` (1 before any report)."""
        if self._last_report is None:
            return 1.0
        earlier = [(w, t) for w, t in self._history if w <= now - SPEED_WINDOW_S]
        w0, t0 = earlier[-1] if earlier else self._history[0]
        return float((self.time - t0) / (now - w0)) if now - w0 > 1e-9 else 1.0

    def paused(self, now: float) -> bool:
        """Reports arrive (the last under :data:`REPORT_TIMEOUT_S` old) but the motion has stood still (speed under
        :data:`PAUSED_SPEED`) for :data:`SPEED_WINDOW_S`, before its end."""
        if self._last_report is None or now - self._last_report > REPORT_TIMEOUT_S or self.time >= self.duration:
            return False
        return now - self._history[0][0] >= SPEED_WINDOW_S and self.speed(now) < PAUSED_SPEED
