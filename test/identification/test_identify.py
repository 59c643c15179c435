"""The identification's entry point, called directly on a three-joint arm: the model loaded from the URDF (joints
left out are locked where the data hold them, and said so), a bag streamed or read whole (the same result),
the effort gains of a gains file, the recording's start, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.data.bag_io import read_joint_states, write_joint_states
from dynid_ros.data.bag_stream import scan_joint_states
from dynid_ros.data.gains_file import GAINS_MARKER, write_gains
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.dynamics.regressor import torques
from dynid_ros.errors import ConfigError, DataError
from dynid_ros.identification.identify import (
    effort_gains,
    identified_model,
    identify,
    identify_bag,
    in_memory_warnings,
    locked_warnings,
    scan_gains,
    scanned_model,
    streams,
)
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.identification.timing import StageTimer
from dynid_ros.robot.model import load_model

from support.arm_runs import RICH, T0, arm_run


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    directory = tmp_path_factory.mktemp("arm")
    run = arm_run(directory, amplitude=RICH)
    return run, write_joint_states(directory / "bag", run.series)


def _j3_held(run) -> JointStateSeries:
    """The run with j3 held at 0.7 rad (its torque as the truth gives it there)."""
    s = run.series
    q, dq = s.position.copy(), s.velocity.copy()
    q[:, 2], dq[:, 2] = 0.7, 0.0
    ddq = np.gradient(dq, s.t, axis=0)
    return JointStateSeries(list(s.names), s.t, q, dq, torques(run.model, run.layout, run.truth, q, dq, ddq))


def test_joints_left_out_are_locked_where_the_data_hold_them(arm):
    run, _ = arm
    series = _j3_held(run)
    model, warnings = identified_model(series, IdentificationOptions(joints=["j1", "j2"]), StageTimer(),
                                       urdf=run.urdf)
    assert model.joints == ("j1", "j2") and model.locked == ("j3",)
    assert model.locked_positions["j3"] == pytest.approx(0.7)
    assert warnings == ["joints locked (not identified): j3, where the data hold them (at 0.7)"]
    assert locked_warnings(run.model) == []
    given, none = identified_model(series, IdentificationOptions(), StageTimer(), model=run.model)
    assert given is run.model and none == []


def test_scanned_model_reads_the_held_joint_from_the_bag(arm, tmp_path):
    run, _ = arm
    bag = write_joint_states(tmp_path / "held", _j3_held(run))
    timer = StageTimer()
    model, warnings = scanned_model(scan_joint_states(bag), IdentificationOptions(joints=["j1", "j2"]), timer,
                                    urdf=run.urdf)
    assert model.locked_positions["j3"] == pytest.approx(0.7) and warnings[0].startswith("joints locked")
    assert "model" in timer.timings


def test_identify_a_series(arm):
    run, _ = arm
    timer = StageTimer()
    result = identify(run.series, IdentificationOptions(method="ols"), urdf=run.urdf, timer=timer)
    assert result.recording_start_s == pytest.approx(T0)
    assert result.model.joints == ("j1", "j2", "j3") and "model" in timer.timings
    assert result.relative_error < 0.02


def test_a_bag_streamed_equals_the_bag_read_whole(arm):
    run, bag = arm
    options = IdentificationOptions(method="ols", processing={"chunk_s": 2.0})
    streamed = identify_bag(bag, options, urdf=run.urdf)
    assert streams(options) and streamed.recording_start_s == pytest.approx(T0, abs=1e-6)
    whole = identify(read_joint_states(bag), options, urdf=run.urdf)
    np.testing.assert_allclose(streamed.beta, whole.beta, rtol=1e-6, atol=1e-9)
    assert streamed.relative_error == pytest.approx(whole.relative_error, rel=1e-6)


def test_which_options_stream_and_why_not():
    assert streams(IdentificationOptions())
    assert not streams(IdentificationOptions(friction=("viscous", "sigmoid")))
    assert streams(IdentificationOptions(processing={"cutoff_hz": "auto"}))  # chosen on the leading window
    assert in_memory_warnings(IdentificationOptions(friction=("sigmoid",))) == [
        "sigmoid friction needs the whole series: read in memory"]
    assert in_memory_warnings(IdentificationOptions()) == []


def test_effort_gains_of_a_gains_file(arm, tmp_path):
    run, bag = arm
    gains = tmp_path / "gains.yaml"
    write_gains({GAINS_MARKER: 1, "joints": ["j2"], "effort_scale": [2.0]}, gains)
    assert effort_gains(IdentificationOptions(), None) is None
    assert effort_gains(IdentificationOptions(), gains) == {"j2": 2.0}
    with pytest.raises(ConfigError, match="give --effort-scale or --effort-scale-file, not both"):
        effort_gains(IdentificationOptions(effort_scale=[1.0, 1.0, 1.0]), gains)
    scan = scan_joint_states(bag)
    np.testing.assert_array_equal(scan_gains(scan, run.model, {"j2": 2.0}, gains), [1.0, 2.0, 1.0])
    assert scan_gains(scan, run.model, None, None) is None
    with pytest.raises(DataError, match="gains.yaml: joint\\(s\\) j7 are not in the joint states"):
        scan_gains(scan, run.model, {"j7": 2.0}, gains)
    scaled = identify_bag(bag, IdentificationOptions(method="ols", prior="none"), urdf=run.urdf, gains_file=gains)
    plain = identify_bag(bag, IdentificationOptions(method="ols", prior="none"), urdf=run.urdf)
    np.testing.assert_allclose(scaled.fit.tau[:, 1], 2.0 * plain.fit.tau[:, 1], rtol=1e-12)
    np.testing.assert_allclose(scaled.fit.tau[:, [0, 2]], plain.fit.tau[:, [0, 2]], rtol=1e-12)


def test_options_are_checked_before_any_work(arm):
    run, bag = arm
    with pytest.raises(ConfigError, match="--method must be one of"):
        identify(run.series, IdentificationOptions(method="magic"), urdf=run.urdf)
    with pytest.raises(ConfigError, match="--end \\(1.0\\) must be after --start \\(2.0\\)"):
        identify_bag(bag, IdentificationOptions(start=2.0, end=1.0), urdf=run.urdf)


def test_a_model_without_the_datas_joints_is_refused(arm, tmp_path):
    run, _ = arm
    s = run.series
    renamed = JointStateSeries(["a", "b", "c"], s.t, s.position, s.velocity, s.effort)
    with pytest.raises(DataError, match="joint\\(s\\) j1, j2, j3 of the model are not in the joint states"):
        identify(renamed, IdentificationOptions(), model=load_model(urdf=run.urdf))
