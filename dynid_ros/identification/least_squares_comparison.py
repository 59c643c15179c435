"""Every identification beside plain least squares on the same window and processing: what the prior and the
constraints buy or cost (``report.json`` ``least_squares``, one row of the report).

Plain least squares (OLS on the base regressor, Sousa & Cortesão 2014 eq. 60; no prior, no feasibility) always fits
the identification data best, so in-sample errors say nothing about which model predicts better. Both are therefore
cross-validated the same way, on the same processed samples: the window split into the blocks of the wide-prior check
(:func:`dynid_ros.estimation.time_blocks.validation_split`: by the phase of the period where the motion repeats,
else contiguous time blocks; blocked cross-validation for dependent data, Roberts et al. 2017), each block predicted
by the fit of the others, by the identification's own estimator (its weighting, hyperparameters, prior, LMIs and
bounds, and its position-dependent terms) and by OLS; the error is relative to the recorded, unfiltered torque (Sousa
& Cortesão 2014 eq. 84), over every sample of the block.
The row also gives the link masses OLS would report: its base parameters mapped to the standard parameters closest to
the nominal ones (:func:`dynid_ros.estimation.estimators.closest_standard`), the link alone (attached parts
removed), often far from any real body where the data do not separate the links.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dynid_ros.dynamics.base_parameters import BaseParameters
from dynid_ros.dynamics.row_chunks import RowChunks
from dynid_ros.estimation import estimators
from dynid_ros.estimation.position_torque import PositionSeries
from dynid_ros.estimation.time_blocks import BLOCKS, ValidationSplit, split_words, validation_split
from dynid_ros.identification.position_torque_selection import FitProblem


@dataclass
class LeastSquaresComparison:
    """The cross-validated relative errors (total and per joint) of the identification (``error``) and of OLS
    (``ols_error``), their in-sample errors on the whole window, and the link masses OLS gives [kg]."""

    error: float
    ols_error: float
    error_per_joint: list[float]
    ols_error_per_joint: list[float]
    in_sample_error: float
    ols_in_sample_error: float
    ols_link_masses: dict[str, float]
    blocks: dict = field(default_factory=lambda: {"blocks_by": "time"})
    """How the window was split (:meth:`~dynid_ros.estimation.time_blocks.ValidationSplit.to_dict`)."""

    @classmethod
    def from_dict(cls, record: dict) -> LeastSquaresComparison:
        """From :meth:`to_dict`'s record (``report.json`` ``least_squares``)."""
        return cls(**{k: record[k] for k in ("error", "ols_error", "error_per_joint", "ols_error_per_joint",
                                             "in_sample_error", "ols_in_sample_error", "ols_link_masses")},
                   blocks={k: record[k] for k in ("blocks_by", "repeat_samples") if k in record}
                   or {"blocks_by": "time"})

    def to_dict(self) -> dict:
        """``report.json`` ``least_squares``."""
        return {"method": "blocked cross-validation", "blocks": BLOCKS, **self.blocks, "error": self.error,
                "ols_error": self.ols_error, "error_per_joint": self.error_per_joint,
                "ols_error_per_joint": self.ols_error_per_joint, "in_sample_error": self.in_sample_error,
                "ols_in_sample_error": self.ols_in_sample_error, "ols_link_masses": self.ols_link_masses}

    def summary(self) -> str:
        """The report's one-line row."""
        verdict = "better than" if self.error < self.ols_error else "as good as" if self.error == self.ols_error \
            else "worse than"
        masses = ", ".join(f"{m:.3g}" for m in self.ols_link_masses.values())
        return (f"Against plain least squares on the same window and processing (cross-validation, "
                f"{split_words(self.blocks.get('repeat_samples'))}): OLS {100 * self.ols_error:.2f} %, this estimate "
                f"{100 * self.error:.2f} % "
                f"({verdict} OLS); in sample OLS {100 * self.ols_in_sample_error:.2f} %, this estimate "
                f"{100 * self.in_sample_error:.2f} %; the link masses OLS gives: {masses} kg.")


def compare_with_least_squares(problem: FitProblem, terms: list[PositionSeries], base: BaseParameters,
                               nominal: np.ndarray, attached: np.ndarray, predicted: np.ndarray, *,
                               held_out: np.ndarray | None = None, split: ValidationSplit | None = None,
                               recorded: tuple[np.ndarray, np.ndarray] | None = None) -> LeastSquaresComparison:
    """The comparison of the module docstring. ``problem``: the identification's rows and estimator (with its
    weighting, prior, bounds); ``terms``: its position-dependent terms; ``predicted``: its prediction on the window
    (samples, n_dof); ``held_out``: the estimator's cross-validated prediction (samples, n_dof) when already made
    (the same blocks and fits), else it is made here; ``split``: the blocks it was made on (default those of the
    window's motion, :func:`~dynid_ros.estimation.time_blocks.validation_split`). ``recorded``: ``(filtered effort
    rows as recorded, gains)`` when the identification put the effort in one scale
    (:mod:`dynid_ros.estimation.effort_gains`): OLS is then fitted to the effort as recorded, and every error is of
    the effort predicted (the estimate's torque divided by the gains) against the effort as recorded, as a plain
    pipeline would see it."""
    n_dof = problem.n_dof
    rows = np.asarray(problem.rows, dtype=bool).reshape(-1)
    gains = np.ones(n_dof) if recorded is None else np.asarray(recorded[1], dtype=float)
    raw = np.asarray(problem.raw, dtype=float).reshape(-1, n_dof) / gains
    target = problem.tau if recorded is None else np.asarray(recorded[0], dtype=float).reshape(-1)
    split = split or validation_split(problem.q)
    block = split.block
    ours, plain = np.zeros_like(raw), np.zeros_like(raw)
    for k in range(BLOCKS):
        fit = rows & (np.repeat(block, n_dof) != k)
        held = block == k
        if held_out is None:
            ours[held] = problem.predict(fit, terms)[held]
        plain[held] = (problem.w_b @ least_squares(problem.w_b, target, fit)).reshape(-1, n_dof)[held]
    if held_out is not None:
        ours = np.asarray(held_out, dtype=float)
    ours, predicted = ours / gains, np.asarray(predicted, dtype=float) / gains
    full = least_squares(problem.w_b, target, rows)
    in_sample = (problem.w_b @ full).reshape(-1, n_dof)
    layout = base.layout
    delta = estimators.closest_standard(base.K, full, nominal) - attached
    masses = {link: float(delta[layout.link_slice(k).start]) for k, link in enumerate(layout.links)}
    error, per_joint = _relative(raw, ours)
    ols_error, ols_per_joint = _relative(raw, plain)
    return LeastSquaresComparison(error, ols_error, per_joint, ols_per_joint, _relative(raw, predicted)[0],
                                  _relative(raw, in_sample)[0], masses, split.to_dict())


def least_squares(w_b: np.ndarray | RowChunks, tau: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The OLS base parameters of the rows ``rows`` (minimum norm where a fold leaves a direction unexcited), from
    the compressed rows (``w_b`` may come in blocks)."""
    w, target, _ = estimators.in_fit(w_b, tau, rows)
    r, rho1, _ = estimators.compress(w, target)
    return np.linalg.lstsq(r, rho1, rcond=1e-10)[0]


def _relative(measured: np.ndarray, predicted: np.ndarray) -> tuple[float, list[float]]:
    """``||tau - tau_hat|| / ||tau||`` over everything and per joint (Sousa & Cortesão 2014 eq. 84)."""
    error = measured - predicted
    per_joint = np.linalg.norm(error, axis=0) / np.maximum(np.linalg.norm(measured, axis=0), 1e-300)
    return float(np.linalg.norm(error) / max(float(np.linalg.norm(measured)), 1e-300)), per_joint.tolist()
