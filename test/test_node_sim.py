"""sim_node with real rclpy: parameters, /joint_states at 1 kHz, following JointTrajectory messages."""

import time

import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from rclpy.node import Node
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from dynid_ros.errors import ConfigError
from dynid_ros.model import load_model
from dynid_ros.nodes.sim_node import PARAMETERS, SimNode
from dynid_ros.resources import robot_file
from ros_helpers import Latest, params, wait_for

TOPIC = "/joint_trajectory_controller/joint_trajectory"


@pytest.fixture(scope="module")
def panda():
    return load_model(urdf=robot_file("panda", "urdf"))


def stamps(messages):
    return np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in messages])


def test_parameters_and_joint_states_at_1khz(spinner, panda):
    node = spinner.add(SimNode(context=spinner.context, parameter_overrides=params(robot="panda", truth="nominal")))
    assert {p.name for p in PARAMETERS} >= {"urdf_path", "robot_description", "rate_hz", "controller_name",
                                            "initial_positions", "truth", "seed", "effort_noise"}
    assert node.get_parameter("rate_hz").value == 1000.0
    assert node.get_parameter("controller_name").value == "joint_trajectory_controller"
    helper = spinner.add(Node("helper", context=spinner.context))
    states = Latest(helper, JointState, "/joint_states", 1000)
    wait_for(lambda: len(states.messages) > 1200, timeout=30, what="1200 joint states")
    msg = states.last
    assert list(msg.name) == list(panda.joints)
    assert len(msg.position) == len(msg.velocity) == len(msg.effort) == 7
    mid = np.asarray(panda.position_limits).mean(axis=1)  # default start: the middle of each range
    np.testing.assert_allclose(msg.position, mid, atol=2e-3)
    assert np.abs(msg.effort).max() > 1.0  # holding the arm against gravity
    step = np.diff(stamps(states.messages[-1000:]))
    # stamps on an exact 1 ms grid (a loaded test process may miss a message, never reorder one)
    np.testing.assert_allclose(step / 1e-3, np.round(step / 1e-3), atol=2e-3)
    assert np.median(step) == pytest.approx(1e-3, abs=1e-6) and step.min() > 0
    assert helper.count_subscribers(TOPIC) == 1


def test_follows_a_trajectory_and_ignores_wrong_joints(spinner, panda):
    q0 = np.asarray(panda.position_limits).mean(axis=1) + 0.05
    spinner.add(SimNode(context=spinner.context, parameter_overrides=params(
        robot="panda", truth="nominal", initial_positions=q0.tolist())))
    helper = spinner.add(Node("helper", context=spinner.context))
    states = Latest(helper, JointState, "/joint_states", 100)
    publisher = helper.create_publisher(JointTrajectory, TOPIC, 10)
    wait_for(lambda: publisher.get_subscription_count() == 1 and states.messages, what="sim_node")
    np.testing.assert_allclose(states.last.position, q0, atol=2e-3)
    wrong = JointTrajectory(joint_names=["elbow"], points=[JointTrajectoryPoint(
        positions=[1.0], time_from_start=Duration(sec=0, nanosec=100_000_000))])
    publisher.publish(wrong)
    time.sleep(0.3)
    np.testing.assert_allclose(states.last.position, q0, atol=2e-3)  # ignored
    target = q0 + np.linspace(-0.2, 0.2, 7)
    names = list(reversed(panda.joints))  # any order, by name
    publisher.publish(JointTrajectory(joint_names=names, points=[JointTrajectoryPoint(
        positions=target[::-1].tolist(), velocities=[0.0] * 7,
        time_from_start=Duration(sec=0, nanosec=500_000_000))]))
    time.sleep(0.25)
    middle = np.array(states.last.position)
    assert np.all(np.abs(middle - q0) > 0.01 * np.abs(target - q0))  # on its way
    wait_for(lambda: np.allclose(states.last.position, target, atol=3e-3), timeout=3, what="target reached")


def test_bad_initial_positions_are_refused(ros_context):
    with pytest.raises(ConfigError, match="initial_positions has 2 values; the robot has 7 joints"):
        SimNode(context=ros_context, parameter_overrides=params(robot="panda", initial_positions=[0.0, 0.1]))


class GoalHandle:
    """Stand-in for rclpy's ServerGoalHandle (control_msgs is not installable here): the request and
    the three ways a goal ends. The request holds a real JointTrajectory; tolerances use the
    JointTolerance stand-in of test_follow_joint_trajectory."""

    def __init__(self, request):
        self.request, self.is_cancel_requested, self.ended = request, False, None

    def succeed(self):
        self.ended = "succeeded"

    def abort(self):
        self.ended = "aborted"

    def canceled(self):
        self.ended = "canceled"


def action_request(joints, target, seconds, path_tolerance=()):
    from types import SimpleNamespace

    from test_follow_joint_trajectory import JointTolerance

    trajectory = JointTrajectory(joint_names=list(joints), points=[JointTrajectoryPoint(
        positions=list(target), velocities=[0.0] * len(joints),
        time_from_start=Duration(sec=int(seconds), nanosec=int((seconds % 1) * 1e9)))])
    return SimpleNamespace(trajectory=trajectory, goal_tolerance=[JointTolerance(j, 0.01) for j in joints],
                           path_tolerance=[JointTolerance(j, tol) for j, tol in path_tolerance],
                           goal_time_tolerance=Duration(sec=1))


def test_follow_joint_trajectory_server_logic(spinner, panda):
    """sim_node's FollowJointTrajectory execute callback, driven with stand-ins for control_msgs."""
    from dataclasses import dataclass
    from types import SimpleNamespace

    from dynid_ros.follow_joint_trajectory import PATH_TOLERANCE_VIOLATED

    @dataclass
    class Result:  # control_msgs/action/FollowJointTrajectory Result (same fields)
        error_code: int = 0
        error_string: str = ""

    node = spinner.add(SimNode(context=spinner.context, parameter_overrides=params(robot="panda", truth="nominal")))
    node._fjt = SimpleNamespace(Result=Result)
    wait_for(lambda: node.last_sample is not None, what="simulation running")
    q0 = np.array(node.last_sample.position)
    # success: reaches the goal within the goal tolerance
    handle = GoalHandle(action_request(panda.joints, q0 + 0.05, 0.3))
    result = node._execute_goal(handle)
    assert handle.ended == "succeeded" and result.error_code == 0
    np.testing.assert_allclose(node.last_sample.position, q0 + 0.05, atol=0.01)
    # a path tolerance far below the tracking error of a move: aborted with PATH_TOLERANCE_VIOLATED
    handle = GoalHandle(action_request(panda.joints, q0 + 0.2, 0.5, [(panda.joints[1], 1e-6)]))
    result = node._execute_goal(handle)
    assert handle.ended == "aborted" and result.error_code == PATH_TOLERANCE_VIOLATED
    assert panda.joints[1] in result.error_string
    # cancel: the robot holds where it is
    handle = GoalHandle(action_request(panda.joints, q0, 5.0))
    handle.is_cancel_requested = True
    node._execute_goal(handle)
    assert handle.ended == "canceled"
    # beyond the robot's limits (URDF range of panda_joint4 ends at -0.0698): aborted before moving
    handle = GoalHandle(action_request(panda.joints, q0 + 3.5 * (np.arange(7) == 3), 5.0))
    result = node._execute_goal(handle)
    assert handle.ended == "aborted" and result.error_code == -1
    assert "joint panda_joint4: position" in result.error_string and "of the robot" in result.error_string
    # wrong joints: aborted before moving
    handle = GoalHandle(action_request(["x"] * 7, q0, 1.0))
    result = node._execute_goal(handle)
    assert handle.ended == "aborted" and result.error_code == -1
