"""The Panda's excitation limits from its shipped config, and Fourier coefficients that start and end at rest."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dynid_ros.excitation import ExcitationLimits, FourierTrajectory, limits_from_model
from dynid_ros.robot.config import config_section
from dynid_ros.robot.model import RobotModel, load_model
from dynid_ros.robot.resources import robot_file

PANDA_ACCELERATION = [15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0]
"""The acceleration limits [rad/s^2] of config/panda.yaml."""


@lru_cache(maxsize=1)
def panda_model() -> RobotModel:
    """The shipped Panda (urdf/panda.urdf)."""
    return load_model(urdf=robot_file("panda", "urdf"))


@lru_cache(maxsize=1)
def panda_limits() -> ExcitationLimits:
    """The Panda's excitation limits: its URDF narrowed by config/panda.yaml's excitation section."""
    return limits_from_model(panda_model(), config_section(robot_file("panda", "config"), "excitation"))


def at_rest(n: int, harmonics: int, seed: int, amplitude: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Random coefficients with sum_l a_l = 0 and sum_l l b_l = 0."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(-amplitude, amplitude, (2, n, harmonics))
    ell = np.arange(1, harmonics + 1)
    return a - a.mean(axis=1, keepdims=True), b - np.outer(b @ ell, ell) / (ell @ ell)


def trajectory_at_rest(limits: ExcitationLimits, joints: tuple[str, ...], seed: int = 0, amplitude: float = 0.1,
                       wf: float = 2 * np.pi * 0.1) -> FourierTrajectory:
    """Five harmonics about the middle of the position limits, at rest at t = 0."""
    a, b = at_rest(len(joints), 5, seed, amplitude)
    return FourierTrajectory(joints, wf, limits.position.mean(axis=1), a, b)
