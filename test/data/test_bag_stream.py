"""A long bag read in chunks: the scan gives the stamps, the drops and the merge of several publishers that the
whole-topic reader gives; its rows serve the same values in order (held in memory or read again), continuous joints
unwrapped across chunks; its errors are the reader's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from dynid_ros.data import bag_stream
from dynid_ros.data.bag_io import JOINT_STATE_TYPE, encode_joint_states, read_joint_states, write_joint_states
from dynid_ros.data.bag_stream import scan_joint_states
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.errors import BagError, DataError

from support.raw_bags import standard, write_raw
from support.stream_reads import force_small_reads, panda_stream_bag  # noqa: F401 (fixtures)


def test_scan_gives_the_stamps_and_drops_of_the_reader(bag: Path, small_reads) -> None:
    scan = scan_joint_states(bag)
    read = read_joint_states(bag)
    np.testing.assert_array_equal(scan.t, read.t)
    assert scan.info == read.info
    a, b = scan.window_rows(0.8, 6.1)
    np.testing.assert_array_equal(scan.t[a:b], read.window(0.8, 6.1).t)
    position, velocity, effort = scan.rows(read.names).get(a, b)
    window = read.window(0.8, 6.1)
    np.testing.assert_array_equal(position, window.position)
    np.testing.assert_array_equal(effort, window.effort)


def test_a_short_bag_is_read_once_and_gives_what_a_second_pass_gives(bag: Path, monkeypatch) -> None:
    """Decoded chunks within HOLD_BYTES are kept by the scan and served from memory; the rows are those of a scan
    that holds nothing and reads the bag again."""
    monkeypatch.setattr(bag_stream, "CHUNK_MESSAGES", 900)
    held = scan_joint_states(bag)
    assert held.held is not None and len(held.held) == -(-held.info["messages"] // 900)
    monkeypatch.setattr(bag_stream, "HOLD_BYTES", 0)
    again = scan_joint_states(bag)
    assert again.held is None
    joints = list(held.names)
    a, b = held.rows(joints), again.rows(joints)
    for start in range(0, held.t.size, 1000):
        for x, y in zip(a.get(start, start + 1000), b.get(start, start + 1000)):
            np.testing.assert_array_equal(x, y)


def test_continuous_joints_are_unwrapped_across_chunks(tmp_path: Path, small_reads) -> None:
    t = np.arange(0.0, 5.0, 1e-3)
    q = np.column_stack([np.mod(3.0 + 2.0 * t + np.pi, 2 * np.pi) - np.pi, 0.1 * t])
    bag = write_joint_states(tmp_path / "bag", JointStateSeries(["a", "b"], t + 5.0, q, q, q))
    rows = scan_joint_states(bag).rows(["a", "b"], np.array([True, False]))
    got = np.vstack([rows.get(a, min(a + 700, t.size))[0] for a in range(0, t.size, 700)])
    np.testing.assert_allclose(got[:, 0], np.unwrap(q[:, 0]), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got[:, 1], q[:, 1])


def test_several_publishers_are_merged_as_the_reader_does(tmp_path: Path) -> None:
    """An arm (1 kHz, stamped) and a gripper (50 Hz, header stamps 0: receive times minus the arm's delay) on one
    topic: the scan's stamps and the rows' values (the gripper interpolated) are the reader's."""
    t = np.arange(0.0, 2.0, 1e-3)
    arm = JointStateSeries(["j1", "j2"], t + 10.0, np.column_stack([np.sin(t), t]), np.column_stack([np.cos(t), t]),
                           np.column_stack([t, -t]))
    tg = np.arange(0.0, 2.0, 0.02)
    gripper = JointStateSeries(["f1"], np.zeros(tg.size), 0.01 * tg[:, None] + 0.001, None, np.sin(tg)[:, None])
    messages = [(int(s + 2_000_000), m) for s, m in zip(*encode_joint_states(arm))]
    messages += [(int(round((10.0 + g) * 1e9)) + 3_000_000, m) for g, m in zip(tg, encode_joint_states(gripper)[1])]
    with Writer(tmp_path / "bag", version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection("/joint_states", JOINT_STATE_TYPE,
                                           typestore=get_typestore(Stores.ROS2_HUMBLE))
        for stamp, data in sorted(messages, key=lambda m: m[0]):
            writer.write(connection, stamp, data)
    read, scan = read_joint_states(tmp_path / "bag"), scan_joint_states(tmp_path / "bag", chunk_messages=300)
    np.testing.assert_array_equal(scan.t, read.t)
    fast = "decoded_fast"
    assert {k: v for k, v in scan.info.items() if k != fast} == {k: v for k, v in read.info.items() if k != fast}
    assert scan.info["interpolated_joints"] == ["f1"]
    rows = scan.rows(["f1", "j2"])
    got = [np.vstack(parts) for parts in zip(*[rows.get(a, min(a + 170, len(read))) for a in range(0, len(read), 170)])]
    np.testing.assert_array_equal(got[0], read.position[:, [2, 1]])
    np.testing.assert_array_equal(got[2], read.effort[:, [2, 1]])
    assert np.isnan(got[1][:, 0]).all() and not scan.check_fields(["f1", "j2"])  # the gripper sends no velocity


def _scenario(name: str) -> list[tuple[int, bytes]]:
    messages = [standard(k) for k in range(12)]
    if name == "nonfinite":
        messages[2] = standard(2, effort=[np.nan, 1.0, 2.0])
        messages[7] = standard(7, velocity=[np.inf, 1.0, 2.0])
    elif name == "duplicate":
        messages[3] = standard(3, stamp_ns=5_000_000_000 + 2_000_000)
    elif name == "unstamped":
        messages = [standard(k, stamp_ns=0) for k in range(12)]
    elif name == "partly stamped":
        messages[5] = standard(5, stamp_ns=0)
    elif name == "no velocity":
        messages = [standard(k, velocity=[]) for k in range(12)]
    return messages


@pytest.mark.parametrize("name", ["nonfinite", "duplicate", "unstamped", "partly stamped", "no velocity"])
def test_scan_keeps_the_readers_rules(tmp_path: Path, name: str) -> None:
    """Names in a different order in every message, read 5 messages at a time: the scan's stamps, counts and the
    rows' values are the reader's."""
    bag = write_raw(tmp_path / "bag", _scenario(name))
    read, scan = read_joint_states(bag), scan_joint_states(bag, chunk_messages=5)
    np.testing.assert_array_equal(scan.t, read.t)
    fast = "decoded_fast"  # which decoder took a message depends on the chunk (layouts shared by >= 64 messages)
    assert {k: v for k, v in scan.info.items() if k != fast} == {k: v for k, v in read.info.items() if k != fast}
    values = scan.rows(["j3", "j1"]).get(0, len(read))
    for got, want in zip(values, (read.position, read.velocity, read.effort)):
        if want is None:
            assert got is None
        else:
            np.testing.assert_array_equal(got, want[:, [2, 0]])


def test_scan_errors_are_the_readers(tmp_path: Path) -> None:
    messages = [standard(k) for k in range(6)]
    messages[4] = standard(4, stamp_ns=5_000_000_000)
    with pytest.raises(DataError, match=r"non-monotonic stamps at sample 4: t = 5\.000000000 s"):
        scan_joint_states(write_raw(tmp_path / "back", messages), chunk_messages=2)
    with pytest.raises(BagError, match="the messages on /joint_states have no effort"):
        scan_joint_states(write_raw(tmp_path / "none", [standard(k, effort=[]) for k in range(3)]))
    some = [standard(k) for k in range(5)]
    some[3] = standard(3, velocity=[])
    with pytest.raises(DataError, match="sample 3: no velocity"):
        scan_joint_states(write_raw(tmp_path / "some", some), chunk_messages=2)


def _bag(tmp_path: Path, n: int = 400) -> tuple[Path, JointStateSeries]:
    t = 50.0 + 2e-3 * np.arange(n)
    q = np.column_stack([np.sin(t), np.cos(t), 0.01 * np.arange(n)])
    series = JointStateSeries(["a", "b", "c"], t, q, 2 * q, 3 * q + 1.0)
    return write_joint_states(tmp_path / "bag", series), series


def test_rows_serve_the_chosen_joints_scaled_and_checked(tmp_path: Path) -> None:
    bag, series = _bag(tmp_path)
    checked: list[tuple[int, int]] = []

    def check(effort: np.ndarray, first: int) -> None:
        np.testing.assert_allclose(effort, series.effort[first:first + effort.shape[0]][:, [2, 0]])  # before scaling
        checked.append((first, effort.shape[0]))

    scan = scan_joint_states(bag, chunk_messages=70)
    rows = scan.rows(["c", "a"], effort_scale=np.array([2.0, -1.0]), effort_check=check)
    position, velocity, effort = (np.vstack(parts) for parts in zip(*[rows.get(a, a + 90) for a in range(0, 400, 90)]))
    np.testing.assert_array_equal(position, series.position[:, [2, 0]])
    np.testing.assert_array_equal(velocity, series.velocity[:, [2, 0]])
    np.testing.assert_allclose(effort, series.effort[:, [2, 0]] * [2.0, -1.0], rtol=1e-15)
    assert sum(size for _, size in checked) == 400 and [f for f, _ in checked] == list(range(0, 400, 70))
    with pytest.raises(ValueError, match="already past row"):
        rows.get(0, 10)  # rows are served in order only
    with pytest.raises(DataError, match="joint\\(s\\) z of the model are not in the joint states"):
        scan.rows(["a", "z"])


def test_windows_fields_and_held_positions_are_the_series(tmp_path: Path) -> None:
    bag, series = _bag(tmp_path)
    scan = scan_joint_states(bag)
    read = read_joint_states(bag)
    for start, end in ((None, None), (0.1, 0.5), (0.0, 0.0), (0.79, None), (2.0, 3.0)):
        a, b = scan.window_rows(start, end)
        np.testing.assert_array_equal(scan.t[a:b], read.window(start, end).t)
    assert scan.check_fields(["a", "c"]) is True  # every joint has a velocity
    window = read.window(0.1, 0.5)
    held = scan.held_positions(["b", "c"], 0.1, 0.5)
    assert held == {"b": pytest.approx(np.median(window.position[:, 1])), "c": pytest.approx(
        np.median(window.position[:, 2]))}
    assert scan.held_positions([], None, None) == {}
    assert scan.names == ["a", "b", "c"] and scan.fields == (True, True, True)


def test_decoded_chunks_are_the_same_held_or_read_again(tmp_path: Path, monkeypatch) -> None:
    bag, _ = _bag(tmp_path)
    held = scan_joint_states(bag, chunk_messages=150)
    monkeypatch.setattr(bag_stream, "HOLD_BYTES", 0)
    again = scan_joint_states(bag, chunk_messages=150)
    assert held.held is not None and again.held is None
    first = list(bag_stream.decoded_chunks(held))
    second = list(bag_stream.decoded_chunks(again))
    assert [c.first for c in first] == [c.first for c in second] == [0, 150, 300]
    for x, y in zip(first, second, strict=True):
        for k in range(3):
            np.testing.assert_array_equal(x.fields[k], y.fields[k])


def test_a_topic_without_messages_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="has no messages"):
        scan_joint_states(write_raw(tmp_path / "empty", []))
