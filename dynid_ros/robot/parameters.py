"""The parameter convention of dynid_ros, stated once.

Link parameters
    Per identified link (the body moved by one identified joint, including any links
    rigidly fixed to it), ten inertial parameters in pinocchio's order
    (``pinocchio.Inertia.toDynamicParameters``)::

        [m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]

    ``m`` is the mass [kg]; ``(mx, my, mz) = m * c`` is the first moment of mass [kg m]
    with ``c`` the centre of mass in the joint frame; ``I..`` is the inertia tensor
    [kg m^2] **about the joint-frame origin**, expressed in the joint frame
    (``I_origin = I_com + m * S(c)^T S(c)``).

Joint parameters
    Per identified joint, after all link parameters, in this order when enabled:
    ``fv`` viscous friction [N m s/rad], ``fc`` Coulomb friction [N m],
    ``fo`` offset [N m] (Sousa & Cortesão 2014 eq. 27: ``f = fv q' + fc sign(q') + fo``), and
    ``Ia`` armature (rotor inertia reflected to the joint) [kg m^2], which adds
    ``Ia q''`` to the joint torque. The sigmoid friction of Gaz et al. 2019 eq. 25 (``sigmoid``
    in a layout's ``friction``) is nonlinear and kept outside this vector (three ``phi`` per joint).

Stacking
    The full parameter vector is ``[link_1 (10), ..., link_n (10), joint_1 terms, ...,
    joint_n terms]``. Regressor rows are sample-major: row ``s * n_dof + j`` is joint
    ``j`` at sample ``s`` (Sousa & Cortesão 2014 eq. 57).

Units and frames
    SI units throughout; gravity is the model's gravity (default ``[0, 0, -9.81]`` in the
    base frame); time is in seconds from the first sample used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.errors import ConfigError

LINK_PARAMETER_NAMES: tuple[str, ...] = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
"""Names of the ten inertial parameters of one link, in pinocchio's order."""

FRICTION_TERMS: tuple[str, ...] = ("viscous", "coulomb", "offset")
"""Friction terms that can be enabled, in their stacking order."""

NONLINEAR_FRICTION: tuple[str, ...] = ("sigmoid",)
"""Friction models that are not linear in their parameters (Gaz et al. 2019 eq. 25,
:mod:`dynid_ros.estimation.sigmoid_friction`): listed in a layout's ``friction`` but not in its parameter vector."""

FRICTION_SYMBOLS: dict[str, str] = {"viscous": "fv", "coulomb": "fc", "offset": "fo"}
ARMATURE_SYMBOL = "Ia"


TRIANGLE_MARGIN = 1e-5
"""Relative margin of the triangle inequality kept by every written inertia: principal moments
``A + B >= (1 + TRIANGLE_MARGIN) C`` and ``A > TRIANGLE_MARGIN tr(I)`` (estimators keep a wider one)."""

def parse_friction(text: str | list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """Parse ``"viscous,coulomb"`` (or a list, or ``"none"``) into ordered friction terms (``sigmoid`` last)."""

    if text is None:
        return ()
    items = text.split(",") if isinstance(text, str) else list(text)
    items = [item.strip().lower() for item in items if item.strip()]
    if items in ([], ["none"]):
        return ()
    known = FRICTION_TERMS + NONLINEAR_FRICTION
    unknown = [item for item in items if item not in known]
    if unknown:
        raise ConfigError(f"unknown friction term(s) {unknown}; choose from {', '.join(known)}")
    return tuple(term for term in known if term in items)


@dataclass(frozen=True)
class ParameterLayout:
    """Which parameters are in the vector and where.

    ``links[k]`` is the name of the body moved by ``joints[k]``.
    """

    joints: tuple[str, ...]
    links: tuple[str, ...]
    friction: tuple[str, ...] = FRICTION_TERMS
    armature: bool = True

    @property
    def n_dof(self) -> int:
        """Number of joints."""
        return len(self.joints)

    @property
    def n_link_parameters(self) -> int:
        """Number of link parameters: ten per link."""
        return 10 * len(self.links)

    @property
    def joint_terms(self) -> tuple[str, ...]:
        """Symbols of the per-joint terms, in stacking order (e.g. ``("fv", "fc", "fo", "Ia")``)."""
        terms = tuple(FRICTION_SYMBOLS[f] for f in self.friction if f in FRICTION_SYMBOLS)
        return terms + ((ARMATURE_SYMBOL,) if self.armature else ())

    @property
    def n_joint_terms(self) -> int:
        """Number of per-joint terms (friction and armature)."""
        return len(self.joint_terms)

    @property
    def n_parameters(self) -> int:
        """Length of the parameter vector: link parameters plus per-joint terms."""
        return self.n_link_parameters + self.n_dof * self.n_joint_terms

    def link_slice(self, k: int) -> slice:
        """Slice of link ``k``'s ten parameters."""
        return slice(10 * k, 10 * k + 10)

    def joint_index(self, j: int, symbol: str) -> int:
        """Index of joint ``j``'s term ``symbol`` (``"fv"``, ``"fc"``, ``"fo"`` or ``"Ia"``)."""
        return self.n_link_parameters + j * self.n_joint_terms + self.joint_terms.index(symbol)

    def indices(self, symbol: str) -> np.ndarray:
        """Indices of one joint term for all joints, or of one link parameter for all links."""
        if symbol in LINK_PARAMETER_NAMES:
            offset = LINK_PARAMETER_NAMES.index(symbol)
            return np.arange(len(self.links)) * 10 + offset
        if symbol not in self.joint_terms:
            return np.zeros(0, dtype=int)
        return np.array([self.joint_index(j, symbol) for j in range(self.n_dof)], dtype=int)

    @property
    def names(self) -> list[str]:
        """One readable name per parameter: ``"<link>.<param>"`` or ``"<joint>.<term>"``."""
        out = [f"{link}.{p}" for link in self.links for p in LINK_PARAMETER_NAMES]
        out += [f"{joint}.{t}" for joint in self.joints for t in self.joint_terms]
        return out

    @property
    def symbols(self) -> list[str]:
        """Short symbols per parameter for expressions: ``m1, mx1, ..., Izz1, fv1, Ia1``."""
        out = [f"{p}{k + 1}" for k in range(len(self.links)) for p in LINK_PARAMETER_NAMES]
        out += [f"{t}{j + 1}" for j in range(self.n_dof) for t in self.joint_terms]
        return out


def inertia_about_com(link_parameters: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Split ten link parameters into ``(mass, com [3], inertia about the CoM [3x3])``."""
    m = float(link_parameters[0])
    first = np.asarray(link_parameters[1:4], dtype=float)
    com = first / m if m != 0 else np.zeros(3)
    i_origin = inertia_matrix(link_parameters)
    s = skew(com)
    return m, com, i_origin - m * s.T @ s


def inertia_matrix(link_parameters: np.ndarray) -> np.ndarray:
    """3x3 inertia about the link-frame origin from the ten parameters."""
    ixx, ixy, iyy, ixz, iyz, izz = (float(v) for v in link_parameters[4:10])
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def link_parameters(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """Ten link parameters from mass, CoM and inertia about the CoM (all in the link frame)."""
    com = np.asarray(com, dtype=float)
    s = skew(com)
    i_o = np.asarray(inertia_com, dtype=float) + mass * s.T @ s
    return np.array([mass, *(mass * com), i_o[0, 0], i_o[0, 1], i_o[1, 1], i_o[0, 2], i_o[1, 2], i_o[2, 2]])


def skew(v: np.ndarray) -> np.ndarray:
    """Skew-symmetric matrix with ``skew(a) @ b == cross(a, b)``."""
    x, y, z = (float(c) for c in v)
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
