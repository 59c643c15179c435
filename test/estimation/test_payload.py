"""A body rigidly attached to a link (a payload, a tool) from its regressor columns: by the pseudo-inertia SDP and
on the manifold of physical bodies (Traversaro et al. 2016), known bodies recovered, both solutions physical."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.dynamics.feasibility import link_matrix
from dynid_ros.estimation.payload import body_columns, fit_body_lmi, fit_body_manifold, mass_share
from dynid_ros.robot.parameters import ParameterLayout, inertia_about_com, link_parameters


def test_manifold_iterates_stay_physical_from_a_flat_start():
    """A thin rod (second moments 0, L, L): the manifold solution is a body; the LMI's pseudo-inertia is PSD."""
    rng = np.random.default_rng(1)
    rod = link_parameters(0.4, np.array([0.1, 0.0, 0.02]), np.diag([1e-7, 2e-3, 2e-3]))
    w = rng.normal(size=(2000, 10)) * np.array([10, 30, 30, 30, 5, 5, 5, 5, 5, 5])
    tau = w @ rod + rng.normal(0.0, 0.05, 2000)
    for fit in (fit_body_lmi(w, tau), fit_body_manifold(w, tau, start=np.r_[1.0, np.zeros(9)])):
        assert abs(fit.mass - 0.4) < 0.004 and np.linalg.norm(fit.com - [0.1, 0.0, 0.02]) < 1e-3
        assert np.linalg.eigvalsh(link_matrix(fit.parameters, "full"))[0] >= -1e-9


def test_a_known_body_from_noise_free_columns_by_both_solvers():
    rng = np.random.default_rng(2)
    body = link_parameters(1.5, np.array([0.03, -0.02, 0.08]), np.array([[0.004, 0.0005, 0.0],
                                                                         [0.0005, 0.005, 0.0], [0.0, 0.0, 0.002]]))
    w = rng.normal(size=(600, 10)) * np.array([10, 30, 30, 30, 5, 5, 5, 5, 5, 5])
    tau = w @ body
    for fit in (fit_body_lmi(w, tau), fit_body_manifold(w, tau)):
        np.testing.assert_allclose(fit.parameters, body, rtol=1e-4, atol=1e-6)
        assert fit.residual_rms < 1e-4 and fit.seconds >= 0.0 and fit.iterations != 0
        record = fit.to_dict()
        assert record["mass"] == pytest.approx(1.5, rel=1e-4) and record["min_pseudo_inertia_eigenvalue"] > 0
        np.testing.assert_allclose(record["com"], [0.03, -0.02, 0.08], atol=1e-5)
        np.testing.assert_allclose(fit.inertia_com, inertia_about_com(body)[2], atol=1e-6)


def test_mass_share_tells_whether_the_data_can_weigh_the_body():
    rng = np.random.default_rng(3)
    w = rng.normal(size=(200, 10))
    assert mass_share(w) == pytest.approx(np.linalg.norm(w[:, 0] - w[:, 1:] @ np.linalg.lstsq(
        w[:, 1:], w[:, 0], rcond=None)[0]) / np.linalg.norm(w[:, 0]))
    assert 0.5 < mass_share(w) <= 1.0
    mimic = w.copy()
    mimic[:, 0] = 2.0 * w[:, 1] - w[:, 5]  # the mass column is what others already explain
    assert mass_share(mimic) < 1e-12
    zero = w.copy()
    zero[:, 0] = 0.0
    assert mass_share(zero) == 0.0


def test_body_columns_are_the_links_columns_of_the_regressor():
    layout = ParameterLayout(("j1", "j2"), ("a", "b"), ("viscous",), False)
    y = np.arange(4 * 2 * layout.n_parameters, dtype=float).reshape(4, 2, layout.n_parameters)
    columns = body_columns(y, layout, "b")
    assert columns.shape == (8, 10)
    np.testing.assert_array_equal(columns, y[:, :, 10:20].reshape(-1, 10))
    with pytest.raises(ValueError):
        body_columns(y, layout, "c")
