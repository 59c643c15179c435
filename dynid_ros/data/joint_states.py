"""A time series of joint states: the record that bags, simulators and estimators exchange."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dynid_ros.errors import DataError


@dataclass
class JointStateSeries:
    """Joint states of ``n`` joints at ``N`` samples.

    Attributes:
        names: joint names, length n.
        t: sample times [s], shape (N,); absolute (e.g. header stamps) or relative.
        position: [rad or m], shape (N, n).
        velocity: [rad/s or m/s], shape (N, n), or None if not recorded.
        effort: [N m or N] (or motor current before ``--effort-scale``), shape (N, n), or None.
        info: free-form notes from the reader (e.g. number of dropped samples).
    """

    names: list[str]
    t: np.ndarray
    position: np.ndarray
    velocity: np.ndarray | None = None
    effort: np.ndarray | None = None
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.t.shape[0])

    def select(self, names: list[str] | tuple[str, ...]) -> JointStateSeries:
        """The same series restricted to (and reordered as) ``names``; all must be present."""
        idx = [self.names.index(n) for n in names]
        return JointStateSeries(list(names), self.t, self.position[:, idx], _pick(self.velocity, (slice(None), idx)),
                                _pick(self.effort, (slice(None), idx)), dict(self.info))

    def window(self, start: float | None = None, end: float | None = None) -> JointStateSeries:
        """Samples with ``start <= t - t[0] <= end`` (seconds from the first sample)."""
        rel = self.t - self.t[0]
        mask = np.ones(len(self), dtype=bool)
        if start is not None:
            mask &= rel >= start
        if end is not None:
            mask &= rel <= end
        return JointStateSeries(list(self.names), self.t[mask], self.position[mask], _pick(self.velocity, mask),
                                _pick(self.effort, mask), dict(self.info))


def _pick(array: np.ndarray | None, index: object) -> np.ndarray | None:
    return None if array is None else array[index]


def held_positions(series: JointStateSeries) -> dict[str, float]:
    """The median position of each joint in ``series`` (where the data hold a joint that is not identified)."""
    out = {}
    for j, name in enumerate(series.names):
        column = series.position[:, j]
        finite = column[np.isfinite(column)]
        if finite.size:
            out[name] = float(np.median(finite))
    return out


def complete_fields(series: JointStateSeries, where: str = "the joint states") -> JointStateSeries:
    """``series`` with every field recorded for each of its joints: a joint without position or effort (its
    publisher sends none) is a DataError naming it; the velocity is None unless every joint has one."""
    for field_name, values in (("position", series.position), ("effort", series.effort)):
        if values is None:
            continue
        absent = [n for j, n in enumerate(series.names) if np.isnan(values[:, j]).all()]
        if absent:
            raise DataError(f"{where}: no {field_name} for joint(s) {', '.join(absent)} (their publisher sends none)")
    velocity = series.velocity
    if velocity is not None and np.isnan(velocity).all(axis=0).any():
        velocity = None
    return JointStateSeries(list(series.names), series.t, series.position, velocity, series.effort,
                            dict(series.info))
