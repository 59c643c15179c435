"""Robustness cases of the identification in the embedded simulator, where the truth is known.

Each case departs from the ideal setting of :mod:`dynid_ros.sim` in one way a real robot does, runs the DEFAULT
identification (:class:`~dynid_ros.identification.options.IdentificationOptions` as constructed, i.e.
``dynid identify`` with no flags: no bounds, no config) on a simulated excitation run, and validates on a second,
different run:

- ``barely_moving_joint``: one joint moves at 2 % of its planned amplitude during the identification run (a joint
  the user held back, or a trajectory made for another mounting); its terms are poorly excited;
- ``stribeck_friction``: the truth friction has a Stribeck shape (static friction 1.6 ``fc``, exponential decay
  to ``fc``, Armstrong-Hélouvry 1994) which the identified model (viscous + Coulomb + offset) does not contain;
- ``torque_scale_error``: the torque sensors of two joints read 15 % off (effort = 1.15 tau and 0.85 tau), like a
  wrong current-to-torque constant (Pennese et al. 2021 eq. 2);
- ``nominal_off``: the nominal URDF is off by exactly ±30 % in every link mass and 3 cm in every CoM;
- ``unmodelled_tool``: a 1 kg tool 5 cm along the last link's z axis that the nominal URDF lacks;
  it must be reported as a load (``unmodelled_load``, mass within ±20 %), not absorbed into the links;
- ``joint_spring`` (case f): a spring on a forearm joint (:func:`loaded_joint`) of 10 % of its gravity torque's
  span over the excitation (rest at the middle of the joint's motion); the joint's residual must be flagged, and
  the default's position-dependent torque term (cross-validated) models it: the case reports the
  term, the held-out error of the true parameters with the spring, and how well the term matches the spring;
- ``small_arm`` and ``large_arm`` (case g): the robot scaled (:mod:`dynid_ros.sim.scaled_robot`) to a 0.6 kg and a
  30 kg arm with the errors of ``nominal_off`` relative to its size (±30 % mass, CoM off by 3 cm times the length
  scale); its joint friction, armature, sensor noise and bias scaled with its torques.

What a case measures (:func:`run_case`): the validation error of the identified model next to the error of the
true parameters (the noise floor; where a sensor gain error is injected, the true parameters do not explain the
recorded effort, and the error of the truth times that gain is reported beside it); the distance between the two
models' torques (relative to the measured torque: how far the fit bent the parameters, e.g. to absorb a spring the
model lacks); the validation run departs from
the ideal in the same way as the identification run (the barely moving joint barely moves in both);
the identified link masses relative to the truth (times the gain of the link's joint where one is injected and the
identification kept the efforts as recorded; a reported load is taken off its link and the truth link is without
the tool); the effort gains the identification estimated (``effort_gains``) beside the injected ones; feasibility;
what the identification
reported as not identified; the reported load; the joints flagged as structured.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dynid_ros.dynamics.regressor import torques
from dynid_ros.errors import ConfigError
from dynid_ros.estimation.fit_quality import relative_error, relative_norm
from dynid_ros.estimation.position_torque import term_torques, terms_from_dict
from dynid_ros.estimation.residual_structure import joint_diagnostics
from dynid_ros.excitation import load_trajectory
from dynid_ros.execution.execution_profile import build_execution_profile
from dynid_ros.identification.identify import identify
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.reporting.validate import evaluate_parameters, processed_window
from dynid_ros.robot.config import load_config
from dynid_ros.robot.model import RobotModel, load_model, nominal_parameters
from dynid_ros.robot.resources import robot_file
from dynid_ros.sim import GroundTruth, Simulator, simulate_profile
from dynid_ros.sim.scaled_robot import write_scaled_urdf
from dynid_ros.studies.demo import shipped_trajectory

CASES: tuple[str, ...] = ("barely_moving_joint", "stribeck_friction", "torque_scale_error", "nominal_off",
                          "unmodelled_tool", "joint_spring", "small_arm", "large_arm")
"""Names of the robustness cases, in the order the benchmark runs them."""

NOMINAL_MASS_ERROR = 0.30
"""Relative mass error of every link in ``nominal_off`` and the scaled arms."""

NOMINAL_COM_ERROR = 0.03
"""CoM error [m] of every link in ``nominal_off`` (times the length scale on the scaled arms)."""

TOOL_MASS = 1.0
"""Mass [kg] of the tool of ``unmodelled_tool``."""

TOOL_COM = (0.0, 0.0, 0.05)
"""Its centre of mass in the last link's frame [m]."""

SPRING_SHARE = 0.1
"""Stiffness of the spring of ``joint_spring``: this share of the joint's gravity-torque span over its motion span."""

LOADED_SHARE = 0.25
"""The spring's joint carries at least this share of the largest gravity torque span (:func:`loaded_joint`)."""

ARM_MASSES = {"small_arm": 0.6, "large_arm": 30.0}
"""Total moved mass [kg] of the scaled arms."""

BARELY_MOVING_SCALE = 0.02
"""Amplitude of the barely moving joint, relative to its planned motion."""

STRIBECK_RATIO = 1.6
"""Static friction over Coulomb friction in the Stribeck case."""

SCALE_ERROR = 0.15
"""Relative torque-sensor gain error of the two joints of the scale case."""


@dataclasses.dataclass
class CaseSetup:
    """A robustness case: the ground truth and the identification and validation excitations it runs."""

    truth: object
    identification_trajectory: object
    validation_trajectory: object
    gain: np.ndarray
    description: str
    urdf: Path | None = None
    """The nominal URDF (None: the embedded robot's)."""
    tool: bool = False
    spring_joint: int | None = None


def case_setup(name: str, robot: str = "panda", seed: int = 0, workdir: Path | None = None) -> CaseSetup:
    """The ground truth and identification excitation of case ``name`` on an embedded robot's config;
    ``workdir``: where a scaled arm's URDF is written (needed by ``small_arm`` and ``large_arm``)."""

    if name not in CASES:
        raise ConfigError(f"unknown robustness case {name!r}; choose from {', '.join(CASES)}")
    config = load_config(robot_file(robot, "config"))
    truth = GroundTruth.from_config(dict((config.get("simulation") or {}).get("truth") or {}), seed=seed)
    urdf: Path | None = None
    spring_joint: int | None = None
    excitation = load_trajectory(shipped_trajectory(robot, "identification"))
    validation = load_trajectory(shipped_trajectory(robot, "validation"))
    n = len(excitation.trajectory.joints)
    gain = np.ones(n)
    builders: dict[str, Callable[[], str]] = {}

    def barely_moving() -> str:
        nonlocal excitation, validation
        joint = n // 2  # a middle joint: it carries links both ways
        excitation = _scaled_joint(excitation, joint, BARELY_MOVING_SCALE)
        validation = _scaled_joint(validation, joint, BARELY_MOVING_SCALE)
        return f"joint {excitation.trajectory.joints[joint]} moves at {100 * BARELY_MOVING_SCALE:g} % amplitude"

    def stribeck() -> str:
        nonlocal truth
        fc = np.asarray(truth.friction, dtype=float) * np.ones(n)
        truth = dataclasses.replace(truth, static_friction=tuple(STRIBECK_RATIO * fc), stribeck_velocity=0.05)
        return f"Stribeck friction: fs = {STRIBECK_RATIO:g} fc, vs = 0.05 rad/s"

    def scale() -> str:
        nonlocal truth
        gain[1], gain[n - 2] = 1.0 + SCALE_ERROR, 1.0 - SCALE_ERROR
        truth = dataclasses.replace(truth, effort_scale=tuple(gain))
        return f"torque gain {gain[1]:g} on joint 2 and {gain[n - 2]:g} on joint {n - 1}"

    def nominal_off() -> str:
        nonlocal truth
        truth = dataclasses.replace(truth, mass=NOMINAL_MASS_ERROR, com=NOMINAL_COM_ERROR, exact=True)
        return "nominal URDF off by ±30 % in every link mass and 3 cm in every CoM"

    def tool() -> str:
        nonlocal truth
        truth = dataclasses.replace(truth, tool_mass=TOOL_MASS, tool_com=TOOL_COM)
        return f"a {TOOL_MASS:g} kg tool {100 * np.linalg.norm(TOOL_COM):g} cm from the last link, not in the URDF"

    def spring() -> str:
        nonlocal truth, spring_joint
        model = load_model(urdf=robot_file(robot, "urdf"))
        joint = spring_joint = loaded_joint(model, excitation)
        stiffness, rest = spring_of(model, excitation, joint, SPRING_SHARE)
        k, q0 = np.zeros(n), np.zeros(n)
        k[joint], q0[joint] = stiffness, rest
        truth = dataclasses.replace(truth, spring=tuple(k), spring_rest=tuple(q0))
        return (f"a spring of {stiffness:.3g} N m/rad on {excitation.trajectory.joints[joint]} "
                f"({100 * SPRING_SHARE:g} % of its gravity torque span)")

    def scaled() -> str:
        nonlocal truth, urdf
        if workdir is None:
            raise ConfigError(f"robustness case {name} needs a work directory for its scaled URDF")
        source = robot_file(robot, "urdf")
        model = load_model(urdf=source)
        length, mass = scale_factors(model, ARM_MASSES[name])
        urdf = write_scaled_urdf(source, Path(workdir) / f"{robot}_{name}.urdf", length, mass)
        truth = scaled_truth(dataclasses.replace(truth, mass=NOMINAL_MASS_ERROR, com=NOMINAL_COM_ERROR * length,
                                                 exact=True), model, length, mass)
        return (f"{robot} scaled to {ARM_MASSES[name]:g} kg (lengths x{length:.3f}, masses x{mass:.4f}), URDF off "
                f"by ±30 % in every link mass and {100 * NOMINAL_COM_ERROR * length:.2g} cm in every CoM")

    builders.update(barely_moving_joint=barely_moving, stribeck_friction=stribeck, torque_scale_error=scale,
                    nominal_off=nominal_off, unmodelled_tool=tool, joint_spring=spring, small_arm=scaled,
                    large_arm=scaled)
    description = builders[name]()
    return CaseSetup(truth, excitation, validation, gain, description, urdf, name == "unmodelled_tool", spring_joint)


def gravity_spans(model: RobotModel, excitation: object) -> tuple[np.ndarray, np.ndarray]:
    """``(gravity torque span, position span)`` of every joint over one period of ``excitation`` (nominal model)."""
    trajectory = excitation.trajectory
    q = trajectory.evaluate(np.linspace(0.0, trajectory.period, 400, endpoint=False))[0]
    layout = model.layout_for((), armature=False)
    gravity = torques(model, layout, nominal_parameters(model, layout), q, 0 * q, 0 * q)
    return np.ptp(gravity, axis=0), np.ptp(q, axis=0)


def loaded_joint(model: RobotModel, excitation: object) -> int:
    """The outermost joint whose gravity torque spans at least :data:`LOADED_SHARE` of the largest span over the
    excitation: a forearm joint that carries a real load (Panda joint 4, UR5e elbow)."""
    spans = gravity_spans(model, excitation)[0]
    return int(np.flatnonzero(spans >= LOADED_SHARE * spans.max())[-1])


def spring_of(model: RobotModel, excitation: object, joint: int, share: float) -> tuple[float, float]:
    """``(stiffness, rest)`` of a spring on ``joint`` of ``share`` of its gravity torque's span over one period of
    ``excitation`` (per unit of the joint's position span), at rest in the middle of the joint's motion."""
    trajectory = excitation.trajectory
    q = trajectory.evaluate(np.linspace(0.0, trajectory.period, 400, endpoint=False))[0][:, joint]
    gravity_span, position_span = (float(v[joint]) for v in gravity_spans(model, excitation))
    return share * gravity_span / max(position_span, 1e-9), float(q.min() + 0.5 * position_span)


def scale_factors(model: RobotModel, arm_mass: float) -> tuple[float, float]:
    """``(length, mass)`` factors that make ``model``'s moved bodies weigh ``arm_mass`` at the same density."""
    layout = model.layout_for((), armature=False)
    mass = arm_mass / float(nominal_parameters(model, layout)[layout.indices("m")].sum())
    return mass ** (1.0 / 3.0), mass


def scaled_truth(truth: GroundTruth, model: RobotModel, length: float, mass: float) -> GroundTruth:
    """``truth``'s joint terms for the robot scaled by ``length`` and ``mass``: torques (friction, noise, bias) as
    ``mass * length``, the rotor inertia as ``mass * length^2``."""
    values = truth.joint_values(model)
    torque = mass * length
    return dataclasses.replace(truth, damping=tuple(values["fv"] * torque), friction=tuple(values["fc"] * torque),
                               armature=tuple(values["Ia"] * torque * length),
                               noise=tuple(values["noise"] * torque), bias=tuple(values["bias"] * torque))


def run_case(name: str, robot: str = "panda", seed: int = 0, cycles: int = 1, progress: bool = False, *,
             options: IdentificationOptions | None = None) -> dict:
    """Simulate case ``name``, identify with the default options (or ``options``, to compare a setting),
    validate; returns the measured numbers."""

    with tempfile.TemporaryDirectory(prefix="dynid_robustness_") as workdir:
        setup = case_setup(name, robot, seed, Path(workdir))
        return _run(setup, name, robot, seed, cycles, progress, options or IdentificationOptions())


def _run(setup: CaseSetup, name: str, robot: str, seed: int, cycles: int, progress: bool,
         options: IdentificationOptions) -> dict:
    urdf = setup.urdf or robot_file(robot, "urdf")
    model = load_model(urdf=urdf)
    start = time.perf_counter()
    identification = simulated_run(urdf, setup.truth, setup.identification_trajectory, seed + 1, cycles, progress)
    validation = simulated_run(urdf, setup.truth, setup.validation_trajectory, seed + 2, cycles, progress)
    result = identify(identification, options, model=model)
    layout = result.layout
    truth_delta = setup.truth.parameter_vector(model, layout)
    data = processed_window(model, validation, result.options, result.processing)  # with the gains it used
    terms = terms_from_dict(result.position_torque, model.joints)
    identified = evaluate_parameters(model, layout, result.delta, data, position=terms)
    best = evaluate_parameters(model, layout, truth_delta, data)
    spring = spring_torque(setup.truth, data.q)
    best_spring = relative_error(best.tau, best.tau_hat + spring)[0]
    recovered = np.zeros_like(spring) if terms is None else term_torques(*terms, data.q)
    best_gain, best_gain_per_joint = relative_error(best.tau, best.tau_hat * setup.gain)
    masses = result.delta[layout.indices("m")].copy()
    load = result.unmodelled_load
    if load is not None:  # the link without the load the identification reported
        masses[list(layout.links).index(load["link"])] -= load["mass"]
    links_truth = dataclasses.replace(setup.truth, tool_mass=0.0).parameter_vector(model, layout)
    undone = bool((result.effort_gains or {}).get("kept"))  # the identification put the efforts in one scale
    mass_ratio = masses / (links_truth[layout.indices("m")] * (1.0 if undone else setup.gain))
    fit = result.fit
    modelled = [j for j, t in (result.position_torque or {}).items() if t["cross_validation"]["flagged"]]
    flagged = [d.joint for d in joint_diagnostics(fit.joints, fit.tau, fit.tau_hat, fit.q, fit.dq)
               if d.structured or d.joint in modelled]  # a modelled term's joint was flagged before it was modelled
    return {
        "case": name,
        "robot": robot,
        "description": setup.description,
        "relative_error_validation": identified.relative_error,
        "relative_error_per_joint_validation": identified.relative_error_per_joint,
        "noise_floor": best.relative_error,
        "noise_floor_per_joint": best.relative_error_per_joint,
        "relative_error_truth_with_spring": best_spring,
        "position_torque": result.position_torque,
        "spring_recovery_error": _spring_recovery(spring, recovered),
        "ratio_to_noise_floor": identified.relative_error / max(best.relative_error, 1e-300),
        "distance_to_truth_model": float(np.linalg.norm(identified.tau_hat - best.tau_hat * setup.gain)
                                         / max(float(np.linalg.norm(best.tau)), 1e-300)),
        "relative_error_truth_times_gain": best_gain,
        "relative_error_truth_times_gain_per_joint": best_gain_per_joint,
        "injected_gain": setup.gain.tolist(),
        "effort_gains": result.effort_gains,
        "feasible": bool(result.feasible),
        "solver_status": result.solver_status,
        "cutoff_hz": float(result.processing["cutoff_hz"]),
        "link_mass_ratio_to_truth": dict(zip(layout.links, mass_ratio.tolist())),
        "link_masses_within_half_to_double": bool(np.all((mass_ratio >= 0.5) & (mass_ratio <= 2.0))),
        "not_identified": [m["description"] for m in result.not_identified],
        "unmodelled_load": load,
        "tool_mass": TOOL_MASS if setup.tool else None,
        "load_mass_ratio_to_tool": None if not setup.tool or load is None else load["mass"] / TOOL_MASS,
        "structured_joints": flagged,
        "spring_joint": None if setup.spring_joint is None else model.joints[setup.spring_joint],
        "arm_mass": float(links_truth[layout.indices("m")].sum()),
        "warnings": list(result.warnings),
        "seconds": time.perf_counter() - start,
    }


def spring_torque(truth: GroundTruth, q: np.ndarray) -> np.ndarray:
    """(samples, n_dof) torque the truth's springs add to the effort at the positions ``q``."""
    k = np.asarray(truth.spring, dtype=float) * np.ones(q.shape[1])
    return k * (q - np.asarray(truth.spring_rest, dtype=float))


def _spring_recovery(spring: np.ndarray, recovered: np.ndarray) -> float | None:
    """``||s - r|| / ||s||`` of the injected spring torque ``s`` and the recovered term ``r``, each without its mean
    over the motion (a constant is the offset friction's), on the springs' joints; None without a spring."""
    joints = np.flatnonzero(np.any(spring != 0, axis=0))
    if joints.size == 0:
        return None
    s = spring[:, joints] - spring[:, joints].mean(axis=0)
    r = recovered[:, joints] - recovered[:, joints].mean(axis=0)
    return relative_norm(s - r, s)


def simulated_run(urdf: Path, truth: object, excitation: object, seed: int, cycles: int, progress: bool) -> object:
    """The joint states of ``excitation`` executed (approach, periods, hold) by the simulator at 1 kHz."""

    sim = Simulator(urdf, truth=truth, seed=seed)
    q_start = excitation.trajectory.evaluate(np.zeros(1))[0][0]
    profile = build_execution_profile(excitation.trajectory, q_start, cycles=cycles, limits=excitation.limits)
    t, q_ref, dq_ref, ddq_ref = profile.sample_at_rate(1.0 / sim.timestep)
    return simulate_profile(sim, t, q_ref, dq_ref, ddq_ref, progress=progress)


def _scaled_joint(excitation: object, joint: int, factor: float) -> object:
    """``excitation`` with joint ``joint``'s Fourier coefficients scaled by ``factor`` (rest and limits kept)."""
    trajectory = excitation.trajectory
    a, b = trajectory.a.copy(), trajectory.b.copy()
    a[joint] *= factor
    b[joint] *= factor
    return dataclasses.replace(excitation, trajectory=dataclasses.replace(trajectory, a=a, b=b))
