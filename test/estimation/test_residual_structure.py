"""Per-joint fit diagnostics: the share of a residual a smooth function of the joint's position or velocity
explains, its F-test p-value with the effective sample count, and the joint flagged only when both say so;
relative error and R^2 against hand computations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import f as f_distribution

from dynid_ros.estimation.residual_model import integrated_autocorrelation_time
from dynid_ros.estimation.residual_structure import (
    SERIES_ORDER,
    STRUCTURED_SHARE,
    explained_share,
    joint_diagnostics,
    share_p_value,
)


def test_explained_share_of_exact_polynomials_and_of_nothing():
    x = np.linspace(-2.0, 5.0, 500)
    assert explained_share(0.3 * x ** 3 - x + 2.0, x) == pytest.approx(1.0, abs=1e-12)  # cubic: in the series
    assert explained_share(np.zeros(500), x) == 0.0
    assert explained_share(np.sin(x), np.full(500, 1.0)) == 0.0  # a joint that did not move explains nothing
    quartic = x ** 4
    share = explained_share(quartic, x)
    e = quartic - quartic.mean()
    fit = np.polynomial.polynomial.polyfit(x, e, SERIES_ORDER)  # independent least squares on the raw x
    explained = np.polynomial.polynomial.polyval(x, fit)
    assert share == pytest.approx(np.sum(explained ** 2) / np.sum(e ** 2), rel=1e-8)
    assert 0.5 < share < 1.0


def test_share_p_value_is_the_f_test():
    for share, n in ((0.05, 100.0), (0.3, 40.0), (0.6, 12.0)):
        dof = n - SERIES_ORDER - 1
        statistic = (share / SERIES_ORDER) / ((1 - share) / dof)
        assert share_p_value(share, n) == pytest.approx(f_distribution.sf(statistic, SERIES_ORDER, dof), rel=1e-12)
    assert share_p_value(0.0, 100.0) == pytest.approx(1.0)
    assert share_p_value(1.0, 100.0) == 0.0
    assert share_p_value(0.9, 4.0) == 1.0  # no degrees of freedom left
    assert share_p_value(0.2, 1000.0) < share_p_value(0.2, 50.0)  # more independent samples: more significant


def test_relative_error_and_r2_by_hand():
    tau = np.array([[1.0, 0.0], [2.0, 1.0], [3.0, -1.0], [4.0, 0.0]] * 10)
    tau_hat = tau + np.array([[0.1, 0.0], [-0.1, 0.5], [0.1, 0.0], [-0.1, 0.0]] * 10)
    q = np.tile(np.linspace(0, 1, 4), 10)[:, None] * [1.0, 2.0]
    (first, second) = joint_diagnostics(["a", "b"], tau, tau_hat, q, np.gradient(q, axis=0))
    assert first.joint == "a" and second.joint == "b"
    assert first.relative_error == pytest.approx(np.sqrt(40 * 0.01) / np.sqrt(10 * 30.0))
    assert first.r2 == pytest.approx(1.0 - 40 * 0.01 / (10 * 5.0))  # sum (tau - 2.5)^2 = 5 per cycle
    assert second.r2 == pytest.approx(1.0 - 10 * 0.25 / (10 * 2.0))
    assert first.autocorrelation_time == pytest.approx(integrated_autocorrelation_time(tau[:, 0] - tau_hat[:, 0]))
    assert set(first.to_dict()) == {"joint", "relative_error", "r2", "autocorrelation_time", "position_share",
                                    "velocity_share", "structured", "explained_by"}


def test_a_velocity_dependent_residual_is_explained_by_velocity():
    rng = np.random.default_rng(2)
    t = np.linspace(0, 40, 8000)
    q = np.sin(0.7 * t) + 0.4 * np.sin(1.9 * t)
    dq = 0.7 * np.cos(0.7 * t) + 0.76 * np.cos(1.9 * t)
    tau = 5.0 * q
    residual = 0.4 * np.tanh(20 * dq) + 0.02 * rng.normal(size=t.size)  # Coulomb friction the model lacks
    (d,) = joint_diagnostics(["j"], tau[:, None], (tau - residual)[:, None], q[:, None], dq[:, None])
    assert d.structured and d.explained_by == "velocity" and d.velocity_share >= STRUCTURED_SHARE
    assert d.position_share < d.velocity_share


def test_white_noise_is_not_structured():
    rng = np.random.default_rng(3)
    q = np.sin(np.linspace(0, 30, 5000))
    tau = 3.0 * q
    (d,) = joint_diagnostics(["j"], tau[:, None], (tau + 0.05 * rng.normal(size=5000))[:, None], q[:, None],
                             np.gradient(q)[:, None])
    assert not d.structured and d.explained_by is None
    assert d.autocorrelation_time == pytest.approx(1.0, abs=0.2)


def test_structured_share_tells_a_spring_from_correlated_noise():
    rng = np.random.default_rng(1)
    n = 4000
    q = np.sin(np.linspace(0, 12, n)) + 0.3 * np.sin(np.linspace(0, 31, n))
    dq = np.gradient(q)
    noise = np.convolve(rng.standard_normal(n + 20), np.ones(20) / 20, mode="valid")[:n]  # tau_int ~ 20
    assert explained_share(noise, q) < 0.1
    clean, spring = joint_diagnostics(["a", "b"], np.column_stack([3 * q, 3 * q]),
                                      np.column_stack([3 * q - noise, 3 * q - noise - 0.5 * q]),
                                      np.column_stack([q, q]), np.column_stack([dq, dq]))
    assert not clean.structured and clean.autocorrelation_time > 5
    assert spring.structured and spring.explained_by == "position"
