"""``dynid info``: parameters and base parameters of a robot model."""

from __future__ import annotations

import argparse
import json

from dynid_ros.cli.common import add_model_arguments, add_robot_arguments
from dynid_ros.dynamics.base_parameters import compute_base_parameters
from dynid_ros.robot.model import load_model

NAME = "info"
HELP = "show a robot's identifiable (base) parameters"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``dynid info`` arguments."""
    add_robot_arguments(parser)
    add_model_arguments(parser, friction_default=None)
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    """Print (or ``--json``) the robot's joints, parameters and base parameters; the exit code."""
    model = load_model(urdf=args.urdf, dh=args.dh, joints=args.joints, xacro_args=args.xacro_arg)
    layout = model.layout_for(args.friction, bool(args.armature))
    base = compute_base_parameters(model, layout)
    info = {
        "joints": list(model.joints),
        "links": list(model.links),
        "locked_joints": list(model.locked),
        "following_joints": model.following(),
        "friction": list(layout.friction),
        "armature": layout.armature,
        "n_parameters": layout.n_parameters,
        "n_base": base.n_base,
        "parameters": layout.names,
        "base_parameters": base.to_dict(),
    }
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"{len(model.joints)} joints: {', '.join(model.joints)}")
    for name, m in info["following_joints"].items():
        print(f"  {name} follows {m['leader']}: q = {m['multiplier']:g} q_{m['leader']} + {m['offset']:g} "
              "(not identified)")
    print(f"{base.n_base} base parameters of {layout.n_parameters}")
    for record in info["base_parameters"]:
        print(f"  {record['name']:>7} = {record['expression']}")
    return 0
