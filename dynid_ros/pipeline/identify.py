"""The identification pipeline: joint states -> processed data -> base regressor -> estimate.

``identify`` is what ``dynid identify`` and the identification node run. Each stage is
timed. The result holds the full standard parameter vector (for the URDF), the base
parameters with their uncertainties, and the fit on the identification window.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.dynamics import feasibility
from dynid_ros.dynamics.base_parameters import BaseParameters, compute_base_parameters
from dynid_ros.dynamics.bounds import Bounds
from dynid_ros.dynamics.feasibility import CONSISTENCIES, SOLVERS
from dynid_ros.dynamics.regressor import regressor
from dynid_ros.errors import ConfigError, DataError, EstimationError, IdentifiabilityError
from dynid_ros.estimation import estimators
from dynid_ros.estimation.estimators import relative_std
from dynid_ros.estimation.identifiability import MOSTLY_UNIDENTIFIED, check_excited, not_identified
from dynid_ros.estimation.prior import Prior, PriorTolerances, cad_prior, joint_term_scales, link_realism
from dynid_ros.estimation.unmodelled_load import flange_load, split_extra_body, with_extra_body
from dynid_ros.pipeline.fit_series import FitSeries
from dynid_ros.robot.model import RobotModel, load_model, nominal_parameters
from dynid_ros.robot.parameters import FRICTION_TERMS, ParameterLayout, parse_friction
from dynid_ros.robot.urdf_writer import attached_parameters

METHODS = ("ols", "wls", "fbpe", "bpfc", "pbpr")

@dataclass
class IdentificationOptions:
    """Options of one identification; defaults suit a real robot (Sousa & Cortesão 2014 eq. 27 friction,
    armature, FBPE with full physical consistency, the nominal URDF as a prior).

    ``prior_tolerance``: the ``prior_tolerance:`` mapping (:class:`dynid_ros.estimation.prior.PriorTolerances`);
    ``strict``: fail when any base parameter is not identified instead of keeping it at the prior."""

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
    prior_tolerance: dict = field(default_factory=dict)
    strict: bool = False
    pbpr: dict = field(default_factory=dict)
    unmodelled_load: bool = True
    """Model a tool or payload the URDF lacks as an extra body on the last link (estimation.unmodelled_load)."""

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
    """What ``identify`` found. ``delta`` follows :mod:`dynid_ros.robot.parameters`."""

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
    not_identified: list[dict] = field(default_factory=list)
    realism: list[dict] = field(default_factory=list)
    delta_std: np.ndarray | None = None
    residual_inflation: float = 1.0
    friction_sigmoid: np.ndarray | None = None
    """(n_dof, 3) ``[phi1, phi2, phi3]`` per joint with ``--friction sigmoid`` (Gaz et al. 2019 eq. 25)."""
    fit: FitSeries | None = None
    """The window's processed motion, recorded and predicted torque (for the report); None without a torque fit."""
    prior_std: np.ndarray | None = None
    """Standard deviation of the prior on each standard parameter (None without a prior)."""
    unmodelled_load: dict | None = None
    """``{"link", "mass", "com", "mass_std"}`` of a load on the last link the URDF lacks (None: the data show none)."""


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
    from dynid_ros.data.signal_processing import apply_effort_scale

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


def identify(series: JointStateSeries, options: IdentificationOptions, urdf: str | Path | None = None,
             dh: str | Path | None = None, model: RobotModel | None = None,
             timer: StageTimer | None = None, xacro_args: list[str] | None = None,
             fit_target=None, base: BaseParameters | None = None) -> IdentificationResult:
    """Identify the parameters of the robot from recorded joint states (``xacro_args``: of a ``.urdf.xacro``).

    Base parameters the data do not identify are kept at the prior, named in a warning and in
    ``not_identified`` (an error with ``options.strict``, or when they are most of them). A result of a
    feasible method (FBPE, BPFC) that fails its own feasibility check is an error, never an output.
    ``fit_target(data, w_b, kept) -> (tau, kept)``, when given, replaces the torque rows and the row mask of
    the fit (e.g. torque signs estimated from ``|tau|``, :mod:`dynid_ros.estimation.torque_signs`). ``base``: the base
    parameters of ``model`` in the options' layout, when the caller has computed them already."""
    from dynid_ros.data.signal_processing import ProcessingOptions, process

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
    if "sigmoid" in options.friction:  # nonlinear friction: alternate with the linear estimate
        from dynid_ros.estimation.sigmoid_friction import identify_with_sigmoid

        return identify_with_sigmoid(series, options, model, timer)
    with timer.stage("process"):
        series = prepare_series(series, model, options)
        processing = ProcessingOptions(**options.processing)
        data = process(series, processing)
    if base is None:
        with timer.stage("base_parameters"):
            base = compute_base_parameters(model, layout)
    elif tuple(base.layout.symbols) != tuple(layout.symbols):
        raise ConfigError("identify: the given base parameters are of another parameter layout")
    with timer.stage("regressor"):
        w = regressor(model, layout, data.q, data.dq, data.ddq)
        w_b = base.project(w)
        tau = data.tau.reshape(-1)
        kept = fit_rows(data.dq, processing.min_speed)
        if fit_target is not None:
            tau, kept = fit_target(data, w_b, kept)
        if not kept.all():  # a zero row is a row left out of every least-squares fit
            w_b = np.where(kept[:, None], w_b, 0.0)
            tau = np.where(kept, tau, 0.0)
            warnings.append(f"{100 * (1 - kept.mean()):.1f} % of the rows left out of the fit "
                            + (f"(|q'| < {processing.min_speed} rad/s)" if fit_target is None else "(fit target)"))
    nominal = nominal_parameters(model, layout)
    attached = attached_parameters(model, layout)  # e.g. a hand fixed to the last link: kept as in the URDF
    prior = cad_prior(nominal, layout, PriorTolerances.from_config(options.prior_tolerance),
                      joint_term_scales(layout, data.dq, data.ddq, data.tau), attached)
    link_prior, load = prior, None
    if options.unmodelled_load and options.prior == "nominal" and np.any(nominal[layout.indices("m")] > 0):
        flange = model.joint_ids[-1] - 1  # the body the last identified joint moves (pinocchio joint k: body k - 1)
        load = flange_load(nominal, layout, attached, flange)  # a tool the URDF lacks: its own body, mass from 0
        prior = with_extra_body(prior, layout, load)
    with timer.stage("identifiability"):
        informative = options.prior == "nominal" and bool(np.any(nominal[layout.indices("m")] > 0))
        if not informative:  # no prior to keep a parameter at (--prior none, a DH table): all must be excited
            check_excited(w_b, base)
        missing = not_identified(w_b, tau, base, prior.mean, prior.covariance) if informative else []
        _check_excitation(missing, base.n_base, options.strict)
        if missing:
            warnings.append(f"{len(missing)} base parameter(s) not identified by the data, kept at the prior: "
                            + "; ".join(f"{m.description} ({m.name})" for m in missing))
    bounds = Bounds.from_config(options.bounds, layout)
    with timer.stage("estimate"):
        estimate = _estimate(options, w_b, tau, base, layout, prior, bounds, attached,
                             {m.index: m.value for m in missing})
        load_params, load_report = (None, None) if load is None else \
            split_extra_body(estimate.delta, estimate.delta_std, link_prior, layout, load)
        if load is not None and load_report is None:  # the data show no load: the links keep their own prior
            estimate = _estimate(options, w_b, tau, base, layout, link_prior, bounds, attached,
                                 {m.index: m.value for m in missing})
    beta, delta, status, beta_std = estimate.beta, estimate.delta, estimate.status, estimate.beta_std
    if status != "optimal":
        warnings.append(f"solver status {status}: the estimate may be inaccurate")
    with timer.stage("evaluate"):
        tau_hat = (w @ delta).reshape(-1, model.n_dof)
        err, err_joint = relative_error(data.tau_raw, tau_hat)
        feasible = bool(feasibility.is_feasible(delta, layout, consistency=options.consistency, attached=attached)
                        and not bounds.violations(delta, layout, tol=1e-6))
        if options.method in FEASIBLE_METHODS and not feasible:
            raise EstimationError(f"{options.method}: the estimate fails its own physical-consistency or bound "
                                  "check; nothing written")
        load_delta = np.zeros_like(delta)
        if load_report is not None:  # the links' realism without the load
            load_delta[layout.link_slice(load.link)] = load_params
        realism = link_realism(delta - load_delta, nominal, layout, attached)
        warnings += [f"link {r['link']}: identified mass {r['mass']:.3g} kg is {r['mass_ratio']:.2f}x the prior "
                     f"{r['prior_mass']:.3g} kg (outside [0.5x, 2x])" for r in realism if not r["realistic_mass"]]
    result = IdentificationResult(model, layout, base, delta, beta, relative_std(beta_std, beta), nominal, feasible,
                                  status, err, err_joint, int(data.q.shape[0]), timer.timings, options, warnings,
                                  asdict(processing), [m.to_dict() for m in missing], realism, estimate.delta_std,
                                  estimate.inflation)
    result.fit = FitSeries(list(model.joints), data.t, data.q, data.dq, data.ddq, data.tau_raw, tau_hat)
    result.prior_std = (prior if load_report is not None else link_prior).std if options.prior == "nominal" else None
    result.unmodelled_load = load_report
    return result


FEASIBLE_METHODS = ("fbpe", "bpfc")
"""Methods whose result must pass the feasibility check."""


def _check_excitation(missing: list, n_base: int, strict: bool) -> None:
    """IdentifiabilityError when the data identify nearly nothing, or any parameter is missing with ``strict``."""
    if not missing or (not strict and len(missing) <= MOSTLY_UNIDENTIFIED * n_base):
        return
    names = [f"{m.name} = {m.expression} ({m.description})" for m in missing[:6]]
    more = f" and {len(missing) - 6} more" if len(missing) > 6 else ""
    why = "" if strict else f" (more than {MOSTLY_UNIDENTIFIED:.0%} of {n_base})"
    raise IdentifiabilityError(f"too little excitation: {len(missing)} base parameter(s) not identifiable from this "
                               f"data{why}: {'; '.join(names)}{more}")


@dataclass
class _Estimate:
    beta: np.ndarray
    delta: np.ndarray
    status: str
    beta_std: np.ndarray
    delta_std: np.ndarray | None
    inflation: float


def _estimate(options: IdentificationOptions, w_b: np.ndarray, tau: np.ndarray, base: BaseParameters,
              layout: ParameterLayout, prior: Prior, bounds: Bounds, attached: np.ndarray,
              fixed: dict[int, float]) -> _Estimate:
    """Run the chosen estimator; the standard deviations are those of the estimate returned."""
    n_dof = layout.n_dof
    if options.method == "fbpe":
        weights = estimators.wls(w_b, tau, n_dof, fixed=fixed).weights
        fit = estimators.fbpe(w_b, tau, base.K, layout, consistency=options.consistency, bounds=bounds,
                              weights=weights, solver=options.solver, attached=attached, fixed=fixed,
                              prior=prior if options.prior == "nominal" else None)
        return _Estimate(fit.beta, fit.delta, fit.status, fit.beta_std, fit.delta_std, fit.inflation)
    fit = (estimators.wls if options.method == "wls" else estimators.ols)(w_b, tau, n_dof, fixed=fixed)
    if options.method in ("ols", "wls"):
        return _Estimate(fit.beta, _closest_standard(base, fit.beta, prior.mean), "optimal", fit.std, None,
                         fit.inflation)
    if options.method == "bpfc":
        corrected = feasibility.bpfc(base.K, fit.beta, consistency=options.consistency, layout=layout,
                                     bounds=bounds, solver=options.solver, attached=attached)
        if corrected.beta is None:
            raise EstimationError(f"bpfc: no parameters satisfy the {options.consistency} consistency constraints "
                                  f"and the bounds (solver status {corrected.status})")
        return _Estimate(corrected.beta, corrected.delta, corrected.status, fit.std, None, fit.inflation)
    from dynid_ros.estimation.penalty_retrieval import pbpr  # Gaz et al. 2019 Alg. 1

    found = pbpr(w_b, tau, base.K, layout, fit.beta, options.pbpr, bounds, prior.mean, attached,
                 use_nominal_start=options.prior == "nominal")
    return _Estimate(found.beta, found.delta, found.status, fit.std, None, fit.inflation)


def _closest_standard(base: BaseParameters, beta: np.ndarray, nominal: np.ndarray) -> np.ndarray:
    """The standard parameters closest to the nominal ones that give ``beta`` (K delta = beta)."""
    correction = np.linalg.lstsq(base.K, beta - base.K @ nominal, rcond=None)[0]
    return nominal + correction
