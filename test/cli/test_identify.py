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

from dynid_ros.cli.main import main
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.dynamics.regressor import torques
from dynid_ros.robot.model import load_model, nominal_parameters
from dynid_ros.robot.urdf_document import read_urdf

from support.panda_data import JOINTS, panda_series, write_panda_bag
from support.paths import REPO


def mujoco_model_of_urdf(urdf: Path) -> object:
    """MuJoCo's own URDF parser on the file's dynamics (its meshes are ``package://`` URIs MuJoCo cannot resolve,
    as in any vendor URDF: the geometry is left out, the inertias are what MuJoCo checks)."""
    import mujoco

    return mujoco.MjModel.from_xml_string(read_urdf(urdf.read_text(), str(urdf)).dynamics_text())

PANDA_URDF = REPO / "urdf" / "panda.urdf"
SPLIT_S = 0.7 * 20.9991  # identify on the first 70 % of the run, validate on the rest


@pytest.fixture(scope="module")
def panda_bag(tmp_path_factory) -> Path:
    return write_panda_bag(tmp_path_factory.mktemp("panda") / "run1")


@pytest.fixture(scope="module")
def panda_result(panda_bag, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("result") / "panda"
    code = main(["identify", "--urdf", str(PANDA_URDF), "--bag", str(panda_bag), "--end", f"{SPLIT_S}",
                 "--joints", ",".join(JOINTS), "--out", str(out)])  # the default command: no config, no bounds
    assert code == 0
    return out


def test_real_panda_held_out_error_feasible_and_plausible_masses(panda_result, panda_bag, tmp_path):
    report = json.loads((panda_result / "report.json").read_text())
    assert report["feasible"] is True
    assert report["solver_status"] == "optimal"
    assert report["method"] == "fbpe" and report["n_base"] > 40
    masses = list(report["link_masses"].values())
    assert len(masses) == 7 and 14.0 <= sum(masses) <= 22.0  # the arm weighs about 18 kg
    urdf_mass = _urdf_masses(PANDA_URDF)
    realism = report["link_realism"]
    assert [r["link"] for r in realism] == [f"panda_link{i}" for i in range(1, 8)]
    for r in realism:  # each link alone (the hand is known and kept) within [0.5x, 2x] of its URDF mass
        assert 0.5 <= r["mass"] / urdf_mass[r["link"]] <= 2.0, r
        assert r["realistic_mass"] and r["com_shift_m"] < 0.2 and np.isfinite(r["inertia_change"])
    assert report["not_identified"] == []
    assert report["residual_inflation"] > 1.0  # real residuals are correlated
    validation = tmp_path / "validation.json"
    assert main(["validate", "--result", str(panda_result), "--bag", str(panda_bag), "--start", f"{SPLIT_S}",
                 "--report", str(validation)]) == 0
    held_out = json.loads(validation.read_text())
    assert held_out["relative_error"] <= 0.0270, held_out  # <= 2.70 % against the raw torque
    assert len(held_out["relative_error_per_joint"]) == 7


@pytest.mark.parametrize("case", ["bag_without_velocities", "velocity_source_differentiate"])
def test_real_panda_velocities_from_positions_match_the_measured_ones(case, panda_result, panda_bag, tmp_path,
                                                                      capsys):
    """Velocities differentiated from the positions: a bag without velocities (several drivers publish none) needs
    no option and says so in a note; ``velocity_source: differentiate`` gives the same. The error on the
    identification window and on the held-out rest is within 0.2 points of the measured velocities' (the derivative
    of the raw positions gave 209.6 % and a 7.06 kg arm: its noise set the filter's cutoff at 404 Hz)."""
    args = ["--urdf", str(PANDA_URDF), "--end", f"{SPLIT_S}", "--joints", ",".join(JOINTS)]
    if case == "bag_without_velocities":
        bag = write_panda_bag(tmp_path / "no_velocity", velocities=False)
    else:
        bag, config = panda_bag, tmp_path / "differentiate.yaml"
        config.write_text(yaml.safe_dump({"identification": {"processing": {"velocity_source": "differentiate"}}}))
        args += ["--config", str(config)]
    out = tmp_path / "result"
    capsys.readouterr()
    assert main(["identify", *args, "--bag", str(bag), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert ("note: not every joint has a recorded velocity" in printed) == (case == "bag_without_velocities")
    params = yaml.safe_load((out / "parameters.yaml").read_text())
    assert params["processing"]["velocity_source"] == "differentiate"
    own, measured = (json.loads((d / "report.json").read_text()) for d in (out, panda_result))
    assert abs(own["relative_error"] - measured["relative_error"]) <= 0.002, (own["relative_error"],
                                                                              measured["relative_error"])
    held_out = []
    for result, recording in ((out, bag), (panda_result, panda_bag)):
        report = tmp_path / f"{result.name}_held_out.json"
        assert main(["validate", "--result", str(result), "--bag", str(recording), "--start", f"{SPLIT_S}",
                     "--report", str(report)]) == 0
        held_out.append(json.loads(report.read_text())["relative_error"])
    assert abs(held_out[0] - held_out[1]) <= 0.002, held_out
    assert all(r["realistic_mass"] for r in own["link_realism"]), own["link_realism"]


def test_real_panda_with_scs_polishes_a_miss_within_its_tolerance(panda_result, panda_bag, tmp_path, capsys):
    """``--solver scs`` stops at its tolerance (1e-6): its answer may leave a rotor inertia of -1.5e-8 kg m^2 (1.7e-7
    of its scale) or a link matrix just under its margin, which used to be refused ("FBPE: the solver's answer
    violates its constraints", exit 2). Such an answer is polished onto the feasible set, recorded in report.json
    ``solver_polish`` and said in a note when more than the safety margin moved; the fit is Clarabel's."""
    out = tmp_path / "scs"
    capsys.readouterr()
    assert main(["identify", "--urdf", str(PANDA_URDF), "--bag", str(panda_bag), "--end", f"{SPLIT_S}", "--joints",
                 ",".join(JOINTS), "--solver", "scs", "--out", str(out)]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    report, clarabel = (json.loads((d / "report.json").read_text()) for d in (out, panda_result))
    assert report["solver"] == "scs" and report["feasible"] is True
    polished = report["solver_polish"]
    if polished is not None:
        assert polished["solver"] == "scs" and 0 < polished["violation"] <= polished["allowance"] <= 1e-5
        assert ("polished onto the feasible set" in printed) == (not polished["margin_only"])
    assert report["relative_error"] == pytest.approx(clarabel["relative_error"], abs=2e-4)


def test_identified_urdf_passes_check_urdf_pinocchio_and_mujoco(panda_result):
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
    mj = mujoco_model_of_urdf(urdf)  # rejects inertias that break A + B >= C
    assert mj.njnt == 7


def _urdf_masses(path: Path) -> dict[str, float]:
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    return {link.get("name"): float(link.find("inertial/mass").get("value"))
            for link in root.findall("link") if link.find("inertial/mass") is not None}


def test_parameters_yaml_has_every_parameter_and_base_expressions(panda_result):
    params = yaml.safe_load((panda_result / "parameters.yaml").read_text())
    assert set(params["links"]) == {f"panda_link{i}" for i in range(1, 8)}
    assert set(params["joints"]["panda_joint1"]) == {"fv", "fc", "fo", "Ia"}
    base = params["base_parameters"]
    assert len(base) == json.loads((panda_result / "report.json").read_text())["n_base"]
    assert all({"name", "expression", "value", "rel_std_percent", "identified"} <= set(b) for b in base)
    # the precision of the estimate returned (the MAP posterior, correlated residuals): finite, and no link mass
    # claimed more precise than 1 % from 15 s of data
    masses = [params["links"][f"panda_link{i}"]["mass_rel_std_percent"] for i in range(1, 8)]
    assert all(1.0 < m < 100.0 for m in masses)
    assert len(params["parameter_vector"]["std"]) == len(params["parameter_vector"]["values"])


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
    from dynid_ros.data.bag_io import write_joint_states

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


@pytest.mark.parametrize("case", ["missing_bag", "invalid_urdf", "unknown_joint", "too_little_excitation",
                                  "current_without_gains", "ur_driver_without_gains"])
def test_identify_bad_input_is_one_line_exit_2_and_writes_nothing(case, tmp_path, panda_bag):
    out = tmp_path / "out"
    urdf, bag, extra = str(PANDA_URDF), str(panda_bag), []
    expected = {"missing_bag": "no-such-bag", "invalid_urdf": "URDF", "unknown_joint": "panda_joint9",
                "too_little_excitation": "not identifiable", "current_without_gains": "dynid gains",
                "ur_driver_without_gains": "dynid gains"}[case]
    if case == "missing_bag":
        bag = str(tmp_path / "no-such-bag")
    elif case == "invalid_urdf":
        bad = tmp_path / "bad.urdf"
        bad.write_text("<robot name='x'><link name='a'/><joint name='j' type='revolute'><parent link='a'/>"
                       "<child link='nope'/></joint></robot>")
        urdf = str(bad)
    elif case == "unknown_joint":
        extra = ["--joints", "panda_joint1,panda_joint9"]
    elif case == "current_without_gains":  # a driver publishing motor currents, their gains not given
        config = tmp_path / "arm.yaml"
        config.write_text("identification:\n  effort_unit: A\n")
        extra = ["--config", str(config)]
    elif case == "ur_driver_without_gains":  # naming the UR driver says its effort is motor current [A]
        config = tmp_path / "arm.yaml"
        config.write_text("robot:\n  driver: ur_robot_driver\n")
        extra = ["--config", str(config)]
    else:  # one second: some joints never reverse, so Coulomb and offset are confounded; --strict makes it fatal
        extra = ["--end", "1.0", "--strict"]
    run = _run_cli("identify", "--urdf", urdf, "--bag", bag, "--out", str(out), *extra)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    lines = [line for line in run.stderr.splitlines() if line.startswith("dynid identify: error:")]
    assert len(lines) == 1 and expected in lines[0], run.stderr
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]  # no temporary left behind


def test_info_json_counts_for_the_papers_robots():
    data = REPO / "test" / "files"
    wam = json.loads(_run_cli("info", "--dh", str(data / "wam7_dh.yaml"), "--friction", "viscous,coulomb,offset",
                              "--armature", "--json").stdout)
    assert (wam["n_base"], wam["n_parameters"]) == (69, 98)  # Sousa & Cortesão 2014 Table 2
    kr5 = json.loads(_run_cli("info", "--dh", str(data / "kr5_dh.yaml"), "--json").stdout)
    assert (kr5["n_base"], kr5["n_parameters"]) == (36, 60)  # Pennese et al. 2021 Table I
    assert len(kr5["base_parameters"]) == 36 and all("expression" in b for b in kr5["base_parameters"])


def test_panda_fixture_matches_the_data_readme():
    series = panda_series()
    assert len(series) == 20544 and series.names == JOINTS


# --- every method, through identify() and the CLI; failures of the estimators ------------------------------------

@pytest.mark.parametrize("method", ["ols", "wls", "fbpe", "bpfc"])
def test_every_method_through_identify_and_the_cli(method, panda_bag, tmp_path):
    from dynid_ros.data.bag_io import read_joint_states
    from dynid_ros.identification.identify import identify
    from dynid_ros.identification.options import IdentificationOptions

    series = read_joint_states(panda_bag)
    result = identify(series, IdentificationOptions(joints=JOINTS, method=method, end=6.0), urdf=PANDA_URDF)
    assert result.relative_error < 0.05
    assert result.feasible or method in ("ols", "wls")  # the unconstrained estimators need not be feasible
    assert np.all(np.isfinite(result.beta)) and result.beta_rel_std.shape == result.beta.shape
    out = tmp_path / method
    assert main(["identify", "--urdf", str(PANDA_URDF), "--bag", str(panda_bag), "--end", "6", "--method", method,
                 "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["method"] == method and report["feasible"] == result.feasible
    assert report["relative_error"] == pytest.approx(result.relative_error, rel=1e-6)


def test_bpfc_with_infeasible_bounds_is_one_line_exit_2(panda_bag, tmp_path):
    out = tmp_path / "out"
    run = _run_cli("identify", "--urdf", str(PANDA_URDF), "--bag", str(panda_bag), "--end", "6", "--method", "bpfc",
                   "--total-mass", "0,0.000001", "--out", str(out))
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.count("\n") == 1 and "no parameters satisfy" in run.stderr, run.stderr
    assert not out.exists()


def test_bpfc_with_a_1000_kg_bound_writes_only_what_passes_its_check(panda_bag, tmp_path):
    """Bounds the null space allows: the 1 000 kg arm is a feasible answer to what was asked; it is written only
    because its own URDF passes the consistency check, and every unrealistic link is named in a warning."""

    out = tmp_path / "out"
    run = _run_cli("identify", "--urdf", str(PANDA_URDF), "--bag", str(panda_bag), "--end", "6", "--method", "bpfc",
                   "--total-mass", "900,1000", "--out", str(out))
    report = json.loads((out / "report.json").read_text())
    assert run.returncode == 0 and report["feasible"] is True
    assert 900 <= report["total_mass"] <= 1000.01
    unrealistic = [r["link"] for r in report["link_realism"] if not r["realistic_mass"]]
    assert unrealistic and all(f"link {link}: identified mass" in run.stdout for link in unrealistic)
    mujoco_model_of_urdf(out / "identified.urdf")


def test_a_urdf_failing_the_check_is_an_error(panda_bag, tmp_path):
    from dynid_ros.data.bag_io import read_joint_states
    from dynid_ros.errors import EstimationError
    from dynid_ros.identification.identify import identify
    from dynid_ros.identification.options import IdentificationOptions
    from dynid_ros.reporting.result_directory import check_written_urdf

    result = identify(read_joint_states(panda_bag), IdentificationOptions(joints=JOINTS, end=6.0), urdf=PANDA_URDF)
    text = PANDA_URDF.read_text()
    bad = tmp_path / "bad.urdf"  # principal moments (1, 1, 3) about the CoM of link 3: breaks A + B >= C
    start = text.index('<link name="panda_link3">')
    inertia = text.index("<inertia ", start)
    end = text.index("/>", inertia)
    bad.write_text(text[:inertia] + '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.03" '
                   + text[end:])
    check_written_urdf(result, PANDA_URDF)  # the source URDF passes
    with pytest.raises(EstimationError, match="panda_link3"):
        check_written_urdf(result, bad)


def _unexcited_joint2_ur5() -> tuple[Path, JointStateSeries, np.ndarray]:
    """A UR5 whose shoulder-lift joint turns at constant speed: its rotor inertia, viscous friction and offset
    cannot be told apart from the rest (no acceleration, no reversal)."""
    from support.robots import UR5_ERD, example_robot_urdf

    urdf = example_robot_urdf(UR5_ERD)
    model = load_model(urdf=urdf)
    layout = model.layout_for()
    truth = nominal_parameters(model, layout)
    rng = np.random.default_rng(5)
    for j in range(6):
        truth[layout.joint_index(j, "fv")] = rng.uniform(0.5, 2.0)
        truth[layout.joint_index(j, "fc")] = rng.uniform(1.0, 4.0)
        truth[layout.joint_index(j, "Ia")] = rng.uniform(0.1, 0.5)
    t = np.arange(0.0, 10.0, 2e-3)
    q, dq, ddq = _sines(t, 6, 1)
    q[:, 1], dq[:, 1], ddq[:, 1] = -1.5 + 0.1 * t, 0.1, 0.0
    tau = torques(model, layout, truth, q, dq, ddq) + rng.normal(0.0, 0.05, q.shape)
    return urdf, JointStateSeries(list(model.joints), t, q, dq, tau), truth


def test_default_keeps_unexcited_parameters_at_the_prior_and_strict_fails():
    from dynid_ros.errors import IdentifiabilityError
    from dynid_ros.identification.identify import identify
    from dynid_ros.identification.options import IdentificationOptions

    urdf, series, _ = _unexcited_joint2_ur5()
    result = identify(series, IdentificationOptions(), urdf=urdf)
    names = {m["description"] for m in result.not_identified}
    constant = ("viscous friction", "Coulomb friction", "torque offset")  # three constant columns on joint 2's rows:
    named = [d for d in names if d.startswith(constant) and "of joint 2 (shoulder_lift_joint)" in d]
    assert len(named) == 2, names  # one combination identified; which two are named is the basis's choice
    assert any("of link 2 (upper_arm_link)" in d for d in names), names  # Iyy2 grouped with Ia2
    assert len(result.not_identified) <= 4
    assert result.feasible and result.relative_error < 0.03
    kept = [w for w in result.warnings if "not identified by the data, kept at the prior" in w]
    assert len(kept) == 1 and "joint 2" in kept[0]
    for m in result.not_identified:  # held at the prior's value: nominal URDF, 0 for friction, offset, armature
        index = int(m["name"][4:]) - 1
        assert result.beta[index] == pytest.approx(m["value"], abs=1e-6)
        assert np.isinf(result.beta_rel_std[index]) or result.beta_rel_std[index] > 0
    with pytest.raises(IdentifiabilityError, match="too little excitation: .*of joint 2 \\(shoulder_lift_joint\\)"):
        identify(series, IdentificationOptions(strict=True), urdf=urdf)
