"""Trajectory files whose own limits: are wider than the robot's (the robot's limits are the authority)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from dynid_ros.excitation import (
    ExcitationLimits,
    ExcitationTrajectory,
    FourierTrajectory,
)

HOME = np.array([0.0, -0.3, 0.0, -1.5, 0.0, 1.8, 0.7])
WIDE = {"position": [[-10.0, 10.0]] * 7, "velocity": [100.0] * 7, "acceleration": [1000.0] * 7}


def outside_urdf_trajectory(amplitude_rad: float = 1.8, period: float = 4.0) -> FourierTrajectory:
    """At rest at HOME at t = 0; panda_joint4 swings up by ``amplitude_rad`` (HOME -1.5 + 1.8 = +0.3, while the
    URDF range ends at -0.0698): ``q4 = q0 + A/wf (sin wf t - sin(2 wf t) / 2)``, peak 1.299 A / wf at wf t = 2pi/3."""
    wf = 2 * np.pi / period
    a = np.zeros((7, 2))
    a[3] = np.array([1.0, -1.0]) * amplitude_rad * wf / 1.299
    return FourierTrajectory(tuple(f"panda_joint{i}" for i in range(1, 8)), wf, HOME, a, np.zeros((7, 2)))


def write_wide(path: Path, trajectory: FourierTrajectory, limits: dict | None = WIDE) -> Path:
    content = ExcitationTrajectory(trajectory, ExcitationLimits(**limits) if limits else None, 10.0).to_dict()
    path.write_text(yaml.safe_dump(content, sort_keys=False))
    return path
