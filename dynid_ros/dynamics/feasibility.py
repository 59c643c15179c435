"""Physical feasibility of inertial parameters as LMIs, and the base-parameter tests BPFT and BPFC.

Consistency levels, per link (parameters in the order of :mod:`dynid_ros.robot.parameters`):

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

Extra bounds (Sousa & Cortesão 2014 eq. 25, 26, 28) come from
:class:`dynid_ros.dynamics.bounds.Bounds`. Problems are built with
cvxpy and solved with Clarabel (default) or SCS; the solver status is always returned.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dynid_ros.dynamics.bounds import Bounds
from dynid_ros.errors import ConfigError, EstimationError
from dynid_ros.robot.parameters import ParameterLayout, inertia_matrix

CONSISTENCIES: tuple[str, ...] = ("physical", "full")
SOLVERS: dict[str, str] = {"clarabel": "CLARABEL", "scs": "SCS"}
DEFAULT_EPS = 1e-6
"""LMI margin of Sousa & Cortesão 2014 (section 5: ``epsilon = 1e-6``)."""

class SolverStatus(str, enum.Enum):
    """What a convex solve ended with (cvxpy's status names; results store the plain string ``.value``)."""

    OPTIMAL = "optimal"
    OPTIMAL_INACCURATE = "optimal_inaccurate"
    INFEASIBLE = "infeasible"
    INFEASIBLE_INACCURATE = "infeasible_inaccurate"
    UNBOUNDED = "unbounded"
    UNBOUNDED_INACCURATE = "unbounded_inaccurate"
    SOLVER_ERROR = "solver_error"
    """The solver failed; :func:`solve` appends its message (``solver_error: ...``)."""


SOLVED = (SolverStatus.OPTIMAL, SolverStatus.OPTIMAL_INACCURATE)
"""Statuses with a solution."""

JOINT_TERM_TOLERANCE = 1e-8
"""Friction and armature at least ``-JOINT_TERM_TOLERANCE`` (SI units) count as non-negative: a solver's zero."""

@dataclass(frozen=True)
class Tolerance:
    """A conic solver's feasibility tolerance: it stops once every constraint residual is at most ``absolute +
    relative * max(1, magnitude)`` -- SCS 3: ``||A x + s - b||_inf <= eps_abs + eps_rel max(||A x||, ||s||, ||b||)``
    (O'Donoghue et al. 2016); Clarabel: the same residual below ``tol_feas max(1, ||b|| + ||x|| + ||s||)`` (Goulart &
    Chen 2024). An answer may therefore miss a constraint by that much (:mod:`dynid_ros.dynamics.polish`)."""

    absolute: float
    relative: float

    def allowance(self, magnitude: float) -> float:
        """The largest residual the solver accepts for variables of size ``magnitude``."""
        return self.absolute + self.relative * max(1.0, float(magnitude))


SOLVER_TOLERANCE: dict[str, Tolerance] = {"clarabel": Tolerance(1e-8, 1e-8), "scs": Tolerance(1e-6, 1e-6)}
"""The tolerance each solver runs with (:func:`solve` sets it: the numbers are these, whatever a library's
default)."""
INACCURATE_TOLERANCE: dict[str, Tolerance] = {"clarabel": Tolerance(1e-4, 1e-4), "scs": Tolerance(1e-6, 1e-6)}
"""The tolerance behind an ``optimal_inaccurate`` answer: Clarabel's reduced tolerance (``reduced_tol_feas``, set
by :func:`solve`); SCS reports it when it stops at ``max_iters`` with no looser bound, so its own is kept."""


def solver_tolerance(solver: str, status: str) -> Tolerance:
    """The feasibility tolerance behind an answer of ``solver`` with ``status``."""
    table = SOLVER_TOLERANCE if status == SolverStatus.OPTIMAL else INACCURATE_TOLERANCE
    return table[str(solver).lower()]


RETRY_SCALES = (1.0, 0.01)
"""Objective scales tried, in order, with the requested solver before the other solver."""


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
    """ConfigError unless ``consistency`` is one of :data:`CONSISTENCIES`."""
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
    """cvxpy constraints ``T_k M_k(delta_k - attached_k) T_k >= eps 1`` for every link
    (Sousa & Cortesão 2014 eq. 20-23)."""
    return [matrix >> eps * np.eye(matrix.shape[0])
            for matrix in link_matrix_expressions(delta, layout, consistency, scales, attached)]


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
                attached: np.ndarray | None = None, joint_tol: float = JOINT_TERM_TOLERANCE) -> bool:
    """True when every link matrix (of ``delta - attached``: the links without their known attached
    parts) has all eigenvalues ``> -tol`` (default: positive definite) and viscous friction, Coulomb
    friction and armature are ``>= -max(tol, joint_tol)`` (a solver's zero)."""
    delta = np.asarray(delta, dtype=float)
    if not np.all(np.isfinite(delta)):
        return False
    if np.any(min_eigenvalues(delta, layout, consistency, attached) <= -tol):
        return False
    nonnegative = [i for s in ("fv", "fc", "Ia") for i in layout.indices(s)]
    return bool(np.all(delta[nonnegative] >= -max(tol, joint_tol))) if nonnegative else True


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
            accurate, reduced = SOLVER_TOLERANCE[str(solver).lower()], INACCURATE_TOLERANCE[str(solver).lower()]
            if name == "SCS":
                problem.solve(solver=name, eps_abs=accurate.absolute, eps_rel=accurate.relative, max_iters=50_000)
            else:
                problem.solve(solver=name, tol_feas=accurate.relative, tol_gap_abs=accurate.absolute,
                              tol_gap_rel=accurate.relative, reduced_tol_feas=reduced.relative)
    except cp.error.SolverError as err:
        return f"{SolverStatus.SOLVER_ERROR.value}: {str(err).strip().splitlines()[0]}", time.perf_counter() - start
    except (cp.error.DCPError, ValueError) as err:  # a bug in the problem, not in the data
        raise EstimationError(f"{solver}: invalid problem: {err}") from err
    return str(problem.status), time.perf_counter() - start


@dataclass
class SolveOutcome:
    """What :func:`solve_until_optimal` kept: the status of the attempt (None: no attempt gave a solution), the
    solver that gave it, the total solve time and every attempt's status."""

    status: str | None
    solver: str | None
    seconds: float
    attempts: dict[str, str]

    def tolerance(self) -> Tolerance:
        """The feasibility tolerance behind the kept answer (:func:`solver_tolerance`)."""
        return solver_tolerance(self.solver, self.status)


def solve_until_optimal(problem: Callable[[float], object], solver: str, variable,
                        accept: Callable[[np.ndarray, str, str], bool] | None = None) -> SolveOutcome:
    """Solve ``problem(scale)`` (a cvxpy problem with its objective times ``scale``) until a status is
    ``optimal``: each of ``RETRY_SCALES`` with ``solver``, then the other solver. Keeps an ``optimal`` attempt,
    else the first ``optimal_inaccurate``; ``variable`` holds the kept attempt's value. ``accept(value, solver,
    status)``: whether an answer is on its constraints to within that solver's tolerance (e.g. :func:`dynid_ros.
    dynamics.polish.polish` succeeds); an answer it refuses counts as no solution (its attempt says "violates its
    constraints") and the next attempt is made: an interior-point solver may stop with a status of ``optimal``
    and an answer outside its LMIs (measured: Clarabel on a cross-validation fold's FBPE, a link's smallest
    eigenvalue -0.0135 where the margin is 1e-4; the other solver's answer was feasible). When every answer is
    refused, the first is kept (its check then names the violation)."""
    other = next(name for name in SOLVERS if name != str(solver).lower())
    attempts: dict[str, str] = {}
    kept: tuple[str, str, np.ndarray] | None = None
    refused: tuple[str, str, np.ndarray] | None = None
    total = 0.0
    plan = [(str(solver).lower(), scale) for scale in RETRY_SCALES] + [(other, 1.0)]
    for name, scale in plan:
        status, seconds = solve(problem(scale), name)
        total += seconds
        key = f"{name} x{scale:g}"
        attempts[key] = status
        if status not in SOLVED or variable.value is None:
            continue
        value = np.array(variable.value)
        if accept is not None and not accept(value, name, status):
            attempts[key] = f"{status} (violates its constraints)"
            refused = refused or (status, name, value)
            continue
        if status == SolverStatus.OPTIMAL:
            return SolveOutcome(status, name, total, attempts)
        if kept is None:
            kept = (status, name, value)
    kept = kept or refused
    if kept is None:
        return SolveOutcome(None, None, total, attempts)
    variable.value = kept[2]
    return SolveOutcome(kept[0], kept[1], total, attempts)


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
    solver: str | None = None
    """The solver that gave the answer (its tolerance: :func:`solver_tolerance`)."""


def bpft(K: np.ndarray, beta: np.ndarray, *, consistency: str = "physical", eps: float = DEFAULT_EPS,
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


def bpfc(K: np.ndarray, beta: np.ndarray, *, consistency: str = "physical", eps: float = DEFAULT_EPS,
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
    outcome = solve_until_optimal(
        lambda scale: cp.Problem(cp.Minimize(scale * cp.norm(K @ delta - beta, 2)), constraints), solver, delta)
    if outcome.status is None:
        return FeasibilityCorrection(None, float("nan"), None, next(iter(outcome.attempts.values())), outcome.seconds)
    value = np.array(delta.value)
    corrected = K @ value
    return FeasibilityCorrection(corrected, float(np.linalg.norm(corrected - beta)), value, outcome.status,
                                 outcome.seconds, outcome.solver)
