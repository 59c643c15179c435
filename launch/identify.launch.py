"""Identify a robot through its controller: excitation_node + recorder_node + identification_node.

    ros2 launch dynid_ros identify.launch.py robot:=panda controller_name:=joint_trajectory_controller
    ros2 launch dynid_ros identify.launch.py urdf_path:=my_arm.urdf trajectory_file:=my_arm.yaml

With ``autorun:=true`` (default) orchestrator_node runs record -> excite -> stop -> identify at once
and the launch ends with it: exit status 0 when the job is done, 1 with the reason when it aborts
(``launch_support.job_end_handlers``), or when a node ends before that. With ``autorun:=false`` the
nodes wait for ``ros2 service call /<node>/start std_srvs/srv/Trigger`` and the launch runs until Ctrl-C.
Empty arguments fall back to the ``nodes:`` section of config/<robot>.yaml, then the node defaults. A shipped
config applies only when its robot is named, or when nothing names a robot (then the Panda's):
``urdf_path:=my_arm.urdf`` alone is a robot without a shipped config (``launch_support.shipped_robot``).
The robot description (``urdf_path`` with ``xacro_args``, or ``robot_description_topic``) goes to the
excitation node, whose limits are the authority, and to the identification node alike.
"""

from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch_ros.actions import Node

from dynid_ros.ros.launch_support import (
    ROBOT_ARGUMENT,
    as_bool,
    dynid_executable,
    early_exit_handlers,
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
    "controller_name": ("", "trajectory controller ('' = config, else joint_trajectory_controller)"),
    "mode": ("", "action | topic | stream ('' = config, else action)"),
    "trajectory_file": ("", "excitation trajectory YAML ('' = the config's)"),
    "cycles": ("", "periods of the excitation ('' = config, else 1)"),
    "bag_path": ("", "bag to record ('' = dynid_runs/<date>_<time>/bag)"),
    "output_dir": ("", "identification result ('' = dynid_runs/<date>_<time>/result)"),
    "method": ("", "ols | wls | fbpe | bpfc ('' = config, else fbpe)"),
    "use_sim_time": ("false", "use /clock (true in Gazebo)"),
    "autorun": ("true", "run record -> excite -> stop -> identify without service calls"),
    "update_robot_state_publisher": ("false", "set /robot_state_publisher's robot_description when done"),
}


def launch_nodes(context: object) -> list:
    def arg(name: str) -> str:
        return context.launch_configurations[name]

    run = run_directory()
    bag = arg("bag_path") or str(run / "bag")
    out = arg("output_dir") or str(run / "result")
    robot_name = shipped_robot(arg("robot"), config_file=arg("config_file"), urdf_path=arg("urdf_path"),
                               robot_description_topic=arg("robot_description_topic"))
    common = given({"robot": robot_name, "config_file": arg("config_file"),
                    "use_sim_time": as_bool(arg("use_sim_time"))})
    robot = given({"urdf_path": arg("urdf_path"), "xacro_args": arg("xacro_args").split() or "",
                   "robot_description_topic": arg("robot_description_topic")})
    update_rsp = as_bool(arg("update_robot_state_publisher"))
    nodes = [
        Node(**dynid_executable("excitation_node"), name="excitation_node", output="screen",
             parameters=[common, robot, given({"trajectory_file": arg("trajectory_file"),
                                               "controller_name": arg("controller_name"), "mode": arg("mode"),
                                               "cycles": arg("cycles")})]),
        Node(**dynid_executable("recorder_node"), name="recorder_node", output="screen",
             parameters=[common, given({"bag_path": bag})]),
        Node(**dynid_executable("identification_node"), name="identification_node", output="screen",
             parameters=[common, robot, given({"bag_path": bag, "output_dir": out, "method": arg("method"),
                                               "update_robot_state_publisher": update_rsp})]),
    ]
    if not as_bool(arg("autorun")):
        return [*nodes, *early_exit_handlers(nodes)]
    orchestrator = Node(**dynid_executable("orchestrator_node"), name="orchestrator_node",
                        output="screen", parameters=[common, {"shutdown_when_done": True}])
    return [*nodes, orchestrator, *early_exit_handlers(nodes), *job_end_handlers(orchestrator, "orchestrator_node")]


def generate_launch_description() -> LaunchDescription:
    arguments = [DeclareLaunchArgument(name, default_value=default, description=text)
                 for name, (default, text) in ARGUMENTS.items()]
    return LaunchDescription([*arguments, OpaqueFunction(function=launch_nodes)])
