"""A thread that owns one rosbag2 writer and writes queued serialized messages (``recorder_node``'s disk side).

The ROS callbacks only queue ``(topic, bytes, time)``; this thread writes them, so disk writes never
hold up the executor, and sqlite3 objects stay in the thread that made them.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from dynid_ros.data.bag_recorder import BagRecorder
from dynid_ros.errors import DynidError


class BagWriterThread(threading.Thread):
    """Owns one BagRecorder (sqlite3 objects must stay in their thread) and writes queued messages.

    Any error of the bag (disk full, file removed, permission) ends the thread at once: ``error`` says
    why, ``on_error`` is called (from this thread), the bag is abandoned as a killed recorder leaves it
    (``dynid bag repair`` reads it) and later messages are dropped.
    """

    def __init__(self, path: Path, storage: str, topics: dict[str, str],
                 on_error: Callable[[], None] | None = None) -> None:
        super().__init__(name="bag_writer", daemon=True)
        self.path, self.storage, self.topics = path, storage, topics
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.ready = threading.Event()
        self.error: str | None = None
        self.recorder = None
        self._on_error = on_error

    def run(self) -> None:
        """Create the bag and write queued messages until closed; an error is kept in ``error``."""
        try:
            self.recorder = BagRecorder(self.path, self.storage, topics=self.topics)
        except (DynidError, OSError, sqlite3.Error) as err:
            self.error = f"{self.path}: cannot create bag: {err}" if not isinstance(err, DynidError) else str(err)
            return
        finally:
            self.ready.set()
        try:
            self._write_until_closed()
            self.recorder.close()
        except Exception as err:  # noqa: BLE001 - thread boundary: every write error is reported, none kills silently
            self.error = f"writing {self.path} failed: {err or type(err).__name__}"
            self.recorder.abandon()
            if self._on_error is not None:
                self._on_error()
            return

    def _write_until_closed(self) -> None:
        while True:
            try:
                item = self.queue.get(timeout=0.2)
            except queue.Empty:
                self.recorder.flush()  # durable even when messages stop arriving
                continue
            if item is None:
                return
            self.recorder.write(*item)

    def write(self, topic: str, data: bytes, timestamp_ns: int) -> None:
        """Queue one serialized message (dropped once the thread has failed)."""
        if self.error is None:
            self.queue.put((topic, data, timestamp_ns))

    @property
    def counts(self) -> dict[str, int]:
        """Messages written per topic so far."""
        return dict(self.recorder.counts) if self.recorder is not None else {}

    def close(self) -> dict[str, int]:
        """Write what is queued, finish the bag, return the counts (check ``error`` after)."""
        self.queue.put(None)
        self.join()
        return self.counts
