"""The identification pipeline's entry point: what ``dynid identify`` and the identification node run.

:func:`identify` loads the model and runs the linear identification
(:mod:`dynid_ros.pipeline.linear_identification`), or, with ``sigmoid`` friction, the alternation of
:mod:`dynid_ros.pipeline.sigmoid_identification`. Each stage is timed. The result holds the full standard
parameter vector (for the URDF), the base parameters with their uncertainties, and the fit on the
identification window.
"""

from __future__ import annotations

from pathlib import Path

from dynid_ros.data.bag_io import read_joint_states
from dynid_ros.data.bag_stream import BagScan, scan_joint_states
from dynid_ros.data.joint_states import JointStateSeries, held_positions
from dynid_ros.data.signal_processing import CUTOFF_AUTO, ProcessingOptions
from dynid_ros.dynamics.base_parameters import BaseParameters
from dynid_ros.pipeline.identification_result import IdentificationResult
from dynid_ros.pipeline.linear_identification import FitTarget, identify_linear, identify_processed, processed_scan
from dynid_ros.pipeline.options import IdentificationOptions
from dynid_ros.pipeline.sigmoid_identification import identify_with_sigmoid
from dynid_ros.pipeline.timing import StageTimer
from dynid_ros.robot.model import RobotModel, load_model


def identified_model(series: JointStateSeries, options: IdentificationOptions, timer: StageTimer,
                     model: RobotModel | None = None, urdf: str | Path | None = None, dh: str | Path | None = None,
                     xacro_args: list[str] | None = None) -> tuple[RobotModel, list[str]]:
    """The model to identify (``model``, or ``urdf``/``dh`` reduced to the options' joints or to the movable
    joints in the data), and a warning naming the joints it locks."""
    with timer.stage("model"):
        if model is None:  # joints left out are held where the data show them
            model = load_model(urdf=urdf, dh=dh, joints=options.joints, available=series.names,
                               xacro_args=xacro_args, locked_at=held_positions(series.window(options.start,
                                                                                             options.end)))
    return model, locked_warnings(model)


def locked_warnings(model: RobotModel) -> list[str]:
    """The warning naming the joints ``model`` locks, if any."""
    if not model.locked:
        return []
    return [f"joints locked (not identified): {', '.join(model.locked)}, where the data hold them "
            f"(at {', '.join(f'{model.locked_positions[j]:.4g}' for j in model.locked)})"]


def scanned_model(scan: BagScan, options: IdentificationOptions, timer: StageTimer, model: RobotModel | None = None,
                  urdf: str | Path | None = None, dh: str | Path | None = None,
                  xacro_args: list[str] | None = None) -> tuple[RobotModel, list[str]]:
    """:func:`identified_model` for a bag read in chunks: the joints it locks are held at their median over the
    window, read from the bag only when there are any."""
    with timer.stage("model"):
        if model is None:
            model = load_model(urdf=urdf, dh=dh, joints=options.joints, available=scan.names, xacro_args=xacro_args)
            held = [j for j in model.locked if j in scan.names]
            if held:
                model = load_model(urdf=urdf, dh=dh, joints=options.joints, available=scan.names,
                                   xacro_args=xacro_args, locked_at=scan.held_positions(held, options.start,
                                                                                        options.end))
    return model, locked_warnings(model)


def identify_bag(bag: str | Path, options: IdentificationOptions, urdf: str | Path | None = None,
                 dh: str | Path | None = None, model: RobotModel | None = None, timer: StageTimer | None = None,
                 xacro_args: list[str] | None = None, scan: BagScan | None = None) -> IdentificationResult:
    """:func:`identify` from a rosbag2, streamed: the bag read in chunks (:mod:`dynid_ros.data.bag_stream`), each
    processed on its own (``processing.chunk_s``), the regressor compressed block by block, so memory holds the
    decimated samples only (and the messages of other publishers than the main one, e.g. a gripper's). The default
    cutoff, derived from the bandwidth of the window's first minute (``cutoff_hz: bandwidth``), streams too; sigmoid
    friction and a cutoff chosen by cross-validation (``cutoff_hz: auto``) are identified in memory (:func:`identify`).
    ``scan``: the bag's :func:`scan_joint_states`, when the caller has it already."""
    options.check()
    timer = timer or StageTimer()
    with timer.stage("read_bag"):
        if "sigmoid" in options.friction or options.processing.get("cutoff_hz") == CUTOFF_AUTO:  # in memory
            scan = None
        elif scan is None:
            scan = scan_joint_states(bag, options.topic)
        series = read_joint_states(bag, topic=options.topic) if scan is None else None
    if series is not None:
        return identify(series, options, urdf, dh, model, timer, xacro_args)
    model, warnings = scanned_model(scan, options, timer, model, urdf, dh, xacro_args)
    with timer.stage("process"):
        data = processed_scan(scan, model, options, ProcessingOptions(**options.processing))
    del scan  # the stamps of every message: not needed any more
    return identify_processed(data, options, model, timer, warnings=warnings)


def identify(series: JointStateSeries, options: IdentificationOptions, urdf: str | Path | None = None,
             dh: str | Path | None = None, model: RobotModel | None = None,
             timer: StageTimer | None = None, xacro_args: list[str] | None = None,
             fit_target: FitTarget | None = None, base: BaseParameters | None = None) -> IdentificationResult:
    """Identify the parameters of the robot from recorded joint states (``xacro_args``: of a ``.urdf.xacro``).

    See :func:`~dynid_ros.pipeline.linear_identification.identify_linear` for ``fit_target`` and ``base``,
    which do not apply to sigmoid friction."""
    options.check()
    timer = timer or StageTimer()
    model, warnings = identified_model(series, options, timer, model, urdf, dh, xacro_args)
    if "sigmoid" in options.friction:  # nonlinear friction: alternate with the linear estimate
        return identify_with_sigmoid(series, options, model, timer)
    return identify_linear(series, options, model, timer, fit_target, base, warnings)
