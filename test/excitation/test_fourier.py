"""Finite Fourier series trajectories (Sousa & Cortesão 2014 eq. 78-80): analytic derivatives, periodicity, the
linear maps the optimizer uses, the start at rest, bad shapes."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.errors import TrajectoryError
from dynid_ros.excitation import FourierTrajectory
from dynid_ros.excitation.fourier import REST_TOLERANCE, basis_matrices, rest_residual

from support.excitation_cases import at_rest


def test_fourier_derivatives_are_analytic_and_periodic():
    a, b = at_rest(3, 4, seed=1, amplitude=0.5)
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


def test_basis_matrices_are_the_series_as_linear_maps():
    a, b = at_rest(2, 3, seed=7, amplitude=0.4)
    a[1, 0] += 0.3  # a general series
    traj = FourierTrajectory(("j1", "j2"), 1.3, [0.5, -0.5], a, b)
    t = np.linspace(0.0, 7.0, 301)
    q, dq, ddq = traj.evaluate(t)
    bq, bdq, bddq = basis_matrices(t, traj.wf, traj.harmonics)
    for k in range(2):
        coefficients = np.concatenate([a[k], b[k]])
        np.testing.assert_allclose(bq @ coefficients, q[:, k] - traj.q0[k], atol=1e-13)
        np.testing.assert_allclose(bdq @ coefficients, dq[:, k], atol=1e-13)
        np.testing.assert_allclose(bddq @ coefficients, ddq[:, k], atol=1e-12)


def test_rest_at_t0_is_the_two_linear_conditions():
    a, b = at_rest(3, 4, seed=2, amplitude=0.5)
    traj = FourierTrajectory(("a", "b", "c"), 0.9, np.zeros(3), a, b)
    velocity, acceleration = rest_residual(traj)
    assert np.abs(velocity).max() < 1e-15 and np.abs(acceleration).max() < 1e-14
    moved = FourierTrajectory(traj.joints, 0.9, np.zeros(3), a + [[0.1], [0.0], [0.0]], b + [[0.0], [0.2], [0.0]])
    velocity, acceleration = rest_residual(moved)
    np.testing.assert_allclose(velocity, [4 * 0.1, 0.0, 0.0], atol=1e-15)  # q'(0) = sum_l a_l
    np.testing.assert_allclose(acceleration, [0.0, 0.9 * 0.2 * (1 + 2 + 3 + 4), 0.0], atol=1e-14)  # wf sum l b_l
    assert REST_TOLERANCE <= 1e-6


def test_scaled_scales_the_motion_about_q0():
    a, b = at_rest(2, 3, seed=4, amplitude=0.3)
    traj = FourierTrajectory(("j1", "j2"), 0.5, [1.0, -2.0], a, b)
    t = np.linspace(0.0, traj.period, 101)
    half = traj.scaled(0.5)
    assert half.wf == traj.wf and half.joints == traj.joints and half.n_dof == 2
    for full_value, half_value, offset in zip(traj.evaluate(t), half.evaluate(t), (traj.q0, 0.0, 0.0)):
        np.testing.assert_allclose(half_value - offset, 0.5 * (full_value - offset), atol=1e-14)


def test_coefficients_must_be_finite_and_of_one_shape():
    with pytest.raises(TrajectoryError, match="a and b must both be"):
        FourierTrajectory(("a",), 1.0, [0.0], np.zeros((1, 3)), np.zeros((1, 2)))
    with pytest.raises(TrajectoryError, match="a and b must both be"):
        FourierTrajectory(("a",), 1.0, [0.0], np.zeros((1, 0)), np.zeros((1, 0)))
    with pytest.raises(TrajectoryError, match="finite"):
        FourierTrajectory(("a",), 1.0, [np.nan], np.zeros((1, 3)), np.zeros((1, 3)))
    with pytest.raises(TrajectoryError, match="wf"):
        FourierTrajectory(("a",), float("inf"), [0.0], np.zeros((1, 3)), np.zeros((1, 3)))
