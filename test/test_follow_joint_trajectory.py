"""Action mode of excitation_node (dynid_ros.follow_joint_trajectory), tested without control_msgs.

control_msgs is not installable here (no PyPI wheel). What stands in for it: ``Goal`` and
``JointTolerance`` below are dataclasses with exactly the fields of
control_msgs/action/FollowJointTrajectory Goal and control_msgs/msg/JointTolerance; the trajectory in
the goal is a real trajectory_msgs/JointTrajectory with real JointTrajectoryPoint and
builtin_interfaces/Duration; goal statuses and error codes are the documented integer constants of
action_msgs/GoalStatus and FollowJointTrajectory.Result, fed to the code as a server would report them.
"""

from dataclasses import dataclass, field

import builtin_interfaces.msg as builtin_interfaces
import numpy as np
import pytest
import trajectory_msgs.msg as trajectory_msgs

from dynid_ros.excitation.trajectory_file import load_trajectory
from dynid_ros.follow_joint_trajectory import (
    ERROR_CODES,
    GoalPhase,
    GoalStatus,
    GoalTracker,
    JointToleranceSpec,
    build_goal_spec,
    fill_goal,
    interpret_result,
    load_control_msgs,
    seconds_to_duration,
    tolerance_violation,
    tolerances_from_message,
)
from dynid_ros.trajectory_execution import ControllerError, prepare_profile
from ros_helpers import robot_limits_of, write_test_trajectory


@dataclass
class JointTolerance:
    """Stand-in for control_msgs/msg/JointTolerance (same fields)."""

    name: str = ""
    position: float = 0.0
    velocity: float = 0.0
    acceleration: float = 0.0


@dataclass
class Goal:
    """Stand-in for control_msgs/action/FollowJointTrajectory Goal (same fields)."""

    trajectory: object = field(default_factory=lambda: trajectory_msgs.JointTrajectory())
    path_tolerance: list = field(default_factory=list)
    goal_tolerance: list = field(default_factory=list)
    goal_time_tolerance: object = field(default_factory=lambda: builtin_interfaces.Duration())


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    excitation = load_trajectory(write_test_trajectory(tmp_path_factory.mktemp("t") / "t.yaml", period=1.0))
    return prepare_profile(excitation, excitation.limits.position.mean(axis=1), 1, 500.0, robot_limits_of("panda"))


def test_goal_carries_the_profile_and_tolerances(profile):
    spec = build_goal_spec(profile, 50.0, path_position_tolerance=0.05, goal_position_tolerance=0.01,
                           goal_time_tolerance=0.25)
    goal = fill_goal(Goal(), spec, trajectory_msgs.JointTrajectoryPoint, JointTolerance, builtin_interfaces.Duration)
    traj = goal.trajectory
    assert isinstance(traj, trajectory_msgs.JointTrajectory)
    assert list(traj.joint_names) == list(profile.joints)
    assert traj.header.stamp.sec == 0 and traj.header.stamp.nanosec == 0  # start on receipt
    times = [p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in traj.points]
    assert times[0] == pytest.approx(0.02) and times[-1] == pytest.approx(profile.duration)
    assert np.all(np.diff(times) > 0)
    k = len(times) // 2
    q, dq, ddq = (a[0] for a in profile.sample(np.array([times[k]])))
    np.testing.assert_allclose(traj.points[k].positions, q, atol=1e-12)
    np.testing.assert_allclose(traj.points[k].velocities, dq, atol=1e-12)
    np.testing.assert_allclose(traj.points[k].accelerations, ddq, atol=1e-12)
    assert [t.name for t in goal.path_tolerance] == list(profile.joints)
    assert all(t.position == 0.05 for t in goal.path_tolerance)
    assert all(t.position == 0.01 for t in goal.goal_tolerance)
    assert (goal.goal_time_tolerance.sec, goal.goal_time_tolerance.nanosec) == (0, 250_000_000)
    # no tolerance given: empty lists, the controller's defaults apply
    plain = build_goal_spec(profile, 50.0)
    assert plain.path_tolerance == [] and plain.goal_tolerance == []


def test_durations_round_correctly():
    d = seconds_to_duration(1.9999999999, builtin_interfaces.Duration)
    assert (d.sec, d.nanosec) == (2, 0)
    d = seconds_to_duration(3.25, builtin_interfaces.Duration)
    assert (d.sec, d.nanosec) == (3, 250_000_000)


@pytest.mark.parametrize("status, code, success, words", [
    (GoalStatus.SUCCEEDED, 0, True, "executed"),
    (GoalStatus.SUCCEEDED, -4, False, "SUCCEEDED but PATH_TOLERANCE_VIOLATED"),
    (GoalStatus.ABORTED, 0, False, "ABORTED: SUCCESSFUL"),
    (GoalStatus.ABORTED, -5, False, "GOAL_TOLERANCE_VIOLATED"),
    (GoalStatus.ABORTED, -2, False, "INVALID_JOINTS"),
    (GoalStatus.CANCELED, 0, False, "canceled"),
    (GoalStatus.ABORTED, -99, False, "error code -99"),
])
def test_result_needs_both_status_and_error_code(status, code, success, words):
    outcome = interpret_result(int(status), code, "detail")
    assert outcome.success is success
    assert words in outcome.message
    assert set(ERROR_CODES) == {0, -1, -2, -3, -4, -5}


def test_tracker_accept_then_succeed():
    tracker = GoalTracker()
    assert tracker.on_goal_response(True) is False
    assert tracker.phase is GoalPhase.ACTIVE
    outcome = tracker.on_result(GoalStatus.SUCCEEDED, 0)
    assert outcome.success and tracker.finished
    assert tracker.request_cancel() is False  # nothing left to cancel


def test_tracker_rejected_goal_fails():
    tracker = GoalTracker()
    tracker.on_goal_response(False)
    assert tracker.finished and not tracker.outcome.success
    assert "rejected" in tracker.outcome.message


def test_tracker_cancel_while_active_and_before_the_response():
    active = GoalTracker()
    active.on_goal_response(True)
    assert active.request_cancel() is True  # send the cancel now
    assert active.request_cancel() is False  # only once
    outcome = active.on_result(GoalStatus.CANCELED, 0)
    assert not outcome.success and "stopped on request" in outcome.message

    sending = GoalTracker()
    assert sending.request_cancel() is False  # no handle yet
    assert sending.on_goal_response(True) is True  # cancel as soon as it is accepted
    assert sending.phase is GoalPhase.CANCELING


def test_tracker_transport_error_fails():
    tracker = GoalTracker()
    outcome = tracker.on_error("server died")
    assert tracker.finished and not outcome.success and outcome.message == "server died"


def test_tolerance_violation_per_joint():
    joints = ("a", "b")
    tolerances = tolerances_from_message([JointTolerance("b", 0.1, 0.5, 0.0)])
    assert tolerances == [JointToleranceSpec("b", 0.1, 0.5, 0.0)]
    assert tolerance_violation(joints, tolerances, np.array([5.0, 0.05])) is None  # a: no tolerance
    assert "joint b: position error 0.2" in tolerance_violation(joints, tolerances, np.array([0.0, 0.2]))
    assert "velocity" in tolerance_violation(joints, tolerances, np.zeros(2), np.array([0.0, -0.6]))
    assert "joint a" in tolerance_violation(joints, tolerances, np.array([0.3, 0.0]), default_position=0.2)
    negative = [JointToleranceSpec("a", -1.0)]  # negative: no limit
    assert tolerance_violation(joints, negative, np.array([9.0, 0.0]), default_position=0.2) is None


def test_missing_control_msgs_is_a_clear_error():
    try:
        import control_msgs.action  # noqa: F401
    except ImportError:
        with pytest.raises(ControllerError, match="mode 'action' needs control_msgs"):
            load_control_msgs()
    else:
        assert load_control_msgs().FollowJointTrajectory is not None
