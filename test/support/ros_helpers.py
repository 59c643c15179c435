"""Shared fixtures for the node tests: an isolated DDS domain, an rclpy context, spinning, processes.

Every test process gets a random ``ROS_DOMAIN_ID`` and ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``
(set before the first ``rclpy.init``), so tests never talk to other machines or other test runs.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import yaml
from rclpy.node import Node
from std_msgs.msg import String

from dynid_ros.data.bag_io import write_joint_states

from support.paths import REPO

ROOT = REPO


LAST_SAFE_DOMAIN = 101
"""The largest ``ROS_DOMAIN_ID`` whose DDS ports stay below Linux's ephemeral ports (32768-60999): the RTPS port of
domain d is 7400 + 250 d + ..., so from domain 102 on a participant's port may already be some socket's ephemeral
port and discovery between the run's own processes can miss a peer (ROS 2 docs, "The ROS_DOMAIN_ID": choose
0-101). One CI run's five-process end-to-end test waited 120 s for a status that never came, on a domain drawn
from 1-200 (which one was not logged; this removes the one cause of a lost peer that the tests choose)."""


def isolate_ros_environment() -> dict[str, str]:
    """Pick a random domain on localhost for this process and its children (once per process)."""
    if "DYNID_TEST_DOMAIN" not in os.environ:
        domain = str(random.SystemRandom().randint(1, LAST_SAFE_DOMAIN))
        os.environ.update(ROS_DOMAIN_ID=domain, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", DYNID_TEST_DOMAIN=domain)
        os.environ.pop("ROS_LOCALHOST_ONLY", None)
    return {k: os.environ[k] for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE")}


@pytest.fixture
def ros_context() -> Iterator[object]:
    """A fresh rclpy context on an isolated domain; shut down after the test."""
    isolate_ros_environment()
    import rclpy

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        yield context
    finally:
        context.try_shutdown()


class Spinner:
    """Spin each node in its own SingleThreadedExecutor thread, as each node's ``main`` does."""

    def __init__(self, context: object) -> None:
        self.context = context
        self.nodes: list = []
        self.cleanups: list[Callable[[], object]] = []
        self._executors: list = []
        self._threads: list[threading.Thread] = []
        self._running = True

    def _spin(self, executor: object) -> None:
        from rclpy.executors import ExternalShutdownException

        try:
            while self._running and self.context.ok():
                executor.spin_once(timeout_sec=0.05)
        except (ExternalShutdownException, RuntimeError):
            pass

    def add(self, node: object, multithreaded: bool = False) -> object:
        """Spin ``node``; ``multithreaded`` as sim_node's ``main`` does when it serves FollowJointTrajectory."""
        from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor

        executor = MultiThreadedExecutor(num_threads=4, context=self.context) if multithreaded \
            else SingleThreadedExecutor(context=self.context)
        executor.add_node(node)
        thread = threading.Thread(target=self._spin, args=(executor,), daemon=True)
        thread.start()
        self.nodes.append(node)
        self._executors.append(executor)
        self._threads.append(thread)
        return node

    def close(self) -> None:
        self._running = False
        for thread in self._threads:
            thread.join(timeout=5)
        for cleanup in reversed(self.cleanups):  # e.g. action clients and servers: destroy_node leaves them
            cleanup()
        for executor, node in zip(self._executors, self.nodes):
            executor.remove_node(node)
            node.destroy_node()
            executor.shutdown(timeout_sec=1)
        self.nodes, self._executors, self._threads = [], [], []
        self.context.try_shutdown()


@pytest.fixture
def spinner(ros_context: object) -> Iterator[Spinner]:
    spin = Spinner(ros_context)
    try:
        yield spin
    finally:
        spin.close()


def wait_for(predicate: Callable[[], object], timeout: float = 10.0, what: str = "condition") -> object:
    """Poll ``predicate`` until it returns something truthy; fail the test after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def params(**values: object) -> list:
    """rclpy parameter overrides from keyword arguments."""
    from rclpy.parameter import Parameter

    return [Parameter(name, value=value) for name, value in values.items()]


def call_trigger(node: object, service: str, timeout: float = 10.0) -> object:
    """Call a std_srvs/Trigger service from ``node`` (spun elsewhere); return the response."""
    from std_srvs.srv import Trigger

    client = node.create_client(Trigger, service)
    try:
        if not client.wait_for_service(timeout_sec=timeout):
            pytest.fail(f"service {service} not available")
        future = client.call_async(Trigger.Request())
        wait_for(future.done, timeout, f"response of {service}")
        return future.result()
    finally:
        node.destroy_client(client)


class Latest:
    """Subscribe and keep every message (or its JSON content for std_msgs/String)."""

    def __init__(self, node: object, msg_type: type, topic: str, qos: object = 10, as_json: bool = False) -> None:
        self.messages: list = []
        self._as_json = as_json
        self.subscription = node.create_subscription(msg_type, topic, self._on_message, qos)

    def _on_message(self, msg: object) -> None:
        self.messages.append(json.loads(msg.data) if self._as_json else msg)

    @property
    def last(self) -> object:
        return self.messages[-1] if self.messages else None


def status_qos() -> object:
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    # the publisher keeps the last status for late joiners; a test keeps every one it gets (depth 1 here would let a
    # quick "running" be replaced by "done" before a loaded test process reads it)
    return QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def ros_arg(value: object) -> str:
    """``-p name:=value`` text of a parameter value (YAML flow style; strings quoted when needed)."""
    return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix("...").strip()


@contextmanager
def node_process(module: str, parameters: dict, log_path: Path,
                 preexec_fn: Callable[[], None] | None = None) -> Iterator[subprocess.Popen]:
    """Run ``python -m dynid_ros.ros.<module> --ros-args -p ...`` in the isolated domain; SIGINT at the end.
    ``preexec_fn`` runs in the child before the node (e.g. to set a resource limit)."""
    isolate_ros_environment()
    command = [sys.executable, "-m", f"dynid_ros.ros.{module}", "--ros-args"]
    for name, value in parameters.items():
        command += ["-p", f"{name}:={ros_arg(value)}"]
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"}, preexec_fn=preexec_fn)
        try:
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def write_test_trajectory(path: Path, robot: str = "panda", period: float = 4.0, harmonics: int = 4,
                          fraction: float = 0.6, seed: int = 0, urdf: Path | None = None) -> Path:
    """A short random excitation of ``robot`` (or of the arm of ``urdf``) that starts at rest and uses ``fraction``
    of its limits."""

    from dynid_ros.excitation.fourier import FourierTrajectory
    from dynid_ros.excitation.limits import limits_from_model, sample_trajectory
    from dynid_ros.excitation.trajectory_file import ExcitationTrajectory, save_trajectory
    from dynid_ros.robot.model import load_model
    from dynid_ros.robot.resources import robot_file

    model = load_model(urdf=urdf or robot_file(robot, "urdf"))
    limits = limits_from_model(model)
    rng = np.random.default_rng(seed)
    n, orders = model.n_dof, np.arange(1, harmonics + 1)
    a = rng.standard_normal((n, harmonics))
    b = rng.standard_normal((n, harmonics))
    a[:, -1] = -a[:, :-1].sum(axis=1)  # q'(0) = 0
    b[:, -1] = -(b[:, :-1] * orders[:-1]).sum(axis=1) / orders[-1]  # q''(0) = 0
    q0 = limits.position.mean(axis=1)
    wf = 2 * np.pi / period
    unit = FourierTrajectory(tuple(model.joints), wf, q0, a, b)
    _, q, dq, ddq = sample_trajectory(unit, 200.0)
    half = 0.5 * (limits.position[:, 1] - limits.position[:, 0])
    scale = fraction * min(np.min(half / np.abs(q - q0).max(axis=0)), np.min(limits.velocity / np.abs(dq).max(axis=0)),
                           np.min(limits.acceleration / np.abs(ddq).max(axis=0)))
    save_trajectory(path, ExcitationTrajectory(unit.scaled(scale), limits, float("nan"), {"test": True}))
    return path


def robot_limits_of(robot: str = "panda") -> object:
    """The embedded robot's own limits (its URDF and shipped config), the authority over every motion."""
    from dynid_ros.execution.robot_limits import robot_limits
    from dynid_ros.robot.config import load_config
    from dynid_ros.robot.model import load_model
    from dynid_ros.robot.resources import robot_file

    return robot_limits(load_model(urdf=robot_file(robot, "urdf")), load_config(robot_file(robot, "config")))


def simulated_bag(path: Path, robot: str = "panda", period: float = 3.0, seed: int = 0) -> Path:
    """A bag of the embedded robot (config truth, noise) running a short random excitation once, on the robot's
    JointState topic (its config's: the Panda's /franka/joint_states)."""

    from dynid_ros.excitation.trajectory_file import load_trajectory
    from dynid_ros.execution.trajectory_execution import prepare_profile
    from dynid_ros.robot.config import load_config
    from dynid_ros.robot.drivers import joint_states_topic
    from dynid_ros.robot.resources import robot_file
    from dynid_ros.sim import GroundTruth, Simulator, simulate_profile

    trajectory = load_trajectory(write_test_trajectory(path.with_suffix(".yaml"), robot, period=period, seed=seed))
    config = load_config(robot_file(robot, "config"))
    section = config.get("simulation") or {}
    sim = Simulator(robot_file(robot, "urdf"), truth=GroundTruth.from_config(section))
    profile = prepare_profile(trajectory, trajectory.limits.position.mean(axis=1), 1, 1000.0, robot_limits_of(robot))
    t, q, dq, ddq = profile.sample_at_rate(1000.0)
    series = simulate_profile(sim, t, q, dq, ddq, progress=False)
    return write_joint_states(path, series, topic=joint_states_topic(config))


def assert_physically_consistent(urdf_text: str) -> object:
    """Load a URDF in pinocchio; every body has m > 0 and a positive-definite inertia about its CoM
    obeying the triangle inequality (full physical consistency, Traversaro et al. 2016). Returns the model."""
    import pinocchio as pin

    model = pin.buildModelFromXML(urdf_text)
    for name, inertia in zip(model.names[1:], model.inertias[1:]):
        eig = np.linalg.eigvalsh(np.asarray(inertia.inertia))
        assert inertia.mass > 0, f"{name}: mass {inertia.mass}"
        assert eig.min() > 0, f"{name}: inertia eigenvalues {eig}"
        assert eig[0] + eig[1] >= eig[2] * (1 - 1e-9), f"{name}: triangle inequality fails {eig}"
    return model


def run_node(spinner, tmp_path: Path, parameters: dict) -> tuple[dict, dict | None]:
    """identification_node with ``identify_on_start``: its last status and report, read while it still runs (the
    node is then stopped with SIGINT and must exit 0)."""
    helper = spinner.add(Node("config_robot_listener", context=spinner.context))
    status = Latest(helper, String, "/identification_node/status", status_qos(), as_json=True)
    report = Latest(helper, String, "/identification_node/report", status_qos(), as_json=True)
    log = tmp_path / "node.log"
    with node_process("identification_node", {**parameters, "identify_on_start": True}, log) as process:
        wait_for(lambda: (status.last and status.last["state"] in ("done", "failed")) or process.poll() is not None,
                 timeout=120, what="the node's final status")
        wait_for(lambda: report.last is not None or process.poll() is not None, timeout=10, what="the report")
    text = log.read_text()
    assert process.returncode == 0, text
    assert "Traceback" not in text
    assert status.last["state"] == "done", text
    return status.last, report.last
