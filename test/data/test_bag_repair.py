"""Repair of a bag whose recorder died: a new bag beside it with every readable message (compressed chunks too),
stopping at the first damaged record or skipping a chunk with a bad CRC, the input only read, never an overwrite."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dynid_ros.data.bag_io import JOINT_STATE_TYPE, BagRecorder, encode_joint_states, read_joint_states, repair_bag
from dynid_ros.errors import BagError

from support.bag_cases import fingerprint, series
from support.raw_bags import TYPES


def test_repair_stops_at_the_first_damaged_record(tmp_path: Path) -> None:
    stamps, messages = encode_joint_states(series(3000))
    recorder = BagRecorder(tmp_path / "rec", "mcap", {"/joint_states": JOINT_STATE_TYPE})
    for k, (stamp, data) in enumerate(zip(stamps, messages)):
        recorder.write("/joint_states", data, int(stamp))
        if k in (999, 1999):
            recorder.flush()  # two complete chunks of 1000 messages
    recorder.close()
    data_file = tmp_path / "rec" / "rec.mcap"
    (tmp_path / "rec" / "metadata.yaml").unlink()
    size = data_file.stat().st_size
    data_file.write_bytes(data_file.read_bytes()[:int(size * 0.8)])  # cuts the third chunk
    report = repair_bag(tmp_path / "rec")
    assert report["messages"] == {"/joint_states": 2000} and report["discarded_bytes"] > 0
    assert "unreadable record" in report["damage"]
    assert len(read_joint_states(report["out"])) == 2000


def write_mcap(path: Path, compression: str, chunks: int = 3, per_chunk: int = 200,
               extra_channel: bool = False) -> Path:
    """A rosbag2 MCAP written by the ``mcap`` library as ``ros2 bag`` does (ros2msg schemas, cdr messages, chunks
    compressed with ``compression``), its recorder killed before metadata.yaml; optionally a protobuf channel."""
    from mcap.writer import CompressionType
    from mcap.writer import Writer as McapWriter

    path.mkdir()
    stamps, messages = encode_joint_states(series(chunks * per_chunk))
    with open(path / f"{path.name}.mcap", "wb") as stream:
        record = 31 + len(messages[0])  # opcode, length, channel, sequence, two times, data
        writer = McapWriter(stream, chunk_size=per_chunk * record - 1, compression=CompressionType[compression.upper()])
        writer.start(profile="ros2", library="test")
        schema = writer.register_schema(JOINT_STATE_TYPE, "ros2msg",
                                        TYPES.generate_msgdef(JOINT_STATE_TYPE, ros_version=2)[0].encode())
        channel = writer.register_channel("/joint_states", "cdr", schema, {"offered_qos_profiles": ""})
        other = None
        if extra_channel:
            proto = writer.register_schema("foxglove.Log", "protobuf", b"\x0a\x00")
            other = writer.register_channel("/log", "protobuf", proto)
        for k, (stamp, data) in enumerate(zip(stamps.tolist(), messages)):
            writer.add_message(channel, stamp, data, stamp)
            if other is not None and k % 100 == 0:
                writer.add_message(other, stamp, b"\x0a\x00", stamp)
        writer.finish()
    return path


@pytest.mark.parametrize("compression", ["lz4", "zstd", "none"])
def test_repair_reads_compressed_chunks_into_a_new_bag(tmp_path: Path, compression: str) -> None:
    """A complete bag with lz4 chunks was 'repaired' into an empty bag and the original deleted."""
    bag = write_mcap(tmp_path / "rec", compression)
    before = fingerprint(bag)
    report = repair_bag(bag)
    assert fingerprint(bag) == before
    assert report["messages"] == {"/joint_states": 600} and report["skipped"] == [] and not report["damage"]
    read = read_joint_states(report["out"])
    np.testing.assert_array_equal(read.effort, series(600).effort)


def test_repair_skips_a_chunk_with_a_bad_crc_and_reports_other_encodings(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from dynid_ros.cli.main import main

    bag = write_mcap(tmp_path / "rec", "none", extra_channel=True)
    data_file = bag / "rec.mcap"
    raw = bytearray(data_file.read_bytes())
    offset = raw.find(encode_joint_states(series(600))[1][300][-16:])  # message 300: inside the second chunk
    assert offset > 0
    raw[offset] ^= 0xFF
    data_file.write_bytes(bytes(raw))
    assert main(["bag", "repair", str(bag), "--out", str(tmp_path / "fixed")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if "crc" in line.lower()] == [next(line for line in out if line.startswith(
        "skipped chunk"))]  # the CRC error is one line
    assert any(line.startswith("skipped topic /log (4 message(s)): schema encoding 'protobuf'") for line in out), out
    kept = read_joint_states(tmp_path / "fixed").position[:, 0] - 0.1  # message k has position k + 0.1
    lost = np.setdiff1d(np.arange(600), np.round(kept))
    assert 300 in lost and 150 <= lost.size <= 250 and np.all(np.diff(lost) == 1)  # the damaged chunk, only it


def test_repair_rejects_what_is_not_a_bag(tmp_path: Path) -> None:
    with pytest.raises(BagError, match="no such bag"):
        repair_bag(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BagError, match="expected one .mcap or .db3 file, found none"):
        repair_bag(tmp_path / "empty")


def test_repair_of_a_sqlite3_bag_whose_recorder_died(tmp_path: Path) -> None:
    """A committed transaction is kept, the open one is not; the input is only read; a complete bag needs nothing."""
    stamps, messages = encode_joint_states(series(60))
    recorder = BagRecorder(tmp_path / "rec", "sqlite3", {"/joint_states": JOINT_STATE_TYPE}, flush_period_s=3600.0)
    for stamp, data in zip(stamps[:40], messages[:40], strict=True):
        recorder.write("/joint_states", data, int(stamp))
    recorder.flush()  # committed
    for stamp, data in zip(stamps[40:], messages[40:], strict=True):
        recorder.write("/joint_states", data, int(stamp))
    recorder.abandon()  # as a killed recorder leaves it: no metadata.yaml
    before = fingerprint(tmp_path / "rec")
    report = repair_bag(tmp_path / "rec", tmp_path / "fixed")
    assert fingerprint(tmp_path / "rec") == before
    assert report["storage"] == "sqlite3" and report["out"] == str(tmp_path / "fixed")
    assert report["messages"] == {"/joint_states": 40}
    np.testing.assert_array_equal(read_joint_states(tmp_path / "fixed").effort, series(40).effort)
    assert repair_bag(tmp_path / "fixed")["out"] is None  # complete now: nothing to do, nothing written


def test_the_repaired_bag_goes_beside_never_inside(tmp_path: Path) -> None:
    bag = write_mcap(tmp_path / "rec", "none")
    before = fingerprint(bag)
    for out in (bag, bag / "inside"):
        with pytest.raises(BagError, match="must not be the damaged bag or inside it"):
            repair_bag(bag, out)
    assert fingerprint(bag) == before
    (tmp_path / "file.txt").write_text("not a bag")
    with pytest.raises(BagError, match="not a rosbag2 directory"):
        repair_bag(tmp_path / "file.txt")
