"""Finite Fourier series trajectories (Sousa & Cortesão 2014 eq. 78-80): analytic derivatives, periodicity, the
linear maps the optimizer uses, the start at rest, bad shapes."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.errors import TrajectoryError
from dynid_ros.excitation import FourierTrajectory

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
