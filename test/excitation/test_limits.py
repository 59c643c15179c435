"""The limits an excitation must respect: from the description and the config (margins, overrides, torque limits),
and the check on a dense grid that names the joint, quantity, time and value of a violation."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.errors import ConfigError, TrajectoryError
from dynid_ros.excitation import ExcitationLimits, check_trajectory_limits, limits_from_model
from dynid_ros.excitation.limits import (
    check_sampled_limits,
    coupled_joint_limits,
    effort_bounds,
    sample_trajectory,
)
from dynid_ros.excitation.torques import nominal_torques
from dynid_ros.robot.config import config_section
from dynid_ros.robot.model import load_model
from dynid_ros.robot.resources import robot_file

from support import excitation_cases
from support.excitation_cases import PANDA_ACCELERATION, panda_model, trajectory_at_rest


@pytest.fixture(scope="module")
def panda():
    return panda_model()


@pytest.fixture(scope="module", name="panda_limits")
def shipped_panda_limits():
    return excitation_cases.panda_limits()


def test_limits_from_panda_config(panda, panda_limits):
    np.testing.assert_allclose(panda_limits.acceleration, PANDA_ACCELERATION)
    np.testing.assert_allclose(panda_limits.velocity, 0.9 * panda.velocity_limits)
    np.testing.assert_allclose(panda_limits.position, panda.position_limits + [0.05, -0.05])
    assert panda_limits.effort is None
    override = limits_from_model(panda, {"position": {"panda_joint2": [-1.0, 1.0]}, "margins": {"position": 0.0},
                                         "velocity": 1.0, "torque_limits": True})
    np.testing.assert_allclose(override.position[1], [-1.0, 1.0])
    np.testing.assert_allclose(override.velocity, 0.9)
    np.testing.assert_allclose(override.acceleration, 5.0)  # the conservative default
    np.testing.assert_allclose(override.effort, 0.8 * panda.effort_limits)
    with pytest.raises(ConfigError, match="panda_joint9"):
        limits_from_model(panda, {"acceleration": {"panda_joint9": 3.0}})
    with pytest.raises(ConfigError, match="velocity must be in"):
        limits_from_model(panda, {"margins": {"velocity": 1.5}})
    subset = load_model(urdf=robot_file("panda", "urdf"), joints=["panda_joint2", "panda_joint4"])
    sub_limits = limits_from_model(subset, config_section(robot_file("panda", "config"), "excitation"))
    np.testing.assert_allclose(sub_limits.acceleration, [7.5, 12.5])


def test_check_trajectory_limits_margins_and_violations(panda, panda_limits):
    traj = trajectory_at_rest(panda_limits, panda.joints)
    margins = check_trajectory_limits(traj, panda_limits)
    q, dq, ddq = traj.evaluate(np.linspace(0, traj.period, 10001))
    assert margins["velocity"] == pytest.approx(np.min(1 - np.abs(dq).max(axis=0) / panda_limits.velocity), abs=1e-4)
    assert margins["tightest"].split(" of ")[1] in panda.joints
    assert 0 < margins["position"] < 1
    fast = traj.scaled(40.0)
    with pytest.raises(TrajectoryError, match=r"joint panda_joint\d: (velocity|acceleration|position) .* at t = "):
        check_trajectory_limits(fast, panda_limits)
    # an excess of 0.01 % of the limit is found
    tight = ExcitationLimits(panda_limits.position, panda_limits.velocity,
                             np.abs(traj.evaluate(np.linspace(0, traj.period, 20001))[2]).max(axis=0) * 0.9999)
    with pytest.raises(TrajectoryError, match="acceleration"):
        check_trajectory_limits(traj, tight, rate_hz=1000.0)


def test_limits_must_be_consistent():
    position, velocity, acceleration = [[-1.0, 1.0], [0.0, 2.0]], [1.0, 2.0], [3.0, 4.0]
    limits = ExcitationLimits(position, velocity, acceleration)
    assert limits.n_dof == 2 and limits.to_dict() == {"position": position, "velocity": velocity,
                                                      "acceleration": acceleration}
    assert ExcitationLimits(position, velocity, acceleration, [5.0, 6.0]).to_dict()["effort"] == [5.0, 6.0]
    for bad, match in (((position, [1.0], acceleration), "limits need position"),
                       (([[1.0, -1.0], [0.0, 2.0]], velocity, acceleration), "lower < upper"),
                       (([[-np.inf, 1.0], [0.0, 2.0]], velocity, acceleration), "finite with lower < upper"),
                       ((position, [1.0, 0.0], acceleration), "velocity limits must be finite and positive"),
                       ((position, velocity, [3.0, -4.0]), "acceleration limits must be finite and positive")):
        with pytest.raises(TrajectoryError, match=match):
            ExcitationLimits(*bad)


def test_a_continuous_joint_gets_half_a_turn_each_way(tmp_path):
    from support.arm_runs import ARM

    path = tmp_path / "continuous.urdf"
    path.write_text(ARM.replace('name="j1" type="revolute"', 'name="j1" type="continuous"'))
    limits = limits_from_model(load_model(urdf=path))
    np.testing.assert_allclose(limits.position[0], [-np.pi + 0.05, np.pi - 0.05])
    np.testing.assert_allclose(limits.position[1], [-2.5 + 0.05, 2.5 - 0.05])


def test_per_joint_values_as_a_number_a_list_or_a_mapping(panda):
    joints = panda.joints
    assert np.all(limits_from_model(panda, {"acceleration": 3.0}).acceleration == 3.0)
    listed = limits_from_model(panda, {"acceleration": [1, 2, 3, 4, 5, 6, 7]}).acceleration
    np.testing.assert_array_equal(listed, [1, 2, 3, 4, 5, 6, 7])
    mapped = limits_from_model(panda, {"acceleration": {joints[2]: 9.0}}).acceleration
    assert mapped[2] == 9.0 and np.all(np.delete(mapped, 2) == 5.0)
    with pytest.raises(ConfigError, match="one value per joint \\(7\\)"):
        limits_from_model(panda, {"acceleration": [1.0, 2.0]})
    with pytest.raises(ConfigError, match="must be positive"):
        limits_from_model(panda, {"velocity": {joints[0]: -1.0}})
    with pytest.raises(ConfigError, match="expected \\[lower, upper\\]"):
        limits_from_model(panda, {"position": {joints[0]: [1.0, -1.0]}})
    with pytest.raises(ConfigError, match="leaves no range for joint"):
        limits_from_model(panda, {"margins": {"position": 5.0}})
    with pytest.raises(ConfigError, match="unknown key 'jerk'"):
        limits_from_model(panda, {"margins": {"jerk": 1.0}})


def test_a_config_for_the_whole_arm_fits_a_model_with_locked_joints(panda):
    subset = load_model(urdf=robot_file("panda", "urdf"), joints=list(panda.joints[:5]))
    config = {"acceleration": {j: 2.0 for j in panda.joints}, "position": {panda.joints[6]: [-1.0, 1.0]}}
    limits = limits_from_model(subset, config)  # panda_joint6, 7 are locked: their entries do not apply
    assert limits.n_dof == 5 and np.all(limits.acceleration == 2.0)


def test_a_robot_described_by_its_config_needs_every_coordinates_limits(panda):
    config = {"position": {j: [-1.0, 1.0] for j in panda.joints}, "velocity": 1.0}
    limits = limits_from_model(panda, config, from_config=True)
    np.testing.assert_allclose(limits.position, [[-0.95, 0.95]] * 7)
    without = {"position": {j: [-1.0, 1.0] for j in panda.joints[:-1]}, "velocity": 1.0}
    with pytest.raises(ConfigError, match="excitation.position has no range for panda_joint7"):
        limits_from_model(panda, without, from_config=True)
    with pytest.raises(ConfigError, match="excitation.velocity has no limit for panda_joint1"):
        limits_from_model(panda, {"position": config["position"]}, from_config=True)


def test_effort_bounds_and_the_effort_check(panda, panda_limits):
    bounds = effort_bounds(panda, {"margins": {"effort": 0.5}})
    np.testing.assert_allclose(bounds, 0.5 * panda.effort_limits)
    traj = trajectory_at_rest(panda_limits, panda.joints, seed=1)
    _, q, dq, ddq = sample_trajectory(traj, 200.0)
    torque = nominal_torques(panda, q, dq, ddq)
    peak = np.abs(torque).max(axis=0)
    tight = ExcitationLimits(panda_limits.position, panda_limits.velocity, panda_limits.acceleration, 0.99 * peak)
    with pytest.raises(TrajectoryError, match="effort"):
        check_trajectory_limits(traj, tight, rate_hz=200.0, model=panda)
    loose = ExcitationLimits(panda_limits.position, panda_limits.velocity, panda_limits.acceleration, 2 * peak)
    margins = check_trajectory_limits(traj, loose, rate_hz=200.0, model=panda)
    assert margins["effort"] == pytest.approx(0.5, abs=0.02)  # at most half of twice the peak (on a finer grid)
    assert "effort" not in check_trajectory_limits(traj, loose, rate_hz=200.0)  # no model: effort not checked


def test_sample_trajectory_covers_one_period_with_both_ends(panda, panda_limits):
    traj = trajectory_at_rest(panda_limits, panda.joints, seed=2)
    t, q, _, _ = sample_trajectory(traj, 100.0)
    assert t[0] == 0.0 and t[-1] == pytest.approx(traj.period) and t.size == int(np.ceil(traj.period * 100)) + 1
    np.testing.assert_allclose(q[0], q[-1], atol=1e-12)


def test_the_check_names_whose_limits_were_violated(panda_limits):
    t = np.array([0.0, 0.5])
    q = np.tile(panda_limits.position.mean(axis=1), (2, 1))
    dq = np.zeros_like(q)
    dq[1, 3] = 2 * panda_limits.velocity[3]
    with pytest.raises(TrajectoryError, match="joint j4: velocity .* at t = 0.500 s is outside the limits .* of "
                                              "the robot"):
        check_sampled_limits(tuple(f"j{k + 1}" for k in range(7)), t, q, dq, np.zeros_like(q), panda_limits,
                             source="the robot")
    with pytest.raises(TrajectoryError, match="trajectory has 2 joints but the limits have 7"):
        check_sampled_limits(("a", "b"), t, q[:, :2], dq[:, :2], dq[:, :2], panda_limits)


def test_a_model_in_its_own_coordinates_has_no_coupled_limits(panda):
    assert coupled_joint_limits(panda) is None
