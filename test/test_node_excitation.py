"""excitation_node with real rclpy: parameters, services, status, topic/stream motion, refusals.

The controller is a plain rclpy subscriber (it only has to exist and receive); joint states come
from a test publisher. Each refusal checks that nothing was sent to the controller.
"""

import time

import numpy as np
import pytest
import yaml
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory

from dynid_ros.nodes.excitation_node import PARAMETERS, ExcitationNode
from ros_helpers import Latest, call_trigger, params, status_qos, wait_for, write_test_trajectory

PANDA = [f"panda_joint{i}" for i in range(1, 8)]
CONTROLLER_TOPIC = "/joint_trajectory_controller/joint_trajectory"


@pytest.fixture(scope="module")
def trajectory_file(tmp_path_factory):
    return write_test_trajectory(tmp_path_factory.mktemp("traj") / "short.yaml", period=0.5, harmonics=2)


@pytest.fixture(scope="module")
def mid_pose(trajectory_file):
    limits = yaml.safe_load(trajectory_file.read_text())["limits"]["position"]
    return np.mean(np.array(limits), axis=1)


class Robot:
    """Joint states at 100 Hz (names and pose settable) and a controller that records what it gets."""

    def __init__(self, spinner, names, pose, controller=True):
        self.node = spinner.add(Node("robot", context=spinner.context))
        self.names, self.pose, self.publishing = list(names), list(pose), True
        self.state_pub = self.node.create_publisher(JointState, "/joint_states", 10)
        self.node.create_timer(0.01, self._publish)
        self.trajectories = Latest(self.node, JointTrajectory, CONTROLLER_TOPIC) if controller else None
        self.status = Latest(self.node, String, "/excitation_node/status", status_qos(), as_json=True)

    def _publish(self):
        if self.publishing:
            self.state_pub.publish(JointState(name=self.names, position=[float(v) for v in self.pose]))

    def states(self):
        return [s["state"] for s in self.status.messages]


def excitation(spinner, trajectory_file, **overrides):
    values = {"robot": "panda", "trajectory_file": str(trajectory_file), "mode": "topic", "wait_timeout": 1.0,
              **overrides}
    return spinner.add(ExcitationNode(context=spinner.context, parameter_overrides=params(**values)))


def test_parameters_and_services(spinner, trajectory_file):
    node = excitation(spinner, trajectory_file)
    names = {p.name for p in PARAMETERS}
    assert {"trajectory_file", "controller_name", "mode", "stream_rate_hz", "cycles", "autostart"} <= names
    assert node.get_parameter("controller_name").value == "joint_trajectory_controller"
    assert node.get_parameter("autostart").value is False
    assert node.get_parameter("cycles").value == 1
    services = dict(node.get_service_names_and_types_by_node("excitation_node", "/"))
    assert services["/excitation_node/start"] == ["std_srvs/srv/Trigger"]
    assert services["/excitation_node/stop"] == ["std_srvs/srv/Trigger"]


def test_topic_mode_sends_the_profile_and_reports_progress(spinner, trajectory_file, mid_pose):
    robot = Robot(spinner, PANDA, mid_pose + 0.05)
    excitation(spinner, trajectory_file, cycles=2)
    wait_for(lambda: robot.node.count_publishers(CONTROLLER_TOPIC) == 1, what="excitation publisher")
    time.sleep(0.2)
    response = call_trigger(robot.node, "/excitation_node/start")
    assert response.success, response.message
    wait_for(lambda: robot.trajectories.messages, what="trajectory on the controller topic")
    msg = robot.trajectories.last
    assert list(msg.joint_names) == PANDA
    first, last = msg.points[0], msg.points[-1]
    # the approach starts at the current pose (first waypoint 20 ms later, still next to it)
    np.testing.assert_allclose(first.positions, mid_pose + 0.05, atol=1e-3)
    assert len(first.velocities) == len(first.accelerations) == 7
    duration = last.time_from_start.sec + 1e-9 * last.time_from_start.nanosec
    assert call_trigger(robot.node, "/excitation_node/start").success is False  # already moving
    wait_for(lambda: "done" in robot.states(), timeout=duration + 5, what="done")
    states = robot.states()
    order = [s for i, s in enumerate(states) if i == 0 or s != states[i - 1]]
    assert order[-3:] == ["approaching", "running", "done"]
    progress = [s["progress"] for s in robot.status.messages]
    assert progress == sorted(progress) and progress[-1] == 1.0
    assert len(robot.trajectories.messages) == 1


def test_stop_while_moving_holds_the_robot(spinner, trajectory_file, mid_pose):
    robot = Robot(spinner, PANDA, mid_pose)
    excitation(spinner, trajectory_file, cycles=5)
    wait_for(lambda: robot.node.count_publishers(CONTROLLER_TOPIC) == 1, what="excitation publisher")
    time.sleep(0.2)
    assert call_trigger(robot.node, "/excitation_node/start").success
    wait_for(lambda: robot.trajectories.messages, what="trajectory")
    response = call_trigger(robot.node, "/excitation_node/stop")
    assert response.success
    wait_for(lambda: len(robot.trajectories.messages) == 2, what="stop message")
    stop = robot.trajectories.last
    assert list(stop.joint_names) == PANDA and len(stop.points) == 0  # empty trajectory: hold position
    wait_for(lambda: robot.states()[-1] == "aborted", what="aborted")
    assert "stopped on request" in robot.status.last["message"]


def test_stream_mode_streams_positions(spinner, trajectory_file, mid_pose):
    robot = Robot(spinner, PANDA, mid_pose, controller=False)
    commands = Latest(robot.node, Float64MultiArray, "/forward_position_controller/commands")
    excitation(spinner, trajectory_file, mode="stream", controller_name="forward_position_controller",
               stream_rate_hz=200.0)
    time.sleep(0.3)
    assert call_trigger(robot.node, "/excitation_node/start").success
    wait_for(lambda: "done" in robot.states(), timeout=10, what="done")
    assert len(commands.messages) > 100, robot.status.messages
    first = np.array(commands.messages[0].data)
    np.testing.assert_allclose(first, mid_pose, atol=1e-3)


def refused(robot, match, start=True):
    if start:
        response = call_trigger(robot.node, "/excitation_node/start")
        assert not response.success
        assert match in response.message
    wait_for(lambda: robot.status.last and robot.status.last["state"] == "aborted", what="aborted")
    assert match in robot.status.last["message"]
    if robot.trajectories is not None:
        time.sleep(0.2)
        assert robot.trajectories.messages == []  # never moved


def test_unknown_joints_are_refused(spinner, trajectory_file, mid_pose):
    robot = Robot(spinner, [f"arm_joint{i}" for i in range(1, 8)], mid_pose)
    excitation(spinner, trajectory_file)
    time.sleep(0.3)
    refused(robot, "does not name joint(s) panda_joint1")


def test_stale_and_missing_joint_states_are_refused(spinner, trajectory_file, mid_pose):
    robot = Robot(spinner, PANDA, mid_pose)
    robot.publishing = False
    excitation(spinner, trajectory_file, state_timeout=0.2)
    time.sleep(0.3)
    refused(robot, "no /joint_states received")
    robot.publishing = True
    time.sleep(0.2)
    robot.publishing = False
    time.sleep(0.5)
    refused(robot, "/joint_states is stale")


def test_limit_violating_trajectory_is_refused(spinner, trajectory_file, mid_pose, tmp_path):
    content = yaml.safe_load(trajectory_file.read_text())
    content["a"] = (4 * np.array(content["a"])).tolist()
    content["b"] = (4 * np.array(content["b"])).tolist()
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(content))
    robot = Robot(spinner, PANDA, mid_pose)
    excitation(spinner, bad)
    time.sleep(0.3)
    refused(robot, "outside the limits")


def test_unreachable_controller_is_refused(spinner, trajectory_file, mid_pose):
    robot = Robot(spinner, PANDA, mid_pose, controller=False)
    excitation(spinner, trajectory_file, wait_timeout=0.5)
    time.sleep(0.3)
    response = call_trigger(robot.node, "/excitation_node/start")
    assert response.success and "waiting for the controller" in response.message  # it waits wait_timeout
    refused(robot, f"no subscriber on {CONTROLLER_TOPIC} within 0.5 s", start=False)


def test_action_mode_without_control_msgs_reports_aborted(spinner, trajectory_file, mid_pose):
    try:
        import control_msgs  # noqa: F401
        pytest.skip("control_msgs is installed: this test covers its absence")
    except ImportError:
        pass
    robot = Robot(spinner, PANDA, mid_pose, controller=False)
    excitation(spinner, trajectory_file, mode="action")
    time.sleep(0.3)
    refused(robot, "mode 'action' needs control_msgs")


def test_autostart_waits_for_joint_states_then_moves(spinner, trajectory_file, mid_pose):
    robot = Robot(spinner, PANDA, mid_pose)
    robot.publishing = False
    excitation(spinner, trajectory_file, autostart=True, wait_timeout=5.0)
    time.sleep(0.5)
    assert robot.trajectories.messages == []
    robot.publishing = True
    wait_for(lambda: robot.trajectories.messages, what="autostarted trajectory")
    wait_for(lambda: "done" in robot.states(), timeout=10, what="done")


def test_wide_file_limits_and_motion_outside_the_urdf_are_refused(spinner, tmp_path):
    """The file's limits say +-10 rad, 100 rad/s; panda_joint4 swings past its URDF range: the robot's limits win."""
    from test_robot_limits import HOME, outside_urdf_trajectory, write_wide

    path = write_wide(tmp_path / "wide.yaml", outside_urdf_trajectory())
    robot = Robot(spinner, PANDA, HOME)
    excitation(spinner, path)
    time.sleep(0.3)
    refused(robot, "joint panda_joint4: position")
    assert "of the robot" in robot.status.last["message"] and "at t = " in robot.status.last["message"]


def test_a_robot_joint_missing_from_the_joint_states_is_refused(spinner, tmp_path):
    """A trajectory of six joints; /joint_states lacks the seventh robot joint: its pose is unknown, refused."""
    from dynid_ros.excitation import ExcitationTrajectory, FourierTrajectory, save_trajectory
    from test_robot_limits import HOME, outside_urdf_trajectory

    full = outside_urdf_trajectory(amplitude_rad=0.2, period=1.0)
    six = FourierTrajectory(full.joints[:6], full.wf, full.q0[:6], full.a[:6], full.b[:6])
    path = tmp_path / "six.yaml"
    save_trajectory(path, ExcitationTrajectory(six, None, 1.0))
    robot = Robot(spinner, PANDA[:6], HOME[:6])
    excitation(spinner, path)
    time.sleep(0.3)
    refused(robot, "does not name joint(s) panda_joint7 of the robot")


def test_a_trajectory_joint_the_robot_lacks_is_refused(spinner, tmp_path):
    from dynid_ros.excitation import ExcitationTrajectory, FourierTrajectory, save_trajectory
    from test_robot_limits import HOME, outside_urdf_trajectory

    full = outside_urdf_trajectory(amplitude_rad=0.2, period=1.0)
    renamed = FourierTrajectory((*full.joints[:6], "gripper_joint"), full.wf, full.q0, full.a, full.b)
    path = tmp_path / "other_robot.yaml"
    save_trajectory(path, ExcitationTrajectory(renamed, None, 1.0))
    robot = Robot(spinner, [*PANDA, "gripper_joint"], [*HOME, 0.0])  # even if /joint_states names it
    excitation(spinner, path)
    time.sleep(0.3)
    refused(robot, "trajectory joint(s) gripper_joint are not joints of the robot")
