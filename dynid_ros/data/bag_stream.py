"""Joint states of a long bag, read in chunks: the series' stamps first, its values on demand.

:func:`read_joint_states` holds a whole topic (a one-hour 1 kHz recording of a 7-DOF arm: 3.6 M messages, GBs).
Streamed identification needs less: :func:`scan_joint_states` reads the bag once, a chunk of messages at a time,
and keeps only each message's stamps and whether its values are finite; the merge rules of
:func:`~dynid_ros.data.joint_state_merge.merge_by_name` (clock, non-finite and repeated samples dropped, stamps
going backwards an error) run on those, with the message index as the one value, so the scan yields exactly the
stamps ``read_joint_states`` gives and which message each sample is. :class:`BagRows` then serves the samples'
values in order (from the scan's decoded chunks when they fit in ``HOLD_BYTES``, else reading the bag again), a
range of rows at a time (each range starting at or after the previous one), prepared on the way: the identified
joints, continuous joints unwrapped (the unwrapping carried across chunks), the recorded effort checked (e.g.
``--abs-effort``: no negative value) and scaled (``--effort-scale``, ``--effort-scale-file``).

A topic with several publishers (e.g. an arm and a gripper driver, each its own set of joints, stamps and clock) is
merged as ``merge_by_name`` does: the samples are at the stamps of the source with the most messages, whose values
are streamed; the joints of the other sources are interpolated from their messages, which :class:`BagRows` reads
in one more pass and holds (a gripper at 50 Hz is small beside an arm at 1 kHz).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dynid_ros.data.bag_io import decode_messages, iter_topic_chunks
from dynid_ros.data.joint_state_merge import FIELDS, describe_source, kept_samples
from dynid_ros.errors import BagError, DataError

CHUNK_MESSAGES = 10_000
"""Messages read and decoded at a time (about 4 MB of a 7-joint JointState topic)."""
HOLD_BYTES = 64 * 2**20
"""The scan keeps the decoded values while they take at most this much (a 7-joint topic at 1 kHz: about 6 minutes),
so that a short bag is read once, not twice (reading, not processing, is most of a short bag's cost); a longer bag
is read again, and its memory stays bounded."""
EffortCheck = Callable[[np.ndarray, int], None]
"""``check(effort, first)``: raises a DataError for bad recorded effort (rows of samples ``first, first + 1, ...``,
before scaling); called once on every sample read."""


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
    joint_fields: dict[str, tuple[bool, bool, bool]] = field(default_factory=dict)
    """Per joint: whether its position, velocity, effort is recorded (by its source, or interpolated from one)."""
    primary: list[str] = field(default_factory=list)
    """The joints of the source that gives the stamps."""
    secondary: list[Secondary] = field(default_factory=list)
    """The other sources, whose joints are interpolated onto the stamps."""
    t_ns: np.ndarray | None = None
    """The samples' stamps [ns] when there are other sources (the interpolation runs on them)."""
    held: list | None = None
    """The decoded message chunks, in order, when the whole topic fit in ``HOLD_BYTES`` (else None: read again)."""

    def window_rows(self, start: float | None, end: float | None) -> tuple[int, int]:
        """The rows ``[a, b)`` with ``start <= t - t[0] <= end`` (as ``JointStateSeries.window``)."""
        rel = self.t - self.t[0]
        a = 0 if start is None else int(np.searchsorted(rel, start, side="left"))
        b = self.t.size if end is None else int(np.searchsorted(rel, end, side="right"))
        return a, max(a, b)

    def rows(self, joints: list[str], unwrap: np.ndarray | None = None,
             effort_scale: np.ndarray | None = None, effort_check: EffortCheck | None = None) -> BagRows:
        """A reader of the samples' values of ``joints`` (:class:`BagRows`)."""
        missing = [j for j in joints if j not in self.names]
        if missing:
            raise DataError(f"joint(s) {', '.join(missing)} of the model are not in the joint states")
        return BagRows(self, [self.names.index(j) for j in joints], unwrap, effort_scale, effort_check)

    def check_fields(self, joints: list[str]) -> bool:
        """DataError for a joint of ``joints`` without position or effort (``complete_fields``); whether every one
        has a velocity."""
        for k, name in ((0, "position"), (2, "effort")):
            absent = [j for j in joints if not self.joint_fields[j][k]]
            if absent:
                raise DataError(f"the joint states: no {name} for joint(s) {', '.join(absent)} (their publisher "
                                "sends none)")
        return all(self.joint_fields[j][1] for j in joints)

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


@dataclass
class _Source:
    """The messages of one set of joints (one publisher) seen by the scan."""

    names: list[str]
    header: list[np.ndarray] = field(default_factory=list)
    receive: list[np.ndarray] = field(default_factory=list)
    finite: list[np.ndarray] = field(default_factory=list)
    index: list[np.ndarray] = field(default_factory=list)
    has: list[bool] = field(default_factory=lambda: [False, False, False])
    missing: list[int | None] = field(default_factory=lambda: [None, None, None])


@dataclass
class Secondary:
    """A source other than the one giving the stamps: its joints, fields, kept messages and their times [ns]."""

    names: list[str]
    fields: tuple[bool, bool, bool]
    message: np.ndarray
    t_ns: np.ndarray


def scan_joint_states(path: str | Path, topic: str = "/joint_states", require: tuple[str, ...] = ("effort",),
                      chunk_messages: int | None = None) -> BagScan:
    """The stamps of the samples of ``topic`` (module docstring). Errors as ``read_joint_states``.
    ``chunk_messages``: messages read at a time (default ``CHUNK_MESSAGES``)."""
    path = Path(path)
    chunk_messages = chunk_messages or CHUNK_MESSAGES
    where = f"{path}: topic {topic}"
    names: list[str] = []
    sources: dict[frozenset, _Source] = {}
    count = fast = held_bytes = 0
    held: list | None = []
    for receive_ns, raws in iter_topic_chunks(path, topic, chunk_messages):
        decoded = decode_messages(raws, topic, first=count)
        if held is not None:
            held_bytes += sum(f.nbytes for f in decoded.fields)
            if held_bytes <= HOLD_BYTES:
                held.append(decoded)
            else:
                held = None
        names += [n for n in decoded.names if n not in names]  # the order first seen, as the reader's
        patterns, first, inverse = np.unique(decoded.carries, axis=0, return_index=True, return_inverse=True)
        for g in np.argsort(first).tolist():
            rows = np.flatnonzero(inverse.reshape(-1) == g)
            cols = np.flatnonzero(patterns[g])
            if cols.size:  # messages without joints carry nothing
                key = frozenset(decoded.names[c] for c in cols)
                source = sources.setdefault(key, _Source([n for n in names if n in key]))
                _add(source, decoded, receive_ns, rows, cols, count)
        count += len(raws)
        fast += decoded.fast
        del decoded, raws
    if not count:
        raise DataError(f"{path}: topic {topic} has no messages")
    if not sources:
        raise DataError(f"{where}: no message names any joint")
    scan = _merged(path, topic, where, require, names, list(sources.values()), count, fast, chunk_messages)
    scan.held = held
    return scan


def decoded_chunks(scan: BagScan) -> Iterator:
    """The topic's messages decoded, chunk by chunk in order (each with its ``first`` message index): the scan's
    held chunks, or the bag read again."""
    if scan.held is not None:
        yield from scan.held
        return
    first = 0
    for _, raws in iter_topic_chunks(scan.path, scan.topic, scan.chunk_messages):
        yield decode_messages(raws, scan.topic, first=first)
        first += len(raws)


def _add(source: _Source, decoded, receive_ns: np.ndarray, rows: np.ndarray, cols: np.ndarray, count: int) -> None:
    """Messages ``rows`` of a chunk (carrying the joints ``cols``) added to their source."""
    present = decoded.present[rows]
    ok = np.ones(rows.size, dtype=bool)
    for k in range(3):
        source.has[k] |= bool(present[:, k].any())
        if source.missing[k] is None and not present[:, k].all():
            source.missing[k] = count + int(rows[np.argmin(present[:, k])])
        ok &= ~present[:, k] | np.isfinite(decoded.fields[k][np.ix_(rows, cols)]).all(axis=1)
    source.header.append(decoded.stamps[rows])
    source.receive.append(receive_ns[rows])
    source.finite.append(ok)
    source.index.append((count + rows).astype(np.int64))


def _merged(path: Path, topic: str, where: str, require: tuple[str, ...], names: list[str],
            sources: list[_Source], count: int, fast: int, chunk_messages: int) -> BagScan:
    """The merge rules of :func:`~dynid_ros.data.joint_state_merge.merge_by_name` on the stamps of the sources."""
    for source in sources:
        for k, name in enumerate(FIELDS):
            if source.has[k] and source.missing[k] is not None:
                raise DataError(f"{where}, sample {source.missing[k]}: no {name} (other messages with its joints have "
                                "it)")
    header = [np.concatenate(s.header) for s in sources]
    receive = [np.concatenate(s.receive) for s in sources]
    stamped = [i for i, h in enumerate(header) if h.size and (h != 0).all()]
    delay = int(np.median(np.concatenate([receive[i] - header[i] for i in stamped]))) if stamped else 0
    timed = []
    nonfinite = repeated = 0
    for i, source in enumerate(sources):
        if i in stamped:
            t_ns, clock = header[i], "header"
        else:
            clock = ("receive" + (" (some header stamps 0)" if (header[i] != 0).any() else "")
                     + (" - median delay" if stamped else ""))
            t_ns = receive[i] - delay
        index = np.concatenate(source.index)
        keep, dropped, again = kept_samples(t_ns, np.concatenate(source.finite), index, source.names, where)
        nonfinite, repeated = nonfinite + dropped, repeated + again
        timed.append((source, t_ns[keep], clock, index[keep]))
    del header, receive
    primary = max(range(len(timed)), key=lambda i: timed[i][1].size)
    first, t_ns, _, message = timed[primary]
    merged = list(first.names) + [n for s in sources for n in s.names if n not in first.names]
    merged = list(dict.fromkeys(merged))
    joint_fields = {n: tuple(any(s.has[k] for s, *_ in timed if n in s.names) if n not in first.names
                             else first.has[k] for k in range(3)) for n in merged}
    for k, name in enumerate(FIELDS):
        if not any(f[k] for f in joint_fields.values()) and (name == "position" or name in require):
            raise BagError(f"{path}: the messages on {topic} have no {name}")
    info = {"path": str(path), "topic": topic, "messages": count, "decoded_fast": fast,
            "sources": [describe_source(s.names, t, clock, [f for f, on in zip(FIELDS, s.has) if on])
                        for s, t, clock, _ in timed],
            "interpolated_joints": [n for n in merged if n not in first.names],
            "dropped_nonfinite": nonfinite, "dropped_duplicate": repeated}
    secondary = [Secondary(s.names, tuple(s.has), m, t) for i, (s, t, _, m) in enumerate(timed) if i != primary]
    small = np.int32 if count < 2**31 else np.int64  # half the memory of int64
    return BagScan(path, topic, merged, t_ns.astype(np.float64) * 1e-9, message.astype(small),
                   tuple(first.has), info, chunk_messages, joint_fields, list(first.names), secondary,
                   t_ns if secondary else None)


class BagRows:
    """The values of some joints at the samples of a :class:`BagScan`, read in order: :meth:`get` returns the rows
    ``[a, b)``, each call with ``a`` at or after the previous one's (rows before it are forgotten)."""

    def __init__(self, scan: BagScan, columns: list[int], unwrap: np.ndarray | None,
                 effort_scale: np.ndarray | None, effort_check: EffortCheck | None = None) -> None:
        self.scan = scan
        self.effort_check = effort_check
        self.joints = [scan.names[c] for c in columns]
        self.unwrap = None if unwrap is None or not np.any(unwrap) else np.flatnonzero(unwrap)
        self.effort_scale = None if effort_scale is None else np.asarray(effort_scale, dtype=float)
        self._tables = self._interpolation_tables([j for j in self.joints if j not in scan.primary])
        self._chunks = self._decoded()
        self._start = 0  # row of the buffer's first entry
        self._buffer: list[np.ndarray | None] = [None, None, None]
        self._last_raw: np.ndarray | None = None  # unwrapping: the last raw and unwrapped positions
        self._last_unwrapped: np.ndarray | None = None

    def _interpolation_tables(self, joints: list[str]) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
        """For each field of each joint of another source: the times [ns] and values it is interpolated from (every
        message that carries it, as ``merge_by_name``), read in one pass over the bag (these sources are held)."""
        scan = self.scan
        wanted = [[n for n in s.names if n in joints] for s in scan.secondary]
        if not joints or not any(wanted):
            return {}
        collected: dict[tuple[int, int], list[np.ndarray]] = {}
        for decoded in decoded_chunks(scan):
            first, size = decoded.first, decoded.stamps.size
            for i, (source, names) in enumerate(zip(scan.secondary, wanted)):
                lo, hi = np.searchsorted(source.message, [first, first + size])
                if names and hi > lo:
                    rows, cols = source.message[lo:hi] - first, [decoded.names.index(n) for n in names]
                    for k in range(3):
                        if source.fields[k]:
                            collected.setdefault((i, k), []).append(decoded.fields[k][np.ix_(rows, cols)])
        tables = {}
        for name in joints:
            for k in range(3):
                times, values = [], []
                for i, (source, names) in enumerate(zip(scan.secondary, wanted)):
                    if name in names and source.fields[k]:
                        times.append(source.t_ns)
                        values.append(np.concatenate(collected[(i, k)])[:, names.index(name)])
                if times:
                    t_all, order = np.unique(np.concatenate(times), return_index=True)
                    tables[(name, k)] = (t_all.astype(np.float64), np.concatenate(values)[order])
        return tables

    def _decoded(self) -> Iterator[list[np.ndarray | None]]:
        """The prepared fields of the samples, chunk of messages by chunk of messages."""
        scan = self.scan
        for decoded in decoded_chunks(scan):
            first = decoded.first
            lo, hi = np.searchsorted(scan.message, [first, first + decoded.stamps.size])
            local = scan.message[lo:hi] - first
            t_ns = None if scan.t_ns is None else scan.t_ns[lo:hi].astype(np.float64)
            out = []
            for k in range(3):
                columns = [self._column(decoded, local, t_ns, name, k) for name in self.joints]
                out.append(None if all(c is None for c in columns) else
                           np.column_stack([np.full(local.size, np.nan) if c is None else c for c in columns]))
            if self.effort_check is not None and out[2] is not None:
                self.effort_check(out[2], int(lo))
            yield self._prepared(out)

    def _column(self, decoded, local: np.ndarray, t_ns: np.ndarray | None, name: str, k: int) -> np.ndarray | None:
        """Field ``k`` of joint ``name`` at the samples of a chunk: as recorded, or interpolated (another source)."""
        if name in self.scan.primary:
            return decoded.fields[k][local, decoded.names.index(name)] if self.scan.fields[k] else None
        table = self._tables.get((name, k))
        return None if table is None else np.interp(t_ns, *table)

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
