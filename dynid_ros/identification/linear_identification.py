"""Identification of the parameters that enter the dynamics linearly: joint states -> processed data ->
base regressor -> estimate (the path of every method; sigmoid friction wraps it, |tau| data replace its target).

:func:`identify_linear` takes a loaded model; :func:`dynid_ros.identification.identify.identify` is the entry point.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from dynid_ros.data.bag_stream import BagScan, EffortCheck
from dynid_ros.data.joint_states import JointStateSeries, complete_fields
from dynid_ros.data.signal_processing import (
    CUTOFF_AUTO,
    CUTOFF_CHECKED,
    CutoffChooser,
    ProcessedData,
    ProcessingOptions,
    apply_effort_scale,
    check_fields,
    effort_scale_vector,
    process,
    process_rows,
)
from dynid_ros.dynamics import feasibility
from dynid_ros.dynamics.base_parameters import BaseParameters, compute_base_parameters
from dynid_ros.dynamics.bounds import Bounds
from dynid_ros.dynamics.feasibility import SolverStatus
from dynid_ros.dynamics.regressor import regressor_chunks, torques
from dynid_ros.errors import ConfigError, DataError, EstimationError, IdentifiabilityError, ModelError
from dynid_ros.estimation import estimators
from dynid_ros.estimation.coupling_diagnostic import coupled_pairs
from dynid_ros.estimation.effort_gains import choose_gains
from dynid_ros.estimation.estimators import relative_std
from dynid_ros.estimation.fit_quality import relative_error
from dynid_ros.estimation.hyperparameters import HyperparameterChoice, JointSums, choose_hyperparameters
from dynid_ros.estimation.identifiability import MOSTLY_UNIDENTIFIED, check_excited, not_identified
from dynid_ros.estimation.method import FEASIBLE_METHODS, Estimate, EstimatorSettings, Method, estimate
from dynid_ros.estimation.model_error import JointInflation, joint_inflation
from dynid_ros.estimation.position_torque import PositionSeries, flagged_by_position, profiled_rows, profiled_vector
from dynid_ros.estimation.prior import (
    STRONG_EVIDENCE,
    Prior,
    PriorGroups,
    PriorTolerances,
    joint_term_scales,
    link_realism,
)
from dynid_ros.estimation.time_blocks import ValidationSplit, validation_split
from dynid_ros.estimation.unmodelled_load import ExtraBody, flange_load, split_extra_body, with_extra_body
from dynid_ros.identification.cutoff_selection import BLOCKS, CutoffChoice, cutoff_chooser
from dynid_ros.identification.effort_unit import gravity_mismatch_warnings
from dynid_ros.identification.excitation_quality import excitation_quality
from dynid_ros.identification.fit_series import FitSeries
from dynid_ros.identification.identification_result import IdentificationResult
from dynid_ros.identification.least_squares_comparison import compare_with_least_squares
from dynid_ros.identification.options import IdentificationOptions, position_torque_setting
from dynid_ros.identification.position_torque_selection import (
    FitProblem,
    TermFit,
    choose_terms,
    terms_torque,
)
from dynid_ros.identification.timing import StageTimer
from dynid_ros.robot.geometry_inertia import (
    HULL_DENSITY,
    HULL_DENSITY_SPREAD,
    NO_MASS_KG,
    complete_massless_bodies,
)
from dynid_ros.robot.model import RobotModel, nominal_parameters
from dynid_ros.robot.parameters import ParameterLayout
from dynid_ros.robot.urdf_writer import attached_parameters

FitTarget = Callable[[ProcessedData, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""``fit_target(data, w_b, kept) -> (tau, kept)``: replaces the torque rows and the row mask of the fit."""


CROSS_VALIDATED = (CUTOFF_AUTO, CUTOFF_CHECKED)
"""The ``cutoff_hz`` rules the identification's time-blocked cross-validation chooses or checks."""


def prepare_series(series: JointStateSeries, model: RobotModel, options: IdentificationOptions) -> JointStateSeries:
    """Reorder to the model's joints (each with every field recorded), unwrap the angles of continuous joints
    (before any resampling or filtering), apply the effort scale and the time window."""
    missing = [j for j in model.joints if j not in series.names]
    if missing:
        raise DataError(f"joint(s) {', '.join(missing)} of the model are not in the joint states")
    series = complete_fields(series.select(list(model.joints)))
    if any(model.continuous):
        series.position = series.position.copy()
        wraps = np.flatnonzero(model.continuous)
        series.position[:, wraps] = np.unwrap(series.position[:, wraps], axis=0)
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


def identify_linear(series: JointStateSeries, options: IdentificationOptions, model: RobotModel, timer: StageTimer,
                    *, fit_target: FitTarget | None = None, base: BaseParameters | None = None,
                    warnings: list[str] | None = None) -> IdentificationResult:
    """Identify the linear parameters of a loaded ``model`` from recorded joint states (checked ``options``).

    Base parameters the data do not identify are kept at the prior, named in a warning and in
    ``not_identified`` (an error with ``options.strict``, or when they are most of them). A result of a
    feasible method (FBPE, BPFC) that fails its own feasibility check is an error, never an output.
    ``fit_target`` (e.g. torque signs estimated from ``|tau|``, :mod:`dynid_ros.variants.abs_effort`) replaces
    the torque rows and the row mask of the fit. ``base``: the base parameters of ``model`` in the options'
    layout, when the caller has computed them already. ``warnings``: earlier warnings, continued."""
    warnings = list(warnings or [])
    processing = ProcessingOptions(**options.processing)
    layout = model.layout_for(options.friction, options.armature)
    if base is not None and tuple(base.layout.symbols) != tuple(layout.symbols):
        raise ConfigError("identify: the given base parameters are of another parameter layout")
    chooser = None
    if fit_target is None and processing.cutoff_hz in CROSS_VALIDATED:  # chosen on the data: needs the regressor
        if base is None:  # (a fit target, |tau| signs, has no torque to cross-validate a cutoff on)
            with timer.stage("base_parameters"):
                base = compute_base_parameters(model, layout)
        chooser = cutoff_chooser_for(model, options, processing, base)
    with timer.stage("process"):
        series = prepare_series(series, model, options)
        data = process(series, processing, chooser=chooser)
    return identify_processed(data, options, model, timer, fit_target=fit_target, base=base, warnings=warnings,
                              processing=processing)


@dataclass(frozen=True)
class DescriptionCompletion:
    """What :func:`complete_description_masses` did: the ``warnings`` saying so and the identified links whose prior
    mass is their geometry's guess (``guessed_links``)."""

    warnings: tuple[str, ...] = ()
    guessed_links: tuple[str, ...] = ()


def complete_description_masses(model: RobotModel, layout: ParameterLayout, options: IdentificationOptions
                                ) -> tuple[RobotModel, DescriptionCompletion]:
    """The model to identify and what was completed (:class:`DescriptionCompletion`), when the method keeps what the
    data do not determine at the description's values (FBPE, PBPR with the nominal prior) and the description gives
    a moving link no mass: the data determine only combinations of the link parameters (the base parameters), so
    such a link would come out massless or at a value nothing determined. Such links are given the inertia of their
    geometry (:mod:`dynid_ros.robot.geometry_inertia`) as the prior's centre; a link without geometry to derive it
    from is a ModelError (one line). Methods without a prior (OLS, WLS: the base parameters; BPFC, ``--prior
    none``) are not concerned."""
    if options.prior != "nominal" or options.method not in (Method.FBPE, Method.PBPR):
        return model, DescriptionCompletion()
    own = nominal_parameters(model, layout) - attached_parameters(model, layout)
    masses = own[layout.indices("m")]
    bodies = [k + 1 for k, mass in enumerate(masses) if not mass > NO_MASS_KG]
    if not bodies:
        return model, DescriptionCompletion()
    source, method = model.urdf_path or "the robot description", Method(options.method).value
    massless = ", ".join(f"{layout.links[b - 1]} ({masses[b - 1]:.3g} kg)" for b in bodies)

    def refused(why: str) -> ModelError:
        return ModelError(f"{source} gives no mass to the moving link(s) {massless} (no <inertial>, or a mass of at "
                          f"most {NO_MASS_KG:g} kg) and {why}: {method} keeps what the data do not determine at the "
                          "description's values, so they would come out massless; give each moving link its mass "
                          "and inertia in the URDF (a CAD or data-sheet value)")

    try:
        completed = complete_massless_bodies(model, bodies)
    except ModelError as err:  # the mesh not found and where it was looked for (not the collision checks' remedy)
        where = str(err).split("; collision checks need it")[0].replace("--package-dir, ", "")
        raise refused(f"their geometry cannot be read ({where}; a ROS install finds package:// meshes through "
                      "AMENT_PREFIX_PATH or ROS_PACKAGE_PATH)") from err
    own = nominal_parameters(completed.model, layout) - attached_parameters(completed.model, layout)
    bare = [layout.links[b - 1] for b in bodies if not own[layout.indices("m")][b - 1] > NO_MASS_KG]
    if bare:
        raise refused(f"{', '.join(bare)} {'has' if len(bare) == 1 else 'have'} no geometry to derive one from")
    return completed.model, DescriptionCompletion((
        f"{source} gives no mass to the moving link(s) {massless}: the prior is centred on their collision "
        f"geometry as solids of {HULL_DENSITY:g} kg/m^3 (published arms' links: within x/{HULL_DENSITY_SPREAD:g} of "
        f"it), {completed.summary()}; what the data do not determine stays at these guesses (a CAD or data-sheet "
        "value in the URDF is better)",), tuple(layout.links[b - 1] for b in bodies))


def undetermined_masses_note(options: IdentificationOptions, base: BaseParameters) -> str:
    """What a result without a prior holding the link parameters must say (``link_masses_determined``)."""
    how = "--prior none" if options.prior != "nominal" else f"--method {Method(options.method).value}"
    return (f"the link masses, centres of mass and inertias are not determined one by one ({how}: no prior): the "
            f"data determine {base.n_base} combinations of them (the base parameters), and the link parameters "
            "written are one set among many that give the same joint torques; for masses near the description's, "
            "identify with the nominal prior (--method fbpe)")


def cutoff_chooser_for(model: RobotModel, options: IdentificationOptions, processing: ProcessingOptions,
                       base: BaseParameters | None = None) -> CutoffChooser | None:
    """How ``cutoff_hz: auto`` is chosen, and ``checked`` checked, on the leading window
    (:mod:`dynid_ros.identification.cutoff_selection`): scoring the identification's own linear-Gaussian estimate
    where the evidence chooses its hyperparameters (:func:`_by_evidence`), least squares otherwise; None for a cutoff
    given otherwise."""
    if processing.cutoff_hz not in CROSS_VALIDATED:
        return None
    layout = model.layout_for(options.friction, options.armature)
    base = base or compute_base_parameters(model, layout)
    nominal, attached = nominal_parameters(model, layout), attached_parameters(model, layout)
    tolerances = PriorTolerances.from_config(options.prior_tolerance)

    def prior_of(data: ProcessedData) -> PriorGroups:
        return PriorGroups.of(nominal, layout, tolerances, joint_term_scales(layout, data.dq, data.ddq, data.tau),
                              attached)

    return cutoff_chooser(model, base, prior_of if _by_evidence(options, nominal, layout) else None,
                          gains=_estimates_gains(options, None, nominal, layout),
                          position_torque=position_torque_setting(options.position_torque, model.joints))


def cutoff_line(record: dict | None, processing: ProcessingOptions) -> str | None:
    """The console's line of a cutoff chosen by cross-validation (``record``: ``processing.cutoff_choice``); None
    for the bandwidth rule's (``bandwidth``, or ``checked`` where the check kept it) and a given one."""
    rule = (record or {}).get("rule")
    check = (record or {}).get("bandwidth_rule") or {}
    if rule == "auto":
        return (f"filter cutoff {record['cutoff_hz']:.3g} Hz chosen by time-blocked cross-validation "
                f"(motion bandwidth {record['bandwidth_hz']:.3g} Hz; decimation {processing.decimate_hz:.4g} Hz)")
    if rule == "checked" and check.get("replaced"):
        t = check.get("t_statistic")
        return (f"filter cutoff {record['cutoff_hz']:.3g} Hz: time-blocked cross-validation predicts better with it "
                f"than with the bandwidth rule's {check['cutoff_hz']:.3g} Hz "
                f"({100 * check['score']:.3g} % -> {100 * check['pick_score']:.3g} %, better in "
                f"{check['better_blocks']} of {record['blocks']} blocks, t = {'inf' if t is None else f'{t:.3g}'}; "
                f"decimation {processing.decimate_hz:.4g} Hz)")
    return None


def processed_scan(scan: BagScan, model: RobotModel, options: IdentificationOptions,
                   processing: ProcessingOptions, effort_scale: np.ndarray | None = None,
                   effort_check: EffortCheck | None = None, cross_validate: bool = True) -> ProcessedData:
    """:func:`prepare_series` and :func:`~dynid_ros.data.signal_processing.process` of a bag read in chunks
    (:mod:`dynid_ros.data.bag_stream`): ``processing.chunk_s`` seconds at a time, only the decimated samples
    kept; the same samples and values as the whole series at once (to round-off). ``effort_scale``: per model
    joint, instead of the options' (e.g. ``--effort-scale-file``); ``effort_check``: run on the recorded effort of
    every sample read; ``cross_validate``: ``cutoff_hz: auto`` chosen by cross-validation on the torque (False: by
    the bandwidth rule, for an effort that is not the torque yet, e.g. ``|tau|``)."""
    if effort_scale is None and options.effort_scale is not None:
        effort_scale = effort_scale_vector(options.effort_scale, list(model.joints))
    rows = scan.rows(list(model.joints), np.asarray(model.continuous, dtype=bool), effort_scale, effort_check)
    first, stop = scan.window_rows(options.start, options.end)
    if stop - first < 10:
        raise DataError(f"only {stop - first} samples between --start {options.start} and --end {options.end} "
                        f"(the data spans {scan.t[-1] - scan.t[0]:.3f} s)")
    check_fields(scan.check_fields(list(model.joints)), True, processing)
    return process_rows(scan.t[first:stop], lambda a, b: rows.get(first + a, first + b), processing,
                        processing.chunk_s, cutoff_chooser_for(model, options, processing) if cross_validate else None)


def identify_processed(data: ProcessedData, options: IdentificationOptions, model: RobotModel, timer: StageTimer, *,
                       fit_target: FitTarget | None = None, base: BaseParameters | None = None,
                       warnings: list[str] | None = None, processing: ProcessingOptions | None = None,
                       choice: CutoffChoice | None = None) -> IdentificationResult:
    """:func:`identify_linear` from the processed data (``data``: of the options' window and ``processing``, by
    default the options'; ``choice``: the cutoff chosen on the data, recorded with the processing)."""
    warnings = list(warnings or []) + segment_warnings(data.segments)
    position_torque_setting(options.position_torque, model.joints)  # joint names checked before any work
    layout = model.layout_for(options.friction, options.armature)
    model, completed = complete_description_masses(model, layout, options)
    guessed = set(completed.guessed_links)  # the links whose prior mass is their geometry's
    warnings += completed.warnings
    if fit_target is None:  # |tau| (unknown signs) cannot be compared with the gravity torque
        warnings += gravity_mismatch_warnings(model, data.q, data.tau)
    processing = data.options or processing or ProcessingOptions(**options.processing)  # with a derived cutoff's
    record = choice.to_dict() if choice is not None else data.cutoff_choice
    if (line := cutoff_line(record, processing)) is not None:
        warnings.append(line)
    if base is None:
        with timer.stage("base_parameters"):
            base = compute_base_parameters(model, layout)
    elif tuple(base.layout.symbols) != tuple(layout.symbols):
        raise ConfigError("identify: the given base parameters are of another parameter layout")
    with timer.stage("regressor"):  # in blocks, computed on each pass (kept when small): never whole in memory
        w_b = regressor_chunks(model, layout, data.q, data.dq, data.ddq, base.independent)
        tau, kept = _fit_rows(data, w_b, processing.min_speed, fit_target, warnings)
    nominal = nominal_parameters(model, layout)
    gains, recorded_tau = None, None
    if _estimates_gains(options, fit_target, nominal, layout):
        with timer.stage("effort_gains"):
            gains = choose_gains(w_b, tau, data.tau_raw, kept, len(model.joints))
        if gains is not None and gains.kept:  # the effort in one scale from here on: every fit, check and report
            recorded_tau = tau  # plain least squares is compared on the effort as recorded
            data, tau, options = with_effort_gains(data, tau, options, gains.gains, model.joints)
            warnings.append(gains.message(model.joints))
    attached = attached_parameters(model, layout)  # e.g. a hand fixed to the last link: kept as in the URDF
    groups = PriorGroups.of(nominal, layout, PriorTolerances.from_config(options.prior_tolerance),
                            joint_term_scales(layout, data.dq, data.ddq, data.tau), attached)
    if groups.untrusted and options.prior == "nominal":
        warnings.append("the description's joint terms " + ", ".join(
            f"{layout.names[i]} = {nominal[i]:.4g}" for i in groups.untrusted) + " would each alone explain more "
            "than their joint's whole RMS torque: not a measurement of this robot, the prior is centred on 0 for "
            "them")
    prior = groups.prior()
    link_prior, load = prior, None
    if options.unmodelled_load and options.prior == "nominal" and np.any(nominal[layout.indices("m")] > 0):
        flange = model.joint_ids[-1] - 1  # the body the last identified joint moves (pinocchio joint k: body k - 1)
        load = flange_load(nominal, layout, attached, flange)  # a tool the URDF lacks: its own body, mass from 0
        prior = with_extra_body(prior, layout, load)
    with timer.stage("identifiability"):
        missing = _not_identified(w_b, tau, base, prior, options, warnings, kept)
    bounds = Bounds.from_config(options.bounds, layout)
    with timer.stage("estimate"):
        fixed = {m.index: m.value for m in missing}
        raw = data.tau_raw if fit_target is None else None  # a fit target (|tau| signs) has no raw torque to match
        setting = _FitSetting(options, data, model.joints, base, prior, link_prior, load, bounds, attached, fixed,
                              kept, groups if _by_evidence(options, nominal, layout) else None)
        fitted = _fitted(setting, w_b, tau, raw)
    terms: list[TermFit] = []
    if fit_target is None and position_torque_setting(options.position_torque, model.joints) != "off":
        with timer.stage("position_torque"):
            found = _position_terms(setting, w_b, tau, fitted)
        if found is not None:
            terms, with_terms, messages = found
            fitted = with_terms or fitted
            warnings += messages + [t.message() for t in terms]
    check = None
    if (fit_target is None and not terms and fitted.weighting is not None and fitted.weighting.choice is not None
            and not fitted.weighting.choice.given):  # given scales are the estimator: not re-chosen here
        with timer.stage("wide_prior_check"):
            fitted, check = _wide_prior_check(setting, w_b, tau, fitted, nominal)
        if check.chosen == "wide":
            warnings.append(check.message())
    weighting, estimate, load_report = fitted.weighting, fitted.estimate, fitted.load_report
    warnings += fitted.reduced
    if weighting is not None and weighting.choice is not None:
        warnings.append(weighting.choice.summary())
    if estimate.status != SolverStatus.OPTIMAL:
        warnings.append(f"solver status {estimate.status}: the estimate may be inaccurate")
    if estimate.capped_data_weight is not None:
        warnings.append(f"MAP data weight capped at {estimate.capped_data_weight:g} (the data are numerically "
                        "noise-free): the standard deviations are those of that weight, not of the data")
    with timer.stage("evaluate"):
        predicted = torques(model, layout, estimate.delta, data.q, data.dq, data.ddq) + terms_torque(terms, data.q)
        err, err_joint = relative_error(data.tau_raw, predicted)
        warnings += [p.message() for p in coupled_pairs(data.tau_raw - predicted, data.dq, data.ddq, model.joints)]
        feasible = _checked_feasibility(estimate.delta, layout, options, bounds, attached)
        load_delta = np.zeros_like(estimate.delta)
        if load_report is not None:  # the links' realism without the load
            load_delta[layout.link_slice(load.link)] = fitted.load_parameters
        realism = link_realism(estimate.delta - load_delta, nominal, layout, attached,
                               None if options.prior != "nominal" else fitted.prior.std, estimate.delta_std)
        for r in realism:  # report.json: where each link's prior mass comes from
            r["prior_source"] = "geometry" if r["link"] in guessed else "description"
        warnings += [f"link {r['link']}: identified mass {r['mass']:.3g} kg is {r['mass_ratio']:.2f}x the prior "
                     f"{r['prior_mass']:.3g} kg (outside [0.5x, 2x]"
                     f"{'; the prior is a guess from its geometry' if r['link'] in guessed else ''})"
                     for r in realism if not r["realistic_mass"]]
        warnings += moved_mass_lines(realism)
    comparison = None
    if fit_target is None and options.method in COMPARED_METHODS:
        with timer.stage("least_squares"):
            try:  # what the prior buys, beside the result: its failure never loses the result
                comparison = compare_with_least_squares(_problem(setting, w_b, tau, fitted),
                                                        [t.series for t in terms], base, nominal, attached, predicted,
                                                        held_out=None if check is None else check.held_out,
                                                        split=None if check is None else check.split,
                                                        recorded=None if recorded_tau is None else
                                                        (recorded_tau, gains.gains))
            except EstimationError as failure:
                warnings.append(f"no comparison with plain least squares in this report: {failure}")
    result = IdentificationResult(model, layout, base, estimate.delta, estimate.beta,
                                  relative_std(estimate.beta_std, estimate.beta), nominal, feasible, estimate.status,
                                  err, err_joint, int(data.q.shape[0]), timer.timings, options, warnings,
                                  {**asdict(processing), "segments": data.segments,
                                   **({} if record is None else {"cutoff_choice": record})},
                                  [m.to_dict() for m in missing], realism, estimate.delta_std, estimate.inflation)
    result.fit = FitSeries(list(model.joints), data.t, data.q, data.dq, data.ddq, data.tau_raw, predicted,
                           kept if fit_target is None else None)  # a fit target's rows fit another torque (|tau|)
    result.untrusted_nominal = groups.untrusted if options.prior == "nominal" else ()
    result.excitation = excitation_quality(model, w_b, data.q, data.dq)
    grazed = estimate.polish is None or estimate.polish["margin_only"]  # a hair under the safety margin: report.json
    result.notes = list(data.notes) + ([] if grazed else [estimate.polish["message"]])
    if not result.link_masses_determined:
        result.notes.append(undetermined_masses_note(options, base))
    result.solver_polish = estimate.polish
    result.prior_std = fitted.prior.std if options.prior == "nominal" else None
    result.unmodelled_load = load_report
    result.data_weight = None if weighting is None else weighting.inflation.to_dict(model.joints)
    result.hyperparameters = None if weighting is None or weighting.choice is None else \
        {**weighting.choice.to_dict(model.joints), **({} if check is None else {"cross_validation": check.to_dict()})}
    result.least_squares = None if comparison is None else comparison.to_dict()
    result.effort_gains = None if gains is None else gains.to_dict(model.joints)
    result.position_torque = {t.series.joint: t.to_dict() for t in terms} if terms else None
    return result


def _estimates_gains(options: IdentificationOptions, fit_target: FitTarget | None, nominal: np.ndarray,
                     layout: ParameterLayout) -> bool:
    """Whether the effort gains are estimated (:mod:`dynid_ros.estimation.effort_gains`): ``effort_gains: auto``,
    FBPE with an informative nominal prior (it holds the gains' common scale), the torque as the target (not a fit
    target's ``|tau|``) and two joints at least (one joint's gain is the common scale itself)."""
    return (options.effort_gains == "auto" and fit_target is None and options.method == "fbpe"
            and options.prior == "nominal" and layout.n_dof >= 2 and bool(np.any(nominal[layout.indices("m")] > 0)))


def with_effort_gains(data: ProcessedData, tau: np.ndarray, options: IdentificationOptions, gains: np.ndarray,
                      joints: tuple[str, ...]) -> tuple[ProcessedData, np.ndarray, IdentificationOptions]:
    """The processed data and fit rows with each joint's effort times its gain (torque per unit of effort), and the
    options recording the whole effort scale (given times estimated: :func:`prepare_series` applies it again when
    the result is validated on another run)."""
    gains = np.asarray(gains, dtype=float)
    given = np.ones(gains.size) if options.effort_scale is None else effort_scale_vector(options.effort_scale,
                                                                                           list(joints))
    scaled = dataclasses.replace(data, tau=data.tau * gains, tau_raw=data.tau_raw * gains)
    fit = (np.asarray(tau, dtype=float).reshape(-1, gains.size) * gains).reshape(-1)
    return scaled, fit, dataclasses.replace(options, effort_scale=(given * gains).tolist())


def segment_warnings(segments: list[dict]) -> list[str]:
    """The console's account of gaps in the stamps: the segments processed separately, those left out."""
    if len(segments) < 2:
        return []
    spans = ", ".join(f"{s['start_s']:.3f}-{s['end_s']:.3f} s" + ("" if s["used"] else " (left out: too short)")
                      for s in segments)
    return [f"{len(segments) - 1} gap(s) in the stamps: {len(segments)} segments processed separately: {spans}"]


@dataclass
class _FitSetting:
    """What every estimate of one identification shares (the rows aside)."""

    options: IdentificationOptions
    data: ProcessedData
    joints: tuple[str, ...]
    base: BaseParameters
    prior: Prior
    link_prior: Prior
    load: ExtraBody | None
    bounds: Bounds
    attached: np.ndarray
    fixed: dict[int, float]
    kept: np.ndarray
    groups: PriorGroups | None = None
    """The links' prior by groups when the evidence chooses the hyperparameters (:func:`_by_evidence`), else None:
    the stated prior (``prior``, ``link_prior``)."""

    def prior_for(self, weighting: _Weighting | None, with_load: bool) -> Prior:
        """The prior of an estimate: the stated one, or at the evidence's choice (with the masses' own shape); with
        the flange load's body (``with_load``) or the links' own."""
        choice = None if weighting is None else weighting.choice
        if choice is None or self.groups is None:
            return self.prior if with_load else self.link_prior
        return self.groups_for(with_load).prior(choice.scales, shaped=True)

    def groups_for(self, with_load: bool) -> PriorGroups:
        """:attr:`groups`, with the flange load's prior as a fixed part (its link's mass left Gaussian)."""
        if not with_load or self.load is None:
            return self.groups
        layout = self.base.layout
        part = layout.link_slice(self.load.link)
        extra = np.zeros((layout.n_parameters, layout.n_parameters))
        extra[part, part] = self.load.covariance
        return self.groups.with_fixed(extra, np.array([part.start]))


def _by_evidence(options: IdentificationOptions, nominal: np.ndarray, layout: ParameterLayout) -> bool:
    """Whether the evidence chooses the prior's scales and the noise: FBPE with an informative nominal prior and
    ``hyperparameters: evidence`` (the default)."""
    chosen = options.hyperparameters == "evidence" or options.hyperparameter_scales is not None
    return (options.method == "fbpe" and options.prior == "nominal" and chosen
            and bool(np.any(nominal[layout.indices("m")] > 0)))


@dataclass
class _Weighting:
    """FBPE's data weighting: the WLS row weights, the per-joint variance inflation of the residual
    (:mod:`dynid_ros.estimation.model_error`) and the hyperparameters the evidence chose with them (None: the stated
    prior and the residual variance, :func:`dynid_ros.estimation.estimators.fbpe`)."""

    weights: np.ndarray
    inflation: JointInflation
    choice: HyperparameterChoice | None = None


@dataclass
class _Fitted:
    """One fit of an identification's rows: the FBPE weighting used (None for other methods), the estimate, the
    prior it used, the flange load split off it (its parameters and report; None when the data show none) and the
    console lines of the joints whose data count less."""

    weighting: _Weighting | None
    estimate: Estimate
    load_parameters: np.ndarray | None
    load_report: dict | None
    reduced: list[str]
    prior: Prior


def _fitted(s: _FitSetting, w_b: np.ndarray, tau: np.ndarray, raw: np.ndarray | None) -> _Fitted:
    """The fit of the rows ``w_b``, ``tau`` (``raw``: the recorded torque the residual structure is measured against,
    None: the target): the weighting, the estimate with it and the stated prior, again with the weighting of its own
    residual when that shows more model error; then, where the evidence chooses them (:func:`_by_evidence`), the
    hyperparameters for that weighting and the estimate at them (and once more when its residual shows more model
    error: a wider prior lets the links absorb it); and without the flange load when the data show none. The model
    error is measured on the stated prior's estimate first: an unconstrained or widely-held fit bends the links to
    absorb a torque the model lacks (a sensor gain error), which would read as a URDF the data contradict."""
    layout, options = s.base.layout, s.options
    loaded = s.load is not None

    def estimated(weighting: _Weighting | None) -> tuple[Prior, Estimate]:
        prior = s.prior_for(weighting, loaded)
        return prior, _estimate(options, w_b, tau, s.base, layout, prior, s.bounds, s.attached, s.fixed, s.kept,
                                weighting)

    weighting = _data_weighting(options, w_b, tau, s.data, s.joints, s.fixed, s.kept, raw)
    prior, estimate = estimated(weighting)
    refined = _refined_weighting(weighting, w_b, tau, estimate.beta, s.data, s.kept, s.joints, raw)
    if refined is not None or s.groups is not None:  # model error the unconstrained fit had absorbed, hyperparameters
        weighting = _chosen(s, w_b, tau, refined or weighting, loaded)
        prior, estimate = estimated(weighting)
        again = None if s.groups is None else \
            _refined_weighting(weighting, w_b, tau, estimate.beta, s.data, s.kept, s.joints, raw)
        if again is not None:
            weighting = _chosen(s, w_b, tau, again, loaded)
            prior, estimate = estimated(weighting)
    reduced = [] if weighting is None else weighting.inflation.reduced(s.joints)
    load_params, load_report = (None, None) if s.load is None else \
        split_extra_body(estimate.delta, estimate.delta_std, s.prior_for(weighting, False), layout, s.load)
    if s.load is not None and load_report is None:  # the data show no load: the links keep their own prior
        weighting = _chosen(s, w_b, tau, weighting, False)
        prior = s.prior_for(weighting, False)
        estimate = _estimate(options, w_b, tau, s.base, layout, prior, s.bounds, s.attached, s.fixed, s.kept,
                             weighting)
    return _Fitted(weighting, estimate, load_params, load_report, reduced, prior)


def _chosen(s: _FitSetting, w_b: np.ndarray, tau: np.ndarray, weighting: _Weighting | None, with_load: bool
            ) -> _Weighting | None:
    """``weighting`` with the hyperparameters the evidence chooses for the rows in the fit and its inflation
    (:mod:`dynid_ros.estimation.hyperparameters`; the prior with the flange load's body when ``with_load``), or as it
    is when the evidence does not choose them (:func:`_by_evidence`)."""
    if weighting is None or s.groups is None:
        return weighting
    blocks = estimators.JointBlocks.of(w_b, tau, len(s.joints), s.kept)
    choice = choose_hyperparameters(JointSums.of(blocks.normal_equations()), weighting.inflation.factor,
                                    s.groups_for(with_load), s.base.K, given=s.options.hyperparameter_scales,
                                    absorption=weighting.inflation.noise_inflation)
    return _Weighting(weighting.weights, weighting.inflation, choice)


def _position_terms(s: _FitSetting, w_b: np.ndarray, tau: np.ndarray,
                    fitted: _Fitted) -> tuple[list[TermFit], _Fitted | None, list[str]] | None:
    """The position-dependent torques the cross-validation keeps (:mod:`dynid_ros.identification.
    position_torque_selection`), the fit with them (:func:`_fitted`; None when none is kept) and the console's
    lines of the candidates not kept; None when no joint is a candidate (no structure by position) or named."""
    data, n_dof = s.data, len(s.joints)
    estimate = fitted.estimate
    setting = position_torque_setting(s.options.position_torque, s.joints)
    named = [] if isinstance(setting, str) else [s.joints.index(j) for j in setting]
    residual = data.tau_raw - (w_b @ estimate.beta).reshape(-1, n_dof)
    candidates = flagged_by_position(residual, data.q, s.kept) if setting == "auto" else []
    if not candidates and not named:
        return None
    problem = _problem(s, w_b, tau, fitted)
    choices = choose_terms(problem, candidates, named, s.joints)
    messages = [c.message() for c in choices if not c.kept]
    in_fit = s.kept.reshape(-1, n_dof)
    indices = [s.joints.index(c.joint) for c in choices if c.kept]
    series = [PositionSeries.over(s.joints[j], j, data.q[in_fit[:, j], j]) for j in indices]
    if not series:
        return [], None, messages
    profiles = problem.profiles(series, s.kept, estimate.beta)
    rows, target = profiled_rows(w_b, data.q, profiles, s.kept), profiled_vector(tau, data.q, profiles, s.kept)
    raw = profiled_vector(data.tau_raw.reshape(-1), data.q, profiles, s.kept).reshape(-1, n_dof)
    refit = _fitted(s, rows, target, raw)
    chosen = {c.joint: c for c in choices}
    terms = [TermFit(p.series, *p.coefficients(refit.estimate.beta), chosen[p.series.joint]) for p in profiles]
    return terms, refit, messages


def _problem(s: _FitSetting, w_b: np.ndarray, tau: np.ndarray, fitted: _Fitted) -> FitProblem:
    """The rows of the fit with the identification's own estimator (its weighting, prior, bounds) for
    cross-validation (:class:`~dynid_ros.identification.position_torque_selection.FitProblem`)."""
    weighting, prior = fitted.weighting, fitted.prior

    def estimator(w: np.ndarray, target: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return _estimate(s.options, w, target, s.base, s.base.layout, prior, s.bounds, s.attached, s.fixed, rows,
                         weighting).beta

    return FitProblem(w_b, tau, s.data.tau_raw.reshape(-1), s.data.q, s.kept, estimator,
                      np.sqrt(np.mean(s.data.tau**2, axis=0)))


WIDE_PRIOR = 100.0
"""The widest candidate of :func:`_wide_prior_check`: every group's tolerance this many times the evidence's choice
(the prior's weight in a direction the data determine falls by its square, 1e-4: the feasible least-squares limit, the
LMIs and bounds still acting, the prior keeping only what the data leave undetermined)."""
WIDER_PRIORS = (3.0, 10.0, WIDE_PRIOR)
"""The factors on the evidence's tolerances that :func:`_wide_prior_check` cross-validates: a grid a half decade
apart from the evidence's choice (factor 1) to the feasible least-squares limit. Graded, because the two ends alone
leave no choice where the URDF is a little off: the limit lets what the data barely determine slide (the real Panda:
link 2 at 22x its CAD mass), while a prior a few times wider still holds it and lets the data correct what they
see."""


@dataclass
class WidePriorCheck:
    """The blocked cross-validation of the MAP at the evidence's hyperparameters against wider priors
    (:func:`_wide_prior_check`): the evidence's held-out error, each wider factor's (``curve``), the factor compared
    (the kept one, else the widest) with its error and whether its links are realistic, which was kept, and the kept
    fit's held-out prediction (samples, n_dof; reused by the least-squares comparison)."""

    evidence_error: float
    wide_error: float
    wide_realistic: bool
    chosen: str
    held_out: np.ndarray
    wide_factor: float
    curve: dict[float, float]
    split: ValidationSplit
    """The blocks (:func:`~dynid_ros.estimation.time_blocks.validation_split`)."""

    def to_dict(self) -> dict:
        """``report.json`` ``hyperparameters.cross_validation``."""
        return {"method": "blocked cross-validation", "blocks": BLOCKS, **self.split.to_dict(),
                "reference": "Bergmeir & Benitez 2012; Roberts et al. 2017", "evidence_error": self.evidence_error,
                "wide_error": self.wide_error, "wide_factor": self.wide_factor, "wide_realistic": self.wide_realistic,
                "chosen": self.chosen,
                "curve": {f"{factor:g}": error for factor, error in {1.0: self.evidence_error, **self.curve}.items()}}

    def message(self) -> str:
        """The console's line when a wider prior is kept."""
        limit = " (feasible least squares)" if self.wide_factor >= WIDE_PRIOR else ""
        return (f"prior widened: the URDF's tolerances {self.wide_factor:g}x the evidence's{limit} predict held-out "
                f"blocks better ({self.split.words()}; {distinct_percents(self.wide_error, self.evidence_error)} at "
                "the evidence's) and are kept, every link still within [0.5x, 2x] of its URDF mass")


def distinct_percents(better: float, worse: float) -> str:
    """``"a % vs b %"`` of two shares, with as many decimals (two to five) as it takes to print them apart: a wider
    prior is kept for any strict gain, which on a real arm can be a thousandth of a point (2.90 % vs 2.90 % told the
    user nothing)."""
    for digits in range(2, 6):
        a, b = f"{100 * better:.{digits}f}", f"{100 * worse:.{digits}f}"
        if a != b:
            break
    return f"{a} % vs {b} %"


def _wide_prior_check(s: _FitSetting, w_b: np.ndarray, tau: np.ndarray, fitted: _Fitted, nominal: np.ndarray
                      ) -> tuple[_Fitted, WidePriorCheck]:
    """The MAP at the evidence's hyperparameters or at every tolerance a factor of :data:`WIDER_PRIORS` wider,
    whichever predicts held-out blocks best among those whose links are believable. The evidence (MacKay 1992;
    Tipping 2001) chooses each group's scale within a box about the stated tolerance, so it cannot reach the limit
    of a URDF the data contradict (the evidence of an infinitely wide prior is zero: its Occam factor), and it counts
    each joint's data with the effective sample size of a residual that model error makes structured, an
    approximation. Blocked cross-validation (Bergmeir & Benitez 2012; Roberts et al. 2017; the blocks of
    :func:`~dynid_ros.estimation.time_blocks.validation_split`: by the phase of a repeated excitation, else
    contiguous time blocks) judges the candidates by what they predict: each block by the
    fit of the others, the identification's own estimator (weighting, noise, LMIs, bounds), against the recorded
    torque. A wider prior is kept only when it predicts strictly better than the evidence's and its links pass the
    report's realism check (every mass within [0.5x, 2x] of its CAD value): the prior is what keeps links
    believable, so it is given up only for a prediction the data show and a body a mechanical engineer would still
    believe. The candidates are tried from the best held-out error down; the first realistic one is kept. Without
    position-dependent terms only (their profiled rows belong to the evidence's fit)."""
    raw = s.data.tau_raw
    split = validation_split(s.data.q)
    evidence_held = _held_out(_problem(s, w_b, tau, fitted), split)
    evidence_error = relative_error(raw, evidence_held)[0]
    scales = {factor: {g: v * factor for g, v in fitted.weighting.choice.scales.items()} for factor in WIDER_PRIORS}
    wider = {factor: dataclasses.replace(fitted, prior=s.groups_for(fitted.load_report is not None).prior(
        scales[factor], shaped=True)) for factor in WIDER_PRIORS}
    held = {factor: _held_out(_problem(s, w_b, tau, f), split) for factor, f in wider.items()}
    curve = {factor: relative_error(raw, prediction)[0] for factor, prediction in held.items()}
    realistic = {}
    for factor in sorted((f for f in curve if curve[f] < evidence_error), key=curve.get):
        candidate = _refit(s, w_b, tau, wider[factor], scales[factor], nominal)
        realistic[factor] = candidate is not None
        if candidate is not None:
            return candidate, WidePriorCheck(evidence_error, curve[factor], True, "wide", held[factor], factor, curve,
                                             split)
    return fitted, WidePriorCheck(evidence_error, curve[WIDE_PRIOR], realistic.get(WIDE_PRIOR, False), "evidence",
                                  evidence_held, WIDE_PRIOR, curve, split)


def _refit(s: _FitSetting, w_b: np.ndarray, tau: np.ndarray, wider: _Fitted, scales: dict[str, float],
           nominal: np.ndarray) -> _Fitted | None:
    """The estimate of the whole window at ``wider``'s prior, of the groups' ``scales`` (an unmodelled load split off
    as at the evidence's),
    or None where a link's mass leaves [0.5x, 2x] of its CAD value."""
    layout = s.base.layout
    estimate = _estimate(s.options, w_b, tau, s.base, layout, wider.prior, s.bounds, s.attached, s.fixed, s.kept,
                         wider.weighting)
    load_params, load_report = None, None
    if wider.load_report is not None:
        link_prior = s.groups_for(False).prior(scales, shaped=True)
        load_params, load_report = split_extra_body(estimate.delta, estimate.delta_std, link_prior, layout, s.load)
    load_delta = np.zeros_like(estimate.delta)
    if load_report is not None:
        load_delta[layout.link_slice(s.load.link)] = load_params
    if not all(r["realistic_mass"] for r in link_realism(estimate.delta - load_delta, nominal, layout, s.attached)):
        return None
    return dataclasses.replace(wider, estimate=estimate, load_parameters=load_params, load_report=load_report)


def _held_out(problem: FitProblem, split: ValidationSplit) -> np.ndarray:
    """(samples, n_dof) prediction of every block of ``split`` by ``problem``'s estimator fitted on the others."""
    n_dof = problem.n_dof
    rows = np.asarray(problem.rows, dtype=bool).reshape(-1)
    block = split.block
    out = np.zeros_like(problem.q, dtype=float)
    for k in range(BLOCKS):
        held = block == k
        out[held] = problem.predict(rows & (np.repeat(block, n_dof) != k), [])[held]
    return out


COMPARED_METHODS = ("fbpe", "ols", "wls", "bpfc")
"""Methods cross-validated beside OLS in every result (:mod:`dynid_ros.identification.least_squares_comparison`;
PBPR's random starts would cost it a minute)."""


def moved_mass_lines(realism: list[dict]) -> list[str]:
    """The console's lines for the links whose mass the data moved with strong evidence (log Bayes factor above
    :data:`~dynid_ros.estimation.prior.STRONG_EVIDENCE`, :func:`~dynid_ros.estimation.prior.moved_mass_evidence`)."""
    def prior(r: dict) -> tuple[str, str]:  # (its value, the mass)
        return ("geometry's guess", "guessed") if r.get("prior_source") == "geometry" else ("CAD value", "CAD")

    return [f"link {r['link']}: mass moved to {r['mass_ratio']:.2f}x its {prior(r)[0]} ({r['mass']:.3g} kg, prior "
            f"{r['prior_mass']:.3g} ± {r['mass_prior_std']:.2g} kg): the data demand it (log Bayes factor "
            f"{r['mass_move_log_bayes_factor']:.1f} against the {prior(r)[1]} mass)"
            for r in realism if r.get("mass_move_log_bayes_factor", 0.0) > STRONG_EVIDENCE]


def _fit_rows(data: ProcessedData, w_b: np.ndarray, min_speed: float, fit_target: FitTarget | None,
              warnings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The torque rows of the fit and the mask of the rows in it: rows of joints slower than ``min_speed``, or left
    out by ``fit_target``, are removed from every fit, count and test (:func:`~dynid_ros.estimation.estimators.
    in_fit`), not zeroed; a warning says how many."""
    tau = data.tau.reshape(-1)
    kept = fit_rows(data.dq, min_speed)
    if fit_target is not None:  # e.g. the sign search of --abs-effort: on the whole regressor in memory
        tau, kept = fit_target(data, np.asarray(w_b), kept)
    if not kept.all():
        warnings.append(f"{100 * (1 - kept.mean()):.1f} % of the rows left out of the fit "
                        + (f"(|q'| < {min_speed} rad/s)" if fit_target is None else "(fit target)"))
    return tau, kept


def _not_identified(w_b: np.ndarray, tau: np.ndarray, base: BaseParameters, prior: Prior,
                    options: IdentificationOptions, warnings: list[str], kept: np.ndarray) -> list:
    """The base parameters the data leave at the prior (none without an informative prior: then all must be
    excited); an error when they are most of them, or any with ``strict``."""
    layout = base.layout
    informative = options.prior == "nominal" and bool(np.any(prior.mean[layout.indices("m")] > 0))
    if not informative:  # no prior to keep a parameter at (--prior none, a DH table): all must be excited
        check_excited(estimators.in_fit(w_b, tau, kept)[0], base)
        return []
    missing = not_identified(w_b, tau, base, prior.mean, prior.covariance, kept)
    _check_excitation(missing, base.n_base, options.strict)
    if missing:
        warnings.append(f"{len(missing)} base parameter(s) not identified by the data, kept at the prior: "
                        + "; ".join(f"{m.description} ({m.name})" for m in missing))
    return missing


def _checked_feasibility(delta: np.ndarray, layout: ParameterLayout, options: IdentificationOptions, bounds: Bounds,
                         attached: np.ndarray) -> bool:
    """Whether ``delta`` passes the consistency and bound checks; an error for a feasible method that fails."""
    feasible = bool(feasibility.is_feasible(delta, layout, consistency=options.consistency, attached=attached)
                    and not bounds.violations(delta, layout, tol=1e-6))
    if options.method in FEASIBLE_METHODS and not feasible:
        raise EstimationError(f"{options.method}: the estimate fails its own physical-consistency or bound "
                              "check; nothing written")
    return feasible


def _check_excitation(missing: list, n_base: int, strict: bool) -> None:
    """IdentifiabilityError when the data identify nearly nothing, or any parameter is missing with ``strict``."""
    if not missing or (not strict and len(missing) <= MOSTLY_UNIDENTIFIED * n_base):
        return
    names = [f"{m.name} = {m.expression} ({m.description})" for m in missing[:6]]
    more = f" and {len(missing) - 6} more" if len(missing) > 6 else ""
    why = "" if strict else f" (more than {MOSTLY_UNIDENTIFIED:.0%} of {n_base})"
    raise IdentifiabilityError(f"too little excitation: {len(missing)} base parameter(s) not identifiable from this "
                               f"data{why}: {'; '.join(names)}{more}")


def _data_weighting(options: IdentificationOptions, w_b: np.ndarray, tau: np.ndarray, data: ProcessedData,
                    joints: tuple[str, ...], fixed: dict[int, float], rows: np.ndarray, raw: np.ndarray | None
                    ) -> _Weighting | None:
    """FBPE's row weights (WLS, per joint) and the per-joint variance inflation of the WLS residual
    (:mod:`dynid_ros.estimation.model_error`: model error counts as few samples); None for other methods."""
    if options.method != "fbpe":
        return None
    fit = estimators.wls(w_b, tau, len(joints), fixed=fixed, rows=rows)
    return _Weighting(fit.weights, _inflation(w_b, tau, fit.beta, data, rows, joints, raw))


def _inflation(w_b: np.ndarray, tau: np.ndarray, beta: np.ndarray, data: ProcessedData, rows: np.ndarray,
               joints: tuple[str, ...], raw: np.ndarray | None) -> JointInflation:
    """The per-joint inflation of the residual of ``beta``: its structure measured against the unfiltered torque
    ``raw`` (None: against the fit target)."""
    n_dof = data.q.shape[1]
    residual = w_b @ beta  # the prediction, turned into the residuals in place (an hour of data: 20 MB each)
    raw_residual = None if raw is None else raw - residual.reshape(-1, n_dof)
    np.subtract(tau, residual, out=residual)
    return joint_inflation(residual.reshape(-1, n_dof), data.q, data.dq, rows.reshape(-1, n_dof), raw_residual,
                           data.ddq, joints)


def _refined_weighting(weighting: _Weighting | None, w_b: np.ndarray, tau: np.ndarray,
                       beta: np.ndarray, data: ProcessedData, rows: np.ndarray, joints: tuple[str, ...],
                       raw: np.ndarray | None) -> _Weighting | None:
    """The weighting with the structure of the estimate's own residual: an unconstrained fit bends its parameters
    to absorb a torque the model lacks (a spring looks like gravity), so its residual hides it; the MAP residual,
    held near the prior, shows it. A joint takes the estimate residual's inflation where that shows significant
    structure and a larger inflation (:meth:`JointInflation.merged`). None when no joint does (nothing to change)."""
    if weighting is None:
        return None
    second = _inflation(w_b, tau, beta, data, rows, joints, raw)
    merged = weighting.inflation.merged(second)
    if np.array_equal(merged.factor, weighting.inflation.factor):
        return None
    return _Weighting(weighting.weights, merged)


def _estimate(options: IdentificationOptions, w_b: np.ndarray, tau: np.ndarray, base: BaseParameters,
              layout: ParameterLayout, prior: Prior, bounds: Bounds, attached: np.ndarray,
              fixed: dict[int, float], rows: np.ndarray | None = None,
              weighting: _Weighting | None = None) -> Estimate:
    """Run the chosen estimator (:func:`dynid_ros.estimation.method.estimate`) on the rows in the fit (``rows``);
    the standard deviations are those of the estimate returned. ``weighting``: FBPE's row weights and per-joint
    inflation (:func:`_data_weighting`), and the noise the evidence chose (then the data term's weights)."""
    settings = EstimatorSettings(Method(options.method), prior.mean, consistency=options.consistency,
                                 solver=options.solver, bounds=bounds, attached=attached, fixed=fixed,
                                 prior=prior if options.prior == "nominal" else None, pbpr=options.pbpr)
    noise = None
    if weighting is not None:
        weights, factors = weighting.weights, weighting.inflation.factor
        noise = None if weighting.choice is None else weighting.choice.noise
    else:  # FBPE without a weighting given: the WLS weights of these rows
        weights = estimators.wls(w_b, tau, layout.n_dof, fixed=fixed, rows=rows).weights if options.method == "fbpe" \
            else None
        factors = None
    return estimate(w_b, tau, base, settings, rows=rows, weights=weights, joint_inflation=factors, joint_noise=noise)
