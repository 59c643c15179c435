"""Joint states recorded too slowly for an identification, and the topic a driver offers at full rate.

Accelerations come from differentiating positions or velocities twice or once; the filters and the cutoff
(:mod:`dynid_ros.data.bandwidth`) need samples well above the motion's bandwidth. franka_ros2's launch republishes
``/joint_states`` at 30 Hz through joint_state_publisher (merging the gripper) and remaps its 1 kHz
joint_state_broadcaster to ``/franka/joint_states``; other drivers have similar merged topics. A recording whose
median sample rate is below :data:`MIN_RATE_HZ` is named in a warning.
"""

from __future__ import annotations

import numpy as np

MIN_RATE_HZ = 100.0
"""Joint states below this median rate [Hz] are named."""

FULL_RATE_TOPICS = {"panda_joint": "/franka/joint_states (franka_ros2's 1 kHz joint_state_broadcaster)",
                    "fr3_joint": "/franka/joint_states (franka_ros2's 1 kHz joint_state_broadcaster)"}
"""Joint-name prefixes of drivers whose full-rate topic is known, and that topic."""


def sample_rate_warnings(t: np.ndarray, topic: str, joints: tuple[str, ...] | list[str]) -> list[str]:
    """A warning when the median rate of the stamps ``t`` [s] is below :data:`MIN_RATE_HZ`, naming ``topic`` and,
    for a driver known by its joint names, the topic that has the full rate."""
    t = np.asarray(t, dtype=float)
    steps = np.diff(t)
    steps = steps[steps > 0]
    if steps.size < 10:
        return []
    rate = 1.0 / float(np.median(steps))
    if rate >= 0.99 * MIN_RATE_HZ:  # 1 %: the round-off of stamps at exactly the rate
        return []
    hint = next((topic_hint for prefix, topic_hint in FULL_RATE_TOPICS.items()
                 if any(str(j).startswith(prefix) for j in joints)), None)
    instead = f"; record {hint} instead" if hint is not None and not topic.startswith("/franka") else \
        "; record the driver's full-rate joint states (its joint_state_broadcaster) instead"
    return [f"joint states on {topic} arrive at {rate:.3g} Hz, below the {MIN_RATE_HZ:g} Hz an identification needs "
            f"for accelerations{instead}"]
