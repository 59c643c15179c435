"""A robot without a config works with defaults derived from its URDF: accelerations within the effort left by
gravity, controller gains from the apparent inertia, a simulation truth every tool accepts; joint scales by hand;
grippers named like one."""

from __future__ import annotations

import numpy as np

from dynid_ros.robot.model import load_model
from dynid_ros.robot.robot_defaults import CONTROL_OMEGA, derive_config, joint_scales
from dynid_ros.sim import Gains, GroundTruth

from support.robots import PANDA_ERD, example_robot_urdf

UR10_ERD = "ur_description/urdf/ur10_robot.urdf"


def test_derived_config_is_scaled_to_the_robot_and_accepted_by_every_tool():
    for relative in (PANDA_ERD, UR10_ERD):
        model = load_model(urdf=example_robot_urdf(relative))
        config = derive_config(model)
        scales = joint_scales(model)
        n = model.n_dof
        acceleration = np.array([config["excitation"]["acceleration"][j] for j in model.joints])
        assert np.all((acceleration >= 0.5) & (acceleration <= 5.0))
        # conservative: the inertial torque at the limit stays well inside the effort left over by gravity
        allowed = np.maximum(0.5, 0.3 * (model.effort_limits - scales.gravity_max) / scales.inertia_max)
        assert np.all(acceleration <= allowed * (1 + 1e-3))
        controller = config["simulation"]["controller"]
        assert np.allclose(np.array(controller["kp"]) / scales.apparent_inertia, CONTROL_OMEGA**2, rtol=1e-3)
        truth = GroundTruth.from_config(config["simulation"])
        values = truth.joint_values(model)
        assert all(values[k].shape == (n,) and np.all(values[k] >= 0) for k in ("fv", "fc", "Ia", "noise"))
        kp, kd = Gains.from_config(controller).resolve(model)
        assert kp.shape == kd.shape == (n,)
    light, heavy = (joint_scales(load_model(urdf=example_robot_urdf(r))) for r in (PANDA_ERD, UR10_ERD))
    assert heavy.load.max() > 2 * light.load.max()  # the UR10 carries more: friction and noise follow
