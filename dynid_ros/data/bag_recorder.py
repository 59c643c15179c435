"""Crash-safe rosbag2 recording of serialized messages, and repair of bags whose recorder died.

``BagRecorder`` writes already-serialized (CDR) messages with ``rosbags``' rosbag2 writer (bag
version 8). It makes what it has written durable against the process being killed at least every
``flush_period_s`` (0.5 s), from ``write()`` itself: for sqlite3 it commits the open transaction;
for MCAP it closes the pending chunk and flushes it to the operating system. A SIGKILL therefore
loses at most the last ``flush_period_s`` of messages, but leaves a bag without ``metadata.yaml``
(and, for MCAP, without summary and footer): :func:`dynid_ros.data.bag_repair.repair_bag` (``dynid bag
repair``) writes its readable messages to a new bag.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from types import TracebackType

from dynid_ros.errors import BagError

FLUSH_PERIOD_S = 0.5
"""Longest time a written message stays only in this process's memory."""


class BagRecorder:
    """Record serialized messages of known topics to a new rosbag2 directory.

    Args:
        path: the bag directory to create (must not exist).
        storage: ``"mcap"`` or ``"sqlite3"``.
        topics: topic -> message type, e.g. ``{"/joint_states": "sensor_msgs/msg/JointState"}``;
            the type's definition comes from rosbags' Humble type store.
        flush_period_s: longest time between two flushes (checked on every ``write``; call
            ``flush()`` from a timer if messages may stop arriving while the bag stays open).

    Attributes:
        counts: messages written per topic.
    """

    def __init__(self, path: str | Path, storage: str = "mcap", topics: dict[str, str] | None = None,
                 flush_period_s: float = FLUSH_PERIOD_S) -> None:
        from rosbags.rosbag2 import StoragePlugin, Writer
        from rosbags.rosbag2.errors import WriterError
        from rosbags.typesys import Stores, get_typestore

        if storage not in ("mcap", "sqlite3"):
            raise BagError(f"storage must be mcap or sqlite3, not {storage!r}")
        if not topics:
            raise BagError("no topics to record")
        self.path = Path(path)
        self.storage = storage
        self.flush_period_s = float(flush_period_s)
        self.counts: dict[str, int] = {topic: 0 for topic in topics}
        typestore = get_typestore(Stores.ROS2_HUMBLE)
        unknown = [msgtype for msgtype in topics.values() if msgtype not in typestore.types]
        if unknown:
            raise BagError(f"unknown message type {unknown[0]} (rosbags' Humble type store has no definition)")
        plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
        try:  # Writer() itself refuses a path that exists
            self._writer = Writer(self.path, version=8, storage_plugin=plugin)
            self._writer.open()
        except (WriterError, OSError) as err:
            raise BagError(f"{self.path}: cannot create bag: {err}") from err
        hooks = ("close_chunk", "bio") if storage == "mcap" else ("conn",)
        if not all(hasattr(self._writer.storage, hook) for hook in hooks):
            self._writer.abort()
            raise BagError(f"this rosbags version's {storage} writer cannot be flushed (needs {', '.join(hooks)})")
        self._connections = {topic: self._writer.add_connection(topic, msgtype, typestore=typestore)
                             for topic, msgtype in topics.items()}
        self._unflushed = 0
        self._last_flush = time.monotonic()
        if storage == "sqlite3":
            self._writer.storage.conn.commit()  # topics and definitions are durable before any message

    def write(self, topic: str, data: bytes, timestamp_ns: int) -> None:
        """Append one serialized message; flushes when the last flush is ``flush_period_s`` old."""
        connection = self._connections.get(topic)
        if connection is None:
            raise BagError(f"{self.path}: topic {topic} was not declared to the recorder")
        if self._writer.storage is None:
            raise BagError(f"{self.path}: recorder is closed")
        self._writer.write(connection, int(timestamp_ns), data)
        self.counts[topic] += 1
        self._unflushed += 1
        if time.monotonic() - self._last_flush >= self.flush_period_s:
            self.flush()

    def flush(self) -> None:
        """Make every message written so far survive the death of this process."""
        storage = self._writer.storage
        self._last_flush = time.monotonic()
        if storage is None or not self._unflushed:
            return
        if self.storage == "sqlite3":
            storage.conn.commit()
        else:
            storage.close_chunk()
            storage.bio.flush()
        self._unflushed = 0

    def close(self) -> None:
        """Finish the bag: index, summary and ``metadata.yaml``."""
        if self._writer.storage is not None:
            self._writer.close()

    def abandon(self) -> None:
        """Release the bag's file without finishing it, after a write failed (disk full, file removed...).

        The file is left as a killed recorder leaves it: everything flushed before stays, and
        ``repair_bag`` makes it readable. Errors while releasing are expected here (the disk that
        failed the write fails the release too) and change nothing on disk, so they are not raised.
        """
        storage, self._writer.storage = self._writer.storage, None
        if storage is None:
            return
        try:
            if self.storage == "sqlite3":
                storage.conn.rollback()  # the open transaction; what was committed stays
                storage.conn.close()
            else:
                storage.bio.close()
        except (OSError, sqlite3.Error):
            pass

    def __enter__(self) -> BagRecorder:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()  # keep what was recorded even when the caller failed
