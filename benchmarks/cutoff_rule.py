"""Benchmark: the default filter cutoff derived from the excitation's bandwidth vs the one cross-validation picks.

For each data set (the real Panda run of Gaz et al. 2019 split 70/30; simulated 1 kHz runs of the embedded robots
and of the Panda scaled to a 0.6 kg and a 30 kg arm, identification and validation on two different excitations;
the 3.8 kg three-joint arm of the tests on two multi-sine periods; arms of example-robot-data, e.g. ``so100``,
``ur10``, with excitations optimized for them in 10 s): the motion's bandwidth ``B`` as the default
measures it (:mod:`dynid_ros.data.bandwidth`), the cutoff time-blocked cross-validation picks (``cutoff_hz: auto``,
:mod:`dynid_ros.identification.cutoff_selection`), the cutoff the default rule derives from ``B`` and the sample rate,
and the held-out error of the DEFAULT identification with each (and with the former fixed 6 Hz).

Run: ``python benchmarks/cutoff_rule.py [--sets panda_gaz2019,panda,...]``; writes
``benchmarks/results/cutoff_rule.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "test"))

from bench_demo_robots import ROBOTS, robots_root  # noqa: E402
from real_robots import panda_gaz2019  # noqa: E402

from dynid_ros.data.bandwidth import derived_cutoff, leading_bandwidth  # noqa: E402
from dynid_ros.data.joint_states import JointStateSeries  # noqa: E402
from dynid_ros.data.signal_processing import ProcessingOptions  # noqa: E402
from dynid_ros.dynamics.base_parameters import compute_base_parameters  # noqa: E402
from dynid_ros.excitation import (  # noqa: E402
    ExcitationOptions,
    load_trajectory,  # noqa: E402
    optimize_excitation,
)
from dynid_ros.execution.robot_limits import checked_profile, robot_limits  # noqa: E402
from dynid_ros.identification.cutoff_selection import choose_cutoff  # noqa: E402
from dynid_ros.identification.identify import identify  # noqa: E402
from dynid_ros.identification.linear_identification import prepare_series  # noqa: E402
from dynid_ros.identification.options import IdentificationOptions  # noqa: E402
from dynid_ros.reporting.validate import evaluate_parameters, processed_window  # noqa: E402
from dynid_ros.robot.config import load_config  # noqa: E402
from dynid_ros.robot.model import load_model  # noqa: E402
from dynid_ros.robot.resources import robot_file  # noqa: E402
from dynid_ros.sim import Gains, GroundTruth, Simulator, simulate_profile  # noqa: E402
from dynid_ros.studies.demo import shipped_trajectory, user_robot  # noqa: E402
from dynid_ros.studies.robustness import case_setup, simulated_run  # noqa: E402

from support.sim_bags import arm_urdf, reference  # noqa: E402

Dataset = tuple[JointStateSeries, JointStateSeries, Path, list[str] | None]


def real_panda() -> Dataset | None:
    found = panda_gaz2019()
    if found is None:
        return None
    series, urdf, joints = found
    cut = 0.7 * (series.t[-1] - series.t[0])
    return series.window(None, cut), series.window(cut, None), urdf, joints


def embedded(robot: str) -> Dataset:
    config = load_config(robot_file(robot, "config"))
    truth = GroundTruth.from_config(dict((config.get("simulation") or {}).get("truth") or {}), seed=0)
    urdf = robot_file(robot, "urdf")
    runs = [simulated_run(urdf, truth, load_trajectory(shipped_trajectory(robot, kind)), seed, 2, False)
            for seed, kind in ((2, "identification"), (3, "validation"))]
    return runs[0], runs[1], urdf, None


def scaled(case: str, workdir: Path) -> Dataset:
    setup = case_setup(case, "panda", 0, workdir)
    runs = [simulated_run(setup.urdf, setup.truth, trajectory, seed, 2, False)
            for seed, trajectory in ((2, setup.identification_trajectory), (3, setup.validation_trajectory))]
    return runs[0], runs[1], setup.urdf, None


def fleet_arm(workdir: Path) -> Dataset:
    """The three-joint arm of the fleet tests (3.8 kg), one 3 s multi-sine period to identify, a 4 s one to
    validate (test/support/sim_bags.py)."""
    urdf = arm_urdf(workdir)
    truth = GroundTruth(damping=[0.1, 0.08, 0.05], friction=[0.3, 0.2, 0.15], noise=0.02, seed=0)
    runs = []
    for seed, duration in ((2, 3.0), (3, 4.0)):
        sim = Simulator(urdf, truth=truth, seed=seed)
        runs.append(simulate_profile(sim, *reference(duration, sim.timestep), progress=False))
    return runs[0], runs[1], urdf, None


def optimized(robot: str) -> Dataset:
    """An arm of example-robot-data as shipped, its config derived from the URDF (:func:`user_robot`), two excitations
    optimized within 10 s each (identification, validation), simulated like ``dynid demo`` does."""
    demo_robot = user_robot(robots_root() / ROBOTS[robot])
    model = load_model(urdf=demo_robot.urdf, joints=list(demo_robot.joints))
    config = demo_robot.config
    simulation = dict(config.get("simulation") or {})
    truth = GroundTruth.from_config(dict(simulation.get("truth") or {}), seed=0)
    runs = []
    for seed in (0, 101):
        options = ExcitationOptions.from_config(dict(config.get("excitation") or {}), seed=seed, time_budget_s=10.0)
        excitation = optimize_excitation(model, options, progress=False)
        sim = Simulator(demo_robot.urdf, truth=truth, seed=seed + 2, joints=demo_robot.joints,
                        gains=Gains.from_config(simulation.get("controller")))
        q_start = excitation.trajectory.evaluate(np.zeros(1))[0][0]
        profile = checked_profile(excitation, robot_limits(model, config), q_start, 2)
        runs.append(simulate_profile(sim, *profile.sample_at_rate(1.0 / sim.timestep), progress=False))
    return runs[0], runs[1], demo_robot.urdf, list(demo_robot.joints)


def held_out(ident: JointStateSeries, val: JointStateSeries, urdf: Path, joints, cutoff) -> tuple[float, float]:
    """Held-out error of the default identification with processing ``cutoff_hz: cutoff``, and the cutoff used."""
    options = IdentificationOptions(joints=joints, processing={} if cutoff is None else {"cutoff_hz": cutoff})
    result = identify(ident, options, urdf=urdf)
    data = processed_window(result.model, val, options, result.processing)
    err = evaluate_parameters(result.model, result.layout, result.delta, data).relative_error
    return float(err), float(result.processing["cutoff_hz"])


def study(name: str, data: Dataset) -> dict:
    ident, val, urdf, joints = data
    started = time.perf_counter()
    model = load_model(urdf=urdf, joints=joints)
    options = IdentificationOptions(joints=joints)
    series = prepare_series(ident, model, options)
    rate = 1.0 / float(np.median(np.diff(series.t)))
    bandwidth = leading_bandwidth(series.t, series.velocity)
    rule = derived_cutoff(bandwidth, rate, ProcessingOptions().order, ProcessingOptions().decimate_hz)
    base = compute_base_parameters(model, model.layout_for(options.friction, options.armature))
    _, choice = choose_cutoff(series, ProcessingOptions(), model, base)
    row = {"set": name, "rate_hz": rate, "bandwidth_hz": bandwidth, "peak_speed": float(np.abs(series.velocity).max()),
           "cv_cutoff_hz": choice.cutoff_hz, "cv_multiple": choice.cutoff_hz / bandwidth,
           "cv_scores": {f"{k:.4g}": v for k, v in choice.scores.items()},
           "rule_cutoff_hz": rule.cutoff_hz, "rule_decimate_hz": rule.decimate_hz}
    for key, cutoff in (("cv", choice.cutoff_hz), ("rule", None), ("fixed_6hz", 6.0)):
        row[f"held_out_{key}"], used = held_out(ident, val, urdf, joints, cutoff)
        if key == "rule":
            row["rule_cutoff_used_hz"] = used
    row["seconds"] = time.perf_counter() - started
    print(f"{name:14s} B {bandwidth:6.3f} Hz  CV {choice.cutoff_hz:6.2f} Hz ({row['cv_multiple']:4.1f} B)  rule "
          f"{rule.cutoff_hz:6.2f} Hz  held-out CV {100 * row['held_out_cv']:.3f} %  rule "
          f"{100 * row['held_out_rule']:.3f} %  6 Hz {100 * row['held_out_fixed_6hz']:.3f} %", flush=True)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="panda_gaz2019,panda,ur5e,small_arm,large_arm,fleet_arm")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets.split(","):
            if name == "panda_gaz2019":
                data = real_panda()
                if data is None:
                    continue
            elif name in ROBOTS:
                data = optimized(name)
            elif name == "fleet_arm":
                data = fleet_arm(Path(tmp))
            elif name in ("small_arm", "large_arm"):
                data = scaled(name, Path(tmp))
            else:
                data = embedded(name)
            rows.append(study(name, data))
    out = ROOT / "benchmarks" / "results" / "cutoff_rule.json"
    old = json.loads(out.read_text())["rows"] if out.is_file() else []
    merged = {r["set"]: r for r in old} | {r["set"]: r for r in rows}
    out.write_text(json.dumps({"rows": list(merged.values())}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
