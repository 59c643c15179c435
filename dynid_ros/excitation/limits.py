"""Joint limits an excitation trajectory must respect, and the check on a dense time grid.

Limits come from the robot description (URDF position, velocity and effort limits), narrowed by
margins and overridden per joint from the ``excitation:`` section of a robot config file. A URDF has
no acceleration limits: they come from the config, else :data:`DEFAULT_ACCELERATION`.

Config keys (all optional)::

    margins: {position: 0.05, velocity: 0.9, acceleration: 1.0, effort: 0.8}
        # position: rad (or m) kept free at each end of the range; others: fraction of the limit used
    acceleration: [15, 7.5, ...] | {joint: value}       # rad/s^2 (or m/s^2)
    position: {joint: [lo, hi]}                         # overrides, before margins
    velocity: {joint: value}  |  effort: {joint: value}

A robot described by its config (``robot: frames:`` or a ``coupling:`` in motor coordinates) has no description
limits for its coordinates: there the config is the authority, and every coordinate needs ``position`` and
``velocity`` entries (``limits_from_model(..., from_config=True)`` refuses otherwise).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from dynid_ros.errors import ConfigError, TrajectoryError
from dynid_ros.excitation.torques import nominal_torques

if TYPE_CHECKING:
    from dynid_ros.excitation.fourier import FourierTrajectory
    from dynid_ros.robot.model import RobotModel

DEFAULT_ACCELERATION = 5.0
"""Acceleration limit [rad/s^2 or m/s^2] of joints the config gives none for (conservative)."""

DEFAULT_MARGINS: dict[str, float] = {"position": 0.05, "velocity": 0.9, "acceleration": 1.0, "effort": 0.8}
"""Position: distance kept from each end of the range; velocity, acceleration, effort: usable fraction."""

UNLIMITED_POSITION = np.pi
"""Half range used for joints without position limits (continuous joints)."""

TOLERANCE = 1e-9
"""Relative slack of the limit check (round-off only)."""

CHECK_RATE_HZ = 1000.0
"""Rate of the dense grid every trajectory and every motion is checked on (files, optimizer, robot limits)."""


@dataclass(frozen=True)
class ExcitationLimits:
    """Limits as checked, margins already applied.

    Attributes:
        position: (n, 2) lower and upper bounds; velocity, acceleration: (n,) symmetric bounds;
        effort: (n,) symmetric torque bounds on the nominal model, or None when not checked.
    """

    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    effort: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in ("position", "velocity", "acceleration"):
            object.__setattr__(self, name, np.array(getattr(self, name), dtype=float))
        if self.effort is not None:
            object.__setattr__(self, "effort", np.array(self.effort, dtype=float))
        n = self.velocity.shape[0] if self.velocity.ndim == 1 else -1
        if self.position.shape != (n, 2) or self.acceleration.shape != (n,) or (
                self.effort is not None and self.effort.shape != (n,)):
            raise TrajectoryError(f"limits need position (n, 2) and velocity, acceleration[, effort] (n,); got "
                                  f"{self.position.shape}, {self.velocity.shape}, {self.acceleration.shape}")
        if np.any(~np.isfinite(self.position)) or np.any(self.position[:, 1] <= self.position[:, 0]):
            raise TrajectoryError(f"position limits must be finite with lower < upper, got {self.position.tolist()}")
        for name in ("velocity", "acceleration", "effort"):
            value = getattr(self, name)
            if value is not None and (np.any(~np.isfinite(value)) or np.any(value <= 0)):
                raise TrajectoryError(f"{name} limits must be finite and positive, got {value.tolist()}")

    @property
    def n_dof(self) -> int:
        """Number of joints."""
        return int(self.velocity.shape[0])

    def to_dict(self) -> dict:
        """Plain lists for YAML."""
        out = {"position": self.position.tolist(), "velocity": self.velocity.tolist(),
               "acceleration": self.acceleration.tolist()}
        if self.effort is not None:
            out["effort"] = self.effort.tolist()
        return out


def limits_from_model(model: RobotModel, config: dict | None = None, from_config: bool = False) -> ExcitationLimits:
    """Limits of ``model``'s joints: URDF limits, config overrides, then margins (module docstring).

    ``config`` is the ``excitation:`` section (a whole config mapping with that section also works).
    Effort limits are included only when the config sets ``torque_limits: true``. ``from_config``: the model's
    coordinates have no description limits (frames robot, motor coordinates): the config must give every
    coordinate's position range and velocity limit.
    """
    config = dict(config or {})
    if isinstance(config.get("excitation"), Mapping):
        config = dict(config["excitation"])
    joints = model.joints
    config = {key: _without(value, model.locked) for key, value in config.items()}
    if from_config:
        require_config_limits(joints, config)
    margins = {**DEFAULT_MARGINS, **config_mapping(config.get("margins"), "margins")}
    for key, value in margins.items():
        if key not in DEFAULT_MARGINS:
            raise ConfigError(f"excitation margins: unknown key {key!r} (use {', '.join(DEFAULT_MARGINS)})")
        if not isinstance(value, (int, float)) or value < 0 or (key != "position" and not 0 < value <= 1):
            raise ConfigError(f"excitation margins: {key} must be {'>= 0' if key == 'position' else 'in (0, 1]'}, "
                              f"got {value!r}")
    position = np.array(model.position_limits, dtype=float)
    unbounded = ~np.all(np.isfinite(position), axis=1)
    position[unbounded] = [-UNLIMITED_POSITION, UNLIMITED_POSITION]
    for joint, value in config_mapping(config.get("position"), "position").items():
        bounds = np.asarray(value, dtype=float) if _is_pair(value) else None
        if bounds is None or not bounds[0] < bounds[1]:
            raise ConfigError(f"excitation position override of {joint}: expected [lower, upper], got {value!r}")
        position[_joint_index(joints, joint)] = bounds
    position = position + np.array([margins["position"], -margins["position"]])
    narrow = np.flatnonzero(position[:, 1] <= position[:, 0])
    if narrow.size:
        raise ConfigError(f"excitation position margin {margins['position']} leaves no range for joint "
                          f"{joints[narrow[0]]}")
    velocity = per_joint_values(config.get("velocity"), joints, np.array(model.velocity_limits, dtype=float),
                                "velocity")
    if np.any(~np.isfinite(velocity)):
        raise ConfigError(f"joint {joints[int(np.flatnonzero(~np.isfinite(velocity))[0])]} has no velocity limit "
                          "in the robot description: give one in the config (excitation: velocity: {joint: v})")
    acceleration = per_joint_values(config.get("acceleration"), joints, np.full(len(joints), DEFAULT_ACCELERATION),
                              "acceleration")
    effort = None
    if config.get("torque_limits", False):
        effort = per_joint_values(config.get("effort"), joints, np.array(model.effort_limits, dtype=float), "effort")
        if np.any(~np.isfinite(effort)):
            raise ConfigError("torque_limits: the robot description lacks effort limits; give them in the config")
        effort = effort * margins["effort"]
    return ExcitationLimits(position, velocity * margins["velocity"], acceleration * margins["acceleration"], effort)


@dataclass(frozen=True)
class CoupledJointLimits:
    """The description's joints of a model in motor coordinates, ``q_j = matrix q_m + offset``, and their limits
    (margins applied): ``position`` (k, 2), ``velocity`` (k,); only the joints with finite limits."""

    names: tuple[str, ...]
    matrix: np.ndarray
    offset: np.ndarray
    position: np.ndarray
    velocity: np.ndarray

    def joint_positions(self, q_motor: np.ndarray) -> np.ndarray:
        """The description's joint positions ``q_j = matrix q_m + offset`` of motor positions ``q_m``."""
        return np.asarray(q_motor, dtype=float) @ self.matrix.T + self.offset


def coupled_joint_limits(model: RobotModel, config: dict | None = None) -> CoupledJointLimits | None:
    """The URDF joint limits a model in motor coordinates (:func:`dynid_ros.robot.coupling.apply_coupling`) must
    still respect, narrowed by the config's position and velocity margins; None for a model without
    description joints (its coordinates are the description's, bounded by :func:`limits_from_model`)."""
    if not model.description_joints or model.expanded is None or model.coupling is None:
        return None
    config = dict(config or {})
    if isinstance(config.get("excitation"), Mapping):
        config = dict(config["excitation"])
    margins = {**DEFAULT_MARGINS, **config_mapping(config.get("margins"), "margins")}
    pm = model.expanded
    names, rows, offsets, position, velocity = [], [], [], [], []
    for b in range(model.coupling.shape[0]):
        joint = pm.joints[b + 1]
        if joint.nq != 1:
            continue
        lower, upper = pm.lowerPositionLimit[joint.idx_q], pm.upperPositionLimit[joint.idx_q]
        v = pm.velocityLimit[joint.idx_v]
        if not (np.isfinite(lower) and np.isfinite(upper) and upper > lower and np.isfinite(v) and v > 0):
            continue
        names.append(str(pm.names[b + 1]))
        rows.append(model.coupling[b])
        offsets.append(0.0 if model.coupling_offset is None else float(model.coupling_offset[b]))
        position.append([lower + margins["position"], upper - margins["position"]])
        velocity.append(v * margins["velocity"])
    if not names:
        return None
    return CoupledJointLimits(tuple(names), np.array(rows), np.array(offsets), np.array(position), np.array(velocity))


def check_coupled_joints(limits: CoupledJointLimits, t: np.ndarray, q: np.ndarray, dq: np.ndarray) -> None:
    """TrajectoryError naming the description joint, time and value where ``C q_m + o`` or ``C q_m'`` leaves its
    limits (with :data:`TOLERANCE`)."""
    qj, dqj = limits.joint_positions(q), np.asarray(dq, dtype=float) @ limits.matrix.T
    span = limits.position[:, 1] - limits.position[:, 0]
    low = qj < limits.position[:, 0] - TOLERANCE * span
    high = qj > limits.position[:, 1] + TOLERANCE * span
    fast = np.abs(dqj) > limits.velocity * (1 + TOLERANCE)
    for bad, value, what in ((low | high, qj, "position"), (fast, dqj, "velocity")):
        if bad.any():
            s, j = np.argwhere(bad)[0]
            raise TrajectoryError(f"joint {limits.names[j]} (driven through the coupling): {what} {value[s, j]:.4g} "
                                  f"at t = {t[s]:.3f} s is outside its limits")


def require_config_limits(joints: tuple[str, ...], config: Mapping) -> None:
    """ConfigError naming the first coordinate without ``position`` or ``velocity`` in the ``excitation:`` section
    (a robot described by its config: no description limits to fall back on)."""
    position = config_mapping(config.get("position"), "position")
    velocity = config.get("velocity")
    for joint in joints:
        if joint not in position:
            raise ConfigError(f"excitation.position has no range for {joint}: a robot described by its config "
                              "(robot.frames or coupling:) has no description limits; give excitation: position: "
                              f"{{{joint}: [lower, upper]}} for every coordinate ({', '.join(joints)})")
        if not (isinstance(velocity, (int, float)) or (isinstance(velocity, Mapping) and joint in velocity)
                or (isinstance(velocity, (list, tuple)) and len(velocity) == len(joints))):
            raise ConfigError(f"excitation.velocity has no limit for {joint}: a robot described by its config "
                              "(robot.frames or coupling:) has no description limits; give excitation: velocity: "
                              f"{{{joint}: v}} for every coordinate")


def config_mapping(value: object, name: str) -> dict:
    """The ``excitation`` entry ``name`` as a dict (None: empty); ConfigError when it is not a mapping."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"excitation {name}: expected a mapping, got {value!r}")
    return dict(value)


def _without(value: object, locked: tuple[str, ...]) -> object:
    """A per-joint mapping without the joints the model locked (a config written for the whole arm)."""
    if isinstance(value, Mapping) and locked:
        return {k: v for k, v in value.items() if k not in locked}
    return value


def _is_pair(value: object) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value)


def _joint_index(joints: tuple[str, ...], joint: str) -> int:
    if joint not in joints:
        raise ConfigError(f"excitation config names joint {joint!r}, which is not one of {', '.join(joints)}")
    return joints.index(joint)


def per_joint_values(value: object, joints: tuple[str, ...], default: np.ndarray, name: str) -> np.ndarray:
    """Per-joint values from a list (one per joint), a mapping joint -> value, or a single number."""
    out = default.copy()
    if value is None:
        return out
    if isinstance(value, (int, float)):
        out[:] = float(value)
    elif isinstance(value, Mapping):
        for joint, v in value.items():
            out[_joint_index(joints, str(joint))] = float(v)
    elif isinstance(value, (list, tuple)) and len(value) == len(joints):
        out = np.array([float(v) for v in value])
    else:
        raise ConfigError(f"excitation {name}: expected a number, one value per joint ({len(joints)}) or a "
                          f"mapping joint -> value, got {value!r}")
    if np.any(out <= 0):
        raise ConfigError(f"excitation {name} limits must be positive, got {out.tolist()}")
    return out


class _Sampled(Protocol):
    joints: tuple[str, ...]

    def sample_at_rate(self, rate_hz: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...


def effort_bounds(model: RobotModel, config: dict | None = None) -> np.ndarray:
    """(n,) bound on each joint's nominal inverse-dynamics torque: the description's effort limit (or the config's
    ``effort:`` override) times the ``effort`` margin; ``inf`` where neither gives one. The one definition both
    the optimizer (:mod:`dynid_ros.excitation.optimizer`) and the check of every executed motion
    (:mod:`dynid_ros.execution.robot_limits`) use, so that what the first returns passes the second."""
    config = dict(config or {})
    if isinstance(config.get("excitation"), Mapping):
        config = dict(config["excitation"])
    margins = {**DEFAULT_MARGINS, **config_mapping(config.get("margins"), "margins")}
    effort = per_joint_values(config.get("effort"), tuple(model.joints), np.array(model.effort_limits, dtype=float),
                              "effort")
    return np.where(np.isfinite(effort) & (effort > 0), effort * margins["effort"], np.inf)


def sample_trajectory(trajectory: FourierTrajectory | _Sampled, rate_hz: float
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(t, q, dq, ddq)``: one period of a Fourier trajectory (both ends included), or a whole profile."""
    if hasattr(trajectory, "sample_at_rate"):
        return trajectory.sample_at_rate(rate_hz)
    n = max(int(np.ceil(trajectory.period * rate_hz)), 2)
    t = np.linspace(0.0, trajectory.period, n + 1)
    return (t, *trajectory.evaluate(t))


def check_trajectory_limits(trajectory: FourierTrajectory | _Sampled, limits: ExcitationLimits,
                            rate_hz: float = 1000.0, model: RobotModel | None = None) -> dict:
    """Check a trajectory against ``limits`` at ``rate_hz``; return the margins.

    Returns ``{"position", "velocity", "acceleration"[, "effort"]: smallest margin as a fraction
    (of the half range for positions, of the limit otherwise), "position_rad": smallest distance to a
    position bound, "tightest": "<quantity> of <joint>"}``. Effort is checked when ``limits.effort``
    is set and ``model`` (the nominal model, torques by RNEA) is given.

    Raises:
        TrajectoryError: naming the joint, quantity, time and value of the first violation found.
    """
    if not rate_hz > 0:
        raise TrajectoryError(f"check rate must be positive, got {rate_hz}")
    joints = tuple(trajectory.joints)
    if len(joints) != limits.n_dof:
        raise TrajectoryError(f"trajectory has {len(joints)} joints but the limits have {limits.n_dof}")
    t, q, dq, ddq = sample_trajectory(trajectory, rate_hz)
    torques = None
    if limits.effort is not None and model is not None:
        torques = nominal_torques(model, q, dq, ddq)
    return check_sampled_limits(joints, t, q, dq, ddq, limits, torques)


def check_sampled_limits(joints: tuple[str, ...], t: np.ndarray, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray,
                         limits: ExcitationLimits, torques: np.ndarray | None = None, source: str = "") -> dict:
    """:func:`check_trajectory_limits` on samples ``(t, q, dq, ddq)`` (and ``torques``, checked against
    ``limits.effort`` where that is finite); ``source`` names whose limits these are in the message."""
    joints = tuple(joints)
    if len(joints) != limits.n_dof:
        raise TrajectoryError(f"trajectory has {len(joints)} joints but the limits have {limits.n_dof}")
    lower, upper = limits.position[:, 0], limits.position[:, 1]
    half = 0.5 * (upper - lower)
    slack = TOLERANCE * np.maximum(np.abs(limits.position).max(axis=1), 1.0)
    raise_on_violation(joints, t, q, (q < lower - slack) | (q > upper + slack), "position", lower, upper, source)
    distance = np.minimum(q - lower, upper - q)
    fractions = {"position": distance / half}
    quantities = [("velocity", dq, limits.velocity), ("acceleration", ddq, limits.acceleration)]
    if limits.effort is not None and torques is not None:
        quantities.append(("effort", torques, limits.effort))
    for name, value, bound in quantities:
        raise_on_violation(joints, t, value, np.abs(value) > bound * (1 + TOLERANCE), name, -bound, bound, source)
        fractions[name] = 1.0 - np.abs(value) / bound
    margins: dict = {name: float(f.min()) for name, f in fractions.items()}
    margins["position_rad"] = float(distance.min())
    name = min(fractions, key=lambda k: margins[k])
    joint = joints[int(np.unravel_index(np.argmin(fractions[name]), fractions[name].shape)[1])]
    margins["tightest"] = f"{name} of {joint}"
    return margins


def raise_on_violation(joints: tuple[str, ...], t: np.ndarray, value: np.ndarray, bad: np.ndarray, name: str,
                        lower: np.ndarray, upper: np.ndarray, source: str = "") -> None:
    """TrajectoryError naming the first joint and time where ``bad`` is set, with the value and its limits."""
    if not bad.any():
        return
    s, k = np.argwhere(bad)[0]
    raise TrajectoryError(f"joint {joints[k]}: {name} {value[s, k]:.6g} at t = {t[s]:.3f} s is outside the "
                          f"limits [{lower[k]:.6g}, {upper[k]:.6g}]" + (f" of {source}" if source else ""))
