"""Helpers of the launch files in ``launch/``.

Plain Python (no ``launch`` import, tested without the launch stack): :func:`given` drops launch
arguments left empty, so a node falls back to its config file and defaults; :func:`shipped_robot` is the
shipped robot whose config a launch applies (the one named, else the default robot only when nothing else
names a robot: ``urdf_path:=my_arm.urdf`` alone is a robot without a shipped config); :func:`run_directory`
names a fresh directory per run; :func:`start_positions` is the simulated arm's start pose (the
``start_positions`` launch argument, or the middle of the excitation limits of the robot's config; without a
config, where the excitation trajectory starts: :func:`trajectory_start`);
:func:`gazebo_urdf` adds what gz_ros2_control needs to a URDF (a ``<ros2_control>`` block with
position commands and position/velocity/effort states, the ``gz_ros2_control-system`` plugin with
the controllers file, and a fixed joint to the world).

With ``launch`` (imported inside the functions: the launch stack is optional for the core):
:func:`job_end_handlers` makes a launch end itself, exit status 0 when the job is done and 1 with the
reason when it fails (see its docstring).
"""

from __future__ import annotations

import re
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from dynid_ros.errors import ConfigError, DynidError, ModelError
from dynid_ros.excitation.trajectory_file import load_trajectory
from dynid_ros.robot.model import load_model
from dynid_ros.robot.urdf_document import read_urdf
from dynid_ros.sim.trajectory_controller import config_start_pose


def given(parameters: Mapping[str, object]) -> dict:
    """The parameters whose value is not an empty string (empty launch arguments mean "default")."""
    return {name: value for name, value in parameters.items() if value != ""}


DEFAULT_ROBOT = "panda"
"""The robot a launch runs when no launch argument names one (no robot, config_file, urdf_path or
robot_description_topic)."""


ROBOT_ARGUMENT = (f"shipped robot (panda | ur5e): its config/<robot>.yaml and urdf/<robot>.urdf; unset: "
                  f"{DEFAULT_ROBOT}, unless urdf_path, robot_description_topic or config_file gives the robot (a "
                  f"robot without a shipped config runs with defaults derived from its URDF)")
"""The ``robot`` launch argument's description (:func:`shipped_robot`)."""


def shipped_robot(robot: str, *, config_file: str = "", urdf_path: str = "", robot_description_topic: str = "") -> str:
    """The shipped robot (``config/<robot>.yaml``, ``urdf/<robot>.urdf``) a launch applies: ``robot`` when named;
    else :data:`DEFAULT_ROBOT` when no other argument says which robot this is; else ``''``: the robot given by
    ``urdf_path``, ``robot_description_topic`` or ``config_file`` runs with its own config or with the defaults
    derived from its URDF, never with another robot's config (whose joints it does not have).

    So ``urdf_path:=my_arm.urdf`` alone needs no ``robot:=''`` (which a shell turns into ``robot:=``, a malformed
    launch argument), and ``robot:=panda urdf_path:=my_panda.urdf`` still applies the Panda's config.
    """
    robot = str(robot).strip()
    if robot:
        return robot
    if any(str(value).strip() for value in (config_file, urdf_path, robot_description_topic)):
        return ""
    return DEFAULT_ROBOT


def run_directory(root: str = "dynid_runs") -> Path:
    """``<root>/<date>_<time>``: where one launch puts its bag and result."""
    return Path(root) / time.strftime("%Y%m%d_%H%M%S")


def as_bool(text: str) -> bool:
    """A launch argument as a bool: 1, true, yes or on (any case) is True."""
    return str(text).strip().lower() in ("1", "true", "yes", "on")


def parse_positions(text: str, what: str = "start_positions") -> list[float]:
    """``"0 -1.2 0.5"`` or ``"[0, -1.2, 0.5]"`` -> floats; ConfigError naming the bad entry."""
    items = [item for item in str(text).strip().strip("[]").replace(",", " ").split() if item]
    try:
        return [float(item) for item in items]
    except ValueError as err:
        raise ConfigError(f"{what} {text!r}: expected joint positions [rad] separated by spaces or commas") from err


def start_positions(text: str, urdf: str | Path, config: Mapping | None = None,
                    xacro_args: Sequence[str] = (), trajectory: str | Path | None = None) -> dict[str, float]:
    """The start pose of the simulated arm, ``{joint: position}`` for each joint it simulates (the URDF's movable
    joints but locked end-effector and mimic joints, in the URDF's order).

    ``text`` (the ``start_positions`` launch argument) when given; otherwise what sim_node starts from
    without one (:func:`dynid_ros.sim.trajectory_controller.config_start_pose`: the config's
    ``simulation.start``, else the middle of each joint's excitation position range), so the excitation can
    start without first leaving a forbidden region (UR5e: shoulder_lift_joint in [-2.95, -0.2]; Panda: joint 4
    below zero). A robot without a config (``config`` empty) that runs the excitation ``trajectory`` starts where
    that trajectory starts, for the joints it moves: ``dynid excite`` made that pose clear of the robot's links and
    its table, which the middle of the URDF's ranges need not be (the UR5's all zeros puts its wrist 4.8 cm into
    the table).
    """
    model = load_model(urdf=urdf, xacro_args=list(xacro_args) or None)
    if str(text).strip():
        pose = parse_positions(text)
        if len(pose) != len(model.joints):
            raise ConfigError(f"start_positions has {len(pose)} values; the robot has {len(model.joints)} joints "
                              f"({', '.join(model.joints)})")
        return dict(zip(model.joints, pose))
    try:
        pose = dict(zip(model.joints, config_start_pose(model, dict(config or {}))))
    except DynidError as err:
        raise ConfigError(f"start_positions: {err}") from err
    if trajectory and not config:
        pose.update({joint: q for joint, q in trajectory_start(trajectory).items() if joint in pose})
    return {joint: round(float(v), 6) for joint, v in pose.items()}


def trajectory_start(path: str | Path) -> dict[str, float]:
    """``{joint: position}`` where the excitation trajectory file ``path`` starts (its q(0), at rest)."""
    trajectory = load_trajectory(path).trajectory
    q, _, _ = trajectory.evaluate(np.zeros(1))
    return dict(zip(trajectory.joints, (float(v) for v in q[0])))


def gazebo_urdf(urdf_text: str, joints: Sequence[str], controllers_file: str | Path,
                initial_positions: Mapping[str, float] | None = None) -> str:
    """``urdf_text`` made ready for Gazebo (gz sim) with gz_ros2_control.

    Each of ``joints`` gets a position command interface and position, velocity and effort state
    interfaces (effort is the joint force Gazebo reports; unreliable before gz_ros2_control's 2025
    fix, see the README), its position starting at ``initial_positions[joint]`` (0 when not given: give
    :func:`start_positions`, 0 is outside the Panda's joint 4 range). The root link is fixed to ``world``.
    """
    root = read_urdf(urdf_text, "robot description").copy()
    known = {j.get("name") for j in root.findall("joint")}
    missing = [j for j in joints if j not in known]
    if missing:
        raise ModelError(f"robot description has no joint(s) {', '.join(missing)}")
    for old in root.findall("ros2_control"):
        root.remove(old)
    children = {j.find("child").get("link") for j in root.findall("joint") if j.find("child") is not None}
    roots = [link.get("name") for link in root.findall("link") if link.get("name") not in children]
    if "world" not in roots:
        ET.SubElement(root, "link", name="world")
        fixed = ET.SubElement(root, "joint", name="world_fixed", type="fixed")
        ET.SubElement(fixed, "parent", link="world")
        ET.SubElement(fixed, "child", link=roots[0])
    control = ET.SubElement(root, "ros2_control", name="GazeboSimSystem", type="system")
    hardware = ET.SubElement(control, "hardware")
    ET.SubElement(hardware, "plugin").text = "gz_ros2_control/GazeboSimSystem"
    initial = dict(initial_positions or {})
    for name in joints:
        q0 = float(initial.get(name, 0.0))
        joint = ET.SubElement(control, "joint", name=name)
        ET.SubElement(joint, "command_interface", name="position")
        position = ET.SubElement(joint, "state_interface", name="position")
        ET.SubElement(position, "param", name="initial_value").text = f"{q0:.6f}"
        ET.SubElement(joint, "state_interface", name="velocity")
        ET.SubElement(joint, "state_interface", name="effort")
    gazebo = ET.SubElement(root, "gazebo")
    plugin = ET.SubElement(gazebo, "plugin", filename="gz_ros2_control-system",
                           name="gz_ros2_control::GazeboSimROS2ControlPlugin")
    ET.SubElement(plugin, "parameters").text = str(controllers_file)
    return ET.tostring(root, encoding="unicode")


def failing(reason: str, *, delay: float = 0.0) -> list:
    """Actions that fail the launch with ``reason`` (:class:`JobFailed`) once the current event is handled (and
    ``delay`` seconds more), unless the launch is shutting down by then: raised inside an event handler, the
    exception would keep the event from the handlers after it (the screen output of the very line that gave the
    reason, say)."""
    from launch.actions import OpaqueFunction, TimerAction  # deferred: the launch stack, only in launch files

    def fail(context: object) -> None:
        if not context.is_shutdown:
            raise JobFailed(reason)

    return [TimerAction(period=delay, actions=[OpaqueFunction(function=fail)])]


CLEAN_EXIT_GRACE_S = 2.0
"""[s] A node that ends cleanly (status 0) while nothing has shut the launch down yet fails it only if no shutdown
follows within this time: Ctrl-C in a terminal sends SIGINT to the whole process group, and a node may end from it
before the launch has handled its own SIGINT (measured under load in test_launch_run's Ctrl-C test: the recorder's
clean exit came first and the launch ended with status 1)."""


class JobFailed(RuntimeError):
    """The launched job failed; the message is the reason.

    Raised by the action :func:`failing` returns: ``LaunchService`` logs ``Caught exception in launch (see debug for
    traceback): <reason>``, shuts the launch down and returns 1, so ``ros2 launch`` exits 1 (launch has no
    other way to end with a non-zero status; a ``Shutdown`` event always ends it with 0).
    """


def _lines(event: object) -> list[str]:
    return [line.strip() for line in event.text.decode(errors="replace").splitlines() if line.strip()]


def _message(line: str) -> str:
    """A ROS log line without its ``[LEVEL] [stamp] [node]:`` prefix."""
    return re.sub(r"^(\[[^\]]*\]\s*)+:?\s*", "", line)


def job_end_handlers(job: object, name: str, done: str | None = None, failed: str = r"\]: aborted: ",
                     grace: float = 1.0) -> list:
    """Event handlers that end the launch when the process ``job`` (a launch_ros ``Node`` named ``name``) ends
    its job.

    The pattern of ros2/launch's ``launch_counters.py`` example: ``OnProcessExit`` and ``OnProcessIO`` on
    ``job``, then ``Shutdown`` with the reason when the job is done. ``job`` exits 0 -> log its last
    ``done``-line and ``Shutdown``: ``ros2 launch`` exits 0. ``job`` exits non-zero or logged a line
    matching ``failed`` (e.g. orchestrator_node's ``aborted: <reason>``) -> :class:`JobFailed` with that
    reason: exit 1. When ``done`` is given, ``job`` keeps running after its job (identification_node of
    offline.launch.py): a line of it matching ``done`` ends the launch, one matching ``failed`` fails it.
    ``failed`` is searched in the whole log line (``[ERROR] [stamp] [node]: message``), ``done`` in the
    message; the reason given is the message. After a ``done`` line the launch waits ``grace`` seconds before
    it stops the node (SIGINT): the node publishes its result and final status right after that line.
    During a shutdown (Ctrl-C, or the job's end) an exit is expected and changes nothing.
    """
    from launch.actions import EmitEvent, LogInfo, RegisterEventHandler, TimerAction  # deferred: the launch
    from launch.event_handlers import OnProcessExit, OnProcessIO  # stack, only in launch files
    from launch.events import Shutdown

    seen: dict[str, str] = {}

    def finish(reason: str, delay: float = 0.0) -> list:
        shutdown = EmitEvent(event=Shutdown(reason=f"{name}: {reason}"))
        return [LogInfo(msg=f"{name}: {reason}"), TimerAction(period=delay, actions=[shutdown]) if delay else shutdown]

    def on_output(event: object) -> list | None:
        if done is not None and seen:  # already ending
            return None
        for line in _lines(event):
            message = _message(line)
            if re.search(failed, line):
                seen["failed"] = message
                if done is not None:
                    return failing(f"{name} {message}")
            elif re.search(r"^done: ", message) or (done is not None and re.search(done, message)):
                seen["done"] = message
                if done is not None:
                    return finish(message, grace)
        return None

    def on_job_exit(event: object, context: object) -> list | None:
        if context.is_shutdown:
            return None
        if event.returncode == 0 and "failed" not in seen and (done is None or "done" in seen):
            return finish(seen.get("done", "done"))
        return failing(f"{name} {seen.get('failed') or f'ended with exit code {event.returncode}'}")

    return [RegisterEventHandler(OnProcessIO(target_action=job, on_stdout=on_output, on_stderr=on_output)),
            RegisterEventHandler(OnProcessExit(target_action=job, on_exit=on_job_exit))]


def early_exit_handlers(processes: Sequence[object]) -> list:
    """Event handlers failing the launch (:class:`JobFailed`, exit 1) when one of ``processes`` ends before the
    launch shuts down: a node that could not start (bad parameter, no robot description) or crashed, instead
    of a launch left waiting for it. Exits during a shutdown are expected and change nothing."""
    from launch.actions import RegisterEventHandler  # deferred: the launch stack, only in launch files
    from launch.event_handlers import OnProcessExit

    def on_exit(event: object, context: object) -> list | None:
        if context.is_shutdown:
            return None
        reason = f"{event.action.name} ended with exit code {event.returncode} before the job was done"
        return failing(reason, delay=CLEAN_EXIT_GRACE_S if event.returncode == 0 else 0.0)

    return [RegisterEventHandler(OnProcessExit(target_action=process, on_exit=on_exit)) for process in processes]


def dynid_executable(executable: str) -> dict[str, str]:
    """``Node(**dynid_executable("sim_node"), ...)``: where the launch finds a dynid_ros node.

    ``package="dynid_ros"`` when the package's prefix has ``lib/dynid_ros/<executable>``, where launch_ros looks
    (``colcon build`` puts the console scripts there); otherwise the console script ``pip install .`` put in
    ``bin/`` beside the Python running the launch, by path (pip ignores setup.cfg's ``install_scripts``).
    """
    # deferred: a ROS package, absent without ROS
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        if (Path(get_package_prefix("dynid_ros")) / "lib" / "dynid_ros" / executable).exists():
            return {"package": "dynid_ros", "executable": executable}
    except (PackageNotFoundError, ValueError):
        pass
    beside = Path(sys.executable).parent / executable
    if not beside.exists():
        raise ConfigError(f"dynid_ros executable {executable} not found: neither in lib/dynid_ros of an ament prefix "
                          f"(colcon build) nor in {beside.parent} (pip install .)")
    return {"executable": str(beside)}
