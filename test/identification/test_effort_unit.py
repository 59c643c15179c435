"""The effort's unit: motor currents are named by their misfit to the URDF's gravity torques, refused without their
current-to-torque gains, and identified like torques with them."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.dynamics.regressor import torques
from dynid_ros.errors import ConfigError
from dynid_ros.identification.effort_unit import CURRENT, TORQUE, effort_unit, gravity_mismatch_warnings
from dynid_ros.identification.identify import identify
from dynid_ros.identification.options import identification_options
from dynid_ros.robot.model import load_model, nominal_parameters
from dynid_ros.robot.resources import robot_file

from support.robots import PANDA_ARM_JOINTS, PANDA_ERD, UR5_ERD, example_robot_urdf
from support.synthetic import fourier_trajectory

ROBOTS = {
    "ur5e (shipped)": lambda: load_model(urdf=robot_file("ur5e", "urdf")),
    "ur5 (example-robot-data)": lambda: load_model(urdf=example_robot_urdf(UR5_ERD)),
    "panda (example-robot-data)": lambda: load_model(urdf=example_robot_urdf(PANDA_ERD), joints=list(PANDA_ARM_JOINTS)),
    "xarm7 (example-robot-data)": lambda: load_model(urdf=example_robot_urdf("xarm_description/urdf/xarm7.urdf")),
    "z1 (example-robot-data)": lambda: load_model(urdf=example_robot_urdf("z1_description/urdf/z1.urdf")),
}


def recorded_torque(model, seed: int = 0, n: int = 1000, period: float = 10.0):
    """A Fourier motion and the torque of the URDF's robot with viscous and Coulomb friction along it."""
    rng = np.random.default_rng(seed)
    q, dq, ddq = fourier_trajectory(model.n_dof, n, rng, period=period)
    layout = model.layout_for(("viscous", "coulomb"), False)
    parameters = nominal_parameters(model, layout)
    for symbol in ("fv", "fc"):
        parameters[layout.indices(symbol)] = rng.uniform(0.1, 1.0, model.n_dof)
    return np.linspace(0.0, period, n, endpoint=False), q, dq, torques(model, layout, parameters, q, dq, ddq)


@pytest.mark.parametrize("robot", sorted(ROBOTS))
def test_currents_are_named_and_torques_are_not(robot):
    """Per robot: the torque itself draws no warning; the same torque as a motor current (divided by a
    current-to-torque gain between 8 and 20 N m/A per joint, as an arm's drives have) is named on every joint that
    carries gravity, and at least one does."""
    model = ROBOTS[robot]()
    _, q, _, tau = recorded_torque(model)
    assert gravity_mismatch_warnings(model, q, tau) == []
    gains = np.random.default_rng(1).uniform(8.0, 20.0, model.n_dof)
    named = gravity_mismatch_warnings(model, q, tau / gains)
    assert named, robot
    assert all(line.startswith("effort of joint ") and "looks like a current" in line and "effort_unit: A" in line
               for line in named), named
    assert gravity_mismatch_warnings(model, q, tau / gains * gains) == []
    assert gravity_mismatch_warnings(model, q, -tau)  # a flipped sign is named too
    doubled = gravity_mismatch_warnings(model, q, 5.0 * tau)
    assert doubled and all("x the URDF's gravity torque" in line for line in doubled)


def test_effort_unit_spellings():
    for value in ("N m", "Nm", "n·m", "torque", None):
        assert effort_unit(value) == TORQUE
    for value in ("A", "ampere", "current"):
        assert effort_unit(value) == CURRENT
    with pytest.raises(ConfigError, match="effort_unit must be 'N m'.*or 'A'.*not 'mA'"):
        effort_unit("mA")


def test_currents_are_refused_without_gains_and_identified_with_them():
    """effort_unit A: without effort_scale the identification refuses, naming the key and ``dynid gains``; with
    the gains the currents identify the same robot as the torques, with no warning about the effort."""
    model = load_model(urdf=example_robot_urdf(UR5_ERD))
    t, q, dq, tau = recorded_torque(model, n=1500, period=15.0)
    gains = np.random.default_rng(2).uniform(8.0, 20.0, model.n_dof)
    currents = JointStateSeries(list(model.joints), t, q, dq, tau / gains, {})
    section = {"friction": ["viscous", "coulomb"], "armature": False, "method": "ols", "effort_unit": "A",
               "unmodelled_load": False, "processing": {"min_speed": 0.0}}
    with pytest.raises(ConfigError, match=r"motor current \[A\].*identification.effort_scale.*`dynid gains`"):
        identify(currents, identification_options(section), model=model)
    as_torque = identify(currents, identification_options(section, {"effort_scale": gains.tolist()}), model=model)
    assert not any("effort of joint" in w for w in as_torque.warnings), as_torque.warnings
    plain = identify(JointStateSeries(list(model.joints), t, q, dq, tau, {}),
                     identification_options({**section, "effort_unit": "N m"}), model=model)
    scaled, recorded = as_torque.link_masses(), plain.link_masses()
    assert scaled.keys() == recorded.keys()
    assert np.allclose([scaled[k] for k in recorded], list(recorded.values()), rtol=1e-6, atol=1e-9)
    unscaled = identify(currents, identification_options({**section, "effort_unit": "N m"}), model=model)
    named = [w for w in unscaled.warnings if "looks like a current" in w]
    assert {w.split()[3].rstrip(":") for w in named} >= {"shoulder_lift_joint", "elbow_joint"}, unscaled.warnings
