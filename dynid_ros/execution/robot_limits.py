"""The robot's own limits, the authority over every motion that is executed or simulated.

The limits are the robot description's (URDF position and velocity limits, effort limits where it
gives them) with the config's margins and overrides, and accelerations from the config or the
conservative :data:`~dynid_ros.excitation.limits.DEFAULT_ACCELERATION` (:func:`robot_limits`). A
trajectory file's ``limits:`` are a record of what its optimizer used: they may only narrow the
robot's (:func:`effective_limits`), never widen them.

:func:`check_motion` is the one check, used by ``excitation_node``, ``sim_node`` and ``dynid simulate``
(and the demo): the motion exactly as it is sent, sampled on a 1 kHz grid, against the robot's limits,
with the nominal inverse-dynamics torque (URDF inertials, damping, friction, armature) against the
effort limits, and the robot's collision geometry against itself and its workcell (the clearance it keeps,
:mod:`dynid_ros.robot.collision_model`), like a joint limit. :func:`checked_profile` builds the motion a trajectory
file becomes (approach from the current pose, periods, hold) and checks it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dynid_ros.errors import CollisionError, TrajectoryError
from dynid_ros.excitation.fourier import FourierTrajectory
from dynid_ros.excitation.limits import (
    CHECK_RATE_HZ,
    ExcitationLimits,
    check_sampled_limits,
    effort_bounds,
    limits_from_model,
    raise_on_violation,
)
from dynid_ros.excitation.torques import nominal_torques
from dynid_ros.execution.execution_profile import build_execution_profile
from dynid_ros.robot.geometry_inertia import torque_check_model

LOG = logging.getLogger(__name__)

if TYPE_CHECKING:
    from dynid_ros.execution.execution_profile import ExecutionProfile
    from dynid_ros.robot.collision_model import CollisionModel
    from dynid_ros.robot.model import RobotModel

@dataclass(frozen=True)
class RobotLimits:
    """The limits of every movable joint of a robot, margins applied.

    Attributes:
        model: the nominal robot (all movable joints), for the inverse-dynamics torques;
        limits: position, velocity and acceleration limits in ``model.joints`` order;
        effort: (n,) effort limits times the effort margin, ``inf`` where the description gives none;
        source: what the limits come from, for messages;
        collision: the robot's collision geometry and workcell (None: no clearance checked).
    """

    model: RobotModel
    limits: ExcitationLimits
    effort: np.ndarray
    source: str
    collision: CollisionModel | None = None

    @property
    def joints(self) -> tuple[str, ...]:
        """The robot's movable joints."""
        return tuple(self.model.joints)

    def indices(self, joints: tuple[str, ...] | list[str], what: str = "trajectory") -> np.ndarray:
        """Indices of ``joints`` in the robot; TrajectoryError naming any joint the robot does not have."""
        unknown = [j for j in joints if j not in self.joints]
        if unknown:
            raise TrajectoryError(f"{what} joint(s) {', '.join(unknown)} are not joints of the robot ({self.source}; "
                                  f"its joints: {', '.join(self.joints)})")
        return np.array([self.joints.index(j) for j in joints], dtype=int)


def robot_limits(model: RobotModel, config: dict | None = None, source: str | None = None, *,
                 collision: CollisionModel | None = None) -> RobotLimits:
    """The robot's limits from its description and the ``excitation:`` section of its config (or a whole config).

    Effort limits are those the description (or the config's ``effort:`` overrides) gives, times the
    effort margin; joints without one are not effort-checked. ``collision``: the robot's collision model
    (:func:`dynid_ros.robot.collision.collision_model`), checked with the limits.
    """
    config = dict(config or {})
    if isinstance(config.get("excitation"), dict):
        config = dict(config["excitation"])
    config.pop("torque_limits", None)  # effort is always checked here, where given
    limits = limits_from_model(model, config)
    effort = effort_bounds(model, config)  # the optimizer's bound too
    if effort is not None and getattr(model, "urdf_xml", None) is not None:  # no inertials: masses guessed
        model, lines = torque_check_model(model)
        for line in lines:
            LOG.warning("%s", line)
    name = source or str(getattr(model, "urdf_path", None) or getattr(model, "source", None) or "robot description")
    given = "the config's" if {"margins", "acceleration", "velocity", "position", "effort"} & set(config) else "default"
    return RobotLimits(model, limits, effort, f"the robot ({name} with {given} margins and accelerations)",
                       collision)


def effective_limits(robot: RobotLimits, joints: tuple[str, ...], file_limits: ExcitationLimits | None
                     ) -> ExcitationLimits:
    """The robot's limits of ``joints``, narrowed (never widened) by a trajectory file's ``limits:``."""
    k = robot.indices(joints)
    own = robot.limits
    position, velocity, acceleration = own.position[k].copy(), own.velocity[k].copy(), own.acceleration[k].copy()
    if file_limits is not None:
        if file_limits.n_dof != len(joints):
            raise TrajectoryError(f"the file's limits have {file_limits.n_dof} joints, the trajectory {len(joints)}")
        position[:, 0] = np.maximum(position[:, 0], file_limits.position[:, 0])
        position[:, 1] = np.minimum(position[:, 1], file_limits.position[:, 1])
        velocity = np.minimum(velocity, file_limits.velocity)
        acceleration = np.minimum(acceleration, file_limits.acceleration)
        empty = np.flatnonzero(position[:, 1] <= position[:, 0])
        if empty.size:
            j = int(empty[0])
            raise TrajectoryError(f"joint {joints[j]}: the file's position limits {file_limits.position[j].tolist()} "
                                  f"do not overlap those of {robot.source} {own.position[k[j]].tolist()}")
    return ExcitationLimits(position, velocity, acceleration)


def check_motion(robot: RobotLimits, joints: tuple[str, ...] | list[str], t: np.ndarray, q: np.ndarray,
                 dq: np.ndarray, ddq: np.ndarray, held: np.ndarray | None = None,
                 file_limits: ExcitationLimits | None = None) -> dict:
    """Check a sampled motion of ``joints`` against the robot's limits (then the file's, when given).

    Args:
        t, q, dq, ddq: the motion as it is sent, sampled densely (1 kHz, :data:`CHECK_RATE_HZ`).
        held: (n_robot,) positions of every robot joint (robot order); the joints not in ``joints`` stay
            there during the motion (their gravity load counts for the effort check). None: the middle
            of their range.
        file_limits: a trajectory file's ``limits:``; checked after the robot's.

    Returns:
        The margins of :func:`~dynid_ros.excitation.limits.check_sampled_limits` against the robot's limits (and
        ``clearance_m``, ``clearance_between``: the smallest clearance, when the robot has a collision model).

    Raises:
        TrajectoryError: one line naming the joint, the quantity, the time, the value and whose limits;
            CollisionError: one line naming the pair of links (or link and obstacle), the time and the depth.
    """
    joints = tuple(joints)
    k = robot.indices(joints)
    own = robot.limits
    sub = ExcitationLimits(own.position[k], own.velocity[k], own.acceleration[k])
    q, dq, ddq = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (q, dq, ddq))
    t = np.atleast_1d(np.asarray(t, dtype=float))
    margins = check_sampled_limits(joints, t, q, dq, ddq, sub, source=robot.source)
    if np.isfinite(robot.effort).any():
        margins["effort"] = _check_effort(robot, k, t, q, dq, ddq, held)
    if file_limits is not None:
        check_sampled_limits(joints, t, q, dq, ddq, file_limits, source="the trajectory file")
    if robot.collision is not None:
        full_q, full_dq, _ = _whole_robot(robot, k, q, dq, ddq, held)
        clearance = robot.collision.check(t, full_q, full_dq)
        if clearance is not None:
            margins["clearance_m"] = clearance.distance
            margins["clearance_between"] = clearance.row.name
    return margins


def _whole_robot(robot: RobotLimits, k: np.ndarray, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray,
                 held: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, velocities, accelerations of every robot joint: columns ``k`` moving, the rest held at ``held``
    (None: the middle of their range)."""
    n, own = len(robot.joints), robot.limits
    if held is None:
        held = np.where(np.isfinite(own.position).all(axis=1), own.position.mean(axis=1), 0.0)
    full_q = np.tile(np.asarray(held, dtype=float).reshape(1, n), (len(q), 1))
    full_dq, full_ddq = np.zeros_like(full_q), np.zeros_like(full_q)
    full_q[:, k], full_dq[:, k], full_ddq[:, k] = q, dq, ddq
    return full_q, full_dq, full_ddq


def _check_effort(robot: RobotLimits, k: np.ndarray, t: np.ndarray, q: np.ndarray, dq: np.ndarray,
                  ddq: np.ndarray, held: np.ndarray | None) -> float:
    """Nominal inverse-dynamics torque of the whole robot (columns ``k`` moving, the rest held) against the
    effort limits where given; returns the smallest margin (fraction of the limit)."""

    full_q, full_dq, full_ddq = _whole_robot(robot, k, q, dq, ddq, held)
    tau = nominal_torques(robot.model, full_q, full_dq, full_ddq)
    bound = robot.effort
    raise_on_violation(robot.joints, t, tau, np.abs(tau) > bound * (1 + 1e-9), "nominal torque", -bound, bound,
                        robot.source + ", effort")
    given = np.isfinite(bound)
    return float((1.0 - np.abs(tau[:, given]) / bound[given]).min())


def checked_profile(excitation: object, robot: RobotLimits, q_start: np.ndarray, cycles: int = 1,
                    rate_hz: float = CHECK_RATE_HZ, held: np.ndarray | None = None) -> ExecutionProfile:
    """The motion a trajectory file becomes from ``q_start`` (approach, ``cycles`` periods, hold), checked.

    ``excitation`` is a loaded trajectory file (``.trajectory``, ``.limits`` or None). The approach
    uses the effective limits (:func:`effective_limits`); the whole profile is checked by
    :func:`check_motion` at ``rate_hz``. ``held``: as in :func:`check_motion`.

    Raises:
        TrajectoryError: a trajectory joint the robot does not have, a start outside the limits, or a
            violation anywhere in the profile.
    """

    trajectory = excitation.trajectory
    joints = tuple(trajectory.joints)
    limits = effective_limits(robot, joints, excitation.limits)
    q_start = np.asarray(q_start, dtype=float).reshape(-1)
    lower, upper = limits.position[:, 0], limits.position[:, 1]
    turns = np.zeros_like(lower)
    if q_start.shape == lower.shape:
        turns = continuous_turns(robot, joints, limits, q_start)
        design_start = q_start - turns
        outside = np.flatnonzero((design_start < lower) | (design_start > upper))
        if outside.size:
            j = int(outside[0])
            raise TrajectoryError(f"joint {joints[j]} is at {q_start[j]:.4f}, outside the excitation limits "
                                  f"[{lower[j]:.4f}, {upper[j]:.4f}] (margins included): move it inside first")
        q_start = design_start
    profile = build_execution_profile(trajectory, q_start, cycles, limits)
    try:
        check_motion(robot, joints, *profile.sample_at_rate(rate_hz), held=held, file_limits=excitation.limits)
    except CollisionError as err:
        where = f" ({phase(profile, err.time_s)})" if err.time_s is not None else ""
        raise CollisionError(f"{err}{where}", err.time_s) from err
    if not turns.any():
        return profile
    turned = FourierTrajectory(trajectory.joints, trajectory.wf, trajectory.q0 + turns, trajectory.a, trajectory.b)
    return build_execution_profile(turned, q_start + turns, cycles, ExcitationLimits(
        limits.position + turns[:, None], limits.velocity, limits.acceleration, limits.effort))


def phase(profile: ExecutionProfile, t: float) -> str:
    """Which part of the profile ``t`` is in, for messages."""
    if t < profile.t_excitation_start:
        return "the approach from the current pose"
    if t < profile.t_excitation_end:
        period = int((t - profile.t_excitation_start) // profile.trajectory.period) + 1
        return f"period {period} of {profile.cycles} of the excitation"
    return "the hold at the end"


def continuous_turns(robot: RobotLimits, joints: tuple[str, ...], limits: ExcitationLimits,
                     q_start: np.ndarray) -> np.ndarray:
    """Per joint of ``joints``: the whole turns (multiples of 2 pi) between ``q_start`` and the excitation's
    window of a continuous joint (0 for other joints). A continuous joint has no position limit: its window
    (``UNLIMITED_POSITION`` about 0, or a file's) is a design choice, and ``q`` and ``q + 2 pi k`` are the same
    configuration, so an arm reporting unwrapped angles (4 rad) runs the excitation turned by whole turns
    (the same motion, dynamics and limit checks) instead of being refused."""
    continuous = np.array(robot.model.continuous, dtype=bool)[robot.indices(joints)]
    centre = limits.position.mean(axis=1)
    return np.where(continuous, 2 * np.pi * np.round((q_start - centre) / (2 * np.pi)), 0.0)
