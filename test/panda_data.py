"""The real Panda excitation run of Gaz et al. 2019 (``../shared/data/panda_gaz2019``) as joint states or a bag."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np

from dynid_ros.joint_states import JointStateSeries

DATA = Path(os.environ.get("DYNID_PANDA_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data"
            / "panda_gaz2019")
JOINTS = [f"panda_joint{i}" for i in range(1, 8)]


@lru_cache(maxsize=1)
def _arrays() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if not DATA.is_dir():
        raise FileNotFoundError(f"{DATA}: the shared Panda data set is missing (clone ../shared beside the repo)")
    t = np.loadtxt(DATA / "exciting_traj_time.txt")
    q, dq, tau = (np.loadtxt(DATA / f"exciting_traj_{name}.txt").reshape(-1, 7)
                  for name in ("positions", "velocity", "torques"))
    return t, q, dq, tau


def panda_series() -> JointStateSeries:
    """The whole run (20 544 samples, about 21 s) with the Panda URDF's joint names."""
    t, q, dq, tau = _arrays()
    return JointStateSeries(list(JOINTS), t.copy(), q.copy(), dq.copy(), tau.copy())


def write_panda_bag(path: Path, storage: str = "mcap") -> Path:
    """The run as a rosbag2 of ``sensor_msgs/JointState`` on ``/joint_states`` (header stamps from the data)."""
    from dynid_ros.bag_io import write_joint_states

    series = panda_series()
    series.t = series.t + 1_700_000_000.0  # a realistic absolute stamp
    return write_joint_states(path, series, topic="/joint_states", storage=storage)
