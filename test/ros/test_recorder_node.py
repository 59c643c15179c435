"""recorder_node with real rclpy: parameters, services, status, raw recording into a bag."""

import json
import os
import resource
import shutil
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from dynid_ros.data.bag_io import bag_info, read_joint_states
from dynid_ros.ros.recorder_node import PARAMETERS, RecorderNode

from support.ros_helpers import Latest, call_trigger, params, status_qos, wait_for

SAFETY_NET_S = 120.0
"""[s] How long a wait for the node may hang before the test fails: a deadline for a wait that never ends, not a
speed claim (on 2 shared cores a node's start took over 30 s under load)."""


def publish_states(publisher, count, start=0):
    for i in range(start, start + count):
        msg = JointState(name=["j1", "j2"], position=[0.001 * i, 0.0], velocity=[1.0, 0.0], effort=[0.5, -0.5])
        msg.header.stamp.sec, msg.header.stamp.nanosec = 100, i * 1_000_000
        publisher.publish(msg)


def test_parameters_services_and_defaults(spinner, tmp_path):
    node = spinner.add(RecorderNode(context=spinner.context))
    declared = {p.name for p in PARAMETERS}
    assert declared == {"bag_path", "topics", "storage", "autostart", "discovery_timeout", "qos_depth"}
    assert all(node.has_parameter(name) for name in declared | {"robot", "config_file"})
    assert node.get_parameter("topics").value == ["/joint_states"]
    assert node.get_parameter("storage").value == "mcap"
    assert node.get_parameter("autostart").value is False
    panda = spinner.add(RecorderNode(context=spinner.context, parameter_overrides=params(robot="panda")))
    assert panda.get_parameter("topics").value == ["/franka/joint_states"]  # franka_ros2's 1 kHz broadcaster
    services = dict(node.get_service_names_and_types_by_node("recorder_node", "/"))
    assert services["/recorder_node/start"] == ["std_srvs/srv/Trigger"]
    assert services["/recorder_node/stop"] == ["std_srvs/srv/Trigger"]


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_records_every_message_raw(spinner, tmp_path, storage):
    bag = tmp_path / "bag"
    helper = spinner.add(Node("helper", context=spinner.context))
    publisher = helper.create_publisher(JointState, "/joint_states", QoSProfile(depth=1000,
                                        reliability=ReliabilityPolicy.RELIABLE))
    status = Latest(helper, String, "/recorder_node/status", status_qos(), as_json=True)
    spinner.add(RecorderNode(context=spinner.context, parameter_overrides=params(bag_path=str(bag), storage=storage)))
    wait_for(lambda: publisher.get_subscription_count() == 0 and status.last, what="recorder status")
    assert status.last["state"] == "idle"
    response = call_trigger(helper, "/recorder_node/start")
    assert response.success, response.message
    wait_for(lambda: publisher.get_subscription_count() == 1, what="recorder subscription")
    assert call_trigger(helper, "/recorder_node/start").success is False  # already recording
    publish_states(publisher, 300)
    wait_for(lambda: status.last and status.last["counts"].get("/joint_states") == 300, what="300 messages")
    response = call_trigger(helper, "/recorder_node/stop")
    assert response.success and "/joint_states 300" in response.message
    wait_for(lambda: status.last["state"] == "stopped", what="stopped status")
    info = bag_info(bag)
    assert info["storage"] == storage and info["messages"] == {"/joint_states": 300}
    series = read_joint_states(bag)
    assert series.names == ["j1", "j2"] and len(series) == 300
    assert series.position[-1, 0] == pytest.approx(0.299)
    assert call_trigger(helper, "/recorder_node/stop").success is False  # not recording any more


def test_existing_bag_path_is_refused(spinner, tmp_path):
    bag = tmp_path / "bag"
    bag.mkdir()
    helper = spinner.add(Node("helper", context=spinner.context))
    helper.create_publisher(JointState, "/joint_states", 10)
    status = Latest(helper, String, "/recorder_node/status", status_qos(), as_json=True)
    spinner.add(RecorderNode(context=spinner.context, parameter_overrides=params(bag_path=str(bag))))
    response = call_trigger(helper, "/recorder_node/start")
    assert not response.success and "already exists" in response.message
    wait_for(lambda: status.last and status.last["state"] == "failed", what="failed status")
    assert list(bag.iterdir()) == []


def test_autostart_waits_for_a_topic_that_never_appears(spinner, tmp_path):
    helper = spinner.add(Node("helper", context=spinner.context))
    status = Latest(helper, String, "/recorder_node/status", status_qos(), as_json=True)
    spinner.add(RecorderNode(context=spinner.context, parameter_overrides=params(
        bag_path=str(tmp_path / "bag"), topics=["/nobody_publishes_this"], autostart=True, discovery_timeout=0.5)))
    wait_for(lambda: status.last and status.last["state"] == "failed", what="failed status")
    assert "did not appear" in status.last["message"] or "appeared within" in status.last["message"]
    assert not (tmp_path / "bag").exists()


def test_status_is_json_with_counts_while_recording(spinner, tmp_path):
    helper = spinner.add(Node("helper", context=spinner.context))
    publisher = helper.create_publisher(JointState, "/joint_states", 100)
    status = Latest(helper, String, "/recorder_node/status", status_qos(), as_json=True)
    spinner.add(RecorderNode(context=spinner.context, parameter_overrides=params(
        bag_path=str(tmp_path / "bag"), autostart=True)))
    wait_for(lambda: status.last and status.last["state"] == "recording", what="recording")
    wait_for(lambda: publisher.get_subscription_count() == 1, what="subscription")
    publish_states(publisher, 20)
    time.sleep(1.2)  # the 1 Hz status carries the counts
    assert status.last["counts"] == {"/joint_states": 20}
    assert json.loads(json.dumps(status.last))["bag_path"] == str((tmp_path / "bag").resolve())


def test_sigkill_keeps_all_but_the_last_second(tmp_path, ros_context):
    """recorder_node in its own process, killed with SIGKILL while recording 1 kHz joint states."""
    import signal

    from dynid_ros.data.bag_repair import repair_bag

    from support.ros_helpers import node_process

    bag = tmp_path / "bag"
    helper = Node("helper", context=ros_context)
    publisher = helper.create_publisher(JointState, "/joint_states", QoSProfile(depth=1000,
                                        reliability=ReliabilityPolicy.RELIABLE))
    with node_process("recorder_node", {"bag_path": str(bag), "autostart": True}, tmp_path / "rec.log") as process:
        deadline = time.monotonic() + 20
        while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert publisher.get_subscription_count() == 1
        start, sent = time.monotonic(), 0
        while time.monotonic() - start < 2.5:
            publish_states(publisher, 10, start=sent)
            sent += 10
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    helper.destroy_node()
    bag = repair_bag(bag)["out"]  # a new bag beside the damaged one
    recorded = bag_info(bag)["messages"]["/joint_states"]
    rate = sent / 2.5
    assert sent - 1.0 * rate <= recorded <= sent, (sent, recorded)
    series = read_joint_states(bag)
    assert series.position[0, 0] == 0.0  # nothing lost at the start


@contextmanager
def small_disk(directory: Path, size: int):
    """A directory where writes fail after ``size`` bytes: a tmpfs of that size mounted there (as root),
    else a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored) for the process given the returned preexec_fn.
    Yields (preexec_fn or None, the errno text the writer will see)."""
    directory.mkdir()
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "dynid_test_full", str(directory)],
        capture_output=True).returncode == 0
    try:
        if mounted:
            yield None, "No space left on device"
        else:
            def limit() -> None:
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
            yield limit, "File too large"
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(directory)], check=True)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_disk_full_fails_at_once_and_keeps_what_was_flushed(tmp_path, spinner, storage):
    """recorder_node in its own process records onto a 384 KiB file system until it is full (about 2 s at 500 Hz)."""
    from dynid_ros.data.bag_repair import repair_bag

    from support.ros_helpers import node_process

    helper = Node("helper", context=spinner.context)
    publisher = helper.create_publisher(JointState, "/joint_states", QoSProfile(depth=1000,
                                        reliability=ReliabilityPolicy.RELIABLE))
    status = Latest(helper, String, "/recorder_node/status", status_qos(), as_json=True)
    spinner.add(helper)
    names = [f"a_rather_long_joint_name_{i}" for i in range(7)]

    with small_disk(tmp_path / "disk", 384 * 1024) as (preexec, errno_text):
        bag = tmp_path / "disk" / "bag"
        with node_process("recorder_node", {"bag_path": str(bag), "autostart": True, "storage": storage},
                          tmp_path / "rec.log", preexec_fn=preexec):
            wait_for(lambda: (status.last or {}).get("state") == "recording"
                     and publisher.get_subscription_count() > 0, SAFETY_NET_S, "the recorder to start")
            sent = 0

            def publish_until_the_disk_is_full() -> bool:
                nonlocal sent
                if (status.last or {}).get("state") != "recording":
                    return True
                for _ in range(10):
                    publisher.publish(JointState(name=names, position=[0.001 * sent] * 7, velocity=[1.0] * 7,
                                                 effort=[0.5] * 7))
                    sent += 1
                return False

            wait_for(publish_until_the_disk_is_full, SAFETY_NET_S, "the recorder to notice the full disk")
            failed = status.last
            reason = errno_text if storage == "mcap" else "disk"  # sqlite: "database or disk is full", "disk I/O error"
            assert failed["state"] == "failed", failed
            assert reason in failed["message"] and "dynid bag repair" in failed["message"], failed
            assert failed["counts"]["/joint_states"] > 0
            response = call_trigger(helper, "/recorder_node/stop")
            assert response.success is False and reason in response.message, response.message
        copy = tmp_path / "copy"  # as a user would: free space (here: copy the bag to a disk with room)
        shutil.copytree(bag, copy)
    report = repair_bag(copy)
    series = read_joint_states(report["out"])
    assert 0 < len(series) == report["message_count"] <= failed["counts"]["/joint_states"] <= sent
    assert series.names == names
    np.testing.assert_allclose(series.position[:, 0], 0.001 * np.arange(len(series)))  # none lost, none reordered


def publish_at(publisher, rate_hz: float, stop) -> None:
    """Joint states of the Panda's arm on ``publisher`` at ``rate_hz`` (absolute deadlines) until ``stop`` is set."""
    names = [f"panda_joint{i}" for i in range(1, 8)]
    period, deadline = 1.0 / rate_hz, time.monotonic()
    while not stop.is_set():
        publisher.publish(JointState(name=names, position=[0.0] * 7, velocity=[0.0] * 7, effort=[0.0] * 7))
        deadline += period
        time.sleep(max(deadline - time.monotonic(), 0.0))


@pytest.mark.parametrize(("rate_hz", "robot", "hint"), [
    (30.0, "panda", "record /franka/joint_states (franka_ros2's 1 kHz joint_state_broadcaster) instead"),
    (30.0, "", "record the driver's full-rate joint states (its joint_state_broadcaster) instead"),
    (400.0, "panda", None),
])
def test_a_joint_state_topic_too_slow_for_an_identification_is_named_with_the_drivers_full_rate_topic(
        spinner, tmp_path, rate_hz, robot, hint):
    """franka_ros2's /joint_states is joint_state_publisher's 30 Hz merge: measured live while recording, named in
    a warning with the topic the driver publishes at 1 kHz; a topic at the rate an identification needs is not."""
    import threading

    helper = spinner.add(Node("helper", context=spinner.context))
    publisher = helper.create_publisher(JointState, "/joint_states", 100)
    status = Latest(helper, String, "/recorder_node/status", status_qos(), as_json=True)
    spinner.add(RecorderNode(context=spinner.context, parameter_overrides=params(  # the merged topic, named
        bag_path=str(tmp_path / "bag"), autostart=True, topics=["/joint_states"],
        **({"robot": robot} if robot else {}))))
    stop = threading.Event()
    thread = threading.Thread(target=publish_at, args=(publisher, rate_hz, stop), daemon=True)
    thread.start()
    try:
        last = wait_for(lambda: status.last if "/joint_states" in status.last.get("rates", {}) else None, 30,
                        "the rate of /joint_states measured")
    finally:
        stop.set()
        thread.join()
    if hint is None:
        assert last["rates"]["/joint_states"] > 100 and last["warnings"] == [], last
        return
    (warning,) = last["warnings"]
    assert warning.startswith("joint states on /joint_states arrive at ") and warning.endswith(hint), warning
    assert last["rates"]["/joint_states"] == pytest.approx(rate_hz, rel=0.2), last
