"""Robustness to model error: a joint whose residual is a function of its own position or velocity
(a torque the model lacks) counts as few independent samples in FBPE's data weight; a white residual keeps its weight.
"""

from __future__ import annotations

import numpy as np

from dynid_ros.dynamics.regressor import regressor
from dynid_ros.estimation import estimators
from dynid_ros.estimation.model_error import joint_inflation, sweeps
from dynid_ros.estimation.residual_model import integrated_autocorrelation_time

from support.synthetic import fourier_trajectory, synthetic


def _motion(n: int, cycles: int) -> tuple[np.ndarray, np.ndarray]:
    t = np.linspace(0.0, cycles * 2 * np.pi, n, endpoint=False)
    return np.column_stack([np.sin(t), np.sin(2 * t + 1)]), np.column_stack([np.cos(t), 2 * np.cos(2 * t + 1)])


def test_sweeps_count_the_passes_through_the_range():
    q, _ = _motion(4000, 5)
    assert np.isclose(sweeps(q[:, 0]), 10.0, rtol=0.01)  # 5 periods: 10 one-way sweeps
    assert sweeps(np.zeros(10)) == 1.0


def test_white_residual_keeps_its_weight_and_a_spring_counts_as_its_sweeps():
    rng = np.random.default_rng(0)
    q, dq = _motion(4000, 5)
    white = rng.standard_normal((4000, 2))
    spring = np.column_stack([white[:, 0], 3.0 * q[:, 1] + 0.3 * white[:, 1]])
    clean = joint_inflation(white, q, dq)
    assert np.all(clean.share == 0) and clean.explained_by == [None, None]
    assert np.allclose(clean.factor, clean.tau) and np.all(clean.factor < 1.5)
    found = joint_inflation(spring, q, dq)
    assert found.explained_by == [None, "position"] and found.share[1] > 0.95
    assert np.isclose(found.sweeps[1], 20.0, rtol=0.01)  # sin(2 t): 10 periods
    # the structured part counts as 20 samples, not 4000 / tau: the weight drops by about 4000 / 20 / tau
    assert found.factor[1] > 0.9 * 4000 / 20 and found.factor[0] == clean.factor[0]
    assert found.reduced(["a", "b"])[0].startswith("joint b: ")


def test_rows_left_out_are_no_observations_of_the_structure():
    rng = np.random.default_rng(1)
    q, dq = _motion(2000, 4)
    e = np.column_stack([rng.standard_normal(2000), rng.standard_normal(2000)])
    present = np.ones((2000, 2), dtype=bool)
    present[::2, 1] = False
    e[~present] = 1e3 * q[~present]  # garbage where there is no observation
    found = joint_inflation(e, q, dq, present)
    assert found.explained_by == [None, None]
    assert np.isclose(found.tau[1], integrated_autocorrelation_time(e[:, 1], present[:, 1]))


def test_fbpe_per_joint_inflation_equal_to_the_scalar_gives_the_same_estimate():
    """The per-joint factors generalize the single inflation: all equal to it, the MAP estimate and its posterior are
    the same; a joint counted 1000 times less leaves its parameters to the other joints and the prior."""
    model, layout, base, truth, _, _ = synthetic("panda")
    rng = np.random.default_rng(3)
    q, dq, ddq = fourier_trajectory(7, 400, rng)
    w = regressor(model, layout, q, dq, ddq)
    w_b = base.project(w)
    noise = np.convolve(rng.normal(0.0, 0.3, w.shape[0] + 20), np.ones(21) / 21, mode="valid")
    tau = w @ truth + noise
    scalar = estimators.fbpe(w_b, tau, base.K, layout, prior=truth)
    per_joint = estimators.fbpe(w_b, tau, base.K, layout, prior=truth, joint_inflation=np.full(7, scalar.inflation))
    assert np.isclose(per_joint.inflation, scalar.inflation)
    assert np.allclose(per_joint.delta, scalar.delta, rtol=1e-4, atol=1e-6 * np.abs(truth).max())
    assert np.allclose(per_joint.beta_std, scalar.beta_std, rtol=1e-6)
    factors = np.full(7, scalar.inflation)
    factors[0] *= 1e3
    deflated = estimators.fbpe(w_b, tau, base.K, layout, prior=truth, joint_inflation=factors)
    fv1 = layout.joint_index(0, "fv")  # only joint 1 sees its viscous friction: wider posterior
    assert deflated.delta_std[fv1] > 5 * scalar.delta_std[fv1]


def test_a_coupled_joint_counts_its_coupled_share_as_structure():
    """A residual of joint a that is joint b's friction and rotor torque (and b's that is a's: a coupled wrist read in
    joint coordinates) is structure with b's sweeps; without the accelerations the coupling is not considered."""
    rng = np.random.default_rng(2)
    q, dq = _motion(4000, 5)
    ddq = np.gradient(dq, axis=0) * 4000 / (5 * 2 * np.pi)
    noise = 0.2 * rng.standard_normal((4000, 2))
    residual = np.column_stack([0.5 * np.sign(dq[:, 1]) + 0.3 * ddq[:, 1], 0.5 * np.sign(dq[:, 0]) + 0.3 * ddq[:, 0]])
    found = joint_inflation(residual + noise, q, dq, ddq=ddq, names=["a", "b"])
    assert found.explained_by == ["coupling with b", "coupling with a"], found
    assert np.all(found.share > 0.5) and np.all(found.factor > 2 * found.tau)
    assert [line.split(":")[0] for line in found.reduced(["a", "b"])] == ["joint a", "joint b"]
    assert "coupling" not in str(joint_inflation(residual + noise, q, dq).explained_by)
