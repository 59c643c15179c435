"""rosbag2 input and output of ``sensor_msgs/msg/JointState`` (MCAP and sqlite3, via ``rosbags``).

``read_joint_states`` turns a bag into a :class:`~dynid_ros.data.joint_states.JointStateSeries`, matching
joints by name in every message. ``write_joint_states`` writes one (bag version 8, readable by
Humble and later). ``bag_info`` summarises a bag. The crash-safe streaming recorder
(:mod:`dynid_ros.data.bag_recorder`) and ``repair_bag`` (:mod:`dynid_ros.data.bag_repair`) are re-exported here.

JointState messages that share one little-endian layout (same joint names, array lengths and
frame_id length: the normal case) are decoded together from their CDR bytes as rows of a NumPy byte
matrix (a 60 s, 1 kHz bag in about 0.1 s, 17x faster than rosbags' deserializer; see
``benchmarks/bench_bag_codec.py``); every other message (big-endian, a layout few messages share)
is decoded by rosbags' deserializer.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from dynid_ros.data.bag_recorder import BagRecorder
from dynid_ros.data.bag_repair import repair_bag
from dynid_ros.data.joint_state_merge import FIELDS, JointStateSource, merge_by_name
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.output_paths import SIMULATED_BAG, check_output, mark
from dynid_ros.errors import BagError, DataError

__all__ = ["BagRecorder", "JOINT_STATE_TYPE", "STORAGES", "bag_info", "read_joint_states", "repair_bag",
           "write_joint_states"]

JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"
STORAGES = ("mcap", "sqlite3")
_CDR_LE = b"\x00\x01\x00\x00"


# ----------------------------------------------------------------------------------------------
# Opening bags


@dataclass
class _RawTopic:
    """The raw messages of one topic, in bag order."""

    receive_ns: np.ndarray
    data: list[bytes]


def _open_reader(path: Path) -> object:
    """An opened rosbags reader for a rosbag2 directory, or a storage reader for a bare .mcap/.db3 file."""
    from rosbags.rosbag2 import Reader
    from rosbags.rosbag2.errors import ReaderError
    from rosbags.rosbag2.storage_mcap import McapReader
    from rosbags.rosbag2.storage_sqlite3 import Sqlite3Reader

    if not path.exists():
        raise BagError(f"{path}: no such bag")
    try:
        if path.is_dir():
            if not (path / "metadata.yaml").is_file():
                raise BagError(f"{path}: no metadata.yaml (a recording that did not finish? run: dynid bag repair "
                               f"{path})")
            reader = Reader(path)
        elif path.suffix == ".mcap":
            reader = McapReader(path)
        elif path.suffix == ".db3":
            reader = Sqlite3Reader(path)
        else:
            raise BagError(f"{path}: not a rosbag2 directory, .mcap or .db3 file")
        reader.open()
    except BagError:
        raise
    except (ReaderError, OSError, ValueError, KeyError, struct.error) as err:
        raise BagError(f"{path}: cannot read bag: {_one_line(err)}") from err
    return reader


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text or type(err).__name__


def _topics(reader: object) -> dict[str, str]:
    return {c.topic: c.msgtype for c in reader.connections}


def _read_topic(path: Path, topic: str) -> _RawTopic:
    stamps: list[np.ndarray] = []
    data: list[bytes] = []
    for receive_ns, raws in iter_topic_chunks(path, topic, None):
        stamps.append(receive_ns)
        data += raws
    return _RawTopic(np.concatenate(stamps) if stamps else np.zeros(0, dtype=np.int64), data)


def iter_topic_chunks(path: str | Path, topic: str, chunk_messages: int | None):
    """The raw messages of ``topic`` in bag order, ``chunk_messages`` at a time (None: all at once), as
    ``(receive_ns (m,), [CDR bytes])``; the bag is read lazily, so memory holds one chunk."""
    from rosbags.rosbag2.errors import ReaderError

    path = Path(path)
    reader = _open_reader(path)
    try:
        connections = [c for c in reader.connections if c.topic == topic]
        if not connections:
            present = ", ".join(sorted(_topics(reader))) or "none"
            raise BagError(f"{path}: topic {topic} not in the bag (topics: {present})")
        wrong = [c.msgtype for c in connections if c.msgtype != JOINT_STATE_TYPE]
        if wrong:
            raise BagError(f"{path}: topic {topic} has type {wrong[0]}, expected {JOINT_STATE_TYPE}")
        stamps: list[int] = []
        data: list[bytes] = []
        count = 0
        try:
            for _, timestamp, raw in reader.messages(connections=connections):
                stamps.append(timestamp)
                data.append(bytes(raw))
                count += 1
                if chunk_messages is not None and len(data) >= chunk_messages:
                    yield np.asarray(stamps, dtype=np.int64), data
                    stamps, data = [], []
        except (ReaderError, OSError, ValueError, KeyError, struct.error, EOFError) as err:
            raise BagError(f"{path}: corrupt bag after {count} message(s) of {topic}: {_one_line(err)} "
                           f"(try: dynid bag repair {path})") from err
        if data or chunk_messages is None:
            yield np.asarray(stamps, dtype=np.int64), data
    finally:
        reader.close()


# ----------------------------------------------------------------------------------------------
# JointState CDR (XCDR1 as used by ROS 2): header, name[], position[], velocity[], effort[].
# Fast path: little-endian messages sharing one layout, decoded together as rows of a byte matrix.
# Everything else (big-endian, layouts shared by few messages such as a varying frame_id length,
# anything the layout parser does not accept) is decoded one by one by rosbags' deserializer.


@dataclass(frozen=True)
class _Layout:
    """Byte offsets of one little-endian JointState message.

    ``frame_end``: end of the frame_id string; ``arrays``: (count offset, data offset, count) per field.
    """

    length: int
    names: tuple[str, ...]
    frame_end: int
    names_end: int
    arrays: tuple[tuple[int, int, int], ...]


def _align(pos: int, size: int) -> int:
    return 4 + ((pos - 4 + size - 1) // size) * size


def _parse_layout(buf: bytes) -> _Layout | None:
    """Offsets of the fields of one little-endian CDR JointState; None when the fast path cannot take it."""
    if buf[:2] != _CDR_LE[:2]:
        return None
    try:
        pos = 12  # encapsulation (4) + stamp sec, nanosec (8)
        (size,) = struct.unpack_from("<I", buf, pos)
        pos += 4 + size
        frame_end = pos
        pos = _align(pos, 4)
        (count,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        names = []
        for _ in range(count):
            pos = _align(pos, 4)
            (size,) = struct.unpack_from("<I", buf, pos)
            names.append(buf[pos + 4:pos + 3 + size].decode())
            pos += 4 + size
        names_end = pos
        arrays = []
        for _ in range(3):
            pos = _align(pos, 4)
            (count,) = struct.unpack_from("<I", buf, pos)
            count_at = pos
            pos += 4
            if count:
                pos = _align(pos, 8)
            arrays.append((count_at, pos, count))
            pos += 8 * count
    except (struct.error, UnicodeDecodeError):
        return None
    if pos > len(buf) or any(count not in (0, len(names)) for _, _, count in arrays):
        return None
    return _Layout(len(buf), tuple(names), frame_end, names_end, tuple(arrays))


_MIN_GROUP = 64
"""A layout shared by fewer messages (and not by all that remain) goes to rosbags' deserializer."""
_MAX_MISSES = 2
"""After this many such small groups the rest of the topic goes to rosbags (e.g. frame_id varies)."""


@dataclass
class _Decoded:
    """Header stamps [ns] (N,), position/velocity/effort (N, n) and which messages have each field.

    ``names``: every joint of the topic, in the order first seen; ``carries`` (N, n): the joints of each
    message (a joint a message does not carry is NaN in its row)."""

    names: list[str]
    stamps: np.ndarray
    fields: list[np.ndarray]
    present: np.ndarray
    carries: np.ndarray
    fast: int = 0  # messages decoded by the fast path
    first: int = 0  # index of the first message among all of the topic (messages name samples by it)

    def columns(self, layout_names: tuple[str, ...], topic: str, sample: int) -> np.ndarray:
        """Columns of ``layout_names`` (the joints of one message), adding the joints not seen before."""
        if len(set(layout_names)) != len(layout_names):
            raise DataError(f"topic {topic}: duplicate joint names in sample {sample + self.first}: "
                            f"{list(layout_names)}")
        new = [name for name in layout_names if name not in self.names]
        if new:
            n_msg = self.stamps.size
            self.names += new
            self.fields = [np.hstack([f, np.full((n_msg, len(new)), np.nan)]) for f in self.fields]
            self.carries = np.hstack([self.carries, np.zeros((n_msg, len(new)), dtype=bool)])
        index = {name: i for i, name in enumerate(self.names)}
        return np.array([index[name] for name in layout_names], dtype=np.int64)


def decode_messages(raws: list[bytes], topic: str, first: int = 0) -> _Decoded:
    """Decode every message, its joints matched by name (:class:`_Decoded`); ``first``: the index of ``raws[0]``
    among all messages of the topic (for messages)."""
    n_msg = len(raws)
    out = _Decoded([], np.zeros(n_msg, dtype=np.int64), [np.zeros((n_msg, 0)) for _ in range(3)],
                   np.zeros((n_msg, 3), dtype=bool), np.zeros((n_msg, 0), dtype=bool), first=first)
    lengths = np.fromiter((len(r) for r in raws), dtype=np.int64, count=n_msg)
    pending = np.ones(n_msg, dtype=bool)
    slow = np.zeros(n_msg, dtype=bool)
    misses = 0
    while pending.any() and misses < _MAX_MISSES:
        start = int(np.argmax(pending))
        layout = _parse_layout(raws[start])
        rows, matrix = (np.array([start]), None) if layout is None else _same_layout(raws, layout, pending, lengths)
        if layout is None or (rows.size < _MIN_GROUP and rows.size < pending.sum()):
            slow[rows] = True
            misses += 1
        else:
            _decode_rows(matrix, rows, layout, out, topic)
        pending[rows] = False
    slow |= pending
    columns: dict[tuple[str, ...], np.ndarray] = {}
    for i in np.flatnonzero(slow).tolist():
        _decode_one(raws[i], i, out, topic, columns)
    return out


def _same_layout(raws: list[bytes], layout: _Layout, pending: np.ndarray,
                 lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pending messages with ``layout`` (any frame_id of the same length) and their byte matrix."""
    rows = np.flatnonzero(pending & (lengths == layout.length))
    matrix = np.frombuffer(b"".join([raws[i] for i in rows]), dtype=np.uint8).reshape(rows.size, -1)
    same = np.ones(rows.size, dtype=bool)
    spans = [(0, 4), (12, 16), (layout.frame_end, layout.names_end)] + [(c, c + 4) for c, _, _ in layout.arrays]
    for lo, hi in spans:
        same &= (matrix[:, lo:hi] == matrix[0, lo:hi]).all(axis=1)
    return rows[same], matrix[same]


def _decode_rows(matrix: np.ndarray, rows: np.ndarray, layout: _Layout, out: _Decoded, topic: str) -> None:
    columns = out.columns(layout.names, topic, int(rows[0]))
    out.carries[np.ix_(rows, columns)] = True
    sec = matrix[:, 4:8].copy().view("<i4")[:, 0].astype(np.int64)
    nsec = matrix[:, 8:12].copy().view("<u4")[:, 0].astype(np.int64)
    out.stamps[rows] = sec * 1_000_000_000 + nsec
    for k, (_, offset, count) in enumerate(layout.arrays):
        if count:
            out.fields[k][np.ix_(rows, columns)] = matrix[:, offset:offset + 8 * count].copy().view("<f8")
            out.present[rows, k] = True
    out.fast += rows.size


def _deserialize(raw: bytes, topic: str, sample: int) -> object:
    try:
        return joint_state_typestore().deserialize_cdr(raw, JOINT_STATE_TYPE)
    except (struct.error, IndexError, ValueError, UnicodeDecodeError, TypeError, KeyError, AssertionError) as err:
        raise DataError(f"topic {topic}, sample {sample}: malformed JointState message ({_one_line(err)})") from err


def _decode_one(raw: bytes, sample: int, out: _Decoded, topic: str,
                columns_of: dict[tuple[str, ...], np.ndarray]) -> None:
    """One message by rosbags' deserializer (any endianness and layout); ``columns_of`` caches name orders."""
    msg = _deserialize(raw, topic, sample + out.first)
    key = tuple(msg.name)
    columns = columns_of.get(key)
    if columns is None:
        columns = columns_of[key] = out.columns(key, topic, sample)
    out.carries[sample, columns] = True
    out.stamps[sample] = int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)
    for k, values in enumerate((msg.position, msg.velocity, msg.effort)):
        if len(values) == 0:
            continue
        if len(values) != len(msg.name):
            field = ("position", "velocity", "effort")[k]
            raise DataError(f"topic {topic}, sample {sample + out.first}: {len(values)} {field} values for "
                            f"{len(msg.name)} joint names")
        out.fields[k][sample, columns] = values
        out.present[sample, k] = True


@lru_cache(maxsize=1)
def joint_state_typestore() -> object:
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_HUMBLE)


# ----------------------------------------------------------------------------------------------
# Public API


def read_joint_states(path: str | Path, topic: str = "/joint_states",
                      require: tuple[str, ...] = ("effort",)) -> JointStateSeries:
    """Read ``sensor_msgs/msg/JointState`` from a rosbag2 (directory, or bare .mcap/.db3 file).

    Joints are matched by name in every message and merged across publishers
    (:func:`~dynid_ros.data.joint_state_merge.merge_by_name`: one source per set of joint names, each on one
    clock, the series at the stamps of the source with the most messages). Samples with NaN/Inf are dropped
    (``info["dropped_nonfinite"]``), as are repeated stamps (``info["dropped_duplicate"]``);
    ``info["decoded_fast"]`` counts the messages of the fast path, ``info["sources"]`` describes the sources.
    ``require`` names the fields (besides position) that some joint must have; a field no message has is None,
    a field some joints lack is NaN in their columns.
    """
    path = Path(path)
    raw = _read_topic(path, topic)
    if not raw.data:
        raise DataError(f"{path}: topic {topic} has no messages")
    decoded = decode_messages(raw.data, topic)
    where = f"{path}: topic {topic}"
    merged = merge_by_name(_sources(decoded, raw.receive_ns, where), where)
    for field, values in zip(FIELDS, (merged.position, merged.velocity, merged.effort)):
        if values is None and (field == "position" or field in require):
            raise BagError(f"{path}: the messages on {topic} have no {field}")
    merged.info = {"path": str(path), "topic": topic, "messages": len(raw.data), "decoded_fast": decoded.fast,
                   **merged.info}
    return merged


def _sources(decoded: _Decoded, receive_ns: np.ndarray, where: str) -> list[JointStateSource]:
    """The messages grouped by the set of joints they carry (one publisher each), in order of first message."""
    groups, first, inverse = np.unique(decoded.carries, axis=0, return_index=True, return_inverse=True)
    sources = []
    for g in np.argsort(first).tolist():
        rows = np.flatnonzero(inverse.reshape(-1) == g)
        cols = np.flatnonzero(groups[g])
        if not cols.size:
            continue  # messages without joints carry nothing
        fields: list[np.ndarray | None] = []
        for k, field in enumerate(FIELDS):
            present = decoded.present[rows, k]
            if not present.any():
                fields.append(None)
                continue
            if not present.all():
                sample = int(rows[np.argmin(present)])
                raise DataError(f"{where}, sample {sample}: no {field} (other messages with its joints have it)")
            fields.append(decoded.fields[k][np.ix_(rows, cols)])
        sources.append(JointStateSource([decoded.names[c] for c in cols.tolist()], decoded.stamps[rows],
                                        receive_ns[rows], fields, rows))
    if not sources:
        raise DataError(f"{where}: no message names any joint")
    return sources


def encode_joint_states(series: JointStateSeries) -> tuple[np.ndarray, list[bytes]]:
    """CDR bytes of one JointState per sample (header stamp = ``series.t``) and the stamps [ns]."""
    n_msg, n = series.position.shape
    stamps = np.round(np.asarray(series.t, dtype=np.float64) * 1e9).astype(np.int64)
    if (stamps < 0).any():
        raise DataError("cannot write negative times to a bag")
    head = bytearray(_CDR_LE + bytes(8) + struct.pack("<I", 1) + b"\x00")
    head += bytes(_align(len(head), 4) - len(head)) + struct.pack("<I", n)
    for name in series.names:
        head += bytes(_align(len(head), 4) - len(head))
        encoded = name.encode()
        head += struct.pack("<I", len(encoded) + 1) + encoded + b"\x00"
    parts: list[tuple[int, np.ndarray | None]] = []
    for values in (series.position, series.velocity, series.effort):
        head += bytes(_align(len(head), 4) - len(head))
        count = 0 if values is None else n
        head += struct.pack("<I", count)
        if count:
            head += bytes(_align(len(head), 8) - len(head))
            parts.append((len(head), values))
            head += bytes(8 * n)
    matrix = np.empty((n_msg, len(head)), dtype=np.uint8)
    matrix[:] = np.frombuffer(bytes(head), dtype=np.uint8)
    matrix[:, 4:8] = (stamps // 1_000_000_000).astype("<i4")[:, None].view(np.uint8)
    matrix[:, 8:12] = (stamps % 1_000_000_000).astype("<u4")[:, None].view(np.uint8)
    for offset, values in parts:
        matrix[:, offset:offset + 8 * n] = np.ascontiguousarray(values, dtype="<f8").view(np.uint8)
    blob = matrix.tobytes()
    size = len(head)
    return stamps, [blob[i * size:(i + 1) * size] for i in range(n_msg)]


def write_joint_states(path: str | Path, series: JointStateSeries, topic: str = "/joint_states",
                       storage: str = "mcap", overwrite: bool = False) -> Path:
    """Write ``series`` as ``sensor_msgs/msg/JointState`` to a new rosbag2 directory (version 8).

    Header stamps and receive times are ``series.t``. The bag is written to a temporary directory
    beside ``path`` and renamed into place, so ``path`` is either complete or absent. The bag is marked
    as a simulated bag (:mod:`dynid_ros.data.output_paths`); with ``overwrite``, an existing ``path`` is
    replaced only when it is such a bag.
    """
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    path = Path(path)
    if storage not in STORAGES:
        raise BagError(f"storage must be one of {', '.join(STORAGES)}, not {storage!r}")
    if path.exists() and not overwrite:
        raise BagError(f"{path} exists already")
    if path.exists():
        check_output(path, SIMULATED_BAG, flag="bag")
    stamps, messages = encode_joint_states(series)
    path.parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
        with Writer(workdir / path.name, version=8, storage_plugin=plugin) as writer:
            connection = writer.add_connection(topic, JOINT_STATE_TYPE, typestore=get_typestore(Stores.ROS2_HUMBLE))
            for stamp, data in zip(stamps.tolist(), messages):
                writer.write(connection, stamp, data)
        mark(workdir / path.name, SIMULATED_BAG)
        if path.exists():
            check_output(path, SIMULATED_BAG, flag="bag")  # still ours
            old = workdir / ".old"
            os.replace(path, old)
        os.replace(workdir / path.name, path)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return path


def bag_info(path: str | Path) -> dict:
    """Topics, message counts and time span of a rosbag2 directory or bare .mcap/.db3 file."""
    from rosbags.rosbag2 import Reader

    path = Path(path)
    reader = _open_reader(path)
    try:
        counts: dict[str, int] = {}
        for connection in reader.connections:
            counts[connection.topic] = counts.get(connection.topic, 0) + int(connection.msgcount)
        meta = reader if isinstance(reader, Reader) else reader.metadata
        start, end = int(meta.start_time), int(meta.end_time) - 1  # rosbags: end_time is last stamp + 1 ns
        topics = _topics(reader)
        data_files = [path] if path.is_file() else list(path.glob("*.mcap"))
        storage = "mcap" if any(f.suffix == ".mcap" for f in data_files) else "sqlite3"
    finally:
        reader.close()
    total = sum(counts.values())
    return {"path": str(path), "storage": storage, "topics": topics, "messages": counts, "message_count": total,
            "start_s": start * 1e-9 if total else None, "end_s": end * 1e-9 if total else None,
            "duration_s": (end - start) * 1e-9 if total else 0.0}
