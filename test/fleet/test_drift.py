"""``dynid drift`` known answer in the embedded simulator: Coulomb friction of one joint grows over the runs and
a payload is mounted on the last link from run 3 on; both are flagged, nothing else."""

from __future__ import annotations

import json

import pytest

from dynid_ros.cli.main import main
from dynid_ros.data.output_paths import DRIFT, output_kind

from support.sim_bags import arm_urdf, simulate_bag

DAY = 86400.0
COULOMB_J2 = (0.2, 0.2, 0.3, 0.4)
PAYLOAD_FROM, PAYLOAD_KG = 2, 0.5
PINNED_CUTOFF = 6.0
"""[Hz]. With the cutoff derived from these 4 s single-period bags' bandwidth (12.7 Hz) the payload's mass change
of l3 is estimated nearer the truth (+0.43 kg vs +0.92 kg for 0.5 kg) but, with more sensor noise passed, within 3
standard deviations: not flagged (its first moment and inertia are). The known answer is about drift, not the
cutoff: the runs are identified at the former fixed 6 Hz."""


@pytest.fixture(scope="module")
def nightly(tmp_path_factory):
    """Four nightly runs (4 s bags, one day apart, identified by dynid identify), given out of time order."""
    root = tmp_path_factory.mktemp("drift")
    nominal, loaded = arm_urdf(root), arm_urdf(root, payload=PAYLOAD_KG)
    config = root / "arm.yaml"  # the former fixed cutoff: see PINNED_CUTOFF
    config.write_text(f"identification:\n  processing:\n    cutoff_hz: {PINNED_CUTOFF}\n")
    results = []
    for i, fc in enumerate(COULOMB_J2):
        bag = simulate_bag(root / f"night{i}", loaded if i >= PAYLOAD_FROM else nominal, seed=20 + i, duration=4.0,
                           friction=(0.3, fc, 0.15), start_stamp=1.75e9 + i * DAY)
        results.append(root / f"result{i}")
        assert main(["batch", "--urdf", str(nominal), "--config", str(config), "--bags", str(bag), "--out",
                     str(root / f"batch{i}"), "--no-progress", "--workers", "1"]) == 0 if i == 0 else \
            main(["identify", "--urdf", str(nominal), "--config", str(config), "--bag", str(bag), "--out",
                  str(results[-1]), "--hyperparameter-scales", str(root / "batch0")]) == 0
    results[0] = root / "batch0"  # a batch directory stands for its bags, with their stamps
    return nominal, results


def test_friction_growth_and_payload_are_flagged_and_nothing_else(nightly, tmp_path, capsys):
    _, results = nightly
    out = tmp_path / "drift"
    assert main(["drift", "--results", *map(str, reversed(results)), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    report = json.loads((out / "drift.json").read_text())
    assert output_kind(out) == DRIFT and report["k"] == 3.0
    assert [r["source"] for r in report["runs"]] == ["bag", "created", "created", "created"]
    flagged = {(q["owner"], q["parameter"]): q for q in report["quantities"] if q["flagged"]}
    assert ("j2", "fc") in flagged and ("l3", "m") in flagged
    assert all(owner in ("j2", "l3") for owner, _ in flagged), sorted(flagged)
    assert all(p in ("fv", "fc", "fo") for owner, p in flagged if owner == "j2"), sorted(flagged)
    coulomb, mass = flagged[("j2", "fc")], flagged[("l3", "m")]
    assert coulomb["first_flagged_run"] == 2 and mass["first_flagged_run"] == PAYLOAD_FROM
    assert 60 < coulomb["change_percent"] < 140  # truth: 0.2 -> 0.4 N m, +100 %
    # the payload shows as the last link's mass (some of its first moment is grouped with l2's, Sousa & Cortesão
    # 2014 section 4.1, and the prior splits it: the change is larger than the payload, l2's moves within 3 sigma)
    assert 0.5 * PAYLOAD_KG < mass["change"] < 2.0 * PAYLOAD_KG
    assert any(s.startswith("Coulomb friction of joint j2 up") for s in report["flags"])
    assert any(s.startswith("mass of link l3 up") for s in report["flags"])
    assert "Coulomb friction of joint j2 up" in printed
    assert sorted(p.name for p in out.glob("*.png")) == [*(f"joint_j{i}.png" for i in (1, 2, 3)),
                                                         *(f"link_l{i}.png" for i in (1, 2, 3))]


def test_drift_refuses_one_run_and_another_robot(nightly, tmp_path, capsys):
    import shutil

    import yaml

    _, results = nightly
    assert main(["drift", "--results", str(results[1]), "--out", str(tmp_path / "a")]) == 2
    assert "two runs or more" in capsys.readouterr().err
    other = tmp_path / "other"
    shutil.copytree(results[1], other)
    parameters = yaml.safe_load((other / "parameters.yaml").read_text())
    parameters["robot"]["joints"] = ["a1", "a2", "a3"]
    (other / "parameters.yaml").write_text(yaml.safe_dump(parameters))
    assert main(["drift", "--results", str(results[1]), str(other), "--out", str(tmp_path / "a")]) == 2
    assert "is not the same robot" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


def test_drift_refuses_runs_identified_with_different_priors(nightly, tmp_path, capsys):
    """Runs whose prior scales differ (each chosen by its own evidence) are not compared: one line naming the
    runs, the scale and the remedy, exit 2, nothing written."""
    import shutil

    _, results = nightly
    other = tmp_path / "other"
    shutil.copytree(results[2], other)
    report = json.loads((other / "report.json").read_text())
    report["hyperparameters"] = {**(report.get("hyperparameters") or {}), "scales_source": "evidence",
                                 "scales": {"mass": 7.0, "com": 1.0, "inertia": 1.0, "joint": 1.0}}
    (other / "report.json").write_text(json.dumps(report))
    assert main(["drift", "--results", str(results[1]), str(other), "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "was identified with another prior" in err and "mass x" in err and "--hyperparameter-scales" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "a").exists()
