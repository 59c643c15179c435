"""orchestrator_node with real rclpy: an aborted excitation stops the recorder and skips identification."""

import time

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

from dynid_ros.nodes.excitation_node import ExcitationNode
from dynid_ros.nodes.identification_node import IdentificationNode
from dynid_ros.nodes.orchestrator_node import OrchestratorNode
from dynid_ros.nodes.recorder_node import RecorderNode
from ros_helpers import Latest, params, status_qos, wait_for, write_test_trajectory


def test_aborted_excitation_stops_recording_and_skips_identification(spinner, tmp_path):
    trajectory = write_test_trajectory(tmp_path / "t.yaml", period=0.5, harmonics=2)
    robot = spinner.add(Node("robot", context=spinner.context))
    states = robot.create_publisher(JointState, "/joint_states", 10)
    # joint states with the wrong names: the excitation must refuse to move
    robot.create_timer(0.01, lambda: states.publish(JointState(name=[f"j{i}" for i in range(7)],
                                                               position=np.zeros(7).tolist())))
    sent = Latest(robot, JointTrajectory, "/joint_trajectory_controller/joint_trajectory")
    status = {name: Latest(robot, String, f"/{name}/status", status_qos(), as_json=True)
              for name in ("recorder_node", "excitation_node", "identification_node", "orchestrator_node")}
    spinner.add(RecorderNode(context=spinner.context, parameter_overrides=params(bag_path=str(tmp_path / "bag"))))
    spinner.add(ExcitationNode(context=spinner.context, parameter_overrides=params(
        trajectory_file=str(trajectory), mode="topic")))
    spinner.add(IdentificationNode(context=spinner.context, parameter_overrides=params(
        robot="panda", bag_path=str(tmp_path / "bag"), output_dir=str(tmp_path / "out"))))
    time.sleep(0.3)
    spinner.add(OrchestratorNode(context=spinner.context))
    wait_for(lambda: (status["orchestrator_node"].last or {}).get("state") == "failed", what="orchestrator failed")
    assert "does not name joint(s)" in status["orchestrator_node"].last["message"]
    states_seen = [s["state"] for s in status["orchestrator_node"].messages]
    assert "recording" in states_seen and "exciting" in states_seen
    wait_for(lambda: status["recorder_node"].last["state"] == "stopped", what="recorder stopped")
    assert status["excitation_node"].last["state"] == "aborted"
    assert all(s["state"] != "running" for s in status["identification_node"].messages)
    assert not (tmp_path / "out").exists()
    assert sent.messages == []  # never moved
