"""Benchmark: the CPU cost of one excitation start (SLSQP iterations with the joint-limit rows and the clearance rows).

For each robot, ``optimize_excitation`` runs one seeded start with a fixed number of SLSQP iterations and a budget
long enough not to cut it (the default collision settings: the robot's own links and the table z = 0, 2 cm kept), so
runs before and after a change of the optimizer do the same work. Reported: CPU time (``time.process_time``; the
machine is shared, wall time depends on the load), iterations, the condition number and the same with unit-norm
columns, and the load average.

Run: ``python benchmarks/bench_excite_start.py [--robots ur10 ur5 panda] [--iterations 40] [--label NAME]``; appends
to ``benchmarks/results/bench_excite_start.json`` under ``--label``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_collision import ROBOTS  # noqa: E402

from dynid_ros.errors import ExcitationError  # noqa: E402
from dynid_ros.excitation import ExcitationOptions, optimize_excitation  # noqa: E402
from dynid_ros.robot.config import load_config  # noqa: E402
from dynid_ros.robot.model import load_model  # noqa: E402
from dynid_ros.robot.workcell import CollisionSettings  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "bench_excite_start.json"


def run(robot: str, iterations: int, seed: int) -> dict:
    urdf, config_path = ROBOTS[robot]
    config = load_config(config_path) if config_path else {}
    model = load_model(urdf=urdf)
    settings = CollisionSettings.from_config(config.get("collision"), config_path=config_path)
    options = ExcitationOptions.from_config(config.get("excitation"), time_budget_s=3600.0, n_starts=1, seed=seed,
                                            max_iterations=iterations, collision=settings)
    cpu, load = time.process_time(), os.getloadavg()[0]
    try:
        result = optimize_excitation(model, options, progress=False)
    except ExcitationError as err:
        return {"iterations_allowed": iterations, "cpu_time_s": round(time.process_time() - cpu, 1),
                "error": str(err), "load_average": load}
    return {"iterations_allowed": iterations, "cpu_time_s": round(time.process_time() - cpu, 1),
            "iterations": result.info["iterations"], "condition_number": round(result.condition_number, 2),
            "condition_number_scaled": round(result.info["condition_number_scaled"], 3), "load_average": load}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="+", default=["ur10", "ur5", "panda"], choices=sorted(ROBOTS))
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default="run")
    args = parser.parse_args()
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    entry = results.setdefault(args.label, {})
    for robot in args.robots:
        row = run(robot, args.iterations, args.seed)
        print(robot, row, flush=True)
        entry[robot] = row
        RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
