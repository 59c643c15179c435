"""``identified.xml``: the identified robot as MJCF, built by the simulator's conversion (robot/mujoco_spec). MuJoCo
loads it; its masses and inertias are pinocchio's of the identified URDF, its joints carry the identified armature,
damping and friction loss, locked joints are fixed, and its inverse dynamics is the identified model's (pinocchio's
RNEA plus the joint terms). ``urdf_omits`` names what a URDF cannot hold. Real descriptions: the Panda (hand, locked
fingers) and the UR5 of example-robot-data; a vendor URDF whose fixed joint has two ``<origin>`` elements (urdfdom
and pinocchio read the first, MuJoCo's URDF parser refuses the file) and an unconstrained estimate on the real Panda
give a complete result."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
import yaml

from dynid_ros.cli.main import main
from dynid_ros.dynamics.regressor import torques
from dynid_ros.errors import ModelError
from dynid_ros.robot.mjcf_writer import FRICTION_IMPEDANCE, MJCF_TERMS, identified_mjcf, urdf_omits
from dynid_ros.robot.model import load_model, nominal_parameters
from dynid_ros.robot.parameters import ParameterLayout, inertia_about_com
from dynid_ros.robot.urdf_writer import write_identified_urdf

from support.panda_data import JOINTS, write_panda_bag
from support.robots import PANDA_ARM_JOINTS, PANDA_ERD, UR5_ERD, example_robot_urdf

FINGERS = {"panda_finger_joint1": 0.03, "panda_finger_joint2": 0.01}
"""Where the data hold the Panda's fingers (locked): asymmetric, so a finger fixed elsewhere moves the CoM."""
MJCF_RTOL = 1e-5
"""identified.xml holds 6 significant digits (MjSpec.to_xml; see the xfail below): half a unit of the 6th digit."""


def _robot(name: str):
    if name == "panda":
        return load_model(urdf=example_robot_urdf(PANDA_ERD), joints=list(PANDA_ARM_JOINTS), locked_at=FINGERS)
    return load_model(urdf=example_robot_urdf(UR5_ERD))


def _identified(model, seed: int, friction=("viscous", "coulomb", "offset")):
    layout = model.layout_for(friction, True)
    delta = nominal_parameters(model, layout)
    rng = np.random.default_rng(seed)
    for k in range(len(layout.links)):
        delta[layout.link_slice(k)] *= rng.uniform(0.85, 1.15)
    for symbol in layout.joint_terms:
        delta[layout.indices(symbol)] = rng.uniform(0.05, 1.0, layout.n_dof) * (-1 if symbol == "fo" else 1)
    return layout, delta


def _mjcf(model, layout, delta, tmp_path):
    import mujoco

    urdf = tmp_path / "identified.urdf"
    write_identified_urdf(model, layout, delta, urdf)
    text = identified_mjcf(model, urdf.read_text(), layout, delta)
    return mujoco.MjModel.from_xml_string(text), text, urdf


def _body_inertia(mj, body: int) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, CoM (body frame) and inertia about the CoM (body axes) of a MuJoCo body."""
    import mujoco

    rotation = np.zeros(9)
    mujoco.mju_quat2Mat(rotation, mj.body_iquat[body])
    rotation = rotation.reshape(3, 3)
    return float(mj.body_mass[body]), mj.body_ipos[body].copy(), rotation @ np.diag(mj.body_inertia[body]) @ rotation.T


@pytest.mark.parametrize("robot", ["panda", "ur5"])
def test_mujoco_masses_and_inertias_are_pinocchios_of_the_identified_urdf(robot, tmp_path):
    model = _robot(robot)
    layout, delta = _identified(model, seed=1)
    mj, _, urdf = _mjcf(model, layout, delta, tmp_path)
    reread = load_model(urdf=urdf, joints=list(model.joints), locked_at=FINGERS if robot == "panda" else None)
    for k, link in enumerate(layout.links):
        mass, com, inertia = inertia_about_com(reread.pin_model.inertias[k + 1].toDynamicParameters())
        mj_mass, mj_com, mj_inertia = _body_inertia(mj, mj.body(link).id)  # the fixed hand fused into panda_link7
        assert mj_mass == pytest.approx(mass, rel=MJCF_RTOL), link
        np.testing.assert_allclose(mj_com, com, rtol=MJCF_RTOL, atol=1e-7)  # the fingers fixed where they were held
        np.testing.assert_allclose(mj_inertia, inertia, rtol=MJCF_RTOL, atol=MJCF_RTOL * np.abs(inertia).max())
    assert mj.nbody == 1 + len(layout.links)  # the world and one body per identified joint (fixed links fused)


@pytest.mark.xfail(strict=True, reason="bug: identified.xml holds 6 significant digits (MjSpec.to_xml's precision) "
                   "while identified.urdf and parameters.yaml hold 10: masses, inertias and joint terms lose digits")
def test_mjcf_holds_the_identified_values_to_ten_digits(tmp_path):
    model = _robot("ur5")
    layout, delta = _identified(model, seed=8)
    mj, _, _ = _mjcf(model, layout, delta, tmp_path)
    for k, link in enumerate(layout.links):
        assert mj.body_mass[mj.body(link).id] == pytest.approx(delta[layout.link_slice(k)][0], rel=1e-9)
    for j, joint in enumerate(layout.joints):
        dof = mj.jnt_dofadr[mj.joint(joint).id]
        assert mj.dof_armature[dof] == pytest.approx(delta[layout.joint_index(j, "Ia")], rel=1e-9)


def test_joints_carry_the_identified_terms_and_locked_joints_are_fixed(tmp_path):
    model = _robot("panda")
    layout, delta = _identified(model, seed=2)
    j = layout.joints.index("panda_joint4")
    delta[layout.joint_index(j, "fc")] = -0.3  # a negative estimate: MuJoCo takes none
    mj, text, _ = _mjcf(model, layout, delta, tmp_path)
    assert mj.njnt == 7 and sorted(mj.joint(i).name for i in range(mj.njnt)) == sorted(PANDA_ARM_JOINTS)
    assert "panda_finger_joint1" not in text  # locked: fixed where the data held it
    for j, joint in enumerate(layout.joints):
        dof = mj.jnt_dofadr[mj.joint(joint).id]
        for term, attribute in MJCF_TERMS.items():
            value = max(delta[layout.joint_index(j, term)], 0.0)
            assert getattr(mj, f"dof_{attribute}")[dof] == pytest.approx(value, rel=MJCF_RTOL), (joint, attribute)
        np.testing.assert_allclose(mj.dof_solimp[dof], FRICTION_IMPEDANCE)
        assert mj.dof_solref[dof][0] == pytest.approx(2 * mj.opt.timestep)
    assert mj.dof_frictionloss[mj.jnt_dofadr[mj.joint("panda_joint4").id]] == 0.0


@pytest.mark.parametrize("robot", ["panda", "ur5"])
def test_mujoco_inverse_dynamics_is_the_identified_model(robot, tmp_path):
    """``mj_inverse`` of identified.xml equals the identified torques (pinocchio's RNEA of the parameters, armature
    and viscous friction) along a motion; Coulomb friction and the offset left out (MuJoCo's friction loss is a
    constraint, the offset has no MJCF element: urdf_omits names it)."""
    import mujoco

    model = _robot(robot)
    layout, delta = _identified(model, seed=4, friction=("viscous",))
    mj, _, _ = _mjcf(model, layout, delta, tmp_path)
    data = mujoco.MjData(mj)
    rng = np.random.default_rng(5)
    n = model.n_dof
    lower, upper = model.position_limits[:, 0], model.position_limits[:, 1]  # inside: no limit constraint acts
    q = lower + (upper - lower) * rng.uniform(0.1, 0.9, (20, n))
    dq, ddq = rng.uniform(-1.0, 1.0, (20, n)), rng.uniform(-2.0, 2.0, (20, n))
    expected = torques(model, layout, delta, q, dq, ddq)
    qadr = [mj.jnt_qposadr[mj.joint(j).id] for j in model.joints]
    vadr = [mj.jnt_dofadr[mj.joint(j).id] for j in model.joints]
    for k in range(q.shape[0]):
        data.qpos[qadr], data.qvel[vadr], data.qacc[vadr] = q[k], dq[k], ddq[k]
        mujoco.mj_inverse(mj, data)
        np.testing.assert_allclose(data.qfrc_inverse[vadr], expected[k], rtol=10 * MJCF_RTOL,
                                   atol=MJCF_RTOL * np.abs(expected).max())


def test_urdf_omits_names_armature_offset_and_sigmoid_per_joint():
    layout = ParameterLayout(joints=("a", "b"), links=("la", "lb"), friction=("viscous", "coulomb", "offset"),
                             armature=True)
    delta = np.arange(layout.n_parameters, dtype=float)
    omitted = urdf_omits(layout, delta)
    assert omitted == {joint: {"offset": delta[layout.joint_index(j, "fo")],
                               "armature": delta[layout.joint_index(j, "Ia")]} for j, joint in enumerate("ab")}
    sigmoid = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert urdf_omits(layout, delta, sigmoid)["b"]["sigmoid"] == [4.0, 5.0, 6.0]
    urdf_only = ParameterLayout(joints=("a",), links=("la",), friction=("viscous", "coulomb"), armature=False)
    assert urdf_omits(urdf_only, np.ones(urdf_only.n_parameters)) == {}  # damping and friction: the URDF holds them


def test_a_joint_missing_from_the_urdf_is_an_error(tmp_path):
    model = _robot("ur5")
    layout, delta = _identified(model, seed=6)
    urdf = tmp_path / "identified.urdf"
    write_identified_urdf(model, layout, delta, urdf)
    renamed = ParameterLayout(joints=(*layout.joints[:-1], "no_such_joint"), links=layout.links,
                              friction=layout.friction, armature=layout.armature)
    with pytest.raises(ModelError, match="joint no_such_joint is not in MuJoCo's model of the identified URDF"):
        identified_mjcf(model, urdf.read_text(), renamed, delta)


def test_an_identified_urdf_that_is_not_a_robot_is_a_model_error_naming_the_link(tmp_path):
    model = _robot("ur5")
    layout, delta = _identified(model, seed=7)
    urdf = tmp_path / "identified.urdf"
    write_identified_urdf(model, layout, delta, urdf)
    root = ET.parse(urdf).getroot()
    root.find("link[@name='upper_arm_link']/inertial/mass").set("value", "-1")  # a negative mass
    broken = ET.tostring(root, encoding="unicode")
    with pytest.raises(ModelError, match="the identified URDF.*upper_arm_link.*negative"):  # the one reader's line
        identified_mjcf(model, broken, layout, delta)


HAND_ORIGIN = '<origin rpy="0 0 -0.7853981633974483" xyz="0 0 0"/>'
END_S = "6"


@pytest.fixture(scope="module")
def panda_bag(tmp_path_factory):
    return write_panda_bag(tmp_path_factory.mktemp("panda") / "run1")


@pytest.fixture(scope="module")
def vendor_urdf(tmp_path_factory):
    """example-robot-data's Panda with a second ``<origin>`` in the fixed joint of its hand."""
    text = example_robot_urdf(PANDA_ERD).read_text()
    assert HAND_ORIGIN in text
    path = tmp_path_factory.mktemp("vendor") / "panda.urdf"
    path.write_text(text.replace(HAND_ORIGIN, HAND_ORIGIN + '\n        <origin rpy="0 0 0" xyz="0 0.3 0"/>', 1))
    return path


def mujoco_matches_urdf(out, joints) -> None:
    """identified.xml loads; MuJoCo's inverse dynamics without friction and damping, less the armature the MJCF holds,
    equals pinocchio's RNEA of identified.urdf at random states (to the 6 significant digits MuJoCo writes)."""
    import mujoco

    mj = mujoco.MjModel.from_xml_path(str(out / "identified.xml"))
    data = mujoco.MjData(mj)
    urdf = pin.buildModelFromUrdf(str(out / "identified.urdf"))
    ids = [urdf.getJointId(j) for j in joints]
    qadr = [mj.jnt_qposadr[mj.joint(j).id] for j in joints]
    vadr = [mj.jnt_dofadr[mj.joint(j).id] for j in joints]
    mj.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    mj.dof_damping[:] = 0.0
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, dq, ddq = rng.normal(size=(3, len(joints)))
        full = pin.neutral(urdf)
        full[[urdf.joints[i].idx_q for i in ids]] = q
        v, a = np.zeros(urdf.nv), np.zeros(urdf.nv)
        v[[urdf.joints[i].idx_v for i in ids]], a[[urdf.joints[i].idx_v for i in ids]] = dq, ddq
        expected = pin.rnea(urdf, urdf.createData(), full, v, a)[[urdf.joints[i].idx_v for i in ids]]
        data.qpos[qadr], data.qvel[vadr], data.qacc[vadr] = q, dq, ddq
        mujoco.mj_inverse(mj, data)
        armature = mj.dof_armature[vadr] * ddq
        assert np.allclose(data.qfrc_inverse[vadr] - armature, expected, rtol=1e-5, atol=1e-6)  # MuJoCo's XML: 6 digits


def test_a_vendor_urdf_with_two_origins_in_a_fixed_joint_gives_the_whole_result(vendor_urdf, panda_bag, tmp_path,
                                                                                capsys):
    out, clean = tmp_path / "vendor", tmp_path / "clean"
    common = ["--bag", str(panda_bag), "--end", END_S, "--joints", ",".join(JOINTS)]
    assert main(["identify", "--urdf", str(vendor_urdf), *common, "--out", str(out)]) == 0, capsys.readouterr().err
    assert main(["identify", "--urdf", str(example_robot_urdf(PANDA_ERD)), *common, "--out", str(clean)]) == 0
    for name in ("parameters.yaml", "identified.urdf", "identified.xml", "report.json"):
        assert (out / name).is_file(), name
    vendor_values = yaml.safe_load((out / "parameters.yaml").read_text())["parameter_vector"]["values"]
    clean_values = yaml.safe_load((clean / "parameters.yaml").read_text())["parameter_vector"]["values"]
    assert np.allclose(vendor_values, clean_values, rtol=1e-9, atol=1e-12)  # the first <origin>, as urdfdom reads
    identified = (out / "identified.urdf").read_text()
    hand = ET.fromstring(identified).find("joint[@name='panda_hand_joint']")
    assert len(hand.findall("origin")) == 1 and hand.find("origin").get("rpy") == "0 0 -0.7853981633974483"
    assert "panda_hand_joint has 2 <origin>" in identified  # said in the file, as a comment
    mujoco_matches_urdf(out, JOINTS)


@pytest.mark.parametrize("method", ["wls", "ols"])
def test_an_unconstrained_estimate_on_a_real_arm_keeps_identified_xml(method, panda_bag, tmp_path, capsys):
    out = tmp_path / method
    code = main(["identify", "--urdf", str(example_robot_urdf(PANDA_ERD)), "--bag", str(panda_bag), "--end", END_S,
                 "--joints", ",".join(JOINTS), "--method", method, "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    mujoco_matches_urdf(out, JOINTS)
