"""A small three-joint joint-state series for the bag tests, and the fingerprint that shows a bag was only read."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dynid_ros.data.joint_states import JointStateSeries

from support.raw_bags import NAMES


def series(n_samples: int = 50, t0: float = 100.0) -> JointStateSeries:
    """Sample k at ``t0 + k`` ms: position ``k + 0.1, k + 0.2, k + 0.3``, velocity 10x, effort 100x."""
    t = t0 + 0.001 * np.arange(n_samples)
    base = np.arange(n_samples)[:, None] + np.array([0.1, 0.2, 0.3])
    return JointStateSeries(list(NAMES), t, base, 10 * base, 100 * base)


def fingerprint(directory: Path) -> dict[str, bytes]:
    """Every file of a directory and its content."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}
