"""Bags as robots and recorders write them, generated from one simulated run (example-robot-data's UR5, its truth
derived from the URDF): no velocities, efforts missing for some joints, header stamps 0, two publishers, a gap, NaN
samples, out-of-order stamps, lz4 and zstd chunks, sqlite3. The messages are serialized by rosbags (not by the code
under test). Each case: ``dynid identify`` exits 0 with a sane result (read back by its clients, masses near the
truth, the second period of the clean run predicted within 5 %), or exits 2 with one line naming the problem.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from dynid_ros.data.bag_io import JOINT_STATE_TYPE, read_joint_states

from support.raw_bags import TYPES, joint_state, write_raw
from support.user_runs import PERIOD, assert_sane, dynid, refusal

pytestmark = pytest.mark.corpus

Message = tuple[int, bytes]
"""(receive time [ns], CDR bytes of a sensor_msgs/JointState)."""


@pytest.fixture(scope="module")
def clean(ur5_run) -> dict:
    """The UR5 through the whole path (:func:`ur5_run`); its bag is the source of every variant."""
    return {**ur5_run, "series": read_joint_states(ur5_run["work"] / "bag")}


def messages(series, *, stamps_ns: np.ndarray | None = None, joints: slice = slice(None), velocity: bool = True,
             effort: bool = True, receive_offset_ns: int = 200_000) -> list[Message]:
    """The series as JointState messages of the ``joints`` slice (header stamps ``stamps_ns``, default the series'
    times; received ``receive_offset_ns`` later)."""
    names = list(series.names)[joints]
    stamps = np.round(series.t * 1e9).astype(np.int64) if stamps_ns is None else stamps_ns
    receive = np.round(series.t * 1e9).astype(np.int64) + receive_offset_ns
    return [(int(receive[k]), joint_state(int(stamps[k]), names, series.position[k, joints],
                                          series.velocity[k, joints] if velocity else None,
                                          series.effort[k, joints] if effort else None))
            for k in range(len(series.t))]


def write_mcap(path: Path, stream: list[Message], compression: str) -> Path:
    """A rosbag2 MCAP bag whose chunks are ``compression``-compressed (lz4, zstd), as ``ros2 bag record`` with a
    compressing storage preset writes it: the bag written by rosbags (its metadata.yaml), then its MCAP file written
    again by the mcap library with compressed chunks (the same messages; MCAP compression is not in the metadata)."""
    from mcap.writer import CompressionType
    from mcap.writer import Writer as McapWriter

    write_raw(path, stream)
    data = next(path.glob("*.mcap"))
    with open(data, "wb") as out:
        writer = McapWriter(out, chunk_size=64 * 1024, compression=CompressionType[compression.upper()])
        writer.start(profile="ros2", library="dynid_ros corpus")
        schema = writer.register_schema(JOINT_STATE_TYPE, "ros2msg",
                                        TYPES.generate_msgdef(JOINT_STATE_TYPE, ros_version=2)[0].encode())
        channel = writer.register_channel("/joint_states", "cdr", schema, {"offered_qos_profiles": ""})
        for receive_ns, message in stream:
            writer.add_message(channel, receive_ns, message, receive_ns)
        writer.finish()
    return path


def no_velocities(series, path: Path) -> Path:
    return write_raw(path, messages(series, velocity=False))


def efforts_missing_for_some_joints(series, path: Path) -> Path:
    """The wrist joints published by a second publisher that has no efforts (as a driver for a tool flange might)."""
    arm = messages(series, joints=slice(0, 3))
    wrist = messages(series, joints=slice(3, None), effort=False, receive_offset_ns=300_000)
    return write_raw(path, sorted(arm + wrist, key=lambda m: m[0]))


def header_stamps_zero(series, path: Path) -> Path:
    return write_raw(path, messages(series, stamps_ns=np.zeros(len(series.t), dtype=np.int64)))


def two_publishers(series, path: Path) -> Path:
    """Shoulder and elbow from one publisher, the wrists from another, their stamps 0.4 ms apart."""
    first = messages(series, joints=slice(0, 3))
    stamps = np.round(series.t * 1e9).astype(np.int64) + 400_000
    second = messages(series, joints=slice(3, None), stamps_ns=stamps, receive_offset_ns=600_000)
    return write_raw(path, sorted(first + second, key=lambda m: m[0]))


def gap(series, path: Path) -> Path:
    """0.4 s of messages lost in the middle of the first period."""
    stream = messages(series)
    t = series.t - series.t[0]
    return write_raw(path, [m for m, s in zip(stream, t) if not 2.0 <= s < 2.4])


def nan_samples(series, path: Path) -> Path:
    """Three samples with a NaN position, two with a NaN effort (a driver's glitch)."""
    copy = type(series)(list(series.names), series.t.copy(), series.position.copy(), series.velocity.copy(),
                        series.effort.copy())
    for k in (1200, 1201, 3100):
        copy.position[k, 1] = np.nan
    for k in (2500, 4000):
        copy.effort[k, 4] = np.nan
    return write_raw(path, messages(copy))


def out_of_order(series, path: Path) -> Path:
    """Every 50th pair of messages written in swapped order (receive times in order, header stamps not)."""
    stream = messages(series)
    for k in range(10, len(stream) - 1, 50):
        (r0, d0), (r1, d1) = stream[k], stream[k + 1]
        stream[k], stream[k + 1] = (r0, d1), (r1, d0)
    return write_raw(path, stream)


def lz4_chunks(series, path: Path) -> Path:
    return write_mcap(path, messages(series), "lz4")


def zstd_chunks(series, path: Path) -> Path:
    return write_mcap(path, messages(series), "zstd")


def sqlite3(series, path: Path) -> Path:
    return write_raw(path, messages(series), storage="sqlite3")


VARIANTS = {f.__name__: f for f in (no_velocities, efforts_missing_for_some_joints, header_stamps_zero,
                                    two_publishers, gap, nan_samples, out_of_order, lz4_chunks, zstd_chunks, sqlite3)}

REFUSED = {
    "efforts_missing_for_some_joints": ("no effort for joint(s) wrist_1_joint, wrist_2_joint, wrist_3_joint",),
}
"""Variants that end in a one-line refusal: ``{variant: words of the line}``."""

DIFFERENTIATED = {"no_velocities": "note: not every joint has a recorded velocity"}
"""Variants identified from velocities differentiated from the positions (``velocity_source`` left unset): the
console's note."""


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_bag_variant_is_identified_or_refused_in_one_line(variant, clean, tmp_path):
    work = clean["work"]
    bag = VARIANTS[variant](clean["series"], tmp_path / "bag")
    out = tmp_path / "result"
    run = dynid("identify", "--urdf", clean["urdf"], "--config", work / "config.yaml", "--bag", bag, "--end", PERIOD,
                "--out", out)
    line = refusal(run)
    if variant in REFUSED:
        assert line is not None and all(word in line for word in REFUSED[variant]), str(run)
        return
    assert line is None, f"{variant}: refused: {line}"
    source = yaml.safe_load((out / "parameters.yaml").read_text())["processing"]["velocity_source"]
    assert source == ("differentiate" if variant in DIFFERENTIATED else "measured"), source
    assert (variant in DIFFERENTIATED) == (DIFFERENTIATED.get(variant, "note: not every joint") in run.out), run.out
    validate = dynid("validate", "--result", out, "--bag", work / "bag", "--start", PERIOD, "--report",
                     tmp_path / "validation.json")
    assert validate.code == 0, str(validate)
    assert_sane(tmp_path, clean["joints"], truth=work / "truth")
    identified = json.loads((out / "report.json").read_text())["relative_error"]
    reference = json.loads((work / "result" / "report.json").read_text())["relative_error"]
    assert identified < 2 * reference + 0.01, (identified, reference)
