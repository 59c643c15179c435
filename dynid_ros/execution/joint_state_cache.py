"""The robot's live joint states, merged by joint name across messages and publishers.

On a real robot several drivers publish ``sensor_msgs/JointState`` on the same topic: the arm driver
names the arm's joints, the gripper driver its fingers, each at its own rate. A node that keeps only
the last message sees the arm's joints vanish whenever the gripper's message came last. This cache
keeps, per joint name, the last position and the time it arrived, so the pose of every joint needed
is known with its own age (the oldest of them is the age of the pose), and the last few readings with their header
stamps, for the measured velocity a stop starts from (:meth:`JointStateCache.measured`).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dynid_ros.errors import DataError

HISTORY = 32
"""Readings kept per joint for the velocity estimate."""

VELOCITY_WINDOW_S = 0.05
"""Readings of the last this many seconds (by stamp) give a joint's velocity when its messages carry none."""


@dataclass(frozen=True)
class JointReading:
    """One joint's last position, velocity (nan when not published), arrival time [s] and header stamp [s] (0: none)."""

    position: float
    velocity: float
    received: float
    stamp: float = 0.0


@dataclass(frozen=True)
class MeasuredState:
    """Where the joints are and how fast they move, as last measured.

    Attributes:
        q, v: (n,) position and velocity (the published velocity, else the slope of the recent positions, else 0).
        stamp: the newest header stamp of the readings [s] (0 when the messages carry none).
        received: arrival time of the oldest of the readings (the state's age counts from it).
    """

    q: np.ndarray
    v: np.ndarray
    stamp: float
    received: float


class JointStateCache:
    """Last position of every joint ever named on the topic, with the time each arrived."""

    def __init__(self, topic: str = "/joint_states") -> None:
        self.topic = topic
        self._joints: dict[str, JointReading] = {}
        self._history: dict[str, deque] = {}

    def update(self, names: Sequence[str], positions: Sequence[float], received: float,
               velocities: Sequence[float] = (), stamp: float = 0.0) -> None:
        """Merge one message (its ``name``, ``position``, ``velocity`` fields and header ``stamp`` [s], 0 when unset)
        that arrived at ``received``.

        Raises:
            DataError: the message's names and positions differ in length (nothing of it is kept).
        """
        if len(names) != len(positions):
            raise DataError(f"{self.topic}: {len(names)} names but {len(positions)} positions")
        with_velocity = len(velocities) == len(names)
        for k, name in enumerate(names):
            velocity = float(velocities[k]) if with_velocity else math.nan
            reading = JointReading(float(positions[k]), velocity, float(received), float(stamp))
            self._joints[str(name)] = reading
            self._history.setdefault(str(name), deque(maxlen=HISTORY)).append(reading)

    @property
    def empty(self) -> bool:
        """Whether no joint has been received yet."""
        return not self._joints

    @property
    def names(self) -> tuple[str, ...]:
        """The joints received so far, in the order first seen."""
        return tuple(self._joints)

    def received(self, joints: Sequence[str]) -> float | None:
        """Arrival time of the oldest reading of ``joints`` (None when one of them was never received)."""
        times = [self._joints[j].received for j in joints if j in self._joints]
        return min(times) if joints and len(times) == len(joints) else None

    def positions(self, joints: Sequence[str], now: float, max_age_s: float, whose: str = "the robot") -> np.ndarray:
        """Positions of ``joints`` (in that order), each received at most ``max_age_s`` before ``now``.

        Raises:
            DataError: nothing received, a joint never named, a stale joint, or a non-finite position.
        """
        if not self._joints:
            raise DataError(f"no {self.topic} received: cannot start from an unknown pose")
        missing = [j for j in joints if j not in self._joints]
        if missing:
            raise DataError(f"{self.topic} does not name joint(s) {', '.join(missing)} of {whose} "
                            f"(it names: {', '.join(self._joints)})")
        ages = {j: now - self._joints[j].received for j in joints}
        stale = max(ages, key=ages.get) if ages else None
        if stale is not None and ages[stale] > max_age_s:
            raise DataError(f"{self.topic} is stale: joint {stale} last received {ages[stale]:.2f} s ago "
                            f"(limit {max_age_s:.2f} s)")
        q = np.array([self._joints[j].position for j in joints])
        bad = [j for j, v in zip(joints, q) if not math.isfinite(v)]
        if bad:
            raise DataError(f"{self.topic}: position of joint {bad[0]} is not finite")
        return q

    def measured(self, joints: Sequence[str]) -> MeasuredState:
        """The last measured state of ``joints`` (each must have been received: :meth:`positions` checks that).

        A joint's velocity is the published one when finite, else the least-squares slope of its positions over
        the last :data:`VELOCITY_WINDOW_S` (by header stamp, or arrival time when messages carry no stamp: a stamp
        is when the driver sampled the joint, arrival times jitter), else 0.
        """
        readings = [self._joints[j] for j in joints]
        q = np.array([r.position for r in readings])
        v = np.array([r.velocity if math.isfinite(r.velocity) else self._slope(j) for j, r in zip(joints, readings)])
        stamp = max((r.stamp for r in readings), default=0.0)
        return MeasuredState(q, v, stamp, min((r.received for r in readings), default=0.0))

    def _slope(self, joint: str) -> float:
        history = list(self._history.get(joint, ()))
        stamped = all(r.stamp > 0.0 for r in history)
        t = np.array([r.stamp if stamped else r.received for r in history])
        keep = t >= t[-1] - VELOCITY_WINDOW_S if t.size else np.zeros(0, dtype=bool)
        t, p = t[keep], np.array([r.position for r in history])[keep]
        if t.size < 2 or t[-1] - t[0] <= 1e-6:
            return 0.0
        t = t - t.mean()
        return float((t * (p - p.mean())).sum() / (t * t).sum())
