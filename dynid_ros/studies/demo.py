"""The whole job on a simulated robot, for newcomers and as an end-to-end check (``dynid demo``).

Perturbed ground truth -> excitation (a shipped, pre-optimized trajectory, or one optimized within the time
budget) -> MuJoCo simulation recorded to a rosbag2 -> identification from the bag -> validation on a second,
different trajectory -> report (markdown summary, PNG plots, JSON). Each step uses the same core functions as
the CLI and the nodes.

The robot is an embedded one (``--robot panda|ur5e``: shipped URDF, config and trajectories) or the user's own
URDF (``--urdf``): its config if given, and for every section the config lacks, defaults derived from the URDF
(:mod:`dynid_ros.robot.robot_defaults`); end-effector joints are locked at neutral unless named in ``--joints``.

The noise floor is the relative error of the TRUE parameters on the validation data: what no model can beat, since
the recorded effort carries sensor noise. The identified model should come within a few percent of it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from dynid_ros.data.bag_io import read_joint_states, write_joint_states
from dynid_ros.data.output_paths import DEMO, fresh_output_directory
from dynid_ros.errors import ConfigError
from dynid_ros.estimation.position_torque import terms_from_dict
from dynid_ros.excitation import ExcitationOptions, load_trajectory, optimize_excitation, save_trajectory
from dynid_ros.execution.robot_limits import checked_profile, robot_limits
from dynid_ros.identification.options import identification_options
from dynid_ros.identification.timing import StageTimer
from dynid_ros.reporting import plots
from dynid_ros.reporting.plots import markdown_table
from dynid_ros.reporting.validate import evaluate_parameters, processed_window
from dynid_ros.robot.config import load_config
from dynid_ros.robot.drivers import driver_defaults
from dynid_ros.robot.model import load_model, nominal_parameters
from dynid_ros.robot.resources import ROBOTS, robot_file
from dynid_ros.robot.robot_defaults import derive_config, named_gripper_joints
from dynid_ros.robot.urdf_document import read_urdf
from dynid_ros.robot.workcell import CollisionSettings
from dynid_ros.sim import Gains, GroundTruth, Simulator, simulate_profile
from dynid_ros.sim.contacts import describe
from dynid_ros.workflow.identify_run import RunInputs, identify_into

DERIVED_SECTIONS = ("identification", "excitation", "simulation")
"""Sections of a config that :func:`user_robot` fills from the URDF when the config lacks them."""
IDENTIFICATION_SHARE = 2.0 / 3.0
"""Share of the time budget spent on the identification trajectory (the rest: the validation trajectory)."""
LOG = logging.getLogger(__name__)


@dataclass
class DemoResult:
    """Where the demo wrote its files and what it measured."""

    out: Path
    summary: dict = field(default_factory=dict)

    @property
    def report_path(self) -> Path:
        """The demo's ``report.md``."""
        return self.out / "report.md"


@dataclass(frozen=True)
class DemoRobot:
    """The robot a demo runs.

    Attributes:
        name: embedded robot name, or the URDF's robot name.
        urdf: the URDF (or xacro) file, as published (meshes and all).
        joints: identified joints; the others are locked at neutral.
        locked: movable joints locked at neutral (end effectors).
        config: the config mapping in use (sections ``identification``, ``excitation``, ``simulation``).
        derived: config sections derived from the URDF (:mod:`dynid_ros.robot.robot_defaults`).
        shipped_trajectories: the excitation is the shipped, pre-optimized one (embedded robots).
    """

    name: str
    urdf: Path
    joints: tuple[str, ...]
    locked: tuple[str, ...]
    config: dict
    derived: tuple[str, ...] = ()
    shipped_trajectories: bool = False


def embedded_robot(robot: str, optimize: bool = False) -> DemoRobot:
    """An embedded robot: shipped URDF, config and (unless ``optimize``) trajectories."""

    if robot not in ROBOTS:
        raise ConfigError(f"--robot must be one of {', '.join(ROBOTS)}, not {robot!r}")
    urdf = robot_file(robot, "urdf")
    model = load_model(urdf=urdf)
    return DemoRobot(robot, urdf, model.joints, model.locked, load_config(robot_file(robot, "config")),
                     shipped_trajectories=not optimize)


def user_robot(urdf: Path | str, config: Path | str | None = None, joints: list[str] | tuple[str, ...] | None = None,
               seed: int = 0) -> DemoRobot:
    """The user's robot: ``urdf``, its ``config`` if any, every missing section derived from the URDF.

    Identified joints: ``joints``, else the config's ``robot.joints``, else the model's default (movable joints
    but mimic and end-effector ones, :func:`~dynid_ros.robot.model.load_model`) without the joints named like a
    gripper's (:func:`~dynid_ros.robot.robot_defaults.named_gripper_joints`); the others are locked at neutral, with
    a warning.
    """

    urdf = Path(urdf)
    user = load_config(config)
    joints = list(joints or (user.get("robot") or {}).get("joints") or [])
    model = load_model(urdf=urdf, joints=joints or None)
    grippers = () if joints else named_gripper_joints(model.joints)
    if grippers and len(grippers) < model.n_dof:
        LOG.warning("joints named like a gripper's locked at neutral: %s (name them in --joints to identify them)",
                    ", ".join(grippers))
        model = load_model(urdf=urdf, joints=[j for j in model.joints if j not in grippers])
    derived = derive_config(model, seed=seed)
    merged = {**derived, **{k: v for k, v in user.items() if v is not None}}
    merged["robot"] = {**derived["robot"], **dict(user.get("robot") or {}), "joints": list(model.joints)}
    missing = tuple(s for s in DERIVED_SECTIONS if not user.get(s))
    name = read_urdf(model.urdf_xml, urdf).name or urdf.stem
    return DemoRobot(name, urdf, model.joints, model.locked, merged, derived=missing)


def _trajectory(robot: DemoRobot, kind: str, model, seed: int, budget_s: float, progress: bool):
    if robot.shipped_trajectories:
        return load_trajectory(shipped_trajectory(robot.name, kind))
    section = dict(robot.config.get("excitation") or {})
    share = IDENTIFICATION_SHARE if kind == "identification" else 1.0 - IDENTIFICATION_SHARE
    collision = CollisionSettings.from_config(robot.config.get("collision"))
    options = ExcitationOptions.from_config(section, seed=seed + (0 if kind == "identification" else 101),
                                            time_budget_s=share * budget_s, collision=collision)
    return optimize_excitation(model, options, progress=progress)


def shipped_trajectory(robot: str, kind: str) -> Path:
    """The excitation of ``kind`` ("identification" or "validation") shipped for embedded ``robot``."""
    return Path(__file__).resolve().parents[1] / "robot" / "trajectories" / f"{robot}_{kind}.yaml"


def run_demo(robot: str | DemoRobot = "panda", out: Path | str = "demo_out", optimize: bool = False, seed: int = 0,
             cycles: int = 2, time_budget_s: float = 60.0, progress: bool = True) -> DemoResult:
    """Run the demo on an embedded robot (its name) or a :class:`DemoRobot` (:func:`user_robot`); returns the
    summary (also written as ``summary.json``) and the output paths. ``time_budget_s`` bounds the excitation
    optimization, both trajectories together."""

    if not time_budget_s > 0:
        raise ConfigError(f"--time-budget must be positive, got {time_budget_s}")
    robot = robot if isinstance(robot, DemoRobot) else embedded_robot(robot, optimize)
    out = fresh_output_directory(out, DEMO)  # an existing directory that is not an earlier demo: refused
    timer = StageTimer()
    config = robot.config
    simulation = dict(config.get("simulation") or {})
    say = print if progress else (lambda *_: None)
    if robot.locked:
        say(f"locked at neutral (not identified): {', '.join(robot.locked)}")
    if robot.derived:
        say(f"derived from the URDF: {', '.join(robot.derived)} (written to {out / 'config.yaml'})")
    (out / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False, default_flow_style=None, width=110))

    with timer.stage("truth"):
        model = load_model(urdf=robot.urdf, joints=list(robot.joints))
        options = identification_options(config.get("identification"), {"joints": list(robot.joints)},
                                         **driver_defaults(config))
        layout = model.layout_for(options.friction, options.armature)
        nominal = nominal_parameters(model, layout)
        truth = GroundTruth.from_config(dict(simulation.get("truth") or {}), seed=seed)
        gains = Gains.from_config(simulation.get("controller"))
        truth_delta = truth.parameter_vector(model, layout)
        truth_urdf = out / "truth.urdf"
        truth.write_urdf(model, truth_urdf)
    say(f"[1/5] ground truth: {robot.name}, link masses perturbed (total "
        f"{truth_delta[layout.indices('m')].sum():.2f} kg vs nominal {nominal[layout.indices('m')].sum():.2f} kg), "
        "friction and armature added")

    bags, excitation_info, trajectories = {}, {}, {}
    for step, kind in ((2, "identification"), (3, "validation")):
        with timer.stage(f"excitation_{kind}"):
            excitation = _trajectory(robot, kind, model, seed, time_budget_s, progress)
            if not robot.shipped_trajectories:  # kept: the user can check it, run it on the robot, or reuse it
                trajectories[kind] = out / "trajectories" / f"{kind}.yaml"
                save_trajectory(trajectories[kind], excitation)
        with timer.stage(f"simulate_{kind}"):
            sim = Simulator(robot.urdf, truth=truth, seed=seed + step, gains=gains,  # nominal-model controller
                            joints=robot.joints, collision=CollisionSettings.from_config(config.get("collision")))
            q_start = excitation.trajectory.evaluate(np.zeros(1))[0][0]
            limits = robot_limits(model, config, collision=sim.collision)  # the robot's limits, its geometry too
            profile = checked_profile(excitation, limits, q_start, cycles)
            t, q_ref, dq_ref, ddq_ref = profile.sample_at_rate(1.0 / sim.timestep)
            series = simulate_profile(sim, t, q_ref, dq_ref, ddq_ref, progress=progress)
            bags[kind] = write_joint_states(out / "bags" / kind, series)
        excitation_info[kind] = {"condition_number": excitation.condition_number, "duration_s": float(t[-1]),
                                 "tracking_rms": series.info["tracking_rms"].tolist(),
                                 "saturated_steps": int(series.info["saturated_steps"])}
        if sim.contacts is not None:
            excitation_info[kind]["contacts"] = series.info["contacts"]
        say(f"[{step}/5] simulated {kind} run: {t[-1]:.1f} s at 1 kHz, condition number "
            f"{excitation.condition_number:.1f} -> {bags[kind]}"
            + (f"; {sim.contacts.line()}" if sim.contacts is not None else ""))

    with timer.stage("identify"):  # as dynid identify --bag does, into out/result
        result = identify_into(out / "result", RunInputs(bag=bags["identification"], urdf=Path(robot.urdf)),
                               config=config, options=options).result
    say(f"[4/5] identified {result.base.n_base} base parameters ({options.method}, {options.consistency}): "
        f"status {result.solver_status}, feasible {result.feasible}")

    with timer.stage("validate"):
        data = processed_window(model, read_joint_states(bags["validation"]), options, result.processing)
        terms = terms_from_dict(result.position_torque, model.joints)  # a spring the data showed
        evaluated = {name: evaluate_parameters(model, layout, delta, data, position=terms if name == "identified"
                                               else None)
                     for name, delta in (("identified", result.delta), ("truth", truth_delta), ("nominal", nominal))}
    identified_err = evaluated["identified"].relative_error
    floor = evaluated["truth"].relative_error
    distances = plots.parameter_distances(layout, truth_delta, result.delta, nominal, result.base.K)

    with timer.stage("report"):
        val = evaluated["identified"]
        torque_png = plots.plot_torques(val.t, val.tau, val.tau_hat, val.joints, out / "validation_torques.png",
                                         title=f"{robot.name}: validation trajectory, measured vs predicted torque")
        params_png = plots.plot_parameters(layout, result.delta, nominal, out / "parameters.png", truth=truth_delta)
        summary = {
            "robot": robot.name,
            "urdf": str(robot.urdf),
            "joints": list(robot.joints),
            "locked_joints": list(robot.locked),
            "derived_from_urdf": list(robot.derived),
            "relative_error_validation": {name: e.relative_error for name, e in evaluated.items()},
            "relative_error_per_joint_validation": {name: e.relative_error_per_joint for name, e in evaluated.items()},
            "noise_floor": floor,
            "ratio_to_noise_floor": identified_err / max(floor, 1e-300),
            "feasible": result.feasible,
            "solver_status": result.solver_status,
            "n_base": result.base.n_base,
            "excitation": excitation_info,
            "parameter_errors": distances,
            "closer_to_truth_than_nominal": all(r["identified"] < r["nominal"] for r in distances
                                                if r["identifiable"]),
            "identification_timings_s": result.timings_s,
            "timings_s": timer.timings,
            "files": {"bags": {k: str(v) for k, v in bags.items()}, "result": str(out / "result"),
                      "truth_urdf": str(truth_urdf), "config": str(out / "config.yaml"),
                      "plots": [torque_png.name, params_png.name],
                      "trajectories": {k: str(v) for k, v in trajectories.items()}},
        }
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        (out / "report.md").write_text(_markdown(summary, result, distances, evaluated))
    say(f"[5/5] validation error {100 * identified_err:.2f} % (noise floor {100 * floor:.2f} %, ratio "
        f"{summary['ratio_to_noise_floor']:.3f}; nominal URDF {100 * evaluated['nominal'].relative_error:.2f} %)")
    return DemoResult(out, summary)


def _markdown(summary: dict, result, distances: list[dict], evaluated: dict) -> str:
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
        "## Seen in simulation (MuJoCo with the robot's collision geometry and its workcell)",
        "",
        *[f"- {kind} run: {describe(info['contacts'])}" for kind, info in summary["excitation"].items()
          if "contacts" in info],
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
        "ratios of estimates, not identifiable link by link, and are shown for information (\"derived\"). Link "
        "masses and most first moments enter the base parameters only in combinations: their rows over all links "
        "come from the prior and are not counted; the identifiable components are.",
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
