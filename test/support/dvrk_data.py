"""The real dVRK MTM and PSM runs of Wang et al. 2019 (CSV in motor coordinates, 200 Hz, no stamps).

The data set is not part of the repository: its directory comes from ``DYNID_DVRK_DATA`` (``.ci/run`` sets it to
the copy beside the repository when there is one). Unset, the tests that need it skip with that reason; set to a
directory without the data, they fail.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "DYNID_DVRK_DATA"
UNSET_REASON = f"{ENV} is not set (directory of the dVRK runs of Wang et al. 2019: mtm/, psm/)"


def dvrk_file(robot: str, name: str) -> Path:
    """``<DYNID_DVRK_DATA>/<robot>/<name>``; skips the calling test when the variable is unset."""
    value = os.environ.get(ENV, "")
    if not value:
        import pytest

        pytest.skip(UNSET_REASON)
    path = Path(value).expanduser() / robot / name
    if not path.is_file():
        raise FileNotFoundError(f"{ENV}={value}: no {robot}/{name} there (not the dVRK data directory)")
    return path
