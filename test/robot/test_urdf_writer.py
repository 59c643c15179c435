"""The identified URDF (``identified.urdf``): the source URDF with new ``<inertial>`` and ``<dynamics>``, read back
by pinocchio and MuJoCo; everything else as it was. Real descriptions: the Panda (a hand fixed to its last link,
locked fingers) and the UR5 of example-robot-data."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from dynid_ros.errors import ModelError
from dynid_ros.robot.model import load_model, nominal_parameters
from dynid_ros.robot.parameters import TRIANGLE_MARGIN, inertia_about_com, link_parameters
from dynid_ros.robot.urdf_document import read_urdf
from dynid_ros.robot.urdf_writer import (
    attached_parameters,
    inertial_element,
    principal_with_margin,
    write_identified_urdf,
)

from support.paths import FILES
from support.robots import PANDA_ARM_JOINTS, PANDA_ERD, UR5_ERD, example_robot_urdf

FINGERS = {"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.02}


def _panda():
    return load_model(urdf=example_robot_urdf(PANDA_ERD), joints=list(PANDA_ARM_JOINTS), locked_at=FINGERS)


def _ur5():
    return load_model(urdf=example_robot_urdf(UR5_ERD))


def _identified(model, seed: int):
    """A plausible identification: each body's nominal parameters scaled by 0.85-1.15 (a physical body, heavier
    than what is fixed to it), positive friction."""
    layout = model.layout_for(("viscous", "coulomb", "offset"), True)
    delta = nominal_parameters(model, layout)
    rng = np.random.default_rng(seed)
    for k in range(len(layout.links)):
        delta[layout.link_slice(k)] *= rng.uniform(0.85, 1.15)
    for symbol in layout.joint_terms:
        delta[layout.indices(symbol)] = rng.uniform(0.05, 2.0, layout.n_dof)
    return layout, delta


def _without_meshes(path) -> str:
    """The URDF without visual and collision geometry (MuJoCo would look for the package:// meshes)."""
    return read_urdf(path.read_text(), path).dynamics_text()


def _tree(element: ET.Element) -> tuple:
    """An element's tag, attributes and children, recursively (not its whitespace)."""
    return element.tag, dict(element.attrib), [_tree(child) for child in element]


def _link_scale(p: np.ndarray) -> np.ndarray:
    """A per-parameter size of a link's ten parameters (mass, first moments, inertias)."""
    return np.array([abs(p[0])] + [max(np.abs(p[1:4]).max(), 1e-9)] * 3 + [max(np.abs(p[4:]).max(), 1e-12)] * 6)


@pytest.mark.parametrize("robot", ["panda", "ur5"])
def test_identified_urdf_read_back_by_pinocchio_has_the_identified_parameters(robot, tmp_path):
    model = _panda() if robot == "panda" else _ur5()
    layout, delta = _identified(model, seed=1)
    out = tmp_path / "identified.urdf"
    warnings = write_identified_urdf(model, layout, delta, out)
    assert warnings == []
    joints = list(PANDA_ARM_JOINTS) if robot == "panda" else None
    reread = load_model(urdf=out, joints=joints, locked_at=FINGERS if robot == "panda" else None)
    back = nominal_parameters(reread, layout)
    for k, link in enumerate(layout.links):  # the body as identified, the fixed hand included (10 digits)
        p, q = delta[layout.link_slice(k)], back[layout.link_slice(k)]
        assert np.all(np.abs(p - q) <= 1e-8 * _link_scale(p)), (link, p, q)
    for symbol in ("fv", "fc"):  # <dynamics damping friction>
        np.testing.assert_allclose(back[layout.indices(symbol)], delta[layout.indices(symbol)], rtol=1e-9)


def test_only_inertials_of_identified_links_and_joint_dynamics_change(tmp_path):
    model = _panda()
    layout, delta = _identified(model, seed=2)
    out = tmp_path / "identified.urdf"
    write_identified_urdf(model, layout, delta, out)
    source, written = ET.parse(example_robot_urdf(PANDA_ERD)).getroot(), ET.parse(out).getroot()
    assert [j.get("name") for j in written.findall("joint")] == [j.get("name") for j in source.findall("joint")]
    assert [lk.get("name") for lk in written.findall("link")] == [lk.get("name") for lk in source.findall("link")]
    for old, new in zip(source.findall("joint"), written.findall("joint"), strict=True):
        for tag in ("origin", "axis", "limit", "parent", "child", "mimic", "safety_controller"):
            a, b = old.find(tag), new.find(tag)
            assert (a is None) == (b is None) and (a is None or a.attrib == b.attrib), (old.get("name"), tag)
        if old.get("name") not in PANDA_ARM_JOINTS and old.find("dynamics") is not None:
            assert new.find("dynamics").attrib == old.find("dynamics").attrib
    for old, new in zip(source.findall("link"), written.findall("link"), strict=True):
        for tag in ("visual", "collision"):
            assert [_tree(e) for e in old.findall(tag)] == [_tree(e) for e in new.findall(tag)]
        if old.get("name") not in layout.links:  # the base, the hand, the fingers: untouched
            a, b = old.find("inertial"), new.find("inertial")
            assert (a is None) == (b is None)
            if a is not None:
                assert {e.tag: e.attrib for e in a} == {e.tag: e.attrib for e in b}
    dynamics = written.find("joint[@name='panda_joint3']/dynamics")
    j = layout.joints.index("panda_joint3")
    assert float(dynamics.get("damping")) == pytest.approx(delta[layout.joint_index(j, "fv")], rel=1e-9)
    assert float(dynamics.get("friction")) == pytest.approx(delta[layout.joint_index(j, "fc")], rel=1e-9)
    assert dynamics.get("K") == "7000"  # the source's other <dynamics> attributes stay


def test_identified_urdf_loads_in_mujoco_with_the_identified_masses(tmp_path):
    import mujoco

    model = _ur5()
    layout, delta = _identified(model, seed=3)
    out = tmp_path / "identified.urdf"
    write_identified_urdf(model, layout, delta, out)
    mj = mujoco.MjModel.from_xml_string(_without_meshes(out))
    for k, link in enumerate(layout.links):
        assert mj.body_mass[mj.body(link).id] == pytest.approx(delta[layout.link_slice(k)][0], rel=1e-9)


def test_a_wrist_lighter_than_its_fixed_hand_is_written_whole_and_the_hand_inertial_removed(tmp_path):
    model = _panda()
    layout, delta = _identified(model, seed=4)
    last = layout.link_slice(len(layout.links) - 1)
    own = read_urdf(model.urdf_xml).link_inertia("panda_link7").toDynamicParameters()
    delta[last] = 0.5 * own  # lighter than the 0.76 kg hand and fingers fixed to it
    out = tmp_path / "identified.urdf"
    warnings = write_identified_urdf(model, layout, delta, out)
    assert len(warnings) == 1 and warnings[0].startswith("link panda_link7: identified body is lighter")
    assert "panda_hand" in warnings[0] and "panda_leftfinger" in warnings[0]
    root = ET.parse(out).getroot()
    for link in ("panda_hand", "panda_leftfinger", "panda_rightfinger"):
        assert root.find(f"link[@name='{link}']/inertial") is None
    reread = load_model(urdf=out, joints=list(PANDA_ARM_JOINTS), locked_at=FINGERS)
    back = nominal_parameters(reread, layout)[last]
    assert np.all(np.abs(back - delta[last]) <= 1e-8 * _link_scale(delta[last]))  # the total is the identified body


def test_an_inertia_at_the_triangle_limit_gets_a_strict_margin_mujoco_accepts(tmp_path):
    import mujoco

    model = _ur5()
    layout, delta = _identified(model, seed=5)
    k = 2
    mass, com, _ = inertia_about_com(delta[layout.link_slice(k)])
    delta[layout.link_slice(k)] = link_parameters(mass, com, np.diag([0.01, 0.02, 0.03]))  # A + B = C exactly
    out = tmp_path / "identified.urdf"
    warnings = write_identified_urdf(model, layout, delta, out)
    assert warnings == [f"link {layout.links[k]}: inertia adjusted to keep a strict triangle-inequality margin"]
    mujoco.MjModel.from_xml_string(_without_meshes(out))  # "inertia must satisfy A + B >= C" would raise
    inertia = ET.parse(out).getroot().find(f"link[@name='{layout.links[k]}']/inertial/inertia")
    a, b, c = sorted(float(inertia.get(key)) for key in ("ixx", "iyy", "izz"))
    assert a + b >= (1 + TRIANGLE_MARGIN) * c * (1 - 1e-9)


def test_a_negative_mass_is_an_error_and_nothing_is_written(tmp_path):
    model = _ur5()
    layout, delta = _identified(model, seed=6)
    delta[layout.link_slice(1).start] = -0.5
    out = tmp_path / "identified.urdf"
    with pytest.raises(ModelError, match="identified mass of link upper_arm_link is -0.5 kg: not physical"):
        write_identified_urdf(model, layout, delta, out)
    assert not out.exists()


def test_a_dh_robot_has_no_urdf_to_write(tmp_path):
    model = load_model(dh=FILES / "kr5_dh.yaml")
    layout = model.layout_for()
    with pytest.raises(ModelError, match="DH table: there is no URDF to update"):
        write_identified_urdf(model, layout, np.zeros(layout.n_parameters), tmp_path / "x.urdf")
    assert not (tmp_path / "x.urdf").exists()


def test_principal_with_margin_keeps_a_valid_inertia_and_fixes_an_invalid_one():
    rng = np.random.default_rng(0)
    rotation = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    valid = rotation @ np.diag([0.02, 0.03, 0.04]) @ rotation.T
    np.testing.assert_array_equal(principal_with_margin(valid), 0.5 * (valid + valid.T))
    invalid = rotation @ np.diag([0.01, 0.01, 0.05]) @ rotation.T  # A + B < C: no rigid body has it
    fixed = principal_with_margin(invalid)
    values, vectors = np.linalg.eigh(fixed)
    assert values[0] + values[1] >= (1 + TRIANGLE_MARGIN) * values[2]
    assert values[0] > TRIANGLE_MARGIN * values.sum()
    assert values[2] == pytest.approx(0.05)  # the largest moment kept, the smaller two raised
    # the principal axes kept (compare projectors: an eigenvector's sign is arbitrary)
    np.testing.assert_allclose(np.outer(vectors[:, 2], vectors[:, 2]), np.outer(rotation[:, 2], rotation[:, 2]),
                               atol=1e-9)


def test_inertial_element_writes_ten_significant_digits_read_back_by_pinocchio():
    import pinocchio as pin

    mass, com = 1.234567890123, np.array([0.0123456789012, -0.1, 2e-7])
    inertia = np.array([[0.0123456789012, 1e-4, -2e-4], [1e-4, 0.02, 3e-5], [-2e-4, 3e-5, 0.025]])
    element = inertial_element(mass, com, inertia)
    assert element.find("mass").get("value") == "1.23456789"
    assert element.find("origin").get("xyz") == "0.0123456789 -0.1 2e-07"
    assert element.find("inertia").get("ixx") == "0.0123456789" and element.find("inertia").get("ixz") == "-0.0002"
    urdf = ('<robot name="r"><link name="base"/><link name="l1">' + ET.tostring(element, encoding="unicode")
            + '</link><joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>'
            '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>')
    body = pin.buildModelFromXML(urdf).inertias[1]
    assert body.mass == pytest.approx(mass, rel=1e-9)
    np.testing.assert_allclose(body.lever, com, rtol=1e-9)
    np.testing.assert_allclose(body.inertia, inertia, rtol=1e-9, atol=1e-15)


def test_attached_parameters_are_the_hand_and_fingers_fixed_to_the_last_link():
    import pinocchio as pin

    model = _panda()
    layout = model.layout_for()
    attached = attached_parameters(model, layout)
    document = read_urdf(model.urdf_xml)
    last = layout.link_slice(len(layout.links) - 1)
    np.testing.assert_allclose(attached[:last.start], 0.0, atol=1e-12)  # nothing fixed to links 1-6
    assert attached[last.start] == pytest.approx(0.73 + 0.015 + 0.015, rel=1e-12)  # hand + two fingers [kg]
    assert np.all(attached[layout.n_link_parameters:] == 0)  # no joint terms
    full = pin.buildModelFromUrdf(str(example_robot_urdf(PANDA_ERD)))
    data = full.createData()
    q = pin.neutral(full)
    for name, value in FINGERS.items():
        q[full.joints[full.getJointId(name)].idx_q] = value
    pin.forwardKinematics(full, data, q)
    pin.updateFramePlacements(full, data)
    joint7 = data.oMi[full.getJointId("panda_joint7")]
    total = pin.Inertia.Zero()
    for link in ("panda_hand", "panda_leftfinger", "panda_rightfinger"):  # each in joint 7's frame
        placement = joint7.actInv(data.oMf[full.getFrameId(link)])
        total += placement.act(document.link_inertia(link))
    np.testing.assert_allclose(attached[last], total.toDynamicParameters(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(attached_parameters(_ur5(), _ur5().layout_for()), 0.0, atol=1e-12)  # UR5: none
