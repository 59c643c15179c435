"""``dynid gains``: per-joint drive gains (torque = k * effort) from an unloaded and a loaded run."""

from __future__ import annotations

import argparse
from pathlib import Path

from dynid_ros.cli.common import add_model_arguments, add_robot_arguments, float_list
from dynid_ros.data.bag_io import read_joint_states
from dynid_ros.data.gains_file import is_gains_file, write_gains
from dynid_ros.data.output_paths import check_output_file
from dynid_ros.dynamics.feasibility import SOLVERS
from dynid_ros.identification.identify import identified_model
from dynid_ros.identification.options import identification_options
from dynid_ros.identification.timing import StageTimer
from dynid_ros.robot.config import load_config
from dynid_ros.robot.drivers import driver_defaults
from dynid_ros.variants.gains import estimate_gains

NAME = "gains"
HELP = "estimate per-joint drive gains (torque = k * effort) from runs without and with a known payload"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``dynid gains`` arguments."""
    parser.add_argument("--unloaded", required=True, help="rosbag2 of the robot without the payload")
    parser.add_argument("--loaded", required=True, help="rosbag2 of the same robot with the payload")
    parser.add_argument("--payload-mass", type=float, required=True, metavar="KG", help="the payload's mass [kg]")
    parser.add_argument("--payload-link", required=True, metavar="LINK", help="link the payload is fixed to")
    parser.add_argument("--payload-com", type=float_list, default=None, metavar="X,Y,Z",
                        help="the payload's CoM in the link's frame [m] (default: identified)")
    add_robot_arguments(parser)
    add_model_arguments(parser, friction_default=None)
    parser.add_argument("--topic", default=None, help="sensor_msgs/JointState topic (default /joint_states)")
    parser.add_argument("--solver", choices=SOLVERS, default=None, help="SDP solver (default clarabel)")
    parser.add_argument("--config", default=None, help="robot config YAML (section 'identification')")
    parser.add_argument("--out", required=True, help="gains YAML to write (for dynid identify --effort-scale-file)")


def run(args: argparse.Namespace) -> int:
    """Estimate the effort scales from the unloaded and loaded runs and write the gains file; the exit code."""
    config = load_config(args.config)
    options = identification_options(config.get("identification"), vars(args), **driver_defaults(config))
    out = check_output_file(args.out, (args.unloaded, args.loaded, args.urdf, args.dh, args.config), "--out",
                            is_gains_file, "gains file")
    unloaded = read_joint_states(args.unloaded, topic=options.topic)
    loaded = read_joint_states(args.loaded, topic=options.topic)
    timer = StageTimer()
    model, _ = identified_model(unloaded, options, timer, urdf=args.urdf, dh=args.dh, xacro_args=args.xacro_arg)
    result = estimate_gains(unloaded, loaded, model, args.payload_link, args.payload_mass, args.payload_com, options)
    write_gains(result.to_dict(), Path(out))
    print("effort scale (torque = k * effort): " + ", ".join(
        f"{name} {k:.4f}" for name, k in zip(result.joints, result.fit.gains)))
    print(f"wrote {args.out}")
    return 0
