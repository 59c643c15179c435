"""Every robot a user may bring: each fixed-base arm of example-robot-data and each vendor description of the URDF
zoo (xacro entries with their arguments, as published), through the commands a user types: ``dynid info``,
``dynid excite`` (one short optimizer start), ``dynid simulate`` (the truth derived from the URDF), ``dynid identify``
on the first period, ``dynid validate`` on the second; each output read back by its client (pinocchio, MuJoCo, YAML).

The invariant per robot: exit 0 with a sane, complete result (identified masses finite and positive, their total
within 25 % of the truth's, the held-out torque error small), or exit 2 with one line naming the problem. The robots
that end in a refusal are listed in :data:`REFUSED` with the words their line must hold; any other robot must go
through. Run by ``.ci/run`` (``pytest -m corpus``), not by the default suite.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dynid_ros.robot.model import load_model

from support.robots import example_robot_urdf
from support.urdf_zoo import ROBOT_NAMES, zoo_robots
from support.user_runs import assert_sane, first_refusal, user_path, xfail_excitation_finding

pytestmark = pytest.mark.corpus

ERD_ARMS = {
    "panda": "panda_description/urdf/panda.urdf",
    "panda_collision": "panda_description/urdf/panda_collision.urdf",
    "ur3": "ur_description/urdf/ur3_robot.urdf",
    "ur3_gripper": "ur_description/urdf/ur3_gripper.urdf",
    "ur3_joint_limited": "ur_description/urdf/ur3_joint_limited_robot.urdf",
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "ur5_gripper": "ur_description/urdf/ur5_gripper.urdf",
    "ur5_joint_limited": "ur_description/urdf/ur5_joint_limited_robot.urdf",
    "ur10": "ur_description/urdf/ur10_robot.urdf",
    "ur10_joint_limited": "ur_description/urdf/ur10_joint_limited_robot.urdf",
    "kinova": "kinova_description/robots/kinova.urdf",
    "z1": "z1_description/urdf/z1.urdf",
    "xarm7": "xarm_description/urdf/xarm7.urdf",
    "so100": "so_arm_description/urdf/so100.urdf",
    "so101": "so_arm_description/urdf/so101.urdf",
    "talos_left_arm": "talos_data/robots/talos_left_arm.urdf",
    "finger_edu": "finger_edu_description/robots/finger_edu.urdf",
    "asr_twodof": "asr_twodof_description/urdf/TwoDofs.urdf",
    "double_pendulum": "double_pendulum_description/urdf/double_pendulum.urdf",
    "double_pendulum_continuous": "double_pendulum_description/urdf/double_pendulum_continuous.urdf",
    "double_pendulum_simple": "double_pendulum_description/urdf/double_pendulum_simple.urdf",
    "baxter": "baxter_description/urdf/baxter.urdf",
}
"""example-robot-data's fixed-base arms (its loaders without a free flyer; not the hands, not the mobile bases)."""

REFUSED: dict[str, tuple[str, tuple[tuple[str, ...], ...]]] = {
    **{name: ("excite", (("has no velocity limit in the robot description", "give one in the config"),))
       for name in ("double_pendulum", "double_pendulum_continuous", "double_pendulum_simple")},
    **{f"zoo_{name}": ("simulate", (("no moving link has a mass (no <inertial>)", "there is no robot to simulate"),))
       for name in ("abb_irb2400", "fanuc_lrmate200id", "motoman_sia5d")},  # WITHOUT_INERTIALS: info, excite pass
}
"""Robots that end in a one-line refusal: ``{robot: (command, alternatives)}``, the line holding every word of one of
the alternatives; each says why."""

MESHES_NOT_SHIPPED = {
    "zoo_doosan_m1013": "package://dsr_description2/meshes/m1013_white/MF1013_0_0.dae",
    "zoo_jaco2_j2n6s300": "package://kinova_description/meshes/base.dae",
}
"""Zoo robots whose collision geometry is not in the zoo (Doosan publishes no ``<collision>`` and its visual meshes
were dropped; Kinova's collision set, 6.1 MB, was not copied): on such a machine ``excite`` refuses in one line naming
the first mesh and the way out, and the user who takes it (``collision: {self: false, environment: []}``) goes
through every command."""


def test_the_zoo_robots_are_the_manifests():
    assert tuple(zoo_robots()) == ROBOT_NAMES


def robot_source(robot: str) -> tuple[Path, list[str]]:
    """The robot's description as the user names it: ``(file, --xacro-arg values)``."""
    if robot in ERD_ARMS:
        return example_robot_urdf(ERD_ARMS[robot]), []
    entry = zoo_robots()[robot.removeprefix("zoo_")]
    return (entry.xacro, list(entry.xacro_args)) if entry.xacro is not None else (entry.urdf, [])


def with_findings(names: list[str], findings: dict[str, str]) -> list:
    """``names`` as parameters, the open findings marked xfail with what was measured."""
    return [pytest.param(name, marks=[pytest.mark.xfail(reason=findings[name])] if name in findings else [])
            for name in names]


@pytest.mark.parametrize("robot", [*ERD_ARMS, *(f"zoo_{name}" for name in ROBOT_NAMES)])
def test_a_robot_as_published_goes_through_every_command(robot, tmp_path):
    urdf, xacro_args = robot_source(robot)
    runs = user_path(urdf, tmp_path, xacro_args=xacro_args)
    refused = first_refusal(runs)
    expected = REFUSED.get(robot)
    if refused is None:
        assert expected is None, f"{robot}: {expected[0]} was expected to refuse ({expected[1]}) and did not"
        assert_sane(tmp_path, load_model(urdf=urdf, xacro_args=xacro_args or None, quiet=True).joints)
        return
    command, line = refused
    if robot in MESHES_NOT_SHIPPED and command == "excite":
        for words in (str(urdf), MESHES_NOT_SHIPPED[robot], "not found", "--package-dir",
                      "collision: {self: false, environment: []}"):
            assert words in line, line
        runs = user_path(urdf, tmp_path / "unchecked", xacro_args=xacro_args,
                         collision={"self": False, "environment": []})
        refused = first_refusal(runs)
        if refused is not None:  # Doosan: "the best condition number with unit-norm columns is 1.25e+03" (measured)
            xfail_excitation_finding(f"{robot} without collision checks", *refused)
        assert refused is None, [str(r) for r in runs.values() if r.code]
        assert_sane(tmp_path / "unchecked", load_model(urdf=urdf, xacro_args=xacro_args or None, quiet=True).joints)
        return
    if expected is None:
        xfail_excitation_finding(robot, command, line)
    assert expected is not None and expected[0] == command, f"{robot}: unexpected refusal by {command}: {line}"
    assert any(all(word in line for word in words) for words in expected[1]), f"{robot}: {line}"


WITHOUT_INERTIALS = ("abb_irb2400", "fanuc_lrmate200id", "motoman_sia5d")
"""Zoo robots published without any ``<inertial>``: the robot has masses, its file does not."""


def with_inertials(text: str) -> str:
    """The description with an ``<inertial>`` on every link that has none and a joint: a solid rod from the link's
    origin to its child joint (2 kg per 10 cm of it, at least 1 kg), as a robot of that size might weigh."""
    import xml.etree.ElementTree as ET

    import numpy as np

    root = ET.fromstring(text)
    children = {}
    for joint in root.findall("joint"):
        origin = joint.find("origin")
        xyz = np.array([float(v) for v in (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split()])
        children.setdefault(joint.find("parent").get("link"), []).append(xyz)
    moved = {joint.find("child").get("link") for joint in root.findall("joint") if joint.get("type") != "fixed"}
    for link in root.findall("link"):
        if link.find("inertial") is not None or link.get("name") not in moved:
            continue
        rod = max(children.get(link.get("name"), [np.zeros(3)]), key=np.linalg.norm)
        length = max(float(np.linalg.norm(rod)), 0.1)
        mass = max(20.0 * length, 1.0)
        com = 0.5 * rod
        across, along = mass * (0.05**2 / 4 + length**2 / 12), mass * 0.05**2 / 2
        inertial = ET.SubElement(link, "inertial")
        ET.SubElement(inertial, "origin", xyz=" ".join(f"{v:.6g}" for v in com), rpy="0 0 0")
        ET.SubElement(inertial, "mass", value=f"{mass:.6g}")
        ET.SubElement(inertial, "inertia", ixx=f"{across:.6g}", iyy=f"{across:.6g}", izz=f"{across + along:.6g}",
                      ixy="0", ixz="0", iyz="0")
    return ET.tostring(root, encoding="unicode")


@pytest.mark.parametrize("robot", WITHOUT_INERTIALS)
def test_a_description_without_inertials_is_identified_with_its_geometry_as_the_prior(robot, tmp_path):
    """The data come from the robot (a truth with masses: :func:`with_inertials`, simulated); ``dynid identify``
    gets the vendor's file, which has none. The default method (FBPE) keeps what the data do not determine at the
    description's values: the moving links get the inertia of their collision geometry at the hull density as the
    prior's centre (:mod:`dynid_ros.robot.geometry_inertia`), named on the console. The result fits held-out data of
    the robot and every link has a positive mass. (Before: a one-line refusal, "gives no mass to the moving
    link(s)".)"""
    from support.user_runs import PERIOD, dynid, masses, read_back

    vendor = zoo_robots()[robot].urdf
    truth_urdf = tmp_path / "robot_with_masses.urdf"
    truth_urdf.write_text(with_inertials(vendor.read_text()))
    # the user's edited copy lives in their own folder; the vendor's meshes stay in its package (--package-dir)
    runs = user_path(truth_urdf, tmp_path / "truth_run", package_dirs=(zoo_robots()[robot].package_dir,))
    assert first_refusal(runs) is None, [str(r) for r in runs.values() if r.code]
    work = tmp_path / "truth_run"
    out = tmp_path / "result"
    run = dynid("identify", "--urdf", vendor, "--bag", work / "bag", "--end", PERIOD, "--out", out)  # no config:
    # the truth's derived one would bound the total mass by the truth's
    said = run.out + run.err
    if run.code == 2 and "the result fails its own check" in said and "the nominal model explains nothing" in said:
        # open (issue 27), measured on the IRB 2400 after the 12 L-point excitation grid: the feasible fit 1.558 % on
        # its window where unconstrained least squares gets 1.4 % (--prior none: the same), the F-test refuses it;
        # with the guessed masses explaining nothing (140 %) there is no nominal to beat
        pytest.xfail(f"open: {robot}: {said.strip().splitlines()[-1]}")
    assert run.code == 0, run
    assert "gives no mass to the moving link(s)" in said and "collision geometry" in said, said
    identified = masses(read_back(out, load_model(urdf=vendor, quiet=True).joints).parameters["parameter_vector"])
    assert all(mass > 0 for mass in identified.values()), identified
    report = tmp_path / "validation.json"
    validation = dynid("validate", "--result", out, "--bag", work / "bag", "--start", PERIOD, "--report", report)
    assert validation.code == 0, validation
    assert json.loads(report.read_text())["relative_error"] < 0.05, identified
