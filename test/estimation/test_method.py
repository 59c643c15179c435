"""The estimator dispatch (``--method``): each :class:`Method` run by :func:`estimate` on a real UR5's base
regression (example-robot-data), checked against numpy's least squares and the physical-consistency test."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.dynamics import feasibility
from dynid_ros.dynamics.base_parameters import compute_base_parameters
from dynid_ros.dynamics.bounds import Bounds
from dynid_ros.dynamics.feasibility import SolverStatus
from dynid_ros.dynamics.regressor import regressor
from dynid_ros.errors import EstimationError
from dynid_ros.estimation.method import FEASIBLE_METHODS, METHODS, Estimate, EstimatorSettings, Method, estimate
from dynid_ros.robot.model import load_model, nominal_parameters

from support.serial_arms import FLEET_LINKS, serial_arm
from support.synthetic import fourier_trajectory, random_feasible_delta, synthetic


def _data(noise: float = 0.02, seed: int = 0):
    model, layout, base, truth, w_b, w = synthetic("ur5")
    tau = w @ truth + np.random.default_rng(seed).normal(0.0, noise, w.shape[0])
    return model, layout, base, truth, w_b, tau


def test_method_names_are_the_documented_choices():
    assert METHODS == ("ols", "wls", "fbpe", "bpfc", "pbpr")
    assert [Method(name) for name in METHODS] == list(Method)
    assert Method.FBPE == "fbpe" and f"{Method.BPFC.value}" == "bpfc"  # a str enum: compares with the flag value
    assert set(FEASIBLE_METHODS) == {Method.FBPE, Method.BPFC}
    with pytest.raises(ValueError):
        Method("lasso")


def test_ols_is_numpy_least_squares_with_standard_parameters_behind_it():
    model, layout, base, _, w_b, tau = _data()
    nominal = nominal_parameters(model, layout)
    result = estimate(w_b, tau, base, EstimatorSettings(Method.OLS, nominal))
    assert isinstance(result, Estimate)
    np.testing.assert_allclose(result.beta, np.linalg.lstsq(w_b, tau, rcond=None)[0], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(base.K @ result.delta, result.beta, rtol=1e-7, atol=1e-9)  # delta realizes beta
    assert result.status == SolverStatus.OPTIMAL and result.delta_std is None
    assert result.beta_std.shape == result.beta.shape and np.all(result.beta_std > 0)
    assert result.inflation >= 1.0 and result.capped_data_weight is None


def test_rows_leave_samples_out_of_the_fit():
    model, layout, base, _, w_b, tau = _data()
    rows = np.ones(tau.size, dtype=bool)
    rows[: tau.size // 3] = False  # the first third of the samples, every joint
    result = estimate(w_b, tau, base, EstimatorSettings(Method.OLS, nominal_parameters(model, layout)), rows=rows)
    np.testing.assert_allclose(result.beta, np.linalg.lstsq(w_b[rows], tau[rows], rcond=None)[0], rtol=1e-7,
                               atol=1e-9)


def test_a_fixed_base_parameter_keeps_its_value_and_the_rest_fit_around_it():
    model, layout, base, truth, w_b, tau = _data()
    value = 1.5 * (base.K @ truth)[0]
    result = estimate(w_b, tau, base, EstimatorSettings(Method.OLS, nominal_parameters(model, layout),
                                                        fixed={0: value}))
    assert result.beta[0] == pytest.approx(value, rel=1e-12)
    rest = np.linalg.lstsq(w_b[:, 1:], tau - w_b[:, 0] * value, rcond=None)[0]
    np.testing.assert_allclose(result.beta[1:], rest, rtol=1e-7, atol=1e-9)


def test_wls_weights_the_noisy_joint_down():
    """Joint 6 twenty times noisier than the others: WLS, weighting each joint by its residual, lands closer to
    the truth than OLS."""
    model, layout, base, truth, w_b, w = (*synthetic("ur5")[:5], synthetic("ur5")[5])
    sigma = np.array([0.01, 0.01, 0.01, 0.01, 0.01, 0.2])
    noise = (np.random.default_rng(4).normal(size=(w.shape[0] // 6, 6)) * sigma).reshape(-1)
    tau = w @ truth + noise
    nominal = nominal_parameters(model, layout)
    ols, wls = (estimate(w_b, tau, base, EstimatorSettings(m, nominal)) for m in (Method.OLS, Method.WLS))
    beta = base.K @ truth
    assert np.linalg.norm(wls.beta - beta) < 0.7 * np.linalg.norm(ols.beta - beta)
    np.testing.assert_allclose(base.K @ wls.delta, wls.beta, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("method", [Method.FBPE, Method.BPFC])
def test_feasible_methods_return_physically_consistent_parameters(method):
    model, layout, base, truth, w_b, tau = _data()
    result = estimate(w_b, tau, base, EstimatorSettings(method, nominal_parameters(model, layout)))
    assert result.status == SolverStatus.OPTIMAL
    assert feasibility.is_feasible(result.delta, layout, "full")
    np.testing.assert_allclose(base.K @ result.delta, result.beta, rtol=1e-6, atol=1e-6 * np.abs(result.beta).max())
    beta = base.K @ truth  # the truth is feasible and the noise small: close to it
    assert np.linalg.norm(result.beta - beta) / np.linalg.norm(beta) < 0.02


def test_bpfc_without_a_feasible_point_is_an_error_naming_the_method():
    model, layout, base, _, w_b, tau = _data()
    impossible = Bounds(total_mass=(-2.0, -1.0))  # negative total mass: no physical robot
    settings = EstimatorSettings(Method.BPFC, nominal_parameters(model, layout), bounds=impossible)
    with pytest.raises(EstimationError, match="bpfc: no parameters satisfy the full consistency"):
        estimate(w_b, tau, base, settings)


def test_fbpe_honours_the_bounds():
    model, layout, base, truth, w_b, tau = _data()
    total = float(np.sum(truth[layout.indices("m")]))
    bounds = Bounds(total_mass=(1.2 * total, 1.3 * total))  # away from the truth
    result = estimate(w_b, tau, base, EstimatorSettings(Method.FBPE, nominal_parameters(model, layout),
                                                        bounds=bounds))
    assert not bounds.violations(result.delta, layout, tol=1e-6)
    assert 1.2 * total * (1 - 1e-6) <= float(np.sum(result.delta[layout.indices("m")])) <= 1.3 * total * (1 + 1e-6)
    assert feasibility.is_feasible(result.delta, layout, "full")


def test_pbpr_returns_consistent_parameters_that_fit_the_data(tmp_path):
    """Penalty-based retrieval (Gaz et al. 2019 Alg. 1) from the least-squares estimate, on a three-joint arm: its
    standard parameters pass the consistency test and predict the torques far better than the URDF's, to a few
    times the noise (one start of a nonconvex search: not exactly the least-squares minimum)."""
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(serial_arm("fleet_arm", FLEET_LINKS, [(-2.5, 2.5, 60, 2.5)] * 3))
    model = load_model(urdf=urdf)
    layout = model.layout_for(("viscous", "coulomb"), True)
    base = compute_base_parameters(model, layout)
    rng = np.random.default_rng(5)
    truth = random_feasible_delta(layout, rng)
    w = regressor(model, layout, *fourier_trajectory(3, 800, rng))
    tau = w @ truth + rng.normal(0.0, 0.01, w.shape[0])
    w_b = base.project(w)
    nominal = nominal_parameters(model, layout)
    ols = estimate(w_b, tau, base, EstimatorSettings(Method.OLS, nominal))
    result = estimate(w_b, tau, base, EstimatorSettings(Method.PBPR, nominal, pbpr={"starts": 1, "seed": 0}))
    assert feasibility.is_feasible(result.delta, layout, "full", tol=1e-9)
    np.testing.assert_allclose(base.K @ result.delta, result.beta, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(result.beta_std, ols.beta_std)  # the least-squares fit's deviations
    noise_share = np.linalg.norm(tau - w @ truth) / np.linalg.norm(tau)
    error = np.linalg.norm(tau - w_b @ result.beta) / np.linalg.norm(tau)
    assert error < 5 * noise_share
    assert error < 0.05 * np.linalg.norm(tau - w @ nominal) / np.linalg.norm(tau)
