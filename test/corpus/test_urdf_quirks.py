"""URDF quirks a user's file has, generated from a published arm (example-robot-data's UR5 as shipped): the same
robot written another way must give the same identification; a description that differs from the robot must still
give a sane result from the robot's data (an inertia that breaks the triangle inequality), or one line where the
default method would keep a wrong value (a moving link without ``<inertial>``, zero or tiny masses:
:data:`NO_MASS`); a robot with continuous, prismatic or mimic joints or names with slashes goes through the whole
path (excite, simulate, identify, validate); meshes nobody can resolve are refused where the collision geometry is
needed (excite).
"""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml

from dynid_ros.robot.model import load_model

from support.robots import UR5_ERD, example_robot_urdf
from support.user_runs import (
    PERIOD,
    assert_refused,
    assert_sane,
    dynid,
    first_refusal,
    read_back,
    refusal,
    user_path,
    xfail_excitation_finding,
)

pytestmark = pytest.mark.corpus

def ur5() -> ET.Element:
    return ET.fromstring(example_robot_urdf(UR5_ERD).read_text())


def text(root: ET.Element) -> str:
    return ET.tostring(root, encoding="unicode")


def joint(root: ET.Element, name: str) -> ET.Element:
    return next(j for j in root.findall("joint") if j.get("name") == name)


def link(root: ET.Element, name: str) -> ET.Element:
    return next(k for k in root.findall("link") if k.get("name") == name)


# ----------------------------------------------------------------------------------------------------------------
# The same robot written another way: the identification is the clean file's


def repeated_elements(root: ET.Element) -> ET.Element:
    """A second ``<origin>`` in a fixed joint and in a moving one, a second ``<limit>``, ``<axis>``, ``<inertial>``
    and ``<mass>`` (urdfdom reads the first of each)."""
    ET.SubElement(joint(root, "ee_fixed_joint"), "origin", xyz="0 0.5 0", rpy="0 0 1")
    elbow = joint(root, "elbow_joint")
    elbow.insert(len(elbow), ET.Element("origin", xyz="0.3 0 0", rpy="0 0 0"))
    ET.SubElement(elbow, "limit", effort="1", lower="-0.1", upper="0.1", velocity="0.1")
    ET.SubElement(elbow, "axis", xyz="1 0 0")
    forearm = link(root, "forearm_link")
    forearm.append(copy.deepcopy(forearm.find("inertial")))
    forearm.findall("inertial")[1].find("mass").set("value", "40")
    ET.SubElement(link(root, "upper_arm_link").find("inertial"), "mass", value="99")
    return root


def software_tags(root: ET.Element) -> ET.Element:
    """``<ros2_control>`` with its hardware and interfaces, ``<transmission>`` and ``<gazebo>`` plugins, a ``<mujoco>``
    compiler block (as vendors ship for their own simulators)."""
    control = ET.SubElement(root, "ros2_control", name="UR5", type="system")
    ET.SubElement(ET.SubElement(control, "hardware"), "plugin").text = "ur_robot_driver/URPositionHardwareInterface"
    for name in ("shoulder_pan_joint", "elbow_joint"):
        element = ET.SubElement(control, "joint", name=name)
        ET.SubElement(element, "command_interface", name="position")
        ET.SubElement(element, "state_interface", name="position")
        ET.SubElement(element, "state_interface", name="effort")
    gazebo = ET.SubElement(root, "gazebo")
    ET.SubElement(gazebo, "plugin", filename="gz_ros2_control-system",
                  name="gz_ros2_control::GazeboSimROS2ControlPlugin")
    ET.SubElement(ET.SubElement(root, "gazebo", reference="forearm_link"), "selfCollide").text = "true"
    mujoco = ET.SubElement(root, "mujoco")
    ET.SubElement(mujoco, "compiler", balanceinertia="true", discardvisual="false", meshdir="/nowhere")
    return root


def unresolvable_meshes(root: ET.Element) -> ET.Element:
    """Every mesh renamed to a package nobody has, plus a relative and a file:// mesh that do not exist."""
    for mesh in root.iter("mesh"):
        mesh.set("filename", mesh.get("filename").replace("package://example-robot-data", "package://ur_gone"))
    visual = ET.SubElement(link(root, "wrist_1_link"), "visual")
    ET.SubElement(ET.SubElement(visual, "geometry"), "mesh", filename="meshes/missing.dae")
    collision = ET.SubElement(link(root, "wrist_2_link"), "collision")
    ET.SubElement(ET.SubElement(collision, "geometry"), "mesh", filename="file:///no/such/file.stl")
    return root


def continuous_wrists(root: ET.Element) -> ET.Element:
    """The wrist joints as ``continuous`` (no position limits): the UR5's wrists turn ±2π, near enough."""
    for name in ("wrist_1_joint", "wrist_2_joint", "wrist_3_joint"):
        element = joint(root, name)
        element.set("type", "continuous")
        limit = element.find("limit")
        for key in ("lower", "upper"):
            limit.attrib.pop(key, None)
    return root


SAME_ROBOT = {"repeated_elements": repeated_elements, "software_tags": software_tags,
              "unresolvable_meshes": unresolvable_meshes}

# ----------------------------------------------------------------------------------------------------------------
# A description that differs from the robot: the robot's data decide


def missing_inertial(root: ET.Element) -> ET.Element:
    """The forearm without ``<inertial>`` (its 2.3 kg are in the robot, not in the file)."""
    forearm = link(root, "forearm_link")
    forearm.remove(forearm.find("inertial"))
    return root


def zero_mass(root: ET.Element) -> ET.Element:
    """The upper arm with mass 0 and a zero inertia."""
    inertial = link(root, "upper_arm_link").find("inertial")
    inertial.find("mass").set("value", "0")
    for key in ("ixx", "iyy", "izz"):
        inertial.find("inertia").set(key, "0")
    return root


def tiny_masses(root: ET.Element) -> ET.Element:
    """Every wrist link 1e-8 kg with a 1e-8 inertia whose off-diagonals make it singular (as vendors mark 'no
    data')."""
    for name in ("wrist_1_link", "wrist_2_link", "wrist_3_link"):
        inertial = link(root, name).find("inertial")
        inertial.find("mass").set("value", "1e-08")
        inertial.find("inertia").attrib.update({k: "1e-08" for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")})
    return root


def broken_triangle(root: ET.Element) -> ET.Element:
    """Inertias of the shoulder and forearm that break the triangle inequality (ixx + iyy < izz)."""
    for name in ("shoulder_link", "forearm_link"):
        inertia = link(root, name).find("inertial/inertia")
        inertia.set("izz", repr(5 * (float(inertia.get("ixx")) + float(inertia.get("iyy")))))
    return root


OTHER_DESCRIPTION = {"missing_inertial": missing_inertial, "zero_mass": zero_mass, "tiny_masses": tiny_masses,
                     "broken_triangle": broken_triangle}

# ----------------------------------------------------------------------------------------------------------------
# Another robot: the whole path


def prismatic_wrist(root: ET.Element) -> ET.Element:
    """wrist_3 a prismatic joint along its axis, ±5 cm."""
    element = joint(root, "wrist_3_joint")
    element.set("type", "prismatic")
    element.find("limit").attrib.update(lower="-0.05", upper="0.05", velocity="0.2", effort="100")
    return root


def mimic_wrist(root: ET.Element) -> ET.Element:
    """wrist_3 follows wrist_2 (``<mimic multiplier=-0.5>``): one motor, two joints."""
    ET.SubElement(joint(root, "wrist_3_joint"), "mimic", joint="wrist_2_joint", multiplier="-0.5", offset="0.1")
    return root


def slashed_names(root: ET.Element) -> ET.Element:
    """Every link and joint prefixed ``ur5/`` (as Interbotix and multi-robot descriptions name them)."""
    for element in root.iter():
        if element.tag in ("link", "joint") and element.get("name"):
            element.set("name", f"ur5/{element.get('name')}")
        if element.tag in ("parent", "child") and element.get("link"):
            element.set("link", f"ur5/{element.get('link')}")
    for element in root.iter("gazebo"):
        if element.get("reference"):
            element.set("reference", f"ur5/{element.get('reference')}")
    return root


ANOTHER_ROBOT = {"continuous_wrists": continuous_wrists, "prismatic_wrist": prismatic_wrist,
                 "mimic_wrist": mimic_wrist, "slashed_names": slashed_names}


@pytest.fixture(scope="module")
def clean_run(ur5_run, tmp_path_factory) -> dict:
    """The UR5 as shipped through the whole path (:func:`ur5_run`): the bag and result every same-robot quirk is
    compared with; ``urdf``: the shipped file as the quirks write it (written back unchanged)."""
    urdf = tmp_path_factory.mktemp("ur5_copy") / "ur5.urdf"
    urdf.write_text(text(ur5()))
    return {"work": ur5_run["work"], "urdf": urdf, "identified": assert_sane(ur5_run["work"], ur5_run["joints"])}


@pytest.mark.parametrize("quirk", list(SAME_ROBOT))
def test_the_same_robot_written_another_way_is_identified_the_same(quirk, clean_run, tmp_path):
    work = clean_run["work"]
    urdf = tmp_path / "ur5_quirk.urdf"
    urdf.write_text(text(SAME_ROBOT[quirk](ur5())))
    info = dynid("info", "--urdf", urdf, "--json")
    assert info.code == 0, str(info)
    assert json.loads(info.out) == json.loads(dynid("info", "--urdf", clean_run["urdf"], "--json").out)
    out = tmp_path / "result"
    run = dynid("identify", "--urdf", urdf, "--config", work / "config.yaml", "--bag", work / "bag", "--end", PERIOD,
                "--out", out)
    assert run.code == 0, str(run)
    clean = yaml.safe_load((work / "result" / "parameters.yaml").read_text())["parameter_vector"]["values"]
    quirky = yaml.safe_load((out / "parameters.yaml").read_text())["parameter_vector"]["values"]
    assert np.allclose(quirky, clean, rtol=1e-6, atol=1e-9)
    read_back(out, load_model(urdf=clean_run["urdf"]).joints)


NO_MASS = {"missing_inertial": ("forearm_link",), "zero_mass": ("upper_arm_link",),
           "tiny_masses": ("wrist_1_link", "wrist_2_link", "wrist_3_link")}
"""Descriptions that give a moving link no mass: the default method (FBPE) keeps what the data do not determine at
the description's values, so ``identify`` refuses in one line naming the links (a massless link would be a wrong
answer: measured before the refusal, a held-out error above 5 % on the UR5's data)."""


@pytest.mark.parametrize("quirk", list(OTHER_DESCRIPTION))
def test_a_description_that_differs_from_the_robot_gives_a_sane_result_or_one_line(quirk, clean_run, tmp_path):
    work = clean_run["work"]
    urdf = tmp_path / "ur5_quirk.urdf"
    urdf.write_text(text(OTHER_DESCRIPTION[quirk](ur5())))
    info = dynid("info", "--urdf", urdf, "--json")
    assert info.code == 0, str(info)
    out = tmp_path / "result"
    identify = ("identify", "--urdf", urdf, "--config", work / "config.yaml", "--bag", work / "bag", "--end", PERIOD,
                "--out", out)
    run = dynid(*identify)
    validate = ("validate", "--result", out, "--bag", work / "bag", "--start", PERIOD, "--report",
                tmp_path / "validation.json")
    if quirk in NO_MASS:
        assert_refused(run, str(urdf), "gives no mass to the moving link(s)", *NO_MASS[quirk])
        assert not out.exists()
        return
    assert refusal(run) is None
    validate = dynid(*validate)
    assert validate.code == 0, str(validate)
    assert_sane(tmp_path, load_model(urdf=urdf).joints, truth=work / "truth")


@pytest.mark.parametrize("quirk", list(ANOTHER_ROBOT))
def test_another_robot_goes_through_every_command(quirk, tmp_path, ros_environment):
    urdf = tmp_path / "robot.urdf"
    urdf.write_text(text(ANOTHER_ROBOT[quirk](ur5())))
    runs = user_path(urdf, tmp_path)
    refused = first_refusal(runs)
    if refused is not None:
        xfail_excitation_finding(f"UR5 {quirk}", *refused)
    assert refused is None, refused
    assert_sane(tmp_path, load_model(urdf=urdf).joints)


def test_meshes_nobody_can_resolve_are_refused_where_collision_geometry_is_needed(clean_run, tmp_path):
    """The collision checks of ``excite`` need the meshes: one line naming the file, the mesh, its link and where it
    was looked for, and nothing written; ``info`` and ``identify`` need no geometry (the test above)."""
    urdf = tmp_path / "ur5_quirk.urdf"
    urdf.write_text(text(unresolvable_meshes(ur5())))
    out = tmp_path / "trajectory.yaml"
    run = dynid("excite", "--urdf", urdf, "--config", clean_run["work"] / "config.yaml", "--no-progress", "--out", out)
    line = assert_refused(run, str(urdf), "package://ur_gone/", "not found", "--package-dir")
    assert "link" in line and not out.exists()
