"""The CAD prior of FBPE (dynid_ros.estimation.prior): tolerances, the propagated covariance, realism per link."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.errors import ConfigError
from dynid_ros.estimation.prior import (
    GROUPS,
    STRONG_EVIDENCE,
    PriorGroups,
    PriorTolerances,
    cad_prior,
    link_realism,
    moved_mass_evidence,
)
from dynid_ros.robot.parameters import ParameterLayout, link_parameters

LAYOUT = ParameterLayout(("j1",), ("l1",), ("viscous",), True)
BODY = link_parameters(2.0, np.array([0.05, -0.02, 0.2]), np.diag([0.02, 0.03, 0.01]))


def test_tolerances_from_config():
    tol = PriorTolerances.from_config({"mass": 0.1, "com": 0.01})
    assert (tol.mass, tol.com, tol.inertia, tol.joint) == (0.1, 0.01, 0.5, 1.0)
    with pytest.raises(ConfigError, match="unknown key"):
        PriorTolerances.from_config({"masses": 0.1})
    with pytest.raises(ConfigError, match="must be > 0"):
        PriorTolerances.from_config({"com": -1})


def test_covariance_is_the_tolerances_propagated_through_the_parallel_axis_theorem():
    """Monte Carlo over independent mass, CoM and inertia-about-CoM errors matches the propagated covariance."""
    tol = PriorTolerances(mass=0.05, com=0.005, inertia=0.05)
    nominal = np.concatenate([BODY, [0.0, 0.0]])
    prior = cad_prior(nominal, LAYOUT, tol, joint_scales=np.array([0.0] * 10 + [2.0, 0.5]))
    assert prior.std[0] == pytest.approx(0.05 * 2.0)
    assert np.allclose(prior.mean[:10], BODY) and np.all(prior.mean[10:] == 0)
    assert np.allclose(prior.std[10:], [2.0, 0.5])
    rng = np.random.default_rng(0)
    rotational = (0.02 + 0.03 + 0.01) / 3
    samples = []
    for _ in range(4000):
        e = rng.normal(0.0, tol.inertia * rotational, 6)
        inertia = np.diag([0.02, 0.03, 0.01]) + np.array([[e[0], e[1], e[3]], [e[1], e[2], e[4]], [e[3], e[4], e[5]]])
        samples.append(link_parameters(2.0 + rng.normal(0.0, 0.1), np.array([0.05, -0.02, 0.2])
                                       + rng.normal(0.0, tol.com, 3), inertia))
    empirical = np.cov(np.array(samples).T)
    assert np.allclose(np.sqrt(np.diag(empirical)), prior.std[:10], rtol=0.1)
    corr = (lambda c: c / np.sqrt(np.outer(np.diag(c), np.diag(c))))  # noqa: E731
    assert np.allclose(corr(empirical), corr(prior.cov[:10, :10]), atol=0.08)  # e.g. m and m z move together
    assert corr(prior.cov[:10, :10])[0, 3] > 0.5


def test_link_realism_compares_each_link_without_its_attached_part():
    attached = np.concatenate([link_parameters(1.0, np.zeros(3), np.eye(3) * 1e-3), [0.0, 0.0]])
    nominal = np.concatenate([BODY, [0.0, 0.0]]) + attached
    heavier = nominal.copy()
    heavier[:10] = link_parameters(5.0, np.array([0.05, -0.02, 0.25]), np.diag([0.02, 0.03, 0.01])) + attached[:10]
    (row,) = link_realism(heavier, nominal, LAYOUT, attached)
    assert row["prior_mass"] == pytest.approx(2.0) and row["mass_ratio"] == pytest.approx(2.5)
    assert not row["realistic_mass"] and row["com_shift_m"] == pytest.approx(0.05, rel=1e-6)


def test_com_tolerance_scales_with_the_link_and_joint_terms_start_from_the_description():
    """The default CoM tolerance is a share of the link's size (its radius of gyration about the joint
    origin), so a link ten times smaller gets a ten times tighter CoM prior; the URDF's damping, friction and
    armature are the prior means of the joint terms."""
    layout = ParameterLayout(("j1", "j2"), ("big", "small"), ("viscous", "coulomb"), True)
    big = link_parameters(2.0, np.array([0.0, 0.0, 0.2]), np.diag([0.02, 0.02, 0.01]))
    small = big.copy()
    small[1:4] *= 0.1  # the same body ten times smaller: m c scales with l, the second moments with l^2
    small[4:] *= 0.01
    joint_terms = np.array([0.3, 1.5, 0.01, 0.05, 0.2, 0.002])  # j1: fv, fc, Ia; j2: fv, fc, Ia (URDF values)
    prior = cad_prior(np.concatenate([big, small, joint_terms]), layout, PriorTolerances(),
                      joint_scales=np.full(26, 2.0))  # each term alone explains less than its joint's RMS torque
    first_moment_std = [prior.std[layout.link_slice(k)][1] for k in range(2)]  # m * sigma_c along x
    assert first_moment_std[0] == pytest.approx(10.0 * first_moment_std[1], rel=1e-6)
    assert np.allclose(prior.mean[20:], joint_terms)
    absolute = cad_prior(np.concatenate([big, small, joint_terms]), layout, PriorTolerances(com=0.03),
                         joint_scales=np.full(26, 2.0))
    assert absolute.std[1] == pytest.approx(absolute.std[11], rel=1e-6)  # the config's metres: the same for both


@pytest.mark.parametrize("factor", [0.5, 0.95, 1.05, 200.0])
def test_a_joint_term_no_robot_could_have_is_not_the_priors_mean(factor):
    """A description's friction whose torque alone would exceed the joint's whole RMS torque (a vendor's placeholder:
    ``damping="10"`` on a 0.4 kg link) is not a measurement: the prior is centred on 0 there and says so; a plausible
    one stays the mean."""
    layout = ParameterLayout(("j1", "j2"), ("l1", "l2"), ("viscous", "coulomb"), False)
    scales = np.zeros(layout.n_parameters)
    scales[20:] = [0.05, 0.4, 0.02, 0.3]  # the values explaining each joint's RMS torque alone (joint_term_scales)
    joint_terms = factor * scales[20:]
    groups = PriorGroups.of(np.concatenate([BODY, BODY, joint_terms]), layout, PriorTolerances(), scales)
    implausible = factor > 1.0
    assert groups.untrusted == ((20, 21, 22, 23) if implausible else ())
    assert np.allclose(groups.prior().mean[20:], 0.0 if implausible else joint_terms)
    assert np.allclose(groups.prior().mean[:20], np.concatenate([BODY, BODY]))  # the links' are the description's


def test_prior_groups_sum_to_the_prior_and_scale_each_group_alone():
    nominal = np.concatenate([BODY, [0.0, 0.0]])
    tol = PriorTolerances(mass=0.1, com=0.01, inertia=0.3, joint=0.5)
    groups = PriorGroups.of(nominal, LAYOUT, tol, np.array([0.0] * 10 + [2.0, 0.5]))
    np.testing.assert_allclose(groups.covariance(), cad_prior(nominal, LAYOUT, tol, np.array([0.0] * 10 + [2.0, 0.5])
                                                              ).covariance, rtol=1e-12, atol=1e-15)
    scaled = tol.scaled({"mass": 2.0, "inertia": 0.5})
    assert (scaled.mass, scaled.com, scaled.inertia, scaled.joint) == (0.2, 0.01, 0.15, 0.5)
    np.testing.assert_allclose(groups.covariance({"mass": 2.0, "inertia": 0.5}),
                               cad_prior(nominal, LAYOUT, scaled, np.array([0.0] * 10 + [2.0, 0.5])).covariance,
                               rtol=1e-10, atol=1e-15)
    assert set(GROUPS) == {"mass", "com", "inertia", "joint"}


def test_mass_shape_is_the_gaussian_near_cad_symmetric_in_log_and_infinite_at_zero():
    """Half and twice the CAD mass cost the same; near the CAD mass the shape is the Gaussian's (value and
    curvature); a mass at or below zero is impossible."""
    nominal = np.concatenate([BODY, [0.0, 0.0]])
    groups = PriorGroups.of(nominal, LAYOUT, PriorTolerances(mass=0.25), np.array([0.0] * 10 + [2.0, 0.5]))
    gaussian, shaped = groups.prior(), groups.prior(shaped=True)
    shape = shaped.mass_shape
    assert shape.penalty(np.array([1.0])) == pytest.approx(shape.penalty(np.array([4.0])))  # 2 kg CAD: x0.5, x2
    assert shape.penalty(np.array([0.0])) == np.inf
    near = nominal.copy()
    near[0] *= 1.001
    near[1:4] *= 1.001  # the CoM kept: the conditional Gaussian of the first moments given the mass
    assert shaped.negative_log_density(near) == pytest.approx(gaussian.negative_log_density(near), rel=1e-2)
    np.testing.assert_allclose(shaped.half_hessian(nominal), gaussian.half_hessian(nominal), rtol=1e-6,
                               atol=1e-9 * np.abs(gaussian.half_hessian(nominal)).max())
    far = nominal.copy()
    far[0] *= 0.3
    assert shaped.negative_log_density(far) > gaussian.negative_log_density(far)  # a link drifting toward 0


def test_moved_mass_evidence_is_the_savage_dickey_ratio():
    """A mass the data put at its CAD value with a tight posterior: evidence against a move (the Occam factor); one
    the data moved by many posterior standard deviations: strong evidence for it."""
    assert moved_mass_evidence(2.0, 2.0, 0.5, 0.05) == pytest.approx(np.log(0.05 / 0.5))
    assert moved_mass_evidence(2.6, 2.0, 0.5, 0.05) > STRONG_EVIDENCE
    assert moved_mass_evidence(2.6, 2.0, 0.5, 0.45) < STRONG_EVIDENCE  # the data say little: no evidence either way
    realism = link_realism(BODY, BODY * 1.1, LAYOUT.__class__(("j1",), ("l1",), (), False),
                           prior_std=np.full(10, 0.5), posterior_std=np.full(10, 0.05))
    assert realism[0]["mass_move_log_bayes_factor"] == pytest.approx(moved_mass_evidence(2.0, 2.2, 0.5, 0.05))
