"""The profile time of each command of a position stream (stream mode: a forward position controller takes each
command as the next setpoint, with no interpolation of its own).

A stream samples the checked profile at the wall-clock time of each command, at the controller's update rate, so
the controller sees the steps the profile makes between two updates and nothing larger. A process that stalls (a
loaded computer, a garbage collection) would break that: the first command after a 1 s stall would jump a second
ahead along the profile, a position step the limits check never saw. :class:`StreamClock` bounds it: the profile
time advances by the wall-clock time between commands, but by at most :data:`MAX_STEP_PERIODS` command periods; after
a stall the motion continues where it was and runs late instead (the supervisor allows a lag up to
:data:`~dynid_ros.execution.excitation_supervisor.FOLLOW_LAG_S` and stops a motion beyond it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_STEP_PERIODS = 2.0
"""Largest advance of the profile time between two commands, in command periods (a step of one late update is
allowed; anything longer is a stall)."""


@dataclass
class StreamClock:
    """Profile time of a stream at ``rate_hz`` of a profile of ``duration`` seconds, started at wall time ``start``.

    Attributes:
        elapsed: profile time of the last command [s].
        stalls: wall-clock gaps longer than :data:`MAX_STEP_PERIODS` periods, each ``(profile time, gap [s])``.
    """

    rate_hz: float
    duration: float
    start: float
    elapsed: float = 0.0
    stalls: list[tuple[float, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._last = self.start

    @property
    def max_step(self) -> float:
        """Largest profile-time advance between two commands [s]."""
        return MAX_STEP_PERIODS / self.rate_hz

    def tick(self, now: float) -> float:
        """The profile time of a command sent at wall time ``now`` (never beyond the profile's end)."""
        gap = max(now - self._last, 0.0)
        self._last = now
        if gap > self.max_step:
            self.stalls.append((self.elapsed, gap))
        self.elapsed = min(self.elapsed + min(gap, self.max_step), self.duration)
        return self.elapsed

    @property
    def lag(self) -> float:
        """How far the profile time is behind the wall-clock time since the start [s] (stalls add to it)."""
        return max(self._last - self.start - self.elapsed, 0.0) if self.elapsed < self.duration else 0.0
