"""The one conversion to MuJoCo: MuJoCo's inverse dynamics of the converted robot is the identified model's, for
published descriptions whose fixed links MuJoCo's own URDF parser refuses; MuJoCo's refusals are one line with
the reason."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from dynid_ros.errors import ModelError
from dynid_ros.robot.model import load_model
from dynid_ros.robot.mujoco_spec import compile_spec, mujoco_spec

from support.robots import PANDA_ARM_JOINTS, PANDA_ERD, example_robot_urdf
from support.urdf_zoo import zoo_urdf


def inverse_dynamics_error(model, seed: int = 0) -> float:
    """Largest relative difference of MuJoCo's ``mj_inverse`` and pinocchio's RNEA at random states."""
    import mujoco

    mj = compile_spec(mujoco_spec(model), "test")
    mj.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    data = mujoco.MjData(mj)
    bodies = (model.expanded or model.pin_model).names[1:]
    qadr = [mj.jnt_qposadr[mj.joint(name).id] for name in bodies]
    vadr = [mj.jnt_dofadr[mj.joint(name).id] for name in bodies]
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(5):
        q, dq, ddq = rng.normal(size=(3, model.n_dof))
        qb, dqb, ddqb = model.body_motion(q, dq, ddq)
        data.qpos[qadr], data.qvel[vadr], data.qacc[vadr] = qb, dqb, ddqb
        mujoco.mj_inverse(mj, data)
        tau = data.qfrc_inverse[vadr] if model.coupling is None else model.coupling.T @ data.qfrc_inverse[vadr]
        expected = pin.rnea(model.pin_model, model.pin_model.createData(), model.configuration(q), dq, ddq)
        worst = max(worst, float(np.abs(tau - expected).max() / np.abs(expected).max()))
    return worst


@pytest.mark.parametrize("path, joints", [
    (lambda: example_robot_urdf(PANDA_ERD), None),
    (lambda: example_robot_urdf(PANDA_ERD), [*PANDA_ARM_JOINTS, "panda_finger_joint1"]),  # a mimic follower
    (lambda: example_robot_urdf("kinova_description/robots/kinova.urdf"), None),  # continuous joints
    (lambda: zoo_urdf("sawyer"), None),  # 1e-8 kg fixed links with a singular inertia; a tree (head_pan)
    (lambda: zoo_urdf("openarm"), None),  # locked fingers whose inertias break the triangle inequality
    (lambda: zoo_urdf("wx250s"), None),  # names with "/"
], ids=["panda", "panda-finger-follower", "kinova", "sawyer", "openarm", "wx250s"])
def test_mujoco_computes_the_model_dynamics(path, joints):
    model = load_model(urdf=path(), joints=joints)
    assert inverse_dynamics_error(model) < 1e-9


def test_fixed_links_are_sites_and_limits_are_kept():
    import mujoco

    model = load_model(urdf=example_robot_urdf(PANDA_ERD))
    mj = compile_spec(mujoco_spec(model), "test")
    assert [mj.body(b).name for b in range(1, mj.nbody)] == [f"panda_link{k}" for k in range(1, 8)]
    assert mj.ngeom == 0 and {"panda_hand", "panda_link8"} <= {mj.site(s).name for s in range(mj.nsite)}
    hand = mj.site("panda_hand")
    data = mujoco.MjData(mj)
    mujoco.mj_forward(mj, data)
    frames = model.pin_model.createData()
    pin.framesForwardKinematics(model.pin_model, frames, pin.neutral(model.pin_model))
    expected = frames.oMf[model.pin_model.getFrameId("panda_hand")].translation
    assert np.allclose(data.site_xpos[hand.id], expected, atol=1e-12)
    assert np.allclose(mj.jnt_range[mj.joint("panda_joint4").id], model.position_limits[3])
    assert np.allclose(mj.jnt_actfrcrange[mj.joint("panda_joint1").id], [-87.0, 87.0])


def test_a_refusal_names_the_reason_and_the_body():
    text = example_robot_urdf(PANDA_ERD).read_text()
    start = text.index('<link name="panda_link3">')
    inertia = text.index("<inertia ", start)
    end = text.index("/>", inertia) + 2
    broken = text[:inertia] + '<inertia ixx="1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>' + text[end:]
    model = load_model(urdf_text=broken)  # pinocchio takes it (a nominal URDF may be unphysical)
    with pytest.raises(ModelError) as refused:
        compile_spec(mujoco_spec(model), "MuJoCo cannot load the truth URDF")
    message = str(refused.value)
    assert "A + B >= C" in message and "panda_link3" in message and "\n" not in message
