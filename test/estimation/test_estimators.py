"""OLS, WLS and FBPE (Sousa & Cortesão 2014 section 4.4, eq. 64-75, 81-83) on synthetic and real data."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.dynamics import feasibility
from dynid_ros.dynamics.base_parameters import compute_base_parameters
from dynid_ros.dynamics.polish import polish
from dynid_ros.dynamics.regressor import regressor
from dynid_ros.errors import ConfigError, DataError, EstimationError
from dynid_ros.estimation import estimators
from dynid_ros.estimation.prior import PriorGroups, PriorTolerances, cad_prior
from dynid_ros.robot.model import load_model, nominal_parameters
from dynid_ros.robot.parameters import ParameterLayout, link_parameters

from support.correlated_noise import ar1
from support.robots import PANDA_ARM_JOINTS, PANDA_ERD, example_robot_urdf
from support.synthetic import fourier_trajectory, random_feasible_delta, synthetic


def test_ols_standard_deviations_match_the_spread_of_estimates():
    _, layout, base, truth, w_b, _ = synthetic("ur5")
    rng = np.random.default_rng(0)
    exact = w_b @ (base.K @ truth)
    z = []
    for _ in range(40):
        fit = estimators.ols(w_b, exact + rng.normal(0.0, 0.02, exact.size), layout.n_dof)
        z.append((fit.beta - base.K @ truth) / fit.std)
    z = np.array(z)
    assert 0.8 < np.std(z) < 1.2  # eq. 81-82: std is the spread of the estimate
    assert np.allclose(fit.rel_std, 100 * fit.std / np.abs(fit.beta))
    assert np.median(fit.rel_std) < 2.0  # a well-excited trajectory
    assert np.allclose(fit.residual_std, 0.02, rtol=0.1)
    assert np.all(fit.weights == 1.0)


def test_wls_weights_each_joint_by_its_noise():
    _, layout, base, truth, w_b, _ = synthetic("ur5")
    sigma = np.array([0.01, 0.02, 0.05, 0.1, 0.2, 0.4])
    rng = np.random.default_rng(1)
    noise = (rng.normal(size=(w_b.shape[0] // 6, 6)) * sigma).reshape(-1)
    tau = w_b @ (base.K @ truth) + noise
    ols, wls = estimators.ols(w_b, tau, 6), estimators.wls(w_b, tau, 6)
    per_joint = wls.weights[:6]
    assert np.allclose(per_joint / per_joint[0], sigma[0] / sigma, rtol=0.15)
    assert np.allclose(wls.weights.reshape(-1, 6), per_joint)
    assert np.allclose(wls.residual_std, sigma, rtol=0.15)
    truth_beta = base.K @ truth
    assert np.linalg.norm(wls.beta - truth_beta) < np.linalg.norm(ols.beta - truth_beta)


@pytest.mark.parametrize("robot, consistency", [("ur5", "full"), ("panda", "full"), ("panda", "physical")])
def test_fbpe_recovers_beta_from_noise_free_data(robot, consistency):
    _, layout, base, truth, w_b, w = synthetic(robot)
    tau = w @ truth
    fit = estimators.fbpe(w_b, tau, base.K, layout, consistency=consistency)
    beta = base.K @ truth
    assert fit.status == "optimal"
    assert np.linalg.norm(fit.beta - beta) / np.linalg.norm(beta) < 1e-4
    assert np.allclose(fit.beta, base.K @ fit.delta)
    assert feasibility.is_feasible(fit.delta, layout, consistency)
    assert fit.objective < 1e-4 * np.linalg.norm(tau)


def _null_space_shift(base, layout: ParameterLayout, truth: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A feasible parameter vector with the same base parameters as ``truth``: a random null-space
    shift, and heavier links 1 and 2 (their masses alone do not enter any base parameter of the Panda)."""
    assert not np.any(base.K[:, layout.indices("m")[:2]])
    size = feasibility.parameter_scales(layout, feasibility.link_scales(truth, layout))
    # the projection onto the null space is unique, unlike a basis of it (which depends on the LAPACK build)
    projector = np.eye(base.K.shape[1]) - np.linalg.pinv(base.K) @ base.K
    direction = projector @ (size * rng.normal(size=base.K.shape[1]))
    direction *= 0.1 / np.max(np.abs(direction / size))
    direction[layout.indices("m")[:2]] += [2.0, 1.5]
    shifted = truth + direction
    assert np.all(feasibility.min_eigenvalues(shifted, layout, "full") > 0)
    return shifted


def test_fbpe_prior_resolves_the_unidentifiable_part():
    _, layout, base, truth, w_b, w = synthetic("panda")
    prior = _null_space_shift(base, layout, truth, np.random.default_rng(3))
    masses = layout.indices("m")
    assert np.max(np.abs(prior[masses] - truth[masses])) > 1.0  # the data cannot tell these apart
    assert np.allclose(base.K @ prior, base.K @ truth)
    tau = w @ truth
    with_prior = estimators.fbpe(w_b, tau, base.K, layout, prior=prior)
    without = estimators.fbpe(w_b, tau, base.K, layout)
    assert with_prior.status == "optimal" and with_prior.stage_status == {"clarabel x1": "optimal"}
    assert np.max(np.abs(with_prior.delta[masses] - prior[masses])) < 1e-3
    assert np.max(np.abs(without.delta[masses] - prior[masses])) > 0.05  # arbitrary without a prior
    for fit in (with_prior, without):
        assert np.linalg.norm(fit.beta - base.K @ truth) / np.linalg.norm(base.K @ truth) < 1e-4


def test_fbpe_keeps_bounds_and_attached_parts():
    _, layout, base, truth, w_b, w = synthetic("panda")
    masses = truth[layout.indices("m")]
    box = [[-0.02, 0.02], [-0.02, 0.02], [-0.02, 0.02]]
    bounds = feasibility.Bounds.from_config({"total_mass": [0.0, 0.8 * masses.sum()],
                                             "com_box": {layout.links[3]: box}}, layout)
    attached = np.zeros(layout.n_parameters)
    attached[layout.link_slice(6)] = link_parameters(0.7, np.array([0.0, 0.0, 0.1]), np.diag([2e-3, 2e-3, 1e-3]))
    rng = np.random.default_rng(4)
    tau = w @ truth + rng.normal(0.0, 0.05, w.shape[0])
    fit = estimators.fbpe(w_b, tau, base.K, layout, bounds=bounds, attached=attached)
    assert fit.status == "optimal"
    assert bounds.violations(fit.delta, layout, tol=1e-6) == []
    assert feasibility.is_feasible(fit.delta, layout, attached=attached)
    assert fit.delta[layout.indices("m")][6] > 0.7
    ols = estimators.ols(w_b, tau, layout.n_dof)
    assert fit.objective > ols.residual_norm  # the truth violates the bounds: the fit pays for them


def test_fbpe_reports_infeasible_bounds_on_one_line():
    _, layout, base, truth, w_b, w = synthetic("ur5")
    bounds = feasibility.Bounds.from_config({"link_mass": [0.0, 1.0], "total_mass": [50.0, 60.0]}, layout)
    with pytest.raises(EstimationError) as err:
        estimators.fbpe(w_b, w @ truth, base.K, layout, bounds=bounds)
    assert "infeasible" in str(err.value) and "\n" not in str(err.value)


def test_fbpe_with_scs_on_a_small_robot(tmp_path):
    path = tmp_path / "rrr.yaml"
    path.write_text("convention: modified\njoints:\n  - {alpha: 0, a: 0, d: 0.3}\n  - {alpha: pi/2, a: 0, d: 0}\n"
                    "  - {alpha: 0, a: 0.4, d: 0}\n")
    model = load_model(dh=path)
    layout = model.layout_for(("viscous",), False)
    base = compute_base_parameters(model, layout)
    rng = np.random.default_rng(5)
    truth = random_feasible_delta(layout, rng)
    w = regressor(model, layout, *fourier_trajectory(3, 300, rng))
    tau = w @ truth + rng.normal(0.0, 0.01, w.shape[0])
    w_b = base.project(w)
    reference = estimators.fbpe(w_b, tau, base.K, layout)
    scs = estimators.fbpe(w_b, tau, base.K, layout, solver="scs")
    assert reference.status == "optimal"
    assert scs.status in ("optimal", "optimal_inaccurate")  # whichever it is, it is reported as is
    assert np.linalg.norm(scs.beta - reference.beta) < 1e-2 * np.linalg.norm(reference.beta)


def test_bad_estimator_inputs():
    _, layout, base, truth, w_b, w = synthetic("ur5")
    tau = w @ truth
    with pytest.raises(ConfigError, match="solver must be one of clarabel, scs"):
        estimators.fbpe(w_b, tau, base.K, layout, solver="cvxopt")
    with pytest.raises(DataError, match="rows but there are"):
        estimators.ols(w_b, tau[:-6], 6)
    with pytest.raises(DataError, match="need more samples"):
        estimators.ols(w_b[:12], tau[:12], 6)
    bad = tau.copy()
    bad[5] = np.nan
    with pytest.raises(DataError, match="NaN"):
        estimators.wls(w_b, bad, 6)
    with pytest.raises(ConfigError, match="prior must be"):
        estimators.fbpe(w_b, tau, base.K, layout, prior=np.ones(3))


def test_real_panda_fbpe_has_plausible_masses_and_an_ols_like_fit():
    from dynid_ros.data.signal_processing import ProcessingOptions, process
    from dynid_ros.robot.urdf_writer import attached_parameters

    from support.panda_data import panda_series

    series = panda_series()
    model = load_model(urdf=example_robot_urdf(PANDA_ERD), joints=list(PANDA_ARM_JOINTS))
    layout = model.layout_for(("viscous", "coulomb", "offset"), True)
    data = process(series.select(list(model.joints)), ProcessingOptions(decimate_hz=100.0))
    base = compute_base_parameters(model, layout)
    w = regressor(model, layout, data.q, data.dq, data.ddq)
    w_b, tau = base.project(w), data.tau.reshape(-1)
    nominal, attached = nominal_parameters(model, layout), attached_parameters(model, layout)
    bounds = feasibility.Bounds.from_config({"total_mass": [14.0, 22.0]}, layout)
    wls = estimators.wls(w_b, tau, 7)
    fit = estimators.fbpe(w_b, tau, base.K, layout, consistency="full", bounds=bounds, weights=wls.weights,
                          prior=nominal, attached=attached)
    assert fit.status == "optimal"
    assert feasibility.is_feasible(fit.delta, layout, "full", attached=attached)
    masses = fit.delta[layout.indices("m")]
    assert 14.0 <= masses.sum() <= 22.0 and masses.min() > 0.05
    assert abs(masses[0] - nominal[0]) < 0.2  # link 1's mass is invisible to the torques: the prior decides
    # the fit against the recorded (unfiltered) torque, as Sousa & Cortesão 2014 Table 8 measure it
    ols = estimators.ols(w_b, tau, 7)

    def error(beta: np.ndarray) -> float:
        return float(np.linalg.norm((w_b @ beta).reshape(-1, 7) - data.tau_raw) / np.linalg.norm(data.tau_raw))

    assert error(fit.beta) < 1.03 * error(ols.beta)
    # without prior or bounds the feasible fit is as good, but the masses are arbitrary
    free = estimators.fbpe(w_b, tau, base.K, layout, consistency="full", weights=wls.weights)
    assert error(free.beta) < 1.03 * error(ols.beta)
    assert abs(free.delta[0] - nominal[0]) > 0.5


def test_compression_keeps_every_residual_exactly():
    _, layout, base, truth, w_b, w = synthetic("panda")
    rng = np.random.default_rng(6)
    tau = w @ truth + rng.normal(0.0, 0.1, w.shape[0])
    per_joint = rng.uniform(0.5, 2.0, 7)
    rows = np.tile(per_joint, tau.size // 7)
    blocks = estimators.JointBlocks.of(w_b, tau, 7)
    for r, rho1, rho2 in (estimators.compress(w_b, tau, rows), blocks.combined(per_joint)):
        for beta in (base.K @ truth, rng.normal(size=base.n_base)):
            direct = np.linalg.norm(rows * (tau - w_b @ beta))
            assert np.hypot(np.linalg.norm(rho1 - r @ beta), rho2) == pytest.approx(direct, rel=1e-9)
    beta = base.K @ truth
    per_joint_direct = np.linalg.norm((tau - w_b @ beta).reshape(-1, 7), axis=0)
    assert np.allclose(blocks.residual_norms(beta), per_joint_direct, rtol=1e-9)
    assert np.allclose(estimators.ols(w_b, tau, 7).beta, np.linalg.lstsq(w_b, tau, rcond=None)[0], rtol=1e-7)


def test_ols_std_is_honest_under_correlated_residuals():
    """With AR(1) residuals (tau_int = 9) the white-noise std of Sousa & Cortesão 2014 eq. 81 is 3x too small;
    the autocorrelation-corrected std matches the spread of the estimates. (On short records the residual's
    tau_int is biased low, the fit absorbs part of the correlated noise: 600 samples give a spread of 1.35.)"""
    model, layout, base, truth, _, _ = synthetic("ur5")
    rng = np.random.default_rng(12)
    w_b = base.project(regressor(model, layout, *fourier_trajectory(6, 3000, rng)))
    exact = w_b @ (base.K @ truth)
    z, z_white = [], []
    for _ in range(15):
        noise = 0.02 * ar1(rng, 3000, 0.8, 6).reshape(-1)
        fit = estimators.ols(w_b, exact + noise, layout.n_dof)
        z.append((fit.beta - base.K @ truth) / fit.std)
        z_white.append((fit.beta - base.K @ truth) / (fit.std / np.sqrt(fit.inflation)))
    assert 0.8 < np.std(z) < 1.25
    assert np.std(z_white) > 2.0


def test_fixed_base_parameters_stay_at_their_value_in_every_estimator():
    _, layout, base, truth, w_b, w = synthetic("ur5")
    tau = w @ truth + np.random.default_rng(13).normal(0.0, 0.02, w.shape[0])
    beta = base.K @ truth
    fixed = {3: 1.5 * beta[3], 10: 0.0}
    for fit in (estimators.ols(w_b, tau, 6, fixed=fixed), estimators.wls(w_b, tau, 6, fixed=fixed)):
        assert fit.beta[3] == 1.5 * beta[3] and fit.beta[10] == 0.0
        assert np.isinf(fit.std[3]) and np.isinf(fit.rel_std[10])  # not identified: no precision claimed
    prior = feasibility_prior = truth.copy()
    feasible = estimators.fbpe(w_b, tau, base.K, layout, prior=feasibility_prior, fixed=fixed)
    assert feasible.beta[3] == pytest.approx(1.5 * beta[3], rel=1e-6, abs=1e-8)
    assert abs(feasible.beta[10]) < 1e-7
    assert feasibility.is_feasible(feasible.delta, layout)
    assert prior is feasibility_prior


def test_fbpe_answer_violating_a_constraint_beyond_the_solver_tolerance_is_an_error_not_clipped():
    _, layout, base, truth, _, _ = synthetic("ur5")
    bad = truth.copy()
    bad[layout.joint_index(2, "fv")] = -1e-3  # a solver answer below the friction bound, far beyond 1e-6
    tolerance = feasibility.SOLVER_TOLERANCE["scs"]
    with pytest.raises(EstimationError, match="violates its constraints beyond the solver's tolerance.*joint .*fv"):
        polish(bad, layout, consistency="full", eps=1e-6, bounds=feasibility.Bounds(), tolerance=tolerance)
    kept = polish(truth, layout, consistency="full", eps=1e-6, bounds=feasibility.Bounds(), tolerance=tolerance)
    assert kept.moved == [] and np.array_equal(kept.delta, truth)  # a good one passes untouched


def test_map_keeps_poorly_determined_directions_near_the_prior():
    """Few noisy samples: the feasible fit without prior drifts to unrealistic link masses with the same
    residual; the MAP estimate keeps them near the prior (here the truth) at a residual as small."""
    model, layout, base, truth, _, _ = synthetic("panda")
    rng = np.random.default_rng(14)
    q, dq, ddq = fourier_trajectory(7, 60, rng)
    w = regressor(model, layout, q, dq, ddq)
    w_b = base.project(w)
    tau = w @ truth + rng.normal(0.0, 0.5, w.shape[0])
    free = estimators.fbpe(w_b, tau, base.K, layout)
    with_prior = estimators.fbpe(w_b, tau, base.K, layout, prior=truth)
    masses = layout.indices("m")
    drift = (lambda fit: np.max(np.abs(np.log(fit.delta[masses] / truth[masses]))))  # noqa: E731
    assert drift(free) > np.log(2.0)
    assert drift(with_prior) < np.log(1.5)
    assert with_prior.objective < 1.1 * free.objective
    assert with_prior.delta_std is not None and np.all(with_prior.delta_std[masses] <= 1.001 * 0.25 * truth[masses])


def test_map_weighs_measured_data_by_their_noise_and_caps_only_noise_free_data():
    """Low-noise measured torques (signal-to-noise far above MAX_DATA_WEIGHT) keep their weight:
    the posterior standard deviations of the well-determined base parameters are those of least squares, not
    wider; only numerically noise-free data are capped, and the fit says so."""
    _, layout, base, truth, w_b, w = synthetic("panda")
    exact = w @ truth
    tau = exact + np.random.default_rng(5).normal(0.0, 1e-4 * np.abs(exact).max(), exact.size)
    ols = estimators.ols(w_b, tau, layout.n_dof)
    data = estimators.scaled_data(w_b, tau, base.K, layout, None, truth)
    assert data.norm / np.sqrt(np.mean(ols.residual_std ** 2)) > 10 * estimators.MAX_DATA_WEIGHT
    fit = estimators.fbpe(w_b, tau, base.K, layout, prior=truth)
    assert fit.capped_data_weight is None
    sharp = ols.rel_std < 1.0  # determined to better than 1 % by the data alone
    assert sharp.sum() > 20
    ratio = fit.beta_std[sharp] / ols.std[sharp]
    assert 0.7 < np.median(ratio) < 1.05, np.median(ratio)  # capped, it was ~10x wider
    noise_free = estimators.fbpe(w_b, exact, base.K, layout, prior=truth)
    assert noise_free.capped_data_weight == estimators.MAX_DATA_WEIGHT


def test_rows_left_out_of_the_fit_are_no_observations():
    """Rows left out (min_speed, sign-search gaps) count for nothing: the fit, its standard
    deviations and the residual's autocorrelation time are those of the rows in the fit alone (zeroed rows
    counted as observations made the standard deviations too small by sqrt(kept fraction))."""
    _, layout, base, truth, w_b, _ = synthetic("ur5")
    rng = np.random.default_rng(2)
    exact = w_b @ (base.K @ truth)
    rows = np.ones(exact.size, dtype=bool)
    rows[: exact.size // 2] = False  # the first half of the samples, every joint
    z = []
    for _ in range(40):
        tau = exact + rng.normal(0.0, 0.02, exact.size)
        fit = estimators.ols(w_b, tau, layout.n_dof, rows=rows)
        z.append((fit.beta - base.K @ truth) / fit.std)
    assert 0.8 < np.std(z) < 1.2, np.std(z)
    np.testing.assert_allclose(fit.residual_std, 0.02, rtol=0.15)
    alone = estimators.ols(w_b[rows], tau[rows], layout.n_dof)
    np.testing.assert_allclose(fit.beta, alone.beta, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fit.std, alone.std, rtol=1e-9)
    assert fit.inflation == pytest.approx(alone.inflation, rel=1e-9)
    data = estimators.scaled_data(w_b, tau, base.K, layout, None, None, rows)
    assert data.rows == rows.sum()


def test_map_with_joint_noise_is_the_posterior_mean_where_no_constraint_binds():
    """``joint_noise`` (the noise the evidence chose): the data term is ``sum_j ||W_j beta - y_j||^2 / noise_j`` as it
    stands, no residual variance estimated: with the truth well inside every LMI and bound, the MAP estimate is the
    Gaussian posterior mean in closed form, and its posterior standard deviations are the closed form's."""
    _, layout, base, truth, w_b, w = synthetic("ur5")
    rng = np.random.default_rng(3)
    noise = np.linspace(0.05, 0.3, layout.n_dof) ** 2
    tau = w @ truth + rng.normal(0.0, 1.0, w.shape[0]) * np.sqrt(np.tile(noise, w.shape[0] // layout.n_dof))
    prior = cad_prior(truth, layout, joint_scales=np.full(layout.n_parameters, 0.5))
    fit = estimators.fbpe(w_b, tau, base.K, layout, prior=prior, joint_noise=noise)
    rows = np.tile(1.0 / noise, w.shape[0] // layout.n_dof)
    a = w_b @ base.K
    precision = a.T @ (a * rows[:, None]) + np.linalg.inv(prior.covariance)
    mean = np.linalg.solve(precision, a.T @ (rows * tau) + np.linalg.solve(prior.covariance, prior.mean))
    assert feasibility.is_feasible(mean, layout, consistency="full")
    np.testing.assert_allclose(base.K @ fit.delta, base.K @ mean, rtol=1e-4, atol=1e-6 * np.abs(base.K @ mean).max())
    np.testing.assert_allclose(fit.delta_std, np.sqrt(np.diag(np.linalg.inv(precision))), rtol=1e-3)
    with pytest.raises(ConfigError, match="joint_noise"):
        estimators.fbpe(w_b, tau, base.K, layout, prior=prior, joint_noise=-noise)


def test_shaped_mass_prior_holds_a_poorly_seen_mass_away_from_zero():
    """Few noisy samples that pull the masses about: with the masses' own shape (symmetric in log, infinite at 0) no
    link's mass goes further below its CAD value than the Gaussian lets it, while the fit stays as good."""
    model, layout, base, truth, _, _ = synthetic("panda")
    rng = np.random.default_rng(14)
    q, dq, ddq = fourier_trajectory(7, 60, rng)
    w = regressor(model, layout, q, dq, ddq)
    w_b = base.project(w)
    tau = w @ truth + rng.normal(0.0, 0.5, w.shape[0])
    groups = PriorGroups.of(truth, layout, PriorTolerances(mass=0.6), np.full(layout.n_parameters, 2.0))
    gaussian = estimators.fbpe(w_b, tau, base.K, layout, prior=groups.prior())
    shaped = estimators.fbpe(w_b, tau, base.K, layout, prior=groups.prior(shaped=True))
    masses = layout.indices("m")
    low = (lambda fit: float(np.min(fit.delta[masses] / truth[masses])))  # noqa: E731
    assert low(shaped) >= low(gaussian) - 1e-6
    assert shaped.objective < 1.05 * gaussian.objective
