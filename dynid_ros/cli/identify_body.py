"""``dynid identify-body``: one rigid body beyond a 6-axis force/torque sensor (Traversaro et al. 2016)."""

from __future__ import annotations

import argparse
from pathlib import Path

from dynid_ros.cli.common import add_robot_arguments
from dynid_ros.data.bag_io import read_joint_states
from dynid_ros.data.output_paths import BODY, check_output
from dynid_ros.data.wrench_io import read_wrenches
from dynid_ros.dynamics.feasibility import SOLVERS
from dynid_ros.robot.config import config_section
from dynid_ros.robot.model import load_model
from dynid_ros.variants.body_identification import identify_body, write_body

NAME = "identify-body"
HELP = "identify the rigid body beyond a 6-axis force/torque sensor from its wrenches and the joint states"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``dynid identify-body`` arguments."""
    parser.add_argument("--bag", required=True, help="rosbag2 with the joint states and the sensor's wrenches")
    parser.add_argument("--wrench-topic", required=True, help="geometry_msgs/WrenchStamped topic of the sensor")
    parser.add_argument("--sensor-frame", required=True,
                        help="the sensor's frame in the robot description (a link or fixed frame): the wrench is "
                             "the one applied to the body, about this frame's origin, in its axes")
    add_robot_arguments(parser)
    parser.add_argument("--topic", default="/joint_states", help="sensor_msgs/JointState topic")
    parser.add_argument("--solver", choices=SOLVERS, default="clarabel", help="SDP solver (default clarabel)")
    parser.add_argument("--config", default=None, help="robot config YAML (identification.processing)")
    parser.add_argument("--out", required=True, help="output directory (new, or an earlier body result)")


def run(args: argparse.Namespace) -> int:
    """Identify the body beyond the force/torque sensor and write it to ``--out``; the exit code."""
    inputs = (args.bag, args.urdf, args.dh, args.config)
    check_output(args.out, BODY, inputs)
    series = read_joint_states(args.bag, topic=args.topic)
    t, wrench, frame_id = read_wrenches(args.bag, args.wrench_topic)
    model = load_model(urdf=args.urdf, dh=args.dh, joints=args.joints, available=series.names,
                       xacro_args=args.xacro_arg)
    processing = dict(config_section(args.config, "identification").get("processing") or {})
    result = identify_body(series, t, wrench, model, args.sensor_frame, processing, args.solver)
    write_body(result, Path(args.out), inputs)
    if frame_id and frame_id != args.sensor_frame:
        print(f"warning: the wrenches say frame {frame_id}, identified as given in --sensor-frame {args.sensor_frame}")
    for fit in (result.lmi, result.manifold):
        print(f"{fit.solver}: mass {fit.mass:.4g} kg, CoM [{', '.join(f'{v:.4g}' for v in fit.com)}] m in "
              f"{args.sensor_frame}; {fit.iterations} iterations, {fit.seconds:.3f} s")
    print("sensor offset [N, N m]: " + ", ".join(f"{v:.4g}" for v in result.offset))
    print(f"wrote {args.out}/")
    return 0
