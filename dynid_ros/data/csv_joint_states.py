"""Joint states from a CSV file without header and without time column (the dVRK recordings of Wang et al. 2019):
``3 n`` columns per row, ``q1..qn, dq1..dqn, tau1..tauN``, sample ``k`` at ``t = k / rate``.

Rows that exactly repeat the previous row (all ``3 n`` values) are stale readings of the controller, not samples:
they are dropped, and the remaining samples keep their own times (the series is then irregular; processing
resamples it to a uniform grid).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.errors import DataError


def read_csv_joint_states(path: str | Path, names: list[str] | tuple[str, ...], rate_hz: float) -> JointStateSeries:
    """The joint states of ``path`` for the joints ``names`` (in column order); DataError naming file and row."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such CSV file")
    n = len(names)
    try:
        values = np.loadtxt(path, delimiter=",", ndmin=2)
    except ValueError as err:
        raise DataError(f"{path}: not a numeric CSV: {str(err).splitlines()[0]}") from err
    if values.shape[1] != 3 * n:
        raise DataError(f"{path}: {values.shape[1]} columns, expected {3 * n} (q, dq, tau of {', '.join(names)})")
    bad = np.flatnonzero(~np.isfinite(values).all(axis=1))
    if bad.size:
        raise DataError(f"{path}: row {bad[0] + 1} is not finite")
    if not rate_hz > 0:
        raise DataError(f"{path}: the sample rate must be > 0, got {rate_hz}")
    fresh = np.r_[True, np.any(values[1:] != values[:-1], axis=1)]
    t = np.arange(values.shape[0]) / float(rate_hz)
    kept = values[fresh]
    return JointStateSeries(list(names), t[fresh], kept[:, :n], kept[:, n:2 * n], kept[:, 2 * n:],
                            {"source": str(path), "stale_rows_dropped": int((~fresh).sum())})
