"""The limits an excitation must respect: from the description and the config (margins, overrides, torque limits),
and the check on a dense grid that names the joint, quantity, time and value of a violation."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.errors import ConfigError, TrajectoryError
from dynid_ros.excitation import ExcitationLimits, check_trajectory_limits, limits_from_model
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
