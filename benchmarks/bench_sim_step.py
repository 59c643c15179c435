"""Benchmark: the simulator's CPU time per 1 ms control step (MuJoCo step + the tracking controller + contacts), on
the embedded Panda along its shipped identification excitation, as ``dynid demo`` and ``sim_node`` run it.

Run: ``python benchmarks/bench_sim_step.py [--steps N]``; prints CPU and wall microseconds per step (CPU is the
number to compare on a shared machine).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dynid_ros.excitation import load_trajectory  # noqa: E402
from dynid_ros.execution.robot_limits import robot_limits  # noqa: E402
from dynid_ros.execution.trajectory_execution import prepare_profile  # noqa: E402
from dynid_ros.robot.config import load_config  # noqa: E402
from dynid_ros.robot.resources import robot_file  # noqa: E402
from dynid_ros.sim import Simulator, simulate_profile  # noqa: E402


def main() -> None:
    """Print the time per step."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    args = parser.parse_args()
    config = load_config(robot_file("panda", "config"))
    sim = Simulator.from_config(robot_file("panda", "urdf"), config.get("simulation") or {}, seed=0)
    excitation = load_trajectory(ROOT / "dynid_ros" / "robot" / "trajectories" / "panda_identification.yaml")
    limits = robot_limits(sim.model, config.get("excitation") or {})
    start = excitation.trajectory.evaluate(np.array([0.0]))[0][0]
    t, q, dq, ddq = prepare_profile(excitation, start, 1, 1000.0, limits).sample_at_rate(1000.0)
    n = min(args.steps, len(t))
    cpu, wall = time.process_time(), time.perf_counter()
    simulate_profile(sim, t[:n], q[:n], dq[:n], ddq[:n], progress=False)
    print(f"{(time.process_time() - cpu) / n * 1e6:.0f} us CPU per 1 ms step "
          f"(wall {(time.perf_counter() - wall) / n * 1e6:.0f} us), {n} steps")


if __name__ == "__main__":
    main()
