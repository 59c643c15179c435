"""Joint states of a long bag, read in chunks: the series' stamps first, its values on demand.

:func:`read_joint_states` holds a whole topic (a one-hour 1 kHz recording of a 7-DOF arm: 3.6 M messages, GBs).
Streamed identification needs less: :func:`scan_joint_states` reads the bag once, a chunk of messages at a time,
and keeps only each message's stamps and whether its values are finite; the merge rules of
:func:`~dynid_ros.data.joint_state_merge.merge_by_name` (clock, non-finite and repeated samples dropped, stamps
going backwards an error) run on those, with the message index as the one value, so the scan yields exactly the
stamps ``read_joint_states`` gives and which message each sample is. :class:`BagRows` then reads the bag again and
serves the samples' values in order, a range of rows at a time (each range starting at or after the previous
one), prepared on the way: the identified joints, continuous joints unwrapped (the unwrapping carried across
chunks) and the effort scaled.

A topic whose messages carry different sets of joints (several publishers, e.g. an arm and a gripper driver) is
merged by interpolation across sources: :func:`scan_joint_states` returns None and the caller reads it whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dynid_ros.data.bag_io import decode_messages, iter_topic_chunks
from dynid_ros.data.joint_state_merge import FIELDS, describe_source, kept_samples, single_clock
from dynid_ros.errors import BagError, DataError

CHUNK_MESSAGES = 10_000
"""Messages read and decoded at a time (about 4 MB of a 7-joint JointState topic)."""


@dataclass
class BagScan:
    """The stamps of the samples of a single-publisher JointState topic and which message each one is.

    Attributes:
        path, topic: the bag and topic.
        names: the joints of every message.
        t: sample times [s] (as ``read_joint_states(...).t``).
        message: index (among the topic's messages) of each sample.
        fields: position, velocity, effort: whether the messages carry it.
        info: as ``read_joint_states(...).info``.
    """

    path: Path
    topic: str
    names: list[str]
    t: np.ndarray
    message: np.ndarray
    fields: tuple[bool, bool, bool]
    info: dict = field(default_factory=dict)
    chunk_messages: int = CHUNK_MESSAGES

    def window_rows(self, start: float | None, end: float | None) -> tuple[int, int]:
        """The rows ``[a, b)`` with ``start <= t - t[0] <= end`` (as ``JointStateSeries.window``)."""
        rel = self.t - self.t[0]
        a = 0 if start is None else int(np.searchsorted(rel, start, side="left"))
        b = self.t.size if end is None else int(np.searchsorted(rel, end, side="right"))
        return a, max(a, b)

    def rows(self, joints: list[str], unwrap: np.ndarray | None = None,
             effort_scale: np.ndarray | None = None) -> BagRows:
        """A reader of the samples' values of ``joints`` (:class:`BagRows`)."""
        missing = [j for j in joints if j not in self.names]
        if missing:
            raise DataError(f"joint(s) {', '.join(missing)} of the model are not in the joint states")
        return BagRows(self, [self.names.index(j) for j in joints], unwrap, effort_scale)

    def held_positions(self, joints: list[str], start: float | None, end: float | None) -> dict[str, float]:
        """The median position of ``joints`` over the window (``held_positions`` of the window's series)."""
        if not joints:
            return {}
        a, b = self.window_rows(start, end)
        values = self.rows(joints).get(a, b)[0]
        out = {}
        for j, name in enumerate(joints):
            finite = values[:, j][np.isfinite(values[:, j])]
            if finite.size:
                out[name] = float(np.median(finite))
        return out


def scan_joint_states(path: str | Path, topic: str = "/joint_states", require: tuple[str, ...] = ("effort",),
                      chunk_messages: int | None = None) -> BagScan | None:
    """The stamps of the samples of ``topic`` (module docstring); None when its messages carry different sets of
    joints (several publishers: read it with ``read_joint_states``). Errors as ``read_joint_states``.
    ``chunk_messages``: messages read at a time (default ``CHUNK_MESSAGES``)."""
    path = Path(path)
    chunk_messages = chunk_messages or CHUNK_MESSAGES
    where = f"{path}: topic {topic}"
    names: list[str] | None = None
    header, receive, finite = [], [], []
    fields: list[bool] | None = None
    count = fast = 0
    for receive_ns, raws in iter_topic_chunks(path, topic, chunk_messages):
        decoded = decode_messages(raws, topic, first=count)
        if not decoded.carries.all() or (names is not None and set(decoded.names) != set(names)):
            return None  # several sets of joints (or a message without joints): the merge interpolates
        names = names or decoded.names  # in the order first seen, as the reader's
        fields = fields or [bool(v) for v in decoded.present[0]]
        for k, name in enumerate(FIELDS):
            if not (decoded.present[:, k] == fields[k]).all():
                # the first message without it: message 0 when it is the one lacking it
                sample = count + int(np.argmax(decoded.present[:, k] != fields[k])) if fields[k] else 0
                raise DataError(f"{where}, sample {sample}: no {name} (other messages with its joints have it)")
        header.append(decoded.stamps)
        receive.append(receive_ns)
        ok = np.ones(len(raws), dtype=bool)
        for k in range(3):
            if fields[k]:
                ok &= np.isfinite(decoded.fields[k]).all(axis=1)
        finite.append(ok)
        count += len(raws)
        fast += decoded.fast
        del decoded, raws
    if not count:
        raise DataError(f"{path}: topic {topic} has no messages")
    for k, name in enumerate(FIELDS):
        if not fields[k] and (name == "position" or name in require):
            raise BagError(f"{path}: the messages on {topic} have no {name}")
    t_ns, clock = single_clock(np.concatenate(header), np.concatenate(receive))
    del header, receive
    keep, nonfinite, repeated = kept_samples(t_ns, np.concatenate(finite), np.arange(count), names, where)
    t_ns = t_ns[keep]
    present = [f for f, on in zip(FIELDS, fields) if on]
    info = {"path": str(path), "topic": topic, "messages": count, "decoded_fast": fast,
            "sources": [describe_source(names, t_ns, clock, present)], "interpolated_joints": [],
            "dropped_nonfinite": nonfinite, "dropped_duplicate": repeated}
    message = np.flatnonzero(keep).astype(np.int32 if count < 2**31 else np.int64)  # half the memory of int64
    return BagScan(path, topic, list(names), t_ns.astype(np.float64) * 1e-9, message, tuple(fields), info,
                   chunk_messages)


class BagRows:
    """The values of some joints at the samples of a :class:`BagScan`, read in order: :meth:`get` returns the rows
    ``[a, b)``, each call with ``a`` at or after the previous one's (rows before it are forgotten)."""

    def __init__(self, scan: BagScan, columns: list[int], unwrap: np.ndarray | None,
                 effort_scale: np.ndarray | None) -> None:
        self.scan = scan
        self.columns = np.asarray(columns, dtype=int)
        self.unwrap = None if unwrap is None or not np.any(unwrap) else np.flatnonzero(unwrap)
        self.effort_scale = None if effort_scale is None else np.asarray(effort_scale, dtype=float)
        self._chunks = self._decoded()
        self._start = 0  # row of the buffer's first entry
        self._buffer: list[np.ndarray | None] = [None, None, None]
        self._last_raw: np.ndarray | None = None  # unwrapping: the last raw and unwrapped positions
        self._last_unwrapped: np.ndarray | None = None

    def _decoded(self) -> Iterator[list[np.ndarray | None]]:
        """The prepared fields of the samples, chunk of messages by chunk of messages."""
        scan = self.scan
        first = 0
        for _, raws in iter_topic_chunks(scan.path, scan.topic, scan.chunk_messages):
            decoded = decode_messages(raws, scan.topic, first=first)
            lo, hi = np.searchsorted(scan.message, [first, first + len(raws)])
            local = scan.message[lo:hi] - first
            order = [decoded.names.index(scan.names[c]) for c in self.columns]
            out = [decoded.fields[k][np.ix_(local, order)] if scan.fields[k] else None for k in range(3)]
            first += len(raws)
            yield self._prepared(out)

    def _prepared(self, values: list[np.ndarray | None]) -> list[np.ndarray | None]:
        position, velocity, effort = values
        if self.unwrap is not None and position.shape[0]:
            raw = position[:, self.unwrap].copy()
            if self._last_raw is None:
                unwrapped = np.unwrap(raw, axis=0)
            else:  # continue from the previous chunk: np.unwrap of the joined series
                joined = np.unwrap(np.vstack([self._last_raw, raw]), axis=0)
                unwrapped = joined[1:] - joined[0] + self._last_unwrapped
            self._last_raw, self._last_unwrapped = raw[-1:], unwrapped[-1:]
            position[:, self.unwrap] = unwrapped
        if effort is not None and self.effort_scale is not None:
            effort = effort * self.effort_scale
        return [position, velocity, effort]

    def get(self, a: int, b: int) -> list[np.ndarray | None]:
        """Position, velocity, effort (None where not recorded) of rows ``[a, b)``."""
        if a < self._start:
            raise ValueError(f"rows {a}..{b}: already past row {self._start}")  # a caller's error, not the data's
        self._forget(a)
        while self._end() < b:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._buffer = [c if old is None else np.vstack([old, c]) if c is not None else None
                            for old, c in zip(self._buffer, chunk)]
            self._forget(a)
        return [None if v is None else v[:b - a] for v in self._buffer]

    def _forget(self, a: int) -> None:
        """Drop the buffered rows before row ``a``."""
        drop = min(a, self._end()) - self._start
        if drop > 0:
            self._buffer = [None if v is None else v[drop:] for v in self._buffer]
            self._start += drop

    def _end(self) -> int:
        return self._start + (0 if self._buffer[0] is None else self._buffer[0].shape[0])
