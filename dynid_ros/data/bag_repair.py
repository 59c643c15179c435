"""Repair of a bag whose recorder died (the analogue of ``ros2 bag reindex``), never touching the input.

``repair_bag`` writes a *new* bag beside the damaged one (default ``<bag>_repaired``) and reports what it
recovered: messages per topic, and what it skipped and why. The input is only read:

- **sqlite3**: the database (with the journal a killed writer leaves) is copied; the copy is opened
  read-write, which rolls back the interrupted transaction, and ``metadata.yaml`` is written from it.
- **MCAP**: the ``mcap`` library reads the records in order (uncompressed, lz4 or zstd chunks). A chunk
  whose CRC or compression is damaged is skipped (one line in ``skipped``) and reading goes on; a record
  cut off (the file ends mid-record) ends the reading (``damage``). Channels whose schema is not
  ``ros2msg`` (e.g. a foxglove protobuf channel) are reported in ``skipped``, not silently dropped.
  rosbags' writer writes the recovered messages, in log-time order, as a standard rosbag2 (version 8).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from dynid_ros.errors import BagError

REPAIRED_SUFFIX = "_repaired"
"""Default name of the repaired bag: the input's name with this suffix, in the same directory."""


@dataclass
class _Recovered:
    """What an MCAP file holds up to its first unreadable record."""

    schemas: dict[int, object] = field(default_factory=dict)  # id -> mcap Schema
    channels: dict[int, object] = field(default_factory=dict)  # id -> mcap Channel
    messages: list[tuple[int, int, bytes]] = field(default_factory=list)  # log time, channel id, data
    skipped: list[dict] = field(default_factory=list)
    complete: bool = False
    good_bytes: int = 0
    damage: str = ""


def repair_bag(path: str | Path, out: str | Path | None = None) -> dict:
    """Write the readable messages of the bag directory ``path`` to the new bag ``out`` (module docstring).

    Returns ``path``, ``out`` (None when the bag is complete: nothing written), ``storage``, ``action``,
    ``messages`` ({topic: count}), ``message_count``, ``skipped`` (list of ``{what, messages, reason}``),
    ``discarded_bytes`` (MCAP: bytes after the last readable record) and ``damage`` (why reading stopped).
    """
    path = Path(path)
    if not path.is_dir():
        raise BagError(f"{path}: not a rosbag2 directory" if path.exists() else f"{path}: no such bag")
    mcaps, dbs = sorted(path.glob("*.mcap")), sorted(path.glob("*.db3"))
    if len(mcaps) + len(dbs) != 1:
        found = ", ".join(p.name for p in mcaps + dbs) or "none"
        raise BagError(f"{path}: expected one .mcap or .db3 file, found {found}")
    out = Path(out) if out is not None else path.with_name(path.name + REPAIRED_SUFFIX)
    if out.resolve() == path.resolve() or path.resolve() in out.resolve().parents:
        raise BagError(f"{out}: the repaired bag must not be the damaged bag or inside it")
    report = _repair_sqlite3(path, dbs[0], out) if dbs else _repair_mcap(path, mcaps[0], out)
    return {"path": str(path), **report}


def _check_new(out: Path) -> None:
    if out.exists():
        raise BagError(f"{out} exists already (give another --out; nothing is overwritten)")


def _written(out: Path, fill) -> None:
    """Create the bag directory ``out`` with what ``fill(tmp_dir)`` writes there, all or nothing."""
    _check_new(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        fill(workdir / out.name)
        _check_new(out)
        os.replace(workdir / out.name, out)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# ----------------------------------------------------------------------------------------------
# sqlite3


def _repair_sqlite3(path: Path, db: Path, out: Path) -> dict:
    found: dict = {}
    companions = [db.with_name(db.name + s) for s in ("-journal", "-wal")]
    if (path / "metadata.yaml").is_file() and not any(c.exists() for c in companions):
        found = _read_sqlite3(db, read_only=True)
        return {"storage": "sqlite3", "out": None, "action": "none (the bag is complete)",
                "messages": {r["topic_metadata"]["name"]: r["message_count"] for r in found["records"]},
                "message_count": found["total"], "skipped": [], "discarded_bytes": 0, "damage": ""}

    def fill(new: Path) -> None:
        new.mkdir()
        for companion in (db, *(db.with_name(db.name + s) for s in ("-journal", "-wal", "-shm"))):
            if companion.exists():
                shutil.copy2(companion, new / companion.name)
        found.update(_read_sqlite3(new / db.name))
        _write_metadata(new, "sqlite3", db.name, found["start"], found["end"], found["total"], found["records"])

    _written(out, fill)
    return {"storage": "sqlite3", "out": str(out), "action": f"copied {db.name} (its interrupted transaction "
            "rolled back) and wrote metadata.yaml",
            "messages": {r["topic_metadata"]["name"]: r["message_count"] for r in found["records"]},
            "message_count": found["total"], "skipped": [], "discarded_bytes": 0, "damage": ""}


def _read_sqlite3(db: Path, read_only: bool = False) -> dict:
    """Topics, counts and time span of a rosbag2 database (opened read-write unless ``read_only``: a hot journal
    is rolled back)."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True) if read_only else sqlite3.connect(db)
        try:
            topics = conn.execute("SELECT id, name, type, serialization_format, offered_qos_profiles, "
                                  "type_description_hash FROM topics ORDER BY id").fetchall()
            counts = dict(conn.execute("SELECT topic_id, COUNT(*) FROM messages GROUP BY topic_id").fetchall())
            start, end = conn.execute("SELECT MIN(timestamp), MAX(timestamp) FROM messages").fetchone()
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            empty = "metadata" in tables and not conn.execute("SELECT COUNT(*) FROM metadata").fetchone()[0]
            if empty and not read_only:
                conn.execute("INSERT INTO metadata(metadata_version, metadata) VALUES(?, ?)", (8, ""))
                conn.commit()
        finally:
            conn.close()
    except sqlite3.OperationalError as err:
        hint = " (is a recorder still writing it?)" if "locked" in str(err) else ""
        raise BagError(f"{db.name}: cannot repair: {err}{hint}") from err
    except sqlite3.DatabaseError as err:
        raise BagError(f"{db.name}: unreadable database: {err}") from err
    records = [{"topic_metadata": {"name": name, "type": msgtype, "serialization_format": fmt,
                                   "offered_qos_profiles": qos, "type_description_hash": digest},
                "message_count": int(counts.get(tid, 0))} for tid, name, msgtype, fmt, qos, digest in topics]
    return {"records": records, "total": sum(counts.values()), "start": start or 0, "end": end or 0}


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
    (path / "metadata.yaml").write_text(yaml.safe_dump(info, sort_keys=False))


# ----------------------------------------------------------------------------------------------
# MCAP


def _repair_mcap(path: Path, mcap_file: Path, out: Path) -> dict:
    found = _scan_mcap(mcap_file)
    size = mcap_file.stat().st_size
    if found.complete and not found.skipped and (path / "metadata.yaml").is_file():
        counts = _counts(found)
        return {"storage": "mcap", "out": None, "action": "none (the bag is complete)", "messages": counts,
                "message_count": sum(counts.values()), "skipped": [], "discarded_bytes": 0, "damage": ""}
    counts: dict[str, int] = {}
    _written(out, lambda new: counts.update(_write_mcap(new, found)))
    return {"storage": "mcap", "out": str(out), "action": f"wrote the readable messages of {mcap_file.name} to "
            f"a new bag", "messages": counts, "message_count": sum(counts.values()), "skipped": found.skipped,
            "discarded_bytes": size - found.good_bytes, "damage": found.damage}


def _scan_mcap(mcap_file: Path) -> _Recovered:
    """Schemas, channels and messages, in file order, read by the ``mcap`` library (module docstring)."""
    from mcap.exceptions import McapError
    from mcap.records import Channel, Chunk, DataEnd, Message, Schema
    from mcap.stream_reader import StreamReader, breakup_chunk

    found = _Recovered()
    chunk_errors = _chunk_errors()
    with open(mcap_file, "rb") as stream:
        reader = StreamReader(stream, emit_chunks=True)
        records = reader.records
        while True:
            try:
                record = next(records)
            except StopIteration:
                break
            except (McapError, struct.error, ValueError, EOFError, MemoryError) as err:
                found.damage = f"unreadable record after byte {found.good_bytes} ({_one_line(err)})"
                break
            found.good_bytes = stream.tell()
            if isinstance(record, Chunk):
                try:
                    inner = breakup_chunk(record, validate_crc=True)
                except chunk_errors as err:
                    found.skipped.append({"what": f"chunk of log times {record.message_start_time}.."
                                                  f"{record.message_end_time} ns ({record.compression or 'none'})",
                                          "messages": None, "reason": _one_line(err)})
                    continue
            else:
                inner = [record]
            for item in inner:
                if isinstance(item, Schema):
                    found.schemas[item.id] = item
                elif isinstance(item, Channel):
                    found.channels[item.id] = item
                elif isinstance(item, Message):
                    found.messages.append((item.log_time, item.channel_id, item.data))
            if isinstance(record, DataEnd):
                found.complete = True
                break
    return found


def _chunk_errors() -> tuple[type[BaseException], ...]:
    """What decompressing or checking a damaged chunk raises (zstandard's own error class included)."""
    from mcap.exceptions import McapError

    errors: tuple[type[BaseException], ...] = (McapError, ValueError, RuntimeError, struct.error, EOFError)
    try:
        import zstandard

        errors += (zstandard.ZstdError,)
    except ImportError:
        pass
    return errors


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _counts(found: _Recovered) -> dict[str, int]:
    counts: dict[str, int] = {}
    for _, channel, _ in found.messages:
        topic = found.channels[channel].topic if channel in found.channels else f"<channel {channel}>"
        counts[topic] = counts.get(topic, 0) + 1
    return counts


def _write_mcap(new: Path, found: _Recovered) -> dict[str, int]:
    """The recovered ros2msg channels and their messages as a rosbag2 (MCAP, version 8); the rest in ``skipped``."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.rosbag2.metadata import parse_qos
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    per_channel: dict[int, int] = {}
    for _, channel, _ in found.messages:
        per_channel[channel] = per_channel.get(channel, 0) + 1
    counts: dict[str, int] = {}
    with Writer(new, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        connections = {}
        for key, channel in sorted(found.channels.items()):
            schema = found.schemas.get(channel.schema_id)
            reason = _unwritable(channel, schema)
            if reason:
                found.skipped.append({"what": f"topic {channel.topic}", "messages": per_channel.get(key, 0),
                                      "reason": reason})
                continue
            typestore = get_typestore(Stores.EMPTY)
            text = schema.data.decode()
            typestore.register(get_types_from_msg(text, schema.name))
            connections[key] = writer.add_connection(
                channel.topic, schema.name, msgdef=text, rihs01=typestore.hash_rihs01(schema.name),
                serialization_format=channel.message_encoding, offered_qos_profiles=_qos(channel, parse_qos))
            counts[channel.topic] = 0
        orphans = sum(n for key, n in per_channel.items() if key not in found.channels)
        if orphans:
            found.skipped.append({"what": "messages of channels never declared", "messages": orphans,
                                  "reason": "their channel record is in a damaged part of the file"})
        for log_time, key, data in sorted(found.messages, key=lambda m: m[0]):
            connection = connections.get(key)
            if connection is not None:
                writer.write(connection, log_time, data)
                counts[connection.topic] += 1
    return counts


def _qos(channel: object, parse_qos) -> list:
    """The channel's offered QoS profiles (informative only: unparsable ones are left out)."""
    import yaml

    try:
        return parse_qos(channel.metadata.get("offered_qos_profiles", ""))
    except (yaml.YAMLError, ValueError, KeyError, TypeError, AttributeError):
        return []


def _unwritable(channel: object, schema: object | None) -> str:
    """Why a channel cannot go into a rosbag2, or "" when it can."""
    if schema is None:
        return f"schema {channel.schema_id} missing (in a damaged part of the file)"
    if schema.encoding != "ros2msg":
        return f"schema encoding {schema.encoding or 'none'!r} (message {schema.name}), not ros2msg"
    if channel.message_encoding != "cdr":
        return f"message encoding {channel.message_encoding!r}, not cdr"
    return ""
