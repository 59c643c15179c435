"""The prior's scales and the noise chosen by the evidence: a URDF the data contradict gets a wider prior than one they
agree with, the noise found is the sensor's (and not a short run's over-fit residual), the gradient is the log
evidence's, and the choice is the maximum of the curve it reports."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

from dynid_ros.dynamics.base_parameters import compute_base_parameters
from dynid_ros.dynamics.regressor import regressor
from dynid_ros.estimation.hyperparameters import (
    HYPERPRIOR_SPREAD,
    NOISE_ITERATIONS,
    SCALE_RANGE,
    Evidence,
    JointSums,
    choose_hyperparameters,
    shared_scales,
)
from dynid_ros.estimation.normal_equations import NormalEquations
from dynid_ros.estimation.prior import PriorGroups, joint_group, joint_term_scales
from dynid_ros.robot.model import load_model, nominal_parameters
from dynid_ros.robot.parameters import inertia_about_com, link_parameters
from dynid_ros.robot.resources import robot_file

NOISE = 0.05
"""Torque noise, as a share of each joint's RMS torque."""


@pytest.fixture(scope="module")
def arm():
    model = load_model(urdf=robot_file("ur5e", "urdf"))
    layout = model.layout_for()
    return model, layout, compute_base_parameters(model, layout), nominal_parameters(model, layout)


def moved(nominal: np.ndarray, layout, mass: float, com: float, seed: int = 1) -> np.ndarray:
    """The nominal links with every mass times ``mass`` and every CoM moved ``com`` metres in a random direction."""
    rng = np.random.default_rng(seed)
    out = nominal.copy()
    for k in range(len(layout.links)):
        part = layout.link_slice(k)
        m, c, inertia = inertia_about_com(nominal[part])
        if m <= 0:
            continue
        shift = rng.normal(size=3)
        out[part] = link_parameters(m * mass, c + com * shift / np.linalg.norm(shift), inertia * mass)
    return out


def sums_of(arm, truth: np.ndarray, samples: int, seed: int = 0, noise: float = NOISE
            ) -> tuple[JointSums, np.ndarray, PriorGroups]:
    """Per-joint sums of a random excitation's torques of ``truth`` with ``noise`` white noise (share of each joint's
    RMS torque), the true noise std per joint, and the stated prior about the nominal parameters."""
    model, layout, base, nominal = arm
    rng = np.random.default_rng(seed)
    n = layout.n_dof
    q = rng.uniform(-2.0, 2.0, (samples, n))
    dq, ddq = rng.normal(0.0, 1.0, (samples, n)), rng.normal(0.0, 3.0, (samples, n))
    w = base.project(regressor(model, layout, q, dq, ddq))
    clean = (w @ (base.K @ truth)).reshape(samples, n)
    sigma = noise * np.sqrt(np.mean(clean**2, axis=0))
    tau = clean + sigma * rng.standard_normal(clean.shape)
    w3 = w.reshape(samples, n, -1)
    sums = JointSums.of([NormalEquations.of(w3[:, j], tau[:, j]) for j in range(n)])
    groups = PriorGroups.of(nominal, layout, None, joint_term_scales(layout, dq, ddq, tau))
    return sums, sigma, groups


def with_joint_terms(arm, delta: np.ndarray) -> np.ndarray:
    _, layout, _, _ = arm
    out = delta.copy()
    out[layout.indices("fv")], out[layout.indices("fc")], out[layout.indices("Ia")] = 0.2, 0.5, 0.05
    return out


def test_a_urdf_the_data_contradict_gets_a_wider_prior_than_one_they_agree_with(arm):
    _, layout, base, nominal = arm
    agreeing, _, groups = sums_of(arm, with_joint_terms(arm, nominal), 400)
    agree = choose_hyperparameters(agreeing, np.ones(layout.n_dof), groups, base.K)
    wrong, _, groups = sums_of(arm, with_joint_terms(arm, moved(nominal, layout, 1.6, 0.08)), 400)
    contradict = choose_hyperparameters(wrong, np.ones(layout.n_dof), groups, base.K)
    assert contradict.scales["mass"] > 2.0 * agree.scales["mass"], (agree.scales, contradict.scales)
    assert contradict.scales["com"] > 2.0 * agree.scales["com"], (agree.scales, contradict.scales)
    assert contradict.log_evidence - contradict.log_evidence_stated > agree.log_evidence - agree.log_evidence_stated
    assert contradict.tolerances.mass == pytest.approx(groups.tolerances.mass * contradict.scales["mass"])


def test_the_noise_chosen_is_the_sensors_not_the_over_fit_residual(arm):
    _, layout, base, nominal = arm
    truth = with_joint_terms(arm, moved(nominal, layout, 1.2, 0.02))
    long, sigma, groups = sums_of(arm, truth, 3000)
    chosen = choose_hyperparameters(long, np.ones(layout.n_dof), groups, base.K)
    np.testing.assert_allclose(chosen.noise_std, sigma, rtol=0.1)
    short, sigma, groups = sums_of(arm, truth, 2 * base.n_base // layout.n_dof)  # twice as many rows as parameters
    chosen = choose_hyperparameters(short, np.ones(layout.n_dof), groups, base.K)
    residual = np.sqrt(short.least_squares_noise() * (short.count - base.n_base / layout.n_dof) / short.count)
    error, least_squares = (float(np.mean(np.abs(np.log(v / sigma)))) for v in (chosen.noise_std, residual))
    assert error < 0.3 and error < 0.4 * least_squares, (chosen.noise_std, residual, sigma)  # measured: 0.20 vs 0.75


def test_correlated_rows_count_as_fewer_samples(arm):
    """The same sums with every joint's rows inflated ten times (correlated residuals): the same noise per sample,
    but the data are worth ten times fewer samples, so the choice stays closer to the stated tolerances."""
    _, layout, base, nominal = arm
    sums, sigma, groups = sums_of(arm, with_joint_terms(arm, moved(nominal, layout, 1.6, 0.08)), 2000)
    white = choose_hyperparameters(sums, np.ones(layout.n_dof), groups, base.K)
    correlated = choose_hyperparameters(sums, np.full(layout.n_dof, 10.0), groups, base.K)
    np.testing.assert_allclose(correlated.noise_std, white.noise_std, rtol=0.05)
    assert correlated.noise.tolist() == pytest.approx((10.0 * correlated.noise_std**2).tolist())
    assert abs(np.log(correlated.scales["mass"])) < abs(np.log(white.scales["mass"]))


def test_a_joint_with_fewer_effective_samples_than_parameters_keeps_a_noise_near_its_residual(arm):
    """A joint whose rows count as 2 samples (a structured residual's inflation, 200 of 400 rows): the evidence's noise
    fixed point ``r / (N_eff - gamma)`` diverges as the parameters its rows determine (gamma) reach N_eff, and the
    joint's data would count as nothing (measured without the noise's hyperprior: 3.5x the least-squares residual's
    std at N_eff 2, 10.7x at N_eff 1). With it the noise stays within the hyperprior's spread of the residual, at the
    maximum of the evidence plus hyperpriors (the noise's gradient zero there); a well-sampled joint's is unchanged."""
    _, layout, base, nominal = arm
    sums, sigma, groups = sums_of(arm, with_joint_terms(arm, moved(nominal, layout, 1.2, 0.02)), 400)
    inflation = np.ones(layout.n_dof)
    inflation[1] = 200.0
    chosen = choose_hyperparameters(sums, inflation, groups, base.K)
    residual = np.sqrt(sums.least_squares_noise())
    assert chosen.noise_std[1] < HYPERPRIOR_SPREAD * residual[1], (chosen.noise_std, residual)  # measured 2.46x
    others = np.arange(layout.n_dof) != 1
    np.testing.assert_allclose(chosen.noise_std[others], sigma[others], rtol=0.15)
    evidence = Evidence(sums, inflation, groups, base.K)
    scales = np.array([chosen.scales[g] for g in groups.names])
    gradient = evidence.objective_and_gradient(scales, chosen.noise_std**2)[1][len(scales):]
    assert np.max(np.abs(gradient)) < 1e-6 * sums.count.max(), gradient


def test_a_structured_residual_is_not_absorbed_by_the_fit_so_its_noise_is_the_residuals(arm):
    """The same joint counted as 2 samples, its inflation a structured share (model error: ``absorption`` the noise
    share, here white): the fit absorbs only the noise's part, ``sigma^2 = r / (N - gamma)``, so its noise is its
    least-squares residual's, where the whole inflation (``N - tau gamma``) put it near the hyperprior's bound (the
    drift test's late flag); the other joints keep the sensor's noise, and the alternation's scales are the evidence's
    maximum at that noise (their gradient zero)."""
    _, layout, base, nominal = arm
    sums, sigma, groups = sums_of(arm, with_joint_terms(arm, moved(nominal, layout, 1.2, 0.02)), 400)
    inflation = np.ones(layout.n_dof)
    inflation[1] = 200.0
    residual = np.sqrt(sums.least_squares_noise())
    whole = choose_hyperparameters(sums, inflation, groups, base.K)
    split = choose_hyperparameters(sums, inflation, groups, base.K, absorption=np.ones(layout.n_dof))
    assert split.noise_std[1] == pytest.approx(residual[1], rel=0.2), (split.noise_std, residual)  # measured 1.02x
    assert whole.noise_std[1] > 2.0 * split.noise_std[1], (whole.noise_std, split.noise_std)  # measured 2.46x
    others = np.arange(layout.n_dof) != 1
    np.testing.assert_allclose(split.noise_std[others], sigma[others], rtol=0.15)
    evidence = Evidence(sums, inflation, groups, base.K, absorption=np.ones(layout.n_dof))
    scales = np.array([split.scales[g] for g in groups.names])
    gradient = evidence.objective_and_gradient(scales, split.noise_std**2)[1][:len(scales)]
    interior = (scales > SCALE_RANGE[0] * 1.0001) & (scales < SCALE_RANGE[1] / 1.0001)
    assert np.max(np.abs(gradient[interior])) < 1e-5, gradient


def test_gradient_is_that_of_the_log_evidence(arm):
    _, layout, base, nominal = arm
    sums, sigma, groups = sums_of(arm, with_joint_terms(arm, moved(nominal, layout, 1.3, 0.03)), 200)
    evidence = Evidence(sums, np.linspace(1.0, 4.0, layout.n_dof), groups, base.K)
    n_groups = len(groups.names)  # mass, com, inertia and one group of joint terms per joint
    x = np.concatenate([np.log(np.linspace(0.7, 1.3, n_groups)), np.log(sigma * 1.2)])

    def objective(v: np.ndarray) -> tuple[float, np.ndarray]:
        return evidence.objective_and_gradient(np.exp(v[:n_groups]), np.exp(2.0 * v[n_groups:]))

    numeric = scipy.optimize.approx_fprime(x, lambda v: objective(v)[0], 1e-6)
    np.testing.assert_allclose(objective(x)[1], numeric, rtol=1e-3, atol=1e-3 * np.abs(numeric).max())
    assert objective(x)[0] == pytest.approx(evidence.objective(np.exp(x[:n_groups]), np.exp(2 * x[n_groups:])))


def test_the_choice_is_the_top_of_the_curve_it_reports(arm):
    _, layout, base, nominal = arm
    sums, _, groups = sums_of(arm, with_joint_terms(arm, moved(nominal, layout, 1.4, 0.05)), 500)
    chosen = choose_hyperparameters(sums, np.full(layout.n_dof, 3.0), groups, base.K)
    low, high = SCALE_RANGE
    for group, points in chosen.curve.items():
        values = dict(points)
        assert values[1.0] == pytest.approx(0.0, abs=1e-9)
        inside = [v for f, v in points if low * (1 - 1e-9) <= f * chosen.scales[group] <= high * (1 + 1e-9)]
        assert max(inside) <= 1e-3, (group, points)  # the top within the box the scales are chosen in
    record = chosen.to_dict(list(layout.joints))
    assert set(record["scales"]) == {"mass", "com", "inertia", *(joint_group(j) for j in layout.joints)}
    assert set(record["noise_std"]) == set(layout.joints)
    assert record["log_bayes_factor_vs_stated"] >= 0.0


def test_given_scales_are_kept_and_only_the_noise_is_chosen(arm):
    """Scales given (a fleet's reference run's): the choice keeps them exactly, says so, and chooses the noise at
    them by the same fixed point (the noise chosen with the scales the evidence itself found is the same)."""
    _, layout, base, nominal = arm
    sums, sigma, groups = sums_of(arm, with_joint_terms(arm, moved(nominal, layout, 1.3, 0.03)), 400)
    free = choose_hyperparameters(sums, np.ones(layout.n_dof), groups, base.K)
    pinned = choose_hyperparameters(sums, np.ones(layout.n_dof), groups, base.K, given=free.scales)
    assert pinned.given and not free.given and pinned.scales == free.scales
    assert pinned.to_dict(layout.joints)["scales_source"] == "given"
    assert np.allclose(pinned.noise_std, free.noise_std, rtol=1e-6)
    other = {g: 3.0 * v for g, v in free.scales.items()}
    assert choose_hyperparameters(sums, np.ones(layout.n_dof), groups, base.K, given=other).scales == other


def test_scales_runs_share_hold_no_group_tighter_than_stated(arm):
    """The scales runs compared share (a fleet's reference run's): every group, link groups and joint terms, at least
    the stated tolerance (a later run's friction change or payload must not be held toward the URDF by the
    reference's Occam factor), wider scales as the reference used them; sharing them again changes nothing."""
    _, layout, _, _ = arm
    used = {"mass": 0.2, "com": 4.0, "inertia": 0.3, **{joint_group(j): s for j, s in zip(layout.joints,
                                                                                        np.geomspace(0.11, 9.0,
                                                                                                     layout.n_dof))}}
    shared = shared_scales(used)
    assert {g: shared[g] for g in ("mass", "com", "inertia")} == {"mass": 1.0, "com": 4.0, "inertia": 1.0}
    for j in layout.joints:
        assert shared[joint_group(j)] == max(used[joint_group(j)], 1.0)
    assert shared_scales(shared) == shared
    assert shared_scales({"mass": 0.5, "com": 0.5, "inertia": 0.5, "joint": 0.2}) == {
        "mass": 1.0, "com": 1.0, "inertia": 1.0, "joint": 1.0}


@pytest.mark.parametrize("noise", [1e-2, 1e-4, 1e-6])
def test_the_choice_ends_at_the_round_off_of_low_noise_data(arm, noise, monkeypatch):
    """Data with little noise (a simulation) leave a residual that is a tiny difference of the sums, whose round-off the
    noise's fixed point cannot get below: the iteration ends where its steps stop shrinking, not after every allowed
    step (before: 200 alternations of :data:`NOISE_ITERATIONS` steps, 40 000 steps, at 1e-4 and 1e-6 of the torque),
    and the noise it finds is the data's (within the estimate's own spread over 6 joints x 2000 samples)."""
    _, layout, base, nominal = arm
    sums, sigma, groups = sums_of(arm, with_joint_terms(arm, nominal), 2000, noise=noise)
    steps = []
    step = Evidence.noise_step
    monkeypatch.setattr(Evidence, "noise_step", lambda self, *a: steps.append(1) or step(self, *a))
    choice = choose_hyperparameters(sums, np.ones(layout.n_dof), groups, base.K, details=False)
    assert len(steps) < 5 * NOISE_ITERATIONS
    assert choice.noise_std == pytest.approx(sigma, rel=0.1)
