"""What the robot runs: a quintic approach within half the limits, the excitation's periods, a hold at rest;
continuous in position, velocity and acceleration; bad input refused."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.errors import TrajectoryError
from dynid_ros.excitation import FourierTrajectory, check_trajectory_limits
from dynid_ros.execution.execution_profile import MIN_APPROACH_S, approach_duration, build_execution_profile

from support import excitation_cases
from support.excitation_cases import panda_model, trajectory_at_rest


@pytest.fixture(scope="module")
def panda():
    return panda_model()


@pytest.fixture(scope="module", name="panda_limits")
def shipped_panda_limits():
    return excitation_cases.panda_limits()


def test_execution_profile_is_continuous_at_rest_and_within_limits(panda, panda_limits):
    traj = trajectory_at_rest(panda_limits, panda.joints, seed=5, amplitude=0.3)
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
    traj = trajectory_at_rest(panda_limits, panda.joints, seed=6)
    with pytest.raises(TrajectoryError, match="start position needs 7"):
        build_execution_profile(traj, np.zeros(3))
    with pytest.raises(TrajectoryError, match="cycles"):
        build_execution_profile(traj, traj.q0, cycles=0)
    moving = FourierTrajectory(traj.joints, traj.wf, traj.q0, traj.a + 0.01, traj.b)
    with pytest.raises(TrajectoryError, match="does not start at rest"):
        build_execution_profile(moving, traj.q0)
    profile = build_execution_profile(traj, traj.evaluate(np.zeros(1))[0][0])  # already there, no limits
    assert profile.t_excitation_start == pytest.approx(1.0)  # the minimum approach


def test_approach_duration_is_the_slowest_of_the_quintic_bounds(panda_limits):
    delta = np.zeros(7)
    delta[2] = 1.2
    v, a = 0.5 * panda_limits.velocity[2], 0.5 * panda_limits.acceleration[2]
    expected = max(1.0, 1.875 * 1.2 / v, np.sqrt(10 / np.sqrt(3) * 1.2 / a))  # the quintic's peaks
    assert approach_duration(delta, panda_limits) == pytest.approx(expected, rel=1e-12)
    assert approach_duration(np.full(7, 1e-3), panda_limits) == MIN_APPROACH_S
    assert approach_duration(np.array([2.0]), None) == pytest.approx(max(1.875 * 2.0 / 0.5, np.sqrt(
        10 / np.sqrt(3) * 2.0 / 1.0)))


def test_the_approach_peaks_where_the_quintic_does(panda, panda_limits):
    traj = trajectory_at_rest(panda_limits, panda.joints, seed=10)
    q_first = traj.evaluate(np.zeros(1))[0][0]
    q_start = q_first.copy()
    q_start[1] -= 0.8
    profile = build_execution_profile(traj, q_start, limits=panda_limits)
    _, _, dq, ddq = profile.sample_at_rate(5000.0)
    approach = slice(0, int(profile.t_excitation_start * 5000))
    assert np.abs(dq[approach, 1]).max() == pytest.approx(1.875 * 0.8 / profile.approach_s, rel=1e-4)
    assert np.abs(ddq[approach, 1]).max() == pytest.approx(10 / np.sqrt(3) * 0.8 / profile.approach_s ** 2, rel=1e-3)
    assert np.abs(dq[approach, 1]).max() <= 0.5 * panda_limits.velocity[1] * (1 + 1e-9)


def test_the_hold_is_at_rest_at_the_excitations_start(panda, panda_limits):
    traj = trajectory_at_rest(panda_limits, panda.joints, seed=11)
    profile = build_execution_profile(traj, traj.q0, cycles=3)
    assert profile.joints == traj.joints and profile.cycles == 3
    assert profile.duration == pytest.approx(profile.t_excitation_end + 0.5)
    hold = np.linspace(profile.t_excitation_end, profile.duration + 1.0, 7)
    q, dq, ddq = profile.sample(hold)
    np.testing.assert_allclose(q, np.tile(traj.evaluate(np.zeros(1))[0][0], (7, 1)), atol=1e-12)
    assert not dq.any() and not ddq.any()


def test_more_bad_input(panda, panda_limits):
    traj = trajectory_at_rest(panda_limits, panda.joints, seed=12)
    with pytest.raises(TrajectoryError, match="cycles must be a positive integer, got 1.5"):
        build_execution_profile(traj, traj.q0, cycles=1.5)
    with pytest.raises(TrajectoryError, match="limits have 2 joints, the trajectory 7"):
        build_execution_profile(traj, traj.q0, limits=excitation_cases.ExcitationLimits(
            [[-1, 1], [-1, 1]], [1, 1], [1, 1]))
    with pytest.raises(TrajectoryError, match="start position needs 7 finite values"):
        build_execution_profile(traj, np.full(7, np.nan))
    with pytest.raises(TrajectoryError, match="sampling rate must be positive"):
        build_execution_profile(traj, traj.q0).sample_at_rate(0.0)
