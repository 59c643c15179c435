"""Pre-move checks and the progress state machine of excitation_node (dynid_ros.execution.trajectory_execution)."""

import json
import sys

import numpy as np
import pytest
import yaml

from dynid_ros.errors import DataError, TrajectoryError
from dynid_ros.excitation.trajectory_file import load_trajectory
from dynid_ros.execution.trajectory_execution import (
    ExcitationRun,
    ExecutionState,
    current_positions,
    prepare_profile,
    trajectory_samples,
)

from support.ros_helpers import robot_limits_of, write_test_trajectory

PANDA = robot_limits_of("panda")


@pytest.fixture(scope="module")
def excitation(tmp_path_factory):
    return load_trajectory(write_test_trajectory(tmp_path_factory.mktemp("traj") / "t.yaml", period=1.0))


def test_core_imports_without_rclpy():
    assert "dynid_ros.execution.trajectory_execution" in sys.modules
    import subprocess

    code = ("import sys, dynid_ros.execution.trajectory_execution, dynid_ros.execution.follow_joint_trajectory, "
            "dynid_ros.execution.trajectory_reference, dynid_ros.ros.launch_support; print('rclpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False"


def test_positions_are_taken_by_name_and_extra_joints_ignored():
    q = current_positions(["j2", "j1"], ["finger", "j1", "j2"], [9.0, 1.0, 2.0], age_s=0.01, max_age_s=0.5)
    np.testing.assert_array_equal(q, [2.0, 1.0])


@pytest.mark.parametrize("names, positions, age, match", [
    (["j1", "j2"], [0.0, 0.0], None, "no /joint_states received"),
    (["j1", "j2"], [0.0, 0.0], 2.0, "stale: last message 2.00 s old"),
    (["j1", "other"], [0.0, 0.0], 0.0, "does not name joint\\(s\\) j2 of the trajectory"),
    (["j1", "j2"], [0.0], 0.0, "2 names but 1 positions"),
    (["j1", "j2"], [0.0, float("nan")], 0.0, "position of joint j2 is not finite"),
])
def test_bad_joint_states_are_refused(names, positions, age, match):
    with pytest.raises(DataError, match=match):
        current_positions(["j1", "j2"], names, positions, age_s=age, max_age_s=0.5)


def test_profile_approaches_from_the_current_pose(excitation):
    q_now = excitation.limits.position.mean(axis=1) + 0.1
    profile = prepare_profile(excitation, q_now, 2, 500.0, PANDA)
    q, dq, _ = profile.sample(np.array([0.0]))
    np.testing.assert_allclose(q[0], q_now)
    np.testing.assert_allclose(dq[0], 0.0)
    assert profile.duration == pytest.approx(profile.t_excitation_start + 2 * 1.0 + profile.hold_s)
    t, q, dq, ddq = trajectory_samples(profile, 50.0)
    assert t[0] == pytest.approx(0.02) and t[-1] == pytest.approx(profile.duration)
    assert np.all(np.diff(t) > 0) and q.shape == dq.shape == ddq.shape == (len(t), 7)


def test_start_outside_the_limits_and_bad_files_are_refused(excitation, tmp_path):
    q_now = excitation.limits.position[:, 1] + 0.2
    with pytest.raises(TrajectoryError, match="outside the excitation limits"):
        prepare_profile(excitation, q_now, 1, 500.0, PANDA)
    with pytest.raises(TrajectoryError, match="cycles must be >= 1"):
        prepare_profile(excitation, excitation.limits.position.mean(axis=1), 0, 500.0, PANDA)


def test_run_goes_idle_approaching_running_done(excitation):
    profile = prepare_profile(excitation, excitation.limits.position.mean(axis=1), 1, 500.0, PANDA)
    run = ExcitationRun()
    assert run.status()["state"] == "idle"
    run.start(profile, t_now=100.0)
    assert run.update(100.0 + 0.5 * profile.t_excitation_start) is ExecutionState.APPROACHING
    assert run.update(100.0 + profile.t_excitation_start + 0.1) is ExecutionState.RUNNING
    half = run.progress
    assert 0 < half < 1
    run.update(100.0 + profile.duration + 1.0)
    assert run.elapsed_past_end(100.0 + profile.duration + 1.0) == pytest.approx(1.0)
    run.finish("ok")
    status = json.loads(run.status_json())
    assert status["state"] == "done" and status["progress"] == 1.0
    run.abort("late stop")
    assert run.status()["state"] == "aborted" and not run.active


def test_limit_violating_file_is_refused_at_load(tmp_path):
    path = write_test_trajectory(tmp_path / "t.yaml", period=1.0)
    content = yaml.safe_load(path.read_text())
    content["a"] = (5 * np.array(content["a"])).tolist()
    content["b"] = (5 * np.array(content["b"])).tolist()
    path.write_text(yaml.safe_dump(content))
    with pytest.raises(TrajectoryError, match="outside the limits"):
        load_trajectory(path)
