"""Excitation trajectory files: written whole, read back and checked (at rest, within the limits they record),
refused with one line naming the file; the shipped trajectories."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from dynid_ros.errors import TrajectoryError
from dynid_ros.excitation import (
    ExcitationTrajectory,
    FourierTrajectory,
    limits_from_model,
    load_trajectory,
    save_trajectory,
)
from dynid_ros.excitation.trajectory_file import check_rest
from dynid_ros.robot.config import config_section
from dynid_ros.robot.model import load_model
from dynid_ros.robot.resources import robot_file

from support import excitation_cases
from support.excitation_cases import panda_model, trajectory_at_rest


@pytest.fixture(scope="module")
def panda():
    return panda_model()


@pytest.fixture(scope="module", name="panda_limits")
def shipped_panda_limits():
    return excitation_cases.panda_limits()


def test_file_round_trip(tmp_path, panda, panda_limits):
    traj = trajectory_at_rest(panda_limits, panda.joints, seed=3)
    record = ExcitationTrajectory(traj, panda_limits, 42.5, {"seed": np.int64(3), "note": "test"})
    path = tmp_path / "sub" / "traj.yaml"
    save_trajectory(path, record)
    assert [p.name for p in path.parent.iterdir()] == ["traj.yaml"]  # no temporary left behind
    content = yaml.safe_load(path.read_text())
    assert set(content) >= {"joints", "wf", "harmonics", "q0", "a", "b", "period_s", "condition_number", "limits"}
    assert content["harmonics"] == 5 and content["period_s"] == pytest.approx(10.0)
    loaded = load_trajectory(path)
    assert loaded.trajectory.joints == panda.joints
    np.testing.assert_array_equal(loaded.trajectory.a, traj.a)
    np.testing.assert_array_equal(loaded.trajectory.b, traj.b)
    np.testing.assert_array_equal(loaded.trajectory.q0, traj.q0)
    np.testing.assert_array_equal(loaded.limits.acceleration, panda_limits.acceleration)
    assert loaded.condition_number == 42.5 and loaded.info["seed"] == 3


def test_load_rejects_bad_files(tmp_path, panda, panda_limits):
    traj = trajectory_at_rest(panda_limits, panda.joints, seed=4)
    good = ExcitationTrajectory(traj, panda_limits, 50.0).to_dict()

    def write(content: object) -> object:
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump(content) if not isinstance(content, str) else content)
        return path

    with pytest.raises(TrajectoryError, match="no such trajectory file"):
        load_trajectory(tmp_path / "missing.yaml")
    with pytest.raises(TrajectoryError, match="invalid YAML"):
        load_trajectory(write("joints: [a\n"))
    with pytest.raises(TrajectoryError, match="missing field.*wf"):
        load_trajectory(write({k: v for k, v in good.items() if k != "wf"}))
    violating = dict(good, a=(traj.a * 40).tolist(), b=(traj.b * 40).tolist())
    with pytest.raises(TrajectoryError, match=r"bad.yaml: joint panda_joint\d: .* at t = .* outside the limits"):
        load_trajectory(write(violating))
    moving = dict(good, a=(traj.a + 0.01).tolist())
    with pytest.raises(TrajectoryError, match="must start and end at rest"):
        load_trajectory(write(moving))
    with pytest.raises(TrajectoryError, match="harmonics"):
        load_trajectory(write(dict(good, harmonics=4)))
    with pytest.raises(TrajectoryError, match="period_s"):
        load_trajectory(write(dict(good, period_s=3.0)))


@pytest.mark.parametrize("robot", ["panda", "ur5e"])
def test_shipped_trajectories_are_valid_and_distinct(robot):
    from importlib.resources import files

    from dynid_ros.excitation import excitation_condition_number

    model = load_model(urdf=robot_file(robot, "urdf"))
    limits = limits_from_model(model, config_section(robot_file(robot, "config"), "excitation"))
    shipped = {}
    for purpose in ("identification", "validation"):
        path = files("dynid_ros") / "robot" / "trajectories" / f"{robot}_{purpose}.yaml"
        record = load_trajectory(path)  # checks the limits in the file at 1 kHz and the rest
        assert record.trajectory.joints == model.joints
        for name in ("position", "velocity", "acceleration"):  # the file's limits are the config's
            np.testing.assert_allclose(getattr(record.limits, name), getattr(limits, name))
        assert 10.0 <= record.trajectory.period <= 20.0
        assert record.condition_number <= 75.0  # clear of the robot and its table at 2 cm: 66-71 (36-42 through it)
        assert excitation_condition_number(model, record.trajectory) == pytest.approx(record.condition_number,
                                                                                       rel=1e-9)
        shipped[purpose] = record.trajectory
    assert shipped["identification"].wf != shipped["validation"].wf


def test_a_file_without_limits_is_read_without_a_limit_check(tmp_path, panda, panda_limits):
    traj = trajectory_at_rest(panda_limits, panda.joints, seed=8).scaled(40.0)  # far beyond the Panda's limits
    record = ExcitationTrajectory(traj, None, float("nan"), {"objective": np.float32(1.5), "sizes": np.arange(3),
                                                            "nested": {"k": (np.int64(1), 2)}})
    path = tmp_path / "free.yaml"
    save_trajectory(path, record)
    content = yaml.safe_load(path.read_text())  # plain YAML: numpy values as numbers and lists
    assert "limits" not in content
    assert content["info"] == {"objective": 1.5, "sizes": [0, 1, 2], "nested": {"k": [1, 2]}}
    loaded = load_trajectory(path)  # the robot's limits apply where it runs, not here
    assert loaded.limits is None and np.isnan(loaded.condition_number)
    np.testing.assert_array_equal(loaded.trajectory.a, traj.a)


@pytest.mark.parametrize(("content", "match"), [
    ("- 1\n- 2\n", "a trajectory file must be a mapping"),
    ({"joints": ["a"], "wf": 1.0, "q0": [0.0], "a": [[0.0]], "b": [[0.0]], "limits": {"position": [[-1, 1]]}},
     "limits must have position, velocity and acceleration"),
    ({"joints": ["a"], "wf": "fast", "q0": [0.0], "a": [[0.0]], "b": [[0.0]]}, "malformed numbers"),
    ({"joints": ["a"], "wf": 1.0, "q0": [0.0], "a": [[0.0]], "b": [[0.0]], "info": [1]}, "info must be a mapping"),
])
def test_load_names_the_file_and_the_problem(tmp_path, content, match):
    path = tmp_path / "bad.yaml"
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    with pytest.raises(TrajectoryError, match=f"bad.yaml: {match}"):
        load_trajectory(path)


def test_a_failed_save_leaves_nothing_behind(tmp_path, panda, panda_limits):
    record = ExcitationTrajectory(trajectory_at_rest(panda_limits, panda.joints), panda_limits, 10.0)
    target = tmp_path / "taken.yaml"
    target.mkdir()  # a directory where the file would go: the rename fails
    with pytest.raises(OSError):
        save_trajectory(target, record)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.yaml"] and target.is_dir()


def test_check_rest_names_the_moving_joint(panda, panda_limits):
    traj = trajectory_at_rest(panda_limits, panda.joints, seed=9)
    check_rest(traj)
    b = traj.b.copy()
    b[4, 0] += 0.05
    with pytest.raises(TrajectoryError, match="joint panda_joint5: acceleration .* at t = 0 s; the trajectory must "
                                              "start and end at rest"):
        check_rest(FourierTrajectory(traj.joints, traj.wf, traj.q0, traj.a, b))
