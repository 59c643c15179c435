"""``dynid batch`` on real Dask clusters: simulated bags of a 3-joint arm, one broken bag."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dynid_ros.cli.main import main
from dynid_ros.data.output_paths import BATCH, RESULT, output_kind
from dynid_ros.errors import ConfigError
from dynid_ros.reporting.result_directory import load_hyperparameter_scales

from support.paths import REPO
from support.sim_bags import arm_urdf, simulate_bag

N_BAGS = 6


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Six 3 s bags (seeds 0-5) of the arm, and a 'bag' that is not one."""
    root = tmp_path_factory.mktemp("fleet")
    urdf = arm_urdf(root)
    bags = [simulate_bag(root / f"robot{i}", urdf, seed=i, duration=3.0) for i in range(N_BAGS)]
    broken = root / "broken.mcap"
    broken.write_text("not a bag")
    return urdf, bags, broken


def test_batch_of_six_bags_on_a_local_cluster_of_two_workers(fleet, tmp_path, capsys):
    """One result per bag as ``dynid identify`` writes it, a summary in JSON and CSV; the broken bag is reported,
    the others are identified (relative error of a few %, masses and Coulomb friction near the truth), exit 1."""
    urdf, bags, broken = fleet
    out = tmp_path / "nightly"
    code = main(["batch", "--urdf", str(urdf), "--bags", *map(str, bags), str(broken), "--out", str(out),
                 "--workers", "2"])
    captured = capsys.readouterr()
    assert code == 1, captured.err
    assert "bags: 100%" in captured.err and "7/7" in captured.err  # the progress bar over bags
    summary = json.loads((out / "summary.json").read_text())
    assert output_kind(out) == BATCH and summary["workers"] == 2
    assert (summary["n_ok"], summary["n_failed"]) == (N_BAGS, 1)
    records = {Path(r["bag"]).name: r for r in summary["bags"]}
    bad = records["broken.mcap"]
    assert bad["status"] == "failed" and "broken.mcap" in bad["error"] and bad["relative_error"] is None
    for i in range(N_BAGS):
        record = records[f"robot{i}"]
        assert record["status"] == "ok" and record["error"] is None
        assert 0.0 < record["relative_error"] < 0.06
        assert output_kind(record["result"]) == RESULT and (Path(record["result"]) / "parameters.yaml").is_file()
        assert record["link_masses"]["l1"] == pytest.approx(2.0, rel=0.05)
        assert record["friction"]["j1"]["fc"] == pytest.approx(0.3, rel=0.3)
        assert record["time_s"] > 0 and record["stamp"] == pytest.approx(1.7e9)
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert [Path(r["bag"]).name for r in rows] == [*(f"robot{i}" for i in range(N_BAGS)), "broken.mcap"]
    assert float(rows[0]["mass.l1"]) == pytest.approx(records["robot0"]["link_masses"]["l1"])
    assert float(rows[0]["fc.j2"]) == pytest.approx(records["robot0"]["friction"]["j2"]["fc"])
    assert rows[-1]["status"] == "failed" and rows[-1]["mass.l1"] == ""


def test_batch_on_an_existing_cluster_by_address(fleet, tmp_path, capsys):
    """--address: the bags go to the running scheduler's worker; nothing else is started."""
    from dask.distributed import LocalCluster

    urdf, bags, _ = fleet
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster:
        code = main(["batch", "--urdf", str(urdf), "--bags", str(bags[0]), "--out", str(tmp_path / "out"),
                     "--address", cluster.scheduler_address, "--no-progress"])
        assert code == 0, capsys.readouterr().err
        assert len(cluster.scheduler.workers) == 1
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["address"] == cluster.scheduler_address and summary["n_ok"] == 1


def test_batch_refuses_an_output_it_did_not_write(fleet, tmp_path, capsys):
    urdf, bags, _ = fleet
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    assert main(["batch", "--urdf", str(urdf), "--bags", str(bags[0]), "--out", str(tmp_path / "mine")]) == 2
    assert "refusing to touch it" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]
    assert main(["batch", "--bags", str(bags[0]), "--out", str(tmp_path / "x")]) == 2
    assert "--urdf FILE or --config FILE" in capsys.readouterr().err


def test_the_robot_comes_from_the_config_when_no_urdf_is_given(fleet, tmp_path):
    """--config without --urdf: the config's robot.urdf, relative to the config file."""
    from dynid_ros.cli.batch import robot_urdf

    urdf, _, _ = fleet
    config = urdf.parent / "fleet.yaml"
    config.write_text(f"robot:\n  urdf: {urdf.name}\nidentification:\n  method: ols\n")
    assert robot_urdf(None, str(config)) == urdf.parent / urdf.name
    assert robot_urdf(str(tmp_path / "given.urdf"), str(config)) == tmp_path / "given.urdf"
    (tmp_path / "bare.yaml").write_text("identification: {}\n")
    with pytest.raises(ConfigError, match="no robot.urdf"):
        robot_urdf(None, str(tmp_path / "bare.yaml"))


WITHOUT_DASK = """
import sys


class Uninstalled:
    '''Dask as after `pip install .` without the fleet extra: no such module.'''

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("dask", "distributed"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Uninstalled())
from dynid_ros.cli.main import main

sys.exit(main(sys.argv[1:]))
"""


def test_batch_without_the_fleet_extra_says_what_to_install_in_one_line(fleet, tmp_path):
    """Without Dask (a plain ``pip install .``): exit 2, one line naming ``dynid_ros[fleet]``, no traceback, no
    output directory."""
    urdf, bags, _ = fleet
    out = tmp_path / "nightly"
    result = subprocess.run([sys.executable, "-c", WITHOUT_DASK, "batch", "--urdf", str(urdf), "--bags",
                             str(bags[0]), "--out", str(out), "--no-progress"],
                            capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'dynid_ros[fleet]'" in lines[0], result.stderr
    assert "Traceback" not in result.stderr and not out.exists()


def test_bags_identified_by_the_evidence_share_the_reference_bags_scales_joint_terms_at_least_stated(fleet, tmp_path,
                                                                                                    capsys):
    """``--hyperparameters evidence``: the first bag's evidence chooses the scales, every bag (the first one again
    when the floor widened its joint terms) is identified with them as runs share them (each joint's terms not
    tighter than stated, so that a friction change shows), and ``dynid drift`` takes the runs as one estimator's."""
    urdf, bags, broken = fleet
    out = tmp_path / "evidence"
    assert main(["batch", "--urdf", str(urdf), "--bags", str(broken), *map(str, bags[:2]), "--out", str(out),
                 "--workers", "1", "--hyperparameters", "evidence"]) == 1  # the broken bag is no reference
    err = capsys.readouterr().err
    assert "3/3" in err and "4/3" not in err  # the reference identified again is one bag on the progress bar
    summary = json.loads((out / "summary.json").read_text())
    shared = summary["hyperparameters"]
    assert shared["source"] == "reference bag" and Path(shared["reference"]).name == "robot0"
    scales = shared["scales"]
    assert all(s >= 1.0 for g, s in scales.items() if g.startswith("joint:")) and len(scales) == 3 + 3
    results = [r["result"] for r in summary["bags"] if r["status"] == "ok"]
    for result in results:  # the reference keeps its evidence's choice where that needed no floor
        assert load_hyperparameter_scales(Path(result)) == pytest.approx(scales)
        source = json.loads((Path(result) / "report.json").read_text())["hyperparameters"]["scales_source"]
        assert source in (("given", "evidence") if Path(result).name == "robot0" else ("given",))
    assert main(["drift", "--results", *results, "--out", str(tmp_path / "drift")]) == 0
