"""Static checks of launch/*.launch.py (test_launch_run.py runs them, where the launch stack is installed):
they compile; every dynid_ros executable is a console script whose ``main`` exists; every parameter a
launch file gives a dynid_ros node is declared by that node; other packages' executables and included
launch files belong to packages in package.xml; every file they name exists for every shipped robot;
included dynid_ros launch files declare the arguments passed to them. Also the config ``nodes:``
sections, package.xml, the simulated arm's start pose and the Gazebo URDF helper."""

import ast
import importlib
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dynid_ros.errors import ConfigError, ModelError
from dynid_ros.robot.config import load_config
from dynid_ros.robot.resources import ROBOTS
from dynid_ros.ros.common import CONFIG_PARAMS, resolve_file
from dynid_ros.ros.launch_support import gazebo_urdf, given, parse_positions, shipped_robot, start_positions

from support.ros_helpers import ROOT, assert_physically_consistent

LAUNCH_FILES = sorted((ROOT / "launch").glob("*.launch.py"))
ROS_MANAGED = {"use_sim_time"}  # declared by rclpy itself


def console_scripts() -> dict[str, str]:
    text = (ROOT / "setup.py").read_text()
    return dict(re.findall(r'"(\w+)\s*=\s*([\w.]+):main"', text))


def exec_depends() -> set[str]:
    return {e.text for e in ET.parse(ROOT / "package.xml").getroot().findall("exec_depend")}


def declared_parameters(executable: str) -> set[str]:
    module = importlib.import_module(console_scripts()[executable])
    return {p.name for p in module.PARAMETERS} | {p.name for p in CONFIG_PARAMS} | ROS_MANAGED


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def node_executable(call: ast.Call) -> tuple[str, str]:
    """(package, executable) of a ``Node(package=..., executable=...)`` or ``Node(**dynid_executable("x"))``."""
    for item in call.keywords:
        if item.arg is None and isinstance(item.value, ast.Call) and call_name(item.value) == "dynid_executable":
            return "dynid_ros", item.value.args[0].value
    return keyword(call, "package").value, keyword(call, "executable").value


def call_name(call: ast.Call) -> str:
    return call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")


def dict_keys(node: ast.AST, assignments: dict[str, ast.expr]) -> set[str]:
    """String keys of every dict literal in ``node``, following names to their assignment."""
    keys: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Dict):
            keys |= {k.value for k in sub.keys if isinstance(k, ast.Constant)}
        elif isinstance(sub, ast.Name) and sub.id in assignments:
            keys |= dict_keys(assignments[sub.id], {})
    return keys


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def assignments_of(tree: ast.Module) -> dict[str, ast.expr]:
    return {t.id: node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)}


def launch_arguments(tree: ast.Module) -> set[str]:
    """Names of the launch arguments a file declares (its ARGUMENTS mapping)."""
    value = assignments_of(tree).get("ARGUMENTS")
    return {k.value for k in value.keys} if isinstance(value, ast.Dict) else set()


def test_the_four_launch_files_exist_compile_and_are_installed():
    assert [p.name for p in LAUNCH_FILES] == ["identify.launch.py", "offline.launch.py", "sim_gazebo.launch.py",
                                              "sim_mujoco.launch.py"]
    for path in LAUNCH_FILES:
        compile(path.read_text(), str(path), "exec")
        tree = parse(path)
        assert any(isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description" for n in tree.body)
    assert 'glob("launch/*.launch.py")' in (ROOT / "setup.py").read_text()


def test_console_scripts_point_at_node_mains():
    scripts = console_scripts()
    assert {"sim_node", "excitation_node", "recorder_node", "identification_node", "orchestrator_node"} <= set(scripts)
    for name, module in scripts.items():
        assert callable(importlib.import_module(module).main), name


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_nodes_use_existing_executables_and_declared_parameters(path):
    tree = parse(path)
    assignments = assignments_of(tree)
    depends = exec_depends()
    nodes = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and call_name(c) == "Node"]
    assert nodes, "no Node in the launch file"
    for call in nodes:
        package, executable = node_executable(call)
        if package != "dynid_ros":
            assert package in depends, f"{path.name}: package {package} is not an exec_depend in package.xml"
            continue
        assert executable in console_scripts(), f"{path.name}: {executable} is not a console script"
        parameters = keyword(call, "parameters")
        given_keys = dict_keys(parameters, assignments) if parameters is not None else set()
        unknown = given_keys - declared_parameters(executable)
        assert not unknown, f"{path.name}: {executable} does not declare {sorted(unknown)}"
        name = keyword(call, "name")
        assert name is None or name.value == executable  # the services' names (/<node>/start) depend on it


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_included_launch_files_and_their_arguments_exist(path):
    tree = parse(path)
    for call in (c for c in ast.walk(tree) if isinstance(c, ast.Call) and call_name(c) == "PathJoinSubstitution"):
        parts = call.args[0].elts
        package = parts[0].args[0].value  # FindPackageShare("<package>")
        relative = "/".join(p.value for p in parts[1:])
        if package == "dynid_ros":
            assert (ROOT / relative).is_file(), f"{path.name}: {relative} does not exist"
        else:
            assert package in exec_depends(), f"{path.name}: {package} is not in package.xml"
    for call in (c for c in ast.walk(tree) if isinstance(c, ast.Call) and call_name(c) == "IncludeLaunchDescription"):
        sibling = [c.args[0].value for c in ast.walk(call) if isinstance(c, ast.Call) and call_name(c) == "with_name"]
        if not sibling:  # another package's: PythonLaunchDescriptionSource(PathJoinSubstitution([...]))
            continue
        assert (ROOT / "launch" / sibling[0]).is_file(), f"{path.name}: includes {sibling[0]}, not in launch/"
        included = parse(ROOT / "launch" / sibling[0])  # Path(__file__).with_name(...): installed beside this file
        passed = dict_keys(keyword(call, "launch_arguments"), {})
        assert passed <= launch_arguments(included), f"{path.name}: {passed - launch_arguments(included)}"


@pytest.mark.parametrize("robot", ROBOTS)
def test_files_named_in_launch_files_exist_for_every_robot(robot):
    pattern = re.compile(r"^(config|urdf|launch)/[\w{}.-]+$")
    found = 0
    for path in LAUNCH_FILES:
        for node in ast.walk(parse(path)):
            text = None
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            elif isinstance(node, ast.JoinedStr):  # f"config/{robot}_controllers.yaml"
                text = "".join(v.value if isinstance(v, ast.Constant) else "{robot}" for v in node.values)
            if text and pattern.match(text):
                found += 1
                assert (ROOT / text.replace("{robot}", robot)).is_file(), f"{path.name}: {text} for {robot}"
    assert found >= 1
    for kind in ("urdf", "config"):  # robot_file(robot, kind) in the launch files
        assert (ROOT / kind / f"{robot}{'.urdf' if kind == 'urdf' else '.yaml'}").is_file()


@pytest.mark.parametrize("robot", ROBOTS)
def test_config_nodes_sections_use_declared_parameters_and_existing_files(robot):
    nodes = load_config(ROOT / "config" / f"{robot}.yaml")["nodes"]
    assert set(nodes) <= set(console_scripts())
    for node, values in nodes.items():
        unknown = set(values) - declared_parameters(node)
        assert not unknown, f"config/{robot}.yaml nodes.{node}: {sorted(unknown)}"
    from dynid_ros.excitation.trajectory_file import load_trajectory

    trajectory = load_trajectory(resolve_file(nodes["excitation_node"]["trajectory_file"], "trajectory_file"))
    assert list(trajectory.trajectory.joints) == load_config(ROOT / "config" / f"{robot}.yaml")["robot"]["joints"]
    controllers = load_config(ROOT / "config" / f"{robot}_controllers.yaml")
    jtc = controllers["joint_trajectory_controller"]["ros__parameters"]
    assert jtc["joints"] == list(trajectory.trajectory.joints)


@pytest.mark.parametrize("robot", ROBOTS)
def test_launched_trajectory_controllers_decelerate_on_cancel_at_the_stops_deceleration(robot):
    """The controllers the package launches (config/<robot>_controllers.yaml) decelerate a canceled goal at dynid's
    stop deceleration (0.8 x the robot's acceleration limits) instead of holding at once from full speed."""
    from dynid_ros.execution.excitation_supervisor import stop_deceleration
    from dynid_ros.execution.stop_motion import cancel_constraints

    from support.ros_helpers import robot_limits_of

    jtc = load_config(ROOT / "config" / f"{robot}_controllers.yaml")["joint_trajectory_controller"]["ros__parameters"]
    assert "velocity" in jtc["state_interfaces"]  # the controller decelerates from the measured velocity
    constraints = jtc["constraints"]
    assert constraints == cancel_constraints(jtc["joints"], stop_deceleration(robot_limits_of(robot), jtc["joints"]))
    assert constraints["decelerate_on_cancel"] is True
    assert all(constraints[j]["max_deceleration_on_cancel"] > 0 for j in jtc["joints"])


def test_package_xml_names_every_ros_import_of_the_nodes():
    depends = exec_depends()
    assert {"python3-cvxpy-pip", "python3-rosbags-pip", "pinocchio", "control_msgs", "rclpy"} <= depends
    ros_packages = {"rclpy", "std_msgs", "std_srvs", "sensor_msgs", "trajectory_msgs", "control_msgs",
                    "rcl_interfaces", "builtin_interfaces", "ament_index_python"}
    sources = [*(ROOT / "dynid_ros" / "ros").glob("*.py"), ROOT / "dynid_ros" / "robot" / "resources.py", *LAUNCH_FILES]
    for source in sources:
        for node in ast.walk(parse(source)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for top in (n.split(".")[0] for n in names):
                    if top in ros_packages | {"launch", "launch_ros"}:
                        assert top in depends, f"{source.name} imports {top}, not in package.xml"


def test_gazebo_urdf_adds_ros2_control_and_loads(tmp_path):
    from dynid_ros.robot.resources import robot_file

    for robot in ROBOTS:
        joints = load_config(robot_file(robot, "config"))["robot"]["joints"]
        text = gazebo_urdf(robot_file(robot, "urdf").read_text(), joints, "/x/controllers.yaml")
        root = ET.fromstring(text)
        control = root.find("ros2_control")
        assert control.find("hardware/plugin").text == "gz_ros2_control/GazeboSimSystem"
        assert [j.get("name") for j in control.findall("joint")] == joints
        assert {s.get("name") for s in control.find("joint").findall("state_interface")} == {
            "position", "velocity", "effort"}
        assert root.find("gazebo/plugin").get("filename") == "gz_ros2_control-system"
        assert root.find("gazebo/plugin/parameters").text == "/x/controllers.yaml"
        assert any(j.find("parent").get("link") == "world" for j in root.findall("joint"))
        assert_physically_consistent(text)  # still a valid robot for pinocchio
    with pytest.raises(ModelError, match="no joint"):
        gazebo_urdf(robot_file("panda", "urdf").read_text(), ["nope"], "c.yaml")


def test_empty_launch_arguments_fall_back_to_defaults():
    assert given({"a": "", "b": "x", "c": False}) == {"b": "x", "c": False}


@pytest.mark.parametrize(("arguments", "robot"), [
    ({}, "panda"),  # nothing names a robot: the default one
    ({"robot": "ur5e"}, "ur5e"),
    ({"urdf_path": "my_arm.urdf"}, ""),  # a robot without a shipped config: never the Panda's
    ({"robot_description_topic": "/robot_description"}, ""),
    ({"config_file": "my_arm.yaml"}, ""),
    ({"robot": "panda", "urdf_path": "my_panda.urdf"}, "panda"),  # named: its config applies to the given URDF
    ({"robot": " ", "urdf_path": " "}, "panda"),  # blanks are empty arguments
])
def test_a_shipped_config_applies_only_when_its_robot_is_named_or_no_robot_is_given(arguments, robot):
    assert shipped_robot(arguments.pop("robot", ""), **arguments) == robot


@pytest.mark.parametrize("robot", ROBOTS)
def test_default_start_pose_is_inside_the_excitation_limits(robot):
    """The start_positions default: the middle of the config's excitation limits, where the excitation may start
    (all zeros, or the middle of the URDF range, is outside: UR5e shoulder_lift_joint, Panda joint 4)."""
    import numpy as np

    from dynid_ros.excitation.limits import limits_from_model
    from dynid_ros.robot.model import load_model
    from dynid_ros.robot.resources import robot_file

    config = load_config(robot_file(robot, "config"))
    pose = start_positions("", robot_file(robot, "urdf"), config)
    model = load_model(urdf=robot_file(robot, "urdf"))
    assert list(pose) == list(model.joints)
    limits = limits_from_model(model, config).position
    q = np.array(list(pose.values()))
    assert np.all((limits[:, 0] < q) & (q < limits[:, 1]))
    assert not np.all((limits[:, 0] < 0) & (0 < limits[:, 1]))  # all zeros would not do


def test_start_positions_argument_is_checked():
    from dynid_ros.robot.resources import robot_file

    assert parse_positions("[0, -1.5, 0.25]") == parse_positions("0 -1.5 0.25") == [0.0, -1.5, 0.25]
    with pytest.raises(ConfigError, match="start_positions 'a b'"):
        parse_positions("a b")
    with pytest.raises(ConfigError, match="start_positions has 2 values; the robot has 6 joints"):
        start_positions("0 1", robot_file("ur5e", "urdf"))
    assert list(start_positions("0 -1 0 0 0 0", robot_file("ur5e", "urdf")).values()) == [0, -1, 0, 0, 0, 0]


def test_a_robot_without_a_config_starts_where_its_trajectory_starts():
    """No config: the simulated arm starts at the trajectory's q(0) (the excitation's start, which excite keeps clear
    of the table), not at the middle of the URDF's ranges (the UR5's all zeros: its wrist 4.8 cm into the table);
    with the robot's config, the middle of the config's excitation limits as before."""
    import numpy as np

    from dynid_ros.excitation.trajectory_file import load_trajectory
    from dynid_ros.robot.resources import robot_file

    from support.robots import DATA, UR5_ERD, example_robot_urdf

    trajectory = DATA / "ur5e_short_excitation.yaml"
    fourier = load_trajectory(trajectory).trajectory
    expected = dict(zip(fourier.joints, fourier.evaluate(np.zeros(1))[0][0]))
    pose = start_positions("", example_robot_urdf(UR5_ERD), {}, trajectory=trajectory)
    assert pose == pytest.approx(expected, abs=1e-6)
    assert start_positions("", example_robot_urdf(UR5_ERD), {}) == dict.fromkeys(fourier.joints, 0.0)
    config = load_config(robot_file("ur5e", "config"))
    assert start_positions("", robot_file("ur5e", "urdf"), config, trajectory=trajectory) == \
        start_positions("", robot_file("ur5e", "urdf"), config)
    assert start_positions("0 -1 0 0 0 0", example_robot_urdf(UR5_ERD), {}, trajectory=trajectory) == \
        dict(zip(fourier.joints, [0, -1, 0, 0, 0, 0]))
