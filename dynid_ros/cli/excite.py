"""``dynid excite``: optimize an excitation trajectory within the robot's limits and write it to YAML.

The robot is ``--urdf``/``--dh``, or ``--urdf`` with a ``coupling:`` section in ``--config`` (the recordings and the
controller are in motor coordinates: the trajectory is in the coupling's motors), or the config's ``robot: frames:``
alone (no URDF; the trajectory is in ``robot.joints``, the motor coordinates). Without a description's limits, the
config's ``excitation: position:`` and ``velocity:`` of every motor are the limits (required).
"""

from __future__ import annotations

import argparse

from dynid_ros.cli.common import add_collision_arguments, add_robot_arguments
from dynid_ros.data.output_paths import check_output_file
from dynid_ros.errors import ConfigError
from dynid_ros.excitation import ExcitationOptions, optimize_excitation, save_trajectory
from dynid_ros.excitation.trajectory_file import clearance_lines
from dynid_ros.robot.config import config_section, load_config
from dynid_ros.robot.coupling import apply_coupling, coupling_from_config
from dynid_ros.robot.frames import FramesRobot, frames_section, load_frames_robot
from dynid_ros.robot.geometry_inertia import torque_check_model
from dynid_ros.robot.model import RobotModel, load_model
from dynid_ros.robot.workcell import CollisionSettings

NAME = "excite"
HELP = "optimize a safe, exciting Fourier trajectory (minimum condition number within the joint limits)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``dynid excite`` arguments."""
    add_robot_arguments(parser, required=False)
    parser.add_argument("--config", default=None, help="robot config YAML (section 'excitation': limits, "
                        "margins, frequency, harmonics; with 'coupling:' or 'robot: frames:' the trajectory is in "
                        "motor coordinates and excitation.position/velocity of every motor are required; section "
                        "'collision': the clearance kept from the robot's own links and its workcell, by default "
                        "2 cm and the table z = 0 under the base)")
    add_collision_arguments(parser)
    parser.add_argument("--harmonics", type=int, default=None, help="number of harmonics L (default 5)")
    parser.add_argument("--frequency", type=float, default=None, metavar="HZ",
                        help="fundamental frequency [Hz] (default 0.1; the period is 1 / HZ)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the random starts (default 0)")
    parser.add_argument("--starts", type=int, default=None, help="number of seeded starts (default 8)")
    parser.add_argument("--time-budget", type=float, default=None, metavar="S",
                        help="wall-time budget [s]; the best feasible result so far is kept (default 120)")
    parser.add_argument("--objective", choices=("cond", "logdet"), default=None,
                        help="minimize the condition number (default) or maximize log det (D-optimality)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--out", required=True, help="trajectory file to write (YAML; an existing file is "
                        "overwritten only when it is a trajectory file)")


def run(args: argparse.Namespace) -> int:
    """Optimize the excitation and write the trajectory file; the exit code."""
    check_output_file(args.out, (args.urdf, args.dh, args.config))  # only a trajectory file is overwritten

    section = config_section(args.config, "excitation")
    collision = CollisionSettings.from_config(load_config(args.config).get("collision"), config_path=args.config,
                                              package_dirs=args.package_dir)
    options = ExcitationOptions.from_config(
        section, harmonics=args.harmonics, frequency_hz=args.frequency, seed=args.seed, n_starts=args.starts,
        time_budget_s=args.time_budget, objective=args.objective, collision=collision)
    robot = excited_robot(args)
    if isinstance(robot, RobotModel):
        robot = with_guessed_masses(robot, args.package_dir)
    result = optimize_excitation(robot, options, progress=not args.no_progress)
    save_trajectory(args.out, result)
    margins = result.info["margins"]
    tightest = margins["tightest"].split(" of ")[0]
    trajectory = result.trajectory
    print(f"{trajectory.n_dof} joints, L = {trajectory.harmonics}, wf = {trajectory.wf:.4f} rad/s "
          f"(period {trajectory.period:.2f} s); {result.info['starts']} start(s) in {result.info['time_s']:.1f} s")
    print(f"condition number {result.condition_number:.2f} (base regressor, one period at 50 Hz, "
          f"{result.info['n_base']} base parameters); {result.info['condition_number_scaled']:.2f} with unit-norm "
          "columns (independent of units and robot size)")
    print(f"tightest limit margin: {100 * margins[tightest]:.2f} % ({margins['tightest']}; checked at 1 kHz)")
    for line in clearance_lines(result.info.get("collision")):
        print(line)
    print(f"wrote {args.out}")
    return 0


def with_guessed_masses(model: RobotModel, package_dirs: list[str]) -> RobotModel:
    """``model`` for the torque checks (:func:`~dynid_ros.robot.geometry_inertia.torque_check_model`), its
    warnings printed."""
    model, lines = torque_check_model(model, package_dirs)
    for line in lines:
        print(f"warning: {line}")
    return model


def excited_robot(args: argparse.Namespace) -> RobotModel | FramesRobot:
    """The robot of ``--urdf``/``--dh`` (with the config's ``coupling:``, in motor coordinates) or the config's
    ``robot: frames:``."""
    config = load_config(args.config) if args.config else {}
    if frames_section(config) is not None:
        if args.urdf or args.dh or args.joints:
            raise ConfigError(f"{args.config}: the robot is its frames (robot.frames): no --urdf, --dh or --joints")
        return load_frames_robot(config, str(args.config))
    if not (args.urdf or args.dh):
        raise ConfigError("give the robot: --urdf or --dh (or a --config with robot.frames)")
    coupling = coupling_from_config(config, str(args.config))
    if coupling is None:
        return load_model(urdf=args.urdf, dh=args.dh, joints=args.joints, xacro_args=args.xacro_arg)
    if args.joints and list(args.joints) != list(coupling.motors):
        raise ConfigError(f"--joints {','.join(args.joints)}: with a coupling the trajectory's coordinates are its "
                          f"motors ({','.join(coupling.motors)})")
    model = load_model(urdf=args.urdf, dh=args.dh, joints=list(coupling.joints), xacro_args=args.xacro_arg)
    return apply_coupling(model, coupling)
