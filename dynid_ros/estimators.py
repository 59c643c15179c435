"""Estimators of the base parameters: OLS, WLS, and feasible estimation FBPE (Sousa & Cortesão 2014 section 4.4).

Rows of the base regressor ``w_b`` and of ``tau`` are sample-major (row ``s * n_dof + j``, see
:mod:`dynid_ros.parameters`).

FBPE (Sousa & Cortesão 2014 eq. 64-75) minimizes the (weighted) residual over the full standard parameters
``delta`` subject to the LMI of every link (:mod:`dynid_ros.feasibility`) and the bounds. The
regressor is compressed first: ``[W tau] = Q [[R, rho1], [0, rho2]]`` so the problem only holds
``R`` (n_base x n_base) and ``rho1`` whatever the number of samples (eq. 64-73).

The data leave the unidentifiable part of ``delta`` (the null space of ``K``, and directions the
data barely excite) free: on the real Panda, feasible fits with 2000-4000 kg links have the same
error. With a ``prior`` (the nominal parameters), a second stage keeps the fit and picks, among
the parameters consistent with the data, those closest to the prior:

- consistent: the squared residual norm grows by at most ``sigma^2 chi2_{n_base}(0.95)``, i.e.
  ``beta`` stays in the 95 % joint confidence region of the feasible least-squares fit
  (``sigma^2`` from its residual as in Sousa & Cortesão 2014 eq. 82; noise-free data leave no freedom);
- closest: in the log-det divergence of the link matrices,
  ``D(X || P) = tr(P^-1 X) - log det(P^-1 X) - n`` (the Bregman divergence of ``-log det``,
  invariant to frames and units; it keeps every link matrix inside the feasible cone), plus
  ``0.5 ((x - x0) / s)^2`` for the joint terms.

Variables are scaled by the prior's mass and length per link
(:func:`dynid_ros.feasibility.link_scales`) so the problem is well conditioned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from dynid_ros.errors import ConfigError, DataError, EstimationError, IdentifiabilityError
from dynid_ros.feasibility import (
    DEFAULT_EPS,
    SOLVED,
    Bounds,
    link_matrix_expressions,
    link_scales,
    parameter_scales,
    scaled_link_matrix,
    solve,
    solver_name,
)
from dynid_ros.parameters import ParameterLayout

PRIOR_EPS = 1e-4
"""Default LMI margin of FBPE with a prior: relative to each link's mass and size (see
:mod:`dynid_ros.feasibility`), so the triangle inequality holds with a margin a URDF keeps."""

CONFIDENCE = 0.95
"""Second stage of FBPE: the parameters stay in this joint confidence region of the fit."""


@dataclass
class LeastSquaresFit:
    """A (weighted) least-squares estimate of the base parameters.

    Attributes:
        beta: estimate (n_base,).
        std: standard deviation of each entry of ``beta`` (Sousa & Cortesão 2014 eq. 81-82).
        rel_std: ``100 std / |beta|`` [%] (Sousa & Cortesão 2014 eq. 83, Table 6); ``inf`` where beta is 0.
        weights: per-row weights used (ones for OLS; ``1 / sigma_j`` per joint for WLS).
        residual_std: per joint, standard deviation of the unweighted residual.
        residual_norm: ``||tau - W beta||`` (unweighted).
    """

    beta: np.ndarray
    std: np.ndarray
    rel_std: np.ndarray
    weights: np.ndarray
    residual_std: np.ndarray
    residual_norm: float


@dataclass
class FeasibleFit:
    """An FBPE estimate: feasible standard parameters ``delta`` and ``beta = K delta``.

    ``status`` is the cvxpy status of the stage that produced ``delta`` (never upgraded);
    ``stage_status`` has both stages; ``objective`` is the total weighted residual norm.
    """

    beta: np.ndarray
    delta: np.ndarray
    status: str
    objective: float
    stage_status: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)


def _check(w_b: np.ndarray, tau: np.ndarray, n_dof: int) -> tuple[np.ndarray, np.ndarray]:
    w_b = np.asarray(w_b, dtype=float)
    tau = np.asarray(tau, dtype=float).reshape(-1)
    if w_b.ndim != 2 or w_b.shape[0] != tau.size:
        raise DataError(f"regressor has {w_b.shape[0]} rows but there are {tau.size} torque values")
    if tau.size % n_dof:
        raise DataError(f"{tau.size} torque values are not a whole number of samples of {n_dof} joints")
    if w_b.shape[0] <= w_b.shape[1]:
        raise DataError(f"{w_b.shape[0]} equations for {w_b.shape[1]} base parameters: need more samples")
    if not (np.all(np.isfinite(w_b)) and np.all(np.isfinite(tau))):
        raise DataError("the regressor or the torques contain NaN or Inf")
    return w_b, tau


def compress(w_b: np.ndarray, tau: np.ndarray, weights: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, float]:
    """``R``, ``rho1`` and ``||rho2||`` of the QR of the weighted ``[W tau]`` (Sousa & Cortesão 2014 eq. 64-70).

    ``||tau - W beta||^2 = ||rho2||^2 + ||rho1 - R beta||^2`` for every ``beta``.
    """
    augmented = np.column_stack([w_b, tau])
    if weights is not None:
        augmented = augmented * np.asarray(weights, dtype=float)[:, None]
    return _split(_qr_r(augmented), w_b.shape[1])


def _qr_r(matrix: np.ndarray) -> np.ndarray:
    """Square upper-triangular ``R`` (zero-padded when there are fewer rows than columns)."""
    r = scipy.linalg.qr(matrix, mode="r", overwrite_a=True, check_finite=False)[0]
    if r.shape[0] < r.shape[1]:
        r = np.vstack([r, np.zeros((r.shape[1] - r.shape[0], r.shape[1]))])
    return r[: r.shape[1]]


def _split(r_aug: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, float]:
    return r_aug[:n, :n], r_aug[:n, n], float(abs(r_aug[n, n]))


@dataclass
class JointBlocks:
    """Per-joint compression ``[W_j tau_j] = Q_j B_j`` (``B_j``: (n_base + 1) square, upper triangular
    up to a column permutation): any per-joint weighting and every per-joint residual follow
    exactly from the blocks, without touching the samples again."""

    blocks: np.ndarray
    rows: int

    @classmethod
    def of(cls, w_b: np.ndarray, tau: np.ndarray, n_dof: int) -> JointBlocks:
        n_samples, n_base = tau.size // n_dof, w_b.shape[1]
        w3, t2 = w_b.reshape(n_samples, n_dof, n_base), tau.reshape(n_samples, n_dof)
        blocks = np.zeros((n_dof, n_base + 1, n_base + 1))
        for j in range(n_dof):
            # only the columns that act on joint j (a joint does not feel the links before it)
            used = np.flatnonzero(np.any(w3[:, j, :] != 0.0, axis=0))
            r = _qr_r(np.column_stack([w3[:, j, used], t2[:, j]]))
            blocks[j][np.ix_(np.arange(used.size + 1), np.append(used, n_base))] = r
        return cls(blocks, tau.size)

    def combined(self, per_joint: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """``R``, ``rho1``, ``||rho2||`` of the problem with row weights ``per_joint[j]`` on joint ``j``."""
        stacked = (self.blocks * np.asarray(per_joint, dtype=float)[:, None, None]).reshape(-1, self.blocks.shape[2])
        return _split(_qr_r(stacked), self.blocks.shape[2] - 1)

    def residual_norms(self, beta: np.ndarray) -> np.ndarray:
        """``||tau_j - W_j beta||`` per joint."""
        return np.linalg.norm(self.blocks @ np.append(-beta, 1.0), axis=1)


def _least_squares(blocks: JointBlocks, per_joint: np.ndarray) -> LeastSquaresFit:
    r, rho1, rho2 = blocks.combined(per_joint)
    diag = np.abs(np.diag(r))
    weak = np.flatnonzero(diag <= 1e-12 * max(diag.max(), 1e-300))
    if weak.size:
        raise IdentifiabilityError(f"the regressor is rank deficient: base parameter(s) "
                                   f"{', '.join(f'beta{i + 1}' for i in weak[:6])} not identifiable from this data")
    beta = scipy.linalg.solve_triangular(r, rho1)
    n_dof, n_base = blocks.blocks.shape[0], r.shape[0]
    sigma2 = rho2**2 / (blocks.rows - n_base)  # Sousa & Cortesão 2014 eq. 82 (weighted residual)
    r_inv = scipy.linalg.solve_triangular(r, np.eye(n_base))
    std = np.sqrt(sigma2 * np.sum(r_inv**2, axis=1))  # Sousa & Cortesão 2014 eq. 81: diag(sigma^2 (W^T W)^-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel_std = np.where(beta != 0, 100.0 * std / np.abs(beta), np.inf)
    norms = blocks.residual_norms(beta)
    dof = blocks.rows / n_dof - n_base / n_dof
    weights = np.tile(np.asarray(per_joint, dtype=float), blocks.rows // n_dof)
    return LeastSquaresFit(beta, std, rel_std, weights, norms / np.sqrt(max(dof, 1.0)),
                           float(np.linalg.norm(norms)))


def ols(w_b: np.ndarray, tau: np.ndarray, n_dof: int) -> LeastSquaresFit:
    """Ordinary least squares (Sousa & Cortesão 2014 eq. 60) with the standard deviations of eq. 81-83."""
    w_b, tau = _check(w_b, tau, n_dof)
    return _least_squares(JointBlocks.of(w_b, tau, n_dof), np.ones(n_dof))


def wls(w_b: np.ndarray, tau: np.ndarray, n_dof: int, iterations: int = 3) -> LeastSquaresFit:
    """Weighted least squares: each joint's rows weighted by ``1 / sigma_j``, ``sigma_j`` the standard
    deviation of that joint's residual (Gautier's per-joint noise weighting). ``sigma_j`` starts from
    the OLS residual and is re-estimated from the weighted fit ``iterations - 1`` times: a noisy
    joint's error leaks into the OLS residual of the others and would under-weight the precise ones."""
    w_b, tau = _check(w_b, tau, n_dof)
    blocks = JointBlocks.of(w_b, tau, n_dof)
    fit = _least_squares(blocks, np.ones(n_dof))
    floor = 1e-9 * max(float(np.sqrt(np.mean(tau**2))), 1e-300)
    for _ in range(max(int(iterations), 1)):
        per_joint = 1.0 / np.maximum(fit.residual_std, floor)
        per_joint = per_joint / np.exp(np.mean(np.log(per_joint)))  # geometric mean 1: same scale as OLS
        fit = _least_squares(blocks, per_joint)
    return fit


def fbpe(w_b: np.ndarray, tau: np.ndarray, K: np.ndarray, layout: ParameterLayout, consistency: str = "full",
         bounds: Bounds | None = None, weights: np.ndarray | None = None, solver: str = "clarabel",
         prior: np.ndarray | None = None, eps: float | None = None,
         fit_tolerance: float | None = None, confidence: float = CONFIDENCE,
         attached: np.ndarray | None = None) -> FeasibleFit:
    """Feasible Base Parameter Estimation, FBPE-OLS/WLS (Sousa & Cortesão 2014 eq. 74-75), on the full ``delta``.

    Args:
        w_b: base regressor (rows, n_base); tau: torques (rows,).
        K: (n_base, n_parameters) with ``beta = K delta`` (Sousa & Cortesão 2014 eq. 38).
        layout: the parameter layout of ``delta``.
        consistency: ``physical`` (Sousa & Cortesão 2014 eq. 17) or ``full`` (pseudo-inertia, Traversaro et al. 2016).
        bounds: extra bounds; None means the defaults (friction and armature >= 0).
        weights: per-row weights (WLS), or None (OLS).
        solver: ``clarabel`` or ``scs``.
        prior: nominal ``delta``; when given, the unidentifiable part is resolved toward it (module
            docstring) and the LMI margin is relative to the prior's mass and size.
        eps: LMI margin; default ``PRIOR_EPS`` with a prior, Sousa & Cortesão 2014's 1e-6 without.
        fit_tolerance: allowed relative growth of the residual norm in the prior stage; by default
            the growth a ``confidence`` joint confidence region of ``beta`` allows (module docstring).
        attached: known parameters of parts rigidly attached to each link (e.g. a gripper, same
            layout; joint terms ignored): the LMI and the prior apply to ``delta_k - attached_k``,
            the link itself, so that it can be written to a URDF on its own.
    """
    import cvxpy as cp

    timings: dict[str, float] = {}
    start = time.perf_counter()
    solver_name(solver)
    n_dof = layout.n_dof
    w_b, tau = _check(w_b, tau, n_dof)
    K = np.asarray(K, dtype=float)
    if K.shape != (w_b.shape[1], layout.n_parameters):
        raise ConfigError(f"K is {K.shape[0]}x{K.shape[1]}, expected {w_b.shape[1]}x{layout.n_parameters}")
    if weights is not None and np.asarray(weights).shape != tau.shape:
        raise ConfigError(f"weights have shape {np.asarray(weights).shape}, expected ({tau.size},)")
    if prior is not None:
        prior = np.asarray(prior, dtype=float).reshape(-1)
        if prior.size != layout.n_parameters or not np.all(np.isfinite(prior)):
            raise ConfigError(f"prior must be {layout.n_parameters} finite parameters")
    eps = (PRIOR_EPS if prior is not None else DEFAULT_EPS) if eps is None else float(eps)
    bounds = bounds or Bounds()

    per_joint = _per_joint(weights, n_dof)
    if weights is None or per_joint is not None:  # per-joint weights: compress joint by joint (cheaper)
        r, rho1, rho2 = JointBlocks.of(w_b, tau, n_dof).combined(np.ones(n_dof) if per_joint is None else per_joint)
    else:
        r, rho1, rho2 = compress(w_b, tau, weights)
    scales = link_scales(prior, layout)
    size = parameter_scales(layout, scales)  # delta = size * x
    norm = max(float(np.linalg.norm(rho1)), 1e-300)
    a = (r @ K) * size / norm
    b = rho1 / norm
    timings["compress"] = time.perf_counter() - start

    start = time.perf_counter()
    x = cp.Variable(layout.n_parameters)
    delta = cp.multiply(size, x)
    if attached is not None:
        attached = np.asarray(attached, dtype=float).reshape(-1)
        if attached.size != layout.n_parameters:
            raise ConfigError(f"attached must have {layout.n_parameters} parameters, not {attached.size}")
    matrices = link_matrix_expressions(delta, layout, consistency, scales, attached)
    feasible_set = [m >> eps * np.eye(m.shape[0]) for m in matrices] + bounds.constraints(delta, layout, size)
    residual = cp.norm(a @ x - b, 2)
    fit = cp.Problem(cp.Minimize(residual), feasible_set)
    status, seconds = solve(fit, solver)
    timings["fit_solve"] = seconds
    timings["fit_total"] = time.perf_counter() - start
    stage_status = {"fit": status}
    if status not in SOLVED:
        reason = ("no parameters satisfy the " + consistency + " consistency constraints and the bounds"
                  if "infeasible" in status else "no solution")
        raise EstimationError(f"FBPE ({solver}): solver status {status}: {reason}")
    best = float(fit.value)
    solution = np.array(x.value)

    if prior is not None:
        start = time.perf_counter()
        limit = np.sqrt(best**2 + _allowed_growth(best**2 + (rho2 / norm) ** 2, w_b.shape, fit_tolerance,
                                                  confidence)) + 1e-9
        own_prior = prior if attached is None else prior - attached
        objective = _prior_divergence(matrices, x, own_prior, prior, layout, consistency, scales, size)
        second = cp.Problem(cp.Minimize(objective), [*feasible_set, residual <= limit])
        status2, seconds = solve(second, solver)
        stage_status["prior"] = status2
        timings["prior_solve"] = seconds
        timings["prior_total"] = time.perf_counter() - start
        if status2 in SOLVED:
            solution, status = np.array(x.value), status2
        else:
            status = f"{status2} (prior stage; fit-stage solution returned)"

    delta_value = size * solution
    nonnegative = [i for s in bounds._nonnegative(layout) for i in layout.indices(s)]
    delta_value[nonnegative] = np.maximum(delta_value[nonnegative], 0.0)  # solver round-off at the bound
    beta = K @ delta_value
    objective_value = float(np.sqrt(np.linalg.norm(rho1 - r @ beta) ** 2 + rho2**2))
    return FeasibleFit(beta, delta_value, status, objective_value, stage_status,
                       {k: round(v, 4) for k, v in timings.items()})


def _per_joint(weights: np.ndarray | None, n_dof: int) -> np.ndarray | None:
    """The per-joint weights when ``weights`` (per row) repeat every sample, else None."""
    if weights is None:
        return None
    table = np.asarray(weights, dtype=float).reshape(-1, n_dof)
    return table[0] if np.all(table == table[0]) else None


def _allowed_growth(total2: float, shape: tuple[int, int], fit_tolerance: float | None, confidence: float) -> float:
    """Allowed growth of the squared residual norm in the prior stage.

    Default: ``sigma^2 chi2_{n_base}(confidence)`` with ``sigma^2 = ||r||^2 / (rows - n_base)``, the
    boundary of the joint confidence region of the least-squares parameters (white residuals assumed).
    """
    if fit_tolerance is not None:
        return (2.0 * fit_tolerance + fit_tolerance**2) * total2
    from scipy.stats import chi2

    rows, n_base = shape
    return float(chi2.ppf(confidence, n_base)) * total2 / (rows - n_base)


PRIOR_QUADRATIC_WEIGHT = 10.0
"""Weight of the scaled quadratic pull of link parameters toward the prior in the prior stage."""


def _prior_divergence(matrices: list, x, own_prior: np.ndarray, prior: np.ndarray, layout: ParameterLayout,
                      consistency: str, scales: np.ndarray, size: np.ndarray):
    """Sum over links of the log-det divergence to the prior's link matrix (module docstring), plus a
    scaled quadratic pull of every parameter (weight ``PRIOR_QUADRATIC_WEIGHT`` on link parameters, 0.5
    on joint terms). A prior link matrix that is not positive definite is shifted to a minimum
    eigenvalue of 1e-3 (in the scaled units, where the matrix is about 1).

    The log-det divergence alone is nearly scale-invariant: measured in the UR5e demo it let the
    unidentifiable upper-arm mass drift from 8.8 to 13.8 kg (link masses 50 % off the truth, nominal
    8.5 %); with the quadratic pull: 5.7 % (Panda demo: 6.7 % -> 2.0 %), same fit."""
    import cvxpy as cp

    terms = []
    for k, matrix in enumerate(matrices):
        p = scaled_link_matrix(own_prior[layout.link_slice(k)], consistency, *scales[k])
        p = 0.5 * (p + p.T)
        low = float(np.linalg.eigvalsh(p)[0])
        if low < 1e-3:
            p = p + (1e-3 - low) * np.eye(p.shape[0])
        terms.append(cp.trace(np.linalg.inv(p) @ matrix) - cp.log_det(matrix))
    links = np.arange(layout.n_link_parameters)
    terms.append(PRIOR_QUADRATIC_WEIGHT * cp.sum_squares(x[links] - prior[links] / size[links]))
    joint = np.arange(layout.n_link_parameters, layout.n_parameters)
    if joint.size:
        terms.append(0.5 * cp.sum_squares(x[joint] - prior[joint] / size[joint]))
    return cp.sum(cp.hstack(terms)) if len(terms) > 1 else terms[0]
