"""A result's check of itself, before it is written: a result that fails it is an error, never an output.

An identification exits 0 only when

- its masses are finite and positive: every identified body's, and every link's without the parts attached to it
  (a hand fixed to the last link, a detected load);
- it fits its own window better than no model at all (a relative error below 1: predicting zero torque scores
  exactly 1) and better than the nominal description does on the same window (the same processed samples, against
  the same recorded torque) -- or, for the latter, no better is possible: the fit is as good as the best
  least-squares fit of the same model on the window, within the noise (an F-test at :data:`SIGNIFICANCE` on the
  residual sums of squares, its degrees of freedom divided by the integrated autocorrelation time of the best
  fit's residual: correlated noise carries fewer independent samples; both on the rows the estimate was fitted to:
  a joint's rows below ``min_speed`` are left out of every fit), so the nominal model, no worse, is right
  already; or the fit is better than the nominal model in the residual the estimate minimizes, each joint's in
  units of the noise the evidence chose for it (:func:`noise_weighted_errors`: with noise that differs between
  joints by orders of magnitude the MAP improves the quiet joints at a small cost on the loud ones, which carry the
  plain relative error); the check says so (the description's joint terms no robot could have, placeholders the
  identification named and did not use as its prior's mean, are left out of the nominal model here); a nominal
  description that explains nothing (no better than no torque: one without masses) is no yardstick: the fit must
  then be as good as least squares, by the same F-test;
- ``dynid validate``'s own computation, from the files as written (``parameters.yaml``, ``identified.urdf``: the
  model, the parameter vector, the sigmoid friction, the position-dependent torques) on the identification's own
  processed samples, gives the number ``identify`` reports (to :data:`AGREEMENT`, relative).

A wrong answer (a fit worse than the URDF the user already had, a negative mass, files that do not reproduce the fit)
thus stops at ``identify`` with one line saying which check failed, instead of reaching a user's simulator or
controller. Identifications without a torque window (from M(q) and g(q)) are checked for their masses; the report
says why the other checks do not apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.stats

from dynid_ros.data.signal_processing import ProcessedData
from dynid_ros.dynamics.regressor import regressor_chunks, torques
from dynid_ros.errors import EstimationError
from dynid_ros.estimation.estimators import compress, in_fit
from dynid_ros.estimation.fit_quality import relative_error, relative_norm
from dynid_ros.estimation.residual_model import residual_inflation
from dynid_ros.identification.identification_result import IdentificationResult
from dynid_ros.reporting.validate import validate_processed
from dynid_ros.robot.urdf_writer import attached_parameters

SIGNIFICANCE = 0.99
"""Confidence of the F-test that the data improve on the nominal model."""
AGREEMENT = 1e-6
"""Largest relative difference between ``identify``'s error and the validation of the written files on the same
samples (both evaluate the same model on the same numbers; more is a file that does not hold the fit)."""


class ResultCheckError(EstimationError):
    """A result failed its own check (:mod:`dynid_ros.reporting.result_check`)."""


@dataclass
class ResultCheck:
    """What :func:`check_result` found (``report.json`` ``sanity_check``)."""

    relative_error: float | None
    nominal_relative_error: float | None = None
    least_squares_relative_error: float | None = None
    validation_relative_error: float | None = None
    problems: list[str] = field(default_factory=list)
    explanations: list[str] = field(default_factory=list)
    """Why a check does not apply, or why a fit no better than the nominal one is accepted."""

    @property
    def passed(self) -> bool:
        """Whether every check passed."""
        return not self.problems

    def to_dict(self) -> dict:
        """The checks for ``report.json`` ``sanity_check``."""
        return {"passed": self.passed, "relative_error": self.relative_error,
                "nominal_relative_error": self.nominal_relative_error,
                "least_squares_relative_error": self.least_squares_relative_error,
                "validation_relative_error": self.validation_relative_error,
                "problems": list(self.problems), "explanations": list(self.explanations)}

    def raise_if_failed(self) -> None:
        """ResultCheckError, one line naming every failed check."""
        if self.problems:
            raise ResultCheckError(f"the result fails its own check, nothing written: {'; '.join(self.problems)}")


def check_result(result: IdentificationResult, directory: Path) -> ResultCheck:
    """Check ``result`` and its files as written in ``directory`` (module docstring)."""
    check = ResultCheck(float(result.relative_error))
    _check_masses(result, check)
    fit = result.fit
    if fit is None:
        check.explanations.append("identified from M(q) and g(q): no torque window to compare with the nominal "
                                  "model or to validate on")
        return check
    check_against_nominal(result, check)
    data = ProcessedData(t=fit.t, q=fit.q, dq=fit.dq, ddq=fit.ddq, tau=fit.tau, tau_raw=fit.tau, rate_hz=0.0)
    validation = validate_processed(Path(directory), data)
    check.validation_relative_error = float(validation.relative_error)
    # The files must predict the torque identify predicted (compared as torques, not as errors: an identification
    # of |tau| (Pennese et al. 2021) scores its signed prediction against the signs it chose, not the recording).
    apart = relative_norm(validation.tau_hat - fit.tau_hat, fit.tau_hat)
    if not apart <= AGREEMENT:
        check.problems.append(f"the files as written predict its own window {100 * apart:.3g} % away from what "
                              f"identify predicted ({100 * validation.relative_error:.4g} % error, not "
                              f"{100 * result.relative_error:.4g} %)")
    return check


def _check_masses(result: IdentificationResult, check: ResultCheck) -> None:
    layout = result.layout
    masses = result.delta[layout.indices("m")]
    own = masses - attached_parameters(result.model, layout)[layout.indices("m")]
    bad = [f"{link} {body:.4g} kg (the link itself {alone:.4g} kg)" for link, body, alone in
           zip(layout.links, masses, own) if not (np.isfinite(body) and np.isfinite(alone) and body > 0 and alone > 0)]
    if bad:
        check.problems.append(f"mass not finite and positive: {', '.join(bad)}")


def check_against_nominal(result: IdentificationResult, check: ResultCheck) -> None:
    """Better than the nominal model on the window, or as good as any fit of the model can be (then the nominal
    model, no worse, is too)."""
    fit, model = result.fit, result.model
    description = np.array(result.nominal, dtype=float)
    description[list(result.untrusted_nominal)] = 0.0  # placeholders no robot could have (named in the warnings)
    nominal = torques(model, result.layout, description, fit.q, fit.dq, fit.ddq)
    error_nominal = relative_error(fit.tau, nominal)[0]
    check.nominal_relative_error = float(error_nominal)
    if not result.relative_error < 1.0:  # zero torque scores 1: whatever the nominal model does, this explains nothing
        check.problems.append(f"it fits its own window with {100 * result.relative_error:.4g} % error, no better "
                              "than predicting no torque at all (100 %)")
    vacuous = not error_nominal < 1.0  # a description without masses explains nothing: nothing to beat
    if result.relative_error < error_nominal and not vacuous:
        return
    w_b, tau, kept = in_fit(regressor_chunks(model, result.base.layout, fit.q, fit.dq, fit.ddq,
                                             result.base.independent), fit.tau, fit.rows)
    energy = max(float(tau @ tau), 1e-300)
    r, rho1, rho2 = compress(w_b, tau)
    rss_floor = rho2**2  # the best least-squares fit of the same model on the same rows
    if fit.rows is None:  # every row (or a fit to another torque, e.g. |tau|'s chosen signs): the result's own error
        rss = result.relative_error**2 * energy
    else:
        rss = float(np.sum(np.square(np.asarray(fit.residual, dtype=float).reshape(-1)[kept])))
    fitted_error = float(np.sqrt(rss / energy))  # the candidate's, on those rows
    check.least_squares_relative_error = float(np.sqrt(rss_floor / energy))
    rows, n_base = int(kept.sum()), w_b.shape[1]
    beta = np.linalg.lstsq(r, rho1, rcond=None)[0]
    # the noise's correlation, from the best fit's residual: the candidate's own residual carries its systematic
    # error, whose long correlation would excuse any miss
    inflation = residual_inflation(np.where(kept, tau - w_b @ beta, 0.0).reshape(np.shape(fit.tau)[0], -1))
    excess = (rss - rss_floor) / n_base / max(rss_floor / (rows - n_base), 1e-300)
    within_noise = excess <= inflation * scipy.stats.f.ppf(SIGNIFICANCE, n_base, max(rows / inflation - n_base, 1.0))
    if vacuous:
        if within_noise:
            check.explanations.append(
                f"the nominal model explains nothing of the window ({100 * error_nominal:.4g} %): the fit "
                f"({100 * fitted_error:.4g} % on the rows it was fitted to) is compared with the best least-squares "
                f"fit of the model on them ({100 * check.least_squares_relative_error:.4g} %) instead, and is as good "
                f"within the noise (F-test, {100 * SIGNIFICANCE:g} %)")
        else:
            check.problems.append(
                f"it fits its own window with {100 * fitted_error:.4g} % error (the rows it was fitted to) where the "
                f"data allow {100 * check.least_squares_relative_error:.4g} % (least squares), and the nominal model "
                f"explains nothing to compare with ({100 * error_nominal:.4g} %)")
        return
    if within_noise:
        check.explanations.append(
            f"the fit ({100 * result.relative_error:.4g} %) is no better than the nominal model "
            f"({100 * error_nominal:.4g} %) on its window, and none could be: it is as good as the best least-squares "
            f"fit of the model ({100 * check.least_squares_relative_error:.4g} % on the rows it was fitted to, where "
            f"it has {100 * fitted_error:.4g} %) within the noise (F-test, {100 * SIGNIFICANCE:g} %)")
        return
    weighted = noise_weighted_errors(result, nominal)
    if weighted is not None and weighted[0] < weighted[1]:
        check.explanations.append(
            f"the fit ({100 * result.relative_error:.4g} %) is no better than the nominal model "
            f"({100 * error_nominal:.4g} %) on its window in plain relative error, which its largest torques carry, "
            f"but better in the noise-weighted residual the estimate minimizes (each joint by the noise the evidence "
            f"chose: {weighted[0]:.4g} against the nominal model's {weighted[1]:.4g}; per joint "
            f"{', '.join(f'{100 * a:.3g}/{100 * b:.3g} %' for a, b in zip(*weighted[2:]))})")
        return
    check.problems.append(f"it fits its own window worse ({100 * result.relative_error:.4g} %) than the nominal model "
                          f"({100 * error_nominal:.4g} %), and the data allow better (least squares: "
                          f"{100 * check.least_squares_relative_error:.4g} %)")


def noise_weighted_errors(result: IdentificationResult, nominal: np.ndarray
                          ) -> tuple[float, float, list[float], list[float]] | None:
    """The fit's and the nominal model's squared residuals on the rows the estimate was fitted to, each joint's in
    units of the noise the evidence chose for it (``sigma_j^2 tau_j``, the MAP's data term: MacKay 1992), and both
    per-joint relative errors; None where no noise per joint was chosen (methods without the evidence).

    The MAP weighs each joint by its noise: with noise that differs between joints by orders of magnitude (a
    simulated arm's, a torque sensor's per joint) it improves the quiet joints at the cost of a little on the loud
    ones, which the plain relative error, carried by the largest torques, scores as worse than the description."""
    hyper = result.hyperparameters or {}
    if "noise_std" not in hyper or "inflation" not in hyper:
        return None
    joints = list(result.model.joints)
    noise = np.array([hyper["noise_std"][j] ** 2 * hyper["inflation"][j] for j in joints], dtype=float)
    if not np.all(np.isfinite(noise) & (noise > 0)):
        return None
    fit = result.fit
    tau = np.asarray(fit.tau, dtype=float)
    kept = np.ones(tau.shape, dtype=bool) if fit.rows is None else np.asarray(fit.rows, dtype=bool).reshape(tau.shape)
    own = np.where(kept, tau - np.asarray(fit.tau_hat, dtype=float), 0.0)
    theirs = np.where(kept, tau - nominal, 0.0)
    energy = np.maximum(np.sum(np.where(kept, tau, 0.0) ** 2, axis=0), 1e-300)
    return (float(np.sum(own**2 / noise)), float(np.sum(theirs**2 / noise)),
            np.sqrt(np.sum(own**2, axis=0) / energy).tolist(), np.sqrt(np.sum(theirs**2, axis=0) / energy).tolist())
