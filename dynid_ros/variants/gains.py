"""Drive gains from a known payload (``dynid gains``; Pennese et al. 2021 eq. 2): two runs of the same robot, one
with a payload of known mass on a link, give the per-joint scales ``k`` (torque = k * effort) together with the
robot's parameters (:mod:`dynid_ros.estimation.drive_gains`), written as a gains file
(:mod:`dynid_ros.data.gains_file`) that ``dynid identify --effort-scale-file`` reads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.data.gains_file import GAINS_MARKER
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.signal_processing import ProcessedData, ProcessingOptions, process
from dynid_ros.dynamics.regressor import regressor_3d
from dynid_ros.errors import ConfigError
from dynid_ros.estimation.drive_gains import GainFit, fit_drive_gains
from dynid_ros.identification.linear_identification import fit_rows, prepare_series
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.robot.model import RobotModel, nominal_parameters


@dataclass
class GainsResult:
    """Per-joint effort scales of ``joints`` fitted with a payload of ``mass`` on ``link``."""
    joints: tuple[str, ...]
    fit: GainFit
    link: str
    mass: float
    com: list[float] | None

    def to_dict(self) -> dict:
        """The gains file's content: effort scales, the payload and the fit's status."""
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


