"""Penalty-based parameter retrieval, PBPR (Gaz et al. 2019 Alg. 1; Pennese et al. 2021 eq. 6-7).

Feasible standard parameters from identified base coefficients by nonlinear optimization: the
unknowns are, per link, the mass ``m``, the centre of mass ``c`` and the inertia ``I`` about the
CoM (Gaz et al. 2019 eq. 27-28; here in pinocchio's order ``[m, cx, cy, cz, Ixx, Ixy, Iyy, Ixz,
Iyz, Izz]``), plus the linear joint terms (friction, armature). They map to the standard vector of
:mod:`dynid_ros.robot.parameters` by the parallel-axis theorem (Gaz et al. 2019 eq. 26) and to the base
coefficients by ``beta = K delta``.

Objective (Pennese et al. 2021 eq. 7), relative so that its size does not depend on units:

- ``coefficients``: ``phi1 = ||beta(p) - beta_ols||^2 / ||beta_ols||^2``;
- ``torque``: ``phi2 = ||W_b beta(p) - tau||^2 / ||tau||^2`` (evaluated on the QR-compressed
  regressor, so it costs the same as ``phi1``).

Constraints are box bounds ``LB <= p <= UB`` (``m > 0`` by its lower bound) plus exterior penalties
``g(h) = max(0, -h)`` that grow with the violation (Gaz et al. 2019 eq. 32), each made dimensionless:

- triangle inequality of every link inertia about the CoM, ``tr(I)/2 - lambda_max(I) > 0``
  (Gaz et al. 2019 eq. 16; it implies ``I > 0``);
- total mass range ``m_min <= sum m <= m_max`` (Gaz et al. 2019 eq. 30), from ``bounds.total_mass``;
- user regions: the CoM of a link inside a sphere or a finite cylinder attached to the link
  (:class:`ComRegion`; the nonlinear constraints of Gaz et al. 2019 section I).

Search (Gaz et al. 2019 Alg. 1): ``starts`` points drawn uniformly in the box (line 1; with a
prior the nominal parameters are one more start), each followed by ``rounds`` local solves, each
warm-started at the previous one, with penalty weight ``xi_1 = 0``, ``xi_{k+1} = 10 k`` (lines
3-6). The local solver is L-BFGS-B with analytic gradients (the paper uses simulated annealing with
an interior-point hybrid; the multi-start plays the global part); the violation penalty is Huber-smoothed
so that its gradient is continuous (L-BFGS-B stops at the kinks of ``max(0, -h)`` otherwise). The best
feasible end point is refined by longer local solves. With a prior (the nominal parameters, also one of
the starts), a last penalty stage moves from the nominal start's end point to the link parameters closest
to the prior whose torque residual stays in the 95 % confidence region of the best fit (as FBPE's prior
stage; the data cannot tell these fits apart): on the real Panda the best random start put 0.01 kg on
link 2 and 7.3 kg on link 1 (total 20.8 kg) for a 0.2 % smaller residual; with the stage the links weigh
16.8 kg (nominal 16.8 kg) with the same held-out error.
A result that violates a constraint is an error.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from dynid_ros.dynamics.feasibility import link_scales as scales_of
from dynid_ros.errors import ConfigError, EstimationError
from dynid_ros.estimation.estimators import compress
from dynid_ros.robot.parameters import TRIANGLE_MARGIN, ParameterLayout, inertia_about_com

OBJECTIVES = ("torque", "coefficients")
SHAPES = ("sphere", "cylinder")
PENALTY_SLACK = 10 * TRIANGLE_MARGIN
"""Slack of every penalized constraint: the triangle inequality is enforced as ``tr(I)/2 - lambda_max(I) >=
PENALTY_SLACK m l^2`` (``m``, ``l``: the link's mass and length scales), wider than the margin every written
inertia keeps (:data:`~dynid_ros.robot.parameters.TRIANGLE_MARGIN`), so the result is strictly feasible and
written unchanged; the total-mass range is kept the same fraction inside."""
REGION_MARGIN = 1e-4
"""The CoM is kept this fraction of the radius inside a user region."""


@dataclass
class ComRegion:
    """The CoM of link ``link`` inside a sphere (``center``, ``radius``) or a finite cylinder
    (``center`` on its axis midway, unit ``axis``, ``radius``, ``length``), in the link (joint) frame."""

    link: int
    shape: str
    center: np.ndarray
    radius: float
    axis: np.ndarray | None = None
    length: float | None = None

    def excess(self, com: np.ndarray, margin: float = 0.0) -> tuple[float, np.ndarray]:
        """Distance outside the region shrunk by ``margin`` (relative), over the radius (0 inside), and
        its gradient in ``com``."""
        inner = self.radius * (1.0 - margin)
        d = np.asarray(com, dtype=float) - self.center
        grad = np.zeros(3)
        if self.shape == "sphere":
            r = float(np.linalg.norm(d))
            if r > inner:
                return (r - inner) / self.radius, d / (r * self.radius)
            return 0.0, grad
        s = float(d @ self.axis)
        radial = d - s * self.axis
        rho = float(np.linalg.norm(radial))
        out = 0.0
        if rho > inner:
            out += (rho - inner) / self.radius
            grad += radial / (rho * self.radius)
        half = 0.5 * self.length - margin * self.radius
        if abs(s) > half:
            out += (abs(s) - half) / self.radius
            grad += np.sign(s) * self.axis / self.radius
        return out, grad


@dataclass
class RetrievalSettings:
    """Options of :func:`retrieve` (the ``pbpr:`` mapping of the identification config)."""

    objective: str = "torque"
    starts: int = 8
    rounds: int = 10
    seed: int = 0
    com_regions: list[ComRegion] = field(default_factory=list)

    KEYS = ("objective", "starts", "rounds", "seed", "com_regions")

    @classmethod
    def from_config(cls, mapping: Mapping | None, layout: ParameterLayout) -> RetrievalSettings:
        """Settings from ``{objective, starts, rounds, seed, com_regions}``; ``com_regions`` maps a link
        name to ``{shape: sphere, center: [x, y, z], radius: r}`` or ``{shape: cylinder, center: [x, y, z],
        axis: [ax, ay, az], radius: r, length: L}`` (metres, link frame)."""
        mapping = dict(mapping or {})
        unknown = sorted(set(mapping) - set(cls.KEYS))
        if unknown:
            raise ConfigError(f"pbpr: unknown key(s) {', '.join(map(str, unknown))}; allowed: {', '.join(cls.KEYS)}")
        out = cls()
        if mapping.get("objective") is not None:
            out.objective = str(mapping["objective"])
        if out.objective not in OBJECTIVES:
            raise ConfigError(f"pbpr: objective must be one of {', '.join(OBJECTIVES)}, not {out.objective!r}")
        for key in ("starts", "rounds", "seed"):
            if mapping.get(key) is not None:
                value = mapping[key]
                if isinstance(value, bool) or not isinstance(value, int) or value < (0 if key == "seed" else 1):
                    raise ConfigError(f"pbpr: {key} must be an integer >= {0 if key == 'seed' else 1}, not {value!r}")
                setattr(out, key, value)
        regions = mapping.get("com_regions") or {}
        if not isinstance(regions, Mapping):
            raise ConfigError("pbpr: com_regions must map link names to {shape, center, radius, ...}")
        out.com_regions = [_region(name, spec, layout) for name, spec in regions.items()]
        return out


def _vector(value: object, what: str) -> np.ndarray:
    try:
        out = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"pbpr: {what} must be [x, y, z], not {value!r}") from err
    if out.size != 3 or not np.all(np.isfinite(out)):
        raise ConfigError(f"pbpr: {what} must be [x, y, z], not {value!r}")
    return out


def _positive(value: object, what: str) -> float:
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as err:
        raise ConfigError(f"pbpr: {what} must be a positive number, not {value!r}") from err
    if not out > 0:
        raise ConfigError(f"pbpr: {what} must be a positive number, not {value!r}")
    return out


def _region(name: object, spec: object, layout: ParameterLayout) -> ComRegion:
    what = f"com_regions.{name}"
    if name not in layout.links:
        raise ConfigError(f"pbpr: {what}: unknown link {name!r} (identified links: {', '.join(layout.links)})")
    if not isinstance(spec, Mapping):
        raise ConfigError(f"pbpr: {what} must be a mapping {{shape, center, radius, ...}}")
    shape = spec.get("shape")
    if shape not in SHAPES:
        raise ConfigError(f"pbpr: {what}.shape must be one of {', '.join(SHAPES)}, not {shape!r}")
    allowed = {"shape", "center", "radius"} | ({"axis", "length"} if shape == "cylinder" else set())
    extra = sorted(set(spec) - allowed)
    if extra:
        raise ConfigError(f"pbpr: {what}: unknown key(s) {', '.join(map(str, extra))} for a {shape}")
    region = ComRegion(layout.links.index(name), shape, _vector(spec.get("center"), f"{what}.center"),
                       _positive(spec.get("radius"), f"{what}.radius"))
    if shape == "cylinder":
        axis = _vector(spec.get("axis"), f"{what}.axis")
        if np.linalg.norm(axis) == 0:
            raise ConfigError(f"pbpr: {what}.axis must not be zero")
        region.axis = axis / np.linalg.norm(axis)
        region.length = _positive(spec.get("length"), f"{what}.length")
    return region


@dataclass
class Retrieval:
    """Result of :func:`retrieve`: standard parameters ``delta`` (with the attached parts), ``beta = K delta``,
    the objective (relative, see module docstring) and per-start end values."""

    delta: np.ndarray
    beta: np.ndarray
    objective: float
    status: str
    start_objectives: list[float]
    timings: dict[str, float]


# --------------------------------------------------------------------------------------------
# The map p -> delta (parallel-axis theorem, Gaz et al. 2019 eq. 26) and its Jacobian


def _steiner(c: np.ndarray) -> np.ndarray:
    """(L, 3) CoMs -> (L, 6) entries ``[xx, xy, yy, xz, yz, zz]`` of ``S(c)^T S(c)``."""
    x, y, z = c[:, 0], c[:, 1], c[:, 2]
    return np.stack([y * y + z * z, -x * y, x * x + z * z, -x * z, -y * z, x * x + y * y], axis=1)


def _steiner_derivatives(c: np.ndarray) -> np.ndarray:
    """(L, 3, 6): derivative of :func:`_steiner` in ``cx``, ``cy``, ``cz``."""
    x, y, z = c[:, 0], c[:, 1], c[:, 2]
    zero = np.zeros_like(x)
    return np.stack([np.stack([zero, -y, 2 * x, -z, zero, 2 * x], axis=1),
                     np.stack([2 * y, -x, zero, zero, -z, 2 * y], axis=1),
                     np.stack([2 * z, zero, 2 * z, -x, -y, zero], axis=1)], axis=1)


def link_delta(p_links: np.ndarray) -> np.ndarray:
    """(L, 10) ``[m, c, I_com]`` -> (L, 10) standard link parameters about the joint frame."""
    m, c, i_com = p_links[:, 0], p_links[:, 1:4], p_links[:, 4:10]
    return np.column_stack([m, m[:, None] * c, i_com + m[:, None] * _steiner(c)])


def _link_jacobian_transpose_times(p_links: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``J^T g`` per link, ``J = d delta / d p`` (L, 10, 10), without forming ``J``."""
    m, c = p_links[:, 0], p_links[:, 1:4]
    g_m, g_h, g_i = g[:, 0], g[:, 1:4], g[:, 4:10]
    out = np.empty_like(g)
    out[:, 0] = g_m + np.sum(g_h * c, axis=1) + np.sum(g_i * _steiner(c), axis=1)
    out[:, 1:4] = m[:, None] * (g_h + np.einsum("lak,lk->la", _steiner_derivatives(c), g_i))
    out[:, 4:10] = g_i
    return out


def standard_from_com(delta: np.ndarray, layout: ParameterLayout) -> np.ndarray:
    """The ``p`` vector (``[m, c, I_com]`` per link, joint terms as they are) of a standard vector."""
    p = np.asarray(delta, dtype=float).copy()
    for k in range(len(layout.links)):
        s = layout.link_slice(k)
        m, com, i_com = inertia_about_com(delta[s])
        p[s] = [m, *com, i_com[0, 0], i_com[0, 1], i_com[1, 1], i_com[0, 2], i_com[1, 2], i_com[2, 2]]
    return p


# --------------------------------------------------------------------------------------------
# The penalized objective


@dataclass
class _Problem:
    """``f(p) = ||A delta(p) - b||^2 / s + xi gamma(p)`` with ``delta(p) = link map + attached``."""

    layout: ParameterLayout
    a: np.ndarray
    b: np.ndarray
    constant: float
    scale: float
    attached: np.ndarray
    link_scales: np.ndarray
    total_mass: tuple[float, float] | None
    regions: list[ComRegion]

    def delta(self, p: np.ndarray) -> np.ndarray:
        n = self.layout.n_link_parameters
        out = p.copy()
        out[:n] = link_delta(p[:n].reshape(-1, 10)).reshape(-1)
        return out + self.attached

    def objective(self, p: np.ndarray) -> tuple[float, np.ndarray]:
        """``phi`` and its gradient in ``p``."""
        n = self.layout.n_link_parameters
        r = self.a @ self.delta(p) - self.b
        value = (float(r @ r) + self.constant) / self.scale
        g_delta = 2.0 * (self.a.T @ r) / self.scale
        grad = g_delta.copy()
        grad[:n] = _link_jacobian_transpose_times(p[:n].reshape(-1, 10), g_delta[:n].reshape(-1, 10)).reshape(-1)
        return value, grad

    def penalty(self, p: np.ndarray, width: float) -> tuple[float, np.ndarray]:
        """``gamma = sum g(h)`` and its gradient in ``p``: ``g`` the violation ``v = max(0, -h)`` of each
        (dimensionless, margined) constraint (Gaz et al. 2019 eq. 32), Huber-smoothed over ``width``
        (``v^2 / (2 width)`` below it) so that its gradient is continuous for the quasi-Newton solver."""
        total = 0.0
        grad = np.zeros_like(p)
        for value, gradient in self._constraints(p):
            if value < 0:
                v = -value
                total += v * v / (2 * width) if v < width else v - 0.5 * width
                grad -= (v / width if v < width else 1.0) * gradient
        return total, grad

    def _constraints(self, p: np.ndarray, margin: bool = True):
        """Every constraint as ``(h, dh/dp)`` with ``h >= 0`` when satisfied (dimensionless; margined)."""
        n = self.layout.n_link_parameters
        links = p[:n].reshape(-1, 10)
        for k, h, dh in self._triangles(links):
            gradient = np.zeros_like(p)
            gradient[10 * k + 4:10 * k + 10] = dh
            yield h - (PENALTY_SLACK if margin else 0.0), gradient
        if self.total_mass is not None:
            lo, hi = self.total_mass
            unit = float(np.sum(self.link_scales[:, 0]))
            mass = float(np.sum(self.attached[self.layout.indices("m")] + links[:, 0]))
            gradient = np.zeros_like(p)
            gradient[self.layout.indices("m")] = 1.0 / unit
            slack = PENALTY_SLACK if margin else 0.0
            yield (mass - lo) / unit - slack, gradient
            yield (hi - mass) / unit - slack, -gradient
        for region in self.regions:
            value, dc = region.excess(links[region.link, 1:4], REGION_MARGIN if margin else 0.0)
            gradient = np.zeros_like(p)
            gradient[10 * region.link + 1:10 * region.link + 4] = -dc
            yield -value, gradient

    def _triangles(self, links: np.ndarray):
        """Per link: ``h = (tr(I)/2 - lambda_max(I)) / (m l^2)`` (Gaz et al. 2019 eq. 16), gradient in ``I_com``."""
        i6 = links[:, 4:10]
        mats = np.stack([np.stack([i6[:, 0], i6[:, 1], i6[:, 3]], -1), np.stack([i6[:, 1], i6[:, 2], i6[:, 4]], -1),
                         np.stack([i6[:, 3], i6[:, 4], i6[:, 5]], -1)], axis=1)
        values, vectors = np.linalg.eigh(mats)
        unit = self.link_scales[:, 0] * self.link_scales[:, 1] ** 2
        for k in range(links.shape[0]):
            v = vectors[k, :, 2]
            h = (0.5 * np.trace(mats[k]) - values[k, 2]) / unit[k]
            d_lmax = np.array([v[0] ** 2, 2 * v[0] * v[1], v[1] ** 2, 2 * v[0] * v[2], 2 * v[1] * v[2], v[2] ** 2])
            yield k, h, (np.array([0.5, 0.0, 0.5, 0.0, 0.0, 0.5]) - d_lmax) / unit[k]

    def violations(self, p: np.ndarray) -> list[str]:
        """Readable list of the constraints (without margins) that ``p`` violates."""
        names = [f"link {link}: triangle inequality (Gaz et al. 2019 eq. 16)" for link in self.layout.links]
        if self.total_mass is not None:
            names += [f"total mass >= {self.total_mass[0]} kg", f"total mass <= {self.total_mass[1]} kg"]
        names += [f"link {self.layout.links[r.link]}: CoM inside its {r.shape}" for r in self.regions]
        return [f"{name} violated by {-h:.3g} (relative)"
                for name, (h, _) in zip(names, self._constraints(p, margin=False)) if h < 0]


# --------------------------------------------------------------------------------------------
# Bounds of p


def default_box(layout: ParameterLayout, nominal_p: np.ndarray, link_scales: np.ndarray,
                link_mass: Mapping[int, tuple[float, float]] | None = None,
                com_box: Mapping[int, np.ndarray] | None = None,
                nonnegative: tuple[str, ...] = ("fv", "fc", "Ia")) -> tuple[np.ndarray, np.ndarray]:
    """``LB``, ``UB`` of ``p`` (Gaz et al. 2019 section V): per link (own parameters, without attached parts)
    mass in ``link_mass`` or ``[0.01 M, 3 M]``; CoM in ``com_box`` or the nominal CoM +- ``l``; inertia about
    the CoM: diagonal in ``[0, m_max l^2]``, products in ``+-m_max l^2 / 2`` (``M``, ``l``: the link's mass and
    length scales, :func:`dynid_ros.dynamics.feasibility.link_scales`). Joint terms: ``>= 0`` for ``nonnegative``
    symbols, otherwise free (``+-inf``)."""
    lower = np.full(layout.n_parameters, -np.inf)
    upper = np.full(layout.n_parameters, np.inf)
    link_mass, com_box = dict(link_mass or {}), dict(com_box or {})
    for k in range(len(layout.links)):
        s = layout.link_slice(k)
        mass, length = link_scales[k]
        m_lo, m_hi = link_mass.get(k, (0.01 * mass, 3.0 * mass))
        m_lo = max(m_lo, 1e-6 * mass)
        com = nominal_p[s][1:4]
        box = com_box.get(k, np.column_stack([com - length, com + length]))
        i_max = m_hi * length**2
        lower[s] = [m_lo, *box[:, 0], 0.0, -0.5 * i_max, 0.0, -0.5 * i_max, -0.5 * i_max, 0.0]
        upper[s] = [m_hi, *box[:, 1], i_max, 0.5 * i_max, i_max, 0.5 * i_max, 0.5 * i_max, i_max]
    for symbol in nonnegative:
        lower[layout.indices(symbol)] = 0.0
    return lower, upper


# --------------------------------------------------------------------------------------------
# The search


def retrieve(K: np.ndarray, layout: ParameterLayout, lower: np.ndarray, upper: np.ndarray, link_scales: np.ndarray,
             settings: RetrievalSettings, *, beta_hat: np.ndarray | None = None,
             compressed: tuple[np.ndarray, np.ndarray, float] | None = None,
             total_mass: tuple[float, float] | None = None, attached: np.ndarray | None = None,
             nominal: np.ndarray | None = None, rows: int | None = None) -> Retrieval:
    """PBPR (Gaz et al. 2019 Alg. 1): feasible ``delta`` whose ``beta = K delta`` fits the data.

    Args:
        K: (n_base, n_parameters), ``beta = K delta``.
        lower, upper: box of ``p`` (:func:`default_box`).
        link_scales: (n_links, 2) mass and length scales (penalty units).
        beta_hat: identified coefficients (objective ``coefficients``, ``phi1``).
        compressed: ``(R, rho1, ||rho2||)`` of the regression (objective ``torque``, ``phi2``; also sets the
            noise level that scales either objective).
        total_mass: range of the summed link masses, attached parts included (Gaz et al. 2019 eq. 30).
        attached: known parameters of parts fixed to each link (the constraints hold for the link alone).
        nominal: standard parameters used as one more start (e.g. the URDF's).
        rows: number of regression rows; with ``nominal``, the end point from the nominal start is returned
            when its torque residual is within the 95 % confidence region of the best one (the data cannot
            tell them apart; what they do not determine stays near the prior).
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):  # small dense algebra: BLAS threads only cost time
        return _retrieve(K, layout, lower, upper, link_scales, settings, beta_hat, compressed, total_mass, attached,
                         nominal, rows)


def _retrieve(K: np.ndarray, layout: ParameterLayout, lower: np.ndarray, upper: np.ndarray, link_scales: np.ndarray,
              settings: RetrievalSettings, beta_hat: np.ndarray | None,
              compressed: tuple[np.ndarray, np.ndarray, float] | None, total_mass: tuple[float, float] | None,
              attached: np.ndarray | None, nominal: np.ndarray | None, rows: int | None) -> Retrieval:
    timer = time.perf_counter()
    K = np.asarray(K, dtype=float)
    attached = np.zeros(layout.n_parameters) if attached is None else np.asarray(attached, dtype=float)
    problem = _problem(K, layout, settings, beta_hat, compressed, total_mass, attached, link_scales)
    search = _Search(problem, np.asarray(lower, dtype=float), np.asarray(upper, dtype=float))

    rng = np.random.default_rng(settings.seed)
    starts = [search.random(rng) for _ in range(settings.starts)]
    if nominal is not None:
        starts.insert(0, search.to_x(standard_from_com(np.asarray(nominal, dtype=float) - attached, layout)))
    ends = [search.rounds(x, settings.rounds, SEARCH_ITERATIONS) for x in starts]
    values = [problem.objective(search.to_p(x))[0] if not problem.violations(search.to_p(x)) else np.inf
              for x in ends]
    best = int(np.argmin(values))
    if not np.isfinite(values[best]):
        raise EstimationError(f"pbpr: no start reached a feasible point after {settings.rounds} penalty rounds: "
                              f"{'; '.join(problem.violations(search.to_p(ends[0]))[:3])}")
    p = _refine(search, ends[best], settings.rounds)
    if nominal is not None and rows is not None and np.isfinite(values[0]):
        start = p if best == 0 else _refine(search, ends[0], settings.rounds)
        p = _toward_prior(search, p, start, standard_from_com(np.asarray(nominal, dtype=float) - attached, layout),
                          K, compressed, rows)
    delta = problem.delta(p)
    return Retrieval(delta, K @ delta, float(problem.objective(p)[0]), "optimal", [float(v) for v in values],
                     {"pbpr": round(time.perf_counter() - timer, 4)})


def _refine(search: _Search, x: np.ndarray, rounds: int) -> np.ndarray:
    """``p`` after more rounds with more iterations (kept only if feasible and not worse)."""
    problem = search.problem
    refined = search.to_p(search.rounds(x, rounds, REFINE_ITERATIONS, first=rounds))
    start = search.to_p(x)
    if problem.violations(refined) or problem.objective(refined)[0] > problem.objective(start)[0]:
        return start
    return refined


def _toward_prior(search: _Search, best: np.ndarray, start: np.ndarray, prior: np.ndarray, K: np.ndarray,
                  compressed: tuple[np.ndarray, np.ndarray, float], rows: int) -> np.ndarray:
    """The link parameters closest to the prior's (in the box-scaled variables) among the feasible ones whose
    squared torque residual exceeds that of ``best`` by at most ``sigma^2 chi2_{n_base}(0.95)`` (the joint
    confidence region of the coefficients, ``sigma^2 = ||rho2||^2 / (rows - n_base)``, as in FBPE's prior
    stage): the same penalty method from ``start`` (the end point of the nominal start), the fit being one
    more penalized constraint. ``best`` is returned when the result is not feasible or leaves the region."""
    from scipy.optimize import minimize
    from scipy.stats import chi2

    problem, layout = search.problem, search.problem.layout
    r, rho1, rho2 = compressed
    a = r @ K
    n_link = layout.n_link_parameters

    def residual2(p: np.ndarray) -> tuple[float, np.ndarray]:
        e = rho1 - a @ problem.delta(p)
        return float(e @ e), e

    allowance = float(chi2.ppf(0.95, K.shape[0])) * float(rho2) ** 2 / max(rows - K.shape[0], 1)
    if allowance <= 0:
        return best
    limit = residual2(best)[0] + 0.99 * allowance
    x_prior = search.to_x(prior)

    def fun(x: np.ndarray, xi: float, width: float) -> tuple[float, np.ndarray]:
        p = search.to_p(x)
        d = np.where(np.arange(x.size) < n_link, x - x_prior, 0.0)
        value, grad_x = float(d @ d), 2.0 * d
        pen, pen_grad = problem.penalty(p, width)
        res, e = residual2(p)
        grad_p = pen_grad
        v = (res - limit) / allowance
        if v > 0:
            g_delta = -2.0 * (a.T @ e) / allowance
            g_fit = g_delta.copy()
            g_fit[:n_link] = _link_jacobian_transpose_times(p[:n_link].reshape(-1, 10),
                                                             g_delta[:n_link].reshape(-1, 10)).reshape(-1)
            pen += v * v / (2 * width) if v < width else v - 0.5 * width
            grad_p = grad_p + (v / width if v < width else 1.0) * g_fit
        return value + xi * pen, grad_x + xi * grad_p * search.size

    x = search.to_x(start)
    for k in range(1, 6):
        x = minimize(fun, x, args=(10.0**k, 1e-2 / k**2), jac=True, method="L-BFGS-B", bounds=search.bounds,
                     options={"maxiter": REFINE_ITERATIONS, "ftol": 1e-13, "gtol": 1e-10, "maxcor": 10}).x
    p = search.to_p(x)
    if problem.violations(p) or residual2(p)[0] > limit + 0.01 * allowance:
        return best
    return p


SEARCH_ITERATIONS = 300
"""L-BFGS-B iterations per penalty round in the multi-start search."""
REFINE_ITERATIONS = 5000
"""L-BFGS-B iterations per penalty round when refining the best start."""
EXTRA_ROUNDS = 12
"""At most this many extra rounds (penalty weight x10 each) for a start still infeasible after Alg. 1."""
OBJECTIVE_SCALE_FLOOR = 1e-8
"""Smallest relative squared OLS residual used to scale the objective (noise-free data); not a noise level."""


def _problem(K: np.ndarray, layout: ParameterLayout, settings: RetrievalSettings, beta_hat: np.ndarray | None,
             compressed: tuple[np.ndarray, np.ndarray, float] | None, total_mass: tuple[float, float] | None,
             attached: np.ndarray, link_scales: np.ndarray) -> _Problem:
    """The objective scaled by the noise level: ``phi / (||b||^2 max(rel_ols^2, OBJECTIVE_SCALE_FLOOR))`` with
    ``rel_ols^2 = ||rho2||^2 / ||tau||^2`` the relative squared residual of OLS, so that a change of 1 is a
    change of the fit as large as the noise (the penalties are relative violations)."""
    if compressed is None:
        raise ConfigError("pbpr: the compressed regression (R, rho1, ||rho2||) is needed")
    r, rho1, rho2 = compressed
    total = float(rho1 @ rho1) + float(rho2) ** 2
    noise = max(float(rho2) ** 2 / max(total, 1e-300), OBJECTIVE_SCALE_FLOOR)
    if settings.objective == "coefficients":
        if beta_hat is None:
            raise ConfigError("pbpr: objective 'coefficients' needs the identified coefficients")
        b = np.asarray(beta_hat, dtype=float)
        a, constant, norm = K, 0.0, float(b @ b)
    else:
        a, b, constant, norm = r @ K, np.asarray(rho1, dtype=float), float(rho2) ** 2, total
    return _Problem(layout, a, b, constant, max(norm * noise, 1e-300), attached,
                    np.asarray(link_scales, dtype=float), total_mass, list(settings.com_regions))


class _Search:
    """Gaz et al. 2019 Alg. 1 in scaled variables ``p = offset + size x`` (the box is ``[0, 1]`` where finite)."""

    def __init__(self, problem: _Problem, lower: np.ndarray, upper: np.ndarray) -> None:
        self.problem, self.lower, self.upper = problem, lower, upper
        self.finite = np.isfinite(lower) & np.isfinite(upper)
        self.size = np.where(self.finite, upper - lower, 1.0)
        offset = np.where(np.isfinite(lower), lower, 0.0)
        self.offset = np.where(~np.isfinite(lower) & np.isfinite(upper), upper, offset)
        self.bounds = list(zip(np.where(np.isfinite(lower), (lower - self.offset) / self.size, None),
                               np.where(np.isfinite(upper), (upper - self.offset) / self.size, None)))

    def to_p(self, x: np.ndarray) -> np.ndarray:
        return self.offset + self.size * x

    def to_x(self, p: np.ndarray) -> np.ndarray:
        return (np.clip(p, self.lower, self.upper) - self.offset) / self.size

    def random(self, rng: np.random.Generator) -> np.ndarray:
        """Alg. 1 line 1: uniform in the box; unbounded (joint) terms at the point of the box nearest 0."""
        x = rng.uniform(0.0, 1.0, self.size.size)
        x[~self.finite] = self.to_x(np.zeros(self.size.size))[~self.finite]
        return x

    def rounds(self, x: np.ndarray, count: int, iterations: int, first: int = 1) -> np.ndarray:
        """Alg. 1 lines 3-6: local solves warm-started at the previous one, penalty ``xi_1 = 0``,
        ``xi_{k+1} = 10 k``; the Huber width shrinks as ``1e-2 / k^2``. While a constraint is still violated
        after the ``count`` rounds, up to ``EXTRA_ROUNDS`` more with ``xi`` ten times larger each (the
        objective is in noise units, so precise data need a larger weight than Alg. 1's)."""
        xi = 0.0
        for k in range(first, first + count):
            xi = 0.0 if k == 1 else 10.0 * (k - 1)
            x = self.local(x, xi, 1e-2 / k**2, iterations)
        for _ in range(EXTRA_ROUNDS):
            if not self.problem.violations(self.to_p(x)):
                break
            xi = 10.0 * max(xi, 1.0)
            x = self.local(x, xi, 1e-2 / (first + count) ** 2, iterations)
        return x

    def local(self, x0: np.ndarray, xi: float, width: float, iterations: int) -> np.ndarray:
        from scipy.optimize import minimize

        def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
            p = self.to_p(x)
            value, grad = self.problem.objective(p)
            if xi > 0:
                pen, pen_grad = self.problem.penalty(p, width)
                value, grad = value + xi * pen, grad + xi * pen_grad
            return value, grad * self.size

        options = {"maxiter": iterations, "ftol": 1e-13, "gtol": 1e-10, "maxcor": 10}
        return minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=self.bounds, options=options).x


def pbpr(w_b: np.ndarray, tau: np.ndarray, K: np.ndarray, layout: ParameterLayout, beta_ols: np.ndarray, *,
         settings: Mapping | None = None, bounds=None, nominal: np.ndarray | None = None,
         attached: np.ndarray | None = None, use_nominal_start: bool = True) -> Retrieval:
    """PBPR on a regression ``tau = w_b beta``: the box from ``bounds`` (a :class:`dynid_ros.dynamics.bounds.Bounds`;
    mass and CoM bounds apply to each link without its attached parts) or the defaults of :func:`default_box`;
    the total-mass range from ``bounds.total_mass``; the rest from the ``pbpr:`` config ``settings``."""

    options = RetrievalSettings.from_config(settings, layout)
    attached = np.zeros(layout.n_parameters) if attached is None else np.asarray(attached, dtype=float)
    nominal = np.asarray(nominal, dtype=float) if nominal is not None else None
    reference = nominal if nominal is not None else np.tile([1.0, 0, 0, 0, 0.01, 0, 0.01, 0, 0, 0.01],
                                                            len(layout.links))
    reference = np.concatenate([reference[: layout.n_link_parameters], np.zeros(layout.n_parameters
                                                                                 - layout.n_link_parameters)])
    own = reference - attached
    scales = scales_of(own, layout)
    attached_mass = attached[layout.indices("m")]
    link_mass = {k: (lo - attached_mass[k], hi - attached_mass[k]) for k, (lo, hi) in
                 (bounds.link_mass.items() if bounds is not None else [])}
    nonnegative = tuple((["fv", "fc"] if bounds is None or bounds.friction_nonnegative else [])
                        + (["Ia"] if bounds is None or bounds.armature_nonnegative else []))
    lower, upper = default_box(layout, standard_from_com(own, layout), scales, link_mass,
                               bounds.com_box if bounds is not None else None, nonnegative)
    bad = np.flatnonzero(lower > upper)
    if bad.size:
        raise ConfigError(f"pbpr: empty bounds for {', '.join(layout.names[i] for i in bad[:3])}")
    return retrieve(K, layout, lower, upper, scales, options, beta_hat=beta_ols, compressed=compress(w_b, tau),
                    total_mass=bounds.total_mass if bounds is not None else None, attached=attached,
                    nominal=nominal if use_nominal_start else None, rows=int(np.asarray(w_b).shape[0]))
