"""The real dVRK MTM and PSM runs of Wang et al. 2019 (CSV in motor coordinates, 200 Hz, no stamps).

The data set is not part of the repository: its directory comes from ``DYNID_DVRK_DATA`` (``.ci/run`` sets it to
the copy beside the repository when there is one). Unset, the tests that need it skip with that reason; set to a
directory without the data, they fail.
"""

from __future__ import annotations

from pathlib import Path

from support.shared_dirs import shared_dir

ENV = "DYNID_DVRK_DATA"
UNSET_REASON = f"{ENV} is not set (directory of the dVRK runs of Wang et al. 2019: mtm/, psm/)"


def dvrk_file(robot: str, name: str) -> Path:
    """``<DYNID_DVRK_DATA>/<robot>/<name>``; skips the calling test when the variable is unset."""
    return shared_dir(ENV, unset_reason=UNSET_REASON, marker=f"{robot}/{name}",
                      what="the dVRK data directory") / robot / name
