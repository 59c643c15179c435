"""Robots described by frames in their config (closed chains, per-frame terms; Wang et al. 2019): the regressor
against a DH chain, a parallelogram against its closed-form dynamics, per-frame terms, the CSV reader, bad configs,
and the real dVRK PSM and MTM runs (identify on "one", validate on "two")."""

from __future__ import annotations

import contextlib
import io
import json
import re

import numpy as np
import pytest
import yaml

from dynid_ros.cli.main import main
from dynid_ros.data.csv_joint_states import read_csv_joint_states
from dynid_ros.dynamics.regressor import regressor_3d
from dynid_ros.errors import ConfigError
from dynid_ros.robot.frames import load_frames_robot
from dynid_ros.robot.model import load_model
from dynid_ros.robot.parameters import ParameterLayout
from dynid_ros.variants.frames_identification import identify_frames, validate_frames

from support.dvrk_data import dvrk_file
from support.paths import REPO
from support.random_states import random_states
from support.robots import DATA

CONFIG_DIR = REPO / "config"
TABLE_V = {"psm": [9.1, 17.9, 18.9, 13.4, 23.9, 21.2, 26.5], "mtm": [7.3, 15.1, 16.2, 22.3, 27.0, 23.3, 34.0]}
"""Wang et al. 2019 Table V: relative error [%] per motor on the test run."""
PAPER_WINDOW = {"psm": 1111, "mtm": 2000}
"""Test samples the paper's notebooks evaluate (int(200 / base frequency))."""


def chain_config(table: dict) -> dict:
    """A DH table as a frames robot: one frame per joint, each moved by its own motor."""
    names = [f"m{k + 1}" for k in range(len(table["joints"]))]
    frames = [{"name": f"f{k + 1}", "parent": "base" if k == 0 else f"f{k}", "a": row["a"], "alpha": row["alpha"],
               "d": row["d"], "theta": row["theta"], "motion": {names[k]: 1.0}}
              for k, row in enumerate(table["joints"])]
    return {"robot": {"convention": table["convention"], "joints": names, "frames": frames}}


def test_chain_of_frames_is_the_dh_model():
    """Frames each moved by one motor are the DH chain: the same regressor as ``--dh`` (Panda, modified DH)."""
    table = yaml.safe_load((DATA / "panda_mdh.yaml").read_text())
    robot = load_frames_robot(chain_config(table))
    dh = load_model(dh=DATA / "panda_mdh.yaml")
    layout = ParameterLayout(robot.motors, robot.model.links, (), False)
    q, dq, ddq = random_states(7)
    np.testing.assert_allclose(regressor_3d(robot.model, layout, q, dq, ddq),
                               regressor_3d(dh, dh.layout_for((), False), q, dq, ddq), atol=1e-10)


def test_parallelogram_moves_as_one_rigid_body():
    """A planar parallelogram (Wang et al. 2019 Fig. 3): crank q1, coupler at -q1 on it, so the coupler keeps its
    orientation; a point mass on the coupler has the torque of a mass on a crank of the same length."""
    length, mass = 0.4, 1.3
    config = {"robot": {"joints": ["q1"], "gravity": [0, -9.81, 0], "frames": [
        {"name": "crank", "motion": {"q1": 1.0}},
        {"name": "coupler", "parent": "crank", "a": length, "motion": {"q1": -1.0}}]}}
    robot = load_frames_robot(config)
    layout = ParameterLayout(robot.motors, robot.model.links, (), False)
    delta = np.zeros(20)
    delta[10] = mass  # a point mass at the coupler's origin
    q, dq, ddq = random_states(1, samples=5)
    tau = regressor_3d(robot.model, layout, q, dq, ddq) @ delta
    expected = mass * length ** 2 * ddq[:, 0] + mass * 9.81 * length * np.cos(q[:, 0])
    np.testing.assert_allclose(tau[:, 0], expected, atol=1e-10)


def test_gravity_spring_is_the_mtm_closed_form():
    """The MTM joint-5 spring (Wang et al. 2019 eq. 18-20): torque per unit K is -r_f (l - l_r)."""
    cfg = yaml.safe_load((CONFIG_DIR / "dvrk_mtm.yaml").read_text())
    spring = next(f.spring for f in load_frames_robot(cfg).frames if f.spring is not None)
    r_s, h_s, l_r, q_o = 0.0075, 0.1035, 0.0613, np.radians(23.0)
    q5 = np.array([-0.5, 0.0, 1.0])
    length = np.sqrt(r_s ** 2 + h_s ** 2 - 2 * r_s * h_s * np.cos(np.pi + q_o - q5))
    lever = r_s * h_s * np.sin(np.pi + q_o - q5) / length
    np.testing.assert_allclose(spring.coordinate(q5), -lever * (length - l_r))
    assert spring.bounds == (250.0, 300.0)


@pytest.mark.parametrize(("frames", "message"), [
    ([{"name": "a", "parent": "nowhere", "motion": {"q1": 1}}], "parent nowhere is not an earlier frame"),
    ([{"name": "a", "motion": {"q9": 1}}], "motion names 'q9', not a motor coordinate"),
    ([{"name": "a", "motion": {"q1": 1}, "inertia": False}, {"name": "b", "parent": "a", "motion": {"q1": 1}}],
     "frame a has no inertia but frames with inertia hang from it"),
    ([{"name": "a", "type": "fixed", "motion": {"q1": 1}}], "a fixed frame needs no motion"),
    ([{"name": "a", "motion": {"q1": 1}, "spring": {"kind": "torsional", "bounds": [2, 1]}}], "low <= high"),
    ([{"name": "a", "motion": {"q1": 1}, "mass": 2}], "unknown key(s) ['mass']"),
])
def test_bad_frames_config(frames, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_frames_robot({"robot": {"joints": ["q1"], "frames": frames}}, "arm.yaml")


@pytest.fixture(scope="module")
def psm_result(tmp_path_factory):
    """``dynid identify --config config/dvrk_psm.yaml --bag one_results.csv`` (no URDF) and what it printed."""
    out = tmp_path_factory.mktemp("dvrk") / "psm"
    one = dvrk_file("psm", "one_results.csv")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["identify", "--config", str(CONFIG_DIR / "dvrk_psm.yaml"), "--bag", str(one), "--out",
                     str(out)]) == 0
    return out, printed.getvalue()


def test_dvrk_psm_identify_on_one_validate_on_two(psm_result, tmp_path):
    """49 base parameters as the paper, every frame feasible, the spring inside its bounds; ``dynid validate`` on
    run two: per-motor errors near Table V (against the filtered torque, as the paper)."""
    out, printed = psm_result
    assert "feasible True, 49 base parameters" in printed
    stored = yaml.safe_load((out / "frames_result.yaml").read_text())
    assert 0.0 <= stored["terms"]["tool_roll.K"] <= 0.1
    report = tmp_path / "psm_two.json"
    assert main(["validate", "--result", str(out), "--bag", str(dvrk_file("psm", "two_results.csv")), "--report",
                 str(report)]) == 0
    errors = np.array(json.loads(report.read_text())["relative_error_filtered_per_joint"]) * 100
    assert np.all(errors <= 1.2 * np.array(TABLE_V["psm"])), errors


@pytest.mark.parametrize("grams", [105, 205])
def test_dvrk_psm_payload_on_the_parallelogram(psm_result, grams, tmp_path, capsys):
    """The 105 g and 205 g runs (mass strapped to the pitch parallelogram, position known to 1 cm): identified from
    the unloaded result to 20 g (the repeated unloaded run alone shows about 20 g), by both solvers."""
    out = tmp_path / "payload"
    assert main(["identify", "--payload-link", "link4", "--reference", str(psm_result[0]), "--bag",
                 str(dvrk_file("psm", f"one_{grams}_grams_parallel_results.csv")), "--out", str(out)]) == 0, \
        capsys.readouterr().err
    found = yaml.safe_load((out / "payload.yaml").read_text())
    assert found["mass_share"] > 0.01 and not found["warnings"]
    for fit in (found["payload"], found["manifold"]):
        assert abs(fit["mass"] - grams / 1000) < 0.02, fit["mass"]


def test_dvrk_payload_on_a_link_that_cannot_tell_its_mass(psm_result, tmp_path, capsys):
    """link6 moves like link2 along gravity: its columns cannot tell a mass; the output says so."""
    out = tmp_path / "payload6"
    assert main(["identify", "--payload-link", "link6", "--reference", str(psm_result[0]), "--bag",
                 str(dvrk_file("psm", "one_105_grams_parallel_results.csv")), "--out", str(out)]) == 0
    assert "payload's mass on link6 is not identified" in capsys.readouterr().out


def test_dvrk_mtm_identify_on_one_validate_on_two():
    """MTM: 73 base parameters as the paper, spring constant inside [250, 300], cable torque subtracted, errors on
    the paper's window of the test run at or near Table V."""
    cfg = yaml.safe_load((CONFIG_DIR / "dvrk_mtm.yaml").read_text())
    robot = load_frames_robot(cfg)
    processing = cfg["identification"]["processing"]
    one = read_csv_joint_states(dvrk_file("mtm", "one_results.csv"), robot.motors, 200.0)
    two = read_csv_joint_states(dvrk_file("mtm", "two_results.csv"), robot.motors, 200.0)
    assert one.info["stale_rows_dropped"] == 795
    fit = identify_frames(robot, one, processing)
    assert fit.feasible and fit.base_count == 73 and 250.0 <= fit.terms["link5.K"] <= 300.0
    assert fit.n_samples > 4500  # the steps the stale rows leave are not gaps (gap_s in the config)
    _, errors = validate_frames(fit, two, processing, first=PAPER_WINDOW["mtm"], filtered=True)
    assert np.all(np.array(errors) * 100 <= 1.2 * np.array(TABLE_V["mtm"])), errors
