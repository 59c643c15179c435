"""Identification from a recorded bag: identification_node runs once at start, publishes the identified
URDF and report (latched) and the launch ends: exit status 0 when the result is written (and, with
``update_robot_state_publisher:=true``, robot_state_publisher was answered), 1 with the reason when the
identification fails (an ``[ERROR]`` line of the node; ``launch_support.job_end_handlers``).

    ros2 launch dynid_ros offline.launch.py robot:=panda bag_path:=run1/ output_dir:=result/
    ros2 launch dynid_ros offline.launch.py urdf_path:=my_arm.urdf bag_path:=run1/   # no shipped config

Without ROS at all, ``dynid identify --urdf urdf/panda.urdf --bag run1/ --out result/`` does the same.
"""

from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch_ros.actions import Node

from dynid_ros.ros.launch_support import (
    ROBOT_ARGUMENT,
    as_bool,
    dynid_executable,
    given,
    job_end_handlers,
    run_directory,
    shipped_robot,
)
from launch import LaunchDescription

ARGUMENTS = {
    "robot": ("", ROBOT_ARGUMENT),
    "config_file": ("", "robot config YAML instead of config/<robot>.yaml"),
    "urdf_path": ("", "nominal URDF or .urdf.xacro, meshes allowed ('' = the config's robot.urdf)"),
    "xacro_args": ("", "arguments of a .urdf.xacro urdf_path, space separated: 'name:=value name2:=value2'"),
    "robot_description_topic": ("", "read the nominal URDF from this topic when urdf_path is '', e.g. "
                                    "/robot_description"),
    "bag_path": (None, "rosbag2 with the joint states (required)"),
    "output_dir": ("", "result directory ('' = dynid_runs/<date>_<time>/result)"),
    "method": ("", "ols | wls | fbpe | bpfc ('' = config, else fbpe)"),
    "start": ("", "window start [s]"),
    "end": ("", "window end [s]"),
    "update_robot_state_publisher": ("false", "set /robot_state_publisher's robot_description when done"),
}


def launch_nodes(context: object) -> list:
    def arg(name: str) -> str:
        return context.launch_configurations[name]

    out = arg("output_dir") or str(run_directory() / "result")
    update_rsp = as_bool(arg("update_robot_state_publisher"))
    node = Node(**dynid_executable("identification_node"), name="identification_node", output="screen",
                parameters=[given({"robot": shipped_robot(arg("robot"), config_file=arg("config_file"),
                                                          urdf_path=arg("urdf_path"),
                                                          robot_description_topic=arg("robot_description_topic")),
                                   "config_file": arg("config_file"),
                                   "urdf_path": arg("urdf_path"), "xacro_args": arg("xacro_args").split() or "",
                                   "robot_description_topic": arg("robot_description_topic"),
                                   "bag_path": arg("bag_path"), "output_dir": out,
                                   "method": arg("method"), "start": arg("start"), "end": arg("end"),
                                   "update_robot_state_publisher": update_rsp, "identify_on_start": True,
                                   "shutdown_when_done": True})])
    # The node's last line: its summary ("..., wrote <dir>"), or what became of robot_state_publisher's update.
    done = r"robot_description" if update_rsp else r", wrote "
    return [node, *job_end_handlers(node, "identification_node", done=done, failed=r"^\[ERROR\]")]


def generate_launch_description() -> LaunchDescription:
    arguments = [DeclareLaunchArgument(name, description=text) if default is None else
                 DeclareLaunchArgument(name, default_value=default, description=text)
                 for name, (default, text) in ARGUMENTS.items()]
    return LaunchDescription([*arguments, OpaqueFunction(function=launch_nodes)])
