"""Whether a joint gets a position-dependent torque term: time-blocked cross-validation (issue 19, item 4; option
``identification: model: position_torque: auto | off | [joint names]``).

Never by default without evidence. The candidates are the joints whose residual the report flags as a function of
their own position (:func:`dynid_ros.estimation.position_torque.flagged_by_position`); a joint without structure is
never given a term. For each candidate the identification window is split into the contiguous time blocks of the
filter-cutoff choice (:data:`dynid_ros.pipeline.cutoff_selection.BLOCKS`; blocked cross-validation for dependent
data, Roberts et al. 2017), and each block is predicted by the fit of the others, without and with the term
(:mod:`dynid_ros.estimation.position_torque`). The fit is that of the estimate without its LMIs: with a prior, the
Gaussian MAP of FBPE's objective (its data weight, per-joint weights and inflation, the prior on the standard
parameters), which has a closed form; without one, least squares. The scores are held-out squared errors against the
recorded, unfiltered torque (Sousa & Cortesão 2014 eq. 84). The gain of block ``k`` is the log ratio ``d_k`` of
the joint's held-out squared error without and with the term: scale-free, so a block where the joint carries more
torque does not dominate (the absolute drops differ by an order of magnitude between blocks of one excitation).
The term is kept only when the gain is significant across the blocks, a one-sided paired t test ``mean(d) >
t_{1 - alpha, B - 1} std(d) / sqrt(B)`` with ``alpha`` the significance of the residual-structure flag
(:data:`~dynid_ros.estimation.residual_structure.SIGNIFICANCE`): the margin is the block-to-block spread of the
gain, not a tuned percentage; and when the whole fit's held-out error (every joint) drops too, so the term does
not buy its joint at the others' expense. A joint named in the option gets the term without the
test (its numbers are still reported).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.dynamics.base_parameters import BaseParameters
from dynid_ros.dynamics.row_chunks import RowChunks
from dynid_ros.estimation import estimators
from dynid_ros.estimation.position_torque import (
    JointProfile,
    PositionSeries,
    amplitude,
    profile,
    profiled_rows,
    profiled_vector,
    residual_noise,
    term_torques,
)
from dynid_ros.estimation.prior import Prior
from dynid_ros.estimation.residual_structure import SIGNIFICANCE
from dynid_ros.pipeline.cutoff_selection import BLOCKS


@dataclass
class TermChoice:
    """One candidate: its joint, whether the term is kept (whether the option named it, whether its residual was
    flagged as a function of its position), the joint's and the
    whole fit's cross-validated relative errors without and with the term, and the test's mean gain (the mean
    over the blocks of the log ratio of the joint's held-out squared error without and with the term) and margin."""

    joint: str
    kept: bool
    named: bool
    flagged: bool
    joint_error_without: float
    joint_error_with: float
    error_without: float
    error_with: float
    gain: float
    margin: float

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def message(self) -> str:
        """The console's line for a candidate not kept."""
        return (f"{self.joint}: its residual is a function of its position, but a position-dependent torque "
                f"(spring/cable) is not kept: cross-validated error {100 * self.joint_error_without:.1f} % -> "
                f"{100 * self.joint_error_with:.1f} % (mean log ratio over the time blocks {self.gain:.2g}, "
                f"margin {self.margin:.2g}; whole fit {100 * self.error_without:.2f} % -> "
                f"{100 * self.error_with:.2f} %)")


@dataclass
class TermFit:
    """A kept term: its series, coefficients [N m] and their standard deviations, and its cross-validation."""

    series: PositionSeries
    coefficients: np.ndarray
    std: np.ndarray
    choice: TermChoice

    @property
    def amplitude(self) -> float:
        return amplitude(self.series, self.coefficients)

    def to_dict(self) -> dict:
        """``report.json`` / ``parameters.yaml`` ``position_torque`` entry of the joint."""
        return {**self.series.to_dict(), "coefficients": [float(v) for v in self.coefficients],
                "std": [float(v) for v in self.std], "amplitude": self.amplitude,
                "cross_validation": self.choice.to_dict()}

    def message(self) -> str:
        """The console's and the report's line."""
        c = self.choice
        return (f"{self.series.joint}: a position-dependent torque (spring/cable) was modelled: cross-validated "
                f"error {100 * c.joint_error_without:.1f} % -> {100 * c.joint_error_with:.1f} %; amplitude "
                f"{self.amplitude:.3g} N m" + (" (named in model.position_torque)" if c.named else "")
                + "; identified.urdf has no element for it: parameters.yaml holds it and dynid validate applies it")


def terms_torque(terms: list[TermFit], q: np.ndarray) -> np.ndarray:
    """(samples, n_dof) torque of the kept ``terms`` at the positions ``q`` (zero without terms)."""
    return term_torques([t.series for t in terms], [t.coefficients for t in terms], q)


@dataclass
class FitProblem:
    """The rows of the linear fit and what its estimator weighs them with: regressor, target and recorded torque
    (rows), positions (samples, n_dof), rows in the fit, FBPE's row weights and per-joint inflation (None: least
    squares), the base parameters and the prior (None: none), and each joint's prior width of a term [N m]."""

    w_b: np.ndarray | RowChunks
    tau: np.ndarray
    raw: np.ndarray
    q: np.ndarray
    rows: np.ndarray
    weights: np.ndarray | None
    factors: np.ndarray | None
    base: BaseParameters
    prior: Prior | None
    term_std: np.ndarray

    @property
    def n_dof(self) -> int:
        return self.q.shape[1]

    def profiles(self, terms: list[PositionSeries], rows: np.ndarray, beta: np.ndarray) -> list[JointProfile]:
        """The terms' profiling over ``rows``, with each joint's noise from the residual of ``beta``."""
        residual = self.tau - self.w_b @ beta
        noise = np.array([residual_noise(residual, self.q, t, rows) for t in terms])
        return profile(self.w_b, self.tau, self.q, terms, self.term_std[[t.index for t in terms]], noise, rows)

    def predict(self, rows: np.ndarray, terms: list[PositionSeries]) -> np.ndarray:
        """(samples, n_dof) torque of the fit of ``rows`` with ``terms``, on every sample."""
        beta = self.fit(self.w_b, self.tau, rows)
        if not terms:
            return (self.w_b @ beta).reshape(-1, self.n_dof)
        profiles = self.profiles(terms, rows, beta)
        beta = self.fit(profiled_rows(self.w_b, self.q, profiles, rows), profiled_vector(self.tau, self.q, profiles,
                                                                                        rows), rows)
        coefficients = [p.coefficients(beta)[0] for p in profiles]
        return (self.w_b @ beta).reshape(-1, self.n_dof) + term_torques(terms, coefficients, self.q)

    def fit(self, w_b: np.ndarray | RowChunks, tau: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The base parameters of the fit of ``rows`` (module docstring: Gaussian MAP, or least squares)."""
        n_dof = self.n_dof
        if self.prior is None or self.weights is None:
            return estimators.ols(w_b, tau, n_dof, rows=rows).beta
        w_b, tau, rows = estimators.in_fit(w_b, tau, rows)
        layout, K = self.base.layout, self.base.K
        plain = estimators.scaled_data(w_b, tau, K, layout, self.weights, self.prior.mean, rows)
        sigma2, _ = estimators.noise_variance(w_b, tau, plain, self.weights, n_dof, rows)
        inflated = self.weights / np.tile(np.sqrt(self.factors), tau.size // n_dof)
        data = estimators.scaled_data(w_b, tau, K, layout, inflated, self.prior.mean, rows)
        weight = estimators.map_data_weight(data, sigma2, 1.0)[0]
        f = self.prior.factor() * data.size
        hessian = weight**2 * data.a.T @ data.a + f.T @ f
        x = np.linalg.solve(hessian, weight**2 * data.a.T @ data.b + f.T @ (f @ (self.prior.mean / data.size)))
        return K @ (data.size * x)


def choose_terms(problem: FitProblem, candidates: list[int], named: list[int], joints: tuple[str, ...] | list[str]
                 ) -> list[TermChoice]:
    """The cross-validated choice for every candidate joint and every named one (module docstring)."""
    n_samples = problem.q.shape[0]
    block = np.repeat(np.minimum(np.arange(n_samples) * BLOCKS // n_samples, BLOCKS - 1), problem.n_dof)
    rows = np.asarray(problem.rows, dtype=bool).reshape(-1)
    plain = [problem.predict(rows & (block != k), []) for k in range(BLOCKS)]
    out = []
    for j in sorted(set(candidates) | set(named)):
        term = PositionSeries.over(joints[j], j, problem.q[rows.reshape(-1, problem.n_dof)[:, j], j])
        modelled = [problem.predict(rows & (block != k), [term]) for k in range(BLOCKS)]
        out.append(_choice(problem, block, rows, plain, modelled, term, j in named, j in candidates))
    return out


def _choice(problem: FitProblem, block: np.ndarray, rows: np.ndarray, plain: list[np.ndarray],
            modelled: list[np.ndarray], term: PositionSeries, named: bool, flagged: bool) -> TermChoice:
    """The test of one term from the held-out predictions of every block without and with it."""
    from scipy.stats import t as t_distribution  # deferred: scipy is imported only when a joint is a candidate

    n_dof = problem.n_dof
    raw = np.asarray(problem.raw, dtype=float).reshape(-1)
    sums = np.zeros((4, BLOCKS))  # squared error without, with; joint j's without, with
    scale = np.zeros((2, BLOCKS))  # squared torque, all joints and joint j
    joint = (np.arange(raw.size) % n_dof) == term.index
    for k in range(BLOCKS):
        held = rows & (block == k)
        for i, predicted in enumerate((plain[k], modelled[k])):
            error = np.where(held, raw - predicted.reshape(-1), 0.0) ** 2
            sums[i, k], sums[2 + i, k] = error.sum(), error[joint].sum()
        scale[:, k] = np.where(held, raw, 0.0) @ np.where(held, raw, 0.0), np.sum(np.where(held & joint, raw, 0) ** 2)
    gains = np.log(np.maximum(sums[2], 1e-300) / np.maximum(sums[3], 1e-300))  # the joint's, per block
    margin = float(t_distribution.ppf(1.0 - SIGNIFICANCE, BLOCKS - 1) * np.std(gains, ddof=1) / np.sqrt(BLOCKS))
    relative = np.sqrt(sums.sum(axis=1) / np.maximum(np.repeat(scale.sum(axis=1), 2), 1e-300))
    significant = bool(np.mean(gains) > margin and relative[1] < relative[0])
    return TermChoice(term.joint, significant or named, named, flagged, float(relative[2]), float(relative[3]),
                      float(relative[0]), float(relative[1]), float(np.mean(gains)), margin)
