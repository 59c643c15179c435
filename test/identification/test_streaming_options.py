"""Streamed identification with the options that transform each sample on the way in:
``--effort-scale-file`` (per-joint gains by name) and ``--abs-effort`` (effort = |tau|, Pennese et al. 2021), and the
one console line of the options still read in memory (sigmoid friction).

Tiny reads and chunks are forced (900 messages, 0.5 s of processing) so that many chunk edges are crossed; the
streamed estimate must equal the in-memory one to 1e-9 relative.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from dynid_ros.cli.main import main
from dynid_ros.data import bag_stream
from dynid_ros.data.bag_io import read_joint_states, write_joint_states
from dynid_ros.data.bag_stream import scan_joint_states
from dynid_ros.data.csv_joint_states import read_csv_joint_states
from dynid_ros.data.gains_file import read_gains, scale_by_name
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.dynamics.base_parameters import random_states
from dynid_ros.dynamics.regressor import torques
from dynid_ros.errors import DataError
from dynid_ros.estimation import inertia_stack
from dynid_ros.estimation.inertia_stack import MassMatrixSamples, read_mass_matrix_csv, stack_regressor
from dynid_ros.estimation.torque_signs import SignSearchOptions
from dynid_ros.identification.identify import identify, identify_bag
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.robot.frames import load_frames_robot
from dynid_ros.robot.model import load_model, nominal_parameters
from dynid_ros.robot.parameters import ParameterLayout
from dynid_ros.variants import mass_matrix
from dynid_ros.variants.abs_effort import identify_abs_effort, identify_abs_effort_bag
from dynid_ros.variants.config_robot import identify_frames_config
from dynid_ros.variants.frames_identification import (
    effort_delays_of,
    estimate_effort_delays,
    fit_frames,
    frames_data,
    frames_data_scan,
    load_frames_result,
    normal_equations,
    validate_frames,
)
from dynid_ros.variants.mass_matrix import identify_from_mass_matrix

from support.dvrk_data import dvrk_file
from support.kr5 import KR5, T0, kr5_truth, motion
from support.panda_streams import TINY, URDF, panda_series, relative
from support.paths import REPO

GAINS = {"panda_joint2": 2.5, "panda_joint4": 0.8, "panda_joint7": 12.0}
"""Motor-current-to-torque factors of three joints (the others 1)."""


@pytest.fixture(autouse=True)
def small_reads(monkeypatch):
    monkeypatch.setattr(bag_stream, "CHUNK_MESSAGES", 900)


def test_effort_scale_file_streams(tmp_path: Path) -> None:
    """A bag recording effort = tau / k: the gains applied per sample on the way in give the in-memory estimate."""
    series = panda_series()
    k = np.array([GAINS.get(name, 1.0) for name in series.names])
    bag = write_joint_states(tmp_path / "bag", JointStateSeries(series.names, series.t, series.position,
                                                                series.velocity, series.effort / k))
    gains = tmp_path / "gains.yaml"
    gains.write_text(yaml.safe_dump({"joints": list(GAINS), "effort_scale": list(GAINS.values())}))
    options = IdentificationOptions(method="ols", start=0.8, end=6.1, processing=TINY)
    whole = identify(scale_by_name(read_joint_states(bag), read_gains(gains), str(gains)), options, urdf=URDF)
    streamed = identify_bag(bag, options, urdf=URDF, gains_file=gains)
    assert streamed.n_samples == whole.n_samples > 400
    assert relative(whole.beta, streamed.beta) < 1e-9
    assert relative(whole.delta, streamed.delta) < 1e-9
    assert streamed.relative_error == pytest.approx(whole.relative_error, rel=1e-9)
    unscaled = identify_bag(bag, options, urdf=URDF)  # the gains matter: without them the torque is off
    assert unscaled.relative_error > 5 * streamed.relative_error
    gains.write_text(yaml.safe_dump({"joints": ["elbow"], "effort_scale": [2.0]}))
    with pytest.raises(DataError, match=r"gains.yaml: joint\(s\) elbow are not in the joint states"):
        identify_bag(bag, options, urdf=URDF, gains_file=gains)


@pytest.fixture(scope="module")
def kr5_abs_bag(tmp_path_factory) -> Path:
    """|tau + noise| of a simulated KR5 over 4 s at 1 kHz (the motion and links of test_torque_signs)."""
    model = load_model(dh=KR5)
    layout = model.layout_for((), False)
    rng = np.random.default_rng(3)
    truth = kr5_truth(layout, rng)
    t = np.arange(0.0, 4.0, 1e-3)
    q, dq, ddq = motion(t, rng)
    tau = torques(model, layout, truth, q, dq, ddq)
    measured = tau + rng.normal(size=tau.shape) * 0.02 * np.abs(tau).max(axis=0)
    series = JointStateSeries(list(model.joints), t + T0, q, dq, np.abs(measured))
    return write_joint_states(tmp_path_factory.mktemp("abs") / "bag", series)


def test_abs_effort_streams(kr5_abs_bag: Path) -> None:
    """--abs-effort: the bag read and processed in chunks, then the sign search on the decimated data: the same
    segments and signs, the same estimate as the whole series in memory."""
    options = IdentificationOptions(friction=(), armature=False, prior="none", method="fbpe", start=0.2,
                                    processing={**TINY, "cutoff_hz": 10.0})
    search = SignSearchOptions(beam=2)
    whole, whole_signs = identify_abs_effort(read_joint_states(kr5_abs_bag), options, search, dh=KR5)
    streamed, signs = identify_abs_effort_bag(kr5_abs_bag, options, search, dh=KR5)
    found, expected = streamed.processing["torque_signs"], whole.processing["torque_signs"]
    assert found["segments"] == expected["segments"]  # the same segments, times and signs
    np.testing.assert_allclose(found["thresholds"], expected["thresholds"], rtol=1e-9)
    np.testing.assert_allclose(found["level_costs"], expected["level_costs"], rtol=1e-7)  # SDP residuals
    assert len(signs.segments) == len(whole_signs.segments) >= 10
    assert relative(whole.beta, streamed.beta) < 1e-9
    assert relative(whole.delta, streamed.delta) < 1e-9
    assert streamed.relative_error == pytest.approx(whole.relative_error, rel=1e-9)
    assert streamed.warnings == whole.warnings


def test_abs_effort_stream_names_the_negative_sample(tmp_path: Path, capsys) -> None:
    """A negative effort is found on the way in: one line naming the sample and the joint, nothing written."""
    series = panda_series(3.0)
    effort = np.abs(series.effort)
    effort[2100, 4] = -0.5
    bag = write_joint_states(tmp_path / "bag", JointStateSeries(series.names, series.t, series.position,
                                                                series.velocity, effort))
    out = tmp_path / "out"
    assert main(["identify", "--urdf", str(URDF), "--bag", str(bag), "--abs-effort", "--out", str(out)]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1 and "negative values" in errors[0], errors
    sample = int(np.argmin(np.abs(read_joint_states(bag).t - series.t[2100])))  # the reader's sample index
    assert f"sample {sample}, joint panda_joint5: -0.5" in errors[0]
    assert not out.exists()


def test_sigmoid_friction_says_it_reads_in_memory(tmp_path: Path, capsys) -> None:
    """The one option still identified from the whole series says so in one console line."""
    bag = write_joint_states(tmp_path / "bag", panda_series(3.0))
    out = tmp_path / "out"
    assert main(["identify", "--urdf", str(URDF), "--bag", str(bag), "--friction", "sigmoid", "--method", "ols",
                 "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines.count("warning: sigmoid friction needs the whole series: read in memory") == 1


def test_frames_robot_streams(tmp_path: Path, capsys) -> None:
    """A frames robot (the real dVRK MTM run of Wang et al. 2019, its cable torque and gravity spring) recorded in a
    rosbag2: streamed, the same processed samples and the same normal equations (the SDP's whole input) to 1e-9 as in
    memory. The SDP's answer then agrees to the solver's tolerance only (its inputs differ by round-off), so the
    estimate is compared through its torque prediction and errors, to 1e-4."""
    config = yaml.safe_load((REPO / "config" / "dvrk_mtm.yaml").read_text())
    robot = load_frames_robot(config)
    series = read_csv_joint_states(dvrk_file("mtm", "one_results.csv"), robot.motors, 200.0)
    bag = write_joint_states(tmp_path / "bag", series)
    processing = {**config["identification"]["processing"], "chunk_s": 4.0}  # every 4 s with the filter's overlap
    whole_data = frames_data(robot, read_joint_states(bag), processing)
    streamed_data = frames_data_scan(robot, scan_joint_states(bag), processing)
    np.testing.assert_array_equal(streamed_data.t, whole_data.t)
    layout = ParameterLayout(robot.motors, robot.model.links, (), False)
    for a, b in zip(_sums(robot, layout, streamed_data), _sums(robot, layout, whole_data)):
        assert relative(np.atleast_1d(b), np.atleast_1d(a)) < 1e-9  # the SDP's whole input
    whole = fit_frames(robot, whole_data, processing)
    streamed = fit_frames(robot, streamed_data, processing)
    assert streamed.feasible and whole.feasible and streamed.n_samples == whole.n_samples > 4500
    # measured: prediction 3.1e-6 relative, per-motor errors within 8e-6 (the SDP stops at its tolerance)
    assert relative(whole.predict(whole_data), streamed.predict(whole_data)) < 1e-4
    np.testing.assert_allclose(streamed.relative_error_per_joint, whole.relative_error_per_joint, rtol=1e-4)
    # the CLI streams it (no note that the bag was read whole); with a CSV it says that it reads it whole
    mtm = tmp_path / "mtm.yaml"
    mtm.write_text(yaml.safe_dump({**config, "identification": {"processing": processing}}))
    assert main(["identify", "--config", str(mtm), "--bag", str(bag), "--out", str(tmp_path / "out")]) == 0
    assert "note:" not in capsys.readouterr().out
    # dynid validate streams it too (a window of it): the errors of the whole series in memory
    report = tmp_path / "validation.json"
    assert main(["validate", "--result", str(tmp_path / "out"), "--bag", str(bag), "--start", "5", "--end", "25",
                 "--report", str(report)]) == 0
    assert "note:" not in capsys.readouterr().out
    fit = load_frames_result(tmp_path / "out")[0]
    window = read_joint_states(bag).window(5.0, 25.0)
    for key, filtered in (("relative_error_per_joint", False), ("relative_error_filtered_per_joint", True)):
        expected = validate_frames(fit, window, fit.processing, filtered=filtered)[1]
        np.testing.assert_allclose(json.loads(report.read_text())[key], expected, rtol=1e-9)
    assert identify_frames_config(config, "mtm.yaml", dvrk_file("mtm", "one_results.csv"), tmp_path / "csv").warnings \
        == ["a CSV recording is read whole"]


def test_mass_matrix_streams(tmp_path: Path, monkeypatch) -> None:
    """``--mass-matrix``: the file parsed a block of lines at a time and the stacked regressor (Gaz et al. 2019 eq.
    20) built a block of configurations at a time give the estimate of the whole regressor at once (1e-9)."""
    model = load_model(urdf=URDF)
    layout = model.layout_for((), False)
    rng = np.random.default_rng(4)
    q = random_states(model, 300, rng)[0]
    stack = stack_regressor(model, layout, q) @ nominal_parameters(model, layout)
    stack += rng.normal(0.0, 1e-3 * np.abs(stack).max(), stack.shape)
    csv = MassMatrixSamples(q, stack).write_csv(tmp_path / "m_g.csv")
    options = IdentificationOptions(friction=(), armature=False)
    monkeypatch.setattr(mass_matrix, "BLOCK_CONFIGURATIONS", 10**9)  # one block: the whole regressor
    whole = identify_from_mass_matrix(read_mass_matrix_csv(csv, model.n_dof), options, urdf=URDF)
    monkeypatch.setattr(mass_matrix, "BLOCK_CONFIGURATIONS", 20)  # 14 configurations (98 joint groups) a block
    monkeypatch.setattr(inertia_stack, "CSV_BLOCK_ROWS", 64)
    samples = read_mass_matrix_csv(csv, model.n_dof)
    np.testing.assert_allclose(samples.stack, stack, rtol=1e-15)  # the CSV holds repr-exact floats
    streamed = identify_from_mass_matrix(samples, options, urdf=URDF)
    assert streamed.processing["rank"] == whole.processing["rank"] == 43
    assert streamed.processing["dropped_elements"] == whole.processing["dropped_elements"] == ["g1"]
    assert relative(whole.beta, streamed.beta) < 1e-9
    assert relative(whole.delta, streamed.delta) < 1e-9
    assert streamed.relative_error == pytest.approx(whole.relative_error, rel=1e-9)


def test_frames_effort_delay_streams(tmp_path: Path) -> None:
    """The real dVRK PSM run (Wang et al. 2019) as a rosbag2 with ``effort_delay_s: estimate`` (its config): the
    delays searched on the streamed processed samples are the in-memory ones, and the effort advanced on the way
    gives the in-memory processed samples (1e-9) and normal equations (1e-9)."""
    config = yaml.safe_load((REPO / "config" / "dvrk_psm.yaml").read_text())
    robot = load_frames_robot(config)
    series = read_csv_joint_states(dvrk_file("psm", "one_results.csv"), robot.motors, 200.0)
    bag = write_joint_states(tmp_path / "bag", series)
    processing = {**config["identification"]["processing"], "chunk_s": 4.0}
    assert processing["effort_delay_s"] == "estimate"
    whole_series, scan = read_joint_states(bag), scan_joint_states(bag)
    plain = {k: v for k, v in processing.items() if k != "effort_delay_s"}
    delays = effort_delays_of(robot, frames_data_scan(robot, scan, plain))
    assert delays == estimate_effort_delays(robot, whole_series, processing)
    assert max(delays) >= 0.03  # the wrist's lag: the effort is advanced, not left as recorded
    delayed = {**processing, "effort_delay_s": delays}
    whole, streamed = frames_data(robot, whole_series, delayed), frames_data_scan(robot, scan, delayed)
    np.testing.assert_array_equal(streamed.t, whole.t)
    np.testing.assert_array_equal(streamed.tau_raw, whole.tau_raw)  # the same interpolation, bitwise
    for name in ("q", "dq", "tau"):
        assert relative(getattr(whole, name), getattr(streamed, name)) < 1e-9, name
    layout = ParameterLayout(robot.motors, robot.model.links, (), False)
    for a, b in zip(_sums(robot, layout, streamed), _sums(robot, layout, whole)):
        assert relative(np.atleast_1d(b), np.atleast_1d(a)) < 1e-9
    window = frames_data_scan(robot, scan, delayed, 3.0, 20.0)  # a window: delays inside it, as the series'
    np.testing.assert_array_equal(window.t, frames_data(robot, whole_series.window(3.0, 20.0), delayed).t)


def _sums(robot, layout, data) -> tuple:
    """``A^T A``, ``A^T b`` and ``b^T b`` of a frames robot's fit on ``data``."""
    equations = normal_equations(robot, layout, data)[0]
    return equations.gram, equations.projection, equations.b_norm2
