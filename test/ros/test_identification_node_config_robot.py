"""identification_node (the real executable, its own process) on robots its config describes beyond a URDF: a
``coupling:`` (URDF arm recorded in motor coordinates) and ``robot: frames:`` (the dVRK PSM, no URDF). It gives what
``dynid identify --config`` gives on the same input (the same pipeline entry)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from dynid_ros.cli.main import main
from dynid_ros.data.bag_io import write_joint_states
from dynid_ros.reporting.result_directory import PARAMETERS_FILE, URDF_FILE
from dynid_ros.sim.coupled_drive import simulate_coupled
from dynid_ros.variants.frames_identification import FRAMES_FILE

from support.coupled_arm import ARM, COUPLING, FRICTION, NOMINAL_ARM, PROCESSING, SECTION, TRUTH, reference
from support.dvrk_data import dvrk_file
from support.paths import REPO
from support.result_files import parameter_numbers
from support.ros_helpers import run_node

PSM = REPO / "config" / "dvrk_psm.yaml"




def assert_same(a: object, b: object, path: str = "", rtol: float = 1e-5) -> None:
    """Equal structure and text; numbers within ``rtol`` relative (absolute 1e-6)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a) == sorted(b), path
        for key in a:
            assert_same(a[key], b[key], f"{path}.{key}", rtol)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for k, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{k}]", rtol)
    elif isinstance(a, float) or isinstance(b, float):
        assert abs(a - b) <= 1e-6 + rtol * abs(b), f"{path}: {a} != {b}"
    else:
        assert a == b, path


def test_node_identifies_a_frames_robot_as_the_cli(spinner, tmp_path, capsys):
    """``config_file: config/dvrk_psm.yaml`` and a CSV ``bag_path``: no URDF; the same frames_result.yaml as the
    CLI's, its content on ~/report."""
    csv = dvrk_file("psm", "one_results.csv")
    cli_out, node_out = tmp_path / "cli", tmp_path / "node"
    assert main(["identify", "--config", str(PSM), "--bag", str(csv), "--out", str(cli_out)]) == 0
    capsys.readouterr()
    status, report = run_node(spinner, tmp_path, {"config_file": str(PSM), "bag_path": str(csv),
                                                  "output_dir": str(node_out)})
    cli = yaml.safe_load((cli_out / FRAMES_FILE).read_text())
    node = yaml.safe_load((node_out / FRAMES_FILE).read_text())
    # the same problem solved in two processes: with another BLAS thread count the SDP solver may stop at
    # "optimal_inaccurate" and leave the link inertials the PSM data barely determine elsewhere in the feasible set
    # (link1's Iyy 0.0014 vs 0.0032 kg m^2 was seen); the fit agrees to 1e-6, and the friction and spring terms
    # to 1e-3 (the SDP's tolerance moves them too: jaw2's Coulomb offset -0.0069680 vs -0.0069691 was seen)
    assert node.pop("status").startswith("optimal") and cli.pop("status").startswith("optimal")
    node_links, cli_links = node.pop("links"), cli.pop("links")
    assert sorted(node_links) == sorted(cli_links)
    assert_same(node, cli, rtol=1e-3)
    np.testing.assert_allclose(report["relative_error_per_joint"], cli["relative_error_per_joint"], rtol=1e-6)
    assert report["feasible"] is True
    assert "frames robot: feasible True" in status["message"]
    assert not (node_out / URDF_FILE).exists()


def test_node_identifies_a_coupled_arm_as_the_cli(spinner, tmp_path, capsys):
    """``urdf_path`` + a config with ``coupling:``: the bag is in motor coordinates; the node's parameters.yaml is
    the CLI's (motors m1..m4, the coupling recorded)."""
    series = simulate_coupled(ARM, COUPLING, TRUTH, *reference(6.0, 0), seed=1)
    bag, urdf, config = tmp_path / "bag", tmp_path / "arm.urdf", tmp_path / "arm.yaml"
    write_joint_states(bag, series)
    urdf.write_text(NOMINAL_ARM)
    config.write_text(yaml.safe_dump({"coupling": SECTION, "identification": {"friction": FRICTION,
                                                                              "processing": PROCESSING}}))
    cli_out, node_out = tmp_path / "cli", tmp_path / "node"
    assert main(["identify", "--urdf", str(urdf), "--config", str(config), "--bag", str(bag),
                 "--out", str(cli_out)]) == 0
    capsys.readouterr()
    status, report = run_node(spinner, tmp_path, {"urdf_path": str(urdf), "config_file": str(config),
                                                  "bag_path": str(bag), "output_dir": str(node_out)})
    cli = yaml.safe_load((cli_out / PARAMETERS_FILE).read_text())
    node = yaml.safe_load((node_out / PARAMETERS_FILE).read_text())
    assert node["robot"]["joints"] == ["m1", "m2", "m3", "m4"] == cli["robot"]["joints"]
    assert node["robot"]["coupling"] == cli["robot"]["coupling"]
    cli_report = json.loads((cli_out / "report.json").read_text())
    assert report["relative_error"] == pytest.approx(cli_report["relative_error"], rel=1e-9)
    assert report["feasible"] is True
    assert parameter_numbers(cli).size > 40  # 4 links x 10, the motors' friction and armature, the base parameters
    np.testing.assert_allclose(parameter_numbers(node), parameter_numbers(cli), rtol=1e-8, atol=1e-12)

