"""The whole job on the embedded MuJoCo robot: sim_node + identify.launch.py.

    ros2 launch dynid_ros sim_mujoco.launch.py robot:=panda

sim_node follows JointTrajectory messages (mode topic, the default here) and, where control_msgs is
installed, serves FollowJointTrajectory (mode:=action). It starts at ``start_positions`` (default: the
middle of the excitation limits of the robot's config, so the excitation can start at once; a robot without a
config starts where its ``trajectory_file`` starts, a pose ``dynid excite`` made clear of its links and table). The run
ends with the identified URDF on /identification_node/robot_description and in
dynid_runs/<date>_<time>/result, and the launch ends by itself: exit status 0 when done, 1 with the
reason when the run aborts or a node fails (identify.launch.py). Another robot: ``urdf_path:=...`` with a
trajectory made for it by ``dynid excite`` (``trajectory_file:=...``), no shipped config applied unless ``robot:=``
names one (``launch_support.shipped_robot``):

    ros2 launch dynid_ros sim_mujoco.launch.py urdf_path:=my_arm.urdf trajectory_file:=my_arm.yaml

or ``robot_description_topic:=/robot_description`` to simulate and identify the robot published there.
"""

from pathlib import Path

from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from dynid_ros.robot.config import load_config
from dynid_ros.robot.resources import robot_file
from dynid_ros.ros.common import resolve_file
from dynid_ros.ros.launch_support import (
    ROBOT_ARGUMENT,
    dynid_executable,
    early_exit_handlers,
    given,
    parse_positions,
    shipped_robot,
    start_positions,
)
from launch import LaunchDescription

ARGUMENTS = {
    "robot": ("", ROBOT_ARGUMENT),
    "config_file": ("", "robot config YAML instead of config/<robot>.yaml"),
    "urdf_path": ("", "the robot to simulate and identify, URDF or .urdf.xacro, meshes allowed ('' = the "
                      "robot's)"),
    "xacro_args": ("", "arguments of a .urdf.xacro urdf_path, space separated: 'name:=value name2:=value2'"),
    "robot_description_topic": ("", "simulate and identify the URDF published on this topic (transient local) "
                                    "when urdf_path is '', e.g. /robot_description"),
    "start_positions": ("", "start pose of the simulated arm [rad], one value per joint, space or comma "
                            "separated ('' = the middle of the config's excitation limits; a robot without a "
                            "config: where trajectory_file starts)"),
    "mode": ("topic", "how excitation_node commands sim_node: topic | action (needs control_msgs)"),
    "trajectory_file": ("", "excitation trajectory YAML from dynid excite ('' = the config's)"),
    "cycles": ("", "periods of the excitation ('' = config, else 1)"),
    "bag_path": ("", "bag to record ('' = dynid_runs/<date>_<time>/bag)"),
    "output_dir": ("", "identification result ('' = dynid_runs/<date>_<time>/result)"),
    "method": ("", "ols | wls | fbpe | bpfc ('' = config, else fbpe)"),
    "rate_hz": ("", "simulation and /joint_states rate ('' = config, else 1000)"),
    "truth": ("", "config (perturbed robot, sensor noise) | nominal ('' = config)"),
    "autorun": ("true", "run record -> excite -> stop -> identify without service calls, then end"),
}


def shipped_robot_of(arg: object) -> str:
    """The shipped robot of these launch arguments (``launch_support.shipped_robot``)."""
    return shipped_robot(arg("robot"), config_file=arg("config_file"), urdf_path=arg("urdf_path"),
                         robot_description_topic=arg("robot_description_topic"))


def simulation_pose(arg: object) -> list[float] | str:
    """sim_node's ``start_positions``: the launch argument, else the middle of the excitation limits of the robot's
    config, else (no config) where ``trajectory_file`` starts; '' (the node's default) when the robot comes from a
    topic, unknown until the node runs."""
    urdf, config_file, robot = arg("urdf_path"), arg("config_file"), shipped_robot_of(arg)
    if not urdf and arg("robot_description_topic"):
        return parse_positions(arg("start_positions")) or ""
    if not config_file and robot:
        config_file = str(robot_file(robot, "config"))
    config = load_config(resolve_file(config_file, "config_file")) if config_file else {}
    urdf = urdf or (config.get("robot") or {}).get("urdf", "")
    if not urdf:
        return parse_positions(arg("start_positions")) or ""
    trajectory = arg("trajectory_file") and resolve_file(arg("trajectory_file"), "trajectory_file")
    return list(start_positions(arg("start_positions"), resolve_file(urdf, "urdf_path"), config,
                                arg("xacro_args").split(), trajectory=trajectory).values())


def launch_sim(context: object) -> list:
    def arg(name: str) -> str:
        return context.launch_configurations[name]

    sim = Node(**dynid_executable("sim_node"), name="sim_node", output="screen",
               parameters=[given({"robot": shipped_robot_of(arg), "config_file": arg("config_file"),
                                  "rate_hz": arg("rate_hz"), "truth": arg("truth"), "urdf_path": arg("urdf_path"),
                                  "xacro_args": arg("xacro_args").split() or "",
                                  "robot_description_topic": arg("robot_description_topic"),
                                  "start_positions": simulation_pose(arg)})])
    return [sim, *early_exit_handlers([sim])]


def generate_launch_description() -> LaunchDescription:
    arguments = [DeclareLaunchArgument(name, default_value=default, description=text)
                 for name, (default, text) in ARGUMENTS.items()]
    identify = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(Path(__file__).with_name("identify.launch.py"))),
        launch_arguments={"robot": LaunchConfiguration("robot"), "config_file": LaunchConfiguration("config_file"),
                          "urdf_path": LaunchConfiguration("urdf_path"),
                          "xacro_args": LaunchConfiguration("xacro_args"),
                          "robot_description_topic": LaunchConfiguration("robot_description_topic"),
                          "mode": LaunchConfiguration("mode"),
                          "trajectory_file": LaunchConfiguration("trajectory_file"),
                          "cycles": LaunchConfiguration("cycles"), "bag_path": LaunchConfiguration("bag_path"),
                          "output_dir": LaunchConfiguration("output_dir"), "method": LaunchConfiguration("method"),
                          "autorun": LaunchConfiguration("autorun")}.items())
    return LaunchDescription([*arguments, OpaqueFunction(function=launch_sim), identify])
