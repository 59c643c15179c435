"""Per-joint effort gains (dynid_ros.estimation.effort_gains) on linear problems whose truth is known: a random
regressor of a few joints sharing parameters, the recorded effort ``g_j W_j beta`` plus noise (white, and
correlated as real residuals are).

Invariants per case: gains off by 10-20 % on some joints are found relative to the others (within 1 %) and kept, with
a cross-validated error that drops; gains of 1 are not kept (seeds of white and of correlated noise), and the
common scale, which the data cannot see, stays at the prior's centre (geometric mean 1 within the gains' spread)."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.dynamics.row_chunks import RowChunks
from dynid_ros.estimation.effort_gains import GAIN_TOLERANCE, choose_gains


def _problem(gains: np.ndarray, seed: int, noise: float, correlation: int = 1, samples: int = 3000
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Regressor rows (sample-major), filtered and recorded effort (samples, joints) of a random linear problem:
    each joint sees 8 of 12 shared parameters; ``correlation``: moving-average length of the noise (samples)."""
    rng = np.random.default_rng(seed)
    n, p = gains.size, 12
    beta = rng.normal(size=p)
    t = np.arange(samples) / 100.0
    w = np.zeros((samples, n, p))
    for j in range(n):
        for c in rng.choice(p, size=8, replace=False):
            f, phase = rng.uniform(0.1, 1.0), rng.uniform(0, 2 * np.pi)
            w[:, j, c] = np.sin(2 * np.pi * f * t + phase) * rng.uniform(0.5, 2.0)
    torque = np.einsum("sjp,p->sj", w, beta)
    white = rng.normal(size=(samples + correlation, n))
    kernel = np.ones(correlation) / np.sqrt(correlation)
    coloured = np.stack([np.convolve(white[:, j], kernel, mode="valid")[:samples] for j in range(n)], axis=1)
    recorded = gains * torque + noise * np.std(torque) * coloured
    return w.reshape(-1, p), recorded, recorded


@pytest.mark.parametrize("gains", [(1.0, 1.15, 1.0, 0.85), (1.1, 1.0, 0.9, 1.0, 1.2), (0.8, 1.0, 1.0)],
                         ids=lambda g: "-".join(f"{x:g}" for x in g))
@pytest.mark.parametrize("correlation", [1, 20], ids=["white", "correlated"])
def test_gains_off_are_found_relative_to_the_others_and_kept(gains, correlation):
    gains = np.asarray(gains)
    w, tau, raw = _problem(gains, seed=len(gains), noise=0.02, correlation=correlation)
    choice = choose_gains(RowChunks.of(w), tau, raw, np.ones(tau.size, dtype=bool), gains.size)
    assert choice is not None and choice.kept, choice
    torque_per_effort = 1.0 / gains
    found = choice.gains
    assert np.allclose(found / np.exp(np.mean(np.log(found))),
                       torque_per_effort / np.exp(np.mean(np.log(torque_per_effort))), rtol=0.01, atol=0), found
    assert choice.error_with < choice.error_without
    assert choice.likelihood_ratio > choice.margin


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("correlation", [1, 20], ids=["white", "correlated"])
def test_gains_of_one_are_not_kept_and_the_common_scale_stays_at_the_prior(seed, correlation):
    gains = np.ones(4)
    w, tau, raw = _problem(gains, seed=seed, noise=0.05, correlation=correlation)
    choice = choose_gains(w, tau, raw, np.ones(tau.size, dtype=bool), gains.size)
    assert choice is not None and not choice.kept, choice
    assert abs(np.mean(np.log(choice.gains))) < GAIN_TOLERANCE / np.sqrt(gains.size)


def test_a_common_scale_is_not_a_gain_error():
    """Every effort 1.3x the torque: the data cannot tell it from heavier links (the homogeneous direction), so no
    gain is kept and none moves from 1 more than its spread."""
    w, tau, raw = _problem(np.full(4, 1.3), seed=3, noise=0.02)
    choice = choose_gains(w, tau, raw, np.ones(tau.size, dtype=bool), 4)
    assert choice is not None and not choice.kept, choice
    assert np.ptp(choice.gains) < 0.01, choice.gains


def test_rows_left_out_of_the_fit_are_left_out_of_the_gains():
    """Rows outside the fit (e.g. below min_speed) carry garbage here: the gains come from the others only."""
    gains = np.array([1.0, 1.2, 1.0])
    w, tau, raw = _problem(gains, seed=5, noise=0.02)
    rows = np.ones(tau.size, dtype=bool)
    rows[::7] = False
    spoiled = tau.reshape(-1).copy()
    spoiled[~rows] = 1e3
    spoiled = spoiled.reshape(tau.shape)
    choice = choose_gains(w, spoiled, spoiled, rows, 3)
    assert choice is not None and choice.kept
    assert np.isclose(choice.gains[1] / choice.gains[0], 1 / 1.2, rtol=0.01)
