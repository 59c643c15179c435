"""The per-sample fit an identification ends with: its residual is measured minus predicted."""

from __future__ import annotations

import numpy as np

from dynid_ros.identification.fit_series import FitSeries


def test_residual_is_measured_minus_predicted():
    t = np.linspace(0.0, 1.0, 5)
    tau = np.column_stack([np.sin(t), np.cos(t)])
    tau_hat = np.column_stack([np.sin(t) + 0.1, 0.5 * np.cos(t)])
    fit = FitSeries(["a", "b"], t, np.zeros((5, 2)), np.zeros((5, 2)), np.zeros((5, 2)), tau, tau_hat)
    np.testing.assert_allclose(fit.residual[:, 0], -0.1)
    np.testing.assert_allclose(fit.residual[:, 1], 0.5 * np.cos(t))
    assert fit.residual.shape == (5, 2)
