"""The real ros2_control stack of ROS 2 Jazzy (controller_manager, mock_components, joint_state_broadcaster,
joint_trajectory_controller, forward_command_controller) for the tests, on mock hardware.

The stack is the prebuilt tree of the ros2_control folder beside the repository (its ``use_prebuilt.sh VENV``
unpacks it into
``VENV/ros2_control`` and writes ``VENV/ros2_control_env.sh``; ``.ci/run`` does it and sets ``DYNID_ROS2_CONTROL``
to that script). Its programs (``ros2_control_node``, the spawner) and the nodes under test run as subprocesses in
the environment the script sets up (library path, the tree's full control_msgs and controller_manager_msgs); the
test process keeps its own. A clone alone (variable unset, no script in this venv) skips these tests with
``UNSET_REASON``; with the variable set, a missing script fails them.

:func:`mock_urdf` gives any robot description a ``<ros2_control>`` block on ``mock_components/GenericSystem``
(position commands, position and velocity states computed from them: ``calculate_dynamics``), so the controllers
move it exactly as commanded and report the velocity a driver would. :class:`ControlStack` runs the controller
manager and spawns the controllers of a controllers file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from pathlib import Path

import yaml

from support.paths import REPO
from support.ros_helpers import isolate_ros_environment, ros_arg

ENV = "DYNID_ROS2_CONTROL"
UNSET_REASON = (f"{ENV} is not set and this venv has no ros2_control_env.sh (the real ros2_control stack: .ci/run "
                "installs it from the ros2_control folder beside the repository with its use_prebuilt.sh)")

_environment: dict[str, str] | None = None


def env_script() -> Path | None:
    """The stack's environment script: ``$DYNID_ROS2_CONTROL``, else this venv's ``ros2_control_env.sh``."""
    given = os.environ.get(ENV)
    if given:
        return Path(given)
    own = Path(sys.prefix) / "ros2_control_env.sh"
    return own if own.is_file() else None


def require_ros2_control() -> Path:
    """The environment script; skip the calling test when there is none and none is announced, fail when the
    announced one is missing."""
    script = env_script()
    if script is None:
        import pytest

        pytest.skip(UNSET_REASON)
    if not script.is_file():
        raise RuntimeError(f"{ENV}={script}: no such file (run use_prebuilt.sh of the ros2_control folder, see "
                           f".ci/run)")
    return script


def stack_environment() -> dict[str, str]:
    """``os.environ`` with the stack's environment script applied (read once), in this process's isolated DDS
    domain, with this checkout first on PYTHONPATH (the dynid_ros under test)."""
    global _environment
    isolate_ros_environment()
    if _environment is None:
        script = require_ros2_control()
        dump = subprocess.run(["bash", "-c", f". '{script}' && env -0"], capture_output=True, check=True,
                              env=dict(os.environ)).stdout.decode()
        _environment = dict(item.split("=", 1) for item in dump.split("\0") if "=" in item)
    environment = dict(_environment)
    for name in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE", "DYNID_CACHE_DIR"):
        if name in os.environ:
            environment[name] = os.environ[name]
    environment["PYTHONPATH"] = os.pathsep.join([str(REPO), environment.get("PYTHONPATH", "")])
    environment["PYTHONUNBUFFERED"] = "1"
    return environment


def mock_urdf(urdf_text: str, joints: Sequence[str], initial: dict[str, float], velocity_commands: bool = False) -> str:
    """``urdf_text`` with a ``<ros2_control>`` block on mock hardware for ``joints``: position commands (and velocity
    commands when asked), position (starting at ``initial``) and velocity states, computed from the commands
    (``calculate_dynamics``: the velocity state is the difference of successive positions, as a driver's)."""
    root = ET.fromstring(urdf_text)
    for old in root.findall("ros2_control"):
        root.remove(old)
    control = ET.SubElement(root, "ros2_control", name="MockArm", type="system")
    hardware = ET.SubElement(control, "hardware")
    ET.SubElement(hardware, "plugin").text = "mock_components/GenericSystem"
    ET.SubElement(hardware, "param", name="calculate_dynamics").text = "true"
    for name in joints:
        joint = ET.SubElement(control, "joint", name=name)
        ET.SubElement(joint, "command_interface", name="position")
        if velocity_commands:
            ET.SubElement(joint, "command_interface", name="velocity")
        position = ET.SubElement(joint, "state_interface", name="position")
        ET.SubElement(position, "param", name="initial_value").text = f"{float(initial.get(name, 0.0)):.9f}"
        ET.SubElement(joint, "state_interface", name="velocity")
    return ET.tostring(root, encoding="unicode")


def controllers_file(path: Path, joints: Sequence[str], update_rate: int = 100, forward: Iterable[str] = ("position",),
                     jtc: dict | None = None) -> Path:
    """A controllers file: joint_state_broadcaster, joint_trajectory_controller (its parameters updated by ``jtc``)
    and a forward command controller ``forward_<interface>_controller`` per interface of ``forward``
    (forward_command_controller/ForwardCommandController with that ``interface_name``)."""
    manager = {"update_rate": update_rate,
               "joint_state_broadcaster": {"type": "joint_state_broadcaster/JointStateBroadcaster"},
               "joint_trajectory_controller": {"type": "joint_trajectory_controller/JointTrajectoryController"}}
    content = {"controller_manager": {"ros__parameters": manager},
               "joint_trajectory_controller": {"ros__parameters": {
                   "joints": list(joints), "command_interfaces": ["position"],
                   "state_interfaces": ["position", "velocity"], "allow_partial_joints_goal": False,
                   **(jtc or {})}}}
    for interface in forward:
        name = f"forward_{interface}_controller"
        manager[name] = {"type": "forward_command_controller/ForwardCommandController"}
        content[name] = {"ros__parameters": {"joints": list(joints), "interface_name": interface}}
    path.write_text(yaml.safe_dump(content, sort_keys=False))
    return path


DESCRIPTION_PUBLISHER = """
import sys, rclpy
from rclpy.qos import QoSProfile, DurabilityPolicy, ReliabilityPolicy
from std_msgs.msg import String
rclpy.init()
node = rclpy.create_node("robot_description_publisher")
qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
publisher = node.create_publisher(String, "/robot_description", qos)
publisher.publish(String(data=open(sys.argv[1]).read()))
try:
    rclpy.spin(node)
except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
    pass
"""


SWITCH = """
import sys, rclpy
from controller_manager_msgs.srv import SwitchController
rclpy.init()
node = rclpy.create_node("switch_controllers")
client = node.create_client(SwitchController, "/controller_manager/switch_controller")
assert client.wait_for_service(timeout_sec=30), "no /controller_manager/switch_controller"
request = SwitchController.Request(activate_controllers=[c for c in sys.argv[1].split(",") if c],
                                   deactivate_controllers=[c for c in sys.argv[2].split(",") if c],
                                   strictness=SwitchController.Request.STRICT)
future = client.call_async(request)
rclpy.spin_until_future_complete(node, future, timeout_sec=30)
assert future.done() and future.result().ok, f"switch refused: {future.result()}"
"""


class ControlStack:
    """``ros2_control_node`` on a robot description with mock hardware, its controllers spawned, in ``folder``
    (logs there); every process in its own session, ended with SIGINT by :meth:`close`."""

    def __init__(self, folder: Path, urdf_text: str, controllers: Path, joint_states: str = "/joint_states") -> None:
        """``joint_states``: the topic of joint_state_broadcaster, remapped as franka.launch.py does
        (``('joint_states', 'franka/joint_states')`` on ros2_control_node) when not ``/joint_states``."""
        self.folder, self.controllers = folder, controllers
        self.environment = stack_environment()
        self.processes: list[subprocess.Popen] = []
        (folder / "robot.urdf").write_text(urdf_text)
        self._start("robot_description", [sys.executable, "-c", DESCRIPTION_PUBLISHER, str(folder / "robot.urdf")],
                    dict(os.environ))
        self.manager = self._start("ros2_control_node", ["ros2", "run", "controller_manager", "ros2_control_node",
                                                         "--ros-args", "--params-file", str(controllers),
                                                         *_remap("joint_states", joint_states)],
                                   self.environment)

    def _start(self, name: str, command: list[str], environment: dict[str, str]) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "w")
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment,
                                   start_new_session=True)
        self.processes.append(process)
        return process

    def spawn(self, *controllers: str, inactive: bool = False, timeout: float = 60.0) -> None:
        """``spawner`` (controller_manager's, as ``ros2 run controller_manager spawner`` runs it) for
        ``controllers``, loaded and configured, and activated unless ``inactive``."""
        command = [sys.executable, "-m", "controller_manager.spawner", *controllers,
                   "--controller-manager-timeout", "30", *(["--inactive"] if inactive else [])]
        done = subprocess.run(command, env=self.environment, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"spawner {' '.join(controllers)} failed ({done.returncode}): "
                               f"{done.stdout[-2000:]}{done.stderr[-2000:]}\nros2_control_node: {self.log()[-3000:]}")

    def switch(self, activate: Sequence[str] = (), deactivate: Sequence[str] = ()) -> None:
        """``controller_manager/switch_controller`` (strict), as ``ros2 control switch_controllers`` calls it."""
        done = subprocess.run([sys.executable, "-c", SWITCH, ",".join(activate), ",".join(deactivate)],
                              env=self.environment, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"switch_controller failed: {done.stdout}{done.stderr}\n{self.log()[-3000:]}")

    def log(self, name: str = "ros2_control_node") -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")

    def close(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGINT)
        for process in reversed(self.processes):
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _remap(name: str, topic: str) -> list[str]:
    """``-r name:=topic`` for a ROS command line (nothing when ``topic`` is ``/name``)."""
    return [] if topic == f"/{name}" else ["-r", f"{name}:={topic.lstrip('/')}"]


@contextmanager
def control_stack(folder: Path, urdf_text: str, controllers: Path, active: Sequence[str] = (),
                  inactive: Sequence[str] = (), joint_states: str = "/joint_states"):
    """A :class:`ControlStack` with ``joint_state_broadcaster`` and ``active`` spawned active, ``inactive`` loaded
    and configured; closed at the end."""
    stack = ControlStack(folder, urdf_text, controllers, joint_states)
    try:
        stack.spawn("joint_state_broadcaster", *active)
        if inactive:
            stack.spawn(*inactive, inactive=True)
        yield stack
    finally:
        stack.close()


STARTUP_TIMEOUT = 180.0
"""Safety net [s] for what a test waits for from a node's process (its start, its answers, its motion's end): the
test passes on the event, not on a deadline; a process that ends fails the wait at once. On two shared cores under
load, starting a node (Python, rclpy, pinocchio, the robot's collision model) has taken more than 30 s."""


def wait_on(process: subprocess.Popen, predicate: object, what: str, log_path: Path,
            timeout: float = STARTUP_TIMEOUT) -> object:
    """``predicate()``'s first truthy value while ``process`` runs; fails at once (with the end of its log) when the
    process ends first, else after ``timeout`` s."""
    import pytest

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if process.poll() is not None:
            pytest.fail(f"{what}: the node ended (exit code {process.returncode}) first:\n"
                        f"{log_path.read_text(errors='replace')[-3000:]}")
        time.sleep(0.02)
    pytest.fail(f"timed out after {timeout} s waiting for {what}:\n{log_path.read_text(errors='replace')[-3000:]}")


@contextmanager
def node_in_stack(module: str, parameters: dict, log_path: Path):
    """``python -m dynid_ros.ros.<module> --ros-args -p ...`` in the stack's environment (its control_msgs and
    controller_manager_msgs), as a user's node beside ros2_control; SIGINT at the end (it must exit within 15 s)."""
    command = [sys.executable, "-m", f"dynid_ros.ros.{module}", "--ros-args"]
    for name, value in parameters.items():
        command += ["-p", f"{name}:={ros_arg(value)}"]
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                                   env=stack_environment())
        try:
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            time.sleep(0.1)
