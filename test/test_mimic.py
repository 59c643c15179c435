"""Mimic joints followed, not identified: a follower of an identified joint moves with it
(``q_f = multiplier * q_leader + offset``), its link is identified through its leader's torque
``tau_leader + multiplier * tau_follower`` and it has no friction or armature of its own."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pinocchio as pin
import pytest
import yaml

from dynid_ros.base_parameters import compute_base_parameters
from dynid_ros.cli import main
from dynid_ros.excitation import ExcitationTrajectory, FourierTrajectory, limits_from_model, save_trajectory
from dynid_ros.model import load_model, nominal_parameters, rnea_derivatives
from dynid_ros.regressor import regressor_3d
from dynid_ros.results import URDF_FILE

from robots import PANDA_ARM_JOINTS, PANDA_ERD, example_robot_urdf

MULTIPLIER, OFFSET = 0.5, 0.1

MIMIC_ARM = f"""<?xml version="1.0"?>
<robot name="mimic_arm">
  <link name="base"/>
  <link name="l1"><inertial><origin xyz="0 0.01 0.1"/><mass value="2.0"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.01"/></inertial></link>
  <link name="l2"><inertial><origin xyz="0.15 0 0.01"/><mass value="1.5"/>
    <inertia ixx="0.005" ixy="0.001" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
  <link name="l3"><inertial><origin xyz="0.1 0.02 0"/><mass value="0.8"/>
    <inertia ixx="0.002" ixy="0" ixz="0.0005" iyy="0.006" iyz="0" izz="0.006"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 0 1"/><limit lower="-2.5" upper="2.5" effort="60" velocity="2.5"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0 0.2" rpy="1.5707963267948966 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-2.5" upper="2.5" effort="60" velocity="2.5"/></joint>
  <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/><origin xyz="0.3 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="30" velocity="2"/>
    <mimic joint="j2" multiplier="{MULTIPLIER}" offset="{OFFSET}"/></joint>
</robot>
"""


@pytest.fixture(scope="module")
def arm_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("mimic") / "mimic_arm.urdf"
    path.write_text(MIMIC_ARM)
    return path


def states(n_samples: int = 20, seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.5, 1.5, (n_samples, 2)), rng.normal(0, 1, (n_samples, 2)), rng.normal(0, 3, (n_samples, 2))


def full_leader_torques(q, dq, ddq, model=None):
    """Pinocchio RNEA of the full model (j3 a joint of its own at m q2 + o), projected with [1, m]."""
    full = model or pin.buildModelFromXML(MIMIC_ARM)
    data = full.createData()
    out = []
    for qs, vs, as_ in zip(q, dq, ddq):
        tau = pin.rnea(full, data, np.r_[qs, MULTIPLIER * qs[1] + OFFSET], np.r_[vs, MULTIPLIER * vs[1]],
                       np.r_[as_, MULTIPLIER * as_[1]])
        out.append([tau[0], tau[1] + MULTIPLIER * tau[2]])
    return np.array(out)


def test_follower_follows_its_identified_leader(arm_path):
    model = load_model(urdf=arm_path)
    assert model.joints == ("j1", "j2") and model.followers == ("j3",) and model.locked == ()
    assert model.links == ("l1", "l2", "l3")  # the follower's link is a body of the model
    assert model.following() == {"j3": {"leader": "j2", "multiplier": MULTIPLIER, "offset": OFFSET}}
    np.testing.assert_allclose(model.body_motion(np.array([0.2, 0.4]), np.ones(2), np.ones(2))[0], [0.2, 0.4, 0.3])
    layout = model.layout_for(("viscous", "coulomb"), armature=True)
    assert layout.n_parameters == 3 * 10 + 2 * 3  # no friction or armature of the follower
    q, dq, ddq = states(5)
    data = model.pin_model.createData()
    rnea = np.array([pin.rnea(model.pin_model, data, *s) for s in zip(q, dq, ddq)])
    np.testing.assert_allclose(rnea, full_leader_torques(q, dq, ddq), rtol=1e-12, atol=1e-12)


def test_coupled_regressor_known_answer(arm_path):
    """Y(q, q', q'') delta == pinocchio RNEA of the full model at the follower's m q + o, projected with [1, m]."""
    model = load_model(urdf=arm_path)
    layout = model.layout_for(None, armature=False)
    q, dq, ddq = states(50)
    rng = np.random.default_rng(4)
    full = pin.buildModelFromXML(MIMIC_ARM)  # other inertias than the URDF's: every column is checked
    for j in range(1, full.njoints):
        full.inertias[j] = pin.Inertia.Random()
    delta = np.concatenate([full.inertias[j].toDynamicParameters() for j in range(1, full.njoints)])
    predicted = regressor_3d(model, layout, q, dq, ddq) @ delta
    np.testing.assert_allclose(predicted, full_leader_torques(q, dq, ddq, full), rtol=1e-10, atol=1e-10)
    assert rng is not None
    # the nominal parameters give pinocchio's own RNEA of the reduced (mimic) model
    nominal = regressor_3d(model, layout, q, dq, ddq) @ nominal_parameters(model, layout)
    np.testing.assert_allclose(nominal, full_leader_torques(q, dq, ddq), rtol=1e-10, atol=1e-10)
    # the follower's mass shows in the base parameters through its leader's row
    base = compute_base_parameters(model, layout)
    assert "Izz2 + 2.25*Izz3 + 0.09*m3" in base.expressions and base.n_base == 14  # (1 + m)^2 Izz3: virtual work
    # RNEA derivatives through the expanded model: a finite difference of the coupled RNEA
    data = model.expanded.createData()
    by_q, _, mass = rnea_derivatives(model, model.expanded, data, q[0], dq[0], ddq[0])
    eps = 1e-6
    for k in range(2):
        step = np.eye(2)[k] * eps
        diff = (full_leader_torques([q[0] + step], dq[:1], ddq[:1]) - full_leader_torques([q[0] - step], dq[:1],
                                                                                            ddq[:1]))[0] / (2 * eps)
        np.testing.assert_allclose(by_q[:, k], diff, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mass, pin.crba(model.pin_model, model.pin_model.createData(), q[0]), atol=1e-12)


def test_panda_finger_follows_the_named_finger():
    """example-robot-data's Panda, --joints naming the arm and panda_finger_joint1: finger 2 follows it."""
    model = load_model(urdf=example_robot_urdf(PANDA_ERD), joints=[*PANDA_ARM_JOINTS, "panda_finger_joint1"])
    assert model.joints == (*PANDA_ARM_JOINTS, "panda_finger_joint1")
    assert model.followers == ("panda_finger_joint2",) and model.locked == ()
    assert model.links[-2:] == ("panda_leftfinger", "panda_rightfinger")
    q = np.r_[0.1, -0.3, 0.2, -2.0, 0.1, 1.8, 0.7, 0.02]
    full = pin.buildModelFromXML(example_robot_urdf(PANDA_ERD).read_text())
    tau = pin.rnea(full, full.createData(), np.r_[q, 0.02], np.zeros(9), np.zeros(9))
    expected = np.r_[tau[:7], tau[7] + tau[8]]  # multiplier 1
    layout = model.layout_for(None, armature=False)
    predicted = regressor_3d(model, layout, q[None], np.zeros((1, 8)), np.zeros((1, 8)))[0] \
        @ nominal_parameters(model, layout)
    np.testing.assert_allclose(predicted, expected, atol=1e-10)


@pytest.fixture(scope="module")
def trajectory_file(arm_path, tmp_path_factory):
    """A Fourier excitation of the two identified joints (period 2 s, 3 harmonics), at rest at t = 0."""
    model = load_model(urdf=arm_path)
    rng = np.random.default_rng(7)
    a, b = rng.normal(0.0, 0.3, (2, 3)), rng.normal(0.0, 0.3, (2, 3))
    a[:, 2] = -a[:, :2].sum(axis=1)
    b[:, 2] = -(b[:, 0] + 2 * b[:, 1]) / 3
    wf = np.pi
    q0 = np.array([0.2, 0.5]) + (b / (wf * np.arange(1, 4))).sum(axis=1)
    path = tmp_path_factory.mktemp("traj") / "mimic_arm.yaml"
    limits = dataclasses.replace(limits_from_model(model), acceleration=np.full(2, 20.0))  # URDF has none
    save_trajectory(path, ExcitationTrajectory(FourierTrajectory(model.joints, wf, q0, a, b), limits,
                                               float("nan"), {}))
    return path


NOISE = 0.05


def test_simulate_mimic_arm_and_write_its_urdf(arm_path, trajectory_file, tmp_path, capsys):
    """dynid simulate (MuJoCo keeps the <mimic> as a stiff joint equality): the recorded effort is the truth's
    coupled dynamics plus the sensor noise; the URDF written from those parameters keeps the <mimic> and loads
    in pinocchio and MuJoCo."""
    import mujoco

    from dynid_ros.bag_io import read_joint_states
    from dynid_ros.regressor import torques
    from dynid_ros.sim import GroundTruth, Simulator, simulate_profile
    from dynid_ros.urdf_writer import write_identified_urdf

    bag = tmp_path / "bag"
    assert main(["simulate", "--urdf", str(arm_path), "--trajectory", str(trajectory_file), "--bag", str(bag),
                 "--cycles", "2", "--noise", str(NOISE), "--seed", "1", "--no-progress"]) == 0, \
        capsys.readouterr().err
    assert list(read_joint_states(bag).names) == ["j1", "j2"]
    sim = Simulator(arm_path, truth=GroundTruth(seed=1, mass=0.1, com=0.01, inertia=0.1, damping=0.1,
                                                friction=0.3))
    assert sim.mujoco_model.neq == 1
    t = np.arange(2000) * 1e-3
    run = simulate_profile(sim, t, *load_reference(trajectory_file, t), progress=False)
    layout = sim.model.layout_for(("viscous", "coulomb", "offset"), armature=True)
    predicted = torques(sim.model, layout, sim.truth_parameters(), run.position, run.velocity,
                        run.info["acceleration"])
    sliding = ~run.info["static_friction"]
    residual = np.abs(run.info["torque"] - predicted)[sliding]
    assert residual.size > 0.9 * predicted.size
    assert residual.max() < 1e-4 * np.abs(predicted).max()  # MuJoCo's equality is stiff, not exact
    out = tmp_path / "identified.urdf"
    write_identified_urdf(sim.model, layout, sim.truth_parameters(), out)
    text = out.read_text()
    assert '<mimic joint="j2" multiplier="0.5" offset="0.1"' in text.replace("'", '"')
    reloaded = load_model(urdf=out)
    assert reloaded.joints == ("j1", "j2") and reloaded.followers == ("j3",)
    assert pin.buildModelFromXML(text, mimic=True).nv == 2
    mj = mujoco.MjModel.from_xml_string(text)
    assert mj.neq == 1 and mj.eq_data[0][:2] == pytest.approx([OFFSET, MULTIPLIER])


def test_simulate_identify_validate_mimic_arm(arm_path, trajectory_file, tmp_path, capsys):
    """dynid simulate + dynid identify + dynid validate on a held-out bag: the torque error is the sensor noise,
    the follower's link is identified through its leader and written to the URDF next to its <mimic>."""
    bags = {}
    for name, seed in (("train", "1"), ("test", "2")):
        bags[name] = tmp_path / name
        assert main(["simulate", "--urdf", str(arm_path), "--trajectory", str(trajectory_file), "--bag",
                     str(bags[name]), "--cycles", "3", "--noise", str(NOISE), "--seed", seed,
                     "--no-progress"]) == 0, capsys.readouterr().err
    result = tmp_path / "result"
    assert main(["identify", "--urdf", str(arm_path), "--bag", str(bags["train"]), "--friction",
                 "viscous,coulomb,offset", "--out", str(result)]) == 0, capsys.readouterr().err
    assert "j3 follows j2" in capsys.readouterr().out
    following = yaml.safe_load((result / "parameters.yaml").read_text())["robot"]["following"]
    assert following == {"j3": {"leader": "j2", "multiplier": MULTIPLIER, "offset": OFFSET}}
    report = tmp_path / "validation.json"
    assert main(["validate", "--result", str(result), "--bag", str(bags["test"]), "--report", str(report)]) == 0
    capsys.readouterr()
    measured = json.loads(report.read_text())
    assert measured["joints"] == ["j1", "j2"]
    assert max(measured["rms_error_per_joint"]) < 1.3 * NOISE, measured
    text = (result / URDF_FILE).read_text()
    assert '<mimic joint="j2" multiplier="0.5" offset="0.1"' in text.replace("'", '"')
    identified = load_model(urdf=result / URDF_FILE)
    assert identified.followers == ("j3",)
    masses = [identified.pin_model.inertias[j].mass for j in range(1, 4)]
    assert all(0.2 < m < 5.0 for m in masses), masses


def load_reference(path, t):
    from dynid_ros.excitation import load_trajectory

    trajectory = load_trajectory(path).trajectory
    return trajectory.evaluate(t)
