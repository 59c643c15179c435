"""The base regressor of a frames robot (:mod:`dynid_ros.robot.frames`) for the excitation optimizer: the links'
rigid-body columns and the per-frame friction, rotor-inertia and spring columns (:mod:`dynid_ros.dynamics.
frame_terms`), in motor coordinates, the columns the identification fits (Wang et al. 2019 section IV: the
trajectory is optimized on the identified model's own regressor).

The base columns are picked left to right (links first, then the per-frame terms) by a pivot-free rank test at
random states inside the excitation's position limits (:data:`dynid_ros.dynamics.base_parameters.RANK_TOLERANCE`
on unit-norm columns), as :func:`dynid_ros.variants.frames_identification.base_count` counts them. The config's
``excitation: exclude_frames: [...]`` leaves out the inertia of frames that move almost as others (Wang et al. 2019
section VI-A optimize the PSM's trajectory without its parallelogram links 5 and 7, which follow links 4 and 6
closely: with them the condition number of every trajectory is large); the identification still fits them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.dynamics.base_parameters import RANK_TOLERANCE
from dynid_ros.dynamics.frame_terms import term_columns, term_gradient
from dynid_ros.dynamics.regressor import regressor_3d
from dynid_ros.errors import ConfigError
from dynid_ros.excitation.limits import ExcitationLimits
from dynid_ros.robot.frames import FramesRobot
from dynid_ros.robot.parameters import ParameterLayout

RANDOM_STATES = 200
"""Random states of the base selection and of the column scale."""
ZERO_COLUMN = 1e-12
"""A column whose norm is below this fraction of the largest is zero (round-off of a parameter that does not act,
e.g. the inertia about an axis a parallelogram link never turns about)."""


@dataclass(frozen=True)
class FramesBase:
    """The base columns of a frames robot: ``independent`` indexes ``[links (10 per body), terms]``."""

    robot: FramesRobot
    layout: ParameterLayout
    independent: np.ndarray
    n_terms: int

    @property
    def n_base(self) -> int:
        """Number of base columns."""
        return int(self.independent.size)

    @property
    def n_parameters(self) -> int:
        """Number of columns of the full regressor: the links' parameters, then the per-frame terms."""
        return self.layout.n_parameters + self.n_terms

    def full(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(N, n_motors, n_parameters): the links' regressor, then the per-frame term columns."""
        links = regressor_3d(self.robot.model, self.layout, q, dq, ddq)
        return np.concatenate([links, term_columns(self.robot, q, dq, ddq).columns], axis=2)

    def columns(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(N, n_motors, n_base) base columns."""
        return self.full(q, dq, ddq)[:, :, self.independent]

    def term_gradient(self, parameters: np.ndarray, covector: np.ndarray, q: np.ndarray, dq: np.ndarray,
                      ddq: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The per-frame terms' part of ``d (covector . Y parameters)`` by q, q', q'' (links excluded)."""
        return term_gradient(self.robot, parameters[self.layout.n_parameters:], covector, q, dq, ddq)


def random_motor_states(robot: FramesRobot, limits: ExcitationLimits, seed: int = 0
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random positions inside the limits, velocities and accelerations up to the limits' scale."""
    rng = np.random.default_rng(seed)
    n = len(robot.motors)
    q = rng.uniform(limits.position[:, 0], limits.position[:, 1], (RANDOM_STATES, n))
    dq = rng.normal(0.0, 1.0, (RANDOM_STATES, n)) * limits.velocity
    ddq = rng.normal(0.0, 1.0, (RANDOM_STATES, n)) * limits.acceleration
    return q, dq, ddq


def frames_base(robot: FramesRobot, limits: ExcitationLimits, exclude: tuple[str, ...] = ()) -> FramesBase:
    """The base columns of ``robot`` (module docstring), without the link columns of the frames in ``exclude``."""
    layout = ParameterLayout(robot.motors, robot.model.links, (), False)
    unknown = [name for name in exclude if name not in layout.links]
    if unknown:
        raise ConfigError(f"excitation.exclude_frames: {', '.join(unknown)} is no frame with inertia "
                          f"({', '.join(layout.links)})")
    states = random_motor_states(robot, limits)
    n_terms = term_columns(robot, *(s[:1] for s in states)).columns.shape[2]
    probe = FramesBase(robot, layout, np.arange(layout.n_parameters + n_terms), n_terms)
    w = probe.full(*states).reshape(-1, probe.n_parameters)
    for name in exclude:
        w[:, layout.link_slice(layout.links.index(name))] = 0.0
    norms = np.linalg.norm(w, axis=0)
    present = norms > ZERO_COLUMN * norms.max()
    scale = np.linalg.svd(w[:, present] / norms[present], compute_uv=False)[0]
    kept: list[int] = []
    basis = np.zeros((w.shape[0], 0))
    for k in np.flatnonzero(present):
        column = w[:, k] / norms[k]
        residual = column - basis @ (basis.T @ column)
        residual -= basis @ (basis.T @ residual)  # twice: Gram-Schmidt keeps orthogonality
        if np.linalg.norm(residual) > RANK_TOLERANCE * scale:
            kept.append(int(k))
            basis = np.hstack([basis, (residual / np.linalg.norm(residual))[:, None]])
    return FramesBase(robot, layout, np.array(kept, dtype=int), n_terms)


def frames_column_scale(base: FramesBase, limits: ExcitationLimits) -> np.ndarray:
    """``1 / ||column||`` of the base columns at random states inside the limits (each base parameter in the robot's
    own unit, as :func:`dynid_ros.excitation.optimizer.robot_column_scale`)."""
    w = base.columns(*random_motor_states(base.robot, limits, seed=1)).reshape(-1, base.n_base)
    norms = np.linalg.norm(w, axis=0)
    return 1.0 / np.where(norms > 0, norms, 1.0)
