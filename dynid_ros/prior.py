"""The prior of the feasible estimate: the nominal parameters and how far a real robot may be from them.

A robot description (CAD / URDF) is taken as a Gaussian prior on every standard parameter, with a
standard deviation from stated tolerances (config ``identification.prior_tolerance``, defaults below):

- mass: ``mass * M`` (relative tolerance of each link mass; ``M`` the link's mass scale);
- first moments ``m c``: ``sqrt((mass * m0 c0)^2 + (M com)^2)`` (mass tolerance and a CoM position
  tolerance ``com`` [m]);
- inertia about the joint frame: ``sqrt((inertia * M l^2)^2 + (2 M |c0| com)^2)`` (``l``: the link's
  radius of gyration about its joint, ``inertia``: relative tolerance of the rotational inertia; the
  second term is what a CoM shift adds through the parallel-axis theorem);
- friction, offset and rotor inertia: mean 0, standard deviation ``joint`` times the value that alone
  would explain the joint's RMS torque (a weak prior: these terms are not in a CAD model).

Mass and length scales come from :func:`dynid_ros.feasibility.link_scales`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

import numpy as np

from dynid_ros.errors import ConfigError
from dynid_ros.feasibility import link_scales
from dynid_ros.parameters import ParameterLayout


@dataclass
class PriorTolerances:
    """One standard deviation of a real robot about its description (``identification.prior_tolerance``).

    Attributes:
        mass: relative, per link mass (0.25: a link is typically within +-25 % of its CAD mass).
        com: CoM position [m].
        inertia: relative, of the rotational inertia (CAD inertias are often crude: 50 %).
        joint: friction, offset and rotor inertia, relative to the value explaining the joint's RMS torque.
    """

    mass: float = 0.25
    com: float = 0.03
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
    """Gaussian prior on the standard parameters: ``mean`` and ``std`` (same layout)."""

    mean: np.ndarray
    std: np.ndarray


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
    """The prior of the module docstring around ``nominal`` (link parameters; joint terms get mean 0).

    ``joint_scales``: from :func:`joint_term_scales`; None gives joint terms a very weak prior (1e3).
    ``attached``: known parts fixed to each link (a gripper): the tolerances apply to the link alone.
    """
    tolerances = tolerances or PriorTolerances()
    nominal = np.asarray(nominal, dtype=float)
    own = nominal - (0.0 if attached is None else np.asarray(attached, dtype=float))
    mean, std = nominal.copy(), np.zeros(layout.n_parameters)
    scales = link_scales(own, layout)
    for k in range(len(layout.links)):
        p = own[layout.link_slice(k)]
        big_m, length = scales[k]
        com = p[1:4] / big_m if p[0] <= 0 else p[1:4] / p[0]
        first = np.sqrt((tolerances.mass * p[1:4]) ** 2 + (big_m * tolerances.com) ** 2)
        inertia = np.hypot(tolerances.inertia * big_m * length**2, 2.0 * big_m * np.linalg.norm(com) * tolerances.com)
        std[layout.link_slice(k)] = [tolerances.mass * big_m, *first, *([inertia] * 6)]
    joint = slice(layout.n_link_parameters, layout.n_parameters)
    mean[joint] = 0.0
    scale = np.full(layout.n_parameters, 1e3) if joint_scales is None else np.asarray(joint_scales, dtype=float)
    std[joint] = tolerances.joint * np.maximum(scale[joint], 1e-9)
    return Prior(mean, std)


MASS_RATIO_RANGE = (0.5, 2.0)
"""A link whose identified mass leaves this range of the prior's is flagged as unrealistic."""


def link_realism(delta: np.ndarray, reference: np.ndarray, layout: ParameterLayout,
                 attached: np.ndarray | None = None) -> list[dict]:
    """Per link (without its attached parts): identified and prior mass, their ratio, the CoM shift [m] and
    the relative change of the inertia about the CoM (Frobenius norm), identified vs ``reference``."""
    from dynid_ros.parameters import inertia_about_com

    attached = np.zeros(layout.n_parameters) if attached is None else np.asarray(attached, dtype=float)
    out = []
    for k, link in enumerate(layout.links):
        part = layout.link_slice(k)
        mass, com, inertia = inertia_about_com(delta[part] - attached[part])
        mass0, com0, inertia0 = inertia_about_com(reference[part] - attached[part])
        ratio = float(mass / mass0) if mass0 > 0 else float("inf")
        change = float(np.linalg.norm(inertia - inertia0) / max(np.linalg.norm(inertia0), 1e-300))
        out.append({"link": link, "mass": float(mass), "prior_mass": float(mass0), "mass_ratio": ratio,
                    "com_shift_m": float(np.linalg.norm(com - com0)), "inertia_change": change,
                    "realistic_mass": bool(MASS_RATIO_RANGE[0] <= ratio <= MASS_RATIO_RANGE[1])})
    return out
