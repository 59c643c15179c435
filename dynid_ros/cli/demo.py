"""``dynid demo``: the whole job on a simulated robot (embedded, or the user's URDF), in one command."""

from __future__ import annotations

import argparse
from pathlib import Path

from dynid_ros.errors import ConfigError
from dynid_ros.robot.resources import ROBOTS
from dynid_ros.studies.demo import run_demo, user_robot

NAME = "demo"
HELP = "simulate, excite, record, identify and validate a robot (embedded, or --urdf); write a report"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``dynid demo`` arguments."""
    parser.add_argument("--robot", choices=ROBOTS, default=None,
                        help="embedded robot (default panda; shipped URDF, config and trajectories)")
    parser.add_argument("--urdf", default=None,
                        help="your robot's URDF or .urdf.xacro, as published (meshes and all); the excitation is "
                             "optimized, and defaults are derived from the URDF for what --config lacks")
    parser.add_argument("--config", default=None, help="robot config YAML (with --urdf; sections as config/panda.yaml)")
    parser.add_argument("--joints", default=None,
                        help="identified joints a,b,... (with --urdf; default: every movable joint but the "
                             "gripper's, which is locked at neutral)")
    parser.add_argument("--out", default="demo_out",
                        help="output directory (default demo_out/); an earlier demo there is replaced, any other "
                        "existing directory is refused")
    parser.add_argument("--optimize", action="store_true",
                        help="optimize the excitation trajectories instead of using the shipped ones (--robot)")
    parser.add_argument("--time-budget", type=float, default=60.0,
                        help="excitation optimization budget [s], both trajectories together (default 60)")
    parser.add_argument("--cycles", type=int, default=2, help="periods of the excitation per run (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the ground truth and the noise")


def run(args: argparse.Namespace) -> int:
    """Run the demo on the embedded robot or the ``--urdf`` robot and print the report's path; the exit code."""
    if args.urdf is None:
        if args.config is not None or args.joints is not None:
            raise ConfigError("--config and --joints go with --urdf (the embedded --robot has its own)")
        robot = args.robot or "panda"
    else:
        if args.robot is not None:
            raise ConfigError("give --robot or --urdf, not both")
        joints = [j.strip() for j in args.joints.split(",") if j.strip()] if args.joints else None
        robot = user_robot(Path(args.urdf), args.config, joints, seed=args.seed)
    result = run_demo(robot, Path(args.out), optimize=args.optimize or args.urdf is not None, seed=args.seed,
                      cycles=args.cycles, time_budget_s=args.time_budget)
    print(f"report: {result.report_path}")
    return 0
