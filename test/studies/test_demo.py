"""``dynid demo``: the whole job on the embedded robot (acceptance)."""

from __future__ import annotations

import json

import pytest

from dynid_ros.cli.main import main


@pytest.mark.parametrize("robot", ["panda", "ur5e"])
def test_demo_identifies_within_noise_floor_feasible_and_closer_to_truth(robot, tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--robot", robot, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ratio_to_noise_floor"] <= 1.05, summary["relative_error_validation"]
    assert summary["feasible"] is True and summary["solver_status"] == "optimal"
    assert summary["closer_to_truth_than_nominal"] is True, summary["parameter_errors"]
    errors = summary["relative_error_validation"]
    assert errors["identified"] < 0.5 * errors["nominal"]
    report = (out / "report.md").read_text()
    for png in ("validation_torques.png", "parameters.png"):
        assert (out / png).stat().st_size > 10_000 and f"]({png})" in report
    for name in ("identified.urdf", "parameters.yaml", "report.json"):
        assert (out / "result" / name).is_file()
    assert str(out / "report.md") in capsys.readouterr().out  # tells where the files are
    assert summary["files"]["trajectories"] == {} and not (out / "trajectories").exists()  # the shipped ones ran
