"""The whole job in Gazebo (gz sim): the robot with gz_ros2_control, joint_state_broadcaster and
joint_trajectory_controller, then identify.launch.py (action mode, use_sim_time).

    ros2 launch dynid_ros sim_gazebo.launch.py robot:=panda

Needs ros_gz_sim, ros_gz_bridge, gz_ros2_control and ros2_controllers. The URDF gets a
<ros2_control> block (position commands; position, velocity, effort states) and the gz_ros2_control
plugin with config/<robot>_controllers.yaml (dynid_ros.ros.launch_support.gazebo_urdf). Caution: the joint
effort Gazebo reports through gz_ros2_control is unreliable before gz_ros2_control's 2025 fix (it is
not the joint torque the physics applied), so identification from Gazebo data needs a recent
gz_ros2_control; the MuJoCo simulation (sim_mujoco.launch.py) has exact efforts.
"""

from pathlib import Path

from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from dynid_ros.robot.config import load_config
from dynid_ros.robot.resources import robot_file, share_path
from dynid_ros.ros.launch_support import gazebo_urdf
from launch import LaunchDescription

ARGUMENTS = {
    "robot": ("panda", "robot name (panda | ur5e)"),
    "world": ("empty.sdf", "Gazebo world"),
    "autorun": ("true", "run record -> excite -> stop -> identify without service calls"),
}


def launch_robot(context: object) -> list:
    robot = context.launch_configurations["robot"]
    config = load_config(robot_file(robot, "config"))
    joints = config["robot"]["joints"]
    controllers = share_path(f"config/{robot}_controllers.yaml")
    description = gazebo_urdf(Path(robot_file(robot, "urdf")).read_text(), joints, controllers)
    return [
        Node(package="robot_state_publisher", executable="robot_state_publisher", output="screen",
             parameters=[{"robot_description": description, "use_sim_time": True}]),
        Node(package="ros_gz_sim", executable="create", output="screen",
             arguments=["-topic", "robot_description", "-name", robot]),
        Node(package="ros_gz_bridge", executable="parameter_bridge", output="screen",
             arguments=["/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock"]),
        Node(package="controller_manager", executable="spawner", output="screen",
             arguments=["joint_state_broadcaster"]),
        Node(package="controller_manager", executable="spawner", output="screen",
             arguments=["joint_trajectory_controller"]),
    ]


def generate_launch_description() -> LaunchDescription:
    arguments = [DeclareLaunchArgument(name, default_value=default, description=text)
                 for name, (default, text) in ARGUMENTS.items()]
    gazebo = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(PathJoinSubstitution([FindPackageShare("ros_gz_sim"), "launch",
                                                            "gz_sim.launch.py"])),
        launch_arguments={"gz_args": ["-r ", LaunchConfiguration("world")]}.items())
    identify = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(PathJoinSubstitution([FindPackageShare("dynid_ros"), "launch",
                                                            "identify.launch.py"])),
        launch_arguments={"robot": LaunchConfiguration("robot"), "mode": "action", "use_sim_time": "true",
                          "autorun": LaunchConfiguration("autorun")}.items())
    return LaunchDescription([*arguments, gazebo, OpaqueFunction(function=launch_robot), identify])
