"""Benchmark: the excitation optimizer with and without its collision constraints (Panda, UR10).

For each robot, ``optimize_excitation`` runs twice on the same seed, starts and budget: with the robot's collision
geometry and the table z = 0 (the config's ``collision:`` section, 2 cm kept) and with ``collision: None``. Reported:
wall and CPU time, starts and SLSQP iterations done, the condition number (and with unit-norm columns), the smallest
clearance of each result at 1 kHz (pinocchio + coal, every pair the collision model checks) and the lowest point of
any moving link. The target: with collisions, the condition number within 15 % of the result without, on the Panda,
within the default 120 s budget.

Run: ``python benchmarks/bench_collision.py [--budget 120] [--starts 8] [--harmonics L] [--robots panda ur10]``; writes
``benchmarks/results/bench_collision.json``. The machine is shared: the load average is recorded, and the CPU time
(``time.process_time``) is the measure of cost that does not depend on it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import sysconfig
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynid_ros.errors import ExcitationError  # noqa: E402
from dynid_ros.excitation import ExcitationOptions, optimize_excitation  # noqa: E402
from dynid_ros.excitation.clearance import smallest_clearance  # noqa: E402
from dynid_ros.robot.collision import load_collision_model  # noqa: E402
from dynid_ros.robot.config import load_config  # noqa: E402
from dynid_ros.robot.model import load_model  # noqa: E402
from dynid_ros.robot.workcell import CollisionSettings  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "bench_collision.json"
ERD = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
ROBOTS = {
    "panda": (ROOT / "urdf" / "panda.urdf", ROOT / "config" / "panda.yaml"),
    "ur10": (ERD / "ur_description" / "urdf" / "ur10_robot.urdf", None),
    "ur5": (ERD / "ur_description" / "urdf" / "ur5_robot.urdf", None),
}


def run(robot: str, budget: float, starts: int, seed: int, collisions: bool, harmonics: int | None = None) -> dict:
    urdf, config_path = ROBOTS[robot]
    config = load_config(config_path) if config_path else {}
    model = load_model(urdf=urdf)
    settings = CollisionSettings.from_config(config.get("collision"), config_path=config_path)
    options = ExcitationOptions.from_config(config.get("excitation"), time_budget_s=budget, n_starts=starts,
                                            seed=seed, collision=settings, harmonics=harmonics)
    if not collisions:  # from_config takes None as "not given" (the default settings): set it after
        options.collision = None
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        result = optimize_excitation(model, options, progress=False)
    except ExcitationError as err:  # a failure is a result of the benchmark too
        return {"collision_constraints": collisions, "budget_s": budget, "harmonics": options.harmonics,
                "wall_time_s": round(time.perf_counter() - wall, 1), "cpu_time_s": round(time.process_time() - cpu, 1),
                "error": str(err)}
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    measure = load_collision_model(model, settings)  # the same geometry, whether the run kept it or not
    clearance, t = smallest_clearance(measure, result.trajectory)
    q, dq, _ = result.trajectory.evaluate(t)
    table = [c for c in measure.scan(q, dq, t[1] - t[0], floor=None) if c.row.obstacle]
    lowest = min(table, key=lambda c: c.distance)
    return {
        "collision_constraints": collisions, "budget_s": budget, "harmonics": options.harmonics,
        "wall_time_s": round(wall, 1),
        "cpu_time_s": round(cpu, 1), "starts_done": result.info["starts"], "iterations": result.info["iterations"],
        "condition_number": round(result.condition_number, 2),
        "condition_number_scaled": round(result.info["condition_number_scaled"], 3),
        "smallest_clearance_m": round(clearance.distance, 4), "between": clearance.row.name,
        "kept_m": round(clearance.row.margin, 4), "lowest_link": lowest.row.first,
        "lowest_point_m": round(lowest.distance, 4),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=120.0)
    parser.add_argument("--starts", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--harmonics", type=int, default=None, help="L (default: the config's, else 5)")
    parser.add_argument("--robots", nargs="+", default=["panda", "ur10"], choices=sorted(ROBOTS))
    parser.add_argument("--out", type=Path, default=RESULTS, help="the JSON file written")
    args = parser.parse_args()
    out = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                       "load_average_start": list(os.getloadavg())}, "runs": {}}
    for robot in args.robots:
        rows = []
        for collisions in (False, True):
            row = run(robot, args.budget, args.starts, args.seed, collisions, args.harmonics)
            rows.append(row)
            if "error" in row:
                print(f"{robot} {'with' if collisions else 'without'} collision constraints: {row['error']} "
                      f"({row['wall_time_s']:.0f} s, {row['cpu_time_s']:.0f} s CPU)", flush=True)
                continue
            print(f"{robot} {'with' if collisions else 'without'} collision constraints: condition number "
                  f"{row['condition_number']:.2f}, {row['starts_done']} starts / {row['iterations']} iterations in "
                  f"{row['wall_time_s']:.0f} s ({row['cpu_time_s']:.0f} s CPU); smallest clearance "
                  f"{100 * row['smallest_clearance_m']:.1f} cm ({row['between']}), lowest point "
                  f"{100 * row['lowest_point_m']:.1f} cm ({row['lowest_link']})", flush=True)
        out["runs"][robot] = {"without": rows[0], "with": rows[1]}
        if all("error" not in row for row in rows):
            ratio = rows[1]["condition_number"] / rows[0]["condition_number"]
            out["runs"][robot]["condition_ratio"] = round(ratio, 3)
            print(f"{robot}: condition number with / without collision constraints {ratio:.3f}")
    out["machine"]["load_average_end"] = list(os.getloadavg())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    sys.exit(main())
