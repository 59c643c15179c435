"""Robustness cases of the identification in the embedded simulator, where the truth is known.

Each case departs from the ideal setting of :mod:`dynid_ros.sim` in one way a real robot does, runs the DEFAULT
identification (:class:`~dynid_ros.pipeline.identify.IdentificationOptions` as constructed, i.e. ``dynid identify``
with no flags: no bounds, no config) on a simulated excitation run, and validates on a second, different run:

- ``barely_moving_joint``: one joint moves at 2 % of its planned amplitude during the identification run (a joint
  the user held back, or a trajectory made for another mounting); its terms are poorly excited;
- ``stribeck_friction``: the truth friction has a Stribeck shape (static friction 1.6 ``fc``, exponential decay
  to ``fc``, Armstrong-Hélouvry 1994) which the identified model (viscous + Coulomb + offset) does not contain;
- ``torque_scale_error``: the torque sensors of two joints read 15 % off (effort = 1.15 tau and 0.85 tau), like a
  wrong current-to-torque constant (Pennese et al. 2021 eq. 2);
- ``nominal_off``: the nominal URDF is off by exactly ±30 % in every link mass and 3 cm in every CoM.

What a case measures (:func:`run_case`): the validation error of the identified model next to the error of the
true parameters (the noise floor; where a sensor gain error is injected, the true parameters do not explain the
recorded effort, and the error of the truth times that gain is reported beside it); the validation run departs from
the ideal in the same way as the identification run (the barely moving joint barely moves in both);
the identified link masses relative to the truth (times the gain of the link's joint where one is injected);
feasibility; what the identification reported as not identified.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dynid_ros.errors import ConfigError
from dynid_ros.estimation.fit_quality import relative_error
from dynid_ros.excitation import load_trajectory
from dynid_ros.execution.execution_profile import build_execution_profile
from dynid_ros.pipeline.identify import identify
from dynid_ros.pipeline.options import IdentificationOptions
from dynid_ros.pipeline.validate import evaluate_parameters, processed_window
from dynid_ros.robot.config import load_config
from dynid_ros.robot.model import load_model
from dynid_ros.robot.resources import robot_file
from dynid_ros.sim import GroundTruth, Simulator, simulate_profile
from dynid_ros.sim.demo import shipped_trajectory

CASES: tuple[str, ...] = ("barely_moving_joint", "stribeck_friction", "torque_scale_error", "nominal_off")
"""Names of the robustness cases, in the order the benchmark runs them."""

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


def case_setup(name: str, robot: str = "panda", seed: int = 0) -> CaseSetup:
    """The ground truth and identification excitation of case ``name`` on an embedded robot's config."""

    if name not in CASES:
        raise ConfigError(f"unknown robustness case {name!r}; choose from {', '.join(CASES)}")
    config = load_config(robot_file(robot, "config"))
    truth = GroundTruth.from_config(dict((config.get("simulation") or {}).get("truth") or {}), seed=seed)
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
        truth = dataclasses.replace(truth, mass=0.30, com=0.03, exact=True)
        return "nominal URDF off by ±30 % in every link mass and 3 cm in every CoM"

    builders.update(barely_moving_joint=barely_moving, stribeck_friction=stribeck, torque_scale_error=scale,
                    nominal_off=nominal_off)
    description = builders[name]()
    return CaseSetup(truth, excitation, validation, gain, description)


def run_case(name: str, robot: str = "panda", seed: int = 0, cycles: int = 1, progress: bool = False) -> dict:
    """Simulate case ``name``, identify with the default options, validate; returns the measured numbers."""

    setup = case_setup(name, robot, seed)
    urdf = robot_file(robot, "urdf")
    model = load_model(urdf=urdf)
    options = IdentificationOptions()
    start = time.perf_counter()
    identification = simulated_run(urdf, setup.truth, setup.identification_trajectory, seed + 1, cycles, progress)
    validation = simulated_run(urdf, setup.truth, setup.validation_trajectory, seed + 2, cycles, progress)
    result = identify(identification, options, model=model)
    layout = result.layout
    truth_delta = setup.truth.parameter_vector(model, layout)
    data = processed_window(model, validation, options, result.processing)
    identified = evaluate_parameters(model, layout, result.delta, data)
    best = evaluate_parameters(model, layout, truth_delta, data)
    best_gain, best_gain_per_joint = relative_error(best.tau, best.tau_hat * setup.gain)
    masses = result.delta[layout.indices("m")]
    true_masses = truth_delta[layout.indices("m")]
    mass_ratio = masses / (true_masses * setup.gain)
    return {
        "case": name,
        "robot": robot,
        "description": setup.description,
        "relative_error_validation": identified.relative_error,
        "relative_error_per_joint_validation": identified.relative_error_per_joint,
        "noise_floor": best.relative_error,
        "noise_floor_per_joint": best.relative_error_per_joint,
        "ratio_to_noise_floor": identified.relative_error / max(best.relative_error, 1e-300),
        "relative_error_truth_times_gain": best_gain,
        "relative_error_truth_times_gain_per_joint": best_gain_per_joint,
        "feasible": bool(result.feasible),
        "solver_status": result.solver_status,
        "link_mass_ratio_to_truth": dict(zip(layout.links, mass_ratio.tolist())),
        "link_masses_within_half_to_double": bool(np.all((mass_ratio >= 0.5) & (mass_ratio <= 2.0))),
        "not_identified": [m["description"] for m in result.not_identified],
        "warnings": list(result.warnings),
        "seconds": time.perf_counter() - start,
    }


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
