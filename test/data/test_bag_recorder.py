"""The crash-safe recorder: a standard bag any rosbag2 reader opens; killed with SIGKILL while recording at 1 kHz it
loses nothing older than its flush period, and ``repair_bag`` makes the rest readable; a rosbags without the flush
hooks is refused at start-up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader

from dynid_ros.data.bag_io import (
    JOINT_STATE_TYPE,
    BagRecorder,
    bag_info,
    encode_joint_states,
    read_joint_states,
    repair_bag,
)
from dynid_ros.errors import BagError

from support.bag_cases import fingerprint, series

STORAGES = ["mcap", "sqlite3"]


@pytest.mark.parametrize("storage", STORAGES)
def test_recorder_writes_a_standard_bag(tmp_path: Path, storage: str) -> None:
    stamps, messages = encode_joint_states(series(30))
    with BagRecorder(tmp_path / "rec", storage, {"/joint_states": JOINT_STATE_TYPE}) as recorder:
        for stamp, data in zip(stamps, messages):
            recorder.write("/joint_states", data, int(stamp))
        with pytest.raises(BagError, match="topic /other was not declared"):
            recorder.write("/other", messages[0], 0)
    assert recorder.counts == {"/joint_states": 30}
    assert bag_info(tmp_path / "rec")["messages"] == {"/joint_states": 30}
    np.testing.assert_array_equal(read_joint_states(tmp_path / "rec").effort, series(30).effort)


CHILD = """
import sys, time
from dynid_ros.data.bag_io import BagRecorder, encode_joint_states
from dynid_ros.data.joint_states import JointStateSeries
import numpy as np
path, storage, side = sys.argv[1:4]
n, count = 7, 60000
s = JointStateSeries([f"j{i}" for i in range(n)], 1.0 + np.arange(count) * 1e-3, np.zeros((count, n)),
                     np.zeros((count, n)), np.zeros((count, n)))
stamps, msgs = encode_joint_states(s)
recorder = BagRecorder(path, storage, {"/joint_states": "sensor_msgs/msg/JointState"})
out = open(side, "w", buffering=1)
start = time.monotonic()
for i in range(count):
    recorder.write("/joint_states", msgs[i], int(stamps[i]))
    if i % 20 == 19:
        out.write(f"{i + 1} {time.monotonic()}\\n")
    delay = start + (i + 1) * 1e-3 - time.monotonic()
    if delay > 0:
        time.sleep(delay)
"""


@pytest.mark.parametrize("storage", STORAGES)
def test_sigkill_loses_nothing_older_than_a_second(tmp_path: Path, storage: str) -> None:
    bag, side = tmp_path / "rec", tmp_path / "written.txt"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(bag), storage, str(side)])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not side.exists() or side.stat().st_size < 2000):
            time.sleep(0.05)  # wait until the child has been recording for a while
        time.sleep(1.5)
        killed_at = time.monotonic()
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    progress = [line.split() for line in side.read_text().splitlines() if len(line.split()) == 2]
    must_have = max(int(count) for count, at in progress if float(at) <= killed_at - 1.0)
    assert must_have >= 500
    assert not (bag / "metadata.yaml").exists()  # the killed recorder never finished the bag

    before = fingerprint(bag)
    report = repair_bag(bag)
    assert fingerprint(bag) == before  # the damaged bag is only read
    repaired = Path(report["out"])
    assert repaired == tmp_path / "rec_repaired"
    recovered = report["messages"]["/joint_states"]
    assert recovered >= must_have, report
    with AnyReader([repaired]) as reader:  # a standard tool reads it
        assert sum(1 for _ in reader.messages()) == recovered
    read = read_joint_states(repaired)
    np.testing.assert_allclose(read.t, 1.0 + 1e-3 * np.arange(recovered), atol=1e-9)  # a gap-free prefix
    with pytest.raises(BagError, match="rec_repaired exists already"):
        repair_bag(bag)  # never overwrites
    assert repair_bag(bag, tmp_path / "again")["message_count"] == recovered
    assert repair_bag(repaired)["out"] is None  # a complete bag: nothing to do, nothing written


def test_recorder_refuses_a_rosbags_without_the_flush_hooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The start-up check: a rosbags version whose MCAP writer lacks ``close_chunk`` (as a future one may)."""
    from rosbags.rosbag2.storage_mcap import McapWriter

    monkeypatch.delattr(McapWriter, "close_chunk")
    with pytest.raises(BagError, match="cannot be flushed \\(needs close_chunk, bio\\)"):
        BagRecorder(tmp_path / "bag", "mcap", topics={"/joint_states": JOINT_STATE_TYPE})


@pytest.mark.parametrize(("storage", "topics", "match"), [
    ("rosbag1", {"/joint_states": JOINT_STATE_TYPE}, "storage must be mcap or sqlite3, not 'rosbag1'"),
    ("mcap", {}, "no topics to record"),
    ("mcap", {"/x": "my_msgs/msg/Nothing"}, "unknown message type my_msgs/msg/Nothing"),
])
def test_recorder_refuses_what_it_cannot_record(tmp_path: Path, storage: str, topics: dict, match: str) -> None:
    with pytest.raises(BagError, match=match):
        BagRecorder(tmp_path / "bag", storage, topics)
    assert not (tmp_path / "bag").exists()


def test_recorder_never_writes_into_an_existing_directory(tmp_path: Path) -> None:
    (tmp_path / "bag").mkdir()
    (tmp_path / "bag" / "mine.txt").write_text("mine")
    with pytest.raises(BagError, match="cannot create bag"):
        BagRecorder(tmp_path / "bag", "mcap", {"/joint_states": JOINT_STATE_TYPE})
    assert fingerprint(tmp_path / "bag") == {"mine.txt": b"mine"}


@pytest.mark.parametrize("storage", STORAGES)
def test_what_was_flushed_survives_an_abandoned_bag(tmp_path: Path, storage: str) -> None:
    """A write failed (disk full): the bag is released unfinished; every message flushed before is recovered."""
    stamps, messages = encode_joint_states(series(40))
    recorder = BagRecorder(tmp_path / "rec", storage, {"/joint_states": JOINT_STATE_TYPE}, flush_period_s=3600.0)
    for stamp, data in zip(stamps[:25], messages[:25], strict=True):
        recorder.write("/joint_states", data, int(stamp))
    recorder.flush()
    for stamp, data in zip(stamps[25:], messages[25:], strict=True):  # written, never flushed
        recorder.write("/joint_states", data, int(stamp))
    recorder.abandon()
    recorder.abandon()  # twice: nothing more to release
    assert not (tmp_path / "rec" / "metadata.yaml").exists()
    with pytest.raises(BagError, match="recorder is closed"):
        recorder.write("/joint_states", messages[0], 0)
    report = repair_bag(tmp_path / "rec")
    assert 25 <= report["messages"]["/joint_states"] <= 40
    read = read_joint_states(report["out"])
    np.testing.assert_array_equal(read.effort[:25], series(40).effort[:25])


def test_a_zero_flush_period_makes_every_message_durable(tmp_path: Path) -> None:
    stamps, messages = encode_joint_states(series(10))
    recorder = BagRecorder(tmp_path / "rec", "mcap", {"/joint_states": JOINT_STATE_TYPE}, flush_period_s=0.0)
    for stamp, data in zip(stamps, messages, strict=True):
        recorder.write("/joint_states", data, int(stamp))
    recorder.abandon()
    assert repair_bag(tmp_path / "rec")["messages"] == {"/joint_states": 10}


def test_the_bag_is_finished_when_the_caller_fails(tmp_path: Path) -> None:
    stamps, messages = encode_joint_states(series(5))
    with pytest.raises(RuntimeError):
        with BagRecorder(tmp_path / "rec", "sqlite3", {"/joint_states": JOINT_STATE_TYPE}) as recorder:
            for stamp, data in zip(stamps, messages, strict=True):
                recorder.write("/joint_states", data, int(stamp))
            raise RuntimeError("the node stopped")
    assert bag_info(tmp_path / "rec")["messages"] == {"/joint_states": 5}  # keeps what was recorded
