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
- The same rule for a live subscriber (the latest reading of each joint, from whichever message carried it,
  with its age) is :class:`dynid_ros.execution.joint_state_cache.JointStateCache`.
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
    keep, item.dropped_nonfinite, item.dropped_duplicate = kept_samples(item.t_ns, keep, source.samples,
                                                                        source.names, where)
    item.source = JointStateSource(source.names, source.header_ns[keep], source.receive_ns[keep],
                                   [None if v is None else v[keep] for v in source.fields], source.samples[keep])
    item.t_ns = item.t_ns[keep]
    return item


def kept_samples(t_ns: np.ndarray, finite: np.ndarray, samples: np.ndarray, names: list[str], where: str
                 ) -> tuple[np.ndarray, int, int]:
    """The mask of the samples of one source kept (finite, not a repeated stamp), and how many non-finite and
    repeated ones were dropped; stamps going backwards are an error naming the sample (``samples``: the index of
    each among the topic's messages)."""
    steps = np.diff(t_ns)
    backwards = np.flatnonzero(steps < 0)
    if backwards.size:
        i = int(backwards[0]) + 1
        raise DataError(f"{where}: non-monotonic stamps at sample {int(samples[i])}: "
                        f"t = {t_ns[i] * 1e-9:.9f} s after {t_ns[i - 1] * 1e-9:.9f} s")
    duplicate = np.concatenate(([False], steps == 0))
    del steps
    nonfinite = int(finite.size - finite.sum())
    repeated = int((duplicate & finite).sum())
    keep = finite & ~duplicate
    if not keep.any():
        raise DataError(f"{where}: no finite samples of {', '.join(names)} among {keep.size}")
    return keep, nonfinite, repeated


def describe_source(names: list[str], t_ns: np.ndarray, clock: str, fields: list[str]) -> dict:
    """A source's entry of ``info["sources"]``: joints, messages, clock, rate, fields."""
    span = (t_ns[-1] - t_ns[0]) * 1e-9
    return {"joints": list(names), "messages": int(t_ns.size), "clock": clock,
            "rate_hz": round((t_ns.size - 1) / span, 3) if span > 0 else None, "fields": fields}


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
    return describe_source(item.source.names, item.t_ns, item.clock,
                           [f for f, v in zip(FIELDS, item.source.fields) if v is not None])
