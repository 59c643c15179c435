"""Random rigid bodies, fully physically consistent, and a two-link layout to hold them."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from dynid_ros.robot.parameters import ParameterLayout, link_parameters

TWO_LINK_LAYOUT = ParameterLayout(("j1", "j2"), ("upper", "lower"), ("viscous", "coulomb"), True)
"""Two links, viscous and Coulomb friction and armature per joint (26 parameters)."""


def random_body(rng: np.random.Generator) -> np.ndarray:
    """Ten parameters of a random box-like rigid body (fully physically consistent)."""
    mass = rng.uniform(0.5, 5.0)
    second = rng.uniform(0.002, 0.02, 3) * mass  # second moments about the CoM, principal axes
    rot = Rotation.random(random_state=int(rng.integers(1 << 31))).as_matrix()
    inertia = rot @ np.diag([second[1] + second[2], second[0] + second[2], second[0] + second[1]]) @ rot.T
    return link_parameters(mass, rng.uniform(-0.2, 0.2, 3), inertia)
