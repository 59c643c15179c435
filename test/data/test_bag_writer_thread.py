"""The recorder node's disk side: a thread that owns the bag and writes queued messages; its bag is a standard bag,
and any error ends it at once, saying why, leaving the bag as a killed recorder would (repairable)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from dynid_ros.data.bag_io import JOINT_STATE_TYPE, encode_joint_states, read_joint_states, repair_bag
from dynid_ros.data.bag_writer_thread import BagWriterThread

from support.bag_cases import series

TOPICS = {"/joint_states": JOINT_STATE_TYPE}


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_queued_messages_are_written_and_the_bag_finished(tmp_path: Path, storage: str) -> None:
    writer = BagWriterThread(tmp_path / "bag", storage, TOPICS)
    assert writer.counts == {}  # before the thread made its recorder
    writer.start()
    assert writer.ready.wait(30) and writer.error is None
    stamps, messages = encode_joint_states(series(200))
    for stamp, data in zip(stamps, messages, strict=True):
        writer.write("/joint_states", data, int(stamp))
    assert writer.close() == {"/joint_states": 200} and writer.error is None
    assert not writer.is_alive()
    np.testing.assert_array_equal(read_joint_states(tmp_path / "bag").position, series(200).position)


def test_a_bag_that_cannot_be_created_is_reported(tmp_path: Path) -> None:
    (tmp_path / "bag").mkdir()
    writer = BagWriterThread(tmp_path / "bag", "mcap", TOPICS)
    writer.start()
    assert writer.ready.wait(30)
    writer.join(30)
    assert writer.error is not None and "cannot create bag" in writer.error
    assert writer.counts == {}


def test_a_write_error_ends_the_thread_and_leaves_a_repairable_bag(tmp_path: Path) -> None:
    failures = []
    writer = BagWriterThread(tmp_path / "bag", "mcap", TOPICS, on_error=lambda: failures.append(1))
    writer.start()
    writer.ready.wait(30)
    stamps, messages = encode_joint_states(series(30))
    for stamp, data in zip(stamps[:20], messages[:20], strict=True):
        writer.write("/joint_states", data, int(stamp))
    deadline = time.monotonic() + 30
    while writer.counts.get("/joint_states", 0) < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.5)  # the queue empty for longer than its 0.2 s poll: the thread has flushed
    writer.write("/undeclared", messages[20], int(stamps[20]))  # the recorder refuses it: the error of a write
    writer.join(30)
    assert not writer.is_alive() and failures == [1]
    assert writer.error.startswith(f"writing {tmp_path / 'bag'} failed: ") and "/undeclared" in writer.error
    writer.write("/joint_states", messages[21], int(stamps[21]))  # dropped after the error
    assert writer.queue.empty()
    assert not (tmp_path / "bag" / "metadata.yaml").exists()
    report = repair_bag(tmp_path / "bag")
    assert report["messages"] == {"/joint_states": 20}  # everything flushed before the error
    np.testing.assert_array_equal(read_joint_states(report["out"]).effort, series(20).effort)
