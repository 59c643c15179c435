"""Joint states recorded too slowly for an identification, and the topic a driver offers at full rate.

Accelerations come from differentiating positions or velocities twice or once; the filters and the cutoff
(:mod:`dynid_ros.data.bandwidth`) need samples well above the motion's bandwidth. franka_ros2's launch republishes
``/joint_states`` at 30 Hz through joint_state_publisher (merging the gripper) and remaps its 1 kHz
joint_state_broadcaster to ``/franka/joint_states``; other drivers have similar merged topics. A recording whose
median sample rate is below :data:`MIN_RATE_HZ` is named in a warning (:func:`sample_rate_warnings`), as is a live
topic measured so while recording (:func:`rate_warning`), with the full-rate topic of the driver
(:mod:`dynid_ros.robot.drivers`).
"""

from __future__ import annotations

import numpy as np

from dynid_ros.robot.drivers import DriverProfile, driver_profile

MIN_RATE_HZ = 100.0
"""Joint states below this median rate [Hz] are named."""


def sample_rate_warnings(t: np.ndarray, topic: str, joints: tuple[str, ...] | list[str],
                         driver: DriverProfile | None = None) -> list[str]:
    """A warning when the median rate of the stamps ``t`` [s] is below :data:`MIN_RATE_HZ`, naming ``topic`` and the
    topic ``driver`` (else the driver known by the joint names) has at full rate."""
    t = np.asarray(t, dtype=float)
    steps = np.diff(t)
    steps = steps[steps > 0]
    if steps.size < 10:
        return []
    warning = rate_warning(1.0 / float(np.median(steps)), topic, driver or driver_profile("", joints))
    return [warning] if warning else []


def rate_warning(rate_hz: float, topic: str, driver: DriverProfile | None) -> str:
    """The warning for JointState messages on ``topic`` at ``rate_hz`` ('' at :data:`MIN_RATE_HZ` or above): with
    the topic ``driver`` publishes at full rate when that is another one."""
    if rate_hz >= 0.99 * MIN_RATE_HZ:  # 1 %: the round-off of stamps at exactly the rate
        return ""
    if driver is not None and driver.joint_states_topic != topic:
        instead = f"; record {driver.full_rate_hint()} instead"
    else:
        instead = "; record the driver's full-rate joint states (its joint_state_broadcaster) instead"
    return (f"joint states on {topic} arrive at {rate_hz:.3g} Hz, below the {MIN_RATE_HZ:g} Hz an identification "
            f"needs for accelerations{instead}")
