"""The relative error of a torque prediction (Sousa & Cortesão 2014 eq. 84): over all joints and per joint, against
a hand computation, with the zero-reference cases (0 when both are zero, inf when only the reference is)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dynid_ros.estimation.fit_quality import relative_error, relative_norm

from support.synthetic import synthetic


def test_relative_norm_of_a_hand_computed_case():
    # ||(3, 4)|| = 5, ||(6, 8)|| = 10
    assert relative_norm(np.array([3.0, 4.0]), np.array([6.0, 8.0])) == pytest.approx(0.5, rel=1e-15)
    # Frobenius over a matrix: sqrt(1 + 4 + 4 + 16) = 5 against sqrt(4 * 25) = 10
    assert relative_norm(np.array([[1.0, 2.0], [2.0, 4.0]]), np.full((2, 2), 5.0)) == pytest.approx(0.5)


def test_relative_norm_without_a_floor():
    assert relative_norm(np.zeros(4), np.zeros(4)) == 0.0
    assert relative_norm(np.array([0.0, 1e-9]), np.zeros(2)) == math.inf
    tiny = np.array([1e-100, 0.0])  # no floor: a tiny reference is a reference (its square still a float)
    assert relative_norm(tiny, tiny) == pytest.approx(1.0)
    assert relative_norm(np.zeros(2), tiny) == 0.0


def test_relative_error_over_all_and_per_joint_matches_a_hand_computation():
    tau = np.array([[1.0, 0.0, 2.0], [-1.0, 0.0, 2.0], [1.0, 0.0, -2.0], [-1.0, 0.0, 2.0]])
    tau_hat = tau.copy()
    tau_hat[:, 0] += 0.1   # joint 0: ||diff|| = 0.2, ||tau|| = 2 -> 0.1
    tau_hat[2, 2] = -1.0   # joint 2: ||diff|| = 1, ||tau|| = 4 -> 0.25
    total, per_joint = relative_error(tau, tau_hat)
    assert total == pytest.approx(math.sqrt(4 * 0.01 + 1.0) / math.sqrt(4 + 16), rel=1e-14)
    assert per_joint == pytest.approx([0.1, 0.0, 0.25], rel=1e-14)  # joint 1 carries nothing and matches: 0
    assert isinstance(total, float) and all(isinstance(e, float) for e in per_joint)


def test_a_joint_without_torque_but_with_a_prediction_has_infinite_error():
    tau = np.array([[1.0, 0.0], [2.0, 0.0]])
    total, per_joint = relative_error(tau, tau + np.array([0.0, 0.5]))
    assert per_joint[0] == 0.0 and per_joint[1] == math.inf
    assert total == pytest.approx(math.sqrt(0.5) / math.sqrt(5.0))


def test_relative_error_of_a_robot_prediction_against_numpy():
    """The regressor of a real UR5 (example-robot-data) times the truth, disturbed by 1 % noise: the error is the
    noise's share computed independently, and scaling both torques leaves it unchanged."""
    _, _, _, truth, _, w = synthetic("ur5")
    tau = (w @ truth).reshape(-1, 6)
    noise = np.random.default_rng(0).normal(size=tau.shape) * 0.01 * tau.std(axis=0)
    total, per_joint = relative_error(tau, tau + noise)
    assert total == pytest.approx(np.sqrt((noise ** 2).sum() / (tau ** 2).sum()), rel=1e-12)
    np.testing.assert_allclose(per_joint, np.sqrt((noise ** 2).sum(0) / (tau ** 2).sum(0)), rtol=1e-12)
    scaled_total, scaled_joints = relative_error(7.5 * tau, 7.5 * (tau + noise))
    assert scaled_total == pytest.approx(total, rel=1e-12)
    np.testing.assert_allclose(scaled_joints, per_joint, rtol=1e-12)
