"""orchestrator_node with real rclpy: an aborted excitation stops the recorder and skips identification."""

import json
import time

import numpy as np
import yaml
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from dynid_ros.ros.common import latched_qos
from dynid_ros.ros.excitation_node import ExcitationNode
from dynid_ros.ros.identification_node import IdentificationNode
from dynid_ros.ros.orchestrator_node import OrchestratorNode
from dynid_ros.ros.recorder_node import RecorderNode

from support.robots import FRANKA_STATES
from support.ros_helpers import Latest, params, status_qos, wait_for, write_test_trajectory


def test_aborted_excitation_stops_recording_and_skips_identification(spinner, tmp_path):
    trajectory = write_test_trajectory(tmp_path / "t.yaml", period=0.5, harmonics=2)
    robot = spinner.add(Node("robot", context=spinner.context))
    states = robot.create_publisher(JointState, FRANKA_STATES, 10)
    # joint states with the wrong names: the excitation must refuse to move
    robot.create_timer(0.01, lambda: states.publish(JointState(name=[f"j{i}" for i in range(7)],
                                                               position=np.zeros(7).tolist())))
    sent = Latest(robot, JointTrajectory, "/joint_trajectory_controller/joint_trajectory")
    status = {name: Latest(robot, String, f"/{name}/status", status_qos(), as_json=True)
              for name in ("recorder_node", "excitation_node", "identification_node", "orchestrator_node")}
    spinner.add(RecorderNode(context=spinner.context, parameter_overrides=params(robot="panda",
                                                                               bag_path=str(tmp_path / "bag"))))
    spinner.add(ExcitationNode(context=spinner.context, parameter_overrides=params(
        robot="panda", trajectory_file=str(trajectory), mode="topic")))
    spinner.add(IdentificationNode(context=spinner.context, parameter_overrides=params(
        robot="panda", bag_path=str(tmp_path / "bag"), output_dir=str(tmp_path / "out"))))
    time.sleep(0.3)
    spinner.add(OrchestratorNode(context=spinner.context))
    wait_for(lambda: (status["orchestrator_node"].last or {}).get("state") == "aborted", what="orchestrator aborted")
    assert "does not name joint(s)" in status["orchestrator_node"].last["message"]
    states_seen = [s["state"] for s in status["orchestrator_node"].messages]
    assert "recording" in states_seen and "exciting" in states_seen
    wait_for(lambda: status["recorder_node"].last["state"] == "stopped", what="recorder stopped")
    assert status["excitation_node"].last["state"] == "aborted"
    assert all(s["state"] != "running" for s in status["identification_node"].messages)
    assert not (tmp_path / "out").exists()
    assert sent.messages == []  # never moved


# ----------------------------------------------------------------------------------------------
# Deadlines, stale statuses, unanswered calls. Where a test needs a node that hangs or carries the
# latched status of an earlier run, a plain rclpy node stands in for it (named like the real one,
# same services and status topic): the real nodes do not hang on purpose.

PANDA = [f"panda_joint{i}" for i in range(1, 8)]
CONTROLLER_TOPIC = "/joint_trajectory_controller/joint_trajectory"


class StandIn:
    """A node named ``name`` with Trigger services (``answers``: name -> (success, message), or None for
    a service that never answers: it lives on a second node that nobody spins) and a latched ``~/status``."""

    def __init__(self, spinner, name, answers, on_call=None):
        self.node = spinner.add(Node(name, context=spinner.context))
        self.hung = Node(f"{name}_hung", context=spinner.context)  # never spun; ends with the context
        self.status = self.node.create_publisher(String, "~/status", latched_qos())
        self.calls = []
        for service, answer in answers.items():
            owner = self.node if answer is not None else self.hung
            owner.create_service(Trigger, f"/{name}/{service}", self._handler(service, answer, on_call))

    def _handler(self, service, answer, on_call):
        def handle(request, response):
            self.calls.append(service)
            if on_call is not None:
                on_call(service)
            response.success, response.message = answer
            return response
        return handle

    def publish(self, **content):
        self.status.publish(String(data=json.dumps(content)))


class Robot:
    """Joint states of the Panda at ``pose`` (100 Hz) and a trajectory controller topic that records."""

    def __init__(self, spinner, pose, publishing=True):
        self.node = spinner.add(Node("robot", context=spinner.context))
        self.publishing = publishing
        states = self.node.create_publisher(JointState, FRANKA_STATES, 10)
        self.node.create_timer(0.01, lambda: self.publishing and states.publish(
            JointState(name=PANDA, position=[float(v) for v in pose])))
        self.sent = Latest(self.node, JointTrajectory, CONTROLLER_TOPIC)
        self.status = {name: Latest(self.node, String, f"/{name}/status", status_qos(), as_json=True)
                       for name in ("recorder_node", "excitation_node", "identification_node", "orchestrator_node")}

    def states(self, name):
        return [s["state"] for s in self.status[name].messages]

    def wait_until_ended(self, timeout=15.0):
        return wait_for(lambda: (self.status["orchestrator_node"].last or {}).get("state") in ("done", "aborted")
                        and self.status["orchestrator_node"].last, timeout=timeout, what="end of the run")


def panda_trajectory(tmp_path, period):
    path = write_test_trajectory(tmp_path / "t.yaml", period=period, harmonics=2)
    limits = np.array(yaml.safe_load(path.read_text())["limits"]["position"])
    return path, limits.mean(axis=1)


def recorder_and_excitation(spinner, tmp_path, trajectory):
    spinner.add(RecorderNode(context=spinner.context, parameter_overrides=params(robot="panda",
                                                                               bag_path=str(tmp_path / "bag"))))
    spinner.add(ExcitationNode(context=spinner.context, parameter_overrides=params(
        robot="panda", trajectory_file=str(trajectory), mode="topic", wait_timeout=2.0)))


def test_stale_done_of_an_earlier_run_is_ignored_and_identification_has_a_deadline(spinner, tmp_path):
    trajectory, pose = panda_trajectory(tmp_path, period=0.5)
    robot = Robot(spinner, pose)
    recorder_and_excitation(spinner, tmp_path, trajectory)
    identification = StandIn(spinner, "identification_node", {"identify": (True, "identifying")},
                             on_call=lambda _: identification.publish(state="running", message="identifying"))
    identification.publish(state="done", message="identified by an EARLIER run")  # latched, stale
    time.sleep(0.3)
    orchestrator = spinner.add(OrchestratorNode(context=spinner.context, parameter_overrides=params(
        settle_time=0.2, identify_timeout=1.5)))
    last = robot.wait_until_ended()
    assert last == {"state": "aborted", "message": "the identification did not end within 1.5 s"}, last
    assert orchestrator.run.status["identification"]["state"] == "running"  # this run's status counts, the old one not
    assert "done" not in robot.states("orchestrator_node") and "identifying" in robot.states("orchestrator_node")
    assert identification.calls == ["identify"]  # the deadline's timing: test_orchestration.py, on a set clock
    assert robot.status["recorder_node"].last["state"] == "stopped"
    assert robot.states("excitation_node")[-1] == "done"


def test_joint_state_deadline_counts_from_the_recording_start(spinner, tmp_path):
    trajectory, pose = panda_trajectory(tmp_path, period=0.5)
    robot = Robot(spinner, pose, publishing=False)  # no joint states at all
    spinner.add(OrchestratorNode(context=spinner.context, parameter_overrides=params(
        service_timeout=20.0, joint_states_timeout=1.0, identify=False)))
    time.sleep(2.0)  # the nodes come up late: a deadline counted from the orchestrator's start would be gone
    recorder_and_excitation(spinner, tmp_path, trajectory)
    wait_for(lambda: "recording" in robot.states("recorder_node"), what="recording")
    last = robot.wait_until_ended()
    assert last["state"] == "aborted", last
    assert last["message"] == "the excitation node has received no joint states 1 s after the recording start"
    wait_for(lambda: robot.states("recorder_node")[-1] == "stopped", what="recorder stopped")
    assert robot.sent.messages == []


def test_an_unanswered_call_aborts_after_service_timeout(spinner, tmp_path):
    trajectory, pose = panda_trajectory(tmp_path, period=0.5)
    robot = Robot(spinner, pose)
    recorder = StandIn(spinner, "recorder_node", {"start": None, "stop": (True, "stopped")})
    spinner.add(ExcitationNode(context=spinner.context, parameter_overrides=params(
        robot="panda", trajectory_file=str(trajectory), mode="topic")))
    StandIn(spinner, "identification_node", {"identify": (True, "identifying")})
    spinner.add(OrchestratorNode(context=spinner.context, parameter_overrides=params(service_timeout=1.0)))
    last = robot.wait_until_ended()
    assert last == {"state": "aborted", "message": "no answer from /recorder_node/start within 1 s"}, last
    wait_for(lambda: recorder.calls == ["stop"], what="stop after the unanswered start")
    assert robot.sent.messages == []


def test_a_deadline_while_moving_stops_the_excitation_and_the_recorder(spinner, tmp_path):
    trajectory, pose = panda_trajectory(tmp_path, period=4.0)
    robot = Robot(spinner, pose)
    recorder_and_excitation(spinner, tmp_path, trajectory)
    StandIn(spinner, "identification_node", {"identify": (True, "identifying")})
    spinner.add(OrchestratorNode(context=spinner.context, parameter_overrides=params(excitation_timeout=1.0)))
    last = robot.wait_until_ended()
    assert last["state"] == "aborted" and last["message"].startswith("the excitation did not end within 1 s"), last
    wait_for(lambda: len(robot.sent.messages) == 2, what="the stop trajectory")
    stop = robot.sent.messages[1]
    assert len(robot.sent.messages[0].points) > 0  # the motion, then a decelerating stop ending at rest
    assert len(stop.points) >= 2 and np.abs(stop.points[-1].velocities).max() == 0.0
    wait_for(lambda: robot.states("excitation_node")[-1] == "aborted", what="excitation aborted")
    assert "stopped on request" in robot.status["excitation_node"].last["message"]
    wait_for(lambda: robot.states("recorder_node")[-1] == "stopped", what="recorder stopped")
    assert "done" not in robot.states("excitation_node")


def test_shutdown_when_done_ends_the_process_with_status_1_and_the_reason_when_aborted(tmp_path):
    """As a launch file runs it (on_exit Shutdown): alone, it finds no services and ends by itself."""
    from support.ros_helpers import node_process

    log = tmp_path / "orchestrator_node.log"
    with node_process("orchestrator_node", {"shutdown_when_done": True, "service_timeout": 0.5}, log) as process:
        process.wait(timeout=30)
    text = log.read_text()
    assert process.returncode == 1, text
    assert "aborted: services not available within 0.5 s: " in text and "/identification_node/identify" in text
    assert "Traceback" not in text
