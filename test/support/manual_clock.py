"""Test doubles for the core's injected clocks and controller link: time that moves only when a test moves it, and a
link that records what the supervisor sends."""

from __future__ import annotations

import math


class ManualClock:
    """A monotonic clock (``clock()`` in seconds) and a wall clock (``ns``, nanoseconds) that a test sets."""

    def __init__(self, now: float = 100.0, ns: int = 1_000):
        self.now = now
        self.ns = ns

    def __call__(self) -> float:
        return self.now


class RecordingLink:
    """The controller link of :class:`~dynid_ros.execution.excitation_supervisor.ExcitationSupervisor`: records the
    profiles sent and the stops; reachable unless ``problem_text`` is set; ``until`` is the profile time sent so far
    (a stream's; topic and action send all at once)."""

    def __init__(self, confirms_end: bool = False):
        self.confirms_end = confirms_end
        self.sent, self.halts, self.problem_text, self.stops = [], 0, None, []
        self.until = math.inf

    def problem(self, joints):
        return self.problem_text

    def send(self, profile):
        self.sent.append(profile)

    def halt(self, stop):
        self.halts += 1
        self.stops.append(stop)

    def awaiting_answer(self):
        return False

    def sent_until(self):
        return self.until
