"""The prior of the feasible estimate: the nominal parameters and how far a real robot may be from them.

A robot description (CAD / URDF) is taken as a Gaussian prior on every standard parameter, with a
standard deviation from stated tolerances (config ``identification.prior_tolerance``, defaults below):

- mass: ``mass * M`` (relative tolerance of each link mass; ``M`` the link's mass scale);
- CoM position: per axis, ``com_relative`` times the link's length scale (its radius of gyration about the joint
  origin: a CAD CoM is good to a share of the link's size, whatever the robot's size), or ``com`` [m] when given;
- inertia about the CoM: ``inertia * tr(I_com0) / 3`` per entry (relative tolerance of the rotational inertia);
- these independent errors are propagated to the ten parameters about the joint frame (first moments
  ``m c``, inertia ``I_com + m (|c|^2 1 - c c^T)``) by the Jacobian, so the prior covariance is full per
  link (:func:`link_covariance`);
- friction, offset and rotor inertia: mean the description's value (URDF ``<dynamics damping friction>``, armature;
  0 where it gives none), standard deviation ``joint`` times the value that alone would explain the joint's RMS
  torque (a weak prior: a CAD model rarely knows these terms).

Mass and length scales come from :func:`dynid_ros.dynamics.feasibility.link_scales`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

import numpy as np

from dynid_ros.dynamics.feasibility import link_scales
from dynid_ros.errors import ConfigError
from dynid_ros.estimation.fit_quality import relative_norm
from dynid_ros.robot.parameters import ParameterLayout, inertia_about_com, link_parameters

ROTATIONAL_FLOOR = 1e-3
"""A link whose URDF inertia about the CoM is (nearly) zero gets at least this fraction of ``M l^2`` as scale."""


@dataclass
class PriorTolerances:
    """One standard deviation of a real robot about its description (``identification.prior_tolerance``).

    Attributes:
        mass: relative, per link mass (0.25: a link is typically within +-25 % of its CAD mass).
        com: CoM position [m]; None (default): ``com_relative`` times the link's length scale.
        com_relative: CoM position, relative to the link's length scale (its radius of gyration about the joint
            origin, :func:`dynid_ros.dynamics.feasibility.link_scales`): 0.15 is 3 cm for a Panda-sized link of
            20 cm, 1 cm for a 7 cm link of a small arm.
        inertia: relative, of the rotational inertia (CAD inertias are often crude: 50 %).
        joint: friction, offset and rotor inertia, relative to the value explaining the joint's RMS torque.
    """

    mass: float = 0.25
    com: float | None = None
    com_relative: float = 0.15
    inertia: float = 0.5
    joint: float = 1.0

    @classmethod
    def from_config(cls, mapping: Mapping | None) -> PriorTolerances:
        """Tolerances from the ``prior_tolerance:`` mapping (missing keys keep their defaults)."""
        mapping = dict(mapping or {})
        keys = [f.name for f in fields(cls)]
        unknown = sorted(set(mapping) - set(keys))
        if unknown:
            raise ConfigError(f"prior_tolerance: unknown key(s) {', '.join(map(str, unknown))}; "
                              f"allowed: {', '.join(keys)}")
        out = cls()
        for key, value in mapping.items():
            try:
                number = float(value)
            except (TypeError, ValueError) as err:
                raise ConfigError(f"prior_tolerance: {key} must be a number, not {value!r}") from err
            if not np.isfinite(number) or number <= 0:
                raise ConfigError(f"prior_tolerance: {key} must be > 0, not {value!r}")
            setattr(out, key, number)
        return out


@dataclass
class Prior:
    """Gaussian prior on the standard parameters: ``mean``, ``std`` and the covariance ``cov`` (None: diagonal)."""

    mean: np.ndarray
    std: np.ndarray
    cov: np.ndarray | None = None

    @property
    def covariance(self) -> np.ndarray:
        """The full covariance: ``cov``, or ``diag(std^2)`` when it is None."""
        return np.diag(self.std**2) if self.cov is None else self.cov

    def factor(self) -> np.ndarray:
        """``F`` with ``(delta - mean)^T cov^-1 (delta - mean) = ||F (delta - mean)||^2``."""
        if self.cov is None:
            return np.diag(1.0 / self.std)
        return np.linalg.inv(np.linalg.cholesky(self.cov))


def joint_term_scales(layout: ParameterLayout, dq: np.ndarray, ddq: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Per joint term, the value that alone would explain the joint's RMS torque (0 where not applicable).

    ``dq``, ``ddq``, ``tau``: (samples, n_dof). Viscous: ``rms(tau) / rms(q')``; Coulomb and offset:
    ``rms(tau)``; rotor inertia: ``rms(tau) / rms(q'')``.
    """
    out = np.zeros(layout.n_parameters)
    rms = (lambda v: float(np.sqrt(np.mean(np.square(v)))))  # noqa: E731
    for j in range(layout.n_dof):
        torque = max(rms(tau[:, j]), 1e-9)
        regressor = {"fv": rms(dq[:, j]), "fc": 1.0, "fo": 1.0, "Ia": rms(ddq[:, j])}
        for symbol in layout.joint_terms:
            out[layout.joint_index(j, symbol)] = torque / max(regressor[symbol], 1e-9)
    return out


def cad_prior(nominal: np.ndarray, layout: ParameterLayout, tolerances: PriorTolerances | None = None,
              joint_scales: np.ndarray | None = None, attached: np.ndarray | None = None) -> Prior:
    """The prior of the module docstring around ``nominal`` (joint terms: the description's values).

    ``joint_scales``: from :func:`joint_term_scales`; None gives joint terms a very weak prior (1e3).
    ``attached``: known parts fixed to each link (a gripper): the tolerances apply to the link alone.
    """
    tolerances = tolerances or PriorTolerances()
    nominal = np.asarray(nominal, dtype=float)
    own = nominal - (0.0 if attached is None else np.asarray(attached, dtype=float))
    mean, cov = nominal.copy(), np.zeros((layout.n_parameters, layout.n_parameters))
    scales = link_scales(own, layout)
    for k in range(len(layout.links)):
        part = layout.link_slice(k)
        cov[part, part] = link_covariance(own[part], *scales[k], tolerances)
    joint = np.arange(layout.n_link_parameters, layout.n_parameters)  # mean: the description's (0 if none)
    scale = np.full(layout.n_parameters, 1e3) if joint_scales is None else np.asarray(joint_scales, dtype=float)
    cov[joint, joint] = (tolerances.joint * np.maximum(scale[joint], 1e-9)) ** 2
    return Prior(mean, np.sqrt(np.diag(cov)), cov)


def link_covariance(p: np.ndarray, big_m: float, length: float, tolerances: PriorTolerances) -> np.ndarray:
    """Covariance of one link's ten parameters: independent mass, CoM and inertia-about-CoM errors of the
    stated tolerances, propagated through ``delta(m, c, I_com)`` (:func:`dynid_ros.robot.parameters.link_parameters`,
    the parallel-axis theorem) by its Jacobian at the nominal link: when the data move the first moment,
    the inertia about the joint follows as it would for a real body."""
    mass = float(p[0]) if p[0] > 0 else big_m
    com = p[1:4] / mass
    _, _, inertia_com = inertia_about_com(p) if p[0] > 0 else (0.0, None, np.zeros((3, 3)))
    rotational = max(float(np.trace(inertia_com)) / 3.0, ROTATIONAL_FLOOR * big_m * length**2)
    entries = [(0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2)]

    def delta(u: np.ndarray) -> np.ndarray:
        inertia = np.zeros((3, 3))
        for value, (a, b) in zip(u[4:], entries):
            inertia[a, b] = inertia[b, a] = value
        return link_parameters(u[0], u[1:4], inertia)

    u0 = np.array([mass, *com, *(inertia_com[a, b] for a, b in entries)])
    com_std = tolerances.com if tolerances.com is not None else tolerances.com_relative * length
    std = np.array([tolerances.mass * big_m, *([com_std] * 3), *([tolerances.inertia * rotational] * 6)])
    jacobian = np.column_stack([(delta(u0 + h * e) - delta(u0 - h * e)) / (2.0 * h)
                                for h, e in zip(std, np.eye(10))])  # exact: delta is quadratic in u
    cov = jacobian @ np.diag(std**2) @ jacobian.T
    return cov + np.diag((1e-3 * np.sqrt(np.diag(cov))) ** 2)  # keeps it positive definite for massless links


MASS_RATIO_RANGE = (0.5, 2.0)
"""A link whose identified mass leaves this range of the prior's is flagged as unrealistic."""


def link_realism(delta: np.ndarray, reference: np.ndarray, layout: ParameterLayout,
                 attached: np.ndarray | None = None) -> list[dict]:
    """Per link (without its attached parts): identified and prior mass, their ratio, the CoM shift [m] and
    the relative change of the inertia about the CoM (Frobenius norm), identified vs ``reference``."""
    attached = np.zeros(layout.n_parameters) if attached is None else np.asarray(attached, dtype=float)
    out = []
    for k, link in enumerate(layout.links):
        part = layout.link_slice(k)
        mass, com, inertia = inertia_about_com(delta[part] - attached[part])
        mass0, com0, inertia0 = inertia_about_com(reference[part] - attached[part])
        ratio = float(mass / mass0) if mass0 > 0 else float("inf")
        change = relative_norm(inertia - inertia0, inertia0)
        out.append({"link": link, "mass": float(mass), "prior_mass": float(mass0), "mass_ratio": ratio,
                    "com_shift_m": float(np.linalg.norm(com - com0)), "inertia_change": change,
                    "realistic_mass": bool(MASS_RATIO_RANGE[0] <= ratio <= MASS_RATIO_RANGE[1])})
    return out
