"""Joint states merged by joint name across messages and publishers.

A ``/joint_states`` topic often has several publishers: an arm driver (ros2_control, 500 Hz) and a
gripper driver (50 Hz), each with its own joint names, stamps and clock. Nothing in a rosbag2 tells the
publishers apart (one topic, one connection), but each publishes one set of joint names: a *source*
here is the messages that carry one set of joints. A sample of a joint is taken from whichever message
carries it.

- :func:`merge_by_name` turns the sources of a recording into one :class:`JointStateSeries`: each
  source keeps its own stamps and one clock (its header stamps, or, when it does not stamp them, its
  receive times for all its messages, moved onto the header clock of the stamped sources by their
  median receive delay); the series is sampled at the stamps of the source with the most messages,
  whose joints are taken as recorded, and the other joints are interpolated onto those stamps.
- :class:`LatestJointStates` is the same rule for a live subscriber (e.g. a node that needs the current
  position of its joints): the latest value of each joint, from whichever message carried it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.errors import DataError

FIELDS = ("position", "velocity", "effort")


@dataclass
class JointStateSource:
    """The messages of one publisher (one set of joint names), in bag order.

    Attributes:
        names: joint names, length k.
        header_ns: header stamps [ns] (m,); 0 where the publisher did not stamp.
        receive_ns: receive (bag) times [ns] (m,).
        fields: position, velocity, effort as (m, k) arrays, None where the source does not publish one.
        samples: index of each message among all messages of the topic (m,), for error messages.
    """

    names: list[str]
    header_ns: np.ndarray
    receive_ns: np.ndarray
    fields: list[np.ndarray | None]
    samples: np.ndarray


@dataclass
class _Timed:
    """A source on its clock: times [ns] (m,), fields and a description for ``info``."""

    source: JointStateSource
    t_ns: np.ndarray
    clock: str
    dropped_nonfinite: int = 0
    dropped_duplicate: int = 0


def merge_by_name(sources: Sequence[JointStateSource], where: str = "joint states") -> JointStateSeries:
    """One series of every joint of ``sources`` (module docstring); ``where`` names the data in errors.

    ``info`` gets ``sources`` (joints, messages, rate and clock of each), ``interpolated_joints`` (those not in
    the source that gives the stamps), ``dropped_nonfinite`` and ``dropped_duplicate``.
    """
    if not sources:
        raise DataError(f"{where}: no messages")
    timed = [_clean(item, where) for item in _on_one_clock(list(sources))]
    primary = max(timed, key=lambda item: item.t_ns.size)
    t_ns = primary.t_ns
    names = list(primary.source.names)
    for item in timed:
        names += [name for name in item.source.names if name not in names]
    columns = [[_column(timed, primary, name, k, t_ns) for name in names] for k in range(3)]
    fields = [None if all(c is None for c in cols) else
              np.column_stack([np.full(t_ns.size, np.nan) if c is None else c for c in cols]) for cols in columns]
    info = {"sources": [_describe(item) for item in timed],
            "interpolated_joints": [n for n in names if n not in primary.source.names],
            "dropped_nonfinite": sum(item.dropped_nonfinite for item in timed),
            "dropped_duplicate": sum(item.dropped_duplicate for item in timed)}
    return JointStateSeries(names, t_ns.astype(np.float64) * 1e-9, fields[0], fields[1], fields[2], info)


def _on_one_clock(sources: list[JointStateSource]) -> list[_Timed]:
    """Each source on one clock: its header stamps when it stamps every message, else its receive times
    shifted by the median (receive - header) delay of the stamped sources (none: receive times as they are)."""
    stamped = [s for s in sources if s.header_ns.size and (s.header_ns != 0).all()]
    delay = int(np.median(np.concatenate([s.receive_ns - s.header_ns for s in stamped]))) if stamped else 0
    timed = []
    for source in sources:
        if any(source is s for s in stamped):
            timed.append(_Timed(source, source.header_ns.astype(np.int64), "header"))
        else:
            partly = bool((source.header_ns != 0).any())
            clock = "receive" + (" (some header stamps 0)" if partly else "") + (" - median delay" if stamped else "")
            timed.append(_Timed(source, source.receive_ns.astype(np.int64) - delay, clock))
    return timed


def _clean(item: _Timed, where: str) -> _Timed:
    """Drop non-finite samples and repeated stamps; stamps going backwards are an error."""
    source = item.source
    keep = np.ones(item.t_ns.size, dtype=bool)
    for values in source.fields:
        if values is not None:
            keep &= np.isfinite(values).all(axis=1)
    steps = np.diff(item.t_ns)
    backwards = np.flatnonzero(steps < 0)
    if backwards.size:
        i = int(backwards[0]) + 1
        raise DataError(f"{where}: non-monotonic stamps at sample {int(source.samples[i])}: "
                        f"t = {item.t_ns[i] * 1e-9:.9f} s after {item.t_ns[i - 1] * 1e-9:.9f} s")
    duplicate = np.concatenate(([False], steps == 0))
    item.dropped_nonfinite = int(keep.size - keep.sum())
    item.dropped_duplicate = int((duplicate & keep).sum())
    keep &= ~duplicate
    if not keep.any():
        raise DataError(f"{where}: no finite samples of {', '.join(source.names)} among {keep.size}")
    item.source = JointStateSource(source.names, source.header_ns[keep], source.receive_ns[keep],
                                   [None if v is None else v[keep] for v in source.fields], source.samples[keep])
    item.t_ns = item.t_ns[keep]
    return item


def _column(timed: list[_Timed], primary: _Timed, name: str, k: int, t_ns: np.ndarray) -> np.ndarray | None:
    """Field ``k`` of joint ``name`` at ``t_ns``: as recorded by the primary source, else interpolated from
    every message that carries it (held at the ends); None when no source publishes that field of it."""
    if name in primary.source.names:
        values = primary.source.fields[k]
        return None if values is None else values[:, primary.source.names.index(name)]
    times, values = [], []
    for item in timed:
        if name in item.source.names and item.source.fields[k] is not None:
            times.append(item.t_ns)
            values.append(item.source.fields[k][:, item.source.names.index(name)])
    if not times:
        return None
    t_all, order = np.unique(np.concatenate(times), return_index=True)
    return np.interp(t_ns.astype(np.float64), t_all.astype(np.float64), np.concatenate(values)[order])


def _describe(item: _Timed) -> dict:
    span = (item.t_ns[-1] - item.t_ns[0]) * 1e-9
    return {"joints": list(item.source.names), "messages": int(item.t_ns.size), "clock": item.clock,
            "rate_hz": round((item.t_ns.size - 1) / span, 3) if span > 0 else None,
            "fields": [f for f, v in zip(FIELDS, item.source.fields) if v is not None]}


class LatestJointStates:
    """The latest state of each joint, from whichever ``JointState`` message carried it (live merge by name).

    ``update`` takes the fields of one message; ``position(names)`` returns the latest positions of
    ``names`` or raises DataError naming the joints no message has carried yet.
    """

    def __init__(self) -> None:
        self._latest: dict[str, tuple[int, float, float | None, float | None]] = {}

    def update(self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float] = (),
               effort: Sequence[float] = (), stamp_ns: int = 0) -> None:
        """Record one message (velocity/effort may be empty, as in ``sensor_msgs/msg/JointState``)."""
        if len(position) != len(names):
            raise DataError(f"joint state with {len(names)} names and {len(position)} positions")
        for i, name in enumerate(names):
            self._latest[name] = (int(stamp_ns), float(position[i]),
                                  float(velocity[i]) if len(velocity) == len(names) else None,
                                  float(effort[i]) if len(effort) == len(names) else None)

    def names(self) -> list[str]:
        """The joints seen so far."""
        return list(self._latest)

    def missing(self, names: Sequence[str]) -> list[str]:
        """Those of ``names`` no message has carried yet."""
        return [name for name in names if name not in self._latest]

    def position(self, names: Sequence[str]) -> np.ndarray:
        """Latest positions of ``names``, in that order."""
        missing = self.missing(names)
        if missing:
            raise DataError(f"no joint state received yet for joint(s) {', '.join(missing)}")
        return np.array([self._latest[name][1] for name in names])

    def velocity(self, names: Sequence[str]) -> np.ndarray:
        """Latest velocities of ``names`` (NaN where the joint's publisher sends none)."""
        self.position(names)
        return np.array([np.nan if self._latest[n][2] is None else self._latest[n][2] for n in names])
