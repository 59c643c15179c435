"""Drive gains from a known payload (Pennese et al. 2021 eq. 2): a three-joint arm whose efforts are its torques
divided by per-joint gains, run without and with a 1 kg payload of known CoM; the gains, the payload and a feasible
robot are recovered jointly."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.dynamics.feasibility import is_feasible
from dynid_ros.dynamics.regressor import regressor_3d
from dynid_ros.errors import ConfigError
from dynid_ros.estimation.drive_gains import fit_drive_gains
from dynid_ros.estimation.payload import body_columns
from dynid_ros.robot.parameters import link_parameters

from support.arm_runs import RICH, arm_run, motion

GAINS = np.array([0.05, 0.08, 0.2])
"""Torque per unit of recorded effort (e.g. N m per A)."""
PAYLOAD = link_parameters(1.0, np.array([0.15, 0.0, 0.02]), 1e-3 * np.eye(3))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    run = arm_run(tmp_path_factory.mktemp("arm"), amplitude=RICH)
    t = np.linspace(0.0, 8.0, 801)
    rng = np.random.default_rng(0)
    q, dq, ddq = motion(t, 8.0, RICH)
    y_u = regressor_3d(run.model, run.layout, q, dq, ddq)
    e_u = (y_u @ run.truth) / GAINS + rng.normal(0.0, 0.01, q.shape)
    q2, dq2, ddq2 = motion(t, 8.0, RICH[::-1])  # the loaded run moves otherwise
    y_l = regressor_3d(run.model, run.layout, q2, dq2, ddq2)
    y_p = body_columns(y_l, run.layout, "l3").reshape(t.size, 3, 10)
    e_l = (y_l @ run.truth + y_p @ PAYLOAD) / GAINS + rng.normal(0.0, 0.01, q.shape)
    return run, (y_u, e_u), (y_l, y_p, e_l)


def test_gains_payload_and_robot_are_recovered(runs):
    run, unloaded, loaded = runs
    fit = fit_drive_gains(unloaded, loaded, run.layout, run.truth * 1.1, 1.0, PAYLOAD[1:4] / 1.0)
    assert fit.status == "optimal"
    np.testing.assert_allclose(fit.gains, GAINS, rtol=0.02)
    assert fit.payload[0] == 1.0 and np.allclose(fit.payload[1:4], PAYLOAD[1:4])  # the known mass and CoM, as given
    assert is_feasible(fit.delta, run.layout, "full", tol=1e-9)
    predicted = regressor_3d(run.model, run.layout, *motion(np.linspace(0, 8, 101), 8.0, RICH)) @ fit.delta
    truth = regressor_3d(run.model, run.layout, *motion(np.linspace(0, 8, 101), 8.0, RICH)) @ run.truth
    assert np.linalg.norm(predicted - truth) / np.linalg.norm(truth) < 0.02  # the robot's torque, in N m


def test_with_only_the_payloads_mass_known(runs):
    run, unloaded, loaded = runs
    fit = fit_drive_gains(unloaded, loaded, run.layout, run.truth, 1.0)
    np.testing.assert_allclose(fit.gains, GAINS, rtol=0.05)
    assert fit.payload[0] == 1.0
    np.testing.assert_allclose(fit.payload[1:4] / fit.payload[0], PAYLOAD[1:4], atol=0.02)  # its CoM found


def test_an_unknown_solver_is_a_config_error(runs):
    run, unloaded, loaded = runs
    with pytest.raises(ConfigError, match="solver"):
        fit_drive_gains(unloaded, loaded, run.layout, run.truth, 1.0, solver="mosek")
