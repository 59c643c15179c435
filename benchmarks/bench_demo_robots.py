"""Benchmark: ``dynid demo --urdf`` at full length on the arms example-robot-data ships, as shipped.

Each robot runs the whole job (defaults derived from its URDF, excitation optimized within the time budget,
two periods per run, grippers locked at neutral) and reports the demo's own acceptance numbers:
``ratio_to_noise_floor``, ``feasible``, ``closer_to_truth_than_nominal``, the wall time, and whether the
identified URDF loads in pinocchio and compiles in MuJoCo. A robot that fails reports its error.

Run: ``python benchmarks/bench_demo_robots.py [--budget 60] [--robots panda,ur5,...]``; writes
``benchmarks/results/demo_robots.json`` (a subset of robots updates its rows).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynid_ros.errors import DynidError  # noqa: E402
from dynid_ros.robot.model import load_model  # noqa: E402
from dynid_ros.sim import Simulator  # noqa: E402
from dynid_ros.studies.demo import run_demo, user_robot  # noqa: E402

ROBOTS = {
    "panda": "panda_description/urdf/panda.urdf",
    "ur3": "ur_description/urdf/ur3_robot.urdf",
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "ur10": "ur_description/urdf/ur10_robot.urdf",
    "ur5_gripper": "ur_description/urdf/ur5_gripper.urdf",
    "xarm7": "xarm_description/urdf/xarm7.urdf",
    "z1": "z1_description/urdf/z1.urdf",
    "kinova": "kinova_description/robots/kinova.urdf",
    "so100": "so_arm_description/urdf/so100.urdf",
    "so101": "so_arm_description/urdf/so101.urdf",
}
"""Arms of 5-7 joints (some with grippers) shipped by example-robot-data."""


def robots_root() -> Path:
    return Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"


def run_one(name: str, urdf: Path, budget: float, seed: int) -> dict:
    started = time.perf_counter()
    try:
        robot = user_robot(urdf, seed=seed)
        with tempfile.TemporaryDirectory() as tmp:
            result = run_demo(robot, Path(tmp) / "demo", seed=seed, cycles=2, time_budget_s=budget, progress=False)
            summary = result.summary
            identified = Path(tmp) / "demo" / "result" / "identified.urdf"
            model = load_model(urdf=identified, joints=list(robot.joints))
            masses = [model.pin_model.inertias[j].mass for j in range(1, model.pin_model.njoints)]
            Simulator(identified, joints=robot.joints)
    except DynidError as err:
        return {"robot": name, "urdf": str(urdf), "error": str(err), "time_s": round(time.perf_counter() - started, 1)}
    except Exception as err:  # a bug, not bad input: recorded so the other robots still run
        return {"robot": name, "urdf": str(urdf), "error": f"{type(err).__name__} (a bug): {err}",
                "time_s": round(time.perf_counter() - started, 1)}
    return {
        "robot": name, "urdf": str(urdf), "joints": list(robot.joints), "locked": list(robot.locked),
        "ratio_to_noise_floor": round(summary["ratio_to_noise_floor"], 4),
        "feasible": summary["feasible"], "closer_to_truth_than_nominal": summary["closer_to_truth_than_nominal"],
        "relative_error_validation": {k: round(v, 5) for k, v in summary["relative_error_validation"].items()},
        "condition_number": {k: round(v["condition_number"], 1) for k, v in summary["excitation"].items()},
        "identified_masses_kg": [round(m, 3) for m in masses], "identified_urdf_loads": True,
        "time_s": round(time.perf_counter() - started, 1),
        "timings_s": summary["timings_s"],
        "passed": bool(summary["ratio_to_noise_floor"] <= 1.05 and summary["feasible"]
                       and summary["closer_to_truth_than_nominal"] and np.all(np.array(masses) > 0)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=60.0, help="excitation time budget per robot [s]")
    parser.add_argument("--robots", default=",".join(ROBOTS), help="comma-separated names")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "demo_robots.json"))
    args = parser.parse_args()
    rows = []
    for name in args.robots.split(","):
        row = run_one(name, robots_root() / ROBOTS[name], args.budget, args.seed)
        rows.append(row)
        print(json.dumps({k: row.get(k) for k in ("robot", "ratio_to_noise_floor", "feasible",
                                                  "closer_to_truth_than_nominal", "time_s", "error")}), flush=True)
    previous = json.loads(Path(args.out).read_text()).get("robots", []) if Path(args.out).is_file() else []
    ran = {r["robot"] for r in rows}
    rows = [r for r in previous if r["robot"] not in ran and r["robot"] in ROBOTS] + rows  # a subset updates its rows
    rows.sort(key=lambda r: list(ROBOTS).index(r["robot"]))
    result = {"benchmark": "demo_robots", "budget_s": args.budget, "seed": args.seed, "cpu_count": os.cpu_count(),
              "platform": platform.platform(), "robots": rows,
              "passed": [r["robot"] for r in rows if r.get("passed")]}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"passed {len(result['passed'])}/{len(rows)}: {', '.join(result['passed'])} -> {args.out}")


if __name__ == "__main__":
    main()
