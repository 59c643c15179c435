"""The real Panda excitation run of Gaz et al. 2019 as joint states or a bag.

The data set is not part of the repository: its directory comes from the environment variable
``DYNID_PANDA_DATA`` (``.ci/run`` sets it to the copy beside the repository when there is one).
Unset, the tests that need it skip with that reason; set to a directory without the data, they fail.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from dynid_ros.data.joint_states import JointStateSeries

from support.shared_dirs import shared_dir

ENV = "DYNID_PANDA_DATA"
UNSET_REASON = f"{ENV} is not set (directory of the Panda excitation run of Gaz et al. 2019)"
JOINTS = [f"panda_joint{i}" for i in range(1, 8)]


def data_dir() -> Path:
    """The data directory named by ``DYNID_PANDA_DATA``; skips the calling test (or exits a script) when unset."""
    return shared_dir(ENV, unset_reason=UNSET_REASON, marker="exciting_traj_time.txt",
                      what="the Panda data directory")


@lru_cache(maxsize=4)
def _arrays(directory: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    t = np.loadtxt(directory / "exciting_traj_time.txt")
    q, dq, tau = (np.loadtxt(directory / f"exciting_traj_{name}.txt").reshape(-1, 7)
                  for name in ("positions", "velocity", "torques"))
    return t, q, dq, tau


def panda_series() -> JointStateSeries:
    """The whole run (20 544 samples, about 21 s) with the Panda URDF's joint names."""
    t, q, dq, tau = _arrays(data_dir())
    return JointStateSeries(list(JOINTS), t.copy(), q.copy(), dq.copy(), tau.copy())


def write_panda_bag(path: Path, storage: str = "mcap", velocities: bool = True) -> Path:
    """The run as a rosbag2 of ``sensor_msgs/JointState`` on ``/joint_states`` (header stamps from the data);
    ``velocities`` False: the messages carry positions and efforts only, as several drivers publish them."""
    from dynid_ros.data.bag_io import write_joint_states

    series = panda_series()
    series.t = series.t + 1_700_000_000.0  # a realistic absolute stamp
    if not velocities:
        series.velocity = None
    return write_joint_states(path, series, topic="/joint_states", storage=storage)
