"""The filter cutoff chosen from the data (processing ``cutoff_hz: auto``): candidates from the
motion's bandwidth, time-blocked cross-validation picks one; the choice is recorded and validation uses it; an
explicit cutoff wins. On the real Panda it picks about the hand-tuned 6 Hz and keeps the held-out error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from dynid_ros.cli.main import main
from dynid_ros.data.bag_io import write_joint_states
from dynid_ros.data.bandwidth import passband_multiple
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.signal_processing import ProcessingOptions, process
from dynid_ros.dynamics.regressor import torques
from dynid_ros.errors import ConfigError
from dynid_ros.identification.cutoff_selection import MULTIPLES, motion_bandwidth
from dynid_ros.robot.model import load_model, nominal_parameters

from support.panda_data import JOINTS, write_panda_bag
from support.paths import REPO

PANDA_URDF = REPO / "urdf" / "panda.urdf"
SPLIT_S = 0.7 * 20.9991


def test_motion_bandwidth_holds_the_energy_of_the_velocities():
    t = np.arange(0.0, 40.0, 0.01)
    v = np.column_stack([np.sin(2 * np.pi * 0.2 * t), np.sin(2 * np.pi * 0.5 * t)])
    assert np.isclose(motion_bandwidth(t, v), 0.5, atol=0.03)
    assert np.isclose(motion_bandwidth(t, v[:, :1]), 0.2, atol=0.03)


def test_auto_is_an_option_the_identification_resolves():
    assert ProcessingOptions(cutoff_hz="auto").cutoff_hz == "auto"
    with pytest.raises(ConfigError, match="processing option cutoff_hz must be a number"):
        ProcessingOptions(cutoff_hz="fast")
    t = np.arange(0.0, 2.0, 0.01)
    series = JointStateSeries(["a"], t, np.sin(t)[:, None], np.cos(t)[:, None], np.sin(t)[:, None])
    with pytest.raises(ConfigError, match="chosen by the identification"):
        process(series, ProcessingOptions(cutoff_hz="auto"))


def synthetic_panda_bag(tmp_path: Path) -> Path:
    """Synthetic Panda torques along three sines per joint (0.2, 0.4, 0.6 Hz; 200 Hz, 12 s, 1 % noise)."""
    model = load_model(urdf=PANDA_URDF)
    layout = model.layout_for()
    truth = nominal_parameters(model, layout)
    t = np.arange(0.0, 12.0, 5e-3)
    rng = np.random.default_rng(0)
    w = 2 * np.pi * np.array([0.2, 0.4, 0.6])
    phase = rng.uniform(0, 2 * np.pi, (3, 7))
    q = model.position_limits.mean(axis=1) + 0.3 * np.sin(w[:, None, None] * t[None, :, None] + phase[:, None]).sum(0)
    dq = 0.3 * (w[:, None, None] * np.cos(w[:, None, None] * t[None, :, None] + phase[:, None])).sum(0)
    ddq = -0.3 * (w[:, None, None] ** 2 * np.sin(w[:, None, None] * t[None, :, None] + phase[:, None])).sum(0)
    tau = torques(model, layout, truth, q, dq, ddq)
    tau += 0.01 * tau.std(axis=0) * rng.standard_normal(tau.shape)
    return write_joint_states(tmp_path / "bag", JointStateSeries(list(model.joints), t, q, dq, tau))


def test_auto_cutoff_is_chosen_recorded_and_used_by_validate(tmp_path):
    """Synthetic Panda torques: the chosen cutoff is a multiple of the bandwidth, stored in parameters.yaml with
    every candidate's score, and validate processes the held-out data with it."""
    bag = synthetic_panda_bag(tmp_path)
    config = tmp_path / "auto.yaml"
    config.write_text("identification:\n  processing:\n    cutoff_hz: auto\n")
    out = tmp_path / "result"
    assert main(["identify", "--urdf", str(PANDA_URDF), "--bag", str(bag), "--end", "8", "--config", str(config),
                 "--out", str(out)]) == 0
    processing = yaml.safe_load((out / "parameters.yaml").read_text())["processing"]
    choice = processing["cutoff_choice"]
    assert 0.5 <= choice["bandwidth_hz"] <= 1.2, choice  # 0.6 Hz top sine, 8 s window (leakage)
    assert processing["cutoff_hz"] == choice["cutoff_hz"]
    assert any(np.isclose(processing["cutoff_hz"], m * choice["bandwidth_hz"]) for m in MULTIPLES), choice
    assert len(choice["scores"]) >= 4 and processing["decimate_hz"] >= 100.0
    report = tmp_path / "v.json"
    assert main(["validate", "--result", str(out), "--bag", str(bag), "--start", "8", "--report", str(report)]) == 0
    assert json.loads(report.read_text())["relative_error"] < 0.05


def test_real_panda_auto_cutoff_is_near_the_tuned_one_and_keeps_the_held_out_error(tmp_path):
    bag = write_panda_bag(tmp_path / "run1")
    config = tmp_path / "auto.yaml"
    config.write_text("identification:\n  processing:\n    cutoff_hz: auto\n")
    out = tmp_path / "result"
    assert main(["identify", "--urdf", str(PANDA_URDF), "--bag", str(bag), "--end", f"{SPLIT_S}",
                 "--joints", ",".join(JOINTS), "--config", str(config), "--out", str(out)]) == 0
    processing = yaml.safe_load((out / "parameters.yaml").read_text())["processing"]
    assert 5.0 <= processing["cutoff_hz"] <= 8.0, processing["cutoff_choice"]  # measured: 6.7 Hz
    report = tmp_path / "v.json"
    assert main(["validate", "--result", str(out), "--bag", str(bag), "--start", f"{SPLIT_S}",
                 "--report", str(report)]) == 0
    assert json.loads(report.read_text())["relative_error"] <= 0.0270


def test_default_cutoff_is_derived_from_the_bandwidth_streamed_recorded_and_used_by_validate(tmp_path, monkeypatch):
    """The default (``cutoff_hz: bandwidth``): the bag is streamed (no fallback to memory), the cutoff is 16.9x the
    bandwidth (0.6 Hz top sine), recorded with how it was found, and validate uses the recorded number."""
    bag = synthetic_panda_bag(tmp_path)
    out = tmp_path / "result"

    def whole_bag(*args, **kwargs):
        raise AssertionError("the bag was read whole: the streamed path fell back to memory")

    with monkeypatch.context() as patch:
        patch.setattr("dynid_ros.identification.identify.read_joint_states", whole_bag)
        assert main(["identify", "--urdf", str(PANDA_URDF), "--bag", str(bag), "--end", "8", "--out", str(out)]) == 0
    processing = yaml.safe_load((out / "parameters.yaml").read_text())["processing"]
    choice = processing["cutoff_choice"]
    assert choice["rule"] == "bandwidth" and 0.6 <= choice["bandwidth_hz"] <= 0.85, choice  # 0.6 Hz, Hann +-2/8 s
    assert processing["cutoff_hz"] == pytest.approx(passband_multiple(4) * choice["bandwidth_hz"])
    assert choice["description"].startswith("derived from bandwidth")
    assert processing["decimate_hz"] == pytest.approx(max(100.0, 8 * processing["cutoff_hz"]))
    assert "derived from bandwidth" in (out / "report.md").read_text()
    report = tmp_path / "v.json"
    assert main(["validate", "--result", str(out), "--bag", str(bag), "--start", "8", "--report", str(report)]) == 0
    validated = json.loads(report.read_text())
    assert validated["relative_error"] < 0.05
