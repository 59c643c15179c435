"""Fourier trajectories, limits, trajectory files and the execution profile."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from dynid_ros.errors import ConfigError, TrajectoryError
from dynid_ros.excitation import (
    ExcitationLimits,
    ExcitationTrajectory,
    FourierTrajectory,
    check_trajectory_limits,
    limits_from_model,
    load_trajectory,
    save_trajectory,
)
from dynid_ros.execution.execution_profile import build_execution_profile
from dynid_ros.robot.config import config_section
from dynid_ros.robot.model import load_model
from dynid_ros.robot.resources import robot_file

PANDA_ACCELERATION = [15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0]


@pytest.fixture(scope="module")
def panda():
    return load_model(urdf=robot_file("panda", "urdf"))


@pytest.fixture(scope="module")
def panda_limits(panda):
    return limits_from_model(panda, config_section(robot_file("panda", "config"), "excitation"))


def _at_rest(n: int, harmonics: int, seed: int, amplitude: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Random coefficients with sum_l a_l = 0 and sum_l l b_l = 0."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(-amplitude, amplitude, (2, n, harmonics))
    ell = np.arange(1, harmonics + 1)
    return a - a.mean(axis=1, keepdims=True), b - np.outer(b @ ell, ell) / (ell @ ell)


def _trajectory(limits: ExcitationLimits, joints: tuple[str, ...], seed: int = 0, amplitude: float = 0.1,
                wf: float = 2 * np.pi * 0.1) -> FourierTrajectory:
    a, b = _at_rest(len(joints), 5, seed, amplitude)
    return FourierTrajectory(joints, wf, limits.position.mean(axis=1), a, b)


def test_fourier_derivatives_are_analytic_and_periodic():
    a, b = _at_rest(3, 4, seed=1, amplitude=0.5)
    a[0, 0] += 0.2  # not at rest: a general series
    traj = FourierTrajectory(("j1", "j2", "j3"), 0.7, [0.1, -0.2, 0.3], a, b)
    assert traj.period == pytest.approx(2 * np.pi / 0.7)
    assert traj.harmonics == 4
    t = np.linspace(0.0, traj.period, 20001)
    q, dq, ddq = traj.evaluate(t)
    h = t[1] - t[0]
    np.testing.assert_allclose(np.gradient(q, h, axis=0)[1:-1], dq[1:-1], atol=2e-5)
    np.testing.assert_allclose(np.gradient(dq, h, axis=0)[1:-1], ddq[1:-1], atol=2e-5)
    for x0, x1 in zip(traj.evaluate(np.array([0.3])), traj.evaluate(np.array([0.3 + 2 * traj.period]))):
        np.testing.assert_allclose(x0, x1, atol=1e-12)
    np.testing.assert_allclose(q[:-1].mean(axis=0), traj.q0, atol=1e-9)  # q0 is the mean over a period
    # eq. 78 term by term for one joint and one time
    k, s = 1, 0.9
    expected = sum(a[k, i] / (0.7 * (i + 1)) * np.sin(0.7 * (i + 1) * s)
                   - b[k, i] / (0.7 * (i + 1)) * np.cos(0.7 * (i + 1) * s) for i in range(4)) - 0.2
    assert traj.evaluate(np.array([s]))[0][0, k] == pytest.approx(expected, abs=1e-14)


def test_fourier_rejects_bad_shapes():
    with pytest.raises(TrajectoryError, match="q0"):
        FourierTrajectory(("a", "b"), 1.0, [0.0], np.zeros((2, 3)), np.zeros((2, 3)))
    with pytest.raises(TrajectoryError, match="wf"):
        FourierTrajectory(("a",), -1.0, [0.0], np.zeros((1, 3)), np.zeros((1, 3)))


def test_limits_from_panda_config(panda, panda_limits):
    np.testing.assert_allclose(panda_limits.acceleration, PANDA_ACCELERATION)
    np.testing.assert_allclose(panda_limits.velocity, 0.9 * panda.velocity_limits)
    np.testing.assert_allclose(panda_limits.position, panda.position_limits + [0.05, -0.05])
    assert panda_limits.effort is None
    override = limits_from_model(panda, {"position": {"panda_joint2": [-1.0, 1.0]}, "margins": {"position": 0.0},
                                         "velocity": 1.0, "torque_limits": True})
    np.testing.assert_allclose(override.position[1], [-1.0, 1.0])
    np.testing.assert_allclose(override.velocity, 0.9)
    np.testing.assert_allclose(override.acceleration, 5.0)  # the conservative default
    np.testing.assert_allclose(override.effort, 0.8 * panda.effort_limits)
    with pytest.raises(ConfigError, match="panda_joint9"):
        limits_from_model(panda, {"acceleration": {"panda_joint9": 3.0}})
    with pytest.raises(ConfigError, match="velocity must be in"):
        limits_from_model(panda, {"margins": {"velocity": 1.5}})
    subset = load_model(urdf=robot_file("panda", "urdf"), joints=["panda_joint2", "panda_joint4"])
    sub_limits = limits_from_model(subset, config_section(robot_file("panda", "config"), "excitation"))
    np.testing.assert_allclose(sub_limits.acceleration, [7.5, 12.5])


def test_check_trajectory_limits_margins_and_violations(panda, panda_limits):
    traj = _trajectory(panda_limits, panda.joints)
    margins = check_trajectory_limits(traj, panda_limits)
    q, dq, ddq = traj.evaluate(np.linspace(0, traj.period, 10001))
    assert margins["velocity"] == pytest.approx(np.min(1 - np.abs(dq).max(axis=0) / panda_limits.velocity), abs=1e-4)
    assert margins["tightest"].split(" of ")[1] in panda.joints
    assert 0 < margins["position"] < 1
    fast = traj.scaled(40.0)
    with pytest.raises(TrajectoryError, match=r"joint panda_joint\d: (velocity|acceleration|position) .* at t = "):
        check_trajectory_limits(fast, panda_limits)
    # an excess of 0.01 % of the limit is found
    tight = ExcitationLimits(panda_limits.position, panda_limits.velocity,
                             np.abs(traj.evaluate(np.linspace(0, traj.period, 20001))[2]).max(axis=0) * 0.9999)
    with pytest.raises(TrajectoryError, match="acceleration"):
        check_trajectory_limits(traj, tight, rate_hz=1000.0)


def test_file_round_trip(tmp_path, panda, panda_limits):
    traj = _trajectory(panda_limits, panda.joints, seed=3)
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
    traj = _trajectory(panda_limits, panda.joints, seed=4)
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


def test_execution_profile_is_continuous_at_rest_and_within_limits(panda, panda_limits):
    traj = _trajectory(panda_limits, panda.joints, seed=5, amplitude=0.3)
    q_start = traj.q0 + np.linspace(-0.4, 0.4, 7)
    profile = build_execution_profile(traj, q_start, cycles=2, limits=panda_limits)
    assert profile.t_excitation_end - profile.t_excitation_start == pytest.approx(2 * traj.period)
    assert profile.duration > profile.t_excitation_end
    t, q, dq, ddq = profile.sample_at_rate(1000.0)
    assert t[0] == 0.0 and t[-1] == pytest.approx(profile.duration)
    np.testing.assert_allclose(q[0], q_start)
    np.testing.assert_allclose(q[-1], traj.evaluate(np.zeros(1))[0][0], atol=1e-12)
    for x in (dq, ddq):
        np.testing.assert_allclose(x[[0, -1]], 0.0, atol=1e-12)
    # continuity: no jump at the phase joints bigger than a smooth 1 kHz step
    for x, bound in ((q, panda_limits.velocity), (dq, panda_limits.acceleration), (ddq, None)):
        steps = np.abs(np.diff(x, axis=0))
        limit = 1.01e-3 * bound if bound is not None else 1e-3 * 500.0  # jerk well below 500 rad/s^3
        assert np.all(steps <= limit)
    for phase_joint in (profile.t_excitation_start, profile.t_excitation_end):
        for x in profile.sample(np.array([phase_joint - 1e-9, phase_joint + 1e-9])):
            np.testing.assert_allclose(x[0], x[1], atol=1e-6)
    margins = check_trajectory_limits(profile, panda_limits)
    assert margins["velocity"] > 0 and margins["acceleration"] > 0
    # the approach is as slow as the limits require: half the limits at most
    approach = t < profile.t_excitation_start
    assert np.all(np.abs(dq[approach]) <= 0.5 * panda_limits.velocity * (1 + 1e-9))
    assert np.all(np.abs(ddq[approach]) <= 0.5 * panda_limits.acceleration * (1 + 1e-9))
    assert profile.progress(0.0) == 0.0 and profile.progress(profile.duration + 5) == 1.0
    assert profile.progress(profile.duration / 2) == pytest.approx(0.5)
    q_before, dq_before, _ = profile.sample(np.array([-1.0]))
    np.testing.assert_allclose(q_before[0], q_start)
    np.testing.assert_allclose(dq_before[0], 0.0)


def test_execution_profile_rejects_bad_input(panda, panda_limits):
    traj = _trajectory(panda_limits, panda.joints, seed=6)
    with pytest.raises(TrajectoryError, match="start position needs 7"):
        build_execution_profile(traj, np.zeros(3))
    with pytest.raises(TrajectoryError, match="cycles"):
        build_execution_profile(traj, traj.q0, cycles=0)
    moving = FourierTrajectory(traj.joints, traj.wf, traj.q0, traj.a + 0.01, traj.b)
    with pytest.raises(TrajectoryError, match="does not start at rest"):
        build_execution_profile(moving, traj.q0)
    profile = build_execution_profile(traj, traj.evaluate(np.zeros(1))[0][0])  # already there, no limits
    assert profile.t_excitation_start == pytest.approx(1.0)  # the minimum approach


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
        assert record.condition_number <= 60.0
        assert excitation_condition_number(model, record.trajectory) == pytest.approx(record.condition_number,
                                                                                       rel=1e-9)
        shipped[purpose] = record.trajectory
    assert shipped["identification"].wf != shipped["validation"].wf
