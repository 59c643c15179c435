"""The compiled body-rows kernel of the joint-torque regressor: column by column pinocchio's own regressor and the
NumPy recursion's, on real descriptions (the UR5 and the Panda of example-robot-data, a DH arm with a prismatic
joint)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from dynid_ros.dynamics import regressor_kernel
from dynid_ros.dynamics.regressor import BACKEND_VARIABLE, kernel_constants, regressor_3d
from dynid_ros.robot.model import load_model

from support.robots import DATA, PANDA_ARM_JOINTS, PANDA_ERD, UR5_ERD, example_robot_urdf


@pytest.mark.parametrize("make", [
    pytest.param(lambda: load_model(urdf=example_robot_urdf(UR5_ERD)), id="ur5"),
    pytest.param(lambda: load_model(urdf=example_robot_urdf(PANDA_ERD), joints=[*PANDA_ARM_JOINTS]), id="panda"),
    pytest.param(lambda: load_model(dh=DATA / "prismatic_dh.yaml"), id="prismatic"),
])
def test_body_rows_are_pinocchios_regressor_and_the_numpy_rows(make, monkeypatch):
    assert regressor_kernel.AVAILABLE  # numba is a dependency: the compiled path is the one tested
    model = make()
    rng = np.random.default_rng(1)
    nb = len(model.kinematics)
    q, dq, ddq = rng.uniform(-1.5, 1.5, (7, nb)), rng.normal(size=(7, nb)), rng.normal(size=(7, nb))
    out = np.zeros((7, nb, 10 * nb))
    regressor_kernel.body_rows(q, dq, ddq, *kernel_constants(model), out)
    monkeypatch.setenv(BACKEND_VARIABLE, "numpy")  # the regressor of the NumPy recursion
    numpy_rows = regressor_3d(model, model.layout_for((), False), q, dq, ddq)
    np.testing.assert_allclose(out, numpy_rows, rtol=1e-10, atol=1e-10)
    if model.coupling is None and nb == model.n_dof:
        data = model.pin_model.createData()
        for s in range(7):
            expected = pin.computeJointTorqueRegressor(model.pin_model, data, model.configuration(q[s]), dq[s], ddq[s])
            np.testing.assert_allclose(out[s], expected, atol=1e-10)


def test_the_kernel_takes_non_contiguous_states():
    model = load_model(urdf=example_robot_urdf(UR5_ERD))
    rng = np.random.default_rng(2)
    wide = rng.normal(size=(5, 12))
    out, again = np.zeros((5, 6, 60)), np.zeros((5, 6, 60))
    regressor_kernel.body_rows(wide[:, ::2], wide[:, 1::2], wide[:, ::2], *kernel_constants(model), out)
    regressor_kernel.body_rows(np.ascontiguousarray(wide[:, ::2]), np.ascontiguousarray(wide[:, 1::2]),
                               np.ascontiguousarray(wide[:, ::2]), *kernel_constants(model), again)
    np.testing.assert_array_equal(out, again)
