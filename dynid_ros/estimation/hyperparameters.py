"""The prior's scale per group and the noise per joint, chosen by the data: evidence maximization (type-II maximum
likelihood, empirical Bayes) on the linear-Gaussian part of the MAP estimate.

The feasible MAP estimate (:func:`dynid_ros.estimation.estimators.fbpe`) weighs the data against the CAD prior
(:mod:`dynid_ros.estimation.prior`). Two kinds of numbers decide the balance: how far the robot may be from its
description (the prior's tolerances per group: link masses, CoMs, inertias, joint terms) and how noisy each joint's
torque is. Stated once for every robot they are right for none: a URDF the data contradict needs a wide prior, one the
data agree with keeps a tight one, and a short or badly excited run over-fits its noise. They are chosen here, per
identification, by the evidence: the probability of the measured torques given the hyperparameters with the
parameters integrated out (MacKay 1992 "Bayesian interpolation", the evidence framework; Tipping 2001 section 2.2;
Rasmussen & Williams 2006 section 5.4.1, eq. 5.8: a data-fit term and a complexity penalty, so a wider prior is
chosen only when it explains the data better by more than it costs).

**The model.** Base parameters ``beta = K delta`` with the prior ``delta ~ N(mu, Sigma(s))``,
``Sigma(s) = sum_g s_g^2 Sigma_g + Sigma_0`` (:class:`dynid_ros.estimation.prior.PriorGroups`: ``Sigma_g`` the group's
covariance at the stated tolerance, so ``s_g = 1`` is the stated prior; ``Sigma_0`` parts without a scale, e.g. an
unmodelled load). Joint ``j``'s ``N_j`` rows ``y_j = W_j beta + e_j``, ``e_j`` of variance ``sigma_j^2``. Its residual
is correlated (integrated autocorrelation time ``tau_j``, and model error counted as few samples,
:mod:`dynid_ros.estimation.model_error`): the rows carry the information of ``N_j / tau_j`` independent samples, so each
row's log-likelihood counts ``1 / tau_j`` (a tempered likelihood with the effective sample size, as the MAP's own data
term). The log evidence then has the closed form (all from the per-joint sums ``W_j^T W_j``, ``W_j^T y_j``,
``y_j^T y_j``, never the samples: it streams)::

    2 log p(y | s, sigma) = - sum_j (N_j / tau_j) log(2 pi sigma_j^2) - (y - W m0)^T P (y - W m0)
                            + b^T L (I + L^T A L)^-1 L^T b - log det(I + L^T A L)

with ``P`` the rows' precision ``1 / (sigma_j^2 tau_j)``, ``A = W^T P W``, ``b = W^T P (y - W m0)``, ``m0 = K mu`` and
``L L^T = K Sigma(s) K^T``. It is maximized over ``log s_g`` and ``log sigma_j`` with a log-normal hyperprior on each
``s_g`` (one standard deviation a factor :data:`HYPERPRIOR_SPREAD` about the stated tolerance; MacKay 1992 section 3:
a prior on the hyperparameters): the stated tolerances are a belief, and without it a group whose directions another
part of the prior can also explain (an unmodelled load's wide prior on the last link) is switched off (the pruning of
Tipping 2001 section 2.2), which no CAD engineer would believe. The optimum's noise is each joint's residual variance
corrected for the parameters the data determine (MacKay's ``N - gamma``): a short or badly excited run no longer
reads its over-fit residual as its noise.

**The noise's hyperprior.** That correction divides joint ``j``'s residual by ``N_j / tau_j - gamma_j``, the
effective samples less the parameters its rows determine; with a structured residual (model error counted as few
samples) the two meet and the fixed point diverges: the joint's noise grows without bound, its data count as nothing
and what only it supports goes back to the prior, a larger structured residual still (measured on
test/fleet/test_drift.py's payload night with the stated scales: ``N_eff`` 2.29 and 5.48, ``gamma`` 2.22 and 5.30 on
joints 1 and 2, their noise 14x and 6x their least-squares residual's, 4.0 N m on joint 2 after one more refinement of
its inflation, and the 0.5 kg payload no longer separated from link 3: 7.6 % error vs 2.0 % with the stated
noise). So each joint's noise variance has a log-normal hyperprior too (MacKay 1992 section 3; Tipping 2001 puts a
Gamma prior on the noise precision), centred on its least-squares residual variance (:meth:`JointSums.
least_squares_noise`, from all its rows) with the scales' spread: where the joint has many effective samples it does
not matter, where it has none it keeps the noise within a factor of a few of what the residual shows (that night:
2.9 % error, the payload found).

**The noise share of the inflation.** ``tau_j`` counts two things (:mod:`dynid_ros.estimation.model_error`): the
noise's autocorrelation time and a structured share ``s_j`` of the residual (a torque the model lacks, a function of
the state) counted as few samples, ``tau_j = (1 - s_j) t_j + s_j N_j / n_j``. The data term and the count of effective
samples take all of it. The parameters a fit determines absorb only the noise's part, ``gamma_j (1 - s_j) t_j`` rows
(a correlated noise's slow part looks like a parameter change): the structured share is measured on the fit's own
residual, the part of the missing torque the regressor could not take up. So the noise's equation is ``sigma_j^2 =
r_j / (N_j - a_j gamma_j)`` with ``a_j = (1 - s_j) t_j`` (:attr:`Evidence.absorption`), not ``N_j - tau_j gamma_j``,
which met zero on a night with a structured residual and read a 0.3 N m Coulomb friction estimate's standard deviation
as three times its error (test/fleet/test_drift.py, joint j2 the night the payload came on: 0.065 N m against 0.022 N m
with the stated noise; its friction growth was then flagged a night late). No objective in the noise has this
equation as its maximum, so the scales and the noise are found by alternation (:func:`_choose`): the scales maximize
the evidence plus hyperprior at the noise, the noise solves its equation at the scales.

The feasible MAP is then solved at the chosen values (the constraints, LMIs and bounds, act only there). The chosen
values, the log evidence at the stated and at the chosen ones (their difference is the log Bayes factor in favour of the
choice) and the evidence along each group's scale are what :meth:`HyperparameterChoice.to_dict` reports
(``report.json`` ``hyperparameters``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.optimize
from threadpoolctl import threadpool_limits

from dynid_ros.errors import ConfigError
from dynid_ros.estimation.normal_equations import NormalEquations
from dynid_ros.estimation.prior import (
    GROUPS,
    JOINT_GROUP,
    PriorGroups,
    PriorTolerances,
    group_scale,
)
from dynid_ros.estimation.residual_model import NOISE_FLOOR

HYPERPRIOR_SPREAD = 3.0
"""One standard deviation of the log-normal hyperprior of each group's scale: the stated tolerance times or divided by
this (a CAD tolerance is known to within a factor of a few, not to ten per cent and not to a hundred times)."""

SCALE_RANGE = (HYPERPRIOR_SPREAD**-2, HYPERPRIOR_SPREAD**2)
"""Each group's scale stays within two of the hyperprior's standard deviations of the stated tolerance. With few
independent samples (a short run, model error counted as few samples) the evidence's Occam factor prefers an ever
tighter prior; a CAD model is not known to better than a ninth of its stated tolerance however little the data say,
nor should a tolerance nine times the stated one be needed (the data then speak for themselves)."""

CONVERGED = {"ftol": 1e-15, "gtol": 1e-10, "maxiter": 1000}
"""The optimizer's stopping rule: converged to round-off, so the choice does not depend on how the sums were added up
(a bag streamed in chunks gives the in-memory estimate to 1e-9)."""

ALTERNATIONS = 200
"""At most this many alternations of the scales and the noise (:func:`_choose`; a few tens at most, measured)."""
ALTERNATION_TOLERANCE = 1e-10
"""The alternation stops when no log scale and no log noise variance moves by more than this, or when the moves stop
shrinking (:func:`converged`)."""

NOISE_ITERATIONS = 200
"""At most this many fixed-point steps of the noise per scale (it converges linearly, in a few tens)."""
NOISE_TOLERANCE = 1e-12
"""The noise's fixed point is reached when no joint's variance moves by more than this (relative), or when the steps
stop shrinking (:func:`converged`)."""

STALLED_STEPS = 3
"""A fixed-point iteration whose last this many steps made none smaller than every step before them has reached its
round-off (:func:`converged`): the residual ``r_j`` is a difference of the sums (``sum tau^2 - 2 b^T m + m^T G m``),
whose round-off relative to ``r_j`` grows with ``sum tau^2 / r_j``, so a fit to low-noise data (a simulation) cannot
reach the tolerances above. Measured: on a simulated Panda bag (noise ~1 % of the torque) the noise's steps stalled at
1e-9 to 1e-8 and an identification ran 200 alternations of 200 steps each (42 s, the node's test past its deadline);
on a UR5e with noise 1e-4 of the torque they stall at 1e-7 to 5e-7 (the tolerances are reached on real data)."""

CURVE_FACTORS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
"""The evidence curve: each group's scale times these factors, the others at their chosen values."""


@dataclass
class JointSums:
    """The per-joint normal equations stacked: ``gram[j] = W_j^T W_j``, ``cross[j] = W_j^T y_j``, ``square[j] = y_j^T
    y_j`` and ``count[j]`` rows (in the fit), of the base regressor ``W_j`` and target ``y_j``."""

    gram: np.ndarray
    cross: np.ndarray
    square: np.ndarray
    count: np.ndarray

    @classmethod
    def of(cls, equations: list[NormalEquations]) -> JointSums:
        """From each joint's normal equations (e.g. :meth:`dynid_ros.estimation.estimators.JointBlocks.
        normal_equations`)."""
        return cls(np.array([e.gram for e in equations]), np.array([e.projection for e in equations]),
                   np.array([e.b_norm2 for e in equations]), np.array([float(e.rows) for e in equations]))

    def least_squares_noise(self) -> np.ndarray:
        """Per joint, the residual variance of the least-squares fit of all joints (a starting value)."""
        gram, cross = self.gram.sum(axis=0), self.cross.sum(axis=0)
        beta = np.linalg.lstsq(gram, cross, rcond=1e-12)[0]
        residual = self.square - 2.0 * self.cross @ beta + np.einsum("i,jik,k->j", beta, self.gram, beta)
        dof = np.maximum(self.count - beta.size / self.count.size, 1.0)
        return np.maximum(residual, 0.0) / dof


@dataclass
class Evidence:
    """The log evidence of the module docstring for the sums ``sums``, each joint's inflation ``inflation``
    (``tau_j``), the prior ``groups`` and ``K`` (``beta = K delta``)."""

    sums: JointSums
    inflation: np.ndarray
    groups: PriorGroups
    K: np.ndarray
    noise_centre: np.ndarray | None = None
    """Per joint, the centre of the noise variance's log-normal hyperprior (:meth:`log_noise_hyperprior`; None: the
    joints' least-squares residual variances, :meth:`JointSums.least_squares_noise`)."""
    absorption: np.ndarray | None = None
    """Per joint, the rows of residual variance each parameter its data determine absorbs (:meth:`noise_update`, the
    module docstring's split of the inflation): ``(1 - s_j) t_j``, the noise share of the inflation, for a
    structured share ``s_j`` and the noise's autocorrelation time ``t_j`` (:attr:`dynid_ros.estimation.model_error.
    JointInflation.noise_inflation`); None: the inflation (a residual that is all correlated noise)."""
    base_groups: dict[str, np.ndarray] = field(init=False)
    base_fixed: np.ndarray = field(init=False)
    prior_mean: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        k = np.asarray(self.K, dtype=float)
        self.base_groups = {g: k @ self.groups.unit[g] @ k.T for g in self.groups.names}
        fixed = self.groups.fixed
        self.base_fixed = np.zeros_like(self.base_groups["mass"]) if fixed is None else k @ fixed @ k.T
        self.prior_mean = k @ self.groups.mean
        self.inflation = np.maximum(np.asarray(self.inflation, dtype=float), 1.0)
        self.absorption = self.inflation.copy() if self.absorption is None else np.minimum(
            np.maximum(np.asarray(self.absorption, dtype=float), 0.0), self.inflation)
        if self.noise_centre is None:
            self.noise_centre = np.maximum(self.sums.least_squares_noise(), noise_floor(self.sums))

    def base_covariance(self, scales: np.ndarray) -> np.ndarray:
        """``K Sigma(s) K^T`` for the scales in the order of the groups' names (:attr:`PriorGroups.names`)."""
        return sum(float(s) ** 2 * self.base_groups[g] for s, g in zip(scales, self.groups.names)) + self.base_fixed

    def log_evidence(self, scales: np.ndarray, noise: np.ndarray) -> float:
        """``log p(y | s, sigma)`` (module docstring) at group scales ``scales`` and noise variances ``noise``."""
        return self.value_and_gradient(scales, noise)[0]

    def value_and_gradient(self, scales: np.ndarray, noise: np.ndarray) -> tuple[float, np.ndarray]:
        """The log evidence and its gradient in ``(log s_g, log sigma_j)``: with the posterior mean ``m``, covariance
        ``S = (Sigma_b^-1 + A)^-1`` and ``u = Sigma_b^-1 (m - m0)``, ``d/dSigma_b = (u u^T - Sigma_b^-1 + Sigma_b^-1 S
        Sigma_b^-1) / 2`` and, for joint ``j``'s precision ``p_j``, ``d/dp_j = (N_j / tau_j / p_j - r_j -
        tr(S W_j^T W_j)) / 2`` (``r_j``: its squared residual at ``m``; Rasmussen & Williams 2006 eq. 5.9)."""
        noise = np.asarray(noise, dtype=float)
        precision = 1.0 / (noise * self.inflation)
        a = np.einsum("j,jab->ab", precision, self.sums.gram)
        b = np.einsum("j,ja->a", precision, self.sums.cross)
        m0 = self.prior_mean
        b0 = b - a @ m0
        cov = self.base_covariance(scales)
        d = np.sqrt(np.maximum(np.diag(cov), 1e-300))  # scaled: the base parameters' units differ by decades
        corr = cov / np.outer(d, d)
        lower = np.linalg.cholesky(corr + 1e-12 * np.eye(corr.shape[0])) * d[:, None]
        size = cov.shape[0]
        m = np.eye(size) + lower.T @ a @ lower
        root = np.linalg.cholesky(0.5 * (m + m.T))
        z = scipy.linalg.solve_triangular(root, lower.T @ b0, lower=True)
        effective = self.sums.count / self.inflation
        quadratic = float(precision @ self.sums.square - 2.0 * m0 @ b + m0 @ a @ m0)
        value = -0.5 * float(np.sum(effective * np.log(2.0 * np.pi * noise)) + quadratic - z @ z
                             + 2.0 * np.sum(np.log(np.diag(root))))
        # the posterior: m - m0 = L M^-1 L^T b0, S = L M^-1 L^T
        m_inv = scipy.linalg.cho_solve((root, True), np.eye(size))
        shift = lower @ (m_inv @ (lower.T @ b0))
        posterior = lower @ m_inv @ lower.T
        lower_inv = scipy.linalg.solve_triangular(lower, np.eye(size), lower=True)
        u = lower_inv.T @ (lower_inv @ shift)
        q = lower_inv.T @ (np.eye(size) - m_inv) @ lower_inv
        grad_scales = np.array([float(s) ** 2 * (u @ self.base_groups[g] @ u - np.sum(q * self.base_groups[g]))
                                for s, g in zip(scales, self.groups.names)])
        mean = m0 + shift
        residual = self.sums.square - 2.0 * self.sums.cross @ mean + np.einsum("i,jik,k->j", mean, self.sums.gram, mean)
        traces = np.einsum("ab,jab->j", posterior, self.sums.gram)
        d_precision = 0.5 * (effective / precision - residual - traces)
        return value, np.concatenate([grad_scales, -2.0 * precision * d_precision])

    def noise_update(self, scales: np.ndarray, noise: np.ndarray) -> np.ndarray:
        """The noise's fixed-point step at ``scales`` (MacKay 1992 eq. 4.6, per joint): ``sigma_j^2 = (r_j + (a_j /
        tau_j) tr(S W_j^T W_j)) / N_j``, ``r_j`` joint ``j``'s squared residual at the posterior mean, ``S`` the
        posterior covariance, evaluated at ``noise``, and ``a_j / tau_j`` the share of the inflation that is noise
        (:attr:`absorption`; module docstring): ``tr(S W_j^T W_j) = gamma_j sigma_j^2 tau_j``, so the fixed point is
        ``sigma_j^2 = r_j / (N_j - a_j gamma_j)``."""
        precision = 1.0 / (np.asarray(noise, dtype=float) * self.inflation)
        a = np.einsum("j,jab->ab", precision, self.sums.gram)
        b0 = np.einsum("j,ja->a", precision, self.sums.cross) - a @ self.prior_mean
        cov = self.base_covariance(scales)
        d = np.sqrt(np.maximum(np.diag(cov), 1e-300))
        lower = np.linalg.cholesky(cov / np.outer(d, d) + 1e-12 * np.eye(cov.shape[0])) * d[:, None]
        m = np.eye(cov.shape[0]) + lower.T @ a @ lower
        m_inv = np.linalg.inv(0.5 * (m + m.T))
        mean = self.prior_mean + lower @ (m_inv @ (lower.T @ b0))
        posterior = lower @ m_inv @ lower.T
        residual = self.sums.square - 2.0 * self.sums.cross @ mean + np.einsum("i,jik,k->j", mean, self.sums.gram, mean)
        traces = np.einsum("ab,jab->j", posterior, self.sums.gram) * (self.absorption / self.inflation)
        return np.maximum(residual + traces, 0.0) / np.maximum(self.sums.count, 1.0)

    def posterior_mean(self, scales: np.ndarray, noise: np.ndarray) -> np.ndarray:
        """The posterior mean of the base parameters at ``scales`` and ``noise``: ``m0 + (Sigma_b^-1 + A)^-1 b0``,
        the unconstrained MAP (what the cutoff's cross-validation scores, :mod:`dynid_ros.identification.
        cutoff_selection`)."""
        precision = 1.0 / (np.asarray(noise, dtype=float) * self.inflation)
        a = np.einsum("j,jab->ab", precision, self.sums.gram)
        b0 = np.einsum("j,ja->a", precision, self.sums.cross) - a @ self.prior_mean
        cov = self.base_covariance(scales)
        d = np.sqrt(np.maximum(np.diag(cov), 1e-300))
        lower = np.linalg.cholesky(cov / np.outer(d, d) + 1e-12 * np.eye(cov.shape[0])) * d[:, None]
        m = np.eye(cov.shape[0]) + lower.T @ a @ lower
        return self.prior_mean + lower @ np.linalg.solve(0.5 * (m + m.T), lower.T @ b0)

    def log_hyperprior(self, scales: np.ndarray) -> float:
        """The log-normal hyperprior of the scales (module docstring), up to a constant."""
        z = np.log(np.asarray(scales, dtype=float)) / np.log(HYPERPRIOR_SPREAD)
        return -0.5 * float(z @ z)

    def log_noise_hyperprior(self, noise: np.ndarray) -> float:
        """The log-normal hyperprior of each joint's noise variance about :attr:`noise_centre` (module docstring:
        one standard deviation of the noise's standard deviation a factor :data:`HYPERPRIOR_SPREAD`), up to a
        constant."""
        z = np.log(np.asarray(noise, dtype=float) / self.noise_centre) / (2.0 * np.log(HYPERPRIOR_SPREAD))
        return -0.5 * float(z @ z)

    def noise_step(self, scales: np.ndarray, noise: np.ndarray) -> np.ndarray:
        """One EM step of the noise with its hyperprior (a generalized EM, Dempster et al. 1977): the evidence's
        target ``E_j = (r_j + tr(S W_j^T W_j)) / N_j`` (:meth:`noise_update`, MacKay 1992 eq. 4.6) and the variance
        ``v_j`` maximizing ``-(n_j / 2) (log v_j + E_j / v_j)`` plus :meth:`log_noise_hyperprior`, ``n_j = N_j /
        tau_j`` the effective sample count: the root of ``n_j (E_j / v_j - 1) / 2 = log(v_j / c_j) / w^2`` (``c_j``
        the centre, ``w`` the log variance's standard deviation), by Newton's method in ``log v_j`` (decreasing,
        one root)."""
        target = self.noise_update(scales, noise)
        effective = self.sums.count / self.inflation
        width2 = (2.0 * np.log(HYPERPRIOR_SPREAD)) ** 2
        centre = np.log(self.noise_centre)
        u = np.log(np.maximum(target, self.noise_centre * 1e-300))
        for _ in range(100):
            ratio = np.maximum(target, 1e-300) * np.exp(-u)
            g = 0.5 * effective * (ratio - 1.0) - (u - centre) / width2
            step = g / (0.5 * effective * ratio + 1.0 / width2)
            u = u + step
            if np.max(np.abs(step)) < 1e-14:
                break
        return np.exp(u)

    def objective(self, scales: np.ndarray, noise: np.ndarray) -> float:
        """The log evidence plus the log hyperpriors of the scales and the noise (what :func:`choose_hyperparameters`
        maximizes)."""
        return self.log_evidence(scales, noise) + self.log_hyperprior(scales) + self.log_noise_hyperprior(noise)

    def objective_and_gradient(self, scales: np.ndarray, noise: np.ndarray) -> tuple[float, np.ndarray]:
        """:meth:`objective` and its gradient in ``(log s_g, log sigma_j)``."""
        value, gradient = self.value_and_gradient(scales, noise)
        spread = np.log(HYPERPRIOR_SPREAD) ** 2
        logs = np.log(np.asarray(scales, dtype=float))
        gradient[:logs.size] -= logs / spread
        gradient[logs.size:] -= np.log(np.asarray(noise, dtype=float) / self.noise_centre) / (
            2.0 * np.log(HYPERPRIOR_SPREAD) ** 2)
        return value + self.log_hyperprior(scales) + self.log_noise_hyperprior(noise), gradient


@dataclass
class HyperparameterChoice:
    """The hyperparameters chosen by the evidence (module docstring).

    Attributes:
        scales: per group (:attr:`PriorGroups.names`: ``mass``, ``com``, ``inertia``, ``joint:<name>`` per joint),
            the chosen tolerance over the stated one.
        tolerances: the chosen tolerances (the stated ones times ``scales``).
        stated: the stated tolerances (``identification.prior_tolerance``; the hyperprior's centre).
        noise_std: per joint, the chosen noise standard deviation [N m or N].
        inflation: per joint, the residual's variance inflation ``tau_j`` the evidence counts.
        log_evidence: log evidence (plus the log hyperprior) at the choice.
        log_evidence_stated: the same at the stated tolerances (the noise chosen for them).
        curve: per group, ``(factor, log evidence - log_evidence)`` with that group's scale times ``factor``.
    """

    scales: dict[str, float]
    tolerances: PriorTolerances
    stated: PriorTolerances
    noise_std: np.ndarray
    inflation: np.ndarray
    log_evidence: float
    log_evidence_stated: float
    curve: dict[str, list[tuple[float, float]]]
    given: bool = False
    """Whether the scales were given (pinned, e.g. a fleet's reference run's) rather than chosen: the evidence then
    chooses the noise per joint only."""

    @property
    def noise(self) -> np.ndarray:
        """Per joint, the variance of one row's noise in the MAP's data term: ``sigma_j^2 tau_j``."""
        return self.noise_std**2 * self.inflation

    def to_dict(self, joints: list[str] | tuple[str, ...]) -> dict:
        """``report.json`` ``hyperparameters``."""
        return {"method": "evidence", "reference": "MacKay 1992; Tipping 2001; Rasmussen & Williams 2006 ch. 5",
                "scales_source": "given" if self.given else "evidence", "scales": dict(self.scales),
                "tolerances": self.tolerances.to_dict(),
                "stated_tolerances": self.stated.to_dict(), "hyperprior_spread": HYPERPRIOR_SPREAD,
                "noise_std": {j: float(v) for j, v in zip(joints, self.noise_std)},
                "inflation": {j: float(v) for j, v in zip(joints, self.inflation)},
                "log_evidence": self.log_evidence, "log_evidence_stated": self.log_evidence_stated,
                "log_bayes_factor_vs_stated": self.log_evidence - self.log_evidence_stated,
                "curve": {g: [[f, v] for f, v in points] for g, points in self.curve.items()}}

    def summary(self) -> str:
        """One console line: the chosen tolerances and what the data prefer over the stated ones."""
        t = self.tolerances
        com = f"com {t.com:.3g} m" if t.com is not None else f"com {t.com_relative:.3g} of the link size"
        how = "given" if self.given else "chosen by the evidence"
        joints = [v for g, v in self.scales.items() if g.startswith(JOINT_GROUP)] or [self.scales.get("joint", 1.0)]
        links = ", ".join(f"{self.scales[g]:.2g}" for g in GROUPS if g != "joint")
        return (f"prior {how}: mass {t.mass:.3g}, {com}, inertia {t.inertia:.3g}, joint terms "
                f"{t.joint:.3g} (stated x {links}, joints x {min(joints):.2g}-{max(joints):.2g}; log Bayes factor "
                f"{self.log_evidence - self.log_evidence_stated:.1f} over the stated)")


def choose_hyperparameters(sums: JointSums, inflation: np.ndarray, groups: PriorGroups, K: np.ndarray, *,
                           details: bool = True, given: Mapping[str, float] | None = None,
                           absorption: np.ndarray | None = None) -> HyperparameterChoice:
    """The group scales and per-joint noise maximizing the evidence plus hyperprior (module docstring), from the stated
    tolerances (``groups.tolerances``) and each joint's least-squares residual variance. ``details``: also the
    evidence at the stated tolerances and the curve (False: NaN and none, for a choice nobody reads). ``given``: the
    scales per group as given (:func:`given_scales`; e.g. a fleet's reference run's, so that runs compared for drift
    share their prior): only the noise is chosen, at them. ``absorption``: per joint, the noise share of the
    inflation (:attr:`Evidence.absorption`; None: all of it)."""
    with threadpool_limits(limits=1, user_api="blas"):  # many small factorizations: BLAS threads only contend
        evidence = Evidence(sums, inflation, groups, K, absorption=absorption)
        return _choose(evidence, details, None if given is None else given_scales(given))


def given_scales(scales: Mapping[str, object]) -> dict[str, float]:
    """Scales per group as given (``identification: hyperparameter_scales:``), checked: ``mass``, ``com``,
    ``inertia`` and the joint terms' (``joint`` for every joint and/or ``joint:<name>`` per joint,
    :func:`dynid_ros.estimation.prior.group_scale`), each a positive finite number (ConfigError naming the
    problem)."""
    joints = [g for g in scales if isinstance(g, str) and g.startswith(JOINT_GROUP) and len(g) > len(JOINT_GROUP)]
    missing = [g for g in GROUPS if g not in scales and not (g == "joint" and joints)]
    unknown = [g for g in scales if g not in GROUPS and g not in joints]
    if missing or unknown:
        raise ConfigError(f"hyperparameter_scales: give the groups {', '.join(GROUPS)} ('joint' for every joint "
                          f"or '{JOINT_GROUP}<name>' per joint)"
                          + (f"; missing {', '.join(missing)}" if missing else "")
                          + (f"; unknown {', '.join(map(str, unknown))}" if unknown else ""))
    out = {}
    for g in [g for g in GROUPS if g in scales] + joints:
        try:
            value = float(scales[g])
        except (TypeError, ValueError):
            value = float("nan")
        if not (np.isfinite(value) and value > 0):
            raise ConfigError(f"hyperparameter_scales: {g} must be a positive number, not {scales[g]!r}")
        out[g] = value
    return out


def _choose(evidence: Evidence, details: bool, given: dict[str, float] | None = None) -> HyperparameterChoice:
    """The choice of :func:`choose_hyperparameters`, by alternation: the scales maximizing the evidence plus hyperprior
    at the noise (L-BFGS-B in ``log s``, its exact gradient), then the noise's own equation at those scales
    (:class:`_NoiseProfile`), until neither moves (:data:`ALTERNATION_TOLERANCE`). The fixed point has the evidence's
    scale equations at the noise and the noise's at the scales: where the noise's equation is the evidence's (no
    structured share, :attr:`Evidence.absorption` the inflation) a coordinate ascent to the joint maximum; with a
    structured share the noise's is the corrected one of :meth:`Evidence.noise_update`, which no objective in the
    noise maximizes, so the scales are not chosen on the profile of the evidence along it (whose gradient would need
    the noise's derivative). With ``given`` scales, the noise at them."""
    sums, groups = evidence.sums, evidence.groups
    n_groups = len(groups.names)
    floor = noise_floor(sums)
    box = [tuple(np.log(SCALE_RANGE))] * n_groups
    noise_of = _NoiseProfile(evidence, np.maximum(sums.least_squares_noise(), floor), floor)
    if given is not None:
        return _at(evidence, noise_of, np.array([group_scale(given, g) for g in groups.names]), details, given=True)
    x = np.zeros(n_groups)
    noise = noise_of(np.exp(x))
    moves: list[float] = []
    for _ in range(ALTERNATIONS):
        found = scipy.optimize.minimize(_negative_objective, x, args=(evidence, noise), jac=True, method="L-BFGS-B",
                                        bounds=box, options=CONVERGED)
        updated = noise_of(np.exp(found.x))
        moves.append(max(float(np.max(np.abs(found.x - x))), float(np.max(np.abs(np.log(updated / noise))))))
        x, noise = found.x, updated
        if converged(moves, ALTERNATION_TOLERANCE):
            break
    return _at(evidence, noise_of, np.exp(x), details)


def _negative_objective(x: np.ndarray, evidence: Evidence, noise: np.ndarray) -> tuple[float, np.ndarray]:
    """Minus :meth:`Evidence.objective` at scales ``exp(x)`` and ``noise``, and its gradient in ``x``."""
    try:
        value, gradient = evidence.objective_and_gradient(np.exp(x), noise)
    except np.linalg.LinAlgError:
        return 1e300, np.zeros(x.size)
    return -value, -gradient[:x.size]


def _at(evidence: Evidence, noise_of: _NoiseProfile, scales: np.ndarray, details: bool, given: bool = False
        ) -> HyperparameterChoice:
    """The choice at ``scales``: the noise there, the evidence, and (``details``) the stated's and the curve."""
    groups, n_groups = evidence.groups, len(evidence.groups.names)
    noise = noise_of(scales)
    best = evidence.objective(scales, noise)
    chosen = {g: float(s) for g, s in zip(groups.names, scales)}
    if not details:
        return HyperparameterChoice(chosen, groups.tolerances.scaled(chosen), groups.tolerances, np.sqrt(noise),
                                    evidence.inflation.copy(), float(best), float("nan"), {}, given)
    ones = np.ones(n_groups)
    stated = evidence.objective(ones, noise_of(ones))
    curve = {}
    for i, g in enumerate(groups.names):
        points = []
        for factor in CURVE_FACTORS:
            varied = scales.copy()
            varied[i] *= factor
            points.append((float(factor), float(evidence.objective(varied, noise) - best)))
        curve[g] = points
    return HyperparameterChoice(chosen, groups.tolerances.scaled(chosen), groups.tolerances, np.sqrt(noise),
                                evidence.inflation.copy(), float(best), float(stated), curve, given)


def noise_floor(sums: JointSums) -> np.ndarray:
    """Per joint, the smallest noise variance: :data:`~dynid_ros.estimation.residual_model.NOISE_FLOOR` of its RMS
    torque, squared (below it a residual is round-off)."""
    return (NOISE_FLOOR * np.sqrt(np.maximum(sums.square, 1e-300) / np.maximum(sums.count, 1.0))) ** 2


def converged(steps: list[float], tolerance: float) -> bool:
    """Whether a fixed-point iteration whose steps so far were ``steps`` is done: its last step below ``tolerance``,
    or none of its last :data:`STALLED_STEPS` smaller than every step before them (a linearly converging iteration's
    steps shrink by a constant factor until its round-off, where they stop shrinking)."""
    if steps[-1] < tolerance:
        return True
    return len(steps) > STALLED_STEPS and min(steps[-STALLED_STEPS:]) >= min(steps[:-STALLED_STEPS])


class _NoiseProfile:
    """The evidence's noise at given scales: the fixed point of :meth:`Evidence.noise_update` (never below
    ``floor``), iterated from the last one found until it moves less than :data:`NOISE_TOLERANCE` or reaches its
    round-off (:func:`converged`)."""

    def __init__(self, evidence: Evidence, start: np.ndarray, floor: np.ndarray) -> None:
        self.evidence, self.last, self.floor = evidence, np.asarray(start, dtype=float), floor

    def __call__(self, scales: np.ndarray) -> np.ndarray:
        noise, steps = self.last, []
        for _ in range(NOISE_ITERATIONS):
            updated = np.maximum(self.evidence.noise_step(scales, noise), self.floor)
            steps.append(float(np.max(np.abs(np.log(updated / noise)))))
            noise = updated
            if converged(steps, NOISE_TOLERANCE):
                break
        self.last = noise
        return noise


def used_scales(recorded: Mapping[str, object] | None) -> dict[str, float]:
    """The prior's scales per group a result's estimate used, from its ``report.json`` ``hyperparameters``
    (:meth:`HyperparameterChoice.to_dict` with the wide-prior check's ``cross_validation``): the chosen or given
    scales, times the check's wide factor where it kept the wide-prior limit; the stated prior (every scale 1) for a
    result without them (``hyperparameters: stated``, an estimator without the prior's groups)."""
    if not recorded:
        return {g: 1.0 for g in GROUPS}
    check = recorded.get("cross_validation") or {}
    factor = float(check.get("wide_factor", 1.0)) if check.get("chosen") == "wide" else 1.0
    return {g: float(v) * factor for g, v in given_scales(recorded["scales"]).items()}


def shared_scales(scales: Mapping[str, float]) -> dict[str, float]:
    """The prior's scales runs that are compared share (``dynid batch``'s bags, the runs ``dynid drift`` reads, a
    result directory given to ``--hyperparameter-scales``), from the reference run's :func:`used_scales`: every group
    (link masses, first moments, inertias, the joint terms ``joint``, ``joint:<name>``) as the reference's evidence
    chose it where that is wider than the stated tolerance, else the stated tolerance (scale at least 1).

    A scale below 1 is the evidence's Occam factor on the reference run alone (MacKay 1992 section 3; down to the box's
    ninth, :data:`SCALE_RANGE`): the URDF agreed with that run's data. It says nothing about how far a later run may
    be from the URDF, which is what a shared prior has to allow for, since the runs are compared to find what changed:
    friction grows with wear, temperature and lubricant (Wang et al. 2019 monitor it) and a payload or tool comes on.
    Held at the reference's tighter prior, a later run's change is pushed into parameters that did not change, or
    shrunk below the drift test's threshold (measured on test/fleet/test_drift.py's nights, the reference's evidence
    choosing mass x0.20, com x0.13, inertia x0.19 and the joints x0.11-0.30: with the joint terms at those scales
    joint 2's Coulomb friction growing 0.2 -> 0.4 N m was not flagged; with the joint terms at 1 and the link groups at
    those scales the 0.5 kg payload on link 3 was fitted as link 3 at 2.12x its CAD mass in the payload's first
    night (9.3 % error, joint 2's residual 96 % a function of its position) and link 2 at 0.72x in the next, so drift
    flagged l2 m, mx, Iyy, Izz and j3 Ia, which never changed). The user's stated tolerance is the bound on how far
    the robot may move that the shared prior assumes; wider scales the reference's evidence chose (a URDF the data
    contradict) are kept."""
    return {g: max(float(s), 1.0) for g, s in scales.items()}
