"""Identification from joint states whose effort is ``|tau|`` (Pennese et al. 2021 Algorithm 1): the sign of
each torque segment by the beam search of :mod:`dynid_ros.estimation.torque_signs`, then the linear
identification on the signed torque (``dynid identify --abs-effort``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dynid_ros.data.bag_stream import EffortCheck, scan_joint_states
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.signal_processing import ProcessedData, ProcessingOptions
from dynid_ros.dynamics.base_parameters import BaseParameters, compute_base_parameters
from dynid_ros.dynamics.bounds import Bounds
from dynid_ros.dynamics.regressor import torques
from dynid_ros.errors import ConfigError, DataError
from dynid_ros.estimation.fit_quality import relative_error
from dynid_ros.estimation.torque_signs import (
    FeasibleResidual,
    SignSearch,
    SignSearchOptions,
    find_segments,
    noise_levels,
    search_signs,
    thresholds,
)
from dynid_ros.identification.effort_unit import require_torque
from dynid_ros.identification.identification_result import IdentificationResult
from dynid_ros.identification.identify import (
    effort_gains,
    identified_model,
    in_memory_warnings,
    read_series,
    scan_gains,
    scanned_model,
    streams,
)
from dynid_ros.identification.linear_identification import identify_linear, identify_processed, processed_scan
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.identification.timing import StageTimer
from dynid_ros.robot.model import RobotModel, nominal_parameters
from dynid_ros.robot.parameters import ParameterLayout


class SignedTarget:
    """``fit_target`` of :func:`~dynid_ros.identification.linear_identification.identify_linear`: estimates the
    signs, returns the signed rows."""

    def __init__(self, model: RobotModel, layout: ParameterLayout, base: BaseParameters,
                 options: IdentificationOptions, search: SignSearchOptions) -> None:
        self.model, self.layout, self.base, self.options, self.search = model, layout, base, options, search
        self.result: SignSearch | None = None
        self.data: ProcessedData | None = None
        self.signs: np.ndarray | None = None

    def __call__(self, data: ProcessedData, w_b: np.ndarray, kept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Estimate the torque signs; the signed target rows and the rows kept (a sample without a sign is dropped)."""
        n = self.model.n_dof
        tau_abs, raw_abs = np.abs(data.tau), np.abs(data.tau_raw)
        limits = thresholds(tau_abs, raw_abs, self.search)
        edge_s = self.search.edge_s
        if edge_s is None:
            processing = data.options or ProcessingOptions(**self.options.processing)  # derived numbers
            edge_s = 0.5 / float(processing.tau_cutoff_hz or processing.cutoff_hz)
        edge = int(round(edge_s / max(float(np.median(np.diff(data.t))), 1e-9)))
        segments = find_segments(tau_abs, limits, self.search.min_samples, edge, self.search.dip)
        nominal = nominal_parameters(self.model, self.layout)
        prior = nominal if self.options.prior == "nominal" and np.all(nominal[self.layout.indices("m")] > 0) else None
        bounds = Bounds.from_config(self.options.bounds, self.layout) if self.options.bounds else Bounds()
        scorer = FeasibleResidual(self.base.K, self.layout, self.options.consistency, bounds, self.options.solver,
                                  prior)
        w_b3 = w_b.reshape(-1, n, w_b.shape[1])
        noise = np.maximum(noise_levels(tau_abs, raw_abs), 1e-3 * np.max(tau_abs, axis=0) + 1e-300)
        self.result = search_signs(w_b3, tau_abs, segments, scorer, self.search, limits, 1.0 / noise)
        self.data = data
        signs = self.result.sample_signs(tau_abs.shape[0], n)
        if self.search.fill_gaps:
            signs = np.where(signs == 0, np.sign(w_b3 @ self.result.beta), signs)
        self.signs = signs
        return (signs * tau_abs).reshape(-1), kept & (signs != 0).reshape(-1)


def identify_abs_effort(series: JointStateSeries, options: IdentificationOptions,
                        search: SignSearchOptions | None = None, *, urdf: str | Path | None = None,
                        dh: str | Path | None = None, model: RobotModel | None = None, timer: StageTimer | None = None,
                        xacro_args: list[str] | None = None) -> tuple[IdentificationResult, SignSearch]:
    """Identify from joint states whose effort is ``|tau|`` (Pennese et al. 2021 Algorithm 1).

    Returns ``(IdentificationResult, SignSearch)``. The result's relative error is against the recorded ``|tau|``
    with the estimated signs, over the samples that have one (all with ``fill_gaps``).
    """
    search = _checked(options, search)
    if series.effort is not None and np.any(series.effort < 0):
        raise DataError("--abs-effort: the effort has negative values, so it is not |tau|")
    timer = timer or StageTimer()
    model, warnings = identified_model(series, options, timer, model=model, urdf=urdf, dh=dh, xacro_args=xacro_args)
    target, base = _target(model, options, search, timer)
    result = identify_linear(series, options, model, timer, fit_target=target, base=base, warnings=warnings)
    return _signed(result, target, search), target.result


def identify_abs_effort_bag(bag: str | Path, options: IdentificationOptions, search: SignSearchOptions | None = None,
                            *, urdf: str | Path | None = None, dh: str | Path | None = None,
                            model: RobotModel | None = None, timer: StageTimer | None = None,
                            xacro_args: list[str] | None = None, gains_file: str | Path | None = None
                            ) -> tuple[IdentificationResult, SignSearch]:
    """:func:`identify_abs_effort` from a rosbag2 (``dynid identify --abs-effort``), streamed as
    :func:`~dynid_ros.identification.identify.identify_bag` streams: the bag read and processed in chunks, each recorded
    effort checked on the way (no negative value). The sign search itself holds the decimated data and their
    regressor: it scores sign choices of every segment by one feasible fit over all of them (Pennese et al. 2021
    Alg. 1), so it needs every row at once; that is the decimated samples only (100 Hz by default), not the bag.
    ``gains_file``: ``--effort-scale-file``, applied per sample as :func:`identify_bag` does."""
    search = _checked(options, search)
    timer = timer or StageTimer()
    require_torque(options.effort_unit, options.effort_scale, gains_file)
    gains = effort_gains(options, gains_file)
    if not streams(options):  # e.g. a cutoff chosen on the whole series
        with timer.stage("read_bag"):
            series = read_series(bag, options, gains, gains_file)
        result, signs = identify_abs_effort(series, options, search, urdf=urdf, dh=dh, model=model, timer=timer,
                                            xacro_args=xacro_args)
        result.warnings[:0] = in_memory_warnings(options)
        return result, signs
    with timer.stage("read_bag"):
        scan = scan_joint_states(bag, options.topic)
    model, warnings = scanned_model(scan, options, timer, model=model, urdf=urdf, dh=dh, xacro_args=xacro_args)
    with timer.stage("process"):
        data = processed_scan(scan, model, options, ProcessingOptions(**options.processing),
                              scan_gains(scan, model, gains, gains_file), nonnegative_effort(model.joints),
                              cross_validate=False)  # |tau|: no torque to cross-validate a cutoff on
    del scan
    target, base = _target(model, options, search, timer)
    result = identify_processed(data, options, model, timer, fit_target=target, base=base, warnings=warnings)
    return _signed(result, target, search), target.result


def nonnegative_effort(joints: list[str] | tuple[str, ...]) -> EffortCheck:
    """``--abs-effort``'s check of the recorded effort of ``joints`` (no negative value), sample by sample."""

    def check(effort: np.ndarray, first: int) -> None:
        negative = np.argwhere(effort < 0)
        if negative.size:
            row, joint = negative[0]
            raise DataError(f"--abs-effort: the effort has negative values, so it is not |tau| (sample {first + row}, "
                            f"joint {joints[joint]}: {effort[row, joint]:.6g})")

    return check


def _checked(options: IdentificationOptions, search: SignSearchOptions | None) -> SignSearchOptions:
    search = search or SignSearchOptions()
    search.check()
    options.check()
    if "sigmoid" in options.friction:
        raise ConfigError("--abs-effort: sigmoid friction is not supported with unknown torque signs")
    return search


def _target(model: RobotModel, options: IdentificationOptions, search: SignSearchOptions,
            timer: StageTimer) -> tuple[SignedTarget, BaseParameters]:
    """The sign search as the fit target, and the base parameters it works on."""
    layout = model.layout_for(options.friction, options.armature)
    with timer.stage("base_parameters"):
        base = compute_base_parameters(model, layout)
    return SignedTarget(model, layout, base, options, search), base


def _signed(result: IdentificationResult, target: SignedTarget, search: SignSearchOptions) -> IdentificationResult:
    """``result`` with its relative error against the signed ``|tau|`` and the signs found recorded."""
    model, layout = result.model, result.layout
    data, signs = target.data, target.signs
    known = signs != 0
    tau_hat = torques(model, layout, result.delta, data.q, data.dq, data.ddq)
    signed = np.where(known, signs * np.abs(data.tau_raw), 0.0)
    result.relative_error, result.relative_error_per_joint = relative_error(signed, np.where(known, tau_hat, 0.0))
    result.processing["torque_signs"] = {
        "segments": [{"joint": model.joints[s.joint], "t_start": float(data.t[s.start]),
                      "t_end": float(data.t[s.stop - 1]), "sign": int(sign)}
                     for s, sign in zip(target.result.segments, target.result.signs)],
        "thresholds": [float(v) for v in target.result.thresholds], "beam": search.beam,
        "initial_segments": target.result.initial, "feasible_fits": target.result.n_problems,
        "level_costs": [float(c) for c in target.result.costs]}
    in_segments = target.result.sample_signs(data.q.shape[0], model.n_dof) != 0
    result.warnings.append(f"--abs-effort: {100 * (1 - in_segments.mean()):.1f} % of the samples near zero torque, "
                           + ("signed by the fit of the segments" if search.fill_gaps else "left out"))
    return result
