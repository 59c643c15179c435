"""The embedded Panda of the simulator tests: its URDF, home pose, a ground truth and a Fourier reference."""

from __future__ import annotations

import numpy as np

from dynid_ros.robot.resources import robot_file
from dynid_ros.sim import GroundTruth

PANDA = robot_file("panda", "urdf")
TRUTH = GroundTruth(mass=0.1, com=0.01, inertia=0.15, damping=0.1, friction=(0.6, 0.8, 0.6, 0.8, 0.4, 0.3, 0.3),
                    armature=(0.08, 0.08, 0.06, 0.06, 0.02, 0.02, 0.015), noise=0.05,
                    bias=(0.1, -0.15, 0.05, 0.2, -0.05, 0.03, -0.02), seed=4)
PANDA_HOME = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.7])


def fourier_reference(n: int, q0: np.ndarray, duration: float, rate: float = 1000.0, seed: int = 1,
                      amplitude: float = 0.6, wf: float = 2 * np.pi * 0.2, harmonics: int = 4):
    """A Fourier reference (Sousa & Cortesão 2014 eq. 78-80) that starts and ends at rest at ``q0``."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0.0, amplitude, (n, harmonics)) / np.arange(1, harmonics + 1)
    b = rng.normal(0.0, amplitude, (n, harmonics)) / np.arange(1, harmonics + 1)
    a[:, -1] = -a[:, :-1].sum(axis=1)  # q'(0) = 0
    b[:, -1] = -(b[:, :-1] * np.arange(1, harmonics)).sum(axis=1) / harmonics  # q''(0) = 0
    t = np.arange(int(round(duration * rate))) / rate
    wl = wf * np.arange(1, harmonics + 1)
    s, c = np.sin(np.outer(t, wl)), np.cos(np.outer(t, wl))
    offset = q0 + (b / wl).sum(axis=1)
    q = offset + (s / wl) @ a.T - (c / wl) @ b.T
    return t, q, c @ a.T + s @ b.T, (-s * wl) @ a.T + (c * wl) @ b.T
