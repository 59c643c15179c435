"""A body rigidly attached to a link (a payload, a tool) from its regressor columns: by the pseudo-inertia SDP and
on the manifold of physical bodies (Traversaro et al. 2016), known bodies recovered, both solutions physical."""

from __future__ import annotations

import numpy as np

from dynid_ros.dynamics.feasibility import link_matrix
from dynid_ros.estimation.payload import fit_body_lmi, fit_body_manifold
from dynid_ros.robot.parameters import link_parameters


def test_manifold_iterates_stay_physical_from_a_flat_start():
    """A thin rod (second moments 0, L, L): the manifold solution is a body; the LMI's pseudo-inertia is PSD."""
    rng = np.random.default_rng(1)
    rod = link_parameters(0.4, np.array([0.1, 0.0, 0.02]), np.diag([1e-7, 2e-3, 2e-3]))
    w = rng.normal(size=(2000, 10)) * np.array([10, 30, 30, 30, 5, 5, 5, 5, 5, 5])
    tau = w @ rod + rng.normal(0.0, 0.05, 2000)
    for fit in (fit_body_lmi(w, tau), fit_body_manifold(w, tau, start=np.r_[1.0, np.zeros(9)])):
        assert abs(fit.mass - 0.4) < 0.004 and np.linalg.norm(fit.com - [0.1, 0.0, 0.02]) < 1e-3
        assert np.linalg.eigvalsh(link_matrix(fit.parameters, "full"))[0] >= -1e-9
