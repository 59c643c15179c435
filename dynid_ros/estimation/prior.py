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
  torque (a weak prior: a CAD model rarely knows these terms). A description's value that alone would explain more
  than :data:`IMPLAUSIBLE_JOINT_TERM` times the joint's RMS torque is no measurement of the robot (vendor
  descriptions carry placeholders: ``damping="10" friction="1"`` on every joint of a 2.8 kg arm): its mean is 0
  (:attr:`PriorGroups.untrusted`, named in the result's warnings).

Mass and length scales come from :func:`dynid_ros.dynamics.feasibility.link_scales`.

The covariance is a sum over four groups, ``Sigma(s) = sum_g s_g^2 Sigma_g`` (:class:`PriorGroups`; ``g`` in
:data:`GROUPS`: link masses, CoMs (first moments), inertias, joint terms; ``Sigma_g`` at the stated tolerance), so a
scale per group can be chosen from the data (:mod:`dynid_ros.estimation.hyperparameters`).

**The link masses** may take a shape of their own (:class:`MassShape`): the Gaussian is kept for the other nine
parameters of each link *given* its mass (the conditional Gaussian), and the mass gets the penalty
``(x + 1/x - 2) / r^2`` of its ratio ``x = m / m_cad`` (``r``: its relative tolerance), the negative log-density of a
generalized inverse Gaussian (Jorgensen 1982) with its mode at the CAD mass. It equals the Gaussian's
``(x - 1)^2 / r^2`` to second order, is convex in ``m`` (so it sits inside the LMIs of the SDP), grows without bound as
the mass goes to 0 and is symmetric in ``log x`` (half and twice the CAD mass cost the same, ``0.5 / r^2``): a mass
stays positive and near its CAD value unless the data demand otherwise, where the Gaussian lets a link drift toward
zero at the price of a doubling.

:func:`moved_mass_evidence` says how strongly the data support a mass that moved: the Savage-Dickey density ratio
(Dickey 1971; Wagenmakers et al. 2010), the Bayes factor of "the mass moved" against "the mass is the CAD value".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

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

    def scaled(self, scales: Mapping[str, float]) -> PriorTolerances:
        """These tolerances with each group's multiplied by ``scales[group]`` (:data:`GROUPS`; missing: 1; the joint
        terms by :func:`joint_scale_summary` of the joints' own)."""
        factor = {g: float(scales.get(g, 1.0)) for g in GROUPS}
        factor["joint"] = joint_scale_summary(scales)
        return replace(self, mass=self.mass * factor["mass"],
                       com=None if self.com is None else self.com * factor["com"],
                       com_relative=self.com_relative * factor["com"], inertia=self.inertia * factor["inertia"],
                       joint=self.joint * factor["joint"])

    def to_dict(self) -> dict:
        """The ``prior_tolerance:`` mapping of these tolerances (``com`` only when given in metres)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if out["com"] is None:
            del out["com"]
        return out


GROUPS: tuple[str, ...] = ("mass", "com", "inertia", "joint")
"""The kinds of the prior's groups with a scale of their own: link masses, CoMs (the first moments), inertias about the
CoM, joint terms (friction, offset, rotor inertia); the fields of :class:`PriorTolerances` they scale (``com`` scales
``com`` or ``com_relative``). The joint terms are one group per joint (:func:`joint_group`): the share of a joint's
torque its friction and rotor inertia explain differs from joint to joint (most of a wrist's, little of a shoulder's,
whose gravity dominates), so one scale for all is set by the joints whose terms matter least (measured on the 0.6 kg
arm of :mod:`dynid_ros.studies.robustness`: one scale x0.11 held its last joint's viscous friction at the URDF's
0.003 for a truth of 0.0005, held out 2.4 x the truth model's on that joint)."""
JOINT_GROUP = "joint:"
"""Prefix of a joint's group name (:func:`joint_group`)."""


def joint_group(joint: str) -> str:
    """The name of joint ``joint``'s group of joint terms: ``joint:<joint>``."""
    return f"{JOINT_GROUP}{joint}"


def group_scale(scales: Mapping[str, float], name: str) -> float:
    """The scale of group ``name`` in ``scales``: its own, else (a joint's group) the scale ``joint`` given for every
    joint, else 1."""
    if name in scales:
        return float(scales[name])
    if name.startswith(JOINT_GROUP):
        return float(scales.get("joint", 1.0))
    return 1.0


def joint_scale_summary(scales: Mapping[str, float]) -> float:
    """One number for the joint terms' scales: ``joint`` when given for every joint, else the geometric mean of the
    joints' own (1 when there are none)."""
    own = [float(v) for g, v in scales.items() if g.startswith(JOINT_GROUP)]
    if "joint" in scales or not own:
        return float(scales.get("joint", 1.0))
    return float(np.exp(np.mean(np.log(own))))


@dataclass
class MassShape:
    """The link masses' own prior (module docstring): parameter ``index`` of each shaped link mass, its CAD
    ``mode`` [kg] (the link alone, without attached parts), the ``attached`` mass [kg] the parameter includes, and
    the relative tolerance ``ratio_std`` (the mass's standard deviation over its mode)."""

    index: np.ndarray
    mode: np.ndarray
    attached: np.ndarray
    ratio_std: np.ndarray

    def without(self, indices: np.ndarray) -> MassShape | None:
        """The shape without the masses at parameter ``indices`` (None when none is left)."""
        keep = ~np.isin(self.index, np.asarray(indices))
        if not keep.any():
            return None
        return MassShape(self.index[keep], self.mode[keep], self.attached[keep], self.ratio_std[keep])

    def penalty(self, mass: np.ndarray) -> float:
        """``sum (x + 1/x - 2) / r^2`` at the parameter values ``mass`` (infinite at or below zero)."""
        x = (np.asarray(mass, dtype=float) - self.attached) / self.mode
        if np.any(x <= 0):
            return float("inf")
        return float(np.sum((x + 1.0 / x - 2.0) / self.ratio_std**2))

    def half_curvature(self, mass: np.ndarray) -> np.ndarray:
        """Half the second derivative of :meth:`penalty` in each mass parameter (the posterior's precision)."""
        x = np.maximum((np.asarray(mass, dtype=float) - self.attached) / self.mode, 1e-12)
        return 1.0 / (self.ratio_std**2 * x**3 * self.mode**2)


@dataclass
class Prior:
    """Gaussian prior on the standard parameters: ``mean``, ``std`` and the covariance ``cov`` (None: diagonal)."""

    mean: np.ndarray
    std: np.ndarray
    cov: np.ndarray | None = None
    mass_shape: MassShape | None = None
    """The link masses' own shape (module docstring), or None: Gaussian in every parameter."""

    @property
    def covariance(self) -> np.ndarray:
        """The full covariance: ``cov``, or ``diag(std^2)`` when it is None."""
        return np.diag(self.std**2) if self.cov is None else self.cov

    def factor(self) -> np.ndarray:
        """``F`` with ``(delta - mean)^T cov^-1 (delta - mean) = ||F (delta - mean)||^2``."""
        if self.cov is None:
            return np.diag(1.0 / self.std)
        return np.linalg.inv(np.linalg.cholesky(self.cov))

    def conditional(self, scale: np.ndarray | None = None) -> ConditionalGaussian:
        """The Gaussian of the parameters other than the shaped masses given those masses, in the variables
        ``delta / scale`` (``scale``: per parameter, default 1). Requires :attr:`mass_shape`."""
        if self.mass_shape is None:
            raise ValueError("the prior has no mass shape")
        scale = np.ones(self.mean.size) if scale is None else np.asarray(scale, dtype=float)
        cov = self.covariance / np.outer(scale, scale)
        masses = self.mass_shape.index
        rest = np.setdiff1d(np.arange(self.mean.size), masses)
        gain = np.linalg.solve(cov[np.ix_(masses, masses)], cov[np.ix_(masses, rest)]).T
        conditional = cov[np.ix_(rest, rest)] - gain @ cov[np.ix_(masses, rest)]
        conditional = 0.5 * (conditional + conditional.T)
        return ConditionalGaussian(masses, rest, gain, np.linalg.inv(np.linalg.cholesky(conditional)))

    def negative_log_density(self, delta: np.ndarray) -> float:
        """Twice the negative log prior density of ``delta`` up to a constant: ``||F (delta - mean)||^2``, or with a
        mass shape the conditional Gaussian's term plus the masses' :meth:`MassShape.penalty`."""
        d = np.asarray(delta, dtype=float) - self.mean
        if self.mass_shape is None:
            return float(np.sum((self.factor() @ d) ** 2))
        c = self.conditional()
        return float(np.sum((c.factor @ (d[c.rest] - c.gain @ d[c.masses])) ** 2)
                     + self.mass_shape.penalty(np.asarray(delta, dtype=float)[c.masses]))

    def half_hessian(self, delta: np.ndarray, scale: np.ndarray | None = None) -> np.ndarray:
        """Half the Hessian of :meth:`negative_log_density` at ``delta``, in the variables ``delta / scale``: the
        prior's precision (``F^T F`` for the Gaussian)."""
        scale = np.ones(self.mean.size) if scale is None else np.asarray(scale, dtype=float)
        if self.mass_shape is None:
            f = self.factor() * scale
            return f.T @ f
        c = self.conditional(scale)
        d = np.zeros((c.rest.size, self.mean.size))
        d[:, c.rest] = np.eye(c.rest.size)
        d[:, c.masses] = -c.gain
        out = (c.factor @ d).T @ (c.factor @ d)
        masses = np.asarray(delta, dtype=float)[c.masses]
        out[c.masses, c.masses] += self.mass_shape.half_curvature(masses) * scale[c.masses] ** 2
        return out


@dataclass
class ConditionalGaussian:
    """The prior of the parameters ``rest`` given the ``masses`` (parameter indices): mean ``gain @ (m - mean_m)``
    about their own mean, and ``factor`` with ``||factor (r - mean_r - gain (m - mean_m))||^2`` its quadratic form."""

    masses: np.ndarray
    rest: np.ndarray
    gain: np.ndarray
    factor: np.ndarray


IMPLAUSIBLE_JOINT_TERM = 1.0
"""A joint term of the description whose torque alone would be more than this many times the joint's RMS torque is
not used as the prior's mean: a friction, offset or rotor-inertia torque is one part of the joint's torque, so alone
it explains at most all of it (Coulomb friction of a joint moving throughout: exactly its RMS, the rest adding to
it); more would need the other parts to cancel it throughout the motion."""


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
    return PriorGroups.of(nominal, layout, tolerances, joint_scales, attached).prior()


@dataclass
class PriorGroups:
    """The prior of the module docstring split by :data:`GROUPS`: ``covariance(s) = sum_g s_g^2 unit[g] + fixed``
    (``unit[g]``: group ``g``'s covariance at the stated ``tolerances``; ``fixed``: parts without a group scale, e.g.
    an unmodelled load's prior, :mod:`dynid_ros.estimation.unmodelled_load`). ``masses``: the parameter index, CAD
    mass of the link alone and its mass scale per link (for a :class:`MassShape`)."""

    mean: np.ndarray
    unit: dict[str, np.ndarray]
    tolerances: PriorTolerances
    masses: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    fixed: np.ndarray | None = None
    shaped_links: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    """Parameter indices of the masses that get no :class:`MassShape` (e.g. the link carrying an extra body)."""
    untrusted: tuple[int, ...] = ()
    """Parameter indices of the description's joint terms not used as the mean (:data:`IMPLAUSIBLE_JOINT_TERM`)."""

    @classmethod
    def of(cls, nominal: np.ndarray, layout: ParameterLayout, tolerances: PriorTolerances | None = None,
           joint_scales: np.ndarray | None = None, attached: np.ndarray | None = None) -> PriorGroups:
        """The groups of the prior of :func:`cad_prior`."""
        tolerances = tolerances or PriorTolerances()
        nominal = np.asarray(nominal, dtype=float)
        added = np.zeros_like(nominal) if attached is None else np.asarray(attached, dtype=float)
        own = nominal - added
        n = layout.n_parameters
        unit = {g: np.zeros((n, n)) for g in GROUPS if g != "joint"}
        unit.update({joint_group(j): np.zeros((n, n)) for j in layout.joints})
        scales = link_scales(own, layout)
        for k in range(len(layout.links)):
            part = layout.link_slice(k)
            for g, cov in link_covariance_groups(own[part], *scales[k], tolerances).items():
                unit[g][part, part] = cov
        joint = np.arange(layout.n_link_parameters, n)  # every joint's terms
        scale = np.full(n, 1e3) if joint_scales is None else np.asarray(joint_scales, dtype=float)
        for j, name in enumerate(layout.joints):  # mean: the description's (0 if none)
            terms = np.array([layout.joint_index(j, t) for t in layout.joint_terms], dtype=int)
            unit[joint_group(name)][terms, terms] = (tolerances.joint * np.maximum(scale[terms], 1e-9)) ** 2
        index = np.array([layout.link_slice(k).start for k in range(len(layout.links))], dtype=int)
        mean = nominal.copy()
        untrusted = () if joint_scales is None else tuple(
            int(i) for i in joint if abs(nominal[i]) > IMPLAUSIBLE_JOINT_TERM * scale[i])
        mean[list(untrusted)] = 0.0
        return cls(mean, unit, tolerances, (index, own[index], added[index], scales[:, 0]), untrusted=untrusted)

    @property
    def names(self) -> tuple[str, ...]:
        """The groups with a scale of their own: ``mass``, ``com``, ``inertia`` and one per joint
        (:func:`joint_group`), in that order."""
        return tuple(self.unit)

    def covariance(self, scales: Mapping[str, float] | None = None) -> np.ndarray:
        """``sum_g s_g^2 unit[g] + fixed`` (``scales``: per group, :func:`group_scale`)."""
        scales = scales or {}
        out = sum(group_scale(scales, g) ** 2 * self.unit[g] for g in self.names)
        return out if self.fixed is None else out + self.fixed

    def prior(self, scales: Mapping[str, float] | None = None, shaped: bool = False) -> Prior:
        """The Gaussian prior at the group ``scales`` (missing: 1); ``shaped``: with the masses' own shape
        (:class:`MassShape`) for every link with a positive CAD mass but those in :attr:`shaped_links`."""
        cov = self.covariance(scales)
        out = Prior(self.mean.copy(), np.sqrt(np.diag(cov)), cov)
        if shaped:
            out.mass_shape = self.mass_shape(scales)
        return out

    def mass_shape(self, scales: Mapping[str, float] | None = None) -> MassShape | None:
        """The masses' shape at the group ``scales``: relative tolerance ``s_mass * mass * M / m_cad`` per link."""
        index, mode, attached, big_m = self.masses
        tolerance = self.tolerances.mass * float((scales or {}).get("mass", 1.0))
        keep = (mode > 0) & ~np.isin(index, self.shaped_links)
        if not keep.any():
            return None
        return MassShape(index[keep], mode[keep], attached[keep], tolerance * big_m[keep] / mode[keep])

    def with_fixed(self, covariance: np.ndarray, unshaped: np.ndarray | None = None) -> PriorGroups:
        """These groups with ``covariance`` added to the fixed part (and the masses at parameter indices
        ``unshaped`` left Gaussian)."""
        fixed = covariance if self.fixed is None else self.fixed + covariance
        extra = np.zeros(0, dtype=int) if unshaped is None else np.asarray(unshaped, dtype=int)
        return replace(self, fixed=fixed, shaped_links=np.union1d(self.shaped_links, extra).astype(int))


def link_covariance(p: np.ndarray, big_m: float, length: float, tolerances: PriorTolerances) -> np.ndarray:
    """Covariance of one link's ten parameters: independent mass, CoM and inertia-about-CoM errors of the
    stated tolerances, propagated through ``delta(m, c, I_com)`` (:func:`dynid_ros.robot.parameters.link_parameters`,
    the parallel-axis theorem) by its Jacobian at the nominal link: when the data move the first moment,
    the inertia about the joint follows as it would for a real body."""
    return sum(link_covariance_groups(p, big_m, length, tolerances).values())


def link_covariance_groups(p: np.ndarray, big_m: float, length: float, tolerances: PriorTolerances
                           ) -> dict[str, np.ndarray]:
    """:func:`link_covariance` split into the shares of the mass, CoM and inertia errors (they sum to it)."""
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
    out = {}
    for group, columns in (("mass", [0]), ("com", [1, 2, 3]), ("inertia", list(range(4, 10)))):
        part = jacobian[:, columns] * std[columns]
        cov = part @ part.T
        out[group] = cov + np.diag(1e-6 * np.diag(cov))  # keeps it positive definite for massless links
    return out


MASS_RATIO_RANGE = (0.5, 2.0)
"""A link whose identified mass leaves this range of the prior's is flagged as unrealistic."""


def link_realism(delta: np.ndarray, reference: np.ndarray, layout: ParameterLayout,
                 attached: np.ndarray | None = None, prior_std: np.ndarray | None = None,
                 posterior_std: np.ndarray | None = None) -> list[dict]:
    """Per link (without its attached parts): identified and prior mass, their ratio, the CoM shift [m] and
    the relative change of the inertia about the CoM (Frobenius norm), identified vs ``reference``. With the prior's
    and the estimate's standard deviations of every parameter (``prior_std``, ``posterior_std``): each mass's
    ``mass_prior_std``, ``mass_std`` and ``mass_move_log_bayes_factor`` (:func:`moved_mass_evidence`)."""
    attached = np.zeros(layout.n_parameters) if attached is None else np.asarray(attached, dtype=float)
    out = []
    for k, link in enumerate(layout.links):
        part = layout.link_slice(k)
        mass, com, inertia = inertia_about_com(delta[part] - attached[part])
        mass0, com0, inertia0 = inertia_about_com(reference[part] - attached[part])
        ratio = float(mass / mass0) if mass0 > 0 else float("inf")
        change = relative_norm(inertia - inertia0, inertia0)
        entry = {"link": link, "mass": float(mass), "prior_mass": float(mass0), "mass_ratio": ratio,
                 "com_shift_m": float(np.linalg.norm(com - com0)), "inertia_change": change,
                 "realistic_mass": bool(MASS_RATIO_RANGE[0] <= ratio <= MASS_RATIO_RANGE[1])}
        if prior_std is not None and posterior_std is not None:
            s0, s1 = float(prior_std[part.start]), float(posterior_std[part.start])
            entry.update(mass_prior_std=s0, mass_std=s1,
                         mass_move_log_bayes_factor=moved_mass_evidence(float(mass), float(mass0), s0, s1))
        out.append(entry)
    return out


STRONG_EVIDENCE = np.log(10.0)
"""A log Bayes factor above this is strong evidence (a factor of 10; Jeffreys 1961, Kass & Raftery 1995)."""


def moved_mass_evidence(mass: float, cad_mass: float, prior_std: float, posterior_std: float) -> float:
    """The log Bayes factor of "the mass moved" against "the mass is ``cad_mass``", by the Savage-Dickey density
    ratio (Dickey 1971; Wagenmakers et al. 2010): the prior density at ``cad_mass`` over the posterior's, both
    Gaussian (the posterior at the estimate ``mass`` with ``posterior_std``). Positive: the data support the move;
    near or below zero: the CAD mass is as good."""
    if not (prior_std > 0 and posterior_std > 0 and np.isfinite(posterior_std)):
        return 0.0
    return float(np.log(posterior_std / prior_std) + 0.5 * ((mass - cad_mass) / posterior_std) ** 2)
