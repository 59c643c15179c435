"""The robot a config describes beyond a URDF, for ``dynid identify`` and the identification node alike (one entry,
so both give the same result): a ``coupling:`` section (the URDF's joints driven by motors, the recordings in motor
coordinates; :mod:`dynid_ros.robot.coupling`) or a ``robot: frames:`` robot (no URDF; :mod:`dynid_ros.robot.frames`,
Wang et al. 2019)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from dynid_ros.data.bag_stream import scan_joint_states
from dynid_ros.data.output_paths import RESULT, check_output
from dynid_ros.errors import ConfigError
from dynid_ros.robot.coupling import apply_coupling, coupling_from_config
from dynid_ros.robot.frames import load_frames_robot
from dynid_ros.robot.model import RobotModel, load_model
from dynid_ros.variants.frames_identification import (
    FramesFit,
    frames_streams,
    identify_frames,
    identify_frames_scan,
    read_motor_states,
)
from dynid_ros.variants.frames_report import write_frames_directory

DEFAULT_TOPIC = "/joint_states"


def coupled_model(config: Mapping, source: str, joints: list[str] | tuple[str, ...] | None,
                  urdf: str | Path | None = None, dh: str | Path | None = None,
                  xacro_args: list[str] | None = None) -> RobotModel | None:
    """With a ``coupling:`` section in ``config``: the URDF/DH model of the coupled joints in motor coordinates;
    None without one (the model then follows from the data). ``joints`` (the identified coordinates asked for), if
    given, must be the coupling's motors."""
    coupling = coupling_from_config(config, source)
    if coupling is None:
        return None
    if joints and list(joints) != list(coupling.motors):
        raise ConfigError(f"joints {','.join(joints)}: with a coupling the identified coordinates are its motors "
                          f"({','.join(coupling.motors)})")
    model = load_model(urdf=urdf, dh=dh, joints=list(coupling.joints), xacro_args=xacro_args)
    return apply_coupling(model, coupling)


def frames_processing(config: Mapping) -> dict:
    """The ``identification: processing:`` options of a frames robot's config."""
    return dict((config.get("identification") or {}).get("processing") or {})


def identify_frames_config(config: Mapping, source: str, bag: str | Path, out: str | Path, topic: str | None = None,
                           solver: str | None = None) -> FramesFit:
    """Identify the ``robot: frames:`` robot of ``config`` from ``bag`` (a rosbag2, or a CSV without stamps at
    ``robot.csv_rate_hz``) and write the result into ``out`` (refused, untouched, when it is not an earlier
    result). A rosbag2 is streamed, a CSV read whole (:func:`frames_streams`; the fit's ``warnings`` then say
    so)."""
    inputs = (bag, source)
    check_output(out, RESULT, inputs)
    robot = load_frames_robot(config, source)
    processing = frames_processing(config)
    in_memory = frames_streams(bag)
    if in_memory is None:  # a rosbag2 streamed: its chunks processed one by one, the regressor a block at a time
        scan = scan_joint_states(bag, topic or DEFAULT_TOPIC)
        fit = identify_frames_scan(robot, scan, processing, solver or "clarabel")
    else:
        series = read_motor_states(bag, config, topic or DEFAULT_TOPIC)
        fit = identify_frames(robot, series, processing, solver or "clarabel")
        fit.warnings.append(in_memory)
    # estimated effort delays resolved in fit.processing; an optional output left out is said in one line
    fit.written = write_frames_directory(fit, config, Path(out), source=source, bag=bag, inputs=inputs)
    return fit
