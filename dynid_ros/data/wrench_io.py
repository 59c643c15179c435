"""``geometry_msgs/msg/WrenchStamped`` in rosbag2: read a wrench topic, write a bag of joint states and wrenches.

A wrench is ``[fx, fy, fz, tx, ty, tz]`` in the message's frame; its time is the header stamp (the receive time
where the stamp is zero).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from dynid_ros.data.bag_io import JOINT_STATE_TYPE, encode_joint_states, joint_state_typestore
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.output_paths import SIMULATED_BAG, mark
from dynid_ros.errors import BagError, DataError

WRENCH_TYPE = "geometry_msgs/msg/WrenchStamped"
WRENCH_TOPIC = "/ft_sensor/wrench"
"""The topic of a force/torque sensor's wrenches, simulated (``dynid simulate``, ``sim_node``) or in a bag."""


def read_wrenches(path: str | Path, topic: str) -> tuple[np.ndarray, np.ndarray, str]:
    """``(t [s] (N,), wrench (N, 6), frame_id)`` of the WrenchStamped ``topic`` of a rosbag2 directory."""
    from rosbags.highlevel import AnyReader
    from rosbags.rosbag2.errors import ReaderError

    try:
        with AnyReader([Path(path)], default_typestore=joint_state_typestore()) as reader:
            connections = [c for c in reader.connections if c.topic == topic]
            if not connections:
                topics = sorted({c.topic for c in reader.connections})
                raise DataError(f"{path}: no topic {topic} (has: {', '.join(topics)})")
            if connections[0].msgtype != WRENCH_TYPE:
                raise DataError(f"{path}: topic {topic} is {connections[0].msgtype}, not {WRENCH_TYPE}")
            times, values, frame = [], [], ""
            for connection, received, raw in reader.messages(connections=connections):
                msg = reader.deserialize(raw, connection.msgtype)
                stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
                times.append(stamp if stamp > 0 else received * 1e-9)
                f, n = msg.wrench.force, msg.wrench.torque
                values.append([f.x, f.y, f.z, n.x, n.y, n.z])
                frame = frame or msg.header.frame_id
    except (ReaderError, OSError, ValueError, KeyError) as err:
        raise BagError(f"{path}: cannot read the bag: {str(err).splitlines()[0] if str(err) else err}") from err
    t, wrench = np.array(times), np.array(values, dtype=float).reshape(-1, 6)
    if t.size < 2:
        raise DataError(f"{path}: topic {topic} has {t.size} message(s)")
    bad = np.flatnonzero(~np.isfinite(wrench).all(axis=1))
    if bad.size:
        raise DataError(f"{path}: {topic} sample {bad[0]} is not finite")
    order = np.argsort(t, kind="stable")
    return t[order], wrench[order], frame


def write_joint_states_and_wrenches(path: str | Path, series: JointStateSeries, t: np.ndarray, wrench: np.ndarray,
                                    frame_id: str, wrench_topic: str = WRENCH_TOPIC,
                                    topic: str = "/joint_states") -> Path:
    """A new rosbag2 (MCAP) with the joint states and the wrenches, written whole or not at all (a simulated bag)."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    path = Path(path)
    if path.exists():
        raise BagError(f"{path} exists already")
    store = joint_state_typestore()
    stamps, messages = encode_joint_states(series)
    types = store.types
    header, stamp_type = types["std_msgs/msg/Header"], types["builtin_interfaces/msg/Time"]
    vector, wrench_type = types["geometry_msgs/msg/Vector3"], types["geometry_msgs/msg/Wrench"]
    path.parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        with Writer(workdir / path.name, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
            joints = writer.add_connection(topic, JOINT_STATE_TYPE, typestore=store)
            wrenches = writer.add_connection(wrench_topic, WRENCH_TYPE, typestore=store)
            for stamp, data in zip(stamps.tolist(), messages):
                writer.write(joints, stamp, data)
            for time_s, w in zip(np.asarray(t, dtype=float), np.asarray(wrench, dtype=float)):
                ns = int(round(time_s * 1e9))
                msg = types[WRENCH_TYPE](header(stamp_type(ns // 10 ** 9, ns % 10 ** 9), frame_id),
                                         wrench_type(vector(*w[:3]), vector(*w[3:])))
                writer.write(wrenches, ns, store.serialize_cdr(msg, WRENCH_TYPE))
        mark(workdir / path.name, SIMULATED_BAG)
        os.replace(workdir / path.name, path)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return path
