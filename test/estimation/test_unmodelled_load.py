"""The unmodelled load's own physical consistency: the conditional mean of the load
given the link-plus-load sum need not be a physical body; the reported one is projected onto the fully consistent set
with the payload identification's LMI (estimation.payload.fit_body_lmi), in the metric of its posterior."""

from __future__ import annotations

import numpy as np

from dynid_ros.dynamics.feasibility import link_matrix
from dynid_ros.estimation.prior import cad_prior
from dynid_ros.estimation.unmodelled_load import consistent_body, flange_load, split_extra_body, with_extra_body
from dynid_ros.robot.model import load_model, nominal_parameters
from dynid_ros.robot.parameters import link_parameters

from support.paths import REPO

PANDA_URDF = REPO / "urdf" / "panda.urdf"


def _lowest(params: np.ndarray) -> float:
    return float(np.linalg.eigvalsh(link_matrix(params, "full"))[0])


def test_a_physical_body_is_its_own_projection():
    body = link_parameters(1.2, np.array([0.01, -0.02, 0.05]), np.diag([2e-3, 3e-3, 1.5e-3]))
    assert np.allclose(consistent_body(body, np.diag(np.full(10, 0.1))), body, atol=1e-6)


def test_the_reported_load_is_physically_consistent_and_the_link_keeps_the_rest():
    model = load_model(urdf=PANDA_URDF)
    layout = model.layout_for()
    nominal = nominal_parameters(model, layout)
    prior = cad_prior(nominal, layout)
    load = flange_load(nominal, layout)
    part = layout.link_slice(load.link)
    delta = nominal.copy()
    # a 1 kg load 5 cm out whose second moments are far below those of a point mass there: not a body
    delta[part] += link_parameters(1.0, np.array([0.0, 0.0, 0.05]), np.zeros((3, 3)))
    delta[part][4:] -= 0.004 * np.array([1.0, 0.0, 0.0, 1.0, 0.0, 1.0])
    mean = load.covariance @ np.linalg.inv(prior.covariance[part, part] + load.covariance) @ (delta - nominal)[part]
    assert _lowest(mean) < -1e-6  # the conditional mean alone is not a body
    params, report = split_extra_body(delta, None, prior, layout, load)
    assert report is not None and report["link"] == layout.links[load.link]
    assert _lowest(params) >= -1e-9 and np.isclose(report["mass"], params[0])
    assert 0.7 < report["mass"] < 1.3
    assert with_extra_body(prior, layout, load).std[part][0] > prior.std[part][0]
