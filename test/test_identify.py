"""``dynid identify`` / ``dynid validate`` end to end: real Panda data, noise-free synthetic data, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest
import yaml

from dynid_ros.cli import main
from dynid_ros.joint_states import JointStateSeries
from dynid_ros.model import load_model, nominal_parameters
from dynid_ros.regressor import torques

from panda_data import JOINTS, panda_series, write_panda_bag

REPO = Path(__file__).resolve().parents[1]
PANDA_URDF = REPO / "urdf" / "panda.urdf"
SPLIT_S = 0.7 * 20.9991  # identify on the first 70 % of the run, validate on the rest


@pytest.fixture(scope="module")
def panda_bag(tmp_path_factory) -> Path:
    return write_panda_bag(tmp_path_factory.mktemp("panda") / "run1")


@pytest.fixture(scope="module")
def panda_result(panda_bag, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("result") / "panda"
    code = main(["identify", "--urdf", str(PANDA_URDF), "--bag", str(panda_bag), "--end", f"{SPLIT_S}",
                 "--config", str(REPO / "config" / "panda.yaml"), "--out", str(out)])
    assert code == 0
    return out


def test_real_panda_held_out_error_feasible_and_plausible_masses(panda_result, panda_bag, tmp_path):
    report = json.loads((panda_result / "report.json").read_text())
    assert report["feasible"] is True
    assert report["solver_status"] == "optimal"
    assert report["method"] == "fbpe" and report["n_base"] > 40
    masses = list(report["link_masses"].values())
    assert len(masses) == 7 and 14.0 <= sum(masses) <= 22.0  # the arm weighs about 18 kg
    assert min(masses) > 0.05
    validation = tmp_path / "validation.json"
    assert main(["validate", "--result", str(panda_result), "--bag", str(panda_bag), "--start", f"{SPLIT_S}",
                 "--report", str(validation)]) == 0
    held_out = json.loads(validation.read_text())
    assert held_out["relative_error"] <= 0.0280, held_out  # <= 2.80 % against the raw torque
    assert len(held_out["relative_error_per_joint"]) == 7


def test_identified_urdf_passes_check_urdf_pinocchio_and_mujoco(panda_result):
    import mujoco
    import pinocchio as pin

    urdf = panda_result / "identified.urdf"
    prefix = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix"  # the cmeel-urdfdom wheel
    env = {**os.environ, "LD_LIBRARY_PATH": f"{prefix / 'lib'}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    run = subprocess.run([str(prefix / "bin" / "check_urdf"), str(urdf)], capture_output=True, text=True,
                         timeout=60, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    model = pin.buildModelFromUrdf(str(urdf))
    arm_mass = sum(model.inertias[model.getJointId(j)].mass for j in JOINTS)
    assert 14.0 <= arm_mass <= 22.0
    mj = mujoco.MjModel.from_xml_path(str(urdf))  # rejects inertias that break A + B >= C
    assert mj.njnt == 7


def test_parameters_yaml_has_every_parameter_and_base_expressions(panda_result):
    params = yaml.safe_load((panda_result / "parameters.yaml").read_text())
    assert set(params["links"]) == {f"panda_link{i}" for i in range(1, 8)}
    assert set(params["joints"]["panda_joint1"]) == {"fv", "fc", "fo", "Ia"}
    base = params["base_parameters"]
    assert len(base) == json.loads((panda_result / "report.json").read_text())["n_base"]
    assert all({"name", "expression", "value", "rel_std_percent"} <= set(b) for b in base)


def _sines(t: np.ndarray, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A smooth multi-sine motion from rest-ish amplitudes, analytic derivatives."""
    rng = np.random.default_rng(seed)
    amp = rng.uniform(0.2, 0.6, (3, n))
    freq = rng.uniform(0.15, 0.6, (3, n)) * 2 * np.pi
    phase = rng.uniform(0, 2 * np.pi, (3, n))
    arg = freq[None] * t[:, None, None] + phase[None]
    q = (amp * np.sin(arg)).sum(1)
    dq = (amp * freq * np.cos(arg)).sum(1)
    ddq = (-amp * freq ** 2 * np.sin(arg)).sum(1)
    return q, dq, ddq


def test_noise_free_synthetic_data_validates_within_0_2_percent(tmp_path):
    """Torques of a known model (perturbed inertials, friction, armature) on one motion; identify, then predict
    a different motion: the error is only what processing costs (<= 0.2 %)."""
    from dynid_ros.bag_io import write_joint_states

    model = load_model(urdf=PANDA_URDF)
    layout = model.layout_for()
    truth = nominal_parameters(model, layout)
    rng = np.random.default_rng(3)
    for k in range(7):  # scale each link's inertial parameters: stays physically consistent
        truth[layout.link_slice(k)] *= rng.uniform(0.8, 1.2)
    for j in range(7):
        truth[layout.joint_index(j, "fv")] = rng.uniform(0.05, 0.3)
        truth[layout.joint_index(j, "fc")] = rng.uniform(0.1, 0.5)
        truth[layout.joint_index(j, "fo")] = rng.uniform(-0.1, 0.1)
        truth[layout.joint_index(j, "Ia")] = rng.uniform(0.01, 0.1)
    t = np.arange(0.0, 40.0, 1e-3)
    mid = model.position_limits.mean(axis=1)
    bags = {}
    for name, seed in (("train", 1), ("test", 2)):
        q, dq, ddq = _sines(t, 7, seed)
        q = q + mid
        tau = torques(model, layout, truth, q, dq, ddq)
        series = JointStateSeries(list(model.joints), t + 100.0, q, dq, tau)
        bags[name] = write_joint_states(tmp_path / name, series)
    out = tmp_path / "result"
    assert main(["identify", "--urdf", str(PANDA_URDF), "--bag", str(bags["train"]), "--method", "fbpe",
                 "--out", str(out)]) == 0
    report = tmp_path / "val.json"
    assert main(["validate", "--result", str(out), "--bag", str(bags["test"]), "--report", str(report)]) == 0
    assert json.loads(report.read_text())["relative_error"] <= 0.002


# --- bad input: one line, exit code 2, no traceback, no partial output ---------------------------------------

def _run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dynid_ros.cli", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("case", ["missing_bag", "invalid_urdf", "unknown_joint", "too_little_excitation"])
def test_identify_bad_input_is_one_line_exit_2_and_writes_nothing(case, tmp_path, panda_bag):
    out = tmp_path / "out"
    urdf, bag, extra = str(PANDA_URDF), str(panda_bag), []
    expected = {"missing_bag": "no-such-bag", "invalid_urdf": "URDF", "unknown_joint": "panda_joint9",
                "too_little_excitation": "not identifiable"}[case]
    if case == "missing_bag":
        bag = str(tmp_path / "no-such-bag")
    elif case == "invalid_urdf":
        bad = tmp_path / "bad.urdf"
        bad.write_text("<robot name='x'><link name='a'/><joint name='j' type='revolute'><parent link='a'/>"
                       "<child link='nope'/></joint></robot>")
        urdf = str(bad)
    elif case == "unknown_joint":
        extra = ["--joints", "panda_joint1,panda_joint9"]
    else:
        extra = ["--end", "1.0"]  # one second: some joints never reverse, so Coulomb and offset are confounded
    run = _run_cli("identify", "--urdf", urdf, "--bag", bag, "--out", str(out), *extra)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    lines = [line for line in run.stderr.splitlines() if line.startswith("dynid identify: error:")]
    assert len(lines) == 1 and expected in lines[0], run.stderr
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]  # no temporary left behind


def test_info_json_counts_for_the_papers_robots():
    data = REPO / "test" / "data"
    wam = json.loads(_run_cli("info", "--dh", str(data / "wam7_dh.yaml"), "--friction", "viscous,coulomb,offset",
                              "--armature", "--json").stdout)
    assert (wam["n_base"], wam["n_parameters"]) == (69, 98)  # Sousa & Cortesão 2014 Table 2
    kr5 = json.loads(_run_cli("info", "--dh", str(data / "kr5_dh.yaml"), "--json").stdout)
    assert (kr5["n_base"], kr5["n_parameters"]) == (36, 60)  # Pennese et al. 2021 Table I
    assert len(kr5["base_parameters"]) == 36 and all("expression" in b for b in kr5["base_parameters"])


def test_panda_fixture_matches_the_data_readme():
    series = panda_series()
    assert len(series) == 20544 and series.names == JOINTS
