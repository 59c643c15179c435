"""recorder_node with real rclpy: parameters, services, status, raw recording into a bag."""

import json
import time

import pytest
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from dynid_ros.bag_io import bag_info, read_joint_states
from dynid_ros.nodes.recorder_node import PARAMETERS, RecorderNode
from ros_helpers import Latest, call_trigger, params, status_qos, wait_for


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

    from dynid_ros.bag_recorder import repair_bag
    from ros_helpers import node_process

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
    repair_bag(bag)
    recorded = bag_info(bag)["messages"]["/joint_states"]
    rate = sent / 2.5
    assert sent - 1.0 * rate <= recorded <= sent, (sent, recorded)
    series = read_joint_states(bag)
    assert series.position[0, 0] == 0.0  # nothing lost at the start
