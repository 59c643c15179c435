"""The whole job in Gazebo (gz sim): the robot with gz_ros2_control, joint_state_broadcaster and
joint_trajectory_controller, then identify.launch.py (action mode, use_sim_time).

    ros2 launch dynid_ros sim_gazebo.launch.py robot:=panda

Needs ros_gz_sim, ros_gz_bridge, gz_ros2_control and ros2_controllers. The URDF gets a
<ros2_control> block (position commands; position, velocity, effort states) starting at
``start_positions`` (default: the middle of the config's excitation limits; all zeros would start the
Panda outside its joint 4 range) and the gz_ros2_control plugin with config/<robot>_controllers.yaml
(dynid_ros.ros.launch_support.gazebo_urdf). The launch ends with the identification (identify.launch.py:
exit status 0 when done, 1 with the reason when aborted). Caution: the joint
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
from dynid_ros.ros.launch_support import gazebo_urdf, start_positions
from launch import LaunchDescription

ARGUMENTS = {
    "robot": ("panda", "robot name (panda | ur5e)"),
    "world": ("empty.sdf", "Gazebo world"),
    "start_positions": ("", "start pose [rad], one value per joint, space or comma separated ('' = the middle of "
                            "the config's excitation limits)"),
    "trajectory_file": ("", "excitation trajectory YAML from dynid excite ('' = the config's)"),
    "cycles": ("", "periods of the excitation ('' = config, else 1)"),
    "bag_path": ("", "bag to record ('' = dynid_runs/<date>_<time>/bag)"),
    "output_dir": ("", "identification result ('' = dynid_runs/<date>_<time>/result)"),
    "method": ("", "ols | wls | fbpe | bpfc ('' = config, else fbpe)"),
    "autorun": ("true", "run record -> excite -> stop -> identify without service calls, then end"),
}


def launch_robot(context: object) -> list:
    robot = context.launch_configurations["robot"]
    config = load_config(robot_file(robot, "config"))
    joints = config["robot"]["joints"]
    controllers = share_path(f"config/{robot}_controllers.yaml")
    urdf = robot_file(robot, "urdf")
    pose = start_positions(context.launch_configurations["start_positions"], urdf, config)
    description = gazebo_urdf(Path(urdf).read_text(), joints, controllers, pose)
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
        PythonLaunchDescriptionSource(str(Path(__file__).with_name("identify.launch.py"))),
        launch_arguments={"robot": LaunchConfiguration("robot"), "mode": "action", "use_sim_time": "true",
                          "trajectory_file": LaunchConfiguration("trajectory_file"),
                          "cycles": LaunchConfiguration("cycles"), "bag_path": LaunchConfiguration("bag_path"),
                          "output_dir": LaunchConfiguration("output_dir"), "method": LaunchConfiguration("method"),
                          "autorun": LaunchConfiguration("autorun")}.items())
    return LaunchDescription([*arguments, gazebo, OpaqueFunction(function=launch_robot), identify])
