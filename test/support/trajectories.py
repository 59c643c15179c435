"""Short trajectory files for tests that need a motion of a shipped robot."""

from __future__ import annotations

import numpy as np

from dynid_ros.excitation import ExcitationTrajectory, FourierTrajectory, limits_from_model, save_trajectory
from dynid_ros.robot.model import load_model

from support.sim_panda import PANDA_HOME


def write_short_panda_trajectory(urdf, path):
    """A short Fourier excitation of the Panda arm ``urdf`` (period 2 s, 3 harmonics) that starts at rest at
    PANDA_HOME, saved to ``path``."""
    model = load_model(urdf=urdf)
    rng = np.random.default_rng(3)
    a = rng.normal(0.0, 0.1, (7, 3))
    b = rng.normal(0.0, 0.1, (7, 3))
    a[:, 2] = -a[:, :2].sum(axis=1)
    b[:, 2] = -(b[:, 0] + 2 * b[:, 1]) / 3
    wf = np.pi
    q0 = PANDA_HOME + (b / (wf * np.arange(1, 4))).sum(axis=1)
    trajectory = FourierTrajectory(model.joints, wf, q0, a, b)
    save_trajectory(path, ExcitationTrajectory(trajectory, limits_from_model(model), float("nan"), {}))
    return path
