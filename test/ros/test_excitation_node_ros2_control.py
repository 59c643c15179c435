"""excitation_node against the real ros2_control stack of Jazzy: controller_manager on mock hardware (the Panda's
URDF, position commands, velocities computed from them), joint_state_broadcaster, joint_trajectory_controller and
forward command controllers, as spawned by controller_manager's spawner (test/support/ros2_control_stack.py).

The node runs as its executable runs it (a process of its own, in the stack's environment); the test reads
/joint_states and the node's ~/status and calls its services. Each mode runs a whole excitation to ``done``; a stop
in the middle of a fast motion brings the arm to rest within the deceleration the robot's acceleration limits allow
(the stop the controller executes, not an empty trajectory it ignores or a cancel that holds at once); a goal the
controller would reject, an inactive controller and a forward controller of another interface are refused with the
reason.
"""

from __future__ import annotations

import copy
import json
import re
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import yaml

from dynid_ros.robot.config import load_config
from dynid_ros.robot.resources import robot_file

from support.robots import FRANKA_STATES
from support.ros2_control_stack import (
    control_stack,
    controllers_file,
    mock_urdf,
    node_in_stack,
    require_ros2_control,
    wait_on,
)
from support.ros_helpers import ROOT, call_trigger, robot_limits_of, status_qos, wait_for, write_test_trajectory

PANDA = [f"panda_joint{i}" for i in range(1, 8)]
LIMITS = robot_limits_of("panda")
UPDATE_RATE = 100
SHIPPED_JTC = load_config(ROOT / "config" / "panda_controllers.yaml")["joint_trajectory_controller"]["ros__parameters"]


@pytest.fixture(scope="module")
def trajectories(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trajectories")
    full = write_test_trajectory(folder / "full.yaml", period=2.0, harmonics=3, fraction=0.6)
    fast = write_test_trajectory(folder / "fast.yaml", period=2.5, harmonics=2, fraction=0.9, seed=3)
    six = yaml.safe_load(full.read_text())  # the same motion of the first six joints: a partial goal
    keep = list(range(6))
    six["joints"] = [six["joints"][k] for k in keep]
    for key in ("q0", "a", "b"):
        six[key] = [six[key][k] for k in keep]
    six["limits"] = {name: [values[k] for k in keep] for name, values in six["limits"].items()}
    (folder / "six.yaml").write_text(yaml.safe_dump(six, sort_keys=False))
    return {"full": full, "fast": fast, "six": folder / "six.yaml"}


@pytest.fixture(scope="module")
def start_pose(trajectories):
    limits = yaml.safe_load(trajectories["full"].read_text())["limits"]["position"]
    return dict(zip(PANDA, np.mean(np.array(limits), axis=1).tolist()))


@pytest.fixture(scope="module")
def stack(tmp_path_factory, start_pose):
    """The Panda on mock hardware at 100 Hz: joint_trajectory_controller active; forward_position_controller,
    forward_velocity_controller and a second trajectory controller loaded and configured, inactive."""
    require_ros2_control()
    folder = tmp_path_factory.mktemp("ros2_control")
    urdf = mock_urdf(robot_file("panda", "urdf").read_text(), PANDA, start_pose, velocity_commands=True)
    controllers = controllers_file(folder / "controllers.yaml", PANDA, UPDATE_RATE, forward=("position", "velocity"),
                                   jtc=SHIPPED_JTC)  # the parameters of the package's own launched controller
    content = yaml.safe_load(controllers.read_text())
    content["controller_manager"]["ros__parameters"]["other_trajectory_controller"] = {
        "type": "joint_trajectory_controller/JointTrajectoryController"}
    content["other_trajectory_controller"] = copy.deepcopy(content["joint_trajectory_controller"])
    controllers.write_text(yaml.safe_dump(content, sort_keys=False))
    with control_stack(folder, urdf, controllers, active=["joint_trajectory_controller"],
                       inactive=["forward_position_controller", "forward_velocity_controller",
                                 "other_trajectory_controller"], joint_states=FRANKA_STATES) as running:
        yield running


class Watcher:
    """/franka/joint_states (wall time, stamp, positions, velocities in PANDA order) and excitation_node's ~/status."""

    def __init__(self, spinner):
        from rclpy.node import Node
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String

        self.node = spinner.add(Node("watcher", context=spinner.context))
        self.lock = threading.Lock()
        self.samples: list[tuple[float, float, np.ndarray, np.ndarray]] = []
        self.statuses: list[dict] = []
        self.node.create_subscription(JointState, FRANKA_STATES, self._state, 100)
        self.node.create_subscription(String, "/excitation_node/status", self._status, status_qos())

    def _state(self, msg):
        index = {name: k for k, name in enumerate(msg.name)}
        if not all(j in index for j in PANDA):
            return
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        with self.lock:
            self.samples.append((time.monotonic(), stamp, np.array([msg.position[index[j]] for j in PANDA]),
                                 np.array([msg.velocity[index[j]] for j in PANDA])))

    def _status(self, msg):
        with self.lock:
            self.statuses.append(json.loads(msg.data))

    def last(self) -> dict:
        with self.lock:
            return self.statuses[-1] if self.statuses else {}

    def states(self) -> list[str]:
        with self.lock:
            return [s["state"] for s in self.statuses]

    def since(self, wall: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Arrival times, stamps, positions and velocities of the joint states that arrived after ``wall``."""
        with self.lock:
            rows = [row for row in self.samples if row[0] >= wall]
        return tuple(np.array([r[k] for r in rows]) for k in range(4))

    def stamped_since(self, stamp: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Stamps (the controller manager's clock), positions and velocities of the joint states stamped from
        ``stamp`` on, in stamp order: what the controller did, however late this process received it."""
        with self.lock:
            rows = sorted((row for row in self.samples if row[1] >= stamp), key=lambda row: row[1])
        return tuple(np.array([r[k] for r in rows]) for k in (1, 2, 3))

    def last_arrival(self) -> float:
        """Arrival time of the last joint state (-inf before any)."""
        with self.lock:
            return self.samples[-1][0] if self.samples else float("-inf")

    def speed(self) -> float:
        """The fastest joint's speed in the last joint state."""
        with self.lock:
            return float(np.abs(self.samples[-1][3]).max()) if self.samples else 0.0

    def ready(self, node):
        wait_on(node.process, lambda: self.last().get("joint_states_ready"), "the excitation node's joint states",
                node.log)

    def ended(self, node) -> dict:
        return wait_on(node.process, lambda: self.last() if self.last().get("state") in ("done", "aborted") else None,
                       "the excitation's end", node.log)


class Running:
    """excitation_node's process and its log."""

    def __init__(self, process, log: Path):
        self.process, self.log = process, log


@contextmanager
def excitation_node(parameters: dict, log: Path):
    with node_in_stack("excitation_node", parameters, log) as process:
        yield Running(process, log)


def excitation_parameters(trajectory: Path, mode: str, **extra) -> dict:
    return {"robot": "panda", "trajectory_file": str(trajectory), "mode": mode, "wait_timeout": 10.0, **extra}


@pytest.mark.parametrize("mode", ["topic", "action", "stream"])
def test_a_whole_excitation_runs_to_done_on_its_controllers_clock(spinner, stack, trajectories, tmp_path, mode):
    """A whole excitation to ``done``: on the real JTC by topic and by action (the motion's time from the JTC's
    controller_state / feedback), and streamed to the real forward position controller (the stream's own clock)."""
    extra = {}
    if mode == "stream":
        stack.switch(activate=["forward_position_controller"], deactivate=["joint_trajectory_controller"])
        extra = {"controller_name": "forward_position_controller", "stream_joints": PANDA}
    watcher = Watcher(spinner)
    try:
        with excitation_node(excitation_parameters(trajectories["full"], mode, **extra),
                             tmp_path / "excitation_node.log") as node:
            watcher.ready(node)
            assert call_trigger(watcher.node, "/excitation_node/start", timeout=60).success
            last = watcher.ended(node)
    finally:
        if mode == "stream":
            settle(stack)
    log = (tmp_path / "excitation_node.log").read_text()
    assert last["state"] == "done", f"{last}\n{log}"
    assert last["progress"] == 1.0 and last["time"] == pytest.approx(last["duration"], abs=1e-3)
    # the JTC's feedback / controller_state, not the wall clock; a stream keeps its own
    assert last["clock"] == ("stream" if mode == "stream" else "controller state")
    running = [s for s in watcher.statuses if s["state"] in ("approaching", "running")]
    assert running and all(s["paused"] is False for s in running)
    assert [s["progress"] for s in running] == sorted(s["progress"] for s in running)


def test_the_real_controller_runs_with_the_packages_decelerate_on_cancel(spinner, stack):
    """The real joint_trajectory_controller is active with the parameters of the package's launched controller
    (config/panda_controllers.yaml, its constraints.decelerate_on_cancel included; the stack fixture activates it),
    and a release that declares decelerate_on_cancel holds the file's values. Jazzy 4.19 here has no such feature:
    its controller node does not declare the parameters (ros2_control 4.24 controller_interface_base.hpp
    define_custom_node_options: no automatically_declare_parameters_from_overrides on Jazzy) and holds a canceled goal
    at once, so only the first part runs here; the values are checked against the stop's limits in
    test_launch_files.py."""
    from rcl_interfaces.srv import GetParameters, ListParameters
    from rclpy.node import Node

    node = spinner.add(Node("parameter_reader", context=spinner.context))

    def call(kind, service, request):
        client = node.create_client(kind, f"/joint_trajectory_controller/{service}")
        assert client.wait_for_service(timeout_sec=30), f"no /joint_trajectory_controller/{service}"
        future = client.call_async(request)
        return wait_for(lambda: future.done() and future.result(), 30, f"the controller's {service}")

    listed = call(ListParameters, "list_parameters", ListParameters.Request(prefixes=["constraints"]))
    declared = set(listed.result.names)
    assert {f"constraints.{j}.trajectory" for j in PANDA} <= declared  # the controller runs, its constraints read
    shipped = SHIPPED_JTC["constraints"]
    names = [n for n in ("constraints.decelerate_on_cancel",
                         *(f"constraints.{j}.max_deceleration_on_cancel" for j in PANDA)) if n in declared]
    values = call(GetParameters, "get_parameters", GetParameters.Request(names=names)).values if names else []
    expected = {"constraints.decelerate_on_cancel": True,
                **{f"constraints.{j}.max_deceleration_on_cancel": shipped[j]["max_deceleration_on_cancel"]
                   for j in PANDA}}
    for name, value in zip(names, values):
        got = value.bool_value if name.endswith("decelerate_on_cancel") else value.double_value
        assert got == expected[name], (name, got)


def acceleration(stamps: np.ndarray, v: np.ndarray, window: int = 4) -> np.ndarray:
    """The joints' accelerations from the joint states' velocities: their mean over ``window`` controller periods,
    differenced over as many (a stream's commands and the controller's updates drift in phase: an update that got
    no new command reports 0, the next one twice the speed; the mean over a window keeps their sum)."""
    kernel = np.ones(window) / window
    mean = np.array([np.convolve(v[:, j], kernel, mode="valid") for j in range(v.shape[1])]).T
    t = np.convolve(stamps, kernel, mode="valid")
    return (mean[window:] - mean[:-window]) / (t[window:] - t[:-window])[:, None]


def settle(stack) -> None:
    """Back to joint_trajectory_controller alone (a test that streamed switches to the forward controller)."""
    stack.switch(activate=["joint_trajectory_controller"], deactivate=["forward_position_controller"])


@pytest.mark.parametrize("mode", ["topic", "action", "stream"])
def test_a_stop_in_a_fast_motion_decelerates_to_rest_within_the_acceleration_limits(spinner, stack, trajectories,
                                                                                    tmp_path, mode):
    """~/stop while a joint moves faster than 0.9 rad/s: the arm comes to rest, decelerating no faster than the
    robot's acceleration limits allow, within the time they need (plus the delivery); and stays there."""
    extra = {}
    if mode == "stream":
        stack.switch(activate=["forward_position_controller"], deactivate=["joint_trajectory_controller"])
        extra = {"controller_name": "forward_position_controller", "stream_joints": PANDA}
    watcher = Watcher(spinner)
    limits = LIMITS.limits.acceleration[LIMITS.indices(tuple(PANDA))]
    log_path = tmp_path / "excitation_node.log"
    try:
        with excitation_node(excitation_parameters(trajectories["fast"], mode, **extra), log_path) as node:
            watcher.ready(node)
            decided = stop_in_a_fast_motion(watcher, node)
            stamps, q, v = watcher.stamped_since(decided - 0.5)
    finally:
        if mode == "stream":
            settle(stack)
    log = log_path.read_text()
    speed = speed_at(stamps, v, decided)
    assert speed.max() > 0.5, f"not a fast motion when stopped: {speed}"
    moving = np.flatnonzero(np.abs(v).max(axis=1) > 1e-4)
    assert moving.size and moving[-1] < len(v) - 50, f"the arm did not come to rest\n{log}"
    needed = float(np.max(speed / limits))
    lead = stop_lead(log_path, decided)
    rest = stamps[moving[-1] + 1] - decided  # on the controller's clock, from the node's stop
    assert rest <= needed + lead + 0.5, (rest, needed, lead, log)  # + the lead it measured, the controller's periods
    drift = np.abs(q[moving[-1] + 1:] - q[-1]).max()
    assert drift < 1e-5, drift  # at rest, holding
    ratio = np.abs(acceleration(stamps, v)).max(axis=0) / limits
    assert ratio.max() <= 1.3, f"deceleration beyond the limits: {ratio.round(2)}\n{log}"
    assert "stopping: from" in log and "at rest" in log, log


STOP_LINE = re.compile(r"\[(\d+\.\d+)\] \[excitation_node\]: stopping: from ([0-9.]+) rad/s")

STOP_ATTEMPTS = 5
"""Motions started and stopped until a stop reaches the node in a fast part of the motion (see
:func:`stop_in_a_fast_motion`)."""


def stops(log_path: Path) -> list[tuple[float, float]]:
    """The node's stops: the ROS time (the system clock, as the joint states' stamps) of each ``stopping: from ...``
    line of its log and the speed [rad/s] it stopped from."""
    return [(float(m.group(1)), float(m.group(2))) for m in STOP_LINE.finditer(log_path.read_text(errors="replace"))]


LEAD_LINE = re.compile(r"\[(\d+\.\d+)\] \[excitation_node\]: stopping: from .* decelerating ([0-9.]+) s after")


def stop_lead(log_path: Path, stamp: float) -> float:
    """The lead [s] the node gave its stop logged at ``stamp`` (its measured delivery delay: the deceleration starts
    that long after the stop is planned)."""
    leads = {float(m.group(1)): float(m.group(2)) for m in LEAD_LINE.finditer(log_path.read_text(errors="replace"))}
    return leads[stamp]


def speed_at(stamps: np.ndarray, v: np.ndarray, stamp: float) -> np.ndarray:
    """The joints' speeds measured when the node stopped at ``stamp``: the mean over the last 10 controller periods
    before (a stream's commands and the controller's updates drift in phase: an update without a new command reports
    0, the next twice the speed; a stream stalled on a loaded machine holds the arm for a few periods)."""
    before = int(np.searchsorted(stamps, stamp))
    return np.abs(v[max(before - 10, 0):before].mean(axis=0))


def stop_in_a_fast_motion(watcher: Watcher, node: Running) -> float:
    """``~/start``, then ``~/stop`` once a joint moves faster than 0.9 rad/s, until a joint moved faster than 0.5 rad/s
    when the node stopped (:func:`speed_at`), at most :data:`STOP_ATTEMPTS` motions: on a loaded machine this
    process sees the motion late and the request reaches the node later, maybe in a slow part of the motion or after
    its end. Each stop waited for until the arm is held at rest (50 samples) and the node says so. The stamp of the
    fast stop."""
    for _attempt in range(STOP_ATTEMPTS):
        before = len(stops(node.log))
        rests = node.log.read_text(errors="replace").count("at rest ")
        assert call_trigger(watcher.node, "/excitation_node/start", timeout=60).success
        wait_on(node.process, lambda: watcher.last().get("state") == "running", "the excitation running", node.log)
        seen = wait_on(node.process, lambda: "fast" if watcher.speed() > 0.9 else
                       ("ended" if watcher.last().get("state") in ("done", "aborted") else None),
                       "a joint faster than 0.9 rad/s", node.log)
        if seen == "ended" or not call_trigger(watcher.node, "/excitation_node/stop", timeout=60).success:
            wait_on(node.process, lambda: watcher.last().get("state") in ("done", "aborted"), "the end", node.log)
            continue  # the motion ended before the stop reached the node
        new = wait_on(node.process, lambda before=before: stops(node.log)[before:], "the node's stop", node.log)
        stamp = new[0][0]
        wait_on(node.process, lambda stamp=stamp: at_rest_for(watcher, stamp, samples=50), "the arm held at rest",
                node.log)
        wait_on(node.process, lambda rests=rests: node.log.read_text(errors="replace").count("at rest ") > rests,
                "the node's 'at rest'", node.log)
        stamps, _, v = watcher.stamped_since(stamp - 0.5)
        if speed_at(stamps, v, stamp).max() > 0.5:
            return stamp
    pytest.fail(f"no stop in a fast motion in {STOP_ATTEMPTS} attempts:\n{node.log.read_text()[-3000:]}")


def at_rest_for(watcher: Watcher, since: float, samples: int) -> bool:
    """The joint states stamped after ``since`` end with ``samples`` at rest (the arm stopped and held)."""
    _, _, v = watcher.stamped_since(since)
    if len(v) <= samples:
        return False
    moving = np.flatnonzero(np.abs(v).max(axis=1) > 1e-4)
    return bool(moving.size) and moving[-1] < len(v) - samples


def refused(spinner, tmp_path, trajectory: Path, mode: str, **extra) -> tuple[dict, list, str]:
    """Start a motion the controller refuses: the final status, the joint states during the attempt, the log."""
    watcher = Watcher(spinner)
    with excitation_node(excitation_parameters(trajectory, mode, **extra), tmp_path / "excitation_node.log") as node:
        watcher.ready(node)
        started = watcher.last_arrival()
        response = call_trigger(watcher.node, "/excitation_node/start", timeout=60)
        last = watcher.ended(node) if response.success else {"state": "aborted", "message": response.message}
        ended = time.monotonic()  # joint states after the end too: a refusal within one period saw none
        wait_for(lambda: watcher.last_arrival() > ended + 0.1, what="joint states after the refusal")
        _, _, q, _ = watcher.since(started)
    return last, q, (tmp_path / "excitation_node.log").read_text()


@pytest.mark.parametrize("mode", ["action", "topic"])
def test_a_partial_goal_the_controller_would_reject_is_refused_with_the_check_and_the_joint(spinner, stack,
                                                                                           trajectories, tmp_path,
                                                                                           mode):
    """A trajectory of six of the controller's seven joints, allow_partial_joints_goal false: refused before
    anything is sent, saying which check and which joint."""
    last, q, log = refused(spinner, tmp_path, trajectories["six"], mode)
    assert last["state"] == "aborted", last
    assert ("controller joint_trajectory_controller takes goals of all its joints (allow_partial_joints_goal is "
            "false) and the trajectory moves 6 of its 7: joint(s) panda_joint7 missing") in last["message"], last
    assert np.ptp(q, axis=0).max() < 1e-9  # nothing moved


def test_an_inactive_controller_is_named_with_the_active_ones(spinner, stack, trajectories, tmp_path):
    """The UR driver's case: joint_trajectory_controller loaded but inactive, another trajectory controller active:
    the goal would be rejected ("Controller is not running"); the node says which are active and what to do."""
    last, q, log = refused(spinner, tmp_path, trajectories["full"], "action", wait_timeout=5.0,
                           controller_name="other_trajectory_controller")
    assert last["state"] == "aborted", last
    message = last["message"]
    assert "controller other_trajectory_controller is inactive, not active (active: " in message, message
    assert "joint_trajectory_controller" in message and "joint_state_broadcaster" in message, message
    assert "or set controller_name:=joint_trajectory_controller" in message, message
    assert np.ptp(q, axis=0).max() < 1e-9


def test_a_forward_controller_of_another_interface_is_refused(spinner, stack, trajectories, tmp_path):
    """forward_velocity_controller has the position controller's joints: streamed positions would be applied as
    rad/s; refused, naming its interface."""
    last, q, log = refused(spinner, tmp_path, trajectories["full"], "stream",
                           controller_name="forward_velocity_controller", stream_joints=PANDA)
    assert last["state"] == "aborted", last
    assert ("controller forward_velocity_controller commands the 'velocity' interface (its interface_name): stream "
            "mode sends joint positions") in last["message"], last
    assert np.ptp(q, axis=0).max() < 1e-9
