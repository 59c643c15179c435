"""A simulated Panda run for the streamed-identification tests, and their tolerances."""

from __future__ import annotations

import numpy as np

from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.dynamics.regressor import torques
from dynid_ros.robot.model import load_model, nominal_parameters

from support.paths import REPO

URDF = REPO / "urdf" / "panda.urdf"
TINY = {"chunk_s": 0.5, "min_speed": 0.02, "cutoff_hz": 15.0}
"""Half-second chunks; at 15 Hz the overlap is 0.96 s a side, so the 3 s and 3.7 s segments have chunks whose both
edges lie inside the segment (at the default 6 Hz, 2.4 s a side, every chunk of these short bags would reach both
segment ends)."""


def panda_series(seconds: float = 7.0, seed: int = 0) -> JointStateSeries:
    """A 1 kHz multi-sine of the Panda with jittered stamps, a 0.3 s gap at 3 s and a NaN sample."""
    model = load_model(urdf=URDF)
    layout = model.layout_for()
    delta = nominal_parameters(model, layout)
    rng = np.random.default_rng(seed)
    for j in range(model.n_dof):
        delta[layout.joint_index(j, "fv")], delta[layout.joint_index(j, "fc")] = 0.4, 0.6
    t = np.arange(0.0, seconds, 1e-3)
    w = 2 * np.pi * rng.uniform(0.3, 0.9, (1, model.n_dof))
    phase = rng.uniform(0, 2 * np.pi, (1, model.n_dof))
    mid = model.position_limits.mean(axis=1)
    q = mid + 0.5 * np.sin(w * t[:, None] + phase)
    dq = 0.5 * w * np.cos(w * t[:, None] + phase)
    ddq = -0.5 * w**2 * np.sin(w * t[:, None] + phase)
    tau = torques(model, layout, delta, q, dq, ddq) + rng.normal(0.0, 0.05, q.shape)
    stamps = t + rng.uniform(-2e-4, 2e-4, t.size)
    keep = (t < 3.0) | (t > 3.3)
    tau[1234, 2] = np.nan  # dropped by the reader, in both paths
    return JointStateSeries(list(model.joints), 1.7e9 + stamps[keep], q[keep], dq[keep], tau[keep])


def relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / np.abs(a).max())
