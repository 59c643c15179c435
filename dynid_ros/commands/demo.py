"""``dynid demo``: the whole job on the embedded (MuJoCo) robot, in one command."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "demo"
HELP = "simulate, excite, record, identify and validate the embedded robot; write a report"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from dynid_ros.demo import ROBOTS

    parser.add_argument("--robot", choices=ROBOTS, default="panda", help="embedded robot (default panda)")
    parser.add_argument("--out", default="demo_out",
                        help="output directory (default demo_out/); an earlier demo there is replaced, any other "
                        "existing directory is refused")
    parser.add_argument("--optimize", action="store_true",
                        help="optimize the excitation trajectories instead of using the shipped ones")
    parser.add_argument("--time-budget", type=float, default=60.0, help="optimizer budget per trajectory [s]")
    parser.add_argument("--cycles", type=int, default=2, help="periods of the excitation per run (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the ground truth and the noise")


def run(args: argparse.Namespace) -> int:
    from dynid_ros.demo import run_demo

    result = run_demo(args.robot, Path(args.out), optimize=args.optimize, seed=args.seed, cycles=args.cycles,
                      time_budget_s=args.time_budget)
    print(f"report: {result.report_path}")
    return 0
