"""Estimators of the base parameters: OLS, WLS, and feasible estimation FBPE (Sousa & Cortesão 2014 section 4.4).

Rows of the base regressor ``w_b`` and of ``tau`` are sample-major (row ``s * n_dof + j``, see
:mod:`dynid_ros.robot.parameters`).

FBPE (Sousa & Cortesão 2014 eq. 64-75) works on the full standard parameters ``delta`` subject to the LMI
of every link (:mod:`dynid_ros.dynamics.feasibility`) and the bounds (:mod:`dynid_ros.dynamics.bounds`).
The regressor is compressed first: ``[W tau] = Q [[R, rho1], [0, rho2]]`` so the problem only holds ``R``
(n_base x n_base) and ``rho1`` whatever the number of samples (eq. 64-73).

Without a prior, FBPE minimizes the (weighted) residual norm (eq. 74-75). The data leave the
unidentifiable part of ``delta`` (the null space of ``K``) and the directions they barely excite free:
on the real Panda feasible fits with 2000-4000 kg links have the same error. With a prior
(:mod:`dynid_ros.estimation.prior`: the nominal parameters and CAD tolerances), FBPE is the maximum a posteriori
estimate under the constraints,

    min  ||W delta - tau||_w^2 / (s^2 tau_int)  +  sum_i ((delta_i - mean_i) / std_i)^2,

with ``s^2`` the residual variance of the weighted least-squares fit (Sousa & Cortesão 2014 eq. 82) and
``tau_int`` the integrated autocorrelation time of its residual (:mod:`dynid_ros.estimation.residual_model`):
correlated residuals carry less information than white ones, so the data pull less. Every direction the
data determine poorly (not only the exact null space) stays near the prior; the well-determined ones
follow the data. Base parameters the data do not excite at all can be pinned to the prior (``fixed``).

Variables are scaled by the prior's mass and length per link
(:func:`dynid_ros.dynamics.feasibility.link_scales`) so the problem is well conditioned. A solver status other
than ``optimal`` is retried (rescaled objective, then the other solver); the answer is checked against
every constraint: one it misses by no more than the solver's own tolerance is polished onto the feasible set and
reported (:mod:`dynid_ros.dynamics.polish`), a larger violation is an error.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits

from dynid_ros.dynamics.bounds import Bounds
from dynid_ros.dynamics.feasibility import (
    DEFAULT_EPS,
    link_matrix_expressions,
    link_scales,
    parameter_scales,
    solve_until_optimal,
    solver_name,
    solver_tolerance,
)
from dynid_ros.dynamics.polish import Polished, polish
from dynid_ros.dynamics.row_chunks import RowChunks, as_row_chunks
from dynid_ros.errors import ConfigError, DataError, EstimationError, IdentifiabilityError
from dynid_ros.estimation.normal_equations import NormalEquations
from dynid_ros.estimation.prior import Prior, cad_prior
from dynid_ros.estimation.residual_model import NOISE_FLOOR, residual_inflation
from dynid_ros.robot.parameters import ParameterLayout

PRIOR_EPS = 1e-4
"""Default LMI margin of FBPE with a prior: relative to each link's mass and size (see
:mod:`dynid_ros.dynamics.feasibility`), so the triangle inequality holds with a margin a URDF keeps."""

MAX_DATA_WEIGHT = 1e4
"""Cap of ``||rho1|| / (s sqrt(tau_int))`` in the MAP objective, for numerically noise-free data only
(``NOISE_FREE_RESIDUAL``): ``s -> 0`` would make the problem numerically singular; at the cap the data term still
outweighs the prior by ``1e8``. Measured data are never capped (their weight is what their noise says)."""

NOISE_FREE_RESIDUAL = 1e-6
"""Data whose least-squares residual is below this fraction of their norm are numerically noise-free (torques
computed from a model, M(q) and g(q) samples): no torque sensor resolves a millionth of its signal."""

@dataclass
class LeastSquaresFit:
    """A (weighted) least-squares estimate of the base parameters.

    Attributes:
        beta: estimate (n_base,).
        std: standard deviation of each entry of ``beta`` (Sousa & Cortesão 2014 eq. 81-82), times
            ``sqrt(inflation)`` (correlated residuals); ``inf`` for base parameters held fixed.
        rel_std: ``100 std / |beta|`` [%] (Sousa & Cortesão 2014 eq. 83, Table 6); ``inf`` where beta is 0.
        weights: per-row weights used (ones for OLS; ``1 / sigma_j`` per joint for WLS).
        residual_std: per joint, standard deviation of the unweighted residual.
        residual_norm: ``||tau - W beta||`` (unweighted).
        inflation: integrated autocorrelation time of the residual (1 for white residuals).
    """

    beta: np.ndarray
    std: np.ndarray
    rel_std: np.ndarray
    weights: np.ndarray
    residual_std: np.ndarray
    residual_norm: float
    inflation: float = 1.0


@dataclass
class FeasibleFit:
    """An FBPE estimate: feasible standard parameters ``delta`` and ``beta = K delta``.

    ``status`` is the cvxpy status of the attempt that produced ``delta`` (never upgraded);
    ``stage_status`` has every attempt; ``objective`` is the total weighted residual norm;
    ``beta_std`` the standard deviation of ``beta`` (posterior with a prior, least squares without);
    ``delta_std`` that of ``delta`` (with a prior only, else None).
    """

    beta: np.ndarray
    delta: np.ndarray
    status: str
    objective: float
    stage_status: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    beta_std: np.ndarray | None = None
    delta_std: np.ndarray | None = None
    inflation: float = 1.0
    capped_data_weight: float | None = None
    """The MAP data weight when capped (numerically noise-free data: ``map_data_weight``), else None."""
    solver: str | None = None
    """The solver that gave ``delta``."""
    polished: Polished | None = None
    """What :func:`dynid_ros.dynamics.polish.polish` moved onto the feasible set (None: the answer held every
    constraint as returned)."""


def in_fit(w_b: np.ndarray, tau: np.ndarray, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The regressor and torque with the rows left out of the fit (``rows`` False: below ``min_speed``, no
    torque sign...) removed from every sum, and the mask (all True when ``rows`` is None). The arrays keep their
    (samples x joints) shape, so a removed row is a zero row for the QR; every count (degrees of freedom, noise
    variance, autocorrelation) is over the rows in the fit only."""
    tau = np.asarray(tau, dtype=float).reshape(-1)
    if rows is None:
        return w_b, tau, np.ones(tau.size, dtype=bool)
    rows = np.asarray(rows, dtype=bool).reshape(-1)
    if rows.size != tau.size:
        raise ConfigError(f"row mask has {rows.size} entries for {tau.size} rows")
    if rows.all():
        return w_b, tau, rows
    if isinstance(w_b, RowChunks):
        return w_b.masked(rows), np.where(rows, tau, 0.0), rows
    return np.where(rows[:, None], w_b, 0.0), np.where(rows, tau, 0.0), rows


def _check(w_b: np.ndarray | RowChunks, tau: np.ndarray, n_dof: int) -> tuple[np.ndarray | RowChunks, np.ndarray]:
    """Shapes and finiteness (a :class:`RowChunks` regressor's blocks are checked as they are compressed)."""
    if not isinstance(w_b, RowChunks):
        w_b = np.asarray(w_b, dtype=float)
    tau = np.asarray(tau, dtype=float).reshape(-1)
    if len(w_b.shape) != 2 or w_b.shape[0] != tau.size:
        raise DataError(f"regressor has {w_b.shape[0]} rows but there are {tau.size} torque values")
    if tau.size % n_dof:
        raise DataError(f"{tau.size} torque values are not a whole number of samples of {n_dof} joints")
    if w_b.shape[0] <= w_b.shape[1]:
        raise DataError(f"{w_b.shape[0]} equations for {w_b.shape[1]} base parameters: need more samples")
    if not (np.all(np.isfinite(tau)) and (isinstance(w_b, RowChunks) or np.all(np.isfinite(w_b)))):
        raise DataError("the regressor or the torques contain NaN or Inf")
    return w_b, tau


def _finite(block: np.ndarray) -> np.ndarray:
    if not np.all(np.isfinite(block)):
        raise DataError("the regressor or the torques contain NaN or Inf")
    return block


def compress(w_b: np.ndarray | RowChunks, tau: np.ndarray, weights: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, float]:
    """``R``, ``rho1`` and ``||rho2||`` of the QR of the weighted ``[W tau]`` (Sousa & Cortesão 2014 eq. 64-70).

    ``||tau - W beta||^2 = ||rho2||^2 + ||rho1 - R beta||^2`` for every ``beta``. The rows are compressed block by
    block (:func:`triangular_factor`).
    """
    tau = np.asarray(tau, dtype=float).reshape(-1)
    weights = None if weights is None else np.asarray(weights, dtype=float).reshape(-1)

    def blocks():
        for first, block in as_row_chunks(w_b).chunks():
            rows = slice(first, first + block.shape[0])
            augmented = np.column_stack([block, tau[rows]])
            yield augmented if weights is None else augmented * weights[rows, None]

    return _split(triangular_factor(blocks(), w_b.shape[1] + 1), w_b.shape[1])


def triangular_factor(blocks, width: int) -> np.ndarray:
    """Square upper-triangular ``R`` with ``R^T R = A^T A`` of the matrix stacked from ``blocks`` (each
    ``(rows, width)``): incremental QR, the running ``R`` stacked on each block and factored again (every sum of
    squares and product of ``A`` is kept exactly)."""
    r = None
    with threadpool_limits(limits=1, user_api="blas"):  # many small QRs: BLAS threads only contend
        for block in blocks:
            stacked = _finite(block) if r is None else np.vstack([r, _finite(block)])
            r = _qr_r(np.array(stacked, dtype=float, order="F"))
    return np.zeros((width, width)) if r is None else r


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
    joint_rows: np.ndarray | None = None
    """Observations per joint (rows in the fit); None: every sample of every joint."""
    size: int = 0
    """Rows of the regressor, in the fit or not (0: ``rows``)."""

    @classmethod
    def of(cls, w_b: np.ndarray | RowChunks, tau: np.ndarray, n_dof: int, rows: np.ndarray | None = None
           ) -> JointBlocks:
        """The blocks of the rows in the fit (``rows``: their mask; the others are no observation), accumulated
        block of rows by block of rows (``w_b`` may be :class:`RowChunks`): the running ``B_j`` stacked on the
        block's rows of joint ``j`` and factored again."""
        tau = np.asarray(tau, dtype=float).reshape(-1)
        n_samples, n_base = tau.size // n_dof, w_b.shape[1]
        w_b, tau, rows = in_fit(w_b, tau, rows)
        key = None
        if isinstance(w_b, RowChunks):  # the same blocks are asked for by WLS, FBPE...: one pass each
            key = ("joint_blocks", n_dof, w_b.key(tau, rows))
            if key in w_b.memo:
                return w_b.memo[key]
        t2 = tau.reshape(n_samples, n_dof)
        blocks = np.zeros((n_dof, n_base + 1, n_base + 1))
        with threadpool_limits(limits=1, user_api="blas"):  # many small QRs: BLAS threads only contend
            for first, chunk in as_row_chunks(w_b).chunks():
                w3 = _finite(chunk).reshape(-1, n_dof, n_base)
                samples = slice(first // n_dof, first // n_dof + w3.shape[0])
                for j in range(n_dof):
                    blocks[j] = _joint_block(blocks[j], w3[:, j, :], t2[samples, j])
        out = cls(blocks, int(rows.sum()), rows.reshape(n_samples, n_dof).sum(axis=0), tau.size)
        if key is not None:
            w_b.memo[key] = out
        return out

    def combined(self, per_joint: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """``R``, ``rho1``, ``||rho2||`` of the problem with row weights ``per_joint[j]`` on joint ``j``."""
        stacked = (self.blocks * np.asarray(per_joint, dtype=float)[:, None, None]).reshape(-1, self.blocks.shape[2])
        return _split(_qr_r(stacked), self.blocks.shape[2] - 1)

    def normal_equations(self) -> list[NormalEquations]:
        """Per joint, the normal equations of ``[W_j tau_j]`` (``B_j^T B_j``), with its rows in the fit."""
        n = self.blocks.shape[2] - 1
        counts = self.joint_rows if self.joint_rows is not None else \
            np.full(self.blocks.shape[0], self.rows // self.blocks.shape[0])
        return [NormalEquations(b[:, :n].T @ b[:, :n], b[:, :n].T @ b[:, n], float(b[:, n] @ b[:, n]), int(count))
                for b, count in zip(self.blocks, counts)]

    def residual_norms(self, beta: np.ndarray) -> np.ndarray:
        """``||tau_j - W_j beta||`` per joint."""
        return np.linalg.norm(self.blocks @ np.append(-beta, 1.0), axis=1)


def _joint_block(running: np.ndarray, w_j: np.ndarray, tau_j: np.ndarray) -> np.ndarray:
    """``running`` (a joint's block so far) updated with rows ``[w_j tau_j]``; only the columns that act on the
    joint are factored (a joint does not feel the links before it)."""
    n_base = w_j.shape[1]
    used = np.flatnonzero(np.any(w_j != 0.0, axis=0) | np.any(running[:, :n_base] != 0.0, axis=0))
    rows = np.column_stack([w_j[:, used], tau_j])
    if np.any(running):
        rows = np.vstack([running[np.ix_(np.arange(used.size + 1), np.append(used, n_base))], rows])
    out = np.zeros_like(running)
    out[np.ix_(np.arange(used.size + 1), np.append(used, n_base))] = _qr_r(rows)
    return out


# --------------------------------------------------------------------------------------------
# Least squares


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
    norms = blocks.residual_norms(beta)
    joint_rows = blocks.joint_rows if blocks.joint_rows is not None else np.full(n_dof, blocks.rows / n_dof)
    dof = np.maximum(joint_rows - n_base / n_dof, 1.0)
    weights = np.tile(np.asarray(per_joint, dtype=float), (blocks.size or blocks.rows) // n_dof)
    return LeastSquaresFit(beta, std, relative_std(std, beta), weights, norms / np.sqrt(dof),
                           float(np.linalg.norm(norms)))


def closest_standard(K: np.ndarray, beta: np.ndarray, nominal: np.ndarray) -> np.ndarray:
    """The standard parameters closest to ``nominal`` that give the base parameters ``beta`` (``K delta = beta``,
    Sousa & Cortesão 2014 eq. 56): the nominal values plus the least-norm correction."""
    correction = np.linalg.lstsq(K, beta - K @ nominal, rcond=None)[0]
    return nominal + correction


def relative_std(std: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """``100 std / |beta|`` [%] (Sousa & Cortesão 2014 eq. 83); ``inf`` where ``beta`` is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(beta != 0, 100.0 * np.asarray(std) / np.abs(beta), np.inf)


def _free_columns(w_b: np.ndarray, tau: np.ndarray, fixed: dict[int, float] | None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The regressor of the free base parameters, the torque minus the fixed ones' share, the free indices."""
    free = np.setdiff1d(np.arange(w_b.shape[1]), list(fixed or {}))
    if not fixed:
        return w_b, tau, free
    idx = np.array(list(fixed), dtype=int)
    values = np.array(list(fixed.values()), dtype=float)
    if isinstance(w_b, RowChunks):
        return w_b.columns(free), tau - w_b.columns(idx) @ values, free
    return w_b[:, free], tau - w_b[:, idx] @ values, free


def _assemble(fit: LeastSquaresFit, free: np.ndarray, fixed: dict[int, float] | None, n_base: int,
              w_b: np.ndarray, tau: np.ndarray, n_dof: int, rows: np.ndarray | None = None) -> LeastSquaresFit:
    """The fit of the free columns as a fit of all base parameters (fixed ones: value, std ``inf``), with the
    standard deviations inflated for correlated residuals."""
    beta, std = np.zeros(n_base), np.full(n_base, np.inf)
    beta[free], std[free] = fit.beta, fit.std
    for i, value in (fixed or {}).items():
        beta[i] = value
    per_joint = fit.weights[:n_dof]
    inflation = residual_inflation((tau - w_b @ beta).reshape(-1, n_dof), per_joint,
                                   None if rows is None else rows.reshape(-1, n_dof))
    std = std * np.sqrt(inflation)
    return LeastSquaresFit(beta, std, relative_std(std, beta), fit.weights, fit.residual_std, fit.residual_norm,
                           inflation)


def ols(w_b: np.ndarray, tau: np.ndarray, n_dof: int, fixed: dict[int, float] | None = None,
        rows: np.ndarray | None = None) -> LeastSquaresFit:
    """Ordinary least squares (Sousa & Cortesão 2014 eq. 60) with the standard deviations of eq. 81-83, inflated
    by the residual's integrated autocorrelation time. ``fixed``: base parameters held at a given value;
    ``rows``: mask of the rows in the fit (the others are no observations: :func:`in_fit`)."""
    w_b, tau = _check(w_b, tau, n_dof)
    w_b, tau, rows = in_fit(w_b, tau, rows)
    w_free, tau_free, free = _free_columns(w_b, tau, fixed)
    fit = _least_squares(JointBlocks.of(w_free, tau_free, n_dof, rows), np.ones(n_dof))
    return _assemble(fit, free, fixed, w_b.shape[1], w_b, tau, n_dof, rows)


def wls(w_b: np.ndarray, tau: np.ndarray, n_dof: int, iterations: int = 3,
        fixed: dict[int, float] | None = None, rows: np.ndarray | None = None) -> LeastSquaresFit:
    """Weighted least squares: each joint's rows weighted by ``1 / sigma_j``, ``sigma_j`` the standard
    deviation of that joint's residual (Gautier's per-joint noise weighting). ``sigma_j`` starts from
    the OLS residual and is re-estimated from the weighted fit ``iterations - 1`` times: a noisy
    joint's error leaks into the OLS residual of the others and would under-weight the precise ones.
    ``rows``: as in :func:`ols`."""
    w_b, tau = _check(w_b, tau, n_dof)
    w_b, tau, rows = in_fit(w_b, tau, rows)
    w_free, tau_free, free = _free_columns(w_b, tau, fixed)
    blocks = JointBlocks.of(w_free, tau_free, n_dof, rows)
    fit = _least_squares(blocks, np.ones(n_dof))
    floor = NOISE_FLOOR * max(float(np.sqrt(np.mean(tau**2))), 1e-300)
    for _ in range(max(int(iterations), 1)):
        per_joint = 1.0 / np.maximum(fit.residual_std, floor)
        per_joint = per_joint / np.exp(np.mean(np.log(per_joint)))  # geometric mean 1: same scale as OLS
        fit = _least_squares(blocks, per_joint)
    return _assemble(fit, free, fixed, w_b.shape[1], w_b, tau, n_dof, rows)


# --------------------------------------------------------------------------------------------
# FBPE


@dataclass
class ScaledData:
    """The data term of FBPE in scaled variables ``x`` (``delta = size * x``): the weighted residual
    is ``||tau - W K delta||_w^2 = rho2^2 + norm^2 ||a x - b||^2`` (Sousa & Cortesão 2014 eq. 64-73)."""

    r: np.ndarray
    rho1: np.ndarray
    rho2: float
    a: np.ndarray
    b: np.ndarray
    norm: float
    size: np.ndarray
    scales: np.ndarray
    rows: int


def scaled_data(w_b: np.ndarray, tau: np.ndarray, K: np.ndarray, layout: ParameterLayout,
                weights: np.ndarray | None, reference: np.ndarray | None, rows: np.ndarray | None = None
                ) -> ScaledData:
    """Compress the (weighted) data and scale the variables by the ``reference`` links' mass and size;
    ``rows``: mask of the rows in the fit (``ScaledData.rows`` counts them)."""
    n_dof = layout.n_dof
    w_b, tau, rows = in_fit(w_b, tau, rows)
    per_joint = _per_joint(weights, n_dof)
    if weights is None or per_joint is not None:  # per-joint weights: compress joint by joint (cheaper)
        r, rho1, rho2 = JointBlocks.of(w_b, tau, n_dof).combined(np.ones(n_dof) if per_joint is None else per_joint)
    else:
        r, rho1, rho2 = compress(w_b, tau, weights)
    scales = link_scales(reference, layout)
    size = parameter_scales(layout, scales)
    norm = max(float(np.linalg.norm(rho1)), 1e-300)
    return ScaledData(r, rho1, rho2, (r @ K) * size / norm, rho1 / norm, norm, size, scales, int(rows.sum()))


def _per_joint(weights: np.ndarray | None, n_dof: int) -> np.ndarray | None:
    """The per-joint weights when ``weights`` (per row) repeat every sample, else None."""
    if weights is None:
        return None
    table = np.asarray(weights, dtype=float).reshape(-1, n_dof)
    return table[0] if np.all(table == table[0]) else None


def noise_variance(w_b: np.ndarray, tau: np.ndarray, data: ScaledData, weights: np.ndarray | None,
                   n_dof: int, rows: np.ndarray | None = None, joint_inflation: np.ndarray | None = None
                   ) -> tuple[float, float]:
    """``(s^2, tau_int)``: weighted residual variance of the unconstrained least-squares fit
    (Sousa & Cortesão 2014 eq. 82) and the integrated autocorrelation time of its residual, over the rows in
    the fit (``rows``; ``data.rows`` counts them). With ``joint_inflation`` (per joint), ``tau_int`` is their
    average weighted by each joint's share of the residual (the one number reported)."""
    n_base = w_b.shape[1]
    sigma2 = data.rho2**2 / max(data.rows - n_base, 1)
    beta = np.linalg.lstsq(data.r, data.rho1, rcond=None)[0]
    per_joint = _per_joint(weights, n_dof)
    inflation = residual_inflation((tau - w_b @ beta).reshape(-1, n_dof), per_joint,
                                   None if rows is None else np.asarray(rows, dtype=bool).reshape(-1, n_dof),
                                   joint_inflation)
    return max(sigma2, 1e-300), inflation


def _as_prior(prior: Prior | np.ndarray | None, layout: ParameterLayout) -> Prior | None:
    if prior is None:
        return None
    if not isinstance(prior, Prior):
        mean = np.asarray(prior, dtype=float).reshape(-1)
        if mean.size != layout.n_parameters or not np.all(np.isfinite(mean)):
            raise ConfigError(f"prior must be {layout.n_parameters} finite parameters")
        prior = cad_prior(mean, layout)
    if prior.mean.size != layout.n_parameters or not np.all(np.isfinite(prior.std)) or np.any(prior.std <= 0):
        raise ConfigError(f"prior must be {layout.n_parameters} finite parameters with positive std")
    return prior


def _checked_inputs(w_b, tau, K, layout: ParameterLayout, weights, attached, solver: str):
    solver_name(solver)
    w_b, tau = _check(w_b, tau, layout.n_dof)
    K = np.asarray(K, dtype=float)
    if K.shape != (w_b.shape[1], layout.n_parameters):
        raise ConfigError(f"K is {K.shape[0]}x{K.shape[1]}, expected {w_b.shape[1]}x{layout.n_parameters}")
    if weights is not None and np.asarray(weights).shape != tau.shape:
        raise ConfigError(f"weights have shape {np.asarray(weights).shape}, expected ({tau.size},)")
    if attached is not None:
        attached = np.asarray(attached, dtype=float).reshape(-1)
        if attached.size != layout.n_parameters:
            raise ConfigError(f"attached must have {layout.n_parameters} parameters, not {attached.size}")
    return w_b, tau, K, attached


def fbpe(w_b: np.ndarray, tau: np.ndarray, K: np.ndarray, layout: ParameterLayout, *, consistency: str = "full",
         bounds: Bounds | None = None, weights: np.ndarray | None = None, solver: str = "clarabel",
         prior: Prior | np.ndarray | None = None, eps: float | None = None,
         attached: np.ndarray | None = None, fixed: dict[int, float] | None = None,
         rows: np.ndarray | None = None, joint_inflation: np.ndarray | None = None,
         joint_noise: np.ndarray | None = None) -> FeasibleFit:
    """Feasible Base Parameter Estimation, FBPE-OLS/WLS (Sousa & Cortesão 2014 eq. 74-75), on the full ``delta``;
    with a prior, the constrained MAP estimate of the module docstring.

    Args:
        w_b: base regressor (rows, n_base); tau: torques (rows,).
        K: (n_base, n_parameters) with ``beta = K delta`` (Sousa & Cortesão 2014 eq. 38).
        layout: the parameter layout of ``delta``.
        consistency: ``physical`` (Sousa & Cortesão 2014 eq. 17) or ``full`` (pseudo-inertia, Traversaro et al. 2016).
        bounds: extra bounds; None means the defaults (friction and armature >= 0).
        weights: per-row weights (WLS), or None (OLS).
        solver: ``clarabel`` or ``scs`` (the other one is tried when it does not reach ``optimal``).
        prior: a :class:`dynid_ros.estimation.prior.Prior`, or the nominal ``delta`` (default CAD tolerances).
        eps: LMI margin; default ``PRIOR_EPS`` with a prior, Sousa & Cortesão 2014's 1e-6 without.
        attached: known parameters of parts rigidly attached to each link (e.g. a gripper, same
            layout; joint terms ignored): the LMI applies to ``delta_k - attached_k``, the link itself.
        fixed: base parameter index -> value, held exactly (base parameters the data do not excite).
        rows: mask of the rows in the fit; the others are no observations (:func:`in_fit`).
        joint_inflation: per-joint variance inflation (n_dof,) of the residual
            (:func:`dynid_ros.estimation.model_error.joint_inflation`): joint ``j``'s rows count
            ``1 / joint_inflation[j]`` times in the MAP data term and its posterior, instead of one residual
            inflation for every joint (:func:`noise_variance`). None: the single inflation.
        joint_noise: per joint, the variance of one row's noise in the data term (``sigma_j^2 tau_j``, chosen by the
            evidence: :attr:`dynid_ros.estimation.hyperparameters.HyperparameterChoice.noise`): the rows weighted by
            its inverse square root and no residual variance estimated; replaces ``weights`` and ``joint_inflation``.
            A prior's :class:`~dynid_ros.estimation.prior.MassShape` (its link masses' own shape) enters the objective
            and the posterior either way.
    """
    import cvxpy as cp

    start = time.perf_counter()
    if joint_noise is not None:
        weights, joint_inflation = _noise_weights(joint_noise, layout.n_dof, np.size(tau)), None
    w_b, tau, K, attached = _checked_inputs(w_b, tau, K, layout, weights, attached, solver)
    prior = _as_prior(prior, layout)
    eps = (PRIOR_EPS if prior is not None else DEFAULT_EPS) if eps is None else float(eps)
    bounds = bounds or Bounds()
    w_b, tau, rows = in_fit(w_b, tau, rows)
    reference = None if prior is None else prior.mean
    data = scaled_data(w_b, tau, K, layout, weights, reference, rows)
    sigma2, inflation = noise_variance(w_b, tau, data, weights, layout.n_dof, rows, joint_inflation)
    weight_inflation = inflation
    if joint_inflation is not None:  # per-joint: in the row weights, so the data weight's scalar inflation is 1
        data, weight_inflation = _inflated(w_b, tau, K, layout, weights, reference, rows, joint_inflation)
    if joint_noise is not None:  # the weights are the noise: the data term is the log-likelihood as it stands
        sigma2, weight_inflation = 1.0, 1.0
    timings = {"compress": time.perf_counter() - start}

    x = cp.Variable(layout.n_parameters)
    delta = cp.multiply(data.size, x)
    matrices = link_matrix_expressions(delta, layout, consistency, data.scales, attached)
    constraints = [m >> eps * np.eye(m.shape[0]) for m in matrices] + bounds.constraints(delta, layout, data.size)
    if fixed:
        idx = np.array(list(fixed), dtype=int)
        constraints.append((K[idx] * data.size) @ x / data.norm == np.array(list(fixed.values())) / data.norm)
    data_weight, capped = map_data_weight(data, sigma2, weight_inflation)
    prior_term = None if prior is None else _prior_term(prior, x, data.size)

    def problem(scale: float):
        if prior_term is None:
            objective = scale * cp.norm(data.a @ x - data.b, 2)
        else:
            objective = scale * (cp.sum_squares(data_weight * (data.a @ x - data.b)) + prior_term)
        return cp.Problem(cp.Minimize(objective), constraints)

    def polished_answer(value: np.ndarray, name: str, status: str) -> Polished:
        return polish(data.size * value, layout, consistency=consistency, eps=eps, bounds=bounds,
                      tolerance=solver_tolerance(name, status), size=data.size, scales=data.scales,
                      attached=attached, who="FBPE")

    def on_constraints(value: np.ndarray, name: str, status: str) -> bool:
        try:
            polished_answer(value, name, status)
        except EstimationError:
            return False
        return True

    outcome = solve_until_optimal(problem, solver, x, accept=on_constraints)
    timings.update(solve=outcome.seconds, total=time.perf_counter() - start)
    if outcome.status is None:
        statuses = ", ".join(f"{k} {v}" for k, v in outcome.attempts.items())
        infeasible = any("infeasible" in v for v in outcome.attempts.values())
        reason = (f"no parameters satisfy the {consistency} consistency constraints and the bounds" if infeasible
                  else "no solution")
        raise EstimationError(f"FBPE: {reason} (solver status: {statuses})")
    polished = polished_answer(np.array(x.value), outcome.solver, outcome.status)
    delta_value = polished.delta
    beta = K @ delta_value
    objective = float(np.sqrt(np.linalg.norm(data.rho1 - data.r @ beta) ** 2 + data.rho2**2))
    precision = None if prior is None else prior.half_hessian(delta_value, data.size)
    beta_std, delta_std = _uncertainty(data, K, (data.norm / data_weight) ** 2 if prior is not None
                                       else sigma2 * weight_inflation, precision)
    return FeasibleFit(beta, delta_value, outcome.status, objective, outcome.attempts,
                       {k: round(v, 4) for k, v in timings.items()}, beta_std, delta_std, inflation,
                       data_weight if capped and prior is not None else None, outcome.solver,
                       polished if polished.moved else None)


def _noise_weights(joint_noise: np.ndarray, n_dof: int, rows: int) -> np.ndarray:
    """Per-row weights ``1 / sqrt(noise_j)`` of the per-joint row noise variances ``joint_noise``."""
    noise = np.asarray(joint_noise, dtype=float).reshape(-1)
    if noise.size != n_dof or not np.all(np.isfinite(noise)) or np.any(noise <= 0):
        raise ConfigError(f"joint_noise must be {n_dof} positive numbers")
    return np.tile(1.0 / np.sqrt(noise), rows // n_dof)


def _prior_term(prior: Prior, x, size: np.ndarray):
    """The cvxpy expression of twice the negative log prior (:meth:`Prior.negative_log_density`) in the scaled
    variables ``x = delta / size``: ``||F (x - mean)||^2``, or with a mass shape the conditional Gaussian of the
    other parameters given the masses plus each mass's ``(r + 1/r - 2) / std^2`` (convex in the mass)."""
    import cvxpy as cp

    mean = prior.mean / size
    if prior.mass_shape is None:
        return cp.sum_squares((prior.factor() * size) @ (x - mean))
    c, shape = prior.conditional(size), prior.mass_shape
    masses = x[c.masses]
    gaussian = cp.sum_squares(c.factor @ (x[c.rest] - mean[c.rest] - c.gain @ (masses - mean[c.masses])))
    ratio = cp.multiply(size[c.masses] / shape.mode, masses) - shape.attached / shape.mode
    return gaussian + cp.sum(cp.multiply(1.0 / shape.ratio_std**2, ratio + cp.inv_pos(ratio) - 2.0))


def _inflated(w_b: np.ndarray, tau: np.ndarray, K: np.ndarray, layout: ParameterLayout, weights: np.ndarray | None,
              reference: np.ndarray | None, rows: np.ndarray, joint_inflation: np.ndarray
              ) -> tuple[ScaledData, float]:
    """The data compressed with joint ``j``'s rows weighted ``1 / sqrt(joint_inflation[j])`` more, and the
    scalar inflation left for the data weight (1: the per-joint factors are in the rows). ``s^2`` stays that
    of the data without the factors (:func:`noise_variance`): the factors inflate the variance, not the noise."""
    n_dof = layout.n_dof
    factors = np.asarray(joint_inflation, dtype=float).reshape(-1)
    if factors.size != n_dof or not np.all(np.isfinite(factors)) or np.any(factors <= 0):
        raise ConfigError(f"joint_inflation must be {n_dof} positive numbers")
    base = np.ones(tau.size) if weights is None else np.asarray(weights, dtype=float)
    inflated = base / np.tile(np.sqrt(factors), tau.size // n_dof)
    return scaled_data(w_b, tau, K, layout, inflated, reference, rows), 1.0


def map_data_weight(data: ScaledData, sigma2: float, inflation: float) -> tuple[float, bool]:
    """The weight ``||rho1|| / (s sqrt(tau_int))`` of the data in the MAP objective, and whether it was capped:
    only numerically noise-free data (residual below ``NOISE_FREE_RESIDUAL`` of the data) are, at
    ``MAX_DATA_WEIGHT``; measured data keep their weight whatever their signal-to-noise ratio."""
    weight = data.norm / np.sqrt(sigma2 * inflation)
    if weight > MAX_DATA_WEIGHT and data.rho2 < NOISE_FREE_RESIDUAL * np.hypot(data.norm, data.rho2):
        return MAX_DATA_WEIGHT, True
    return float(weight), False


def _uncertainty(data: ScaledData, K: np.ndarray, noise: float, prior_precision: np.ndarray | None
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """Standard deviations of ``beta`` and (with a prior: ``prior_precision``, half the Hessian of its negative log
    density in the scaled variables, :meth:`Prior.half_hessian`) ``delta``: the Gaussian (Laplace) posterior of the
    MAP problem (active constraints ignored), or the least-squares covariance ``noise (R^T R)^-1``."""
    if prior_precision is None:
        cov = noise * np.linalg.pinv(data.r.T @ data.r)
        return np.sqrt(np.clip(np.diag(cov), 0.0, None)), None
    a = data.a * data.norm / np.sqrt(noise)
    hessian = a.T @ a + prior_precision
    cov_x = np.linalg.inv(hessian)
    cov_delta = cov_x * np.outer(data.size, data.size)
    cov_beta = K @ cov_delta @ K.T
    return np.sqrt(np.clip(np.diag(cov_beta), 0.0, None)), np.sqrt(np.clip(np.diag(cov_delta), 0.0, None))
