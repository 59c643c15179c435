"""Synthetic identification data: a Fourier motion of a shipped robot and its exact torques."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.spatial.transform import Rotation

from dynid_ros.dynamics.base_parameters import compute_base_parameters
from dynid_ros.dynamics.regressor import regressor
from dynid_ros.robot.model import load_model
from dynid_ros.robot.parameters import ParameterLayout, link_parameters

from support.robots import PANDA_ARM_JOINTS, PANDA_ERD, UR5_ERD, example_robot_urdf


def fourier_trajectory(n_dof: int, n_samples: int, rng: np.random.Generator, period: float = 10.0
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random five-harmonic Fourier series per joint (Sousa & Cortesão 2014 eq. 78) with exact derivatives."""
    t = np.linspace(0.0, period, n_samples, endpoint=False)[:, None]
    q, dq, ddq = (np.zeros((n_samples, n_dof)) for _ in range(3))
    for harmonic in range(1, 6):
        w = 2.0 * np.pi * harmonic / period
        a, b = rng.normal(0.0, 0.4 / harmonic, (2, n_dof))
        q += a * np.sin(w * t) + b * np.cos(w * t)
        dq += w * (a * np.cos(w * t) - b * np.sin(w * t))
        ddq -= w**2 * (a * np.sin(w * t) + b * np.cos(w * t))
    return q, dq, ddq


@lru_cache(maxsize=2)
def synthetic(robot: str):
    """(model, layout, base, truth, base regressor, full regressor) for a random feasible robot."""
    if robot == "panda":
        model = load_model(urdf=example_robot_urdf(PANDA_ERD), joints=list(PANDA_ARM_JOINTS))
    else:
        model = load_model(urdf=example_robot_urdf(UR5_ERD))
    layout = model.layout_for(("viscous", "coulomb", "offset"), True)
    base = compute_base_parameters(model, layout)
    rng = np.random.default_rng(7)
    truth = random_feasible_delta(layout, rng)
    w = regressor(model, layout, *fourier_trajectory(model.n_dof, 600, rng))
    return model, layout, base, truth, base.project(w), w


def random_feasible_delta(layout: ParameterLayout, rng: np.random.Generator) -> np.ndarray:
    """Box-like links (fully consistent, well inside the cone) and positive friction and armature."""
    delta = np.zeros(layout.n_parameters)
    for k in range(len(layout.links)):
        mass = rng.uniform(0.5, 5.0)
        second = rng.uniform(0.002, 0.01, 3) * mass
        rot = Rotation.random(random_state=int(rng.integers(1 << 31))).as_matrix()
        inertia = rot @ np.diag([second[1] + second[2], second[0] + second[2], second[0] + second[1]]) @ rot.T
        delta[layout.link_slice(k)] = link_parameters(mass, rng.uniform(-0.15, 0.15, 3), inertia)
    for symbol in layout.joint_terms:
        values = rng.uniform(0.05, 1.0, layout.n_dof)
        delta[layout.indices(symbol)] = values * (rng.choice([-1.0, 1.0], layout.n_dof) if symbol == "fo" else 1.0)
    return delta
