"""F/T wrenches in rosbag2: a bag of joint states and wrenches written whole, read back by rosbags and by
``read_wrenches`` (header stamps, receive time where a stamp is 0, time order); bad topics and samples named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from rosbags.rosbag2 import StoragePlugin, Writer

from dynid_ros.data.bag_io import read_joint_states
from dynid_ros.data.output_paths import SIMULATED_BAG, output_kind
from dynid_ros.data.wrench_io import WRENCH_TOPIC, WRENCH_TYPE, read_wrenches, write_joint_states_and_wrenches
from dynid_ros.errors import BagError, DataError

from support.bag_cases import series
from support.raw_bags import TYPES


def _wrenches(n: int = 25) -> tuple[np.ndarray, np.ndarray]:
    t = 100.0 + 0.002 * np.arange(n)
    return t, np.column_stack([np.sin(t * k) for k in range(1, 7)])


def test_written_bag_read_by_rosbags_and_back(tmp_path: Path) -> None:
    t, wrench = _wrenches()
    bag = write_joint_states_and_wrenches(tmp_path / "sub" / "bag", series(40), t, wrench, "ft_sensor")
    assert output_kind(bag) == SIMULATED_BAG  # dynid's own: a later simulation may replace it
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["bag"]  # no temporary left
    with AnyReader([bag]) as reader:  # a standard rosbag2
        topics = {c.topic: c.msgtype for c in reader.connections}
        assert topics == {"/joint_states": "sensor_msgs/msg/JointState", WRENCH_TOPIC: WRENCH_TYPE}
        first = next(reader.deserialize(raw, c.msgtype) for c, _, raw in reader.messages()
                     if c.topic == WRENCH_TOPIC)
        assert first.header.frame_id == "ft_sensor" and first.wrench.torque.z == pytest.approx(wrench[0, 5])
    read_t, read_wrench, frame = read_wrenches(bag, WRENCH_TOPIC)
    assert frame == "ft_sensor"
    np.testing.assert_allclose(read_t, t, atol=1e-9)
    np.testing.assert_array_equal(read_wrench, wrench)
    np.testing.assert_array_equal(read_joint_states(bag).effort, series(40).effort)
    with pytest.raises(BagError, match="exists already"):
        write_joint_states_and_wrenches(bag, series(40), t, wrench, "ft_sensor")


def _raw_wrench_bag(path: Path, stamps_ns: list[int], receive_ns: list[int], values: list[list[float]]) -> Path:
    types = TYPES.types
    with Writer(path, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection(WRENCH_TOPIC, WRENCH_TYPE, typestore=TYPES)
        for stamp, received, w in zip(stamps_ns, receive_ns, values, strict=True):
            msg = types[WRENCH_TYPE](types["std_msgs/msg/Header"](types["builtin_interfaces/msg/Time"](
                stamp // 10**9, stamp % 10**9), "tool"), types["geometry_msgs/msg/Wrench"](
                types["geometry_msgs/msg/Vector3"](*w[:3]), types["geometry_msgs/msg/Vector3"](*w[3:])))
            writer.write(connection, received, TYPES.serialize_cdr(msg, WRENCH_TYPE))
    return path


def test_unstamped_wrenches_take_the_receive_time_and_are_sorted(tmp_path: Path) -> None:
    bag = _raw_wrench_bag(tmp_path / "bag", [3 * 10**9, 0, 1 * 10**9], [10, 2_500_000_000, 20],
                          [[3.0] * 6, [2.5] * 6, [1.0] * 6])
    t, wrench, frame = read_wrenches(bag, WRENCH_TOPIC)
    np.testing.assert_allclose(t, [1.0, 2.5, 3.0])
    np.testing.assert_array_equal(wrench[:, 0], [1.0, 2.5, 3.0])
    assert frame == "tool"


def test_bad_topics_and_samples_are_named(tmp_path: Path) -> None:
    t, wrench = _wrenches(5)
    bag = write_joint_states_and_wrenches(tmp_path / "bag", series(10), t, wrench, "ft")
    with pytest.raises(DataError, match=f"no topic /wrench \\(has: {WRENCH_TOPIC}, /joint_states\\)"):  # sorted
        read_wrenches(bag, "/wrench")
    with pytest.raises(DataError, match="topic /joint_states is sensor_msgs/msg/JointState, not "
                                        "geometry_msgs/msg/WrenchStamped"):
        read_wrenches(bag, "/joint_states")
    one = _raw_wrench_bag(tmp_path / "one", [10**9], [1], [[0.0] * 6])
    with pytest.raises(DataError, match="has 1 message\\(s\\)"):
        read_wrenches(one, WRENCH_TOPIC)
    nan = _raw_wrench_bag(tmp_path / "nan", [10**9, 2 * 10**9], [1, 2], [[0.0] * 6, [0.0, np.nan, 0, 0, 0, 0]])
    with pytest.raises(DataError, match=f"{WRENCH_TOPIC} sample 1 is not finite"):
        read_wrenches(nan, WRENCH_TOPIC)
    with pytest.raises(BagError, match="cannot read the bag"):
        read_wrenches(tmp_path / "absent", WRENCH_TOPIC)
