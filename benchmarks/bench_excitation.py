"""Benchmark: an optimized excitation for the Panda (7 joints, L = 5) within a 120 s budget.

Runs :func:`dynid_ros.excitation.optimize_excitation` with ``config/panda.yaml`` (datasheet
accelerations 15, 7.5, 10, 12.5, 15, 20, 20 rad/s^2), then checks the result independently: limits
on a 1 kHz grid, rest at t = 0 and T, and the condition number recomputed from its definition
(``numpy.linalg.cond`` of the base regressor over one period at 50 Hz). For scale it also reports
the condition number of random feasible coefficients (the optimizer's starts).

Run: ``python benchmarks/bench_excitation.py [--budget 120] [--seed 0]``; writes
``benchmarks/results/bench_excitation.json``. ``--ship`` also regenerates the shipped trajectories
``dynid_ros/robot/trajectories/{panda,ur5e}_{identification,validation}.yaml``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynid_ros.dynamics.base_parameters import compute_base_parameters  # noqa: E402
from dynid_ros.dynamics.regressor import regressor  # noqa: E402
from dynid_ros.excitation import (  # noqa: E402
    ExcitationOptions,
    check_trajectory_limits,
    limits_from_model,
    load_trajectory,
    optimize_excitation,
    save_trajectory,
)
from dynid_ros.excitation.optimizer import ExcitationProblem, condition_base  # noqa: E402
from dynid_ros.robot.config import config_section, load_config  # noqa: E402
from dynid_ros.robot.model import load_model  # noqa: E402
from dynid_ros.robot.workcell import CollisionSettings  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "bench_excitation.json"
SHIPPED = ROOT / "dynid_ros" / "robot" / "trajectories"
VALIDATION = {"seed": 101, "frequency_hz": 0.08, "n_starts": 3}
"""The validation trajectories differ from the identification ones: another seed and frequency."""


def condition_by_definition(model, trajectory) -> float:
    """``numpy.linalg.cond`` of the base regressor (rigid body + fv, fc, fo; no armature) at 50 Hz."""
    layout = model.layout_for(("viscous", "coulomb", "offset"), armature=False)
    base = compute_base_parameters(model, layout)
    t = np.arange(int(np.ceil(trajectory.period * 50 - 1e-9))) / 50.0
    q, dq, ddq = trajectory.evaluate(t)
    dq[np.abs(dq) < 1e-9] = 0.0  # the sample at rest, t = 0
    return float(np.linalg.cond(regressor(model, layout, q, dq, ddq)[:, base.independent]))


def random_conditions(model, options, limits, count: int = 8) -> list[float]:
    problem = ExcitationProblem(model, options, limits, condition_base(model))
    return [condition_by_definition(model, problem.trajectory(problem.start(np.random.default_rng([1000, i]))))
            for i in range(count)]


def run_robot(robot: str, budget: float, seed: int, progress: bool, **overrides) -> tuple[dict, object]:
    urdf = ROOT / "urdf" / f"{robot}.urdf"
    config_path = ROOT / "config" / f"{robot}.yaml"
    section = config_section(config_path, "excitation")
    model = load_model(urdf=urdf)
    collision = CollisionSettings.from_config(load_config(config_path).get("collision"), config_path=config_path)
    options = ExcitationOptions.from_config(section, time_budget_s=budget, seed=seed, collision=collision,
                                            **overrides)
    started = time.perf_counter()
    result = optimize_excitation(model, options, progress=progress)
    wall = time.perf_counter() - started
    traj, limits = result.trajectory, result.limits
    margins = check_trajectory_limits(traj, limits, rate_hz=1000.0)
    _, dq_ends, ddq_ends = traj.evaluate(np.array([0.0, traj.period]))
    report = {
        "robot": robot, "joints": list(model.joints), "harmonics": traj.harmonics, "wf": traj.wf,
        "period_s": traj.period, "seed": seed, "budget_s": budget, "wall_time_s": round(wall, 2),
        "starts_done": result.info["starts"], "slsqp_iterations": result.info["iterations"],
        "history": result.info["history"],
        "condition_number": result.condition_number,
        "condition_number_recomputed": condition_by_definition(model, traj),
        "margins_1khz": margins,
        "rest_residual": float(max(np.abs(dq_ends).max(), np.abs(ddq_ends).max())),
        "acceleration_limits": limits.acceleration.tolist(),
        "random_start_conditions": random_conditions(model, options, limits_from_model(model, section)),
    }
    return report, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=120.0, help="time budget [s] (default 120)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ship", action="store_true", help="also write the shipped trajectories (both robots)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()
    report, result = run_robot("panda", args.budget, args.seed, not args.no_progress)
    out = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                       "load_average": list(os.getloadavg())}, "panda": report}
    print(f"panda, 7 joints, L = {report['harmonics']}, period {report['period_s']:.1f} s, budget {args.budget:.0f} s:")
    print(f"  condition number {report['condition_number']:.2f} "
          f"(recomputed {report['condition_number_recomputed']:.2f}) after {report['starts_done']} starts "
          f"in {report['wall_time_s']:.1f} s")
    first_ok = next((h["time_s"] for h in report["history"] if h["best"] is not None and h["best"] <= 60), None)
    print(f"  first result <= 60 after {first_ok} s" if first_ok is not None else "  no result <= 60")
    m = report["margins_1khz"]
    print(f"  1 kHz margins: position {m['position']:.4f}, velocity {m['velocity']:.4f}, acceleration "
          f"{m['acceleration']:.4f} (tightest: {m['tightest']}); rest residual {report['rest_residual']:.1e}")
    conds = report["random_start_conditions"]
    print(f"  random feasible coefficients: condition number {min(conds):.0f}-{max(conds):.0f}")
    done = (report["condition_number"] <= 60 and min(m["position"], m["velocity"], m["acceleration"]) >= 0
            and report["rest_residual"] < 1e-9)
    print(f"  criterion (<= 60, limits at 1 kHz, rest, within {args.budget:.0f} s): "
          f"{'met' if done else 'NOT met'}")
    if args.ship:
        out["shipped"] = ship(result, args.budget, not args.no_progress)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0 if done else 1


def ship(panda_result, budget: float, progress: bool) -> dict:
    """Write the shipped identification and validation trajectories of both robots."""
    written = {}
    runs = {("panda", "identification"): panda_result}
    runs[("ur5e", "identification")] = run_robot("ur5e", budget, 0, progress)[1]
    for robot in ("panda", "ur5e"):
        runs[(robot, "validation")] = run_robot(robot, budget / 2, VALIDATION["seed"], progress,
                                                frequency_hz=VALIDATION["frequency_hz"],
                                                n_starts=VALIDATION["n_starts"])[1]
    for (robot, purpose), result in runs.items():
        result.info["purpose"] = purpose
        result.info["robot"] = robot
        path = SHIPPED / f"{robot}_{purpose}.yaml"
        save_trajectory(path, result)
        loaded = load_trajectory(path)
        written[path.name] = {"condition_number": loaded.condition_number, "period_s": loaded.trajectory.period}
        print(f"  shipped {path.relative_to(ROOT)}: condition number {loaded.condition_number:.2f}, "
              f"period {loaded.trajectory.period:.1f} s")
    return written


if __name__ == "__main__":
    sys.exit(main())
