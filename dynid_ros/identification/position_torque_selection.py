"""Whether a joint gets a position-dependent torque term: time-blocked cross-validation (option
``identification: model: position_torque: auto | off | [joint names]``).

Never by default without evidence. The candidates are the joints whose residual the report flags as a function of
their own position (:func:`dynid_ros.estimation.position_torque.flagged_by_position`); a joint without structure is
never given a term. For each candidate the identification window is split into the contiguous time blocks of the
filter-cutoff choice (:data:`dynid_ros.identification.cutoff_selection.BLOCKS`; blocked cross-validation for dependent
data, Roberts et al. 2017), and each block is predicted by the fit of the others, without and with the term
(:mod:`dynid_ros.estimation.position_torque`). The fit is the identification's own estimator (FBPE by default:
its LMIs, bounds, prior and the weighting of the whole window), on the other blocks' rows: a term is judged by
what it does to the estimate the user gets (an unconstrained fit can absorb a spring into implausible link
parameters and would judge the term useless). The scores are held-out squared errors against the
recorded, unfiltered torque (Sousa & Cortesão 2014 eq. 84). The gain of block ``k`` is the log ratio ``d_k`` of
the joint's held-out squared error without and with the term: scale-free, so a block where the joint carries more
torque does not dominate (the absolute drops differ by an order of magnitude between blocks of one excitation).
The term is kept only when the gain is significant across the blocks, a one-sided paired t test ``mean(d) >
t_{1 - alpha, B - 1} std(d) / sqrt(B)`` with ``alpha`` the significance of the residual-structure flag
(:data:`~dynid_ros.estimation.residual_structure.SIGNIFICANCE`): the margin is the block-to-block spread of the
gain, not a tuned percentage; and when the whole fit's held-out error (every joint) drops too, so the term does
not buy its joint at the others' expense. A joint named in the option gets the term without the
test (the user's knowledge: a gravity compensator, a cable).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dynid_ros.dynamics.row_chunks import RowChunks
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
from dynid_ros.estimation.residual_structure import SIGNIFICANCE
from dynid_ros.identification.cutoff_selection import BLOCKS, time_blocks


@dataclass
class TermChoice:
    """One candidate: its joint, whether the term is kept (whether the option named it, whether its residual was
    flagged as a function of its position), the joint's and the whole fit's cross-validated relative errors
    without and with the term (None for a named joint), and the test's mean gain (the mean over the blocks of the
    log ratio of the joint's held-out squared error without and with the term) and margin."""

    joint: str
    kept: bool
    named: bool
    flagged: bool
    joint_error_without: float | None
    joint_error_with: float | None
    error_without: float | None
    error_with: float | None
    gain: float | None
    margin: float | None

    def to_dict(self) -> dict:
        """The candidate's fields as a dict."""
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
        """Half the peak-to-peak torque [N m] of the term over its position range."""
        return amplitude(self.series, self.coefficients)

    def to_dict(self) -> dict:
        """``report.json`` / ``parameters.yaml`` ``position_torque`` entry of the joint."""
        return {**self.series.to_dict(), "coefficients": [float(v) for v in self.coefficients],
                "std": [float(v) for v in self.std], "amplitude": self.amplitude,
                "cross_validation": self.choice.to_dict()}

    def message(self) -> str:
        """The console's and the report's line."""
        c = self.choice
        why = ("named in model.position_torque (not cross-validated)" if c.named else
               f"cross-validated error {100 * c.joint_error_without:.1f} % -> {100 * c.joint_error_with:.1f} %")
        return (f"{self.series.joint}: a position-dependent torque (spring/cable) was modelled: {why}; amplitude "
                f"{self.amplitude:.3g} N m; identified.urdf has no element for it: parameters.yaml holds it and "
                "dynid validate applies it")


def terms_torque(terms: list[TermFit], q: np.ndarray) -> np.ndarray:
    """(samples, n_dof) torque of the kept ``terms`` at the positions ``q`` (zero without terms)."""
    return term_torques([t.series for t in terms], [t.coefficients for t in terms], q)


Estimator = Callable[[np.ndarray | RowChunks, np.ndarray, np.ndarray], np.ndarray]
"""``estimator(w_b, tau, rows) -> beta``: the base parameters of the fit of the rows ``rows``."""


@dataclass
class FitProblem:
    """The rows of the linear fit: regressor, target and recorded torque (rows), positions (samples, n_dof), the
    rows in the fit, the identification's own estimator (``estimator(w_b, tau, rows) -> beta``: its weighting,
    prior, LMIs and bounds) and each joint's prior width of a term [N m]."""

    w_b: np.ndarray | RowChunks
    tau: np.ndarray
    raw: np.ndarray
    q: np.ndarray
    rows: np.ndarray
    estimator: Estimator
    term_std: np.ndarray

    @property
    def n_dof(self) -> int:
        """Number of joints."""
        return self.q.shape[1]

    def profiles(self, terms: list[PositionSeries], rows: np.ndarray, beta: np.ndarray) -> list[JointProfile]:
        """The terms' profiling over ``rows``, with each joint's noise from the residual of ``beta``."""
        residual = self.tau - self.w_b @ beta
        noise = np.array([residual_noise(residual, self.q, t, rows) for t in terms])
        return profile(self.w_b, self.tau, self.q, terms, self.term_std[[t.index for t in terms]], noise, rows)

    def predict(self, rows: np.ndarray, terms: list[PositionSeries]) -> np.ndarray:
        """(samples, n_dof) torque of the fit of ``rows`` with ``terms``, on every sample."""
        beta = self.estimator(self.w_b, self.tau, rows)
        if not terms:
            return (self.w_b @ beta).reshape(-1, self.n_dof)
        profiles = self.profiles(terms, rows, beta)
        beta = self.estimator(profiled_rows(self.w_b, self.q, profiles, rows),
                              profiled_vector(self.tau, self.q, profiles, rows), rows)
        coefficients = [p.coefficients(beta)[0] for p in profiles]
        return (self.w_b @ beta).reshape(-1, self.n_dof) + term_torques(terms, coefficients, self.q)


def choose_terms(problem: FitProblem, candidates: list[int], named: list[int], joints: tuple[str, ...] | list[str]
                 ) -> list[TermChoice]:
    """The cross-validated choice for every candidate joint; every named one is kept without it."""
    n_samples = problem.q.shape[0]
    rows = np.asarray(problem.rows, dtype=bool).reshape(-1)
    out = [TermChoice(joints[j], True, True, False, None, None, None, None, None, None) for j in named]
    if not candidates:
        return out
    block = np.repeat(time_blocks(n_samples), problem.n_dof)
    plain = [problem.predict(rows & (block != k), []) for k in range(BLOCKS)]
    for j in candidates:
        term = PositionSeries.over(joints[j], j, problem.q[rows.reshape(-1, problem.n_dof)[:, j], j])
        modelled = [problem.predict(rows & (block != k), [term]) for k in range(BLOCKS)]
        out.append(_choice(problem, block, rows, plain, modelled, term))
    return out


def _choice(problem: FitProblem, block: np.ndarray, rows: np.ndarray, plain: list[np.ndarray],
            modelled: list[np.ndarray], term: PositionSeries) -> TermChoice:
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
    return TermChoice(term.joint, significant, False, True, float(relative[2]), float(relative[3]),
                      float(relative[0]), float(relative[1]), float(np.mean(gains)), margin)
