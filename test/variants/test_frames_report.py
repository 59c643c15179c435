"""A frames robot's result directory holds the files every identification writes (parameters.yaml in the common
format, report.json, report.html) beside frames_result.yaml; what it cannot have (a URDF, a nominal model) is stated;
a readable report that fails is left out and named, never costing the result; the result checks itself. Robots
generated as frames configs (a revolute chain, a chain with a slide and a two-motor frame), recorded as a rosbag2 and
as a CSV; the real dVRK PSM run when the shared data are there."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from dynid_ros.cli.main import main
from dynid_ros.data.bag_io import write_joint_states
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.dynamics.regressor import regressor_3d
from dynid_ros.robot.frames import load_frames_robot
from dynid_ros.robot.parameters import ParameterLayout
from dynid_ros.variants import frames_report
from dynid_ros.variants.frames_identification import FRAMES_FILE

from support.dvrk_data import dvrk_file
from support.paths import REPO

COMMON_PARAMETERS = {"dynid_ros_version", "created", "convention", "robot", "options", "processing", "links", "joints",
                     "base_parameters", "parameter_vector", "not_identified"}
"""The keys of every identification's parameters.yaml (dynid_ros.reporting.result_directory.parameters_dict)."""
COMMON_REPORT = {"relative_error", "relative_error_per_joint", "feasible", "n_base", "n_parameters", "method",
                 "solver", "solver_status", "n_samples", "joints", "link_masses", "total_mass", "mass_definitions",
                 "warnings", "notes", "report_html", "report_markdown", "omitted_outputs", "sanity_check",
                 "joint_diagnostics", "dynid_ros_version"}
"""report.json keys every identification has (dynid_ros.reporting.result_directory.report_dict and write_result)."""

CHAINS = {
    "revolute-chain": [
        {"name": "f1", "parent": "base", "a": 0.0, "alpha": "pi/2", "d": 0.3, "theta": 0.0, "motion": {"m1": 1.0}},
        {"name": "f2", "parent": "f1", "a": 0.4, "alpha": 0.0, "d": 0.0, "theta": 0.0, "motion": {"m2": 1.0}},
        {"name": "f3", "parent": "f2", "a": 0.3, "alpha": 0.0, "d": 0.0, "theta": 0.0, "motion": {"m3": 1.0}}],
    "slide-and-coupled-frame": [
        {"name": "f1", "parent": "base", "a": 0.1, "alpha": "pi/2", "d": 0.2, "theta": 0.0, "motion": {"m1": 1.0}},
        {"name": "f2", "parent": "f1", "type": "prismatic", "a": 0.0, "alpha": "-pi/2", "d": 0.3, "theta": 0.0,
         "motion": {"m2": 1.0}},
        {"name": "f3", "parent": "f2", "a": 0.25, "alpha": 0.3, "d": 0.0, "theta": 0.0,
         "motion": {"m3": 1.0, "m2": 0.5}}],
}


def _config(frames: list[dict]) -> dict:
    return {"robot": {"convention": "standard", "joints": ["m1", "m2", "m3"],
                      "frames": [{**frame, "friction": True} for frame in frames],
                      "csv_rate_hz": 200.0}}


def _body(rng: np.random.Generator) -> np.ndarray:
    """A physically consistent body [m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] about its frame."""
    m, c = rng.uniform(1.0, 3.0), rng.uniform(-0.1, 0.1, 3)
    i = np.diag(rng.uniform(0.01, 0.03, 3)) + m * (c @ c * np.eye(3) - np.outer(c, c))
    return np.array([m, *(m * c), i[0, 0], i[0, 1], i[1, 1], i[0, 2], i[1, 2], i[2, 2]])


def _recording(config: dict, seed: int) -> JointStateSeries:
    """20 s at 200 Hz of a multi-sine motion; motor torques of random consistent bodies, viscous friction and
    noise."""
    robot = load_frames_robot(config)
    layout = ParameterLayout(robot.motors, robot.model.links, (), False)
    rng = np.random.default_rng(seed)
    delta = np.concatenate([_body(rng) for _ in layout.links])
    t = np.arange(4000) / 200.0
    w = 2 * np.pi / 10.0
    phases = rng.uniform(0, 2 * np.pi, (3, 3))
    q = sum(0.5 / h * np.sin(h * w * t[:, None] + phases[h - 1]) for h in (1, 2, 3))
    dq = sum(0.5 * w * np.cos(h * w * t[:, None] + phases[h - 1]) for h in (1, 2, 3))
    ddq = sum(-0.5 * h * w * w * np.sin(h * w * t[:, None] + phases[h - 1]) for h in (1, 2, 3))
    tau = regressor_3d(robot.model, layout, q, dq, ddq) @ delta + 0.2 * dq
    tau += rng.normal(0.0, 0.01 * np.abs(tau).max(), tau.shape)
    return JointStateSeries(list(robot.motors), t, q, dq, tau)


@pytest.fixture(scope="module", params=sorted(CHAINS))
def frames_case(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(request.param)
    config = root / "robot.yaml"
    config.write_text(yaml.safe_dump(_config(CHAINS[request.param])))
    series = _recording(_config(CHAINS[request.param]), seed=len(request.param))
    bag = write_joint_states(root / "bag", series)
    csv = root / "run.csv"
    np.savetxt(csv, np.hstack([series.position, series.velocity, series.effort]), delimiter=",")
    return config, bag, csv


@pytest.mark.parametrize("recording", ["bag", "csv"])
def test_a_frames_robot_writes_the_common_result_files(frames_case, recording, tmp_path, capsys):
    config, bag, csv = frames_case
    out = tmp_path / "result"
    assert main(["identify", "--config", str(config), "--bag", str(bag if recording == "bag" else csv), "--out",
                 str(out)]) == 0, capsys.readouterr().err
    assert {p.name for p in out.iterdir()} >= {FRAMES_FILE, "parameters.yaml", "report.json", "report.html",
                                               "report.md"}
    assert not (out / "identified.urdf").exists() and not (out / "identified.xml").exists()
    parameters = yaml.safe_load((out / "parameters.yaml").read_text())
    assert COMMON_PARAMETERS <= set(parameters)
    vector = parameters["parameter_vector"]
    assert len(vector["names"]) == len(vector["values"]) and parameters["robot"]["joints"] == ["m1", "m2", "m3"]
    stored = yaml.safe_load((out / FRAMES_FILE).read_text())
    for link, params in stored["links"].items():
        assert parameters["links"][link]["parameters"]["m"] == params[0] > 0
    assert {f"{frame}.{term}": v for frame, terms in parameters["frame_terms"].items() for term, v in terms.items()} \
        == stored["terms"]
    report = json.loads((out / "report.json").read_text())
    assert COMMON_REPORT <= set(report)
    assert report["urdf"] is None and "has no URDF" in report["no_urdf"]
    assert report["sanity_check"]["passed"] and "no nominal" in report["sanity_check"]["explanations"][0]
    assert report["omitted_outputs"] == [] and report["report_html"] == str((out / "report.html").resolve())
    assert report["relative_error"] == stored["relative_error"] < 0.05
    assert report["link_masses"] == {link: params[0] for link, params in stored["links"].items()}
    assert "frames robot" in (out / "report.html").read_text()
    # dynid validate still reads the frames result
    assert main(["validate", "--result", str(out), "--bag", str(bag), "--report", str(tmp_path / "v.json")]) == 0
    assert json.loads((tmp_path / "v.json").read_text())["relative_error"] == pytest.approx(
        report["relative_error"], rel=1e-6)


def test_a_readable_report_that_fails_costs_nothing_else(frames_case, tmp_path, capsys, monkeypatch):
    """The report's figures fail (say matplotlib breaks): parameters.yaml, report.json and frames_result.yaml are
    written, report.html is not (not half), the console says so in one line, report.json lists it."""
    config, bag, _ = frames_case

    def broken(*args, **kwargs):
        (tmp_path / "marker").write_text("")
        raise RuntimeError("Failed to allocate bitmap\nsecond line")

    monkeypatch.setattr(frames_report.Document, "html", broken)
    out = tmp_path / "result"
    assert main(["identify", "--config", str(config), "--bag", str(bag), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    lines = [line for line in printed.splitlines() if "report.html not written" in line]
    assert lines == ["warning: report.html not written: RuntimeError: Failed to allocate bitmap"], printed
    report = json.loads((out / "report.json").read_text())
    assert report["omitted_outputs"] == [{"output": "report.html",
                                          "reason": "RuntimeError: Failed to allocate bitmap"}]
    assert report["report_html"] is None and report["sanity_check"]["passed"]
    names = {p.name for p in out.iterdir()}
    assert {FRAMES_FILE, "parameters.yaml", "report.json"} <= names
    assert not names & {"report.html", "report.md"} and not any(n.endswith(".png") for n in names)


def test_a_frames_result_that_fails_its_check_is_not_written(frames_case, tmp_path, capsys, monkeypatch):
    """Files that would not hold the fit (here: a reader that reads other parameters): exit 2, one line, nothing
    written."""
    config, bag, _ = frames_case
    real = frames_report.load_frames_result

    def shifted(directory):
        fit, robot, processing = real(directory)
        fit.delta = fit.delta * 1.5
        return fit, robot, processing

    monkeypatch.setattr(frames_report, "load_frames_result", shifted)
    out = tmp_path / "result"
    assert main(["identify", "--config", str(config), "--bag", str(bag), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "do not hold the fitted parameters" in err[0], err
    assert not out.exists()


def test_the_dvrk_psm_gets_the_common_result_files(tmp_path):
    """The real dVRK PSM run (Wang et al. 2019), identified from its CSV: the common files, the spring in the
    per-frame terms."""
    out = tmp_path / "psm"
    assert main(["identify", "--config", str(REPO / "config" / "dvrk_psm.yaml"), "--bag",
                 str(dvrk_file("psm", "one_results.csv")), "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert COMMON_REPORT <= set(report) and report["sanity_check"]["passed"] and report["n_base"] == 49
    parameters = yaml.safe_load((out / "parameters.yaml").read_text())
    assert "K" in parameters["frame_terms"]["tool_roll"] and (out / "report.html").is_file()
