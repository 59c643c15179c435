"""Joint states recorded below an identification's needs are named, with the topic a driver offers at full rate."""

from __future__ import annotations

import re

import numpy as np
import pytest

from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.dynamics.regressor import torques
from dynid_ros.identification.identify import identify
from dynid_ros.identification.options import identification_options
from dynid_ros.identification.sample_rate import MIN_RATE_HZ, sample_rate_warnings
from dynid_ros.robot.model import load_model, nominal_parameters

from support.robots import PANDA_ARM_JOINTS, PANDA_ERD, UR5_ERD, example_robot_urdf
from support.synthetic import fourier_trajectory

PANDA = list(PANDA_ARM_JOINTS)
UR = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint"]


@pytest.mark.parametrize("rate_hz", [30.0, 50.0, 99.0])
def test_slow_joint_states_are_named_with_the_full_rate_topic(rate_hz):
    rng = np.random.default_rng(0)
    t = 1000.0 + np.cumsum(rng.uniform(0.8, 1.2, 200) / rate_hz)  # jittered stamps
    panda = sample_rate_warnings(t, "/joint_states", PANDA)
    assert len(panda) == 1 and "/franka/joint_states" in panda[0], panda
    said = float(re.search(r"arrive at ([0-9.]+) Hz", panda[0]).group(1))
    assert said == pytest.approx(rate_hz, rel=0.1)
    other = sample_rate_warnings(t, "/joint_states", UR)
    assert len(other) == 1 and "/franka" not in other[0] and "full-rate" in other[0], other


@pytest.mark.parametrize("rate_hz", [MIN_RATE_HZ, 500.0, 1000.0])
def test_joint_states_at_the_rate_an_identification_needs_are_not_named(rate_hz):
    t = np.arange(300) / rate_hz
    assert sample_rate_warnings(t, "/joint_states", PANDA) == []
    assert sample_rate_warnings(np.repeat(t, 2), "/joint_states", PANDA) == []  # an arm and a gripper message


@pytest.mark.parametrize("urdf, joints", [(PANDA_ERD, PANDA), (UR5_ERD, None)])
def test_an_identification_from_30_hz_joint_states_says_so(urdf, joints):
    model = load_model(urdf=example_robot_urdf(urdf), joints=joints)
    rng = np.random.default_rng(3)
    n = 600
    q, dq, ddq = fourier_trajectory(model.n_dof, n, rng, period=20.0)
    layout = model.layout_for(("viscous",), False)
    parameters = nominal_parameters(model, layout)
    parameters[layout.indices("fv")] = 0.5
    tau = torques(model, layout, parameters, q, dq, ddq)
    series = JointStateSeries(list(model.joints), np.arange(n) / 30.0, q, dq, tau, {})
    options = identification_options({"friction": ["viscous"], "armature": False, "method": "ols",
                                      "unmodelled_load": False, "processing": {"min_speed": 0.0}})
    result = identify(series, options, model=model)
    named = [w for w in result.warnings if "arrive at 30 Hz" in w]
    assert len(named) == 1, result.warnings
    assert ("/franka/joint_states" in named[0]) == (joints is not None)
