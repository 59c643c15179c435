"""The integrated autocorrelation time of a residual (Sokal's window) and the residual inflation of several
joints: white and AR(1) noise of known ``tau_int``, samples left out, the energy-weighted average."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.estimation.residual_model import integrated_autocorrelation_time, residual_inflation

from support.correlated_noise import ar1


def test_integrated_autocorrelation_time_of_ar1_noise():
    rng = np.random.default_rng(11)
    assert integrated_autocorrelation_time(rng.normal(size=5000)) == pytest.approx(1.0, abs=0.15)
    e = ar1(rng, 20000, 0.8, 2)
    assert integrated_autocorrelation_time(e[:, 0]) == pytest.approx(9.0, rel=0.2)
    assert residual_inflation(e) == pytest.approx(9.0, rel=0.2)


@pytest.mark.parametrize("phi", [0.5, 0.9])
def test_ar1_of_other_correlations(phi):
    e = ar1(np.random.default_rng(3), 40000, phi, 1)[:, 0]
    assert integrated_autocorrelation_time(e) == pytest.approx((1 + phi) / (1 - phi), rel=0.2)


def test_one_run_of_present_samples_gives_what_that_run_alone_gives():
    e = ar1(np.random.default_rng(4), 6000, 0.7, 1)[:, 0]
    present = np.zeros(e.size, dtype=bool)
    present[1000:4000] = True
    alone = integrated_autocorrelation_time(e[1000:4000])
    assert integrated_autocorrelation_time(e, present) == pytest.approx(alone, rel=1e-9)
    scrambled = e.copy()
    scrambled[~present] = 1e6  # what is not an observation counts for nothing
    assert integrated_autocorrelation_time(scrambled, present) == pytest.approx(alone, rel=1e-9)


def test_degenerate_residuals_count_as_white():
    assert integrated_autocorrelation_time(np.zeros(100)) == 1.0
    assert integrated_autocorrelation_time(np.full(100, 3.0)) == 1.0  # the mean removed: nothing left
    assert integrated_autocorrelation_time(np.array([1.0, -1.0, 2.0])) == 1.0  # fewer than 4 samples
    present = np.zeros(100, dtype=bool)
    present[:3] = True
    assert integrated_autocorrelation_time(np.arange(100.0), present) == 1.0


def test_never_more_than_the_sample_count():
    e = np.linspace(-1.0, 1.0, 50)  # a ramp: perfectly correlated
    assert 1.0 <= integrated_autocorrelation_time(e) <= 50


def test_residual_inflation_weights_each_joint_by_its_share_of_the_residual():
    rng = np.random.default_rng(5)
    white, correlated = rng.normal(size=20000), 3.0 * ar1(rng, 20000, 0.8, 1)[:, 0]
    e = np.column_stack([white, correlated])
    taus = [integrated_autocorrelation_time(e[:, j]) for j in range(2)]
    energy = (e ** 2).sum(axis=0)
    assert residual_inflation(e) == pytest.approx(np.dot(taus, energy) / energy.sum(), rel=1e-12)
    weights = np.array([3.0, 1.0])  # the white joint weighted up: closer to 1
    weighted = (e * weights) ** 2
    expected = np.dot(taus, weighted.sum(axis=0)) / weighted.sum()
    assert residual_inflation(e, weights) == pytest.approx(expected, rel=1e-12)
    assert residual_inflation(e, per_joint_inflation=np.array([2.0, 4.0])) == pytest.approx(
        (2.0 * energy[0] + 4.0 * energy[1]) / energy.sum(), rel=1e-12)
    assert residual_inflation(np.zeros((10, 2))) == 1.0


def test_residual_inflation_ignores_entries_left_out():
    rng = np.random.default_rng(6)
    e = np.column_stack([rng.normal(size=8000), ar1(rng, 8000, 0.8, 1)[:, 0]])
    present = np.ones_like(e, dtype=bool)
    present[:4000, 1] = False
    taus = [integrated_autocorrelation_time(e[:, 0]), integrated_autocorrelation_time(e[4000:, 1])]
    energy = [np.sum(e[:, 0] ** 2), np.sum(e[4000:, 1] ** 2)]
    assert residual_inflation(e, present=present) == pytest.approx(np.dot(taus, energy) / np.sum(energy),
                                                                   rel=1e-9)
