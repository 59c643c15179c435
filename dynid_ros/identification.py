"""The identification pipeline: joint states -> processed data -> base regressor -> estimate.

``identify`` is what ``dynid identify`` and the identification node run. Each stage is
timed. The result holds the full standard parameter vector (for the URDF), the base
parameters with their uncertainties, and the fit on the identification window.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from dynid_ros.base_parameters import BaseParameters, compute_base_parameters
from dynid_ros.errors import ConfigError, DataError, IdentifiabilityError
from dynid_ros.joint_states import JointStateSeries
from dynid_ros.model import RobotModel, load_model, nominal_parameters
from dynid_ros.parameters import FRICTION_TERMS, ParameterLayout, parse_friction
from dynid_ros.regressor import regressor
from dynid_ros.urdf_writer import attached_parameters

LOG = logging.getLogger(__name__)

METHODS = ("ols", "wls", "fbpe", "bpfc")
CONSISTENCIES = ("physical", "full")
SOLVERS = ("clarabel", "scs")

IDENTIFIABILITY_TOLERANCE = 1e-7
"""A base parameter whose scaled regressor column adds less than this (relative |R_ii| of a
pivoted QR) is not identifiable from the data."""


@dataclass
class IdentificationOptions:
    """Options of one identification; defaults suit a real robot (Sousa & Cortesão 2014 eq. 27 friction,
    armature, FBPE with full physical consistency, a prior toward the nominal URDF)."""

    joints: list[str] | None = None
    friction: tuple[str, ...] = FRICTION_TERMS
    armature: bool = True
    method: str = "fbpe"
    consistency: str = "full"
    solver: str = "clarabel"
    topic: str = "/joint_states"
    start: float | None = None
    end: float | None = None
    effort_scale: list[float] | None = None
    prior: str = "nominal"
    bounds: dict = field(default_factory=dict)
    processing: dict = field(default_factory=dict)

    def check(self) -> None:
        """Raise ConfigError for invalid choices."""
        self.friction = parse_friction(self.friction)
        for name, value, choices in (("method", self.method, METHODS), ("consistency", self.consistency, CONSISTENCIES),
                                     ("solver", self.solver, SOLVERS), ("prior", self.prior, ("nominal", "none"))):
            if value not in choices:
                raise ConfigError(f"--{name} must be one of {', '.join(choices)}, not {value!r}")
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ConfigError(f"--end ({self.end}) must be after --start ({self.start})")


@dataclass
class IdentificationResult:
    """What ``identify`` found. ``delta`` follows :mod:`dynid_ros.parameters`."""

    model: RobotModel
    layout: ParameterLayout
    base: BaseParameters
    delta: np.ndarray
    beta: np.ndarray
    beta_rel_std: np.ndarray
    nominal: np.ndarray
    feasible: bool
    solver_status: str
    relative_error: float
    relative_error_per_joint: list[float]
    n_samples: int
    timings_s: dict[str, float]
    options: IdentificationOptions
    warnings: list[str] = field(default_factory=list)
    processing: dict = field(default_factory=dict)


class StageTimer:
    """Wall-clock time per named stage."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = round(self.timings.get(name, 0.0) + time.perf_counter() - start, 4)


def relative_error(tau: np.ndarray, tau_hat: np.ndarray) -> tuple[float, list[float]]:
    """``||tau - tau_hat|| / ||tau||`` over all joints and samples, and per joint (Sousa & Cortesão 2014 eq. 84)."""
    total = float(np.linalg.norm(tau - tau_hat) / max(np.linalg.norm(tau), 1e-300))
    per_joint = [float(np.linalg.norm(tau[:, j] - tau_hat[:, j]) / max(np.linalg.norm(tau[:, j]), 1e-300))
                 for j in range(tau.shape[1])]
    return total, per_joint


def prepare_series(series: JointStateSeries, model: RobotModel, options: IdentificationOptions) -> JointStateSeries:
    """Reorder to the model's joints, apply the effort scale and the time window."""
    from dynid_ros.signal_processing import apply_effort_scale

    missing = [j for j in model.joints if j not in series.names]
    if missing:
        raise DataError(f"joint(s) {', '.join(missing)} of the model are not in the joint states")
    series = series.select(list(model.joints))
    if options.effort_scale is not None:
        series = apply_effort_scale(series, options.effort_scale)
    windowed = series.window(options.start, options.end)
    if len(windowed) < 10:
        raise DataError(f"only {len(windowed)} samples between --start {options.start} and --end {options.end} "
                        f"(the data spans {series.t[-1] - series.t[0]:.3f} s)")
    return windowed


def fit_rows(dq: np.ndarray, min_speed: float) -> np.ndarray:
    """Mask of the regression rows (sample-major) whose joint moves at least ``min_speed``."""
    return (np.abs(dq) >= min_speed).reshape(-1) if min_speed > 0 else np.ones(dq.size, dtype=bool)


def check_identifiability(w_b: np.ndarray, base: BaseParameters) -> None:
    """Raise IdentifiabilityError naming the base parameters the data does not excite."""
    import scipy.linalg

    norms = np.linalg.norm(w_b, axis=0)
    dead = np.flatnonzero(norms <= 1e-12 * max(norms.max(), 1e-300))
    scaled = w_b / np.where(norms > 0, norms, 1.0)
    _, r, piv = scipy.linalg.qr(scaled, mode="economic", pivoting=True)
    diag = np.abs(np.diag(r))
    weak = piv[diag < IDENTIFIABILITY_TOLERANCE * max(diag.max(), 1e-300)]
    bad = sorted(set(dead.tolist()) | set(weak.tolist()))
    if bad:
        names = [f"beta{i + 1} = {base.expressions[i]}" for i in bad[:6]]
        more = f" and {len(bad) - 6} more" if len(bad) > 6 else ""
        raise IdentifiabilityError(f"too little excitation: {len(bad)} base parameter(s) not identifiable from this "
                                   f"data: {'; '.join(names)}{more}")


def identify(series: JointStateSeries, options: IdentificationOptions, urdf: str | Path | None = None,
             dh: str | Path | None = None, model: RobotModel | None = None,
             timer: StageTimer | None = None, xacro_args: list[str] | None = None) -> IdentificationResult:
    """Identify the parameters of the robot from recorded joint states (``xacro_args``: of a ``.urdf.xacro``)."""
    from dynid_ros import estimators, feasibility
    from dynid_ros.signal_processing import ProcessingOptions, process

    options.check()
    timer = timer or StageTimer()
    warnings: list[str] = []
    with timer.stage("model"):
        if model is None:
            model = load_model(urdf=urdf, dh=dh, joints=options.joints, available=series.names,
                               xacro_args=xacro_args)
        layout = model.layout_for(options.friction, options.armature)
        if model.locked:
            warnings.append(f"joints locked at neutral (not identified): {', '.join(model.locked)}")
    with timer.stage("process"):
        series = prepare_series(series, model, options)
        processing = ProcessingOptions(**options.processing)
        data = process(series, processing)
    with timer.stage("base_parameters"):
        base = compute_base_parameters(model, layout)
    with timer.stage("regressor"):
        w = regressor(model, layout, data.q, data.dq, data.ddq)
        w_b = base.project(w)
        tau = data.tau.reshape(-1)
        kept = fit_rows(data.dq, processing.min_speed)
        if not kept.all():  # a zero row is a row left out of every least-squares fit
            w_b = np.where(kept[:, None], w_b, 0.0)
            tau = np.where(kept, tau, 0.0)
            warnings.append(f"{100 * (1 - kept.mean()):.1f} % of the rows left out of the fit "
                            f"(|q'| < {processing.min_speed} rad/s)")
        check_identifiability(w_b, base)
    nominal = nominal_parameters(model, layout)
    attached = attached_parameters(model, layout)  # e.g. a hand fixed to the last link: kept as in the URDF
    bounds = feasibility.Bounds.from_config(options.bounds, layout) if options.bounds else None
    with timer.stage("estimate"):
        wls_fit = estimators.wls(w_b, tau, model.n_dof) if options.method in ("wls", "fbpe") else None
        ols_fit = estimators.ols(w_b, tau, model.n_dof)
        stats = wls_fit or ols_fit
        weights = wls_fit.weights if (wls_fit is not None and options.method == "fbpe") else None
        if options.method in ("ols", "wls"):
            beta = stats.beta
            delta = _closest_standard(base, beta, nominal)
            status = "optimal"
        elif options.method == "bpfc":
            corrected = feasibility.bpfc(base.K, ols_fit.beta, consistency=options.consistency, layout=layout,
                                         bounds=bounds, solver=options.solver, attached=attached)
            beta, delta, status = corrected.beta, corrected.delta, corrected.status
        else:
            fit = estimators.fbpe(w_b, tau, base.K, layout, consistency=options.consistency, bounds=bounds,
                                  weights=weights, solver=options.solver, attached=attached,
                                  prior=nominal if options.prior == "nominal" else None)
            beta, delta, status = fit.beta, fit.delta, fit.status
        if status not in ("optimal",):
            warnings.append(f"solver status {status}: the estimate may be inaccurate")
    with timer.stage("evaluate"):
        tau_hat = (w @ delta).reshape(-1, model.n_dof)
        err, err_joint = relative_error(data.tau_raw, tau_hat)
        feasible = bool(feasibility.is_feasible(delta, layout, consistency=options.consistency, attached=attached))
    return IdentificationResult(model, layout, base, delta, beta, stats.rel_std, nominal, feasible, status, err,
                                err_joint, int(data.q.shape[0]), timer.timings, options, warnings,
                                asdict(processing))


def _closest_standard(base: BaseParameters, beta: np.ndarray, nominal: np.ndarray) -> np.ndarray:
    """The standard parameters closest to the nominal ones that give ``beta`` (K delta = beta)."""
    correction = np.linalg.lstsq(base.K, beta - base.K @ nominal, rcond=None)[0]
    return nominal + correction
