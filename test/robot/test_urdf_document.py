"""The one URDF reader: a file read as urdfdom and pinocchio read it, by every consumer; what urdfdom would read
wrongly without a word is refused with one line naming the link or joint."""

from __future__ import annotations

import logging
import re

import numpy as np
import pinocchio as pin
import pytest

from dynid_ros.cli.main import main
from dynid_ros.errors import ModelError
from dynid_ros.robot.model import load_model
from dynid_ros.robot.urdf_document import read_urdf
from dynid_ros.robot.urdf_source import find_package

from support.robots import PANDA_ARM_JOINTS, PANDA_ERD, example_robot_urdf

HAND_ORIGIN = '<origin rpy="0 0 -0.7853981633974483" xyz="0 0 0"/>'


def with_repeats(text: str) -> str:
    """The Panda with a second ``<origin>`` in the fixed joint of its hand (as in a vendor file where a xacro macro
    and its caller both write one), a second ``<inertial>`` in link 7 and a second ``<mass>`` in link 3."""
    assert HAND_ORIGIN in text
    text = text.replace(HAND_ORIGIN, HAND_ORIGIN + '\n<origin rpy="0 0 0" xyz="0 0 0.5"/>', 1)
    link7 = text.index('<link name="panda_link7">')
    end = text.index("</link>", link7)
    text = text[:end] + ('<inertial><origin xyz="0 0 0"/><mass value="9"/>'
                         '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>') + text[end:]
    link3 = text.index('<link name="panda_link3">')
    mass = text.index("/>", text.index("<mass ", link3)) + 2
    return text[:mass] + '<mass value="42"/>' + text[mass:]


def test_repeated_elements_are_read_as_urdfdom_reads_them(caplog):
    original = example_robot_urdf(PANDA_ERD).read_text()
    text = with_repeats(original)
    with caplog.at_level(logging.WARNING, logger="dynid_ros"):
        document = read_urdf(text, "panda.urdf")
    assert len(document.notes) == 3
    assert any("panda_hand_joint has 2 <origin>" in note for note in document.notes)
    assert "panda_hand_joint" in caplog.text  # said once, when read
    assert len(document.joint("panda_hand_joint").findall("origin")) == 1
    # pinocchio (urdfdom) reads the first of each; the reader keeps exactly that
    expected = pin.buildModelFromXML(original)
    for model in (pin.buildModelFromXML(text), pin.buildModelFromXML(document.dynamics_text())):
        for j in range(1, expected.njoints):
            assert np.allclose(model.inertias[j].toDynamicParameters(), expected.inertias[j].toDynamicParameters())
        for a, b in zip(model.frames, expected.frames):
            assert a.name == b.name and np.allclose(a.placement.homogeneous, b.placement.homogeneous)
    import mujoco

    with pytest.raises(ValueError, match="repeated element"):  # MuJoCo's own URDF parser refuses the file as written
        mujoco.MjModel.from_xml_string(without_meshes(text))
    mujoco.MjModel.from_xml_string(without_meshes(document.text()))  # and reads the cleaned one


def without_meshes(text: str) -> str:
    return re.sub(r"<(visual|collision)>.*?</\1>", "", text, flags=re.S)


def test_the_reader_keeps_what_collision_checking_and_writers_need():
    text = example_robot_urdf(PANDA_ERD).read_text()
    document = read_urdf(text)
    full, dynamics = document.text(), document.dynamics_text()
    assert full.count("<collision") == text.count("<collision") > 0 and "package://" in full
    assert "<collision" not in dynamics and "<visual" not in dynamics
    assert document.name == "panda" and document.child_link("panda_joint1") == "panda_link1"
    assert document.mimic_joints()["panda_finger_joint2"].leader == "panda_finger_joint1"


LINK = '<link name="l1"><inertial>{}</inertial></link>'
INERTIA = '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'


def arm(inner: str = "", extra: str = "", joint_type: str = "revolute", child: str = "l1") -> str:
    link = LINK.format(inner or '<mass value="2"/>' + INERTIA)
    return (f'<robot name="r"><link name="base"/>{link}{extra}'
            f'<joint name="j1" type="{joint_type}"><parent link="base"/><child link="{child}"/><axis xyz="0 0 1"/>'
            '<limit effort="1" velocity="1" lower="-1" upper="1"/></joint></robot>')


@pytest.mark.parametrize("text, names", [
    (arm('<mass value="nan"/>' + INERTIA), ["l1", "mass", "finite"]),
    (arm('<mass value="1kg"/>' + INERTIA), ["l1", "'1kg' is not a number"]),
    (arm(INERTIA), ["l1", "without <mass"]),
    (arm('<mass value="2"/>'), ["l1", "without <inertia>"]),
    (arm('<mass value="-2"/>' + INERTIA), ["l1", "negative"]),
    (arm('<mass value="2"/><inertia ixx="1" iyy="1"/>'), ["l1", "izz"]),
    (arm(extra='<link name="l1"/>'), ["link 'l1' is defined twice"]),
    (arm(child="l9"), ["j1", "child link 'l9'"]),
    (arm(joint_type="spherical"), ["j1", "'spherical' is not a URDF joint type"]),
    (arm(extra='<link name="l2"/><joint name="j0" type="fixed"><parent link="base"/><child link="l1"/></joint>'),
     ["l1", "two parent joints"]),
], ids=["nan-mass", "unit-in-mass", "no-mass", "no-inertia", "negative-mass", "no-izz", "link-twice",
        "unknown-child", "spherical", "two-parents"])
def test_what_urdfdom_reads_wrongly_is_refused_in_one_line(text, names, tmp_path, capsys):
    """urdfdom prints an error and reads the link as massless (or without inertia): a wrong robot, no error."""
    with pytest.raises(ModelError) as refused:
        read_urdf(text, "vendor.urdf")
    for name in names:
        assert name in str(refused.value)
    path = tmp_path / "vendor.urdf"
    path.write_text(text)
    assert main(["info", "--urdf", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "vendor.urdf" in err and names[0] in err


def test_missing_off_diagonal_inertias_are_zero():
    document = read_urdf(arm('<mass value="2"/><inertia ixx="1" iyy="2" izz="3"/>'))
    assert np.allclose(document.link_inertia("l1").inertia, np.diag([1.0, 2.0, 3.0]))
    assert "ixy, ixz, iyz" in document.notes[0]
    model = load_model(urdf_text=arm('<mass value="2"/><inertia ixx="1" iyy="2" izz="3"/>'))
    assert np.allclose(model.pin_model.inertias[1].inertia, np.diag([1.0, 2.0, 3.0]))


PACKAGE_XML = "<package format='3'><name>{}</name><version>0.0.0</version></package>"
ARM_XACRO = """<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="vendor_arm">
  <xacro:arg name="payload" default="0.5"/>
  <xacro:include filename="$(find vendor_description)/urdf/link.xacro"/>
  <link name="base"/>
  <xacro:arm_link name="l1" mass="$(arg payload)"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit effort="10" velocity="1" lower="-1" upper="1"/></joint>
</robot>"""
LINK_XACRO = """<robot xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:macro name="arm_link" params="name mass">
    <link name="${name}"><inertial><origin xyz="0.1 0 0"/><mass value="${mass}"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
      <visual><geometry><mesh filename="package://vendor_description/meshes/l1.stl"/></geometry></visual></link>
  </xacro:macro>
</robot>"""


def test_xacro_finds_its_packages_in_a_checkout_without_ros(tmp_path, monkeypatch, capsys):
    """A vendor's description checked out on a laptop without ROS: ``$(find vendor_description)`` is the folder
    around the file (xacro alone asks the ament index, which is not there)."""
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    package = tmp_path / "src" / "vendor_description"
    (package / "urdf").mkdir(parents=True)
    (package / "package.xml").write_text(PACKAGE_XML.format("vendor_description"))
    (package / "urdf" / "link.xacro").write_text(LINK_XACRO)
    entry = package / "urdf" / "arm.urdf.xacro"
    entry.write_text(ARM_XACRO)
    assert find_package("vendor_description", entry.parent) == package
    assert find_package("other_description", entry.parent) is None
    model = load_model(urdf=entry, xacro_args=["payload:=2.5"])
    assert model.joints == ("j1",) and model.pin_model.inertias[1].mass == pytest.approx(2.5)
    assert main(["info", "--urdf", str(entry), "--xacro-arg", "payload:=1"]) == 0
    capsys.readouterr()
    entry.write_text(ARM_XACRO.replace("$(find vendor_description)", "$(find gone_description)"))
    assert main(["info", "--urdf", str(entry)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "gone_description" in err and "not found" in err


def test_the_model_the_truth_writer_and_the_simulator_read_one_robot(tmp_path):
    """The repeated-element Panda: the model loader reads the clean robot, the truth URDF is written clean, MuJoCo
    simulates it (MuJoCo refused it: "Element 'origin'")."""
    from dynid_ros.sim import GroundTruth, Simulator

    path = tmp_path / "panda_repeats.urdf"
    path.write_text(with_repeats(example_robot_urdf(PANDA_ERD).read_text()))
    model = load_model(urdf=path)
    clean = load_model(urdf=example_robot_urdf(PANDA_ERD))
    assert model.joints == clean.joints == PANDA_ARM_JOINTS
    for j in range(1, clean.pin_model.njoints):
        assert np.allclose(model.pin_model.inertias[j].toDynamicParameters(),
                           clean.pin_model.inertias[j].toDynamicParameters())
    truth = GroundTruth(seed=3)
    assert len(read_urdf(truth.urdf_text(model)).joint("panda_hand_joint").findall("origin")) == 1
    sim = Simulator(path, truth=truth)
    same = Simulator(example_robot_urdf(PANDA_ERD), truth=truth)
    q = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.7])
    for s in (sim, same):
        s.reset(q)
    a, b = (s.step(q, np.zeros(7), np.zeros(7)) for s in (sim, same))
    assert np.allclose(a.effort, b.effort, rtol=0, atol=1e-9)


def test_the_launch_helper_writes_the_robot_as_read():
    """gazebo_urdf (the launch files' robot_description for Gazebo) reads the file with the one reader: the repeated
    origin of the Panda's hand is gone from what Gazebo gets, the <ros2_control> block is added."""
    from dynid_ros.ros.launch_support import gazebo_urdf

    text = gazebo_urdf(with_repeats(example_robot_urdf(PANDA_ERD).read_text()), PANDA_ARM_JOINTS, "/c.yaml")
    document = read_urdf(text)
    assert document.notes == () and len(document.joint("panda_hand_joint").findall("origin")) == 1
    assert document.root.find("ros2_control") is not None
    with pytest.raises(ModelError, match="robot description: invalid URDF: link 'l1' is defined twice"):
        gazebo_urdf(arm(extra='<link name="l1"/>'), ["j1"], "/c.yaml")
