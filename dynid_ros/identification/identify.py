"""The identification pipeline's entry point: what ``dynid identify`` and the identification node run.

:func:`identify` loads the model and runs the linear identification
(:mod:`dynid_ros.identification.linear_identification`), or, with ``sigmoid`` friction, the alternation of
:mod:`dynid_ros.identification.sigmoid_identification`. Each stage is timed. The result holds the full standard
parameter vector (for the URDF), the base parameters with their uncertainties, and the fit on the
identification window.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dynid_ros.data.bag_io import JOINT_STATE_TYPE, bag_info, read_joint_states
from dynid_ros.data.bag_stream import BagScan, scan_joint_states
from dynid_ros.data.gains_file import read_gains, scale_by_name
from dynid_ros.data.joint_states import JointStateSeries, held_positions
from dynid_ros.data.signal_processing import ProcessingOptions
from dynid_ros.dynamics.base_parameters import BaseParameters
from dynid_ros.errors import ConfigError, DataError
from dynid_ros.identification.effort_unit import require_torque
from dynid_ros.identification.identification_result import IdentificationResult
from dynid_ros.identification.linear_identification import (
    FitTarget,
    identify_linear,
    identify_processed,
    processed_scan,
)
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.identification.sample_rate import sample_rate_warnings
from dynid_ros.identification.sigmoid_identification import identify_with_sigmoid
from dynid_ros.identification.timing import StageTimer
from dynid_ros.robot.model import RobotModel, load_model


def identified_model(series: JointStateSeries, options: IdentificationOptions, timer: StageTimer, *,
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


def scanned_model(scan: BagScan, options: IdentificationOptions, timer: StageTimer, *, model: RobotModel | None = None,
                  urdf: str | Path | None = None, dh: str | Path | None = None,
                  xacro_args: list[str] | None = None) -> tuple[RobotModel, list[str]]:
    """:func:`identified_model` for a bag read in chunks: the joints it locks are held at their median over the
    window, read from the bag only when there are any."""
    with timer.stage("model"):
        if model is None:  # the bag read for the locked joints only when there are any
            def held(locked: list[str]) -> dict[str, float]:
                in_bag = [j for j in locked if j in scan.names]
                return scan.held_positions(in_bag, options.start, options.end) if in_bag else {}

            model = load_model(urdf=urdf, dh=dh, joints=options.joints, available=scan.names, xacro_args=xacro_args,
                               locked_at=held)
    return model, locked_warnings(model)


def streams(options: IdentificationOptions) -> bool:
    """Whether :func:`identify_bag` streams the bag with ``options``: not for sigmoid friction (a nonlinear fit over
    the whole series)."""
    return "sigmoid" not in options.friction


def in_memory_warnings(options: IdentificationOptions) -> list[str]:
    """The console line saying why a bag is read whole (:func:`streams`), if it is."""
    if "sigmoid" in options.friction:
        return ["sigmoid friction needs the whole series: read in memory"]
    return []


def effort_gains(options: IdentificationOptions, gains_file: str | Path | None) -> dict[str, float] | None:
    """The per-joint factors of ``--effort-scale-file`` (``dynid gains``), None without one; not with the options'
    ``effort_scale``."""
    if gains_file is None:
        return None
    if options.effort_scale is not None:
        raise ConfigError("give --effort-scale or --effort-scale-file, not both")
    return read_gains(gains_file)


def read_series(bag: str | Path, options: IdentificationOptions, gains: dict[str, float] | None,
                gains_file: str | Path | None) -> JointStateSeries:
    """The whole topic in memory, its effort scaled by ``gains`` (of ``gains_file``) if given."""
    series = read_joint_states(bag, topic=options.topic)
    return series if gains is None else scale_by_name(series, gains, str(gains_file))


def scan_gains(scan: BagScan, model: RobotModel, gains: dict[str, float] | None,
               gains_file: str | Path | None) -> np.ndarray | None:
    """``gains`` as the effort scale of the model's joints (1 for a joint without one); a DataError for a joint of
    the gains file that the bag lacks (as :func:`~dynid_ros.data.gains_file.scale_by_name`)."""
    if gains is None:
        return None
    missing = [j for j in gains if j not in scan.names]
    if missing:
        raise DataError(f"{gains_file}: joint(s) {', '.join(missing)} are not in the joint states")
    return np.array([gains.get(j, 1.0) for j in model.joints])


def bag_topic(bag: str | Path, options: IdentificationOptions) -> tuple[str, str | None]:
    """The JointState topic to read from ``bag`` and a note when it is not ``options.topic``: a topic that was only
    the default (``options.topic_given`` false) and is not in the bag gives way to the bag's one JointState topic (a
    Franka's run recorded as ``/joint_states`` by a simulator, a robot without a config recorded on its driver's
    topic); a named topic is read as named (its absence is the reader's one-line error)."""
    if options.topic_given:
        return options.topic, None
    topics = bag_info(bag)["topics"]
    states = sorted(name for name, kind in topics.items() if kind == JOINT_STATE_TYPE)
    if options.topic in topics or len(states) != 1:
        return options.topic, None
    return states[0], (f"joint states read from {states[0]}, the bag's one sensor_msgs/JointState topic (the "
                       f"default {options.topic} is not in it; --topic names another)")


def identify_bag(bag: str | Path, options: IdentificationOptions, *, urdf: str | Path | None = None,
                 dh: str | Path | None = None, model: RobotModel | None = None, timer: StageTimer | None = None,
                 xacro_args: list[str] | None = None, scan: BagScan | None = None,
                 gains_file: str | Path | None = None) -> IdentificationResult:
    """:func:`identify` from a rosbag2, streamed: the bag read in chunks (:mod:`dynid_ros.data.bag_stream`), each
    processed on its own (``processing.chunk_s``), the regressor compressed block by block, so memory holds the
    decimated samples only (and the messages of other publishers than the main one, e.g. a gripper's). The cutoff,
    chosen on the window's first minute (``cutoff_hz: auto``, the default, or ``bandwidth``), streams too; sigmoid
    friction is identified in memory (:func:`identify`).
    ``scan``: the bag's :func:`scan_joint_states`, when the caller has it already. ``gains_file``: the per-joint
    effort factors of ``--effort-scale-file``, applied to each sample on the way in."""
    options.check()
    require_torque(options.effort_unit, options.effort_scale, gains_file)
    options.topic, topic_note = bag_topic(bag, options)
    timer = timer or StageTimer()
    gains = effort_gains(options, gains_file)
    with timer.stage("read_bag"):
        if not streams(options):  # in memory
            scan = None
        elif scan is None:
            scan = scan_joint_states(bag, options.topic)
        series = read_series(bag, options, gains, gains_file) if scan is None else None
    if series is not None:
        result = _identify_series(series, options, timer, model=model, urdf=urdf, dh=dh, xacro_args=xacro_args)
        result.warnings[:0] = in_memory_warnings(options)
        result.notes[:0] = [topic_note] if topic_note else []
        return result
    start = float(scan.t[0]) if len(scan.t) else None
    model, warnings = scanned_model(scan, options, timer, model=model, urdf=urdf, dh=dh, xacro_args=xacro_args)
    warnings = warnings + sample_rate_warnings(scan.t, options.topic, model.joints)
    with timer.stage("process"):
        data = processed_scan(scan, model, options, ProcessingOptions(**options.processing),
                              scan_gains(scan, model, gains, gains_file))
    del scan  # the stamps of every message: not needed any more
    result = identify_processed(data, options, model, timer, warnings=warnings)
    result.recording_start_s = start
    result.notes[:0] = [topic_note] if topic_note else []
    return result


def identify(series: JointStateSeries, options: IdentificationOptions, *, urdf: str | Path | None = None,
             dh: str | Path | None = None, model: RobotModel | None = None,
             timer: StageTimer | None = None, xacro_args: list[str] | None = None,
             fit_target: FitTarget | None = None, base: BaseParameters | None = None) -> IdentificationResult:
    """Identify the parameters of the robot from recorded joint states (``xacro_args``: of a ``.urdf.xacro``).

    See :func:`~dynid_ros.identification.linear_identification.identify_linear` for ``fit_target`` and ``base``,
    which do not apply to sigmoid friction."""
    options.check()
    require_torque(options.effort_unit, options.effort_scale)
    return _identify_series(series, options, timer or StageTimer(), model=model, urdf=urdf, dh=dh,
                            xacro_args=xacro_args, fit_target=fit_target, base=base)


def _identify_series(series: JointStateSeries, options: IdentificationOptions, timer: StageTimer, *,
                     model: RobotModel | None, urdf: str | Path | None, dh: str | Path | None,
                     xacro_args: list[str] | None, fit_target: FitTarget | None = None,
                     base: BaseParameters | None = None) -> IdentificationResult:
    """:func:`identify` with checked options."""
    model, warnings = identified_model(series, options, timer, model=model, urdf=urdf, dh=dh, xacro_args=xacro_args)
    warnings = warnings + sample_rate_warnings(series.t, options.topic, model.joints)
    if "sigmoid" in options.friction:  # nonlinear friction: alternate with the linear estimate
        result = identify_with_sigmoid(series, options, model, timer)
    else:
        result = identify_linear(series, options, model, timer, fit_target=fit_target, base=base,
                                 warnings=warnings)
    result.recording_start_s = float(series.t[0]) if len(series.t) else None
    return result
