"""Identification from a recorded bag: identification_node runs once at start and keeps the identified
URDF and report latched on its topics.

    ros2 launch dynid_ros offline.launch.py robot:=panda bag_path:=run1/ output_dir:=result/

Without ROS at all, ``dynid identify --urdf urdf/panda.urdf --bag run1/ --out result/`` does the same.
"""

from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch_ros.actions import Node

from dynid_ros.ros.launch_support import as_bool, given, run_directory
from launch import LaunchDescription

ARGUMENTS = {
    "robot": ("panda", "robot name (panda | ur5e)"),
    "config_file": ("", "robot config YAML instead of config/<robot>.yaml"),
    "urdf_path": ("", "nominal URDF ('' = the config's robot.urdf)"),
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
    return [Node(package="dynid_ros", executable="identification_node", name="identification_node",
                 output="screen",
                 parameters=[given({"robot": arg("robot"), "config_file": arg("config_file"),
                                    "urdf_path": arg("urdf_path"), "bag_path": arg("bag_path"), "output_dir": out,
                                    "method": arg("method"), "start": arg("start"), "end": arg("end"),
                                    "update_robot_state_publisher": as_bool(arg("update_robot_state_publisher")),
                                    "identify_on_start": True})])]


def generate_launch_description() -> LaunchDescription:
    arguments = [DeclareLaunchArgument(name, description=text) if default is None else
                 DeclareLaunchArgument(name, default_value=default, description=text)
                 for name, (default, text) in ARGUMENTS.items()]
    return LaunchDescription([*arguments, OpaqueFunction(function=launch_nodes)])
