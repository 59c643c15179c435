"""sim_node's controller, goal loop and start pose without ROS (dynid_ros.sim.trajectory_controller), on the
embedded MuJoCo robot with the shipped Panda and UR5e configs."""

import subprocess
import sys

import numpy as np
import pytest

from dynid_ros.errors import ConfigError, TrajectoryError
from dynid_ros.execution.follow_joint_trajectory import JointToleranceSpec
from dynid_ros.execution.robot_limits import check_motion
from dynid_ros.robot.config import load_config
from dynid_ros.robot.model import load_model
from dynid_ros.robot.resources import robot_file
from dynid_ros.sim import Simulator
from dynid_ros.sim.trajectory_controller import (
    GoalSupervision,
    SimulatedTrajectoryController,
    config_start_pose,
    run_goal,
    start_pose,
)

from support.ros_helpers import robot_limits_of

PANDA = robot_limits_of("panda")


@pytest.fixture
def controller():
    sim = Simulator(robot_file("panda", "urdf"))
    return SimulatedTrajectoryController(sim, PANDA, start_pose(sim.joints, [], None, PANDA))


def test_no_ros_is_loaded():
    code = "import sys, dynid_ros.sim.trajectory_controller; print('rclpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_default_start_pose_is_inside_the_excitation_limits_of_each_robot():
    ur5e = robot_limits_of("ur5e")
    q = start_pose(ur5e.joints, [], None, ur5e)
    lower, upper = ur5e.limits.position[:, 0], ur5e.limits.position[:, 1]
    assert np.all((q > lower) & (q < upper))
    lift = ur5e.joints.index("shoulder_lift_joint")
    assert -2.95 < q[lift] < -0.2  # the config's [-3.0, -0.15] minus its 0.05 margin; the URDF's middle is 0
    np.testing.assert_allclose(start_pose(ur5e.joints, [], [0.0, -1.0, 1.0, 0.0, 0.0, 0.0], ur5e)[1], -1.0)
    with pytest.raises(ConfigError, match="start_positions has 2 values; the robot has 6 joints"):
        start_pose(ur5e.joints, [0.0, 1.0], None, ur5e)
    with pytest.raises(ConfigError, match="simulation.start: joint shoulder_pan_joint at 9.0000 is outside"):
        start_pose(ur5e.joints, [], [9.0, -1.0, 1.0, 0.0, 0.0, 0.0], ur5e)
    # what a Gazebo launch needs for its initial values: the Panda's joint 4 inside its range (0 is not)
    panda = config_start_pose(load_model(urdf=robot_file("panda", "urdf")), load_config(robot_file("panda", "config")))
    lower, upper = PANDA.limits.position[:, 0], PANDA.limits.position[:, 1]
    assert np.all((panda > lower) & (panda < upper)) and panda[3] < -0.1


def trajectory_from(q, dt=0.02, steps=25, speed=0.5):
    """A JointTrajectory (as arrays) leaving ``q`` at rest: quintic waypoints every ``dt``."""
    t = dt * np.arange(1, steps + 1)
    s = t / t[-1]
    shape, rate = 10 * s**3 - 15 * s**4 + 6 * s**5, (30 * s**2 - 60 * s**3 + 30 * s**4) / t[-1]
    accel = (60 * s - 180 * s**2 + 120 * s**3) / t[-1] ** 2
    delta = speed * t[-1] / 1.875 * np.ones_like(q)
    return t, q + np.outer(shape, delta), np.outer(rate, delta), np.outer(accel, delta)


def test_a_new_trajectory_starts_from_the_measured_pose(controller):
    """The arm is 0.01 rad off its hold reference (as after a disturbance or a long idle): a trajectory built from the
    measured pose, first waypoint 20 ms later, is accepted and starts there; blended from the old hold reference the
    0.01 rad would take ~140 rad/s^2 within 20 ms, beyond the Panda's limits."""
    q_hold = controller.reference.sample(0.0)[0]
    controller.sim.reset(q_hold + 0.01)
    controller.step()
    now, (q_measured, dq_measured, _) = controller.measured()
    t, q, dq, ddq = trajectory_from(q_measured)
    from_reference = controller.reference.replace(now, None, controller.joints, t, q, dq, ddq)  # the former start
    grid = np.arange(now, from_reference.end_time, 1e-3)
    with pytest.raises(TrajectoryError, match="acceleration"):
        check_motion(PANDA, controller.joints, grid, *from_reference.sample_many(grid))
    end = controller.follow(None, controller.joints, t, q, dq, ddq)
    assert end == pytest.approx(now + t[-1])
    np.testing.assert_allclose(controller.reference.sample(now)[0], q_measured)
    np.testing.assert_allclose(controller.reference.sample(now)[1], dq_measured)
    for _ in range(int(t[-1] / controller.sim.timestep) + 50):
        controller.step()
    np.testing.assert_allclose(controller.last_sample.position, q[-1], atol=2e-3)


def test_goal_loop_verdicts(controller):
    joints = controller.joints
    controller.step()
    now, (q0, _, _) = controller.measured()
    tight = [JointToleranceSpec(j, position=1e-9) for j in joints]
    supervision = GoalSupervision(joints, tight, [], 0.5, now + 1.0)
    controller.follow(None, joints, *trajectory_from(q0))
    for _ in range(30):
        controller.step()
    verdict = run_goal(controller, supervision, lambda: False, lambda: False, lambda: False, period_s=0.0)
    assert verdict.outcome == "aborted" and verdict.error_code == -4
    assert "exceeds tolerance 1e-09" in verdict.error_string
    held = controller.reference
    assert held.times.size == 1  # holding where the arm is
    canceled = run_goal(controller, supervision, lambda: False, lambda: False, lambda: True, period_s=0.0)
    assert canceled.outcome == "canceled"
    done = GoalSupervision(joints, [], [JointToleranceSpec(j, position=0.05) for j in joints], 0.5, 0.0)
    assert run_goal(controller, done, lambda: False, lambda: False, lambda: False, period_s=0.0).success
