"""The whole job on the embedded MuJoCo robot: sim_node + identify.launch.py.

    ros2 launch dynid_ros sim_mujoco.launch.py robot:=panda

sim_node follows JointTrajectory messages (mode topic, the default here) and, where control_msgs is
installed, serves FollowJointTrajectory (mode:=action). The run ends with the identified URDF on
/identification_node/robot_description and in dynid_runs/<date>_<time>/result.
"""

from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from dynid_ros.ros.launch_support import given
from launch import LaunchDescription

ARGUMENTS = {
    "robot": ("panda", "robot name (panda | ur5e)"),
    "urdf_path": ("", "the robot to simulate and identify, URDF or .urdf.xacro, meshes allowed ('' = the "
                      "robot's)"),
    "xacro_args": ("", "arguments of a .urdf.xacro urdf_path, space separated: 'name:=value name2:=value2'"),
    "mode": ("topic", "how excitation_node commands sim_node: topic | action (needs control_msgs)"),
    "rate_hz": ("", "simulation and /joint_states rate ('' = config, else 1000)"),
    "truth": ("", "config (perturbed robot, sensor noise) | nominal ('' = config)"),
    "autorun": ("true", "run record -> excite -> stop -> identify without service calls"),
}


def launch_sim(context: object) -> list:
    def arg(name: str) -> str:
        return context.launch_configurations[name]

    return [Node(package="dynid_ros", executable="sim_node", name="sim_node", output="screen",
                 parameters=[given({"robot": arg("robot"), "rate_hz": arg("rate_hz"), "truth": arg("truth"),
                                    "urdf_path": arg("urdf_path"),
                                    "xacro_args": arg("xacro_args").split() or ""})])]


def generate_launch_description() -> LaunchDescription:
    arguments = [DeclareLaunchArgument(name, default_value=default, description=text)
                 for name, (default, text) in ARGUMENTS.items()]
    identify = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(PathJoinSubstitution([FindPackageShare("dynid_ros"), "launch",
                                                            "identify.launch.py"])),
        launch_arguments={"robot": LaunchConfiguration("robot"), "mode": LaunchConfiguration("mode"),
                          "urdf_path": LaunchConfiguration("urdf_path"),
                          "xacro_args": LaunchConfiguration("xacro_args"),
                          "autorun": LaunchConfiguration("autorun")}.items())
    return LaunchDescription([*arguments, OpaqueFunction(function=launch_sim), identify])
