"""``dynid simulate``: run an excitation trajectory on the embedded MuJoCo robot, record a rosbag2."""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import numpy as np

from dynid_ros.cli.common import add_collision_arguments, add_xacro_argument
from dynid_ros.data.bag_io import write_joint_states
from dynid_ros.data.output_paths import SIMULATED_BAG, TRUTH, check_output
from dynid_ros.data.wrench_io import WRENCH_TOPIC, write_joint_states_and_wrenches
from dynid_ros.errors import ConfigError, TrajectoryError
from dynid_ros.excitation import load_trajectory
from dynid_ros.execution.robot_limits import checked_profile, robot_limits
from dynid_ros.reporting.result_directory import atomic_directory
from dynid_ros.robot.config import config_section, load_config
from dynid_ros.robot.drivers import joint_states_topic
from dynid_ros.robot.workcell import CollisionSettings
from dynid_ros.sim import Simulator, simulate_profile

NAME = "simulate"
HELP = "simulate an excitation trajectory on the embedded MuJoCo robot and record its joint states to a rosbag2"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``dynid simulate`` arguments."""
    parser.add_argument("--urdf", required=True,
                        help="the robot to simulate (e.g. a truth URDF); the config's simulation.truth is applied "
                             "on top of it, the controller uses it as its nominal model")
    add_xacro_argument(parser)
    parser.add_argument("--trajectory", required=True, help="excitation trajectory file (dynid excite)")
    parser.add_argument("--bag", required=True, help="output rosbag2 directory: new, or a bag dynid simulate wrote "
                        "(rewritten); never an existing directory of anything else")
    parser.add_argument("--cycles", type=int, default=None, help="periods of the excitation (default 1)")
    parser.add_argument("--noise", type=float, default=None,
                        help="torque sensor noise standard deviation [N m] (default: the config's, else 0)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the truth perturbation and the noise")
    parser.add_argument("--config", default=None,
                        help="robot config YAML (section 'simulation': truth, controller, timestep, start; "
                             "'excitation': limits and margins; 'collision': the clearance kept from the robot's own "
                             "links and its workcell)")
    add_collision_arguments(parser)
    parser.add_argument("--topic", default=None,
                        help="JointState topic (default: the config's identification.topic, else the full-rate topic "
                             "of its robot.driver, else /joint_states)")
    parser.add_argument("--storage", choices=("mcap", "sqlite3"), default="mcap", help="bag storage (default mcap)")
    parser.add_argument("--ft-sensor-frame", default=None, metavar="FRAME",
                        help="a URDF frame on a moving link (e.g. the flange): a simulated 6-axis force/torque sensor "
                             "there; its wrenches (geometry_msgs/WrenchStamped, frame_id FRAME, noise-free) go into "
                             "the bag on --wrench-topic, for dynid identify-body")
    parser.add_argument("--wrench-topic", default=WRENCH_TOPIC,
                        help=f"topic of the sensor's wrenches in the bag (default {WRENCH_TOPIC})")
    parser.add_argument("--truth-out", default=None,
                        help="directory to write the ground truth to: truth.urdf and truth.yaml (parameter vector)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                        help="show a progress bar (default on)")


def run(args: argparse.Namespace) -> int:
    """Simulate the checked trajectory in MuJoCo and record the joint states to ``--bag``; the exit code."""
    if args.noise is not None and not args.noise >= 0:
        raise ConfigError(f"--noise must be >= 0, got {args.noise}")
    inputs = (args.urdf, args.trajectory, args.config)
    bag = check_output(args.bag, SIMULATED_BAG, inputs, flag="--bag")
    if args.truth_out:
        truth_out = check_output(args.truth_out, TRUTH, (*inputs, args.bag), flag="--truth-out")
        if truth_out in bag.parents:
            raise ConfigError(f"--bag {args.bag} is inside --truth-out {args.truth_out}: choose separate paths")
    section = config_section(args.config, "simulation")
    cycles = args.cycles if args.cycles is not None else section.get("cycles", 1)
    excitation = load_trajectory(args.trajectory)
    started = time.perf_counter()
    config = load_config(args.config)
    args.topic = args.topic or joint_states_topic(config)  # what the robot's driver publishes, as identify reads it
    settings = CollisionSettings.from_config(config.get("collision"), config_path=args.config,
                                             package_dirs=args.package_dir)
    sim = Simulator.from_config(args.urdf, section, seed=args.seed, noise=args.noise,
                                joints=excitation.trajectory.joints, xacro_args=args.xacro_arg,
                                ft_sensor_frame=args.ft_sensor_frame, collision=settings)
    collision = sim.collision  # the one the check refuses with is the one MuJoCo simulates
    robot = robot_limits(sim.model, config_section(args.config, "excitation"), source=args.urdf,
                         collision=collision)
    trajectory = excitation.trajectory
    robot.indices(trajectory.joints)  # a joint the robot does not have: refused
    if tuple(trajectory.joints) != tuple(sim.joints):
        raise TrajectoryError(f"{args.trajectory}: joints {', '.join(trajectory.joints)} differ from the robot's "
                              f"{', '.join(sim.joints)} (same names in the same order needed)")
    q_start = _start_position(section.get("start"), trajectory, len(sim.joints))
    try:  # the robot's own limits (its collision geometry too) are the authority, on the whole motion at 1 kHz
        profile = checked_profile(excitation, robot, q_start, cycles)
    except TrajectoryError as err:
        raise TrajectoryError(f"{args.trajectory}: {err}") from err
    t, q_ref, dq_ref, ddq_ref = profile.sample_at_rate(1.0 / sim.timestep)
    series = simulate_profile(sim, t, q_ref, dq_ref, ddq_ref, progress=args.progress)
    simulated = time.perf_counter() - started
    if sim.ft_sensor is None:
        write_joint_states(bag, series, topic=args.topic, storage=args.storage, overwrite=True)
    else:
        _write_with_wrenches(bag, series, sim.ft_sensor.name, args)
    if args.truth_out:
        _write_truth(sim, Path(args.truth_out))
    info = series.info
    print(f"simulated {len(series)} samples ({series.t[-1] - series.t[0]:.2f} s at {1 / sim.timestep:g} Hz, "
          f"{cycles} cycle(s)) in {simulated:.1f} s")
    print("tracking error rms [mrad]: " + ", ".join(f"{1e3 * v:.2f}" for v in info["tracking_rms"]))
    print("samples with static friction [%]: " + ", ".join(f"{100 * v:.1f}" for v in info["sticking"]))
    if sim.contacts is not None:
        print(sim.contacts.line())
    if info["saturated_steps"]:
        print(f"warning: the controller hit the effort limits in {info['saturated_steps']} steps")
    print(f"wrote {bag}" + (f" and {args.truth_out}/" if args.truth_out else ""))
    return 0


def _write_with_wrenches(bag: Path, series: object, frame: str, args: argparse.Namespace) -> None:
    """The joint states and the sensor's wrenches in one new bag; an earlier bag of dynid simulate at ``bag``
    (:func:`check_output` let only such a one through) is replaced once the new one is complete."""
    if args.storage != "mcap":
        raise ConfigError("--ft-sensor-frame writes an MCAP bag: leave --storage at mcap")
    fresh = bag.with_name(f".{bag.name}.new")
    if fresh.exists():
        shutil.rmtree(fresh)  # a leftover of an interrupted run of ours
    write_joint_states_and_wrenches(fresh, series, series.t, series.info["wrench"], frame, args.wrench_topic,
                                    args.topic)
    if bag.exists():
        shutil.rmtree(bag)
    fresh.rename(bag)


def _start_position(value: object, trajectory: object, n: int) -> np.ndarray:
    """The config's ``simulation.start``, or the trajectory's first position."""
    if value is None:
        return trajectory.evaluate(np.zeros(1))[0][0]
    try:
        start = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"simulation.start must be {n} numbers, got {value!r}") from err
    if start.shape != (n,):
        raise ConfigError(f"simulation.start has {start.size} values for {n} joints")
    return start


def _write_truth(sim: object, out: Path) -> None:
    """``truth.urdf`` and ``truth.yaml`` (the true parameter vector, dynid_ros.robot.parameters layout), atomically."""
    import yaml


    layout = sim.model.layout_for(("viscous", "coulomb", "offset"), armature=True)
    delta = sim.truth.parameter_vector(sim.model, layout)
    values = sim.truth.joint_values(sim.model)
    content = {
        "joints": list(layout.joints), "links": list(layout.links),
        "parameter_vector": {"names": layout.names, "values": [float(v) for v in delta]},
        "sensor": {"noise": values["noise"].tolist(), "bias": values["bias"].tolist()},
        "truth": {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(sim.truth).items()},
    }

    def fill(work: Path) -> None:
        sim.write_truth_urdf(work / "truth.urdf")
        (work / "truth.yaml").write_text(yaml.safe_dump(content, sort_keys=False))

    atomic_directory(out, fill, TRUTH)
