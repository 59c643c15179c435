"""``dynid demo --urdf``: the whole job on robots example-robot-data ships, as shipped (meshes, fingers).

Short runs (a few seconds of excitation optimization, one period per run) keep the suite fast; the full runs
are in ``benchmarks/bench_demo_robots.py``.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from dynid_ros.cli.main import main
from dynid_ros.errors import ConfigError
from dynid_ros.excitation import load_trajectory
from dynid_ros.robot.model import load_model
from dynid_ros.robot.robot_defaults import named_gripper_joints
from dynid_ros.sim import Gains, Simulator
from dynid_ros.studies.demo import user_robot

from support.robots import PANDA_ARM_JOINTS, PANDA_ERD, UR5_ERD, example_robot_urdf

UR10_ERD = "ur_description/urdf/ur10_robot.urdf"
Z1_ERD = "z1_description/urdf/z1.urdf"
SHORT_RUN = ["--time-budget", "40", "--cycles", "1"]  # clear of the robot and its table: 6 s did not finish a start


@pytest.mark.parametrize("relative", [PANDA_ERD, UR5_ERD, UR10_ERD], ids=["panda", "ur5", "ur10"])
def test_demo_urdf_as_shipped_within_noise_floor_feasible_closer_and_loadable(relative, tmp_path, capsys):
    urdf = example_robot_urdf(relative)
    assert "<mesh" in urdf.read_text()  # as shipped: meshes untouched
    out = tmp_path / "demo"
    assert main(["demo", "--urdf", str(urdf), "--out", str(out), *SHORT_RUN]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ratio_to_noise_floor"] <= 1.05, summary["relative_error_validation"]
    assert summary["feasible"] is True and summary["solver_status"] == "optimal"
    assert summary["closer_to_truth_than_nominal"] is True, summary["parameter_errors"]
    assert summary["derived_from_urdf"] == ["identification", "excitation", "simulation"]
    assert summary["excitation"]["identification"]["saturated_steps"] == 0
    assert set(summary["timings_s"]) >= {"excitation_identification", "excitation_validation"}
    assert str(out / "report.md") in capsys.readouterr().out
    for kind in ("identification", "validation"):  # the optimized excitations are kept, as dynid excite writes them
        written = load_trajectory(summary["files"]["trajectories"][kind])
        assert written.condition_number == pytest.approx(summary["excitation"][kind]["condition_number"])

    identified = out / "result" / "identified.urdf"
    joints = summary["joints"]
    model = load_model(urdf=identified, joints=joints)  # pinocchio
    masses = [model.pin_model.inertias[j].mass for j in range(1, model.pin_model.njoints)]
    nominal = load_model(urdf=urdf, joints=joints)
    nominal_total = sum(nominal.pin_model.inertias[j].mass for j in range(1, nominal.pin_model.njoints))
    assert min(masses) > 0 and 0.7 * nominal_total <= sum(masses) <= 1.3 * nominal_total
    sim = Simulator(identified, joints=joints)  # MuJoCo compiles the identified URDF
    sample = sim.step(np.zeros(len(joints)), np.zeros(len(joints)), np.zeros(len(joints)))
    assert np.all(np.isfinite(sample.effort))


def test_demo_urdf_panda_locks_the_fingers_and_writes_the_config_it_used(tmp_path, caplog):
    urdf = example_robot_urdf(PANDA_ERD)
    with caplog.at_level(logging.WARNING):
        robot = user_robot(urdf)
    assert robot.joints == PANDA_ARM_JOINTS
    assert robot.locked == ("panda_finger_joint1", "panda_finger_joint2")
    assert "panda_finger_joint1" in caplog.text  # the lock is announced
    assert robot.config["robot"]["joints"] == list(PANDA_ARM_JOINTS)
    named = user_robot(urdf, joints=[*PANDA_ARM_JOINTS, "panda_finger_joint1", "panda_finger_joint2"])
    assert named.locked == () and "panda_finger_joint1" in named.joints


def test_a_gripper_at_the_end_of_the_chain_is_locked_by_its_name(caplog):
    urdf = example_robot_urdf(Z1_ERD)
    assert named_gripper_joints(load_model(urdf=urdf).joints) == ("jointGripper",)
    with caplog.at_level(logging.WARNING):
        robot = user_robot(urdf)
    assert robot.locked == ("jointGripper",) and len(robot.joints) == 6
    assert "jointGripper" in caplog.text


@pytest.mark.parametrize("argv, message", [
    (["--robot", "panda", "--urdf", "x.urdf"], "not both"),
    (["--config", "config/panda.yaml"], "go with --urdf"),
    (["--urdf", "missing.urdf"], "no such URDF"),
])
def test_demo_urdf_bad_input_is_one_line_exit_2(argv, message, tmp_path, capsys):
    assert main(["demo", *argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_demo_urdf_unknown_joint_is_one_line_exit_2(tmp_path, capsys):
    urdf = example_robot_urdf(UR5_ERD)
    assert main(["demo", "--urdf", str(urdf), "--joints", "shoulder_pan_joint,nope", "--out",
                 str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "nope" in err and "Traceback" not in err


def test_a_config_given_with_the_urdf_wins_and_what_it_lacks_is_derived(tmp_path):
    urdf = example_robot_urdf(UR5_ERD)
    config = tmp_path / "ur5.yaml"
    config.write_text("excitation:\n  harmonics: 3\n  frequency_hz: 0.2\n"
                      "robot:\n  joints: [shoulder_pan_joint, shoulder_lift_joint, elbow_joint]\n")
    robot = user_robot(urdf, config)
    assert robot.config["excitation"] == {"harmonics": 3, "frequency_hz": 0.2}
    assert robot.derived == ("identification", "simulation")
    assert robot.joints == ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint")
    assert len(robot.config["simulation"]["truth"]["friction"]) == 3
    assert user_robot(urdf, config, joints=["elbow_joint"]).joints == ("elbow_joint",)  # --joints wins


def test_controller_urdf_friction_switch_is_checked():
    assert Gains.from_config({"urdf_friction": False}).urdf_friction is False
    with pytest.raises(ConfigError, match="urdf_friction"):
        Gains.from_config({"urdf_friction": "no"})
