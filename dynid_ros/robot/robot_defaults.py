"""Defaults derived from a robot's URDF, for a robot that has no config file (``dynid demo --urdf``).

:func:`derive_config` returns a config mapping with the sections of ``config/panda.yaml``
(``robot``, ``identification``, ``excitation``, ``simulation``), every value computed from the
nominal model, never tuned to one robot. The scales come from the model sampled over its position
range (:func:`joint_scales`): per joint the largest diagonal inertia ``M_jj(q)`` and gravity torque
``g_j(q)``, and the arm's reach.

- **Excitation** (Sousa & Cortesão 2014 section 5.2.2, Wang et al. 2019 section IV): a 5-harmonic
  Fourier series at 0.1 Hz; conservative accelerations, at most :data:`MAX_ACCELERATION` and at most
  what :data:`ACCELERATION_EFFORT` of the effort left over by gravity gives to the joint's largest
  inertia; :data:`VELOCITY_MARGIN` of the URDF velocity limits; joints with more than a turn of
  range use one turn about the middle.
- **Simulated truth**: link masses, CoMs (scaled to the reach) and second moments perturbed;
  per joint Coulomb friction, viscous friction, armature and torque-sensor noise scaled to the
  torque the joint carries (:func:`joint_scales`), a bias of a few noise levels.
- **Controller**: PD gains scaled to each joint's apparent inertia (natural frequency :data:`CONTROL_OMEGA`,
  critically damped), an inexact Coulomb compensation, like the firmware of a real arm; the URDF's
  ``<dynamics damping friction>`` (often a simulator's stabilizer, 10 N m s/rad on xArm) is not
  compensated: compensating more friction than the joint has pushes it along and runs away.
- **Identification**: the defaults of ``dynid identify`` (viscous + Coulomb + offset friction,
  armature, FBPE with full consistency), total mass within :data:`TOTAL_MASS_RANGE` of the URDF's.

:func:`named_gripper_joints` finds the joints named like a gripper's, which the demo locks at neutral
unless they are named (the model already locks mimic joints and fingers on a branch).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from dynid_ros.robot.model import RobotModel

HARMONICS = 5
FREQUENCY_HZ = 0.1
MAX_ACCELERATION = 5.0
"""Upper bound of the default acceleration limit [rad/s^2 or m/s^2] (a URDF gives none)."""
MIN_ACCELERATION = 0.5
"""Lower bound of the default acceleration limit, so a weak joint still moves."""
ACCELERATION_EFFORT = 0.3
"""Fraction of the effort left over by gravity (and the URDF's damping and friction at the excitation's top speed)
that may accelerate the joint's largest inertia."""

EFFORT_MARGIN = 0.8
"""Usable fraction of the URDF effort limit (the ``excitation.margins.effort`` of a derived config): the limit
check of every executed trajectory uses it (:mod:`dynid_ros.execution.robot_limits`)."""
VELOCITY_MARGIN = 0.6
"""Fraction of the URDF velocity limits the excitation may use."""
POSITION_MARGIN = 0.1
"""Distance [rad or m] kept from each end of a joint's range (capped at 10 % of the range)."""

MASS_STD, INERTIA_STD = 0.10, 0.15
"""Relative standard deviations of the simulated truth's link masses and second moments."""
COM_STD_PER_REACH = 0.01
"""CoM shift std of the simulated truth, as a fraction of the arm's reach."""
COULOMB_RATIO = 0.02
"""Coulomb friction of the simulated truth, as a fraction of the joint's load torque."""
VISCOUS_SPEED = 5.0
"""Speed [rad/s] at which the truth's viscous friction equals its Coulomb friction."""
ARMATURE_RATIO = 0.1
"""Armature of the simulated truth, as a fraction of the joint's mean diagonal inertia (at least
:data:`ARMATURE_FLOOR` of the arm's largest diagonal inertia: a wrist motor is not arbitrarily small)."""
ARMATURE_FLOOR = 0.005
DRIVE_FLOOR = 0.05
"""Friction, noise and armature of a joint are scaled to at least this fraction of the arm's largest
load torque or inertia: drives and sensors are sized to the arm, not only to the link they move."""
NOISE_RATIO = 0.002
"""Torque-sensor noise std of the simulated truth, as a fraction of the joint's load torque."""
BIAS_NOISES = 2.0
"""The truth's sensor bias is drawn uniformly within this many noise stds."""
COMPENSATION_RATIO = 0.85
"""The controller compensates this fraction of the true Coulomb friction (an inexact firmware model)."""
CONTROL_OMEGA = 40.0
"""Closed-loop natural frequency [rad/s] of the default PD gains on the joint's apparent inertia. With
``Kd_j = 2 omega m_j`` the explicit step is stable when ``h lambda_max(M^-1 Kd) <= h tr(M^-1 Kd) <= 2 n omega h``
stays below 1: 0.56 for 7 joints at 1 kHz."""
TOTAL_MASS_RANGE = (0.7, 1.3)
"""Bounds of the identified total mass, relative to the URDF's."""
SAMPLES = 256
"""Configurations sampled for :func:`joint_scales`."""

GRIPPER_WORDS = ("finger", "gripper", "jaw", "claw", "thumb", "knuckle")
"""A movable joint whose name contains one of these is part of an end effector."""


@dataclass(frozen=True)
class JointScales:
    """Per-joint scales of a model over its position range (:func:`joint_scales`).

    Attributes:
        inertia_max, inertia_mean: largest and mean diagonal inertia ``M_jj(q)`` [kg m^2 or kg].
        gravity_max: largest gravity torque ``|g_j(q)|`` [N m or N].
        load: torque the joint carries: ``gravity_max + inertia_max * acceleration``.
        drive: the joint's torque scale: ``load``, at least :data:`DRIVE_FLOOR` of the largest load.
        acceleration: the conservative acceleration limit.
        reach: sum of the distances between successive joint origins [m].
        armature: rotor inertia of the simulated truth: :data:`ARMATURE_RATIO` of ``inertia_mean``, at
            least :data:`ARMATURE_FLOOR` of the largest ``inertia_max``.
        apparent_inertia: smallest ``1 / (M(q) + diag(armature))^-1_jj``: the inertia joint ``j`` meets when
            the other joints give way (the stiffness a PD gain may use without destabilizing a light
            direction of the coupled arm).
    """

    inertia_max: np.ndarray
    inertia_mean: np.ndarray
    gravity_max: np.ndarray
    load: np.ndarray
    acceleration: np.ndarray
    reach: float
    armature: np.ndarray
    apparent_inertia: np.ndarray

    @property
    def drive(self) -> np.ndarray:
        """Per-joint load, at least :data:`DRIVE_FLOOR` of the largest."""
        return np.maximum(self.load, DRIVE_FLOOR * self.load.max())


def excitation_ranges(model: RobotModel) -> np.ndarray:
    """(n, 2) position ranges the defaults excite: the URDF limits, at most one turn about their middle
    (a continuous joint: one turn about 0)."""
    position = np.array(model.position_limits, dtype=float)
    unbounded = ~np.all(np.isfinite(position), axis=1)
    position[unbounded] = [-math.pi, math.pi]
    middle = position.mean(axis=1)
    half = np.minimum(0.5 * (position[:, 1] - position[:, 0]), math.pi)
    return np.stack([middle - half, middle + half], axis=1)


def joint_scales(model: RobotModel, seed: int = 0) -> JointScales:
    """Inertia and gravity scales of each joint over :data:`SAMPLES` configurations in its range."""
    import pinocchio as pin

    pm = model.pin_model
    data = pm.createData()
    ranges = excitation_ranges(model)
    rng = np.random.default_rng(seed)
    q = ranges[:, 0] + (ranges[:, 1] - ranges[:, 0]) * rng.uniform(size=(SAMPLES, model.n_dof))
    mass = np.empty((SAMPLES, model.n_dof, model.n_dof))
    gravity = np.empty_like(q)
    for s, config in enumerate(model.configuration(q)):
        upper = np.triu(pin.crba(pm, data, config))  # pinocchio fills the upper triangle
        mass[s] = upper + np.triu(upper, 1).T
        gravity[s] = pin.computeGeneralizedGravity(pm, data, config)
    diagonal = np.diagonal(mass, axis1=1, axis2=2)
    inertia_max = np.maximum(diagonal.max(axis=0), 1e-6)
    armature = np.maximum(ARMATURE_RATIO * diagonal.mean(axis=0), ARMATURE_FLOOR * inertia_max.max())
    inverse = np.linalg.inv(mass + np.diag(armature))
    apparent = 1.0 / np.diagonal(inverse, axis1=1, axis2=2).max(axis=0)
    gravity_max = np.abs(gravity).max(axis=0)
    effort = np.where(np.isfinite(model.effort_limits), EFFORT_MARGIN * model.effort_limits, np.inf)
    iv = [pm.joints[j].idx_v for j in model.joint_ids]
    speed = np.where(np.isfinite(model.velocity_limits), VELOCITY_MARGIN * model.velocity_limits, 0.0)
    dissipation = np.array(pm.damping)[iv] * speed + np.array(pm.friction)[iv]  # in the checked nominal torque
    spare = np.maximum(effort - gravity_max - dissipation, 0.0)
    acceleration = np.clip(ACCELERATION_EFFORT * spare / inertia_max, MIN_ACCELERATION, MAX_ACCELERATION)
    load = gravity_max + inertia_max * acceleration
    placements = [pm.jointPlacements[j].translation for j in range(2, pm.njoints)]
    reach = float(sum(np.linalg.norm(p) for p in placements)) or 1.0
    return JointScales(inertia_max, diagonal.mean(axis=0), gravity_max, load, acceleration, reach, armature,
                       apparent)


def derive_config(model: RobotModel, seed: int = 0) -> dict:
    """A config mapping (sections ``robot``, ``identification``, ``excitation``, ``simulation``) for
    ``model``, derived from its URDF (module docstring)."""
    scales = joint_scales(model)
    joints = list(model.joints)
    return {
        "robot": {"urdf": str(model.urdf_path) if model.urdf_path else None, "joints": joints},
        "identification": _identification(model),
        "excitation": _excitation(model, scales),
        "simulation": _simulation(model, scales, seed),
    }


def _identification(model: RobotModel) -> dict:
    total = float(sum(model.pin_model.inertias[j].mass for j in range(1, model.pin_model.njoints)))
    section = {"friction": ["viscous", "coulomb", "offset"], "armature": True, "method": "fbpe",
               "consistency": "full", "solver": "clarabel", "prior": "nominal",
               "processing": {"min_speed": 0.02}}
    if total > 0:
        section["bounds"] = {"total_mass": [_round(TOTAL_MASS_RANGE[0] * total), _round(TOTAL_MASS_RANGE[1] * total)]}
    return section


def _excitation(model: RobotModel, scales: JointScales) -> dict:
    ranges = excitation_ranges(model)
    margin = np.minimum(POSITION_MARGIN, 0.1 * (ranges[:, 1] - ranges[:, 0]))
    ranges = ranges + np.stack([margin, -margin], axis=1)
    return {
        "harmonics": HARMONICS, "frequency_hz": FREQUENCY_HZ, "objective": "cond", "seed": 0, "n_starts": 8,
        "acceleration": {j: _round(a) for j, a in zip(model.joints, scales.acceleration)},
        "position": {j: [_round(lo), _round(hi)] for j, (lo, hi) in zip(model.joints, ranges)},
        "margins": {"position": 0.0, "velocity": VELOCITY_MARGIN, "acceleration": 1.0,
                    "effort": EFFORT_MARGIN},
        "torque_limits": False,
    }


def _simulation(model: RobotModel, scales: JointScales, seed: int) -> dict:
    coulomb = COULOMB_RATIO * scales.drive
    viscous = coulomb / VISCOUS_SPEED
    noise = NOISE_RATIO * scales.drive
    armature = scales.armature
    bias = noise * np.random.default_rng([seed, 7]).uniform(-BIAS_NOISES, BIAS_NOISES, model.n_dof)
    kp = CONTROL_OMEGA**2 * scales.apparent_inertia
    kd = 2.0 * CONTROL_OMEGA * scales.apparent_inertia
    compensation = COMPENSATION_RATIO * coulomb
    return {
        "timestep": 0.001,
        "seed": seed,
        "truth": {"mass": MASS_STD, "com": _round(COM_STD_PER_REACH * scales.reach), "inertia": INERTIA_STD,
                  "damping": _rounded(viscous), "friction": _rounded(coulomb),
                  "armature": _rounded(armature), "noise": _rounded(noise), "bias": _rounded(bias)},
        "controller": {"kp": _rounded(kp), "kd": _rounded(kd), "friction": _rounded(compensation),
                       "urdf_friction": False},
    }


def _round(value: float) -> float:
    """Four significant digits, as a plain float (readable YAML)."""
    return float(f"{float(value):.4g}")


def _rounded(values: np.ndarray) -> list[float]:
    return [_round(v) for v in values]


# ------------------------------------------------------------------------------------------------
# End effectors


def named_gripper_joints(joints: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The joints of ``joints`` named like an end effector's (:data:`GRIPPER_WORDS`): a gripper at the end of
    the chain (one jaw, no branching) that :func:`dynid_ros.robot.model.end_effector_joints` cannot see."""
    pattern = re.compile("|".join(GRIPPER_WORDS), re.IGNORECASE)
    return tuple(j for j in joints if pattern.search(j))
