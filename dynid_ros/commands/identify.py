"""``dynid identify``: bag -> physically feasible parameters -> identified URDF."""

from __future__ import annotations

import argparse
from pathlib import Path

from dynid_ros.commands.common import add_model_arguments, add_robot_arguments, float_list, pick
from dynid_ros.config import config_section
from dynid_ros.identification import CONSISTENCIES, METHODS, SOLVERS, IdentificationOptions, StageTimer, identify

NAME = "identify"
HELP = "identify dynamic parameters from a rosbag2 of joint states"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_robot_arguments(parser)
    parser.add_argument("--bag", required=True, help="rosbag2 directory or file (MCAP or sqlite3)")
    parser.add_argument("--topic", default=None, help="sensor_msgs/JointState topic (default /joint_states)")
    parser.add_argument("--start", type=float, default=None, help="window start, seconds from the first message")
    parser.add_argument("--end", type=float, default=None, help="window end, seconds from the first message")
    add_model_arguments(parser, friction_default=None)
    parser.add_argument("--method", choices=METHODS, default=None, help="estimator (default fbpe)")
    parser.add_argument("--consistency", choices=CONSISTENCIES, default=None,
                        help="physical (6x6 LMI, Sousa & Cortesão 2014 eq. 17) or full (pseudo-inertia, "
                             "Traversaro et al. 2016; default)")
    parser.add_argument("--solver", choices=SOLVERS, default=None, help="SDP solver (default clarabel)")
    parser.add_argument("--effort-scale", type=float_list, default=None,
                        help="per-joint factors k1,k2,... so that torque = k * effort (e.g. motor currents)")
    parser.add_argument("--prior", choices=("nominal", "none"), default=None,
                        help="resolve the unidentifiable part toward the nominal URDF (default) or not")
    parser.add_argument("--total-mass", type=float_list, default=None, metavar="LO,HI",
                        help="bounds on the total mass of the identified links [kg]")
    parser.add_argument("--config", default=None, help="robot config YAML (section 'identification')")
    parser.add_argument("--out", required=True, help="output directory")


def options_from_args(args: argparse.Namespace) -> IdentificationOptions:
    """Identification options: CLI flags over the config file over the defaults."""
    config = config_section(args.config, "identification")
    defaults = IdentificationOptions()
    bounds = dict(config.get("bounds") or {})
    if args.total_mass is not None:
        bounds["total_mass"] = args.total_mass
    return IdentificationOptions(
        joints=pick(args.joints, config, "joints", None),
        friction=pick(args.friction, config, "friction", defaults.friction),
        armature=bool(pick(args.armature, config, "armature", defaults.armature)),
        method=pick(args.method, config, "method", defaults.method),
        consistency=pick(args.consistency, config, "consistency", defaults.consistency),
        solver=pick(args.solver, config, "solver", defaults.solver),
        topic=pick(args.topic, config, "topic", defaults.topic),
        start=args.start, end=args.end,
        effort_scale=pick(args.effort_scale, config, "effort_scale", None),
        prior=pick(args.prior, config, "prior", defaults.prior),
        bounds=bounds,
        processing=dict(config.get("processing") or {}),
    )


def run(args: argparse.Namespace) -> int:
    from dynid_ros.bag_io import read_joint_states
    from dynid_ros.results import write_result

    options = options_from_args(args)
    options.check()
    timer = StageTimer()
    with timer.stage("read_bag"):
        series = read_joint_states(args.bag, topic=options.topic)
    result = identify(series, options, urdf=args.urdf, dh=args.dh, timer=timer, xacro_args=args.xacro_arg)
    with timer.stage("write"):
        warnings = write_result(result, Path(args.out))
    for warning in result.warnings + [w for w in warnings if w not in result.warnings]:
        print(f"warning: {warning}")
    masses = [result.delta[result.layout.link_slice(k)][0] for k in range(len(result.layout.links))]
    print(f"{result.options.method} ({result.options.consistency}, {result.options.solver}): "
          f"status {result.solver_status}, feasible {result.feasible}")
    print(f"{result.base.n_base} base parameters from {result.n_samples} samples; relative error "
          f"{100 * result.relative_error:.2f} % (identification window); total mass {sum(masses):.2f} kg")
    for name, m in result.model.following().items():
        print(f"{name} follows {m['leader']} (mimic, multiplier {m['multiplier']:g}, offset {m['offset']:g}): its link "
              f"is identified through {m['leader']}'s torque, no friction or armature of its own")
    print("timings [s]: " + ", ".join(f"{k} {v:.2f}" for k, v in timer.timings.items()))
    print(f"wrote {args.out}/")
    return 0
