"""Motor-to-joint couplings: arms whose recordings are in motor coordinates (gear ratios, a coupled wrist).

The ``coupling:`` section of a robot config, used with a URDF for the links (Wang et al. 2019 section II-B,
tendon-driven dVRK joints; the same holds for the coupled wrist of many industrial arms)::

    coupling:
      motors: [m1, m2, m3, m4]          # motor coordinates, as named in the JointState messages
      joints: [j1, j2, j3, j4]          # the URDF joints they drive; motor i is the main drive of joint i
      matrix: [[1, 0, 0, 0],            # joint x motor: q_joint = matrix @ diag(1 / gear_ratios) @ q_motor
               [0, 1, 0, 0],
               [0, 0, 1, 0],
               [0, 0, 1, 1]]             # default: the identity
      gear_ratios: [1, 1, 2, 2]         # motor turns per joint turn (default 1)

With ``C = matrix @ diag(1 / gear_ratios)`` the joint coordinates are ``q_j = C q_m`` (and ``q_j' = C q_m'``,
``q_j'' = C q_m''``) and, by virtual work, the motor torques are ``tau_m = C^T tau_j``. The identified
coordinates are the motors: friction and rotor inertia are motor-side terms ``fv q_m' + fc sign(q_m') + fo +
Ia q_m''`` (the per-joint terms of :mod:`dynid_ros.robot.parameters`, one set per motor), the links are the
URDF's rigid bodies, each with its own LMI. :func:`apply_coupling` turns the URDF model into that model; the
regressor projects the link rows with ``C^T`` as it does for mimic followers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dynid_ros.errors import ConfigError
from dynid_ros.robot.model import RobotModel

COUPLING_KEYS = ("motors", "joints", "matrix", "gear_ratios")
"""Keys of the config's ``coupling:`` section."""


@dataclass(frozen=True)
class MotorCoupling:
    """``q_joint = matrix q_motor``: ``matrix`` (n, n) already includes the gear ratios."""

    motors: tuple[str, ...]
    joints: tuple[str, ...]
    matrix: np.ndarray

    @classmethod
    def from_config(cls, section: Mapping[str, object], source: str = "config") -> MotorCoupling:
        """From the ``coupling:`` section (module docstring); ConfigError naming the key for bad input."""
        unknown = sorted(set(section) - set(COUPLING_KEYS))
        if unknown:
            raise ConfigError(f"{source}: coupling: unknown key(s) {unknown}; use {', '.join(COUPLING_KEYS)}")
        motors, joints = (_names(section.get(key), f"{source}: coupling.{key}") for key in ("motors", "joints"))
        n = len(motors)
        if len(joints) != n:
            raise ConfigError(f"{source}: coupling: {n} motors but {len(joints)} joints (one motor per joint)")
        matrix = _array(section.get("matrix", np.eye(n)), (n, n), f"{source}: coupling.matrix")
        gears = _array(section.get("gear_ratios", np.ones(n)), (n,), f"{source}: coupling.gear_ratios")
        if np.any(gears == 0):
            raise ConfigError(f"{source}: coupling.gear_ratios must be non-zero")
        c = matrix / gears[None, :]
        if np.linalg.cond(c) > 1e12:
            raise ConfigError(f"{source}: coupling.matrix / gear_ratios is singular: the motors do not determine "
                              "the joints")
        return cls(motors, joints, c)

    def joint_positions(self, q_motor: np.ndarray) -> np.ndarray:
        """Joint coordinates (..., n) of motor coordinates (..., n), in the order of ``joints``."""
        return np.asarray(q_motor, dtype=float) @ self.matrix.T

    def motor_positions(self, q_joint: np.ndarray) -> np.ndarray:
        """Motor coordinates (..., n) of joint coordinates (..., n): ``C^-1 q_j``."""
        return np.linalg.solve(self.matrix, np.asarray(q_joint, dtype=float).T).T

    def joint_torques(self, tau_motor: np.ndarray) -> np.ndarray:
        """The joint torques (..., n) equivalent to motor torques: ``C^-T tau_m``."""
        return np.linalg.solve(self.matrix.T, np.asarray(tau_motor, dtype=float).T).T


def coupling_from_config(config: Mapping[str, object], source: str = "config") -> MotorCoupling | None:
    """The ``coupling:`` section of a whole config mapping, or None without one."""
    section = config.get("coupling")
    if section is None:
        return None
    if not isinstance(section, Mapping):
        raise ConfigError(f"{source}: section 'coupling' must be a mapping")
    return MotorCoupling.from_config(section, source)


def apply_coupling(model: RobotModel, coupling: MotorCoupling) -> RobotModel:
    """The model identified in motor coordinates: its coordinates are ``coupling.motors``; every body keeps
    its URDF joint, at ``C_body C q_m + o`` (composed with mimic followers, if any). Position, velocity and
    effort limits of the motors are unknown (infinite): give them in the excitation config."""
    if set(model.joints) != set(coupling.joints):
        raise ConfigError(f"coupling.joints ({', '.join(coupling.joints)}) must be the model's identified joints "
                          f"({', '.join(model.joints)})")
    order = [coupling.joints.index(name) for name in model.joints]
    c_joint = coupling.matrix[order]  # rows in the model's joint order
    body = model.coupling if model.coupling is not None else np.eye(model.n_dof)
    offset = model.coupling_offset if model.coupling_offset is not None else np.zeros(model.n_bodies)
    n = len(coupling.motors)
    ids = tuple(model.joint_ids[model.joints.index(name)] for name in coupling.joints)
    infinite = np.full(n, np.inf)
    expanded = model.pin_model if model.expanded is None else model.expanded
    return dataclasses.replace(
        model, joints=tuple(coupling.motors), joint_ids=ids, followers=(), coupling=body @ c_joint,
        coupling_offset=np.asarray(offset, dtype=float), expanded=expanded,
        position_limits=np.stack([-infinite, infinite], axis=1), velocity_limits=infinite.copy(),
        effort_limits=infinite.copy(), description_joints=tuple(model.joints))


def model_coupling(model: RobotModel) -> MotorCoupling | None:
    """The motor coupling of a model made by :func:`apply_coupling` (None for a model in joint coordinates)."""
    if not model.description_joints:
        return None
    bodies = list(model.expanded.names)[1:]
    rows = [bodies.index(name) for name in model.description_joints]
    return MotorCoupling(tuple(model.joints), tuple(model.description_joints), np.array(model.coupling[rows]))


def coupling_dict(model: RobotModel) -> dict | None:
    """The ``coupling:`` mapping (gear ratios folded into ``matrix``) of a model in motor coordinates, or None:
    what a result records so that validation rebuilds the same model."""
    coupling = model_coupling(model)
    if coupling is None:
        return None
    return {"motors": list(coupling.motors), "joints": list(coupling.joints),
            "matrix": [[float(v) for v in row] for row in coupling.matrix]}


def _names(value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{what} must be a non-empty list of names")
    if len(set(value)) != len(value):
        raise ConfigError(f"{what} has repeated names")
    return tuple(value)


def _array(value: object, shape: tuple[int, ...], what: str) -> np.ndarray:
    try:
        out = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{what} must be numbers of shape {shape}") from err
    if out.shape != shape or not np.all(np.isfinite(out)):
        raise ConfigError(f"{what} must be finite numbers of shape {shape}, got shape {out.shape}")
    return out
