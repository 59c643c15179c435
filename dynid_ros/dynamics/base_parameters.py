"""Base parameters computed numerically (Sousa & Cortesão 2014 section 4.1, eq. 29-39; Gautier 1991).

The regressor of random states is reduced column by column, left to right: a column that
is (numerically) a combination of the columns kept before it is dependent. This gives the
permutation ``P = [P_b P_d]``, the map ``K_d`` with ``H_d = H_b K_d`` (eq. 32) and
``K = P_b^T + K_d P_d^T`` (eq. 39) so that ``beta = K delta`` (eq. 38). Each base parameter
also gets a readable expression in the symbols of :meth:`ParameterLayout.symbols`, like
Sousa & Cortesão 2014 Table 3.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from dynid_ros.dynamics import base_parameter_cache
from dynid_ros.dynamics.regressor import regressor
from dynid_ros.robot.model import RobotModel
from dynid_ros.robot.parameters import ParameterLayout

COEFFICIENT_TOLERANCE = 1e-8
"""Coefficients of ``K_d`` smaller than this are zero (they come from round-off)."""


@dataclass
class BaseParameters:
    """The base-parameter map of a model and layout.

    Attributes:
        independent: indices of the base columns (P_b), in increasing order.
        dependent: indices of the other columns (P_d).
        K_d: (n_base, n_dependent), ``H_d = H_b K_d``.
        K: (n_base, n_parameters), ``beta = K delta``.
        expressions: one readable linear combination per base parameter.
    """

    layout: ParameterLayout
    independent: np.ndarray
    dependent: np.ndarray
    K_d: np.ndarray
    K: np.ndarray
    expressions: list[str]

    @property
    def n_base(self) -> int:
        """Number of base parameters."""
        return int(self.independent.size)

    @property
    def n_parameters(self) -> int:
        """Number of standard parameters in the layout."""
        return self.layout.n_parameters

    @property
    def P_b(self) -> np.ndarray:
        """Selection matrix of the independent columns: ``H_b = H P_b``."""
        return np.eye(self.n_parameters)[:, self.independent]

    @property
    def P_d(self) -> np.ndarray:
        """Selection matrix of the dependent columns."""
        return np.eye(self.n_parameters)[:, self.dependent]

    def project(self, w_full: np.ndarray) -> np.ndarray:
        """Base regressor ``H_b = H P_b`` from a full regressor (any leading shape)."""
        return w_full[..., self.independent]

    def beta(self, delta: np.ndarray) -> np.ndarray:
        """Base parameters of a full parameter vector (eq. 38)."""
        return self.K @ delta

    def to_dict(self) -> list[dict]:
        """Base parameters as a list of ``{name, expression}`` records."""
        return [{"name": f"beta{i + 1}", "expression": e} for i, e in enumerate(self.expressions)]


def random_states(model: RobotModel, n_samples: int, rng: np.random.Generator
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random positions within limits (or +-pi), velocities and accelerations."""
    lower, upper = model.position_limits[:, 0].copy(), model.position_limits[:, 1].copy()
    lower[~np.isfinite(lower)], upper[~np.isfinite(upper)] = -np.pi, np.pi
    q = rng.uniform(lower, upper, (n_samples, model.n_dof))
    dq = rng.normal(0.0, 1.0, (n_samples, model.n_dof))
    ddq = rng.normal(0.0, 3.0, (n_samples, model.n_dof))
    return q, dq, ddq


def compute_base_parameters(model: RobotModel, layout: ParameterLayout, seed: int = 0,
                            n_samples: int | None = None) -> BaseParameters:
    """Base parameters of ``model`` with ``layout`` from the regressor at random states.

    Computed once per model kinematics and layout: later calls read them from the on-disk cache
    (:mod:`dynid_ros.dynamics.base_parameter_cache`, ``DYNID_CACHE_DIR`` relocates it)."""
    n_samples = n_samples or max(60, 4 * layout.n_parameters // max(model.n_dof, 1))
    settings = {"seed": seed, "n_samples": n_samples, "rtol": RANK_TOLERANCE, "coefficients": COEFFICIENT_TOLERANCE}
    key = base_parameter_cache.cache_key(model, layout, settings)
    entry = base_parameter_cache.load(key)
    if entry is not None and _entry_fits(entry, layout):
        return _from_entry(entry, layout)
    rng = np.random.default_rng(seed)
    w = regressor(model, layout, *random_states(model, n_samples, rng))
    base = base_parameters_from_regressor(w, layout)
    base_parameter_cache.store(key, base.independent, base.dependent, base.K_d, base.expressions)
    return base


def _entry_fits(entry: dict, layout: ParameterLayout) -> bool:
    """A cache entry that indexes ``layout``'s parameters exactly once and has one expression per base column."""
    try:
        columns = sorted([*entry["independent"], *entry["dependent"]])
        k_d = np.asarray(entry["K_d"], dtype=float).reshape(len(entry["independent"]), len(entry["dependent"]))
    except (KeyError, TypeError, ValueError):
        return False
    return columns == list(range(layout.n_parameters)) and len(entry["expressions"]) == k_d.shape[0]


def _from_entry(entry: dict, layout: ParameterLayout) -> BaseParameters:
    """The :class:`BaseParameters` of a cache entry (``K = P_b^T + K_d P_d^T``, eq. 39)."""
    independent = np.asarray(entry["independent"], dtype=int)
    dependent = np.asarray(entry["dependent"], dtype=int)
    k_d = np.asarray(entry["K_d"], dtype=float).reshape(independent.size, dependent.size)
    k = np.zeros((independent.size, layout.n_parameters))
    k[np.arange(independent.size), independent] = 1.0
    k[:, dependent] = k_d
    return BaseParameters(layout, independent, dependent, k_d, k, list(entry["expressions"]))


RANK_TOLERANCE = 1e-6
"""Directions of the unit-norm-column regressor weaker than this (relative singular value) are not physics but
rounding in the published description, e.g. ``rpy="1.5708"`` for pi/2 or a 4-digit axis: they would make a
parameter nearly, never exactly, dependent (singular values 1e-12 to 1e-6 on published URDFs, against 1e-2 and
more for every physical direction of the arms tried)."""


def base_parameters_from_regressor(w: np.ndarray, layout: ParameterLayout,
                                   rtol: float = RANK_TOLERANCE) -> BaseParameters:
    """Base parameters from a full regressor of sufficiently random states.

    Columns are scaled to unit norm; the rank counts the singular values above ``rtol`` times the largest
    (:data:`RANK_TOLERANCE`); a QR without pivoting tells, left to right, which columns add a new direction
    (``|R_ii|`` above ``rtol`` times the largest), with a pivoted QR as the fallback.
    """
    norms = np.linalg.norm(w, axis=0)
    nonzero = norms > 1e-12 * max(norms.max(), 1.0)
    scaled = np.where(nonzero, w / np.where(nonzero, norms, 1.0), 0.0)
    _, r = np.linalg.qr(scaled, mode="reduced")
    diag = np.abs(np.diag(r))
    independent = np.flatnonzero((diag > rtol * max(diag.max(), 1e-300)) & nonzero)
    singular = np.linalg.svd(scaled, compute_uv=False)
    rank = int(np.sum(singular > rtol * max(singular[0], 1e-300)))
    if independent.size != rank:  # ill-conditioned reduction: fall back to pivoted QR
        _, _, piv = scipy.linalg.qr(scaled, mode="economic", pivoting=True)
        independent = np.sort(piv[:rank])
    dependent = np.setdiff1d(np.arange(w.shape[1]), independent)
    w_b, w_d = w[:, independent], w[:, dependent]
    k_d = np.linalg.lstsq(w_b, w_d, rcond=None)[0] if dependent.size else np.zeros((independent.size, 0))
    k_d = _clean(k_d)
    k = np.zeros((independent.size, w.shape[1]))
    k[np.arange(independent.size), independent] = 1.0
    k[:, dependent] = k_d
    return BaseParameters(layout, independent, dependent, k_d, k, expressions(k, layout.symbols))


def _clean(k_d: np.ndarray) -> np.ndarray:
    """Zero round-off and snap coefficients to 10 significant digits."""
    k_d = np.where(np.abs(k_d) < COEFFICIENT_TOLERANCE, 0.0, k_d)
    with np.errstate(divide="ignore", invalid="ignore"):
        mag = np.where(k_d != 0, 10.0 ** (9 - np.floor(np.log10(np.abs(k_d)))), 1.0)
    return np.round(k_d * mag) / mag


def expressions(k: np.ndarray, symbols: list[str]) -> list[str]:
    """Readable linear combinations ``beta_i = sum_j K_ij delta_j`` (via sympy)."""
    import sympy

    syms = sympy.symbols(symbols)
    out = []
    for row in k:
        terms = [sympy.Float(float(c), 6) * s if abs(c - 1.0) > 1e-12 else s
                 for c, s in zip(row, syms) if c != 0.0]
        text = str(sympy.Add(*terms)).replace("- 1.0*", "- ")
        out.append(text.replace("-1.0*", "-"))
    return out
