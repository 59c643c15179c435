"""Raw rosbag2 files written message by message (CDR bytes), for bag variants the writer of the package never makes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from dynid_ros.data.bag_io import (
    JOINT_STATE_TYPE,
)

TYPES = get_typestore(Stores.ROS2_HUMBLE)
NAMES = ["j1", "j2", "j3"]
PLUGINS = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}


def write_raw(path: Path, messages: list[tuple[int, bytes]], storage: str = "mcap", topic: str = "/joint_states",
              msgtype: str = JOINT_STATE_TYPE) -> Path:
    with Writer(path, version=8, storage_plugin=PLUGINS[storage]) as writer:
        connection = writer.add_connection(topic, msgtype, typestore=TYPES)
        for receive_ns, data in messages:
            writer.write(connection, receive_ns, data)
    return path


def standard(k: int, stamp_ns: int | None = None, **changes: object) -> tuple[int, bytes]:
    """Message k of a 3-joint stream, names in a per-message order."""
    order = [NAMES[(i + k) % 3] for i in range(3)]  # rotate the order every message
    values = {"j1": 1.0 + k, "j2": 2.0 + k, "j3": 3.0 + k}
    fields = {"position": [values[n] for n in order], "velocity": [10 * values[n] for n in order],
              "effort": [100 * values[n] for n in order], "names": order}
    fields.update(changes)
    stamp = 5_000_000_000 + 1_000_000 * k if stamp_ns is None else stamp_ns
    return 7_000_000_000 + 1_000_000 * k, joint_state(stamp, fields["names"], fields["position"], fields["velocity"],
                                                      fields["effort"])


def joint_state(stamp_ns: int, names: list[str], position: list[float], velocity: list[float] | None = None,
                effort: list[float] | None = None) -> bytes:
    """A JointState serialized by rosbags (not by the code under test)."""
    js, header, stamp = (TYPES.types[k] for k in (JOINT_STATE_TYPE, "std_msgs/msg/Header",
                                                    "builtin_interfaces/msg/Time"))
    msg = js(header=header(stamp=stamp(sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9), frame_id=""),
             name=list(names), position=np.array(position, dtype=float),
             velocity=np.array(velocity if velocity is not None else [], dtype=float),
             effort=np.array(effort if effort is not None else [], dtype=float))
    return bytes(TYPES.serialize_cdr(msg, JOINT_STATE_TYPE))
