"""An extra rigid body on a link: an unmodelled tool or payload at the flange.

A body rigidly fixed to link ``L`` adds its ten inertial parameters to ``L``'s: the data see only the sum. What
tells a tool from the link is the prior: the link has its CAD tolerances (:mod:`dynid_ros.estimation.prior`), the
load a wide prior with mean 0 (its mass from 0, not from the URDF). With both Gaussian, the MAP estimate of the sum
is that of the link with the prior covariance ``Sigma_L + Sigma_load`` (:func:`with_extra_body`), and the load's
share of the estimate is the conditional mean ``Sigma_load (Sigma_L + Sigma_load)^-1 (delta_sum - mean_L)``
(:func:`split_extra_body`). When the load is not significant (:data:`SIGNIFICANT`), the identification is run
again with the links' own prior (:func:`dynid_ros.identification.identify.identify`): an arm without a tool is
identified exactly as before. Without it, a tool the URDF lacks is absorbed into whichever links explain its
torque best (Gaz et al. 2019 and Wang et al. 2019 identify a payload the same way: as a body of its own).

The load's prior: mass std :data:`LOAD_MASS_SHARE` of the arm's nominal mass; first moments ``sigma_m l`` and second
moments ``sigma_m l^2`` with ``l`` the link's length scale (:func:`dynid_ros.dynamics.feasibility.link_scales`).

The FBPE constrains the link-plus-load sum; the conditional mean of the load alone need not be a physical body. A
reported load is therefore projected onto the fully consistent set (pseudo-inertia ``J(pi) >= 0``, Traversaro et al.
2016) in the metric of its posterior covariance, ``min (pi - mean)^T Sigma^-1 (pi - mean)`` s.t. ``J(pi) >= 0``:
the same LMI solver as payload identification (:func:`dynid_ros.estimation.payload.fit_body_lmi`), with
``W = Sigma^-1/2``; the link keeps the rest of the sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.dynamics.feasibility import link_scales
from dynid_ros.estimation.payload import fit_body_lmi
from dynid_ros.estimation.prior import Prior
from dynid_ros.robot.parameters import ParameterLayout, inertia_about_com

LOAD_MASS_SHARE = 0.25
"""Prior std of an unmodelled load's mass, as a share of the arm's nominal mass (wide: a tool is rarely heavier)."""
SIGNIFICANT = 2.0
"""A load is reported when its mass exceeds this many of its standard deviations."""


@dataclass
class ExtraBody:
    """A body fixed to ``layout.links[link]`` with the prior covariance ``covariance`` (10 x 10, mean 0)."""

    link: int
    covariance: np.ndarray


def flange_load(nominal: np.ndarray, layout: ParameterLayout, attached: np.ndarray | None = None,
                link: int | None = None) -> ExtraBody:
    """The wide prior of a load on link ``link`` (default the last; the flange: the link the last identified joint
    moves, not a mimic follower such as a finger) (module docstring)."""
    own = nominal - (0.0 if attached is None else attached)
    masses = np.array([own[layout.link_slice(k)][0] for k in range(len(layout.links))])
    sigma = LOAD_MASS_SHARE * max(float(masses.sum()), 1e-3)
    last = len(layout.links) - 1 if link is None else int(link)
    length = float(link_scales(own, layout)[last][1])
    std = np.array([sigma] + [sigma * length] * 3 + [sigma * length**2] * 6)
    return ExtraBody(last, np.diag(std**2))


def with_extra_body(prior: Prior, layout: ParameterLayout, body: ExtraBody) -> Prior:
    """The prior of the link-plus-body sum: the body's covariance added to the link's block."""
    cov = prior.covariance.copy()
    part = layout.link_slice(body.link)
    cov[part, part] += body.covariance
    return Prior(prior.mean.copy(), np.sqrt(np.diag(cov)), cov)


def split_extra_body(delta: np.ndarray, delta_std: np.ndarray | None, link_prior: Prior, layout: ParameterLayout,
                     body: ExtraBody) -> tuple[np.ndarray, dict | None]:
    """``(body parameters, report)``: the body's conditional mean given the estimated sum, and the report entry
    ``{"link", "mass", "com", "mass_std"}`` (com in the link's joint frame) when its mass is significant, else None.
    A reported body is the conditional mean projected onto the physically consistent set (module docstring).

    ``link_prior``: the prior of the link alone (before :func:`with_extra_body`)."""
    part = layout.link_slice(body.link)
    sigma_link = link_prior.covariance[part, part]
    total = sigma_link + body.covariance
    gain = body.covariance @ np.linalg.inv(total)
    params = gain @ (delta[part] - link_prior.mean[part])
    conditional = body.covariance - gain @ body.covariance
    variance = float(conditional[0, 0])
    if delta_std is not None:
        variance += float(np.sum(gain[0] ** 2 * delta_std[part] ** 2))
    mass_std = float(np.sqrt(max(variance, 0.0)))
    mass = float(params[0])
    if not mass > SIGNIFICANT * mass_std:
        return params, None
    params = consistent_body(params, conditional)
    _, com, _ = inertia_about_com(params)
    return params, {"link": layout.links[body.link], "mass": float(params[0]), "com": [float(c) for c in com],
                    "mass_std": mass_std}


def consistent_body(params: np.ndarray, covariance: np.ndarray) -> np.ndarray:
    """The fully consistent body nearest to ``params`` in the metric ``covariance^-1`` (module docstring)."""
    values, vectors = np.linalg.eigh(0.5 * (covariance + covariance.T))
    floor = 1e-12 * max(float(values.max()), 1e-300)
    whiten = (vectors / np.sqrt(np.maximum(values, floor))).T  # Sigma^-1/2
    return fit_body_lmi(whiten, whiten @ params).parameters
