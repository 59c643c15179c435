"""Validation of an identified model on recorded data (``dynid validate``).

The prediction uses the processed motion (filtered q, q', q'') with the same processing
options as the identification; the reference is the recorded effort, unfiltered (Sousa & Cortesão 2014
Table 8), so filtering cannot flatter the model.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dynid_ros.data.bag_stream import scan_joint_states
from dynid_ros.data.joint_states import JointStateSeries, held_positions
from dynid_ros.data.signal_processing import ProcessingOptions, process
from dynid_ros.dynamics.regressor import torques
from dynid_ros.errors import DataError
from dynid_ros.estimation.fit_quality import relative_error
from dynid_ros.estimation.position_torque import PositionSeries, term_torques, terms_from_dict
from dynid_ros.estimation.sigmoid_friction import sigmoid_from_parameters, sigmoid_torque
from dynid_ros.identification.fit_series import FitSeries
from dynid_ros.identification.linear_identification import prepare_series, processed_scan
from dynid_ros.identification.options import IdentificationOptions, recorded_options
from dynid_ros.identification.timing import StageTimer
from dynid_ros.reporting.identification_report import diagnostics, fit_section, joint_units, provenance_section
from dynid_ros.reporting.report_html import Document
from dynid_ros.reporting.result_directory import PARAMETERS_FILE, URDF_FILE, load_parameters
from dynid_ros.robot.coupling import MotorCoupling, apply_coupling
from dynid_ros.robot.model import RobotModel, load_model
from dynid_ros.robot.parameters import ParameterLayout

if TYPE_CHECKING:
    from dynid_ros.data.signal_processing import ProcessedData


@dataclass
class ValidationResult:
    """Measured vs predicted torque on a validation window."""

    joints: list[str]
    t: np.ndarray
    tau: np.ndarray
    tau_hat: np.ndarray
    relative_error: float
    relative_error_per_joint: list[float]
    timings_s: dict[str, float]
    fit: FitSeries | None = None
    """The processed motion with the torques (for the per-joint plots and diagnostics of the report)."""
    units: list[tuple[str, str, str]] | None = None
    """(position, velocity, torque) unit per joint."""

    def report(self) -> dict:
        out = {"relative_error": self.relative_error, "relative_error_per_joint": self.relative_error_per_joint,
               "joints": self.joints, "n_samples": int(self.t.size), "timings_s": self.timings_s,
               "rms_error_per_joint": [float(v) for v in np.sqrt(np.mean((self.tau - self.tau_hat) ** 2, axis=0))]}
        if self.fit is not None:
            out["joint_diagnostics"] = [d.to_dict() for d in diagnostics(self.fit)]
        return out


def load_result_model(result_dir: Path, parameters: dict, locked_at: dict[str, float] | None = None) -> RobotModel:
    """The identified robot of a result directory (its URDF, or the DH file it came from); the locked joints
    at ``locked_at``, else where the identification data held them."""
    joints = parameters["robot"]["joints"]
    locked_at = {**(parameters["robot"].get("locked_positions") or {}), **(locked_at or {})}
    urdf = Path(result_dir) / URDF_FILE
    coupling = parameters["robot"].get("coupling")
    if urdf.is_file() and coupling:  # identified in motor coordinates (dynid_ros.robot.coupling)
        motors = MotorCoupling.from_config(coupling, str(Path(result_dir) / PARAMETERS_FILE))
        return apply_coupling(load_model(urdf=urdf, joints=list(motors.joints), locked_at=locked_at), motors)
    if urdf.is_file():
        return load_model(urdf=urdf, joints=joints, locked_at=locked_at)
    source = parameters["robot"].get("source")
    if source and Path(source).is_file():
        return load_model(dh=source, joints=joints, locked_at=locked_at)
    raise DataError(f"{result_dir}: no {URDF_FILE} and the source description {source} is not available")


def validate(result_dir: Path, series: JointStateSeries, start: float | None = None,
             end: float | None = None) -> ValidationResult:
    """Predict torques with the identified parameters of ``result_dir`` and compare with the recorded effort."""
    timer = StageTimer()
    with timer.stage("load"):
        parameters = load_parameters(result_dir)
        model = load_result_model(result_dir, parameters, held_positions(series.window(start, end)))
        options, layout, delta, sigmoid = _identified(result_dir, parameters, model, start, end)
    with timer.stage("process"):
        data = processed_window(model, series, options, parameters.get("processing", {}))
    return evaluate_parameters(model, layout, delta, data, timer, sigmoid, position_terms(parameters, model))


def validate_bag(result_dir: Path, bag: str | Path, topic: str, start: float | None = None,
                 end: float | None = None) -> ValidationResult:
    """:func:`validate` on a rosbag2, streamed (as :func:`dynid_ros.identification.identify.identify_bag`: read and
    processed in chunks, the torques predicted block by block)."""
    scan = scan_joint_states(bag, topic)
    timer = StageTimer()
    with timer.stage("load"):
        parameters = load_parameters(result_dir)
        model = load_result_model(result_dir, parameters)
        held = [j for j in model.locked if j in scan.names]
        if held:  # where this bag holds them
            model = load_result_model(result_dir, parameters, scan.held_positions(held, start, end))
        options, layout, delta, sigmoid = _identified(result_dir, parameters, model, start, end)
    with timer.stage("process"):
        data = processed_scan(scan, model, options, ProcessingOptions.from_record(parameters.get("processing", {})))
    del scan  # the stamps of every message: not needed any more
    return evaluate_parameters(model, layout, delta, data, timer, sigmoid, position_terms(parameters, model))


def validate_processed(result_dir: Path, data: ProcessedData) -> ValidationResult:
    """:func:`validate` on motion already processed as the result's own processing does (e.g. the identification's
    own window, :mod:`dynid_ros.reporting.result_check`): the result's files read back, the torques predicted."""
    parameters = load_parameters(result_dir)
    model = load_result_model(result_dir, parameters)
    _, layout, delta, sigmoid = _identified(result_dir, parameters, model, None, None)
    return evaluate_parameters(model, layout, delta, data, sigmoid=sigmoid, position=position_terms(parameters, model))


def _identified(result_dir: Path, parameters: dict, model: RobotModel, start: float | None, end: float | None
                ) -> tuple[IdentificationOptions, ParameterLayout, np.ndarray, np.ndarray | None]:
    """The options (window, layout, effort scale), layout, parameter vector and sigmoid friction of a result."""
    opts = parameters["options"]
    options = recorded_options(opts, start, end)
    layout = model.layout_for(options.friction, options.armature)
    delta = np.asarray(parameters["parameter_vector"]["values"], dtype=float)
    if delta.size != layout.n_parameters:
        raise DataError(f"{result_dir}: {delta.size} parameters in {PARAMETERS_FILE} but the model needs "
                        f"{layout.n_parameters}")
    sigmoid = sigmoid_from_parameters(parameters, layout.joints) if "sigmoid" in layout.friction else None
    return options, layout, delta, sigmoid


def position_terms(parameters: dict, model: RobotModel) -> tuple[list[PositionSeries], list[np.ndarray]] | None:
    """The position-dependent torques of a result's ``parameters.yaml`` (``position_torque``), or None."""
    return terms_from_dict(parameters.get("position_torque"), model.joints, PARAMETERS_FILE)


def processed_window(model: RobotModel, series: JointStateSeries, options: IdentificationOptions,
                     processing: dict) -> ProcessedData:
    """The window of ``series`` in the model's joint order, processed as at identification."""
    return process(prepare_series(series, model, options), ProcessingOptions.from_record(processing))


def evaluate_parameters(model: RobotModel, layout: ParameterLayout, delta: np.ndarray, data: ProcessedData,
                        timer: StageTimer | None = None, sigmoid: np.ndarray | None = None,
                        position: tuple[list[PositionSeries], list[np.ndarray]] | None = None) -> ValidationResult:
    """Torques predicted by ``delta`` (plus the sigmoid friction ``sigmoid``, Gaz et al. 2019 eq. 25, and the
    position-dependent torques ``position`` = (series, coefficients), when given) on the processed motion vs the
    recorded effort (Sousa & Cortesão 2014 eq. 84)."""
    timer = timer or StageTimer()
    with timer.stage("predict"):
        tau_hat = torques(model, layout, delta, data.q, data.dq, data.ddq)
        if sigmoid is not None:
            tau_hat = tau_hat + sigmoid_torque(data.dq, sigmoid)
        if position is not None:
            tau_hat = tau_hat + term_torques(*position, data.q)
        err, per_joint = relative_error(data.tau_raw, tau_hat)
    fit = FitSeries(list(model.joints), data.t, data.q, data.dq, data.ddq, data.tau_raw, tau_hat)
    return ValidationResult(list(model.joints), data.t, data.tau_raw, tau_hat, err, per_joint, timer.timings, fit,
                            joint_units(model))


def html_path(report: Path) -> Path:
    """The HTML beside a validation report ``F``: ``F`` with the suffix ``.html`` (``F.html`` if it has none)."""
    report = Path(report)
    return report.with_suffix(".html") if report.suffix and report.suffix != ".html" else \
        report.with_name(report.name + ".html")


def write_report(result: ValidationResult, path: Path, provenance: dict | None = None) -> Path | None:
    """Write the validation report JSON and, when the result has its fit, the HTML beside it
    (:func:`html_path`; per-joint plots and table, provenance); each written whole or not at all.
    Returns the HTML path (None when not written)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    html = None
    if result.fit is not None:
        html = html_path(path)
        with tempfile.TemporaryDirectory() as figures:
            doc = Document("dynid validation report")
            doc.paragraph(f"Relative error {100 * result.relative_error:.2f} % over {result.t.size} samples, against "
                          "the recorded (unfiltered) effort.")
            fit_section(doc, result.fit, result.units or [("rad", "rad/s", "N m")] * len(result.joints),
                        Path(figures), "validation data")
            if provenance is not None:
                provenance_section(doc, provenance)
            _replace_text(html, doc.html())
    _replace_text(path, json.dumps(result.report(), indent=2) + "\n")
    return html


def _replace_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
