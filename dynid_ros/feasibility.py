"""Physical feasibility of inertial parameters as LMIs, and the base-parameter tests BPFT and BPFC.

Consistency levels, per link (parameters in the order of :mod:`dynid_ros.parameters`):

``physical``
    Sousa & Cortesão 2014 eq. 17: ``[[L, S(l)^T], [S(l), m 1]] >= eps 1`` (6x6), with ``L`` the inertia about
    the link-frame origin and ``l = m c``. Equivalent to ``m > 0`` and inertia about the CoM
    positive definite (Sousa & Cortesão 2014 eq. 11); it does not imply the triangle inequality.
``full``
    Full physical consistency (Traversaro et al. 2016 Definition 2: some non-negative density produces the
    parameters) as the 4x4 pseudo-inertia LMI ``J = [[0.5 tr(L) 1 - L, l], [l^T, m]] >= eps 1``.
    ``J`` is the matrix of second moments of the density, so ``J >= 0`` holds exactly for
    physical bodies; it implies ``physical`` and the triangle inequality of Traversaro et al. 2016 eq. 16.

The strict LMI is replaced by the non-strict one with a margin ``eps`` (Sousa & Cortesão 2014 eq. 21). The
margin applies to the link matrix after an optional congruence by
``diag(1/(sqrt(M) l_s) 1, 1/sqrt(M))`` (``M``: mass scale, ``l_s``: length scale of the link),
which leaves feasibility unchanged and makes the margin relative when scales are given
(``scales=None``: the matrix itself, as in Sousa & Cortesão 2014).

Extra bounds (Sousa & Cortesão 2014 eq. 25, 26, 28) come from :class:`Bounds`. Problems are built with
cvxpy and solved with Clarabel (default) or SCS; the solver status is always returned.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from dynid_ros.errors import ConfigError, EstimationError
from dynid_ros.parameters import ParameterLayout, inertia_matrix

CONSISTENCIES: tuple[str, ...] = ("physical", "full")
SOLVERS: dict[str, str] = {"clarabel": "CLARABEL", "scs": "SCS"}
DEFAULT_EPS = 1e-6
"""LMI margin of Sousa & Cortesão 2014 (section 5: ``epsilon = 1e-6``)."""

SOLVED = ("optimal", "optimal_inaccurate")
"""cvxpy statuses with a solution."""


# --------------------------------------------------------------------------------------------
# The link matrices as linear maps of the ten parameters


def _basis(consistency: str) -> np.ndarray:
    """``B`` with ``vec(M(p)) = B @ p`` (row-major vec) for the link matrix of ``consistency``."""
    check_consistency(consistency)
    size = 6 if consistency == "physical" else 4
    basis = np.zeros((size * size, 10))
    for i in range(10):
        p = np.zeros(10)
        p[i] = 1.0
        basis[:, i] = link_matrix(p, consistency).reshape(-1)
    return basis


def link_matrix(link_parameters: np.ndarray, consistency: str) -> np.ndarray:
    """The 6x6 matrix of Sousa & Cortesão 2014 eq. 17 (``physical``) or the 4x4 pseudo-inertia (``full``)."""
    p = np.asarray(link_parameters, dtype=float)
    m, first, inertia = p[0], p[1:4], inertia_matrix(p)
    if consistency == "physical":
        x, y, z = first
        s = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
        return np.block([[inertia, s.T], [s, m * np.eye(3)]])
    if consistency == "full":
        sigma = 0.5 * np.trace(inertia) * np.eye(3) - inertia
        return np.block([[sigma, first[:, None]], [first[None, :], np.array([[m]])]])
    raise ConfigError(f"consistency must be one of {', '.join(CONSISTENCIES)}, not {consistency!r}")


def _congruence(consistency: str, mass: float, length: float) -> np.ndarray:
    """Diagonal of the congruence that makes a link matrix dimensionless (see module docstring)."""
    a, b = 1.0 / (np.sqrt(mass) * length), 1.0 / np.sqrt(mass)
    return np.array([a, a, a, b, b, b]) if consistency == "physical" else np.array([a, a, a, b])


def scaled_basis(consistency: str, mass: float = 1.0, length: float = 1.0) -> np.ndarray:
    """Basis of the congruence-scaled link matrix ``T M(p) T`` (``T`` from mass and length scales)."""
    d = _congruence(consistency, mass, length)
    return np.outer(d, d).reshape(-1, 1) * _basis(consistency)


def check_consistency(consistency: str) -> None:
    if consistency not in CONSISTENCIES:
        raise ConfigError(f"consistency must be one of {', '.join(CONSISTENCIES)}, not {consistency!r}")


def link_scales(prior: np.ndarray | None, layout: ParameterLayout) -> np.ndarray:
    """(n_links, 2) mass and length scales per link: from the prior when given, else ones.

    Mass: the prior mass (at least 1 % of the heaviest link, and 1 g); length: the prior's
    radius of gyration about the joint origin, ``sqrt(tr(J_3x3) / m)``, at least 1 cm.
    """
    n_links = len(layout.links)
    scales = np.ones((n_links, 2))
    if prior is None:
        return scales
    prior = np.asarray(prior, dtype=float)
    masses = np.array([prior[layout.link_slice(k)][0] for k in range(n_links)])
    floor = max(1e-3, 0.01 * float(np.max(masses, initial=0.0)))
    for k in range(n_links):
        p = prior[layout.link_slice(k)]
        mass = max(float(p[0]), floor)
        second = max(0.5 * float(np.trace(inertia_matrix(p))), 0.0)  # tr of the 3x3 block of J
        scales[k] = mass, max(np.sqrt(second / mass), 0.01)
    return scales


def parameter_scales(layout: ParameterLayout, scales: np.ndarray) -> np.ndarray:
    """A natural size of each parameter: ``M``, ``M l_s``, ``M l_s^2`` per link; 1 for joint terms."""
    out = np.ones(layout.n_parameters)
    for k in range(len(layout.links)):
        mass, length = scales[k]
        out[layout.link_slice(k)] = [mass] + [mass * length] * 3 + [mass * length**2] * 6
    for symbol in ("Ia",):
        for j, index in enumerate(layout.indices(symbol)):
            mass, length = scales[min(j, len(scales) - 1)]
            out[index] = mass * length**2
    return out


def link_matrix_expressions(delta, layout: ParameterLayout, consistency: str, scales: np.ndarray | None = None,
                            attached: np.ndarray | None = None) -> list:
    """cvxpy expressions ``T_k M_k(delta_k - attached_k) T_k`` of every link (see module docstring).

    ``delta`` is a cvxpy affine expression of size ``layout.n_parameters``; ``attached`` (same
    layout, optional) holds the known parameters of parts rigidly attached to each link.
    """
    import cvxpy as cp

    check_consistency(consistency)
    scales = np.ones((len(layout.links), 2)) if scales is None else scales
    size = 6 if consistency == "physical" else 4
    out = []
    for k in range(len(layout.links)):
        basis = scaled_basis(consistency, *scales[k])
        shift = 0.0 if attached is None else basis @ np.asarray(attached, dtype=float)[layout.link_slice(k)]
        out.append(cp.reshape(basis @ delta[layout.link_slice(k)] - shift, (size, size), order="C"))
    return out


def lmi_constraints(delta, layout: ParameterLayout, consistency: str, eps: float, scales: np.ndarray | None = None,
                    attached: np.ndarray | None = None) -> list:
    """cvxpy constraints ``T_k M_k(delta_k - attached_k) T_k >= eps 1`` for every link (Sousa & Cortesão 2014
    eq. 20-23)."""
    return [matrix >> eps * np.eye(matrix.shape[0])
            for matrix in link_matrix_expressions(delta, layout, consistency, scales, attached)]


def scaled_link_matrix(link_parameters: np.ndarray, consistency: str, mass: float = 1.0,
                       length: float = 1.0) -> np.ndarray:
    """``T M(p) T`` as a numeric matrix."""
    size = 6 if consistency == "physical" else 4
    return (scaled_basis(consistency, mass, length) @ np.asarray(link_parameters, dtype=float)).reshape(size, size)


# --------------------------------------------------------------------------------------------
# Bounds


def _range(value: object, what: str) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in value)  # type: ignore[union-attr]
    except (TypeError, ValueError) as err:
        raise ConfigError(f"bounds: {what} must be [lo, hi], not {value!r}") from err
    if not lo <= hi:
        raise ConfigError(f"bounds: {what}: lower bound {lo} is above upper bound {hi}")
    return lo, hi


@dataclass
class Bounds:
    """Optional linear bounds on the parameters (Sousa & Cortesão 2014 eq. 25, 26, 28).

    Attributes:
        link_mass: link index -> (lo, hi) [kg].
        total_mass: (lo, hi) on the sum of the identified links' masses [kg].
        com_box: link index -> (3, 2) CoM box ``[[xlo, xhi], [ylo, yhi], [zlo, zhi]]`` in the
            joint frame [m], imposed as ``m lo <= m c <= m hi`` (linear, Sousa & Cortesão 2014 eq. 26).
        friction_nonnegative: viscous and Coulomb friction >= 0 (Sousa & Cortesão 2014 eq. 27-28).
        armature_nonnegative: armature >= 0.
    """

    link_mass: dict[int, tuple[float, float]] = field(default_factory=dict)
    total_mass: tuple[float, float] | None = None
    com_box: dict[int, np.ndarray] = field(default_factory=dict)
    friction_nonnegative: bool = True
    armature_nonnegative: bool = True

    KEYS = ("link_mass", "total_mass", "com_box", "friction_nonnegative", "armature_nonnegative")

    @classmethod
    def from_config(cls, mapping: Mapping | None, layout: ParameterLayout) -> Bounds:
        """Bounds from the ``bounds:`` config mapping / CLI options.

        ``link_mass`` is ``[lo, hi]`` for every link, or ``{link_name: [lo, hi], default: [lo, hi]}``;
        ``total_mass: [lo, hi]``; ``com_box: {link_name: [[xlo, xhi], [ylo, yhi], [zlo, zhi]]}``;
        ``friction_nonnegative`` and ``armature_nonnegative``: booleans (default true).
        """
        mapping = dict(mapping or {})
        unknown = sorted(set(mapping) - set(cls.KEYS))
        if unknown:
            raise ConfigError(f"bounds: unknown key(s) {', '.join(map(str, unknown))}; "
                              f"allowed: {', '.join(cls.KEYS)}")
        out = cls()
        links = list(layout.links)

        def link_index(name: object, what: str) -> int:
            if name not in links:
                raise ConfigError(f"bounds: {what}: unknown link {name!r} (identified links: {', '.join(links)})")
            return links.index(name)

        masses = mapping.get("link_mass")
        if isinstance(masses, Mapping):
            default = masses.get("default")
            if default is not None:
                out.link_mass = dict.fromkeys(range(len(links)), _range(default, "link_mass.default"))
            for name, value in masses.items():
                if name != "default":
                    out.link_mass[link_index(name, "link_mass")] = _range(value, f"link_mass.{name}")
        elif masses is not None:
            out.link_mass = dict.fromkeys(range(len(links)), _range(masses, "link_mass"))
        if mapping.get("total_mass") is not None:
            out.total_mass = _range(mapping["total_mass"], "total_mass")
        boxes = mapping.get("com_box")
        if boxes is not None:
            if not isinstance(boxes, Mapping):
                raise ConfigError("bounds: com_box must map link names to [[xlo, xhi], [ylo, yhi], [zlo, zhi]]")
            for name, value in boxes.items():
                k = link_index(name, "com_box")
                try:
                    rows = list(value)
                except TypeError as err:
                    raise ConfigError(f"bounds: com_box.{name} must be [[xlo, xhi], [ylo, yhi], [zlo, zhi]]") from err
                if len(rows) != 3:
                    raise ConfigError(f"bounds: com_box.{name} must be [[xlo, xhi], [ylo, yhi], [zlo, zhi]]")
                out.com_box[k] = np.array([_range(r, f"com_box.{name}[{a}]") for a, r in zip("xyz", rows)])
        for key in ("friction_nonnegative", "armature_nonnegative"):
            if key in mapping:
                if not isinstance(mapping[key], bool):
                    raise ConfigError(f"bounds: {key} must be true or false, not {mapping[key]!r}")
                setattr(out, key, mapping[key])
        return out

    def constraints(self, delta, layout: ParameterLayout, scale: np.ndarray | None = None) -> list:
        """cvxpy constraints on the expression ``delta`` (rows divided by ``scale`` of their main parameter)."""
        import cvxpy as cp

        scale = np.ones(layout.n_parameters) if scale is None else scale
        out = []
        for k, (lo, hi) in self.link_mass.items():
            i = layout.link_slice(k).start
            out += [delta[i] / scale[i] >= lo / scale[i], delta[i] / scale[i] <= hi / scale[i]]
        if self.total_mass is not None:
            idx = layout.indices("m")
            s = float(np.sum(scale[idx]))
            total = cp.sum(delta[idx]) / s
            out += [total >= self.total_mass[0] / s, total <= self.total_mass[1] / s]
        for k, box in self.com_box.items():
            i = layout.link_slice(k).start
            for a in range(3):
                first = delta[i + 1 + a] / scale[i + 1 + a]
                mass = delta[i] / scale[i + 1 + a]
                out += [first >= box[a, 0] * mass, first <= box[a, 1] * mass]
        for symbol in self._nonnegative(layout):
            idx = layout.indices(symbol)
            out.append(delta[idx] / scale[idx] >= 0)
        return out

    def _nonnegative(self, layout: ParameterLayout) -> list[str]:
        symbols = ["fv", "fc"] if self.friction_nonnegative else []
        symbols += ["Ia"] if self.armature_nonnegative else []
        return [s for s in symbols if s in layout.joint_terms]

    def violations(self, delta: np.ndarray, layout: ParameterLayout, tol: float = 1e-9) -> list[str]:
        """Readable list of the bounds ``delta`` violates (beyond ``tol``, relative where it applies)."""
        delta = np.asarray(delta, dtype=float)
        out = []
        for k, (lo, hi) in self.link_mass.items():
            m = delta[layout.link_slice(k).start]
            if not lo - tol * max(1.0, abs(lo)) <= m <= hi + tol * max(1.0, abs(hi)):
                out.append(f"link {layout.links[k]}: mass {m:.6g} outside [{lo}, {hi}]")
        if self.total_mass is not None:
            total = float(np.sum(delta[layout.indices("m")]))
            lo, hi = self.total_mass
            if not lo - tol * max(1.0, lo) <= total <= hi + tol * max(1.0, hi):
                out.append(f"total mass {total:.6g} outside [{lo}, {hi}]")
        for k, box in self.com_box.items():
            p = delta[layout.link_slice(k)]
            for a in range(3):
                slack = tol * max(1.0, abs(p[0]))
                if not box[a, 0] * p[0] - slack <= p[1 + a] <= box[a, 1] * p[0] + slack:
                    out.append(f"link {layout.links[k]}: CoM {'xyz'[a]} outside [{box[a, 0]}, {box[a, 1]}]")
        for symbol in self._nonnegative(layout):
            for j, i in enumerate(layout.indices(symbol)):
                if delta[i] < -tol:
                    out.append(f"joint {layout.joints[j]}: {symbol} = {delta[i]:.3g} < 0")
        return out


# --------------------------------------------------------------------------------------------
# Numeric check


def min_eigenvalues(delta: np.ndarray, layout: ParameterLayout, consistency: str = "full",
                    attached: np.ndarray | None = None) -> np.ndarray:
    """Smallest eigenvalue of each link matrix (Sousa & Cortesão 2014 eq. 17, or the pseudo-inertia) of
    ``delta - attached``."""
    check_consistency(consistency)
    delta = np.asarray(delta, dtype=float)
    if attached is not None:
        delta = delta - np.asarray(attached, dtype=float)
    return np.array([np.linalg.eigvalsh(link_matrix(delta[layout.link_slice(k)], consistency))[0]
                     for k in range(len(layout.links))])


def is_feasible(delta: np.ndarray, layout: ParameterLayout, consistency: str = "full", tol: float = 0.0,
                attached: np.ndarray | None = None) -> bool:
    """True when every link matrix (of ``delta - attached``: the links without their known attached
    parts) has all eigenvalues ``> -tol`` (default: positive definite) and viscous friction, Coulomb
    friction and armature are ``>= -tol``."""
    delta = np.asarray(delta, dtype=float)
    if not np.all(np.isfinite(delta)):
        return False
    if np.any(min_eigenvalues(delta, layout, consistency, attached) <= -tol):
        return False
    nonnegative = [i for s in ("fv", "fc", "Ia") for i in layout.indices(s)]
    return bool(np.all(delta[nonnegative] >= -tol)) if nonnegative else True


# --------------------------------------------------------------------------------------------
# Solving


def solve(problem, solver: str) -> tuple[str, float]:
    """Solve a cvxpy problem with a named solver; returns ``(status, solve seconds)``."""
    import warnings

    import cvxpy as cp

    name = solver_name(solver)
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():  # an inaccurate solution is reported through the status
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            if name == "SCS":
                problem.solve(solver=name, eps_abs=1e-6, eps_rel=1e-6, max_iters=50_000)
            else:
                problem.solve(solver=name)
    except cp.error.SolverError as err:
        return f"solver_error: {str(err).strip().splitlines()[0]}", time.perf_counter() - start
    except (cp.error.DCPError, ValueError) as err:  # a bug in the problem, not in the data
        raise EstimationError(f"{solver}: invalid problem: {err}") from err
    return str(problem.status), time.perf_counter() - start


def solver_name(solver: str) -> str:
    """cvxpy solver name of ``clarabel`` or ``scs``; ConfigError otherwise."""
    key = str(solver).lower()
    if key not in SOLVERS:
        raise ConfigError(f"solver must be one of {', '.join(SOLVERS)}, not {solver!r}")
    return SOLVERS[key]


def default_layout(n_parameters: int) -> ParameterLayout:
    """Consecutive links of ten parameters and no joint terms (how Sousa & Cortesão 2014 Table 1 is posed)."""
    if n_parameters % 10:
        raise ConfigError(f"K has {n_parameters} columns; without a layout it must be links of 10 parameters")
    n = n_parameters // 10
    return ParameterLayout(tuple(f"joint{k + 1}" for k in range(n)), tuple(f"link{k + 1}" for k in range(n)),
                           friction=(), armature=False)


def _inputs(K: np.ndarray, beta: np.ndarray, layout: ParameterLayout | None
            ) -> tuple[np.ndarray, np.ndarray, ParameterLayout]:
    K = np.atleast_2d(np.asarray(K, dtype=float))
    beta = np.asarray(beta, dtype=float).reshape(-1)
    layout = layout or default_layout(K.shape[1])
    if K.shape != (beta.size, layout.n_parameters):
        raise ConfigError(f"K is {K.shape[0]}x{K.shape[1]} but beta has {beta.size} entries and the layout "
                          f"{layout.n_parameters} parameters")
    if not np.all(np.isfinite(beta)):
        raise EstimationError("beta has non-finite entries")
    return K, beta, layout


@dataclass
class FeasibilityTest:
    """Result of :func:`bpft`: ``delta`` is a feasible parameter vector with ``K delta = beta``, or None."""

    feasible: bool
    delta: np.ndarray | None
    status: str
    solve_time: float


@dataclass
class FeasibilityCorrection:
    """Result of :func:`bpfc`: the feasible ``beta`` closest to the input and its ``distance``."""

    beta: np.ndarray | None
    distance: float
    delta: np.ndarray | None
    status: str
    solve_time: float


def bpft(K: np.ndarray, beta: np.ndarray, consistency: str = "physical", eps: float = DEFAULT_EPS,
         layout: ParameterLayout | None = None, bounds: Bounds | None = None, solver: str = "clarabel",
         attached: np.ndarray | None = None) -> FeasibilityTest:
    """Base Parameter Feasibility Test (Sousa & Cortesão 2014 eq. 51): is there ``delta`` with ``K delta = beta``
    and every link LMI ``>= eps`` (plus ``bounds``)? Posed on ``delta`` directly (Sousa & Cortesão 2014 section 4.5).
    ``attached``: known parameters of parts fixed to each link; the LMI then holds for the link alone."""
    import cvxpy as cp

    K, beta, layout = _inputs(K, beta, layout)
    solver_name(solver)
    delta = cp.Variable(layout.n_parameters)
    bounds = bounds or Bounds()
    constraints = [K @ delta == beta, *lmi_constraints(delta, layout, consistency, eps, attached=attached),
                   *bounds.constraints(delta, layout)]
    problem = cp.Problem(cp.Minimize(0), constraints)
    status, seconds = solve(problem, solver)
    feasible = status in SOLVED
    return FeasibilityTest(feasible, np.array(delta.value) if feasible else None, status, seconds)


def bpfc(K: np.ndarray, beta: np.ndarray, consistency: str = "physical", eps: float = DEFAULT_EPS,
         layout: ParameterLayout | None = None, bounds: Bounds | None = None, solver: str = "clarabel",
         attached: np.ndarray | None = None) -> FeasibilityCorrection:
    """Base Parameter Feasibility Correction (Sousa & Cortesão 2014 eq. 55): the feasible ``beta'`` closest to
    ``beta`` in the Euclidean norm of base-parameter space; ``distance = ||beta' - beta||``
    (``sqrt(u')`` of Sousa & Cortesão 2014 Table 1). ``attached`` as in :func:`bpft`."""
    import cvxpy as cp

    K, beta, layout = _inputs(K, beta, layout)
    solver_name(solver)
    delta = cp.Variable(layout.n_parameters)
    bounds = bounds or Bounds()
    constraints = [*lmi_constraints(delta, layout, consistency, eps, attached=attached),
                   *bounds.constraints(delta, layout)]
    problem = cp.Problem(cp.Minimize(cp.norm(K @ delta - beta, 2)), constraints)
    status, seconds = solve(problem, solver)
    if status not in SOLVED:
        return FeasibilityCorrection(None, float("nan"), None, status, seconds)
    value = np.array(delta.value)
    corrected = K @ value
    return FeasibilityCorrection(corrected, float(np.linalg.norm(corrected - beta)), value, status, seconds)
