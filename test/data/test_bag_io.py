"""rosbag2 JointState input/output, the crash-safe recorder and bag repair, on real bags in tmp_path."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader

from dynid_ros.data.bag_io import (
    JOINT_STATE_TYPE,
    bag_info,
    encode_joint_states,
    read_joint_states,
    write_joint_states,
)
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.errors import BagError, DataError

from support.bag_cases import series
from support.raw_bags import NAMES, TYPES, joint_state, standard, write_raw

STORAGES = ["mcap", "sqlite3"]








@pytest.mark.parametrize("storage", STORAGES)
def test_reads_rosbags_messages_matched_by_name(tmp_path: Path, storage: str) -> None:
    bag = write_raw(tmp_path / "bag", [standard(k) for k in range(20)], storage)
    read = read_joint_states(bag)
    assert read.names == ["j1", "j2", "j3"]  # order of the first message
    k = np.arange(20)[:, None]
    np.testing.assert_array_equal(read.position, k + [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(read.velocity, 10 * (k + [1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(read.effort, 100 * (k + [1.0, 2.0, 3.0]))
    np.testing.assert_allclose(read.t, 5.0 + 0.001 * np.arange(20), rtol=0, atol=1e-9)  # header stamps


def test_zero_header_stamp_falls_back_to_receive_time(tmp_path: Path) -> None:
    bag = write_raw(tmp_path / "bag", [standard(k, stamp_ns=0) for k in range(5)])
    np.testing.assert_allclose(read_joint_states(bag).t, 7.0 + 0.001 * np.arange(5), rtol=0, atol=1e-9)


@pytest.mark.parametrize("storage", STORAGES)
def test_write_read_round_trip(tmp_path: Path, storage: str) -> None:
    original = series()
    path = write_joint_states(tmp_path / "out", original, topic="/arm/joint_states", storage=storage)
    read = read_joint_states(path, topic="/arm/joint_states")
    assert read.names == NAMES
    np.testing.assert_allclose(read.t, original.t, rtol=0, atol=1e-9)
    for a, b in ((read.position, original.position), (read.velocity, original.velocity),
                 (read.effort, original.effort)):
        np.testing.assert_array_equal(a, b)
    # rosbags' own deserializer agrees with our encoder, header stamps included
    with AnyReader([path]) as reader:
        msgs = [reader.deserialize(raw, c.msgtype) for c, _, raw in reader.messages()]
    assert len(msgs) == 50 and list(msgs[3].name) == NAMES
    assert (msgs[3].header.stamp.sec, msgs[3].header.stamp.nanosec) == (100, 3_000_000)
    np.testing.assert_array_equal(msgs[3].effort, original.effort[3])
    info = bag_info(path)
    assert info["storage"] == storage and info["messages"] == {"/arm/joint_states": 50}
    assert info["topics"] == {"/arm/joint_states": JOINT_STATE_TYPE}
    assert info["duration_s"] == pytest.approx(0.049, abs=1e-6) and info["start_s"] == pytest.approx(100.0)
    data_file = next(path.glob("*.mcap" if storage == "mcap" else "*.db3"))
    assert len(read_joint_states(data_file, topic="/arm/joint_states")) == 50  # a bare data file


def test_write_is_atomic_and_refuses_to_overwrite(tmp_path: Path) -> None:
    path = write_joint_states(tmp_path / "bag", series())
    with pytest.raises(BagError, match="exists already"):
        write_joint_states(path, series())
    write_joint_states(path, series(10), overwrite=True)
    assert len(read_joint_states(path)) == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bag"]  # no temporary leftovers


def test_positions_only_when_not_required(tmp_path: Path) -> None:
    bag = write_raw(tmp_path / "bag", [standard(k, velocity=[], effort=[]) for k in range(4)])
    read = read_joint_states(bag, require=())
    assert read.velocity is None and read.effort is None and read.position.shape == (4, 3)


def test_nonfinite_samples_are_dropped_with_a_count(tmp_path: Path) -> None:
    messages = [standard(k) for k in range(6)]
    messages[2] = standard(2, effort=[np.nan, 1.0, 2.0])
    messages[4] = standard(4, velocity=[np.inf, 1.0, 2.0])
    read = read_joint_states(write_raw(tmp_path / "bag", messages))
    assert len(read) == 4 and read.info["dropped_nonfinite"] == 2
    np.testing.assert_array_equal(read.position[:, 0], [1.0, 2.0, 4.0, 6.0])


def test_duplicate_stamps_are_dropped_with_a_count(tmp_path: Path) -> None:
    messages = [standard(k) for k in range(5)]
    messages[3] = standard(3, stamp_ns=5_000_000_000 + 2_000_000)
    read = read_joint_states(write_raw(tmp_path / "bag", messages))
    assert len(read) == 4 and read.info["dropped_duplicate"] == 1


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(BagError, match=f"{tmp_path / 'nope'}: no such bag"):
        read_joint_states(tmp_path / "nope")


def test_corrupt_bag(tmp_path: Path) -> None:
    path = write_joint_states(tmp_path / "bag", series(2000))
    data_file = next(path.glob("*.mcap"))
    data_file.write_bytes(data_file.read_bytes()[:5000])
    with pytest.raises(BagError, match="cannot read bag"):
        read_joint_states(path)
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "metadata.yaml").write_text("rosbag2_bagfile_information: [")
    with pytest.raises(BagError, match="cannot read bag"):
        read_joint_states(garbage)


def test_unfinished_recording_points_to_repair(tmp_path: Path) -> None:
    (tmp_path / "bag").mkdir()
    (tmp_path / "bag" / "bag.mcap").write_bytes(b"\x89MCAP0\r\n")
    with pytest.raises(BagError, match="no metadata.yaml .*dynid bag repair"):
        read_joint_states(tmp_path / "bag")


def test_topic_absent_lists_topics(tmp_path: Path) -> None:
    bag = write_raw(tmp_path / "bag", [standard(0)], topic="/robot/joint_states")
    with pytest.raises(BagError, match=r"topic /joint_states not in the bag \(topics: /robot/joint_states\)"):
        read_joint_states(bag)


def test_wrong_message_type(tmp_path: Path) -> None:
    text = bytes(TYPES.serialize_cdr(TYPES.types["std_msgs/msg/String"](data="hi"), "std_msgs/msg/String"))
    bag = write_raw(tmp_path / "bag", [(1, text)], msgtype="std_msgs/msg/String")
    with pytest.raises(BagError, match="/joint_states has type std_msgs/msg/String, expected sensor_msgs/msg/Joint"):
        read_joint_states(bag)


@pytest.mark.parametrize("missing", ["effort", "velocity"])
def test_no_effort_or_velocity_names_the_topic(tmp_path: Path, missing: str) -> None:
    bag = write_raw(tmp_path / "bag", [standard(k, **{missing: []}) for k in range(3)])
    with pytest.raises(BagError, match=f"the messages on /joint_states have no {missing}"):
        read_joint_states(bag, require=(missing,))


def test_velocity_is_not_required_by_default(tmp_path: Path) -> None:
    """A bag without velocities reads (the velocity is then differentiated)."""
    read = read_joint_states(write_raw(tmp_path / "bag", [standard(k, velocity=[]) for k in range(3)]))
    assert read.velocity is None and read.effort.shape == (3, 3)


def test_non_monotonic_stamps_name_the_sample(tmp_path: Path) -> None:
    messages = [standard(k) for k in range(6)]
    messages[4] = standard(4, stamp_ns=5_000_000_000)
    with pytest.raises(DataError, match=r"non-monotonic stamps at sample 4: t = 5\.000000000 s"):
        read_joint_states(write_raw(tmp_path / "bag", messages))


def two_publishers(seconds: float = 1.0, arm_hz: float = 500.0, gripper_hz: float = 50.0) -> list[tuple[int, bytes]]:
    """An arm driver (j1..j3, stamped on a clock 1000 s behind the bag's, 2 ms latency, velocity and effort) and
    a gripper driver (f1, f2, header stamps 0, position and effort only) on one topic, interleaved by receive time.
    Every value is a linear function of the true time, so an interpolated value can be checked exactly."""
    messages = []
    for k in range(int(seconds * arm_hz)):
        true = 1.0 + k / arm_hz
        values = [true, 2 * true, 3 * true]
        stamp = round((true - 1000.0 + 2000.0) * 1e9)  # driver clock: bag clock - 1000 s
        receive = round((true + 2000.0 + 0.002) * 1e9)
        messages.append((receive, joint_state(stamp, ["j1", "j2", "j3"], values, values, [10 * v for v in values])))
    for k in range(int(seconds * gripper_hz)):
        true = 1.0 + k / gripper_hz
        receive = round((true + 2000.0 + 0.002) * 1e9)
        messages.append((receive, joint_state(0, ["f1", "f2"], [0.01 * true, 0.02 * true], None, [5.0, 6.0])))
    return sorted(messages, key=lambda m: m[0])


@pytest.mark.parametrize("storage", STORAGES)
def test_two_publishers_are_merged_by_joint_name(tmp_path: Path, storage: str) -> None:
    """Arm 500 Hz + gripper 50 Hz on /joint_states, the gripper unstamped."""
    read = read_joint_states(write_raw(tmp_path / "bag", two_publishers(), storage))
    assert read.names == ["j1", "j2", "j3", "f1", "f2"] and len(read) == 500
    true = read.t - 1000.0  # the arm's header clock
    np.testing.assert_allclose(true, 1.0 + np.arange(500) / 500.0, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(read.position[:, 1], 2 * (1.0 + np.arange(500) / 500.0))  # as recorded
    # the gripper on the arm's clock (its receive time minus the arm's 2 ms delay), interpolated, held at the end
    expected = 0.01 * np.minimum(true, 1.0 + 49 / 50.0)
    np.testing.assert_allclose(read.position[:, 3], expected, rtol=0, atol=1e-9)
    assert np.isnan(read.velocity[:, 3:]).all() and np.isfinite(read.velocity[:, :3]).all()
    sources = {tuple(s["joints"]): s for s in read.info["sources"]}
    assert sources[("j1", "j2", "j3")]["clock"] == "header" and sources[("j1", "j2", "j3")]["messages"] == 500
    assert sources[("f1", "f2")]["clock"].startswith("receive") and sources[("f1", "f2")]["messages"] == 50
    assert read.info["interpolated_joints"] == ["f1", "f2"]


def test_a_publisher_stamping_some_messages_0_keeps_one_clock(tmp_path: Path) -> None:
    """Not the receive time one message at a time mixed with header stamps."""
    messages = [standard(k, stamp_ns=0 if k < 3 else None) for k in range(8)]
    read = read_joint_states(write_raw(tmp_path / "bag", messages))
    np.testing.assert_allclose(read.t, 7.0 + 0.001 * np.arange(8), rtol=0, atol=1e-9)  # receive times throughout
    assert read.info["sources"][0]["clock"] == "receive (some header stamps 0)"


def test_reads_60_s_at_1_khz_quickly(tmp_path: Path) -> None:
    n = 60_000
    big = JointStateSeries([f"joint{i}" for i in range(7)], 1.7e9 + 1e-3 * np.arange(n), np.zeros((n, 7)),
                           np.ones((n, 7)), np.full((n, 7), 2.0))
    path = write_joint_states(tmp_path / "big", big)
    read = read_joint_states(path)  # its speed: benchmarks/bench_bag_codec.py
    assert len(read) == n and read.effort[-1, -1] == 2.0


# ----------------------------------------------------------------------------------------------
# Decoding and encoding against rosbags' own (de)serializer, on the same bags


def rosbags_message(k: int, names: list[str], frame_id: str = "", velocity: bool = True) -> object:
    js, header, stamp = (TYPES.types[t] for t in (JOINT_STATE_TYPE, "std_msgs/msg/Header",
                                                    "builtin_interfaces/msg/Time"))
    values = np.array([1.0 + k + 0.1 * int(n[1:]) for n in names])
    return js(header=header(stamp=stamp(sec=100 + k // 1000, nanosec=(k % 1000) * 1_000_000), frame_id=frame_id),
              name=list(names), position=values, velocity=10 * values if velocity else np.array([], dtype=float),
              effort=100 * values)


def reference(path: Path, names: list[str]) -> dict[str, np.ndarray]:
    """The bag decoded by rosbags' deserializer, reordered to ``names``."""
    t, fields = [], {"position": [], "velocity": [], "effort": []}
    with AnyReader([path]) as reader:
        for connection, _, raw in reader.messages():
            msg = reader.deserialize(raw, connection.msgtype)
            t.append(msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec)
            order = [list(msg.name).index(n) for n in names]
            for field, values in fields.items():
                data = getattr(msg, field)
                values.append(data[order] if len(data) else np.full(len(names), np.nan))
    arrays = {field: np.array(values) for field, values in fields.items()}
    return {"t": np.array(t, dtype=np.int64).astype(float) * 1e-9, **arrays}


CASES = {
    # name: (messages (k -> names, frame_id, little endian, velocity), messages decoded by the fast path)
    "little_endian_with_frame_id": (lambda k: (NAMES, "base_link", True, True), 300),
    "big_endian": (lambda k: (NAMES, "base_link", False, True), 0),
    "frame_id_varies_in_length": (lambda k: (NAMES, f"frame{k}", True, True), None),
    "frame_id_varies_same_length": (lambda k: (NAMES, f"frame{k:04d}", True, True), 300),
    "no_velocity_arrays": (lambda k: (NAMES, "", True, False), 300),
    "mixed": (lambda k: ([NAMES[(i + k // 100) % 3] for i in range(3)],  # three name orders in blocks
                         "" if k % 7 else "odd_one", k % 50 != 3, k % 11 != 5), None),
}


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_decoding_matches_rosbags(tmp_path: Path, case: str, storage: str) -> None:
    make, fast = CASES[case]
    messages = []
    for k in range(300):
        names, frame_id, little, velocity = make(k)
        data = TYPES.serialize_cdr(rosbags_message(k, names, frame_id, velocity), JOINT_STATE_TYPE,
                                   little_endian=little)
        messages.append((10**9 * k, bytes(data)))
    bag = write_raw(tmp_path / "bag", messages, storage)
    expected = reference(bag, NAMES)
    without_velocity = np.isnan(expected["velocity"]).all(axis=1)
    if without_velocity.all() or not without_velocity.any():
        read = read_joint_states(bag, require=("effort",))
        np.testing.assert_array_equal(read.t, expected["t"])
        np.testing.assert_array_equal(read.position, expected["position"])
        np.testing.assert_array_equal(read.effort, expected["effort"])
        if without_velocity.all():
            assert read.velocity is None
        else:
            np.testing.assert_array_equal(read.velocity, expected["velocity"])
        decoded_fast = read.info["decoded_fast"]
    else:  # some messages without velocity: refused, naming the first one
        first = int(np.argmax(without_velocity))
        with pytest.raises(DataError, match=f"sample {first}: no velocity"):
            read_joint_states(bag)
        from dynid_ros.data.bag_io import decode_messages

        decoded = decode_messages([data for _, data in messages], "/joint_states")
        for k, field in enumerate(("position", "velocity", "effort")):
            np.testing.assert_array_equal(decoded.fields[k], expected[field])
        decoded_fast = decoded.fast
    if fast is not None:
        assert decoded_fast == fast
    elif case == "mixed":
        assert 0 < decoded_fast < 300  # both paths


def test_varying_frame_id_is_not_slower_than_rosbags(tmp_path: Path) -> None:
    """The case the fast path used to be slow on: every message its own layout (here 2 000 of them)."""
    from dynid_ros.data.bag_io import decode_messages, joint_state_typestore

    raws = [bytes(TYPES.serialize_cdr(rosbags_message(k, NAMES, "f" * (k % 40)), JOINT_STATE_TYPE))
            for k in range(2000)]
    # both type stores built, their deserializers generated (once a process)
    for store in (joint_state_typestore(), TYPES):
        store.deserialize_cdr(raws[0], JOINT_STATE_TYPE)
    start = time.perf_counter()
    [TYPES.deserialize_cdr(raw, JOINT_STATE_TYPE) for raw in raws]
    plain = time.perf_counter() - start
    start = time.perf_counter()
    decoded = decode_messages(raws, "/joint_states")
    ours = time.perf_counter() - start
    assert decoded.fast == 0 and np.isfinite(decoded.fields[0]).all()
    assert ours < 2.0 * plain + 0.05, (ours, plain)  # rosbags plus bookkeeping, not a byte matrix per message


@pytest.mark.parametrize("velocity", [True, False])
def test_encoding_is_byte_identical_to_rosbags(velocity: bool) -> None:
    data = series(40)
    if not velocity:
        data.velocity = None
    stamps, encoded = encode_joint_states(data)
    js, header, stamp = (TYPES.types[t] for t in (JOINT_STATE_TYPE, "std_msgs/msg/Header",
                                                    "builtin_interfaces/msg/Time"))
    for i, ns in enumerate(stamps.tolist()):
        msg = js(header=header(stamp=stamp(sec=ns // 10**9, nanosec=ns % 10**9), frame_id=""), name=list(NAMES),
                 position=data.position[i], velocity=data.velocity[i] if velocity else np.array([], dtype=float),
                 effort=data.effort[i])
        assert encoded[i] == bytes(TYPES.serialize_cdr(msg, JOINT_STATE_TYPE, little_endian=True)), i
