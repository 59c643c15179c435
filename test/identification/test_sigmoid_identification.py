"""Identification with sigmoid joint friction (Gaz et al. 2019 eq. 25), called directly: a three-joint arm whose
torque holds a known sigmoid friction; the shapes and spans found, the fit at the noise floor, the layout and the
fit the report shows."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.dynamics.regressor import torques
from dynid_ros.estimation.sigmoid_friction import sigmoid_torque
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.identification.sigmoid_identification import identify_with_sigmoid
from dynid_ros.identification.timing import StageTimer

from support.arm_runs import RICH, arm_run

PHI = np.array([[1.2, 20.0, 0.02], [0.8, 30.0, -0.01], [0.5, 40.0, 0.0]])
"""[span N m, steepness s/rad, shift rad/s] per joint."""


@pytest.mark.parametrize(("cutoff", "method"), [("bandwidth", "ols"), ("auto", "ols"), ("auto", "fbpe")])
def test_known_sigmoid_friction_is_found(tmp_path, cutoff, method):
    """Both cutoffs: with ``auto`` the cutoff is chosen once, and the sigmoid's stage and the linear one (and so the
    fit the report shows, and the result's own check) use the same samples, and the console names the chosen cutoff
    once, before the estimate's lines."""
    run = arm_run(tmp_path, seconds=12.0, rate=500.0, noise=0.01, amplitude=RICH)
    layout = run.model.layout_for((), True)  # rigid body and armature; the friction is the sigmoid alone
    s = run.series
    truth = run.truth[[i for i, name in enumerate(run.layout.names) if not name.endswith((".fv", ".fc", ".fo"))]]
    ddq = np.gradient(s.velocity, s.t, axis=0)
    tau = torques(run.model, layout, truth, s.position, s.velocity, ddq) + sigmoid_torque(s.velocity, PHI)
    tau += np.random.default_rng(2).normal(0.0, 0.01, tau.shape)
    series = JointStateSeries(list(s.names), s.t, s.position, s.velocity, tau)
    options = IdentificationOptions(friction=("sigmoid",), method=method, processing={"cutoff_hz": cutoff})
    timer = StageTimer()
    result = identify_with_sigmoid(series, options, run.model, timer)
    assert result.layout.friction == ("sigmoid",) and result.options is options
    assert result.friction_sigmoid.shape == (3, 3) and "sigmoid" in timer.timings
    assert result.processing["cutoff_choice"]["rule"] == cutoff
    lines = [i for i, w in enumerate(result.warnings) if w.startswith("filter cutoff")]
    assert lines == ([0] if cutoff == "auto" else [])  # once, the data's line before the estimate's (FBPE's prior)
    np.testing.assert_allclose(result.friction_sigmoid[:, 0], PHI[:, 0], rtol=0.05)
    np.testing.assert_allclose(result.friction_sigmoid[:, 2], PHI[:, 2], atol=0.01)
    fit = result.fit
    expected = torques(run.model, result.layout, result.delta, fit.q, fit.dq, fit.ddq) + sigmoid_torque(
        fit.dq, result.friction_sigmoid)
    np.testing.assert_allclose(fit.tau_hat, expected, rtol=1e-9, atol=1e-9)  # the report shows this fit
    error = np.linalg.norm(fit.tau - fit.tau_hat) / np.linalg.norm(fit.tau)
    assert result.relative_error == pytest.approx(error, rel=1e-12)
    noise_share = 0.01 * np.sqrt(fit.tau.size) / np.linalg.norm(fit.tau)
    assert result.relative_error < 2.0 * noise_share
