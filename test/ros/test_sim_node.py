"""sim_node with real rclpy: parameters, /joint_states at 1 kHz, following JointTrajectory messages, and its
control_msgs/FollowJointTrajectory server driven by a plain rclpy ActionClient (control_msgs built by the test
set-up, test/support/control_msgs_build.py)."""

import time

import numpy as np
import pytest
import rclpy  # noqa: E402,F401
from builtin_interfaces.msg import Duration  # noqa: E402
from rclpy.node import Node  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from dynid_ros.errors import ConfigError
from dynid_ros.robot.model import load_model
from dynid_ros.robot.resources import robot_file
from dynid_ros.ros.sim_node import PARAMETERS, SimNode

from support.paths import REPO
from support.robots import FRANKA_STATES
from support.ros_helpers import Latest, params, robot_limits_of, status_qos, wait_for

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
    states = Latest(helper, JointState, FRANKA_STATES, 1000)
    wait_for(lambda: len(states.messages) > 1200, timeout=30, what="1200 joint states")
    msg = states.last
    assert list(msg.name) == list(panda.joints)
    assert len(msg.position) == len(msg.velocity) == len(msg.effort) == 7
    # default start: the middle of each joint's excitation limits (URDF range, config limits and margins)
    mid = robot_limits_of("panda").limits.position.mean(axis=1)
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
    states = Latest(helper, JointState, FRANKA_STATES, 100)
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
    # the trajectory is checked against the robot's limits first (a fraction of a second on a loaded machine)
    wait_for(lambda: np.abs(np.array(states.last.position) - q0).max() > 0.02, timeout=10, what="moving")
    middle = np.array(states.last.position)
    assert not np.allclose(middle, target, atol=3e-3)  # on its way along the interpolation, not jumped there
    wait_for(lambda: np.allclose(states.last.position, target, atol=3e-3), timeout=3, what="target reached")


def test_bad_initial_positions_are_refused(ros_context):
    with pytest.raises(ConfigError, match="initial_positions has 2 values; the robot has 7 joints"):
        SimNode(context=ros_context, parameter_overrides=params(robot="panda", initial_positions=[0.0, 0.1]))


ACTION = "/joint_trajectory_controller/follow_joint_trajectory"


class Controller:
    """A plain ActionClient of sim_node's FollowJointTrajectory server (sim_node spun as its ``main`` does)."""

    def __init__(self, spinner, truth="nominal"):
        from control_msgs.action import FollowJointTrajectory
        from rclpy.action import ActionClient

        self.action = FollowJointTrajectory
        self.sim = spinner.add(SimNode(context=spinner.context, parameter_overrides=params(
            robot="panda", truth=truth)), multithreaded=True)
        self.node = spinner.add(Node("client", context=spinner.context))
        self.client = ActionClient(self.node, FollowJointTrajectory, ACTION)
        spinner.cleanups.append(self.client.destroy)
        wait_for(lambda: self.client.server_is_ready() and self.sim.controller.last_sample is not None,
                 what="action server")

    @property
    def position(self):
        return np.array(self.sim.controller.last_sample.position)

    def goal(self, target, seconds, goal_tolerance=None, path_tolerance=(), goal_time_tolerance=0.5, joints=None):
        from control_msgs.msg import JointTolerance

        from dynid_ros.execution.follow_joint_trajectory import seconds_to_duration

        joints = list(joints or self.sim.joints)
        goal = self.action.Goal()
        goal.trajectory = JointTrajectory(joint_names=joints, points=[JointTrajectoryPoint(
            positions=[float(v) for v in target], velocities=[0.0] * len(joints),
            time_from_start=seconds_to_duration(seconds, Duration))])
        if goal_tolerance is not None:
            goal.goal_tolerance = [JointTolerance(name=j, position=goal_tolerance) for j in joints]
        goal.path_tolerance = [JointTolerance(name=j, position=tol) for j, tol in path_tolerance]
        goal.goal_time_tolerance = seconds_to_duration(goal_time_tolerance, Duration)
        return goal

    def send(self, goal):
        future = self.client.send_goal_async(goal)
        wait_for(future.done, what="goal response")
        return future.result()

    def result(self, handle, timeout=10.0):
        future = handle.get_result_async()
        wait_for(future.done, timeout, what="goal result")
        return future.result()


def test_follow_joint_trajectory_succeeds_with_error_code_0(spinner):
    from action_msgs.msg import GoalStatus

    controller = Controller(spinner)
    q0 = controller.position
    handle = controller.send(controller.goal(q0 + 0.05, 0.3, goal_tolerance=0.01))
    assert handle.accepted
    response = controller.result(handle)
    assert response.status == GoalStatus.STATUS_SUCCEEDED
    assert response.result.error_code == controller.action.Result.SUCCESSFUL == 0
    np.testing.assert_allclose(controller.position, q0 + 0.05, atol=0.01)


def test_goal_tolerance_and_goal_time_tolerance_are_honoured(spinner):
    """The simulated Panda with its config's truth (friction the controller does not know exactly) comes to rest
    about 7e-5 rad from a step's target (measured: the static friction holds it there): a 2e-3 tolerance is met
    at the trajectory's end or after it, within the goal time tolerance (success), a 1e-5 tolerance never
    (GOAL_TOLERANCE_VIOLATED, exactly when the goal time tolerance has run out)."""
    from action_msgs.msg import GoalStatus

    controller = Controller(spinner, truth="config")
    sim = controller.sim

    def run(tolerance, goal_time_tolerance):
        start = sim.sim.time
        handle = controller.send(controller.goal(controller.position + 0.05, 0.3, tolerance, (), goal_time_tolerance))
        response = controller.result(handle)
        return response, sim.sim.time - start

    response, took = run(2e-3, 2.0)
    assert response.status == GoalStatus.STATUS_SUCCEEDED and response.result.error_code == 0
    assert 0.3 <= took < 2.0  # at the end or after it, within the goal time tolerance
    response, took = run(1e-5, 0.5)
    assert response.status == GoalStatus.STATUS_ABORTED
    assert response.result.error_code == controller.action.Result.GOAL_TOLERANCE_VIOLATED
    assert "position error" in response.result.error_string and "exceeds tolerance 1e-05" in \
        response.result.error_string
    assert 0.3 + 0.5 <= took < 0.3 + 0.5 + 0.2  # given up when the goal time tolerance ran out, not before


def test_path_tolerance_violation_aborts_and_holds(spinner, panda):
    from action_msgs.msg import GoalStatus

    controller = Controller(spinner)
    q0 = controller.position
    joint = panda.joints[1]
    handle = controller.send(controller.goal(q0 + 0.2, 0.5, path_tolerance=[(joint, 1e-6)]))
    response = controller.result(handle)
    assert response.status == GoalStatus.STATUS_ABORTED
    assert response.result.error_code == controller.action.Result.PATH_TOLERANCE_VIOLATED
    assert f"joint {joint}: position error" in response.result.error_string
    time.sleep(0.6)
    held = controller.position
    time.sleep(0.3)
    np.testing.assert_allclose(controller.position, held, atol=2e-3)  # stopped where it was
    assert np.abs(held - q0).max() < 0.1  # far from the 0.5 rad target


def test_goal_beyond_the_robots_limits_is_aborted_before_moving(spinner):
    """The URDF range of panda_joint4 ends at -0.0698 rad: a goal past it is aborted (error code -1) unmoved."""
    from action_msgs.msg import GoalStatus

    controller = Controller(spinner)
    q0 = controller.position
    handle = controller.send(controller.goal(q0 + 3.5 * (np.arange(7) == 3), 5.0))
    response = controller.result(handle)
    assert response.status == GoalStatus.STATUS_ABORTED and response.result.error_code == -1
    assert "joint panda_joint4: position" in response.result.error_string
    assert "of the robot" in response.result.error_string
    np.testing.assert_allclose(controller.position, q0, atol=2e-3)


def test_cancel_stops_the_arm(spinner):
    from action_msgs.msg import GoalStatus

    controller = Controller(spinner)
    q0 = controller.position
    handle = controller.send(controller.goal(q0 + 0.3, 3.0))
    # on its way (by the simulation's progress, not the wall clock: a loaded machine slows the simulation down)
    wait_for(lambda: np.abs(controller.position - q0).max() > 0.006, what="moving")
    cancel = handle.cancel_goal_async()
    wait_for(cancel.done, what="cancel response")
    assert len(cancel.result().goals_canceling) == 1
    response = controller.result(handle)
    assert response.status == GoalStatus.STATUS_CANCELED
    time.sleep(0.2)
    held = controller.position
    time.sleep(0.3)
    np.testing.assert_allclose(controller.position, held, atol=2e-3)  # holds where it was
    assert 0.005 < np.abs(held - q0).max() < 0.2  # moved a little of the 0.3 rad


def test_goals_with_unknown_joints_are_rejected(spinner):
    controller = Controller(spinner)
    q0 = controller.position
    joints = list(controller.sim.joints[:-1]) + ["gripper_joint"]
    assert not controller.send(controller.goal(q0 + 0.1, 0.3, joints=joints)).accepted
    assert not controller.send(controller.goal(q0[:6] + 0.1, 0.3, joints=joints[:6])).accepted  # one missing
    time.sleep(0.3)
    np.testing.assert_allclose(controller.position, q0, atol=2e-3)  # never moved


def test_ctrl_c_during_a_goal_exits_promptly(spinner, tmp_path):
    """sim_node as launched (its own process): Ctrl-C while a goal executes ends the process at once (the
    goal's thread must not keep the interpreter alive)."""
    import signal

    from control_msgs.action import FollowJointTrajectory
    from rclpy.action import ActionClient

    from support.ros_helpers import node_process

    node = spinner.add(Node("client", context=spinner.context))
    client = ActionClient(node, FollowJointTrajectory, ACTION)
    spinner.cleanups.append(client.destroy)
    log = tmp_path / "sim_node.log"
    with node_process("sim_node", {"robot": "panda", "truth": "nominal"}, log) as process:
        wait_for(client.server_is_ready, timeout=30, what=f"sim_node's action server (log {log})")
        goal = FollowJointTrajectory.Goal()
        goal.trajectory = JointTrajectory(joint_names=[f"panda_joint{i}" for i in range(1, 8)], points=[
            JointTrajectoryPoint(positions=[0.0, 0.0, 0.0, -1.5, 0.0, 1.9, 0.0], time_from_start=Duration(sec=10))])
        future = client.send_goal_async(goal)
        wait_for(future.done, what="goal response")
        assert future.result().accepted
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=5)
    assert process.returncode == 0, log.read_text()


HAND_HIGH = [0.0, 0.0, 0.0, -1.5, 0.0, 1.5, 0.78]  # Panda, hand 0.65 m above the table
REACH_DOWN = [0.0, 1.6, 0.0, -0.4, 0.0, 1.5, 0.78]  # the arm leans forward into the table


def _goal(action, joints, t, q, dq, ddq):
    from dynid_ros.execution.follow_joint_trajectory import seconds_to_duration

    goal = action.Goal()
    goal.trajectory = JointTrajectory(joint_names=list(joints), points=[JointTrajectoryPoint(
        positions=q[k].tolist(), velocities=dq[k].tolist(), accelerations=ddq[k].tolist(),
        time_from_start=seconds_to_duration(float(t[k]), Duration)) for k in range(len(t)) if t[k] > 0])
    goal.goal_time_tolerance = seconds_to_duration(1.0, Duration)
    return goal


def test_contacts_of_a_goal_are_reported_none_for_a_shipped_excitation(spinner):
    """With the config's workcell (the table) and the robot's collision geometry in MuJoCo, the shipped Panda
    identification excitation runs as one goal without contact, keeping the collision margin, and ``~/contacts``
    says so; a goal leaning the arm into the table is reported with the link/table pair, in the log, on
    ``~/contacts`` and in the result's error string."""
    from action_msgs.msg import GoalStatus
    from control_msgs.action import FollowJointTrajectory
    from rclpy.action import ActionClient
    from std_msgs.msg import String

    from dynid_ros.excitation import load_trajectory
    from dynid_ros.execution.robot_limits import checked_profile

    excitation = load_trajectory(REPO / "dynid_ros" / "robot" / "trajectories" / "panda_identification.yaml")
    q_start = excitation.trajectory.evaluate(np.zeros(1))[0][0]
    sim = spinner.add(SimNode(context=spinner.context, parameter_overrides=params(
        robot="panda", truth="nominal", start_positions=q_start.tolist())), multithreaded=True)
    assert sim.sim.collision is not None and sim.sim.mujoco_model.npair > 0
    node = spinner.add(Node("client", context=spinner.context))
    reports = Latest(node, String, "/sim_node/contacts", status_qos(), as_json=True)
    client = ActionClient(node, FollowJointTrajectory, ACTION)
    spinner.cleanups.append(client.destroy)
    wait_for(lambda: client.server_is_ready() and sim.controller.last_sample is not None, what="action server")
    robot = robot_limits_of("panda")
    profile = checked_profile(excitation, robot, q_start, 1)
    joints = excitation.trajectory.joints

    def run(goal, timeout):
        future = client.send_goal_async(goal)
        wait_for(future.done, what="goal response")
        assert future.result().accepted
        result = future.result().get_result_async()
        wait_for(result.done, timeout, what="goal result")
        assert result.result().status == GoalStatus.STATUS_SUCCEEDED, result.result().result.error_string
        wait_for(lambda: len(reports.messages) > count, what="~/contacts report")
        return result.result(), reports.last

    count = 0
    response, report = run(_goal(FollowJointTrajectory, joints, *profile.sample_at_rate(100.0)), 180.0)
    assert response.status == GoalStatus.STATUS_SUCCEEDED, response.result.error_string
    assert report["motion"] == "goal" and report["outcome"] == "succeeded"
    assert report["contacts"] == 0 and report["contact_pairs"] == [], report
    assert "contacts" not in response.result.error_string
    kept = {row.name: row.margin for row in sim.sim.collision.rows}
    if report["smallest_clearance_m"] is not None:  # None: no pair came within watch_m
        assert report["smallest_clearance_m"] >= kept[report["between"]] - 1e-3, report
    for target in (HAND_HIGH, REACH_DOWN):
        count = len(reports.messages)
        t, d = np.linspace(0.0, 2.0, 41), 2.0  # a quintic rest-to-rest move of d seconds
        u = t / d
        s, ds, dds = (10 * u**3 - 15 * u**4 + 6 * u**5, (30 * u**2 - 60 * u**3 + 30 * u**4) / d,
                      (60 * u - 180 * u**2 + 120 * u**3) / d**2)
        q0 = sim.controller.last_sample.position
        step = np.asarray(target) - q0
        response, report = run(_goal(FollowJointTrajectory, sim.joints, t, q0 + s[:, None] * step,
                                     ds[:, None] * step, dds[:, None] * step), 30.0)
    assert report["contacts"] > 0 and report["motion"] == "goal"
    pairs = [c["pair"] for c in report["contact_pairs"]]
    assert any(pair.endswith(" and table") for pair in pairs), pairs
    assert "contacts in MuJoCo" in response.result.error_string and "table" in response.result.error_string
