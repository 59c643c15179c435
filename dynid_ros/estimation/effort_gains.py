"""Per-joint effort gains from one run: how much torque each joint's recorded effort stands for, relative to the
others, estimated with the parameters (option ``identification: effort_gains: auto | off``).

A joint's recorded effort is often its torque times a gain that is not quite 1: a torque sensor's calibration, a
motor current times a data-sheet torque constant, gear ratio and efficiency (Pennese et al. 2021 eq. 2,
``tau = K i``). A prior that holds the links near their CAD values cannot absorb such a gain: the fit then bends the
parameters the joint shares with the others and loses to plain least squares. With ``k_j`` the torque per unit of
recorded effort of joint ``j`` (``k_j = 1 + c_j``) the model stays linear::

    W_j beta = k_j e_j   <=>   W_j beta - c_j e_j = e_j          (rows of joint j)

so the gains are extra columns of the regression (``-e_j`` in joint ``j``'s rows). The data determine them only
relative to each other: scaling every gain and every parameter together changes nothing (the homogeneous direction
of Pennese et al. 2021; a known payload fixes it, ``dynid gains``). Here a Gaussian prior ``c_j ~ N(0, s^2)`` with
``s`` = :data:`GAIN_TOLERANCE` fixes it (the common scale stays where the description's masses put it, the prior's
centre) and holds a gain the data barely see (a wrist joint whose torque is its own link's) at 1. The joints' rows
are weighted by their least-squares residual variance times its integrated autocorrelation time (the effective
noise, as the identification's data weighting).

The gains are kept only when the data demand them and they predict better: the likelihood ratio of the fits without
and with them (the drop of the weighted squared residual, in units of each joint's effective noise) must pass the
chi-square quantile of ``n`` degrees of freedom at the residual-structure flag's significance
(:data:`~dynid_ros.estimation.residual_structure.SIGNIFICANCE`), and the held-out error must drop in every block (a
gain absorbing model error helps some blocks only; measured on the coupled wrist in motor coordinates): the window
split into the contiguous time blocks of the other data-driven choices (:data:`BLOCKS`; blocked cross-validation for
dependent data, Roberts et al. 2017), each block predicted by the least-squares fit of the others without and with the
gains (the effort the model predicts is ``W beta / k``), against the recorded, unfiltered effort, every joint.
Everything comes from per-block, per-joint sums of the
regressor, the filtered and the recorded effort, built in one pass over the regressor's chunks (and one more for the
residual's autocorrelation): memory does not grow with the recording.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.dynamics.row_chunks import RowChunks, as_row_chunks
from dynid_ros.estimation.residual_model import integrated_autocorrelation_time
from dynid_ros.estimation.residual_structure import SIGNIFICANCE
from dynid_ros.estimation.time_blocks import BLOCKS, time_blocks

GAIN_TOLERANCE = 0.2
"""Prior standard deviation of each joint's gain around 1: a torque sensor's calibration or a drive's data-sheet
torque constant times gear ratio and efficiency is within about 20 % of the truth as a rule."""
MAX_STEPS = 50
"""Gauss-Newton steps at most."""
STEP_TOLERANCE = 1e-10
"""The gains' largest Gauss-Newton step at which the fit has converged."""


@dataclass(frozen=True)
class GainChoice:
    """The gains estimated on the whole window (``gains``: torque per unit of recorded effort, per joint, 1 where
    none is kept), their standard deviations, whether they are kept, and the cross-validated relative errors of
    least squares without and with them (``error_without``, ``error_with``), the likelihood ratio of the fit with
    them (the drop of the squared residual in units of the effective noise) and the margin it had to pass."""

    gains: np.ndarray
    std: np.ndarray
    kept: bool
    error_without: float
    error_with: float
    likelihood_ratio: float
    margin: float

    def to_dict(self, joints: tuple[str, ...] | list[str]) -> dict:
        """``report.json`` ``effort_gains``."""
        return {"kept": self.kept, "gains": dict(zip(joints, self.gains.tolist())),
                "std": dict(zip(joints, self.std.tolist())), "tolerance": GAIN_TOLERANCE,
                "cross_validation": {"method": "time-blocked least squares", "blocks": BLOCKS,
                                     "error_without": self.error_without, "error_with": self.error_with,
                                     "likelihood_ratio": self.likelihood_ratio,
                                     "margin": self.margin}}

    def message(self, joints: tuple[str, ...] | list[str]) -> str:
        """The console line of kept gains: the joints whose gain is off by more than its standard deviation."""
        off = [f"{j} {g:.3f}" for j, g, s in zip(joints, self.gains, self.std) if abs(g - 1.0) > s]
        return ("the recorded efforts are not in one scale: torque per unit of effort estimated with the parameters "
                f"({', '.join(off) or 'all within their uncertainty of 1'}; time-blocked cross-validation "
                f"{100 * self.error_without:.2f} % -> {100 * self.error_with:.2f} %): a torque constant or sensor "
                "gain off? (report.json effort_gains; --effort-gains off keeps the effort as recorded)")


@dataclass
class _BlockSums:
    """Per time block ``k`` and joint ``j``: ``W^T W``, ``W^T e``, ``W^T r``, ``e^T e``, ``e^T r``, ``r^T r`` of the
    regressor rows ``W`` of the joint, its filtered effort ``e`` and its recorded effort ``r`` (rows in the fit)."""

    ww: np.ndarray
    we: np.ndarray
    wr: np.ndarray
    ee: np.ndarray
    er: np.ndarray
    rr: np.ndarray


def choose_gains(w_b: np.ndarray | RowChunks, tau: np.ndarray, raw: np.ndarray, rows: np.ndarray, n_dof: int
                 ) -> GainChoice | None:
    """The gain choice of the module docstring for the base regressor ``w_b`` (rows sample-major), the filtered
    effort ``tau`` and the recorded one ``raw`` (samples, n_dof), the rows in the fit ``rows``; None when a block or
    a joint has no rows."""
    tau = np.asarray(tau, dtype=float).reshape(-1)
    raw = np.asarray(raw, dtype=float).reshape(-1)
    rows = np.asarray(rows, dtype=bool).reshape(-1)
    n_samples = tau.size // n_dof
    block = np.repeat(time_blocks(n_samples), n_dof)
    sums = _sums(as_row_chunks(w_b), tau, raw, rows, block, n_dof)
    if np.any(sums.ee.sum(axis=0) <= 0) or np.any(sums.ee.sum(axis=1) <= 0):
        return None
    weights = _joint_weights(w_b, tau, rows, sums, n_dof)
    plain, gained = np.zeros((2, BLOCKS)), np.zeros((2, BLOCKS))
    for k in range(BLOCKS):
        others = [b for b in range(BLOCKS) if b != k]
        beta = _least_squares(sums, others, weights)
        plain[:, k] = _held_error(sums, k, beta, np.ones(n_dof))
        beta, g, _ = _with_gains(sums, others, weights)
        gained[:, k] = _held_error(sums, k, beta, g)
    whole = list(range(BLOCKS))
    beta, g, std = _with_gains(sums, whole, weights)
    from scipy.stats import chi2  # deferred: the module imports without scipy's import time

    ratio = _weighted_fit(sums, whole, weights, _least_squares(sums, whole, weights), np.ones(n_dof)) - \
        _weighted_fit(sums, whole, weights, beta, g)
    margin = float(chi2.ppf(1.0 - SIGNIFICANCE, n_dof))
    without = float(np.sqrt(plain[0].sum() / plain[1].sum()))
    with_ = float(np.sqrt(gained[0].sum() / gained[1].sum()))
    kept = bool(ratio > margin and with_ < without and np.all(gained[0] < plain[0]))  # better in every block
    return GainChoice(1.0 / g, std / g ** 2, kept, without, with_, float(ratio), margin)


def _sums(w_b: RowChunks, tau: np.ndarray, raw: np.ndarray, rows: np.ndarray, block: np.ndarray, n_dof: int
          ) -> _BlockSums:
    p = w_b.shape[1]
    out = _BlockSums(np.zeros((BLOCKS, n_dof, p, p)), np.zeros((BLOCKS, n_dof, p)), np.zeros((BLOCKS, n_dof, p)),
                     np.zeros((BLOCKS, n_dof)), np.zeros((BLOCKS, n_dof)), np.zeros((BLOCKS, n_dof)))
    for first, chunk in w_b.chunks():
        span = slice(first, first + chunk.shape[0])
        joint = np.arange(span.start, span.stop) % n_dof
        for k in np.unique(block[span]):
            for j in range(n_dof):
                sel = (block[span] == k) & (joint == j) & rows[span]
                if not sel.any():
                    continue
                w, e, r = chunk[sel], tau[span][sel], raw[span][sel]
                out.ww[k, j] += w.T @ w
                out.we[k, j] += w.T @ e
                out.wr[k, j] += w.T @ r
                out.ee[k, j] += e @ e
                out.er[k, j] += e @ r
                out.rr[k, j] += r @ r
    return out


def _joint_weights(w_b: np.ndarray | RowChunks, tau: np.ndarray, rows: np.ndarray, sums: _BlockSums, n_dof: int
                   ) -> np.ndarray:
    """1 / (residual variance x integrated autocorrelation time) per joint, of the least-squares fit of the whole
    window: the effective noise of each joint's rows (so the data term is in the prior's units)."""
    beta = _least_squares(sums, list(range(BLOCKS)), np.ones(n_dof))
    residual = (tau - as_row_chunks(w_b) @ beta).reshape(-1, n_dof)
    present = rows.reshape(-1, n_dof)
    weights = np.ones(n_dof)
    for j in range(n_dof):
        r = residual[present[:, j], j]
        variance = float(r @ r) / max(r.size, 1)
        tau_int = integrated_autocorrelation_time(residual[:, j], present[:, j])
        weights[j] = 1.0 / max(variance * tau_int, 1e-300)
    return weights


def _least_squares(sums: _BlockSums, blocks: list[int], weights: np.ndarray) -> np.ndarray:
    """Weighted least squares (minimum norm) of the blocks ``blocks``."""
    a = np.einsum("j,kjpq->pq", weights, sums.ww[blocks])
    b = np.einsum("j,kjp->p", weights, sums.we[blocks])
    return np.linalg.lstsq(a, b, rcond=1e-12)[0]


def _with_gains(sums: _BlockSums, blocks: list[int], weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The parameters ``beta``, the gains ``g`` (recorded effort per unit of torque: ``e_j = g_j W_j beta``) and
    their standard deviations of the weighted least squares with the gains' prior ``g_j ~ N(1, s^2)``, on the blocks
    ``blocks``: Gauss-Newton from least squares at ``g = 1`` (the residual is bilinear in ``beta`` and ``g``; in the
    recorded effort's units, so no common shrinking of both lowers it, as it would with the gains as columns of
    ``e``), to :data:`STEP_TOLERANCE`."""
    ww = np.einsum("j,kjpq->jpq", weights, sums.ww[blocks])
    we = np.einsum("j,kjp->jp", weights, sums.we[blocks])
    p, n = ww.shape[1], weights.size
    beta, g = _least_squares(sums, blocks, weights), np.ones(n)
    prior = 1.0 / GAIN_TOLERANCE ** 2
    for _ in range(MAX_STEPS):
        wwb = ww @ beta  # (n, p): W_j^T W_j beta, weighted
        a = np.zeros((p + n, p + n))
        a[:p, :p] = np.einsum("j,jpq->pq", g ** 2, ww)
        a[:p, p:] = (g[:, None] * wwb).T
        a[p:, :p] = a[:p, p:].T
        a[p:, p:] = np.diag(wwb @ beta + prior)
        gradient = np.concatenate([np.einsum("j,jp->p", g, we - g[:, None] * wwb),
                                   we @ beta - g * (wwb @ beta) - prior * (g - 1.0)])
        step = np.linalg.lstsq(a, gradient, rcond=1e-12)[0]
        beta, g = beta + step[:p], g + step[p:]
        if np.max(np.abs(step[p:])) < STEP_TOLERANCE:
            break
    covariance = np.linalg.pinv(a, rcond=1e-12)
    return beta, g, np.sqrt(np.maximum(np.diag(covariance)[p:], 0.0))


def _weighted_fit(sums: _BlockSums, blocks: list[int], weights: np.ndarray, beta: np.ndarray, gains: np.ndarray
                  ) -> float:
    """The weighted squared residual of the filtered effort against ``g_j W_j beta`` on the blocks ``blocks`` (in
    units of the effective noise: about the effective sample count for a fit at the noise)."""
    total = 0.0
    for j, g in enumerate(gains):
        ww, we, ee = (x[blocks, j].sum(axis=0) for x in (sums.ww, sums.we, sums.ee))
        total += weights[j] * (ee - 2 * g * beta @ we + g ** 2 * beta @ ww @ beta)
    return float(total)


def _held_error(sums: _BlockSums, k: int, beta: np.ndarray, gains: np.ndarray) -> np.ndarray:
    """Squared error of block ``k``'s recorded effort against the predicted effort ``g_j W_j beta``, and its
    squared norm."""
    error = 0.0
    for j in range(gains.size):
        wb = gains[j]
        error += sums.rr[k, j] - 2 * wb * beta @ sums.wr[k, j] + wb ** 2 * beta @ sums.ww[k, j] @ beta
    return np.array([max(float(error), 0.0), float(sums.rr[k].sum())])
