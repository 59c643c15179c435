"""The whole job on the embedded robot, for newcomers and as an end-to-end check (``dynid demo``).

Perturbed ground truth -> excitation (a shipped, pre-optimized trajectory, or ``optimize=True``) -> MuJoCo simulation
recorded to a rosbag2 -> identification from the bag -> validation on a second, different trajectory -> report
(markdown summary, PNG plots, JSON). Each step uses the same core functions as the CLI and the nodes.

The noise floor is the relative error of the TRUE parameters on the validation data: what no model can beat, since
the recorded effort carries sensor noise. The identified model should come within a few percent of it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dynid_ros.config import load_config
from dynid_ros.errors import ConfigError
from dynid_ros.identification import IdentificationOptions, StageTimer, identify
from dynid_ros.output_paths import DEMO, fresh_output_directory
from dynid_ros.resources import robot_file

ROBOTS = ("panda", "ur5e")


@dataclass
class DemoResult:
    """Where the demo wrote its files and what it measured."""

    out: Path
    summary: dict = field(default_factory=dict)

    @property
    def report_path(self) -> Path:
        return self.out / "report.md"


def _trajectory(robot: str, kind: str, model, optimize: bool, seed: int, budget_s: float, config: dict):
    from dynid_ros.excitation import ExcitationOptions, load_trajectory, optimize_excitation

    if not optimize:
        return load_trajectory(_shipped_trajectory(robot, kind))
    section = dict(config.get("excitation") or {})
    options = ExcitationOptions.from_config(section, seed=seed + (0 if kind == "identification" else 101),
                                            time_budget_s=budget_s)
    return optimize_excitation(model, options)


def _shipped_trajectory(robot: str, kind: str) -> Path:
    return Path(__file__).resolve().parent / "data" / "trajectories" / f"{robot}_{kind}.yaml"


def run_demo(robot: str = "panda", out: Path | str = "demo_out", optimize: bool = False, seed: int = 0,
             cycles: int = 2, time_budget_s: float = 60.0, progress: bool = True) -> DemoResult:
    """Run the demo; returns the summary (also written as ``summary.json``) and the output paths."""
    from dynid_ros import report
    from dynid_ros.bag_io import read_joint_states, write_joint_states
    from dynid_ros.excitation.robot_limits import checked_profile, robot_limits
    from dynid_ros.model import load_model, nominal_parameters
    from dynid_ros.results import write_result
    from dynid_ros.sim import GroundTruth, Simulator, simulate_profile
    from dynid_ros.validation import evaluate_parameters, processed_window

    if robot not in ROBOTS:
        raise ConfigError(f"--robot must be one of {', '.join(ROBOTS)}, not {robot!r}")
    out = fresh_output_directory(out, DEMO)  # an existing directory that is not an earlier demo: refused
    timer = StageTimer()
    urdf = robot_file(robot, "urdf")
    config_path = robot_file(robot, "config")
    config = load_config(config_path)
    say = print if progress else (lambda *_: None)

    with timer.stage("truth"):
        model = load_model(urdf=urdf)
        section = dict(config.get("identification") or {})
        options = IdentificationOptions(
            friction=tuple(section.get("friction", ("viscous", "coulomb", "offset"))),
            armature=bool(section.get("armature", True)), method=section.get("method", "fbpe"),
            consistency=section.get("consistency", "full"), solver=section.get("solver", "clarabel"),
            prior=section.get("prior", "nominal"), bounds=dict(section.get("bounds") or {}),
            processing=dict(section.get("processing") or {}),
            prior_tolerance=dict(section.get("prior_tolerance") or {}))
        options.check()
        layout = model.layout_for(options.friction, options.armature)
        nominal = nominal_parameters(model, layout)
        truth = GroundTruth.from_config(dict((config.get("simulation") or {}).get("truth") or {}), seed=seed)
        truth_delta = truth.parameter_vector(model, layout)
        truth_urdf = out / "truth.urdf"
        truth.write_urdf(model, truth_urdf)
    say(f"[1/5] ground truth: {robot}, link masses perturbed (total {truth_delta[layout.indices('m')].sum():.2f} kg "
        f"vs nominal {nominal[layout.indices('m')].sum():.2f} kg), friction and armature added")

    bags = {}
    for step, kind in ((2, "identification"), (3, "validation")):
        with timer.stage(f"excitation_{kind}"):
            excitation = _trajectory(robot, kind, model, optimize, seed, time_budget_s, config)
        with timer.stage(f"simulate_{kind}"):
            sim = Simulator(urdf, truth=truth, seed=seed + step)  # the controller uses the nominal model
            q_start = excitation.trajectory.evaluate(np.zeros(1))[0][0]
            profile = checked_profile(excitation, robot_limits(model, config), q_start, cycles)  # the robot's limits
            t, q_ref, dq_ref, ddq_ref = profile.sample_at_rate(1.0 / sim.timestep)
            series = simulate_profile(sim, t, q_ref, dq_ref, ddq_ref, progress=progress)
            bags[kind] = write_joint_states(out / "bags" / kind, series)
        say(f"[{step}/5] simulated {kind} run: {t[-1]:.1f} s at 1 kHz, condition number "
            f"{excitation.condition_number:.1f} -> {bags[kind]}")

    with timer.stage("identify"):
        series = read_joint_states(bags["identification"])
        result = identify(series, options, model=model)
        write_result(result, out / "result")
    say(f"[4/5] identified {result.base.n_base} base parameters ({options.method}, {options.consistency}): "
        f"status {result.solver_status}, feasible {result.feasible}")

    with timer.stage("validate"):
        data = processed_window(model, read_joint_states(bags["validation"]), options, result.processing)
        evaluated = {name: evaluate_parameters(model, layout, delta, data)
                     for name, delta in (("identified", result.delta), ("truth", truth_delta), ("nominal", nominal))}
    identified_err = evaluated["identified"].relative_error
    floor = evaluated["truth"].relative_error
    distances = report.parameter_distances(layout, truth_delta, result.delta, nominal, result.base.K)

    with timer.stage("report"):
        val = evaluated["identified"]
        torque_png = report.plot_torques(val.t, val.tau, val.tau_hat, val.joints, out / "validation_torques.png",
                                         title=f"{robot}: validation trajectory, measured vs predicted torque")
        params_png = report.plot_parameters(layout, result.delta, nominal, out / "parameters.png", truth=truth_delta)
        summary = {
            "robot": robot,
            "relative_error_validation": {name: e.relative_error for name, e in evaluated.items()},
            "relative_error_per_joint_validation": {name: e.relative_error_per_joint for name, e in evaluated.items()},
            "noise_floor": floor,
            "ratio_to_noise_floor": identified_err / max(floor, 1e-300),
            "feasible": result.feasible,
            "solver_status": result.solver_status,
            "n_base": result.base.n_base,
            "parameter_errors": distances,
            "closer_to_truth_than_nominal": all(r["identified"] < r["nominal"] for r in distances
                                                if r["identifiable"]),
            "identification_timings_s": result.timings_s,
            "timings_s": timer.timings,
            "files": {"bags": {k: str(v) for k, v in bags.items()}, "result": str(out / "result"),
                      "truth_urdf": str(truth_urdf), "plots": [torque_png.name, params_png.name]},
        }
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        (out / "report.md").write_text(_markdown(summary, result, distances, evaluated))
    say(f"[5/5] validation error {100 * identified_err:.2f} % (noise floor {100 * floor:.2f} %, ratio "
        f"{summary['ratio_to_noise_floor']:.3f}; nominal URDF {100 * evaluated['nominal'].relative_error:.2f} %)")
    return DemoResult(out, summary)


def _markdown(summary: dict, result, distances: list[dict], evaluated: dict) -> str:
    from dynid_ros.report import markdown_table

    errors = [{"model": name, "relative error [%]": 100 * e.relative_error,
               **{j: 100 * v for j, v in zip(e.joints, e.relative_error_per_joint)}}
              for name, e in evaluated.items()]
    joints = list(evaluated["identified"].joints)
    timings = [{"stage": k, "seconds": v} for k, v in summary["timings_s"].items()]
    lines = [
        f"# dynid demo: {summary['robot']}",
        "",
        "A MuJoCo-simulated arm whose true parameters differ from its nominal URDF was excited along an optimized "
        "trajectory, recorded to a rosbag2, identified from the bag, and validated on a second, different trajectory.",
        "",
        "## Validation (unseen trajectory)",
        "",
        f"- identified model: **{100 * summary['relative_error_validation']['identified']:.2f} %** relative torque "
        f"error; noise floor (true parameters): {100 * summary['noise_floor']:.2f} %; ratio "
        f"**{summary['ratio_to_noise_floor']:.3f}**",
        f"- feasible: **{summary['feasible']}** (solver status {summary['solver_status']}), "
        f"{summary['n_base']} base parameters",
        "",
        "Relative error per joint [%]:",
        "",
        markdown_table(errors, ["model", "relative error [%]", *joints]),
        "",
        "![measured vs predicted torque](validation_torques.png)",
        "",
        "## Parameters: identified and nominal vs truth",
        "",
        markdown_table(distances, ["quantity", "identified", "nominal", "closer"]),
        "",
        f"Closer to the truth than the nominal URDF on every identifiable quantity: "
        f"**{summary['closer_to_truth_than_nominal']}**. The data determines the base parameters (combinations of "
        "link parameters) and the parameters about the joint frames; a link's CoM and inertia about its CoM are "
        "ratios of estimates, not identifiable link by link, and are shown for information (\"derived\").",
        "",
        "![identified vs true vs nominal parameters](parameters.png)",
        "",
        "## Timings [s]",
        "",
        markdown_table(timings, ["stage", "seconds"]),
        "",
        "## Files",
        "",
        "- `result/identified.urdf`, `result/parameters.yaml`, `result/report.json`: what `dynid identify` writes",
        "- `bags/identification`, `bags/validation`: the simulated runs (rosbag2, MCAP)",
        "- `truth.urdf`: the ground truth; `summary.json`: every number above",
        "",
    ]
    return "\n".join(lines)
