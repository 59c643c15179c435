"""Drive gains from a known payload (``dynid gains``; Pennese et al. 2021 eq. 2): two runs of the same robot, one
with a payload of known mass on a link, give the per-joint scales ``k`` (torque = k * effort) together with the
robot's parameters (:mod:`dynid_ros.estimation.drive_gains`). ``dynid identify --effort-scale-file`` uses them.

The gains file (YAML)::

    dynid_ros_gains: 1
    joints: [j1, j2, ...]
    effort_scale: [k1, k2, ...]     # torque = k * recorded effort, per joint
    payload: {link: ..., mass: ..., com: [...] | null}
    status: optimal
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.signal_processing import ProcessedData, ProcessingOptions, apply_effort_scale, process
from dynid_ros.dynamics.regressor import regressor_3d
from dynid_ros.errors import ConfigError, DataError
from dynid_ros.estimation.drive_gains import GainFit, fit_drive_gains
from dynid_ros.pipeline.linear_identification import fit_rows, prepare_series
from dynid_ros.pipeline.options import IdentificationOptions
from dynid_ros.robot.model import RobotModel, nominal_parameters

GAINS_MARKER = "dynid_ros_gains"
"""Key that marks a gains file (so that ``--out`` rewrites only a gains file)."""


@dataclass
class GainsResult:
    joints: tuple[str, ...]
    fit: GainFit
    link: str
    mass: float
    com: list[float] | None

    def to_dict(self) -> dict:
        return {GAINS_MARKER: 1, "joints": list(self.joints), "effort_scale": [float(v) for v in self.fit.gains],
                "payload": {"link": self.link, "mass": self.mass, "com": self.com,
                            "identified": [float(v) for v in self.fit.payload]},
                "status": self.fit.status}


def estimate_gains(unloaded: JointStateSeries, loaded: JointStateSeries, model: RobotModel, link: str, mass: float,
                   com: list[float] | None, options: IdentificationOptions) -> GainsResult:
    """Per-joint gains of ``model``'s joints from the two runs (a payload of ``mass`` on ``link``)."""
    if not mass > 0:
        raise ConfigError(f"--payload-mass must be > 0 kg, got {mass}")
    if com is not None and len(com) != 3:
        raise ConfigError(f"--payload-com needs three numbers x,y,z, got {len(com)}")
    layout = model.layout_for(options.friction, options.armature)
    if link not in layout.links:
        raise ConfigError(f"--payload-link {link}: not an identified link (links: {', '.join(layout.links)})")
    processing = ProcessingOptions(**options.processing)
    runs = [process(prepare_series(s, model, options), processing) for s in (unloaded, loaded)]
    y_u, e_u = _kept(model, layout, runs[0], processing.min_speed)
    y_l, e_l = _kept(model, layout, runs[1], processing.min_speed)
    y_p = y_l[:, :, layout.link_slice(layout.links.index(link))]
    fit = fit_drive_gains((y_u, e_u), (y_l, y_p, e_l), layout, nominal_parameters(model, layout), mass,
                          None if com is None else np.asarray(com, dtype=float), options.solver)
    return GainsResult(tuple(model.joints), fit, link, float(mass), None if com is None else [float(c) for c in com])


def _kept(model: RobotModel, layout, data: ProcessedData, min_speed: float) -> tuple[np.ndarray, np.ndarray]:
    """Regressor (N, n, P) and effort (N, n) with the rows of joints slower than ``min_speed`` zeroed."""
    y = regressor_3d(model, layout, data.q, data.dq, data.ddq)
    kept = fit_rows(data.dq, min_speed).reshape(data.dq.shape)
    return y * kept[:, :, None], data.tau * kept


def write_gains(result: GainsResult, path: Path) -> None:
    """Write the gains file whole (a temporary file renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(yaml.safe_dump(result.to_dict(), sort_keys=False))
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
