"""The robot's live joint states, merged by joint name across messages and publishers.

On a real robot several drivers publish ``sensor_msgs/JointState`` on the same topic: the arm driver
names the arm's joints, the gripper driver its fingers, each at its own rate. A node that keeps only
the last message sees the arm's joints vanish whenever the gripper's message came last. This cache
keeps, per joint name, the last position and the time it arrived, so the pose of every joint needed
is known with its own age (the oldest of them is the age of the pose).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dynid_ros.errors import DataError


@dataclass(frozen=True)
class JointReading:
    """One joint's last position, velocity (nan when not published) and arrival time [s]."""

    position: float
    velocity: float
    received: float


class JointStateCache:
    """Last position of every joint ever named on the topic, with the time each arrived."""

    def __init__(self, topic: str = "/joint_states") -> None:
        self.topic = topic
        self._joints: dict[str, JointReading] = {}

    def update(self, names: Sequence[str], positions: Sequence[float], received: float,
               velocities: Sequence[float] = ()) -> None:
        """Merge one message (its ``name``, ``position``, ``velocity`` fields) that arrived at ``received``.

        Raises:
            DataError: the message's names and positions differ in length (nothing of it is kept).
        """
        if len(names) != len(positions):
            raise DataError(f"{self.topic}: {len(names)} names but {len(positions)} positions")
        with_velocity = len(velocities) == len(names)
        for k, name in enumerate(names):
            velocity = float(velocities[k]) if with_velocity else math.nan
            self._joints[str(name)] = JointReading(float(positions[k]), velocity, float(received))

    @property
    def empty(self) -> bool:
        return not self._joints

    @property
    def names(self) -> tuple[str, ...]:
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
