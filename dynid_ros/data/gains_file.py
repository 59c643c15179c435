"""The drive-gains file of ``dynid gains`` (per-joint effort scales, Pennese et al. 2021 eq. 2): written whole,
recognised, read, and applied to recorded efforts by joint name (``dynid identify --effort-scale-file``).

The file (YAML)::

    dynid_ros_gains: 1
    joints: [j1, j2, ...]
    effort_scale: [k1, k2, ...]     # torque = k * recorded effort, per joint
    payload: {link: ..., mass: ..., com: [...] | null}
    status: optimal
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.signal_processing import apply_effort_scale
from dynid_ros.errors import DataError

GAINS_MARKER = "dynid_ros_gains"
"""Key that marks a gains file (so that ``--out`` rewrites only a gains file)."""


def write_gains(content: dict, path: Path) -> None:
    """Write the gains file ``content`` whole (a temporary file renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(yaml.safe_dump(content, sort_keys=False))
    tmp.replace(path)


def is_gains_file(path: Path) -> bool:
    """Whether ``path`` is a gains file dynid wrote."""
    try:
        content = yaml.safe_load(Path(path).read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    return isinstance(content, dict) and GAINS_MARKER in content


def read_gains(path: str | Path) -> dict[str, float]:
    """``{joint: k}`` of a gains file; DataError naming the file for anything else."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such gains file")
    try:
        content = yaml.safe_load(path.read_text())
        joints, scale = list(content["joints"]), [float(v) for v in content["effort_scale"]]
    except (yaml.YAMLError, KeyError, TypeError, ValueError) as err:
        raise DataError(f"{path}: not a gains file (needs joints and effort_scale lists): {err}") from err
    if len(joints) != len(scale) or not all(np.isfinite(scale)) or min(scale, default=1.0) <= 0:
        raise DataError(f"{path}: joints and effort_scale must have the same length, with finite gains > 0")
    return dict(zip(joints, scale))


def scale_by_name(series: JointStateSeries, gains: dict[str, float], source: str) -> JointStateSeries:
    """``series`` with the effort of every joint named in ``gains`` scaled (the others unchanged)."""
    missing = [j for j in gains if j not in series.names]
    if missing:
        raise DataError(f"{source}: joint(s) {', '.join(missing)} are not in the joint states")
    return apply_effort_scale(series, [gains.get(name, 1.0) for name in series.names])
