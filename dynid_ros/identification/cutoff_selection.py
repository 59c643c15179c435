"""The filter cutoff chosen from the data (processing option ``cutoff_hz: auto``), or the bandwidth rule's checked by
it (``checked``, the default): the excitation's bandwidth gives the candidates, time-blocked cross-validation on the
leading window of the identification data picks one, at streaming cost.

A cutoff must pass the motion (and the torque it causes) and stop the noise; where that lies depends on the
excitation, the robot and its sensors. The bandwidth rule (:mod:`dynid_ros.data.bandwidth`) sees the motion only: it
picked 4 Hz on a 100 Hz cobot whose data wanted 10-20 Hz. Cross-validation sees the noise too. The candidates are
multiples of the motion's bandwidth ``f_b``, measured as the bandwidth rule measures it
(:func:`~dynid_ros.data.bandwidth.leading_bandwidth`: the frequency below which
:data:`~dynid_ros.data.bandwidth.BANDWIDTH_ENERGY` of the joint velocities' energy lies, the mean removed, on the
resampling grid): ``f_b * 2^k`` for :data:`MULTIPLES`, below :data:`NYQUIST_SHARE` of the
sample rate. For each candidate the leading window (the first ``BANDWIDTH_WINDOW_S`` seconds of the identification
window, the samples the bandwidth is measured on: read once, kept for the first chunk of a streamed bag, so memory
and time do not grow with the recording) is processed as the identification would process it, split into
:data:`BLOCKS` contiguous time blocks, and only the per-block sums ``W_k^T W_k``, ``W_k^T tau_k``, ``W_k^T raw_k``,
``raw_k^T raw_k`` of the base regressor, filtered and recorded torque are kept. Each block is predicted by the
least-squares fit of the others' sums (blocked cross-validation for dependent data: neighbouring samples are alike, so
a random split would score the noise as signal; Roberts et al. 2017, Bergmeir & Benítez 2012); the score is the
relative error against the recorded, unfiltered torque (Sousa & Cortesão 2014 eq. 84), as the held-out error is
measured, from the sums alone: ``||raw_k - W_k beta||^2 = raw_k^T raw_k - 2 beta^T W_k^T raw_k + beta^T W_k^T W_k
beta``. The candidate with the smallest score wins; ties (within :data:`TIE`) go to the lower cutoff. The decimation
follows the cutoff: at least ``DECIMATION_FACTOR`` times it (the configured rate when that is more), never above the
sample rate. Rows slower than ``min_speed`` are left out as in the fit. Where the identification estimates effort
gains (:mod:`dynid_ros.estimation.effort_gains`), each candidate is scored with the gains it keeps, in the
effort's units: without them a gain error dominated every candidate's score and decided the cutoff (a 15 % sensor
gain on two Panda joints: 2.2 Hz chosen, held out 1.02 % against the bandwidth rule's 0.68 %; with them 35.7 Hz,
0.63 %; ``benchmarks/default_vs_ols.py``). Where ``model: position_torque`` names joints (a spring, a cable the
user knows of: :mod:`dynid_ros.identification.position_torque_selection` gives them the term), each candidate is
scored with their terms (:func:`scored_terms`), profiled with their prior as the identification profiles them.
A motion whose bandwidth leaves no candidate below the cap gets the cap, as the bandwidth rule does.

``checked`` scores the bandwidth rule's cutoff (:mod:`dynid_ros.data.bandwidth`) beside the candidates and keeps it
unless the pick predicts better, overall and significantly over the blocks (:class:`RuleCheck`): each block's
squared error as a share of the recorded torque's energy (so cutoffs decimated to different rates compare), the
per-block log ratios ``log(rule_k / pick_k)`` (how many times smaller the pick's error is, whatever the block's
size) and their paired one-sided t-test at :data:`CHECK_LEVEL` (Student's t with ``BLOCKS - 1`` degrees of freedom;
Dietterich 1998 on paired tests of cross-validated predictors). A pick that is better overall but in part of the
motion only, or by the leading window's noise, has log ratios of both signs or a spread as large as their mean:
``auto``'s free choice lost to the rule held out on 3 of the 35 data sets of ``benchmarks/default_vs_ols.py`` (a
joint spring on the UR5e: 1.53 % against 1.34 %, t = 0.94; the coupled wrist read without its coupling: 8.05 %
against 7.96 %, t = 1.05; a joint spring on the slow Panda at 100 Hz: 2.46 % against 0.54 %, t = -0.35); where it
won most (the coupled wrist in motor coordinates: 0.95 % against 1.30 %) t = 18.4. Measured
(``benchmarks/cutoff_guard.py``, the 35 sets): mean held out 1.109 % (the rule 1.192 %, ``auto`` 1.169 %), worse
than the rule on none, better on 28. The previous check, better in every one of the 4 blocks (a sign test, 1/16
under no difference), also lost nowhere but moved on 8 only (mean 1.155 %): a recording's first block holds the
approach from rest, whose slow motion suits a low cutoff, and vetoed the slow 100 Hz runs (the cobot's case: the
rule's 3.8 Hz against 14.3 Hz, 1.63 % against 1.49 % on the UR5e with Stribeck friction, where a plain 10 Hz least
squares has 1.52 %, measured with a 10 Hz cutoff outside the benchmark). The level (``python
benchmarks/cutoff_guard.py --levels`` replays the stored sums): t > 1 (one standard error of the mean ratio) followed
``auto`` into the coupled wrist's loss (t = 1.05); 16 % (t > 1.19) lost nowhere, mean 1.108 %, with less margin to
that case; 5 % moved on 13 sets only (mean 1.142 %), 2.5 % on 2.

Measured (``benchmarks/cutoff_rule.py``): the choice equals that of cross-validating the whole window on every data
set shorter than the leading window, in about a tenth of the time (the sums, not a least-squares fit of every
candidate's whole regressor four times).
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable

import numpy as np
import scipy.stats
from threadpoolctl import threadpool_limits

from dynid_ros.data.bandwidth import (
    BANDWIDTH_WINDOW_S,
    DECIMATION_FACTOR,
    NYQUIST_SHARE,
    DerivedCutoff,
    leading_bandwidth,
    position_bandwidth,
)
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.signal_processing import CutoffChooser, ProcessedData, ProcessingOptions, leading_samples, process
from dynid_ros.dynamics.base_parameters import BaseParameters
from dynid_ros.dynamics.regressor import regressor_chunks
from dynid_ros.dynamics.row_chunks import RowChunks
from dynid_ros.estimation.effort_gains import choose_gains
from dynid_ros.estimation.hyperparameters import Evidence, JointSums, choose_hyperparameters
from dynid_ros.estimation.normal_equations import NormalEquations
from dynid_ros.estimation.position_torque import PositionSeries, profiled_equations, term_torques
from dynid_ros.estimation.prior import PriorGroups
from dynid_ros.estimation.residual_model import integrated_autocorrelation_time
from dynid_ros.estimation.time_blocks import BLOCKS, time_blocks
from dynid_ros.robot.model import RobotModel

MULTIPLES = (2, 4, 8, 16, 32, 64)
"""Candidate cutoffs, in multiples of the motion's bandwidth."""
TIE = 1e-3
"""Scores within this relative margin of the best are a tie (the lower cutoff wins)."""
CHECK_LEVEL = 0.10
"""The one-sided level of ``checked``'s paired t-test (module docstring)."""
CHECK_T = float(scipy.stats.t.ppf(1.0 - CHECK_LEVEL, BLOCKS - 1))
"""Its critical value: 1.64 for 4 blocks."""


@dataclasses.dataclass
class CutoffChoice:
    """The chosen cutoff [Hz], the motion's bandwidth [Hz], the score of every candidate (cutoff -> relative
    cross-validated error) and the seconds of data they were measured on."""

    cutoff_hz: float
    bandwidth_hz: float
    scores: dict[float, float]
    window_s: float = BANDWIDTH_WINDOW_S
    posterior: bool = False
    """Whether the posterior mean at the evidence's hyperparameters was scored (else least squares)."""
    check: RuleCheck | None = None
    """``checked``: the bandwidth rule's cutoff against the cross-validation's pick (None for ``auto``)."""

    def to_dict(self) -> dict:
        """The record of ``processing.cutoff_choice`` (``parameters.yaml``, ``report.json``, the report)."""
        record = {"rule": "auto", "cutoff_hz": self.cutoff_hz, "bandwidth_hz": self.bandwidth_hz,
                  "window_s": self.window_s, "blocks": BLOCKS,
                  "estimator": "posterior mean at the evidence's hyperparameters" if self.posterior
                  else "least squares",
                  "description": f"chosen by time-blocked cross-validation on the first {self.window_s:.3g} s "
                                 f"(bandwidth {self.bandwidth_hz:.3g} Hz)",
                  "scores": {f"{k:.4g}": v for k, v in self.scores.items()}}
        if self.check is not None:
            record.update(rule="checked", description=self.check.description(self.window_s),
                          bandwidth_rule=self.check.to_dict())
        return record


@dataclasses.dataclass(frozen=True)
class RuleCheck:
    """``cutoff_hz: checked``: the bandwidth rule's cutoff and the cross-validation's pick, each block's error of
    both (squared, relative to the recorded torque's energy) and whether the pick replaced the rule's cutoff."""

    rule_cutoff_hz: float
    pick_cutoff_hz: float
    rule: BlockErrors
    pick: BlockErrors
    moved: bool

    @classmethod
    def of(cls, rule_cutoff_hz: float, pick_cutoff_hz: float, rule: BlockErrors, pick: BlockErrors) -> RuleCheck:
        """The check of the module docstring: the pick replaces the rule's cutoff when it predicts better in all,
        beyond :data:`TIE`, and the blocks' paired t-test says so at :data:`CHECK_LEVEL`."""
        check = cls(float(rule_cutoff_hz), float(pick_cutoff_hz), rule, pick, False)
        moved = bool(check.t_statistic > CHECK_T and pick.relative < rule.relative * (1.0 - TIE))
        return dataclasses.replace(check, moved=moved)

    @property
    def log_ratios(self) -> np.ndarray:
        """Per block, ``log(rule's share / pick's share)``: above 0 where the pick predicts better."""
        tiny = np.finfo(float).tiny
        return np.log(np.maximum(self.rule.shares, tiny) / np.maximum(self.pick.shares, tiny))

    @property
    def t_statistic(self) -> float:
        """The paired t statistic of :attr:`log_ratios`: their mean over its standard error (+-inf or 0 where the
        blocks agree exactly)."""
        ratios = self.log_ratios
        spread = float(np.std(ratios, ddof=1)) if ratios.size > 1 else 0.0
        mean = float(np.mean(ratios))
        if spread <= 1e-12 * max(abs(mean), 1e-300):
            return 0.0 if mean == 0.0 else float(np.copysign(np.inf, mean))
        return float(mean / (spread / np.sqrt(ratios.size)))

    def description(self, window_s: float) -> str:
        """How the cutoff was found, in words (the report's filter line)."""
        versus = (f"{self.pick_cutoff_hz:.3g} Hz: {100 * self.pick.relative:.3g} % against "
                  f"{100 * self.rule.relative:.3g} %, better in {self.better_blocks} of {BLOCKS} blocks, "
                  f"t = {self.t_statistic:.3g}")
        if self.moved:
            return (f"chosen by time-blocked cross-validation on the first {window_s:.3g} s, which predicts better "
                    f"than the bandwidth rule's {self.rule_cutoff_hz:.3g} Hz over the blocks ({versus} > "
                    f"{CHECK_T:.3g})")
        return (f"the bandwidth rule's, checked by time-blocked cross-validation on the first {window_s:.3g} s: "
                f"no cutoff predicts significantly better over the blocks (the best, {versus}, needed > "
                f"{CHECK_T:.3g})")

    @property
    def better_blocks(self) -> int:
        """The blocks in which the pick predicts better than the rule's cutoff."""
        return int(np.sum(self.pick.shares < self.rule.shares))

    def to_dict(self) -> dict:
        """``cutoff_choice.bandwidth_rule`` (``t_statistic`` None where it is infinite: every block's ratio alike)."""
        t = self.t_statistic
        return {"cutoff_hz": self.rule_cutoff_hz, "score": self.rule.relative, "pick_cutoff_hz": self.pick_cutoff_hz,
                "pick_score": self.pick.relative, "better_blocks": self.better_blocks,
                "t_statistic": t if np.isfinite(t) else None, "t_critical": CHECK_T, "level": CHECK_LEVEL,
                "test": "paired one-sided t-test of the blocks' log error ratios", "replaced": self.moved,
                "block_shares": {"rule": self.rule.shares.tolist(), "pick": self.pick.shares.tolist()}}


@dataclasses.dataclass(frozen=True)
class BlockErrors:
    """Each time block's squared prediction error (weighted per joint as scored) and the recorded torque's weighted
    energy of all blocks; ``relative``: the cross-validated relative error."""

    squared: np.ndarray
    energy: float

    @property
    def shares(self) -> np.ndarray:
        """Each block's squared error over the energy: comparable between cutoffs whose decimation (so whose number
        of rows) differs."""
        return self.squared / self.energy if self.energy > 0 else np.zeros_like(self.squared)

    @property
    def relative(self) -> float:
        """The cross-validated relative error: the root of the blocks' summed squared error over the energy."""
        return float(np.sqrt(self.squared.sum() / self.energy)) if self.energy > 0 else 0.0



def with_cutoff(options: ProcessingOptions, cutoff_hz: float, rate_hz: float) -> ProcessingOptions:
    """``options`` with ``cutoff_hz`` and a decimation that keeps ``DECIMATION_FACTOR`` samples per cutoff period."""
    values = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
    values["cutoff_hz"] = float(cutoff_hz)
    if values["decimate_hz"] is not None:
        values["decimate_hz"] = float(min(max(values["decimate_hz"], DECIMATION_FACTOR * cutoff_hz), rate_hz))
    return ProcessingOptions(**values)


PriorOf = Callable[[ProcessedData], PriorGroups]
"""The stated prior of an identification for processed data (its joint terms' scales depend on them)."""


def cutoff_chooser(model: RobotModel, base: BaseParameters, prior_of: PriorOf | None = None, *,
                   gains: bool = False, position_torque: str | list[str] = "off") -> CutoffChooser:
    """The chooser of ``cutoff_hz: auto`` for :func:`dynid_ros.data.signal_processing.process_rows`: the leading
    window's samples (the model's joints, in its order) scored with ``model``'s base regressor (module docstring);
    ``prior_of``: the identification's prior (the posterior mean is scored), None: least squares is; ``gains``: the
    identification estimates effort gains, and each candidate is scored with the gains it keeps;
    ``position_torque``: the identification's ``model: position_torque`` (:func:`scored_terms`)."""

    def choose(t: np.ndarray, fields: list, options: ProcessingOptions, rate: float, rule: DerivedCutoff | None = None
               ) -> tuple[ProcessingOptions, dict]:
        position, velocity, effort = fields
        series = JointStateSeries(list(model.joints), np.asarray(t, dtype=float), position, velocity, effort)
        chosen, choice = choose_cutoff(series, options, model, base, rate, prior_of, gains=gains,
                                       position_torque=position_torque,
                                       rule_cutoff_hz=None if rule is None else rule.cutoff_hz)
        return chosen, choice.to_dict()

    return choose


def choose_cutoff(series: JointStateSeries, options: ProcessingOptions, model: RobotModel, base: BaseParameters,
                  rate_hz: float | None = None, prior_of: PriorOf | None = None, *, gains: bool = False,
                  position_torque: str | list[str] = "off", rule_cutoff_hz: float | None = None
                  ) -> tuple[ProcessingOptions, CutoffChoice]:
    """The processing options with the cutoff chosen by blocked cross-validation on the first ``BANDWIDTH_WINDOW_S``
    seconds of ``series`` (module docstring); ``rate_hz``: the rate the data are resampled to (default the options'
    or the median); ``prior_of``, ``gains``, ``position_torque``: as :func:`cutoff_chooser`; ``rule_cutoff_hz``: the
    bandwidth rule's cutoff, kept unless the pick predicts better over the blocks (``checked``, :class:`RuleCheck`)."""
    t = np.asarray(series.t, dtype=float)
    stop = leading_samples(t)
    series = series.window(None, t[stop - 1] - t[0]) if stop < t.size else series
    t = np.asarray(series.t, dtype=float)
    rate = rate_hz or options.rate_hz or 1.0 / float(np.median(np.diff(t)))
    if series.velocity is None or options.velocity_source == "differentiate":  # the motion seen by the filter
        bandwidth = position_bandwidth(t, series.position, options.order, rate, window_s=np.inf)
    else:
        bandwidth = leading_bandwidth(t, series.velocity, rate)  # the bandwidth rule's measure, on its samples
    candidates = [bandwidth * m for m in MULTIPLES if bandwidth * m < NYQUIST_SHARE * rate]
    candidates = candidates or [NYQUIST_SHARE * rate]  # a motion near half the rate: the bandwidth rule's cap
    if rule_cutoff_hz is not None and not any(np.isclose(c, rule_cutoff_hz) for c in candidates):
        candidates.append(float(rule_cutoff_hz))
    with threadpool_limits(limits=1, user_api="blas"):  # many small products: BLAS threads only contend
        errors = {c: candidate_errors(process(series, with_cutoff(options, c, rate)), model, base, prior_of,
                                      gains=gains, position_torque=position_torque) for c in candidates}
    scores = {c: e.relative for c, e in errors.items()}
    best = min(scores.values())
    chosen = min(c for c, s in scores.items() if s <= best * (1.0 + TIE))
    check = None
    if rule_cutoff_hz is not None:
        rule = next(c for c in candidates if np.isclose(c, rule_cutoff_hz))
        check = RuleCheck.of(rule, chosen, errors[rule], errors[chosen])
        chosen = chosen if check.moved else rule
    return with_cutoff(options, chosen, rate), CutoffChoice(chosen, bandwidth, scores, float(t[-1] - t[0]),
                                                            prior_of is not None, check)


@dataclasses.dataclass
class BlockSums:
    """Per time block ``k`` and joint ``j``: the normal equations of the base regressor's rows ``W_kj`` (followed by
    the columns of the position-dependent torques scored with it, :class:`TermColumns`) with the filtered torque
    (``fit[k][j]``, the fit's target) and with the recorded one (``check[k][j]``, what a prediction is scored
    against)."""

    fit: list[list[NormalEquations]]
    check: list[list[NormalEquations]]

    def training(self, held: int) -> list[NormalEquations]:
        """Per joint, the ``fit`` sums of every block but ``held`` (-1: of every block)."""
        return [functools.reduce(operator.add, [self.fit[k][j] for k in range(BLOCKS) if k != held])
                for j in range(len(self.fit[0]))]


@dataclasses.dataclass
class TermColumns:
    """The position-dependent torques (:mod:`dynid_ros.estimation.position_torque`) a candidate is scored with:
    their series, their columns after the ``n_base`` base columns, in the series' order."""

    series: list[PositionSeries]
    n_base: int

    @property
    def slices(self) -> list[slice]:
        """Each series' columns in the extended parameter vector."""
        ends = np.cumsum([self.n_base] + [t.columns for t in self.series])
        return [slice(int(a), int(b)) for a, b in zip(ends[:-1], ends[1:])]

    def rows(self, q: np.ndarray) -> np.ndarray:
        """(samples * n_dof, columns) the terms' columns, each on its joint's rows, zero elsewhere."""
        n_samples, n_dof = q.shape
        out = np.zeros((n_samples, n_dof, sum(t.columns for t in self.series)))
        for t, cols in zip(self.series, self.slices):
            out[:, t.index, cols.start - self.n_base:cols.stop - self.n_base] = t.basis(q[:, t.index])
        return out.reshape(n_samples * n_dof, -1)

    def torque(self, beta: np.ndarray, q: np.ndarray) -> np.ndarray:
        """(samples, n_dof) the terms' torque at the extended parameters ``beta``."""
        return term_torques(self.series, [beta[cols] for cols in self.slices], q)


def block_sums(data: ProcessedData, model: RobotModel, base: BaseParameters, min_speed: float = 0.0,
               terms: TermColumns | None = None, w_b: RowChunks | None = None) -> BlockSums:
    """The per-block, per-joint sums of processed ``data``, the regressor a block of rows at a time (``w_b``: its
    chunks when the caller has them, whose cache a later pass then reuses), followed by the columns of ``terms``; the
    rows slower than ``min_speed`` left out."""
    n_samples, n_dof = data.tau.shape
    rows = np.repeat(time_blocks(n_samples), n_dof)
    if min_speed > 0:
        rows = np.where(np.abs(data.dq).reshape(-1) >= min_speed, rows, -1)
    joint = np.tile(np.arange(n_dof), n_samples)
    tau, raw = data.tau.reshape(-1), data.tau_raw.reshape(-1)
    extra = terms.rows(data.q) if terms is not None else np.zeros((n_samples * n_dof, 0))
    empty = NormalEquations.of(np.zeros((0, base.n_base + extra.shape[1])), np.zeros(0))
    out = BlockSums([[empty] * n_dof for _ in range(BLOCKS)], [[empty] * n_dof for _ in range(BLOCKS)])
    if w_b is None:
        w_b = regressor_chunks(model, base.layout, data.q, data.dq, data.ddq, base.independent)
    for first, chunk in w_b.chunks():
        span = slice(first, first + chunk.shape[0])
        chunk = np.hstack([chunk, extra[span]])
        for k in range(BLOCKS):
            for j in range(n_dof):
                mine = (rows[span] == k) & (joint[span] == j)
                if mine.any():
                    out.fit[k][j] = out.fit[k][j] + NormalEquations.of(chunk[mine], tau[span][mine])
                    out.check[k][j] = out.check[k][j] + NormalEquations.of(chunk[mine], raw[span][mine])
    return out


Fit = Callable[[list[NormalEquations]], np.ndarray]
"""``fit(per-joint sums) -> beta``: an estimator of the base parameters from per-joint normal equations."""


def least_squares_fit(training: list[NormalEquations]) -> np.ndarray:
    """OLS from the per-joint sums (columns scaled to unit norm: the Gram's conditioning is squared)."""
    total = functools.reduce(operator.add, training)
    scale = np.sqrt(np.maximum(np.diag(total.gram), 1e-300))
    return np.linalg.lstsq(total.gram / np.outer(scale, scale), total.projection / scale, rcond=1e-12)[0] / scale


def block_errors(sums: BlockSums, fit: Fit = least_squares_fit, joint_weights: np.ndarray | None = None
                 ) -> BlockErrors:
    """Each block predicted by ``fit`` of the others, from the sums (module docstring): ``||raw_kj - W_kj beta||^2``
    is block ``k``'s ``check`` residual at the others' solution; ``joint_weights``: each joint's squared residual and
    energy times its weight (the effort's units when the torque is the effort times a gain: ``1 / g_j^2``)."""
    n_dof = len(sums.check[0])
    w = np.ones(n_dof) if joint_weights is None else np.asarray(joint_weights, dtype=float)
    squared = np.zeros(BLOCKS)
    for k in range(BLOCKS):
        beta = fit(sums.training(k))
        squared[k] = sum(w[j] * c.residual_norm2(beta) for j, c in enumerate(sums.check[k]))
    energy = sum(w[j] * c.b_norm2 for block in sums.check for j, c in enumerate(block))
    return BlockErrors(squared, float(energy))


def candidate_errors(data: ProcessedData, model: RobotModel, base: BaseParameters, prior_of: PriorOf | None = None,
                     *, gains: bool = False, position_torque: str | list[str] = "off") -> BlockErrors:
    """The cross-validated errors of the processed ``data`` of one candidate cutoff: of least squares, or, with the
    identification's prior (``prior_of``), of the posterior mean at the hyperparameters the evidence chooses on the
    whole window (:mod:`dynid_ros.estimation.hyperparameters`; each joint's residual counted with its integrated
    autocorrelation time): short or poorly excited data over-fit least squares, which would prefer the cutoff that
    suits its over-fit. With ``gains`` the candidate's effort gains are chosen as the identification chooses them
    (:func:`~dynid_ros.estimation.effort_gains.choose_gains`) and, where kept, the candidate is scored on the
    torque they give, in the effort's units: a gain error the model cannot absorb would otherwise dominate every
    candidate's error and decide the cutoff. ``position_torque``: the identification's ``model: position_torque``;
    the terms of the joints it names are scored with the candidate (:func:`scored_terms`)."""
    min_speed = data.options.min_speed if data.options is not None else 0.0
    weights = None
    w_b = regressor_chunks(model, base.layout, data.q, data.dq, data.ddq, base.independent)  # one per candidate
    if gains:
        data, weights = _with_kept_gains(data, w_b, min_speed)
    keep = np.abs(data.dq) >= min_speed if min_speed > 0 else np.ones(data.tau.shape, dtype=bool)
    terms = scored_terms(data, keep, position_torque, model.joints, base.n_base)
    sums = block_sums(data, model, base, min_speed, terms, w_b)
    if prior_of is None:
        return block_errors(sums, joint_weights=weights)
    return block_errors(sums, _posterior(data, w_b, sums, terms, prior_of, base, keep), weights)


def _posterior(data: ProcessedData, w_b: RowChunks, sums: BlockSums, terms: TermColumns | None, prior_of: PriorOf,
               base: BaseParameters, keep: np.ndarray) -> Fit:
    """The posterior mean of the sums at the hyperparameters the evidence chooses on the whole window (each joint's
    residual of least squares counted with its integrated autocorrelation time), the terms' coefficients profiled
    with their prior (:func:`_profiling`) and appended."""
    whole = sums.training(-1)
    beta = least_squares_fit(whole)
    residual = data.tau - (w_b @ beta[:base.n_base]).reshape(data.tau.shape)
    if terms is not None:
        residual -= terms.torque(beta, data.q)
    inflation = np.array([integrated_autocorrelation_time(residual[:, j]) for j in range(residual.shape[1])])
    profiled = _profiling(terms, base.n_base, residual, keep, data.tau)
    groups = prior_of(data)
    choice = choose_hyperparameters(JointSums.of(profiled(whole)[0]), inflation, groups, base.K, details=False)
    scales = np.array([choice.scales[g] for g in groups.names])

    def posterior(training: list[NormalEquations]) -> np.ndarray:
        reduced, coefficients = profiled(training)
        beta = Evidence(JointSums.of(reduced), inflation, groups, base.K).posterior_mean(scales,
                                                                                         choice.noise_std**2)
        return np.concatenate([beta] + [c(beta) for c in coefficients])

    return posterior


def scored_terms(data: ProcessedData, keep: np.ndarray, setting: str | list[str], joints: tuple[str, ...] | list[str],
                 n_base: int) -> TermColumns | None:
    """The position-dependent torques a candidate is scored with: those of the joints ``model: position_torque``
    names (the identification gives them the term without a test), over the fit's samples ``keep`` (samples,
    n_dof); None for ``auto`` and ``off``. Without the term a spring's torque is left to the rigid body's columns
    and every candidate's error is the misfit's (a 6 N m/rad spring on a Panda joint: 1.82 % against 0.75 % without
    the spring, 0.75 % with the term; ``test_cutoff_selection.py``). With ``auto`` the identification tests the
    joints its own estimate's residual flags on the whole window; on the leading window neither the least-squares
    nor the posterior residual flagged that spring (share explained by the joint's position 0.39-0.48, the flag's
    threshold 0.5). Scoring the term of every joint instead (tried, not kept) moved some choices of
    ``benchmarks/default_vs_ols.py`` to a lower cutoff, each worse held out, and improved none."""
    if isinstance(setting, str):
        return None
    indices = [list(joints).index(j) for j in setting]
    moving = [j for j in indices if keep[:, j].any() and np.ptp(data.q[keep[:, j], j]) > 0]
    if not moving:
        return None
    return TermColumns([PositionSeries.over(joints[j], j, data.q[keep[:, j], j]) for j in moving], n_base)


Profiling = Callable[[list[NormalEquations]], tuple[list[NormalEquations], list[Callable[[np.ndarray], np.ndarray]]]]
"""``profiling(per-joint extended sums) -> (per-joint base sums, each term's coefficients given beta)``."""


def _profiling(terms: TermColumns | None, n_base: int, residual: np.ndarray, keep: np.ndarray, tau: np.ndarray
               ) -> Profiling:
    """The terms' coefficients profiled out of per-joint sums with their Gaussian prior, as the identification
    profiles them (:func:`~dynid_ros.estimation.position_torque.profiled_equations`): each coefficient's standard
    deviation the joint's RMS torque, the noise the joint's residual variance with the term."""
    series = [] if terms is None else list(zip(terms.series, terms.slices))
    ridges = [float(np.mean(residual[keep[:, t.index], t.index] ** 2) / max(np.mean(tau[:, t.index] ** 2), 1e-300))
              for t, _ in series]

    def profiled(training: list[NormalEquations]) -> tuple[list[NormalEquations], list]:
        reduced = [NormalEquations(e.gram[:n_base, :n_base], e.projection[:n_base], e.b_norm2, e.rows)
                   for e in training]
        coefficients = []
        for (t, cols), ridge in zip(series, ridges):
            reduced[t.index], c = profiled_equations(training[t.index], n_base, cols, ridge)
            coefficients.append(c)
        return reduced, coefficients

    return profiled


def _with_kept_gains(data: ProcessedData, w_b: RowChunks, min_speed: float) -> tuple[ProcessedData, np.ndarray | None]:
    """``data`` with its effort times the gains :func:`choose_gains` keeps on it (``w_b``: its base regressor), and
    each joint's weight ``1 / g^2`` back to the effort's units; ``data`` as it is and None where none are kept."""
    n_dof = data.tau.shape[1]
    rows = np.abs(data.dq).reshape(-1) >= min_speed if min_speed > 0 else np.ones(data.tau.size, dtype=bool)
    choice = choose_gains(w_b, data.tau, data.tau_raw, rows, n_dof)
    if choice is None or not choice.kept:
        return data, None
    g = np.asarray(choice.gains, dtype=float)
    return dataclasses.replace(data, tau=data.tau * g, tau_raw=data.tau_raw * g), 1.0 / g**2
