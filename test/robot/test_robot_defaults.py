"""A robot without a config works with defaults derived from its URDF: accelerations within the effort left by
gravity, controller gains from the apparent inertia, a simulation truth every tool accepts; joint scales by hand;
grippers named like one."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.robot.model import load_model
from dynid_ros.robot.robot_defaults import CONTROL_OMEGA, derive_config, joint_scales, named_gripper_joints
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
        kp, kd = Gains.from_config(controller).resolve(scales.apparent_inertia)
        assert kp.shape == kd.shape == (n,)
    light, heavy = (joint_scales(load_model(urdf=example_robot_urdf(r))) for r in (PANDA_ERD, UR10_ERD))
    assert heavy.load.max() > 2 * light.load.max()  # the UR10 carries more: friction and noise follow


def test_joint_scales_by_hand_on_a_one_joint_pendulum(tmp_path):
    """A 2 kg point-like mass 0.5 m from a horizontal axis: M = m l^2 + I, |g| at most m g l."""
    path = tmp_path / "pendulum.urdf"
    path.write_text('<robot name="p"><link name="base"/><link name="bob"><inertial><origin xyz="0.5 0 0"/>'
                    '<mass value="2"/><inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/>'
                    '</inertial></link><joint name="swing" type="revolute"><parent link="base"/><child link="bob"/>'
                    '<axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="40" velocity="2"/></joint></robot>')
    model = load_model(urdf=path)
    scales = joint_scales(model)
    assert scales.inertia_max[0] == pytest.approx(2 * 0.25 + 1e-4)
    assert scales.gravity_max[0] == pytest.approx(2 * 9.81 * 0.5, rel=1e-3)  # the range passes the horizontal
    spare = 0.8 * 40 - scales.gravity_max[0]
    assert scales.acceleration[0] == pytest.approx(np.clip(0.3 * spare / scales.inertia_max[0], 0.5, 5.0))
    config = derive_config(model)
    assert config["robot"]["joints"] == ["swing"] and config["robot"]["urdf"] == str(path)
    assert config["identification"]["bounds"]["total_mass"] == [1.4, 2.6]  # 0.7 and 1.3 of the URDF's 2 kg
    assert config["excitation"]["position"]["swing"] == [-2.9, 2.9]  # 0.1 rad inside the limits


def test_grippers_are_named_like_one():
    joints = ("joint1", "left_finger_joint", "GripperJaw", "wrist", "thumb_base", "claw")
    assert named_gripper_joints(joints) == ("left_finger_joint", "GripperJaw", "thumb_base", "claw")
    assert named_gripper_joints(("shoulder", "elbow")) == ()
