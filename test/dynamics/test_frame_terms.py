"""Per-frame terms of a frames robot (Wang et al. 2019 eq. 12-20) projected onto the motors: friction, rotor inertia,
spring and known torque through the frame's rate, and their derivatives against finite differences."""

from __future__ import annotations

import numpy as np

from dynid_ros.dynamics.frame_terms import known_torque, term_columns, term_gradient
from dynid_ros.robot.frames import load_frames_robot

from support.random_states import random_states


def test_per_frame_terms_act_through_the_frame_rate():
    """Friction, rotor inertia and a torsional spring of a frame at ``w = 2 q1 - q2`` reach the motors as
    ``c (Fc sign(w) + Fv w + Fo)``, ``c Ia (c . q'')``, ``c K (theta - rest)``; a known torque likewise."""
    config = {"robot": {"joints": ["q1", "q2"], "frames": [
        {"name": "body", "motion": {"q1": 1.0}},
        {"name": "drive", "motion": {"q1": 2.0, "q2": -1.0}, "inertia": False, "friction": True,
         "rotor_inertia": True, "spring": {"kind": "torsional", "rest": 0.1, "bounds": [0, 5]},
         "known_torque": [0.5, 0.2]}]}}
    robot = load_frames_robot(config)
    q, dq, ddq = random_states(2, samples=4)
    terms = term_columns(robot, q, dq, ddq)
    assert terms.names == ["drive.Fc", "drive.Fv", "drive.Fo", "drive.Ia", "drive.K"]
    assert terms.high[-1] == 5 and terms.low[0] == 0 and np.isinf(terms.low[2])
    c = np.array([2.0, -1.0])
    values = np.array([0.3, 0.2, -0.1, 0.05, 1.5])
    w, theta = dq @ c, q @ c
    expected = np.outer(0.3 * np.sign(w) + 0.2 * w - 0.1 + 0.05 * (ddq @ c) + 1.5 * (theta - 0.1), c)
    np.testing.assert_allclose(terms.columns @ values, expected, atol=1e-12)
    np.testing.assert_allclose(known_torque(robot, q), np.outer(0.5 * theta + 0.2, c), atol=1e-12)


def _two_motor_robot():
    return load_frames_robot({"robot": {"joints": ["q1", "q2"], "frames": [
        {"name": "body", "motion": {"q1": 1.0}, "friction": True},
        {"name": "drive", "motion": {"q1": 2.0, "q2": -1.0}, "inertia": False, "friction": True,
         "rotor_inertia": True, "spring": {"kind": "torsional", "rest": 0.1, "bounds": [0, 5]}}]}})


def test_term_gradient_matches_finite_differences():
    robot = _two_motor_robot()
    q, dq, ddq = random_states(2, samples=5, seed=3)
    dq = np.where(np.abs(dq) < 0.3, 0.7, dq)  # away from Coulomb's step (frame rates too)
    dq[:, 1] = np.where(np.abs(2 * dq[:, 0] - dq[:, 1]) < 0.3, dq[:, 1] + 1.0, dq[:, 1])
    terms = term_columns(robot, q, dq, ddq)
    values = np.random.default_rng(4).uniform(0.1, 1.0, len(terms.names))
    covector = np.random.default_rng(5).normal(size=q.shape)

    def objective(x: np.ndarray, which: int) -> np.ndarray:
        args = [q, dq, ddq]
        args[which] = x
        return np.sum(covector * (term_columns(robot, *args).columns @ values), axis=1)

    gradients = term_gradient(robot, values, covector, q, dq, ddq)
    h = 1e-6
    for which, analytic in enumerate(gradients):
        base = [q, dq, ddq][which]
        for j in range(2):
            step = np.zeros_like(base)
            step[:, j] = h
            numeric = (objective(base + step, which) - objective(base - step, which)) / (2 * h)
            np.testing.assert_allclose(analytic[:, j], numeric, rtol=1e-5, atol=1e-7)


def test_a_robot_without_terms_has_no_columns():
    robot = load_frames_robot({"robot": {"joints": ["q1"], "frames": [{"name": "arm", "motion": {"q1": 1.0}}]}})
    q, dq, ddq = random_states(1, samples=3)
    terms = term_columns(robot, q, dq, ddq)
    assert terms.columns.shape == (3, 1, 0) and terms.names == [] and terms.low.size == 0
    assert not np.any(known_torque(robot, q))
