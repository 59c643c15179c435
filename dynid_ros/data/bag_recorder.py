"""Crash-safe rosbag2 recording of serialized messages, and repair of bags whose recorder died.

``BagRecorder`` writes already-serialized (CDR) messages with ``rosbags``' rosbag2 writer (bag
version 8). It makes what it has written durable against the process being killed at least every
``flush_period_s`` (0.5 s), from ``write()`` itself: for sqlite3 it commits the open transaction;
for MCAP it closes the pending chunk and flushes it to the operating system. A SIGKILL therefore
loses at most the last ``flush_period_s`` of messages, but leaves a bag without ``metadata.yaml``
(and, for MCAP, without summary and footer). ``repair_bag`` is the analogue of ``ros2 bag
reindex``: for sqlite3 it rolls back the interrupted transaction and regenerates ``metadata.yaml``
from the database; for MCAP it reads records sequentially up to the first damaged one and rewrites
a valid file from them.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import struct
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from dynid_ros.errors import BagError

FLUSH_PERIOD_S = 0.5
"""Longest time a written message stays only in this process's memory."""

_MCAP_MAGIC = b"\x89MCAP0\r\n"


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
        self._writer = Writer(self.path, version=8, storage_plugin=plugin)
        try:
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


# ----------------------------------------------------------------------------------------------
# Repair


@dataclass
class _Recovered:
    """Records read from a damaged MCAP file."""

    schemas: dict[int, tuple[str, str, str]] = field(default_factory=dict)  # id -> name, encoding, data
    channels: dict[int, tuple[int, str, str, bytes]] = field(default_factory=dict)  # id -> schema, topic, enc, meta
    messages: list[tuple[int, int, bytes]] = field(default_factory=list)  # log time, channel, data
    good_bytes: int = 0
    complete: bool = False
    damage: str = ""


def repair_bag(path: str | Path) -> dict:
    """Make a bag whose recorder died readable (the analogue of ``ros2 bag reindex``).

    Returns what was recovered: ``storage``, ``action``, ``messages`` ({topic: count}),
    ``message_count``, ``discarded_bytes`` (MCAP only) and ``damage`` (why reading stopped, if it did).
    """
    path = Path(path)
    if not path.is_dir():
        raise BagError(f"{path}: not a rosbag2 directory" if path.exists() else f"{path}: no such bag")
    mcaps = sorted(path.glob("*.mcap"))
    dbs = sorted(path.glob("*.db3"))
    if len(mcaps) + len(dbs) != 1:
        found = ", ".join(p.name for p in mcaps + dbs) or "none"
        raise BagError(f"{path}: expected one .mcap or .db3 file, found {found}")
    report = _repair_sqlite3(path, dbs[0]) if dbs else _repair_mcap(path, mcaps[0])
    report["path"] = str(path)
    return report


def _repair_sqlite3(path: Path, db: Path) -> dict:
    try:
        conn = sqlite3.connect(db)  # read-write: a hot journal left by a killed writer is rolled back
        try:
            topics = conn.execute("SELECT id, name, type, serialization_format, offered_qos_profiles, "
                                  "type_description_hash FROM topics ORDER BY id").fetchall()
            counts = dict(conn.execute("SELECT topic_id, COUNT(*) FROM messages GROUP BY topic_id").fetchall())
            start, end = conn.execute("SELECT MIN(timestamp), MAX(timestamp) FROM messages").fetchone()
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "metadata" in tables and not conn.execute("SELECT COUNT(*) FROM metadata").fetchone()[0]:
                conn.execute("INSERT INTO metadata(metadata_version, metadata) VALUES(?, ?)", (8, ""))
                conn.commit()
        finally:
            conn.close()
    except sqlite3.OperationalError as err:
        hint = " (is a recorder still writing it?)" if "locked" in str(err) else ""
        raise BagError(f"{db}: cannot repair: {err}{hint}") from err
    except sqlite3.DatabaseError as err:
        raise BagError(f"{db}: unreadable database: {err}") from err
    total = sum(counts.values())
    start, end = (start or 0), (end or 0)
    records = [{"topic_metadata": {"name": name, "type": msgtype, "serialization_format": fmt,
                                   "offered_qos_profiles": qos, "type_description_hash": digest},
                "message_count": int(counts.get(tid, 0))} for tid, name, msgtype, fmt, qos, digest in topics]
    _write_metadata(path, "sqlite3", db.name, start, end, total, records)
    return {"storage": "sqlite3", "action": "regenerated metadata.yaml from the database",
            "messages": {r["topic_metadata"]["name"]: r["message_count"] for r in records}, "message_count": total,
            "discarded_bytes": 0, "damage": ""}


def _write_metadata(path: Path, storage: str, file_name: str, start: int, end: int, total: int,
                    records: list[dict]) -> None:
    """metadata.yaml of a single-file bag, version 8 (as rosbags' writer produces it)."""
    import yaml

    duration = max(0, end - start)
    info = {"rosbag2_bagfile_information": {
        "version": 8, "storage_identifier": storage, "relative_file_paths": [file_name],
        "duration": {"nanoseconds": duration}, "starting_time": {"nanoseconds_since_epoch": start},
        "message_count": total, "topics_with_message_count": records, "compression_format": "",
        "compression_mode": "", "files": [{"path": file_name, "starting_time": {"nanoseconds_since_epoch": start},
                                           "duration": {"nanoseconds": duration}, "message_count": total}],
        "custom_data": None, "ros_distro": "rosbags"}}
    tmp = path / ".metadata.yaml.tmp"
    tmp.write_text(yaml.safe_dump(info, sort_keys=False))
    os.replace(tmp, path / "metadata.yaml")


def _repair_mcap(path: Path, mcap: Path) -> dict:
    data = mcap.read_bytes()
    found = _scan_mcap(data)
    if found.complete and (path / "metadata.yaml").is_file():
        counts: dict[str, int] = {}
        for _, channel, _ in found.messages:
            topic = found.channels[channel][1]
            counts[topic] = counts.get(topic, 0) + 1
        return {"storage": "mcap", "action": "none (bag is complete)", "messages": counts,
                "message_count": len(found.messages), "discarded_bytes": 0, "damage": ""}
    counts = _rewrite_mcap(path, mcap, found)
    return {"storage": "mcap", "action": f"rewrote {mcap.name} from its readable records", "messages": counts,
            "message_count": sum(counts.values()), "discarded_bytes": len(data) - found.good_bytes,
            "damage": found.damage}


def _scan_mcap(data: bytes) -> _Recovered:
    """Schemas, channels and messages of an MCAP file, read in order up to the first damaged record."""
    found = _Recovered()
    if data[:8] != _MCAP_MAGIC:
        found.damage = "not an MCAP file (bad magic)"
        return found
    pos = 8
    while pos < len(data):
        if pos + 9 > len(data):
            found.damage = f"truncated record header at byte {pos}"
            break
        op = data[pos]
        (size,) = struct.unpack_from("<Q", data, pos + 1)
        end = pos + 9 + size
        if end > len(data):
            found.damage = f"record 0x{op:02x} at byte {pos} is cut off ({size} bytes announced)"
            break
        body = memoryview(data)[pos + 9:end]
        try:
            if op == 0x06:
                _read_chunk(body, found)
            elif op in (0x03, 0x04, 0x05):
                _read_record(op, body, found)
            elif op == 0x0F:  # data end: the summary follows
                found.complete = True
                found.good_bytes = end
                break
        except (struct.error, ValueError, UnicodeDecodeError) as err:
            found.damage = f"record 0x{op:02x} at byte {pos} is damaged ({err})"
            break
        pos = end
        found.good_bytes = end
    return found


def _read_chunk(body: memoryview, found: _Recovered) -> None:
    _, _, uncompressed_size, crc = struct.unpack_from("<QQQI", body, 0)
    pos = 28
    compression, pos = _string(body, pos)
    (size,) = struct.unpack_from("<Q", body, pos)
    pos += 8
    records = bytes(body[pos:pos + size])
    if len(records) != size:
        raise ValueError("chunk shorter than announced")
    if compression == "zstd":
        from rosbags.rosbag2.storage_mcap import decompress

        records = decompress(records, compression, uncompressed_size, crc)
    elif compression:
        raise ValueError(f"unsupported chunk compression {compression}")
    if crc and zlib.crc32(records) != crc:
        raise ValueError("chunk CRC mismatch")
    staged = _Recovered(dict(found.schemas), dict(found.channels))
    view = memoryview(records)
    pos = 0
    while pos < len(records):
        op = records[pos]
        (size,) = struct.unpack_from("<Q", records, pos + 1)
        if pos + 9 + size > len(records):
            raise ValueError("record runs past the end of its chunk")
        _read_record(op, view[pos + 9:pos + 9 + size], staged)
        pos += 9 + size
    found.schemas, found.channels = staged.schemas, staged.channels
    found.messages.extend(staged.messages)


def _read_record(op: int, body: memoryview, found: _Recovered) -> None:
    if op == 0x03:
        (key,) = struct.unpack_from("<H", body, 0)
        name, pos = _string(body, 2)
        encoding, pos = _string(body, pos)
        text, _ = _string(body, pos)
        found.schemas[key] = (name, encoding, text)
    elif op == 0x04:
        key, schema = struct.unpack_from("<HH", body, 0)
        topic, pos = _string(body, 4)
        encoding, pos = _string(body, pos)
        (size,) = struct.unpack_from("<I", body, pos)
        found.channels[key] = (schema, topic, encoding, bytes(body[pos:pos + 4 + size]))
    elif op == 0x05:
        channel, _, log_time, _ = struct.unpack_from("<HIQQ", body, 0)
        if channel not in found.channels:
            raise ValueError(f"message on unknown channel {channel}")
        found.messages.append((log_time, channel, bytes(body[22:])))


def _string(body: memoryview, pos: int) -> tuple[str, int]:
    (size,) = struct.unpack_from("<I", body, pos)
    end = pos + 4 + size
    if end > len(body):
        raise ValueError("string runs past the end of its record")
    return bytes(body[pos + 4:end]).decode(), end


def _rewrite_mcap(path: Path, mcap: Path, found: _Recovered) -> dict[str, int]:
    """Write the recovered records as a complete bag in place of the damaged file."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.rosbag2.storage_mcap import get_qos
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    counts: dict[str, int] = {}
    workdir = Path(tempfile.mkdtemp(prefix=f".{path.name}.repair.", dir=path.parent))
    try:
        with Writer(workdir / path.name, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
            connections = {}
            for key, (schema_id, topic, encoding, metadata) in sorted(found.channels.items()):
                msgtype, schema_encoding, text = found.schemas.get(schema_id, ("", "", ""))
                if not msgtype or schema_encoding != "ros2msg":
                    continue
                typestore = get_typestore(Stores.EMPTY)
                typestore.register(get_types_from_msg(text, msgtype))
                try:
                    qos = get_qos(metadata[4:])
                except Exception:  # noqa: BLE001 - QoS is informative only
                    qos = []
                connections[key] = writer.add_connection(topic, msgtype, msgdef=text,
                                                         rihs01=typestore.hash_rihs01(msgtype),
                                                         serialization_format=encoding, offered_qos_profiles=qos)
                counts[topic] = 0
            for log_time, channel, payload in sorted(found.messages, key=lambda m: m[0]):
                connection = connections.get(channel)
                if connection is not None:
                    writer.write(connection, log_time, payload)
                    counts[connection.topic] += 1
        new_dir = workdir / path.name
        new_file = new_dir / f"{path.name}.mcap"
        os.replace(new_file, path / new_file.name)
        if mcap.name != new_file.name:
            mcap.unlink()
        os.replace(new_dir / "metadata.yaml", path / "metadata.yaml")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return counts
