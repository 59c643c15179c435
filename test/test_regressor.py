import numpy as np
import pinocchio as pin
import pytest

from dynid_ros.dynamics.regressor import regressor, regressor_3d, torques
from dynid_ros.robot.model import load_model

from robots import DATA, PANDA_ERD, UR5_ERD, example_robot_urdf


def _states(model, n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-2, 2, (n, model.n_dof)), rng.normal(size=(n, model.n_dof)),
            rng.normal(size=(n, model.n_dof)))


@pytest.mark.parametrize("source", [("urdf", PANDA_ERD), ("urdf", UR5_ERD), ("dh", "kr5_dh.yaml"),
                                    ("dh", "prismatic_dh.yaml")])
def test_regressor_equals_pinocchio(source):
    kind, name = source
    model = load_model(urdf=example_robot_urdf(name)) if kind == "urdf" else load_model(dh=DATA / name)
    layout = model.layout_for(friction=(), armature=False)
    q, dq, ddq = _states(model, 6)
    y = regressor_3d(model, layout, q, dq, ddq)
    data = model.pin_model.createData()
    for s in range(len(q)):
        expected = pin.computeJointTorqueRegressor(model.pin_model, data, model.configuration(q[s]), dq[s], ddq[s])
        np.testing.assert_allclose(y[s], expected, atol=1e-10)


def test_regressor_times_parameters_is_rnea_plus_friction_and_armature():
    model = load_model(urdf=example_robot_urdf(UR5_ERD))
    layout = model.layout_for(("viscous", "coulomb", "offset"), armature=True)
    rng = np.random.default_rng(3)
    delta = np.concatenate([model.pin_model.inertias[k + 1].toDynamicParameters() for k in range(6)]
                           + [rng.uniform(0.1, 1.0, 4 * 6)])
    q, dq, ddq = _states(model, 4, seed=3)
    tau = torques(model, layout, delta, q, dq, ddq)
    data = model.pin_model.createData()
    for s in range(4):
        expected = pin.rnea(model.pin_model, data, q[s], dq[s], ddq[s]).copy()
        for j in range(6):
            fv, fc, fo, ia = (delta[layout.joint_index(j, t)] for t in ("fv", "fc", "fo", "Ia"))
            expected[j] += fv * dq[s, j] + fc * np.sign(dq[s, j]) + fo + ia * ddq[s, j]
        np.testing.assert_allclose(tau[s], expected, atol=1e-10)
    assert regressor(model, layout, q, dq, ddq).shape == (4 * 6, layout.n_parameters)
