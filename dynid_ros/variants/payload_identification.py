"""Payload identification (Traversaro et al. 2016): the body rigidly attached to a link, from a loaded run and the
identification result of the unloaded robot (``dynid identify --payload-link LINK --reference DIR --bag B``).

The loaded run is processed as the reference was; the torque the reference robot does not explain,
``tau - Y delta_ref``, is fitted by one body on the link's ten regressor columns
(:func:`dynid_ros.estimation.payload.body_columns`), fully consistent, by both solvers of
:mod:`dynid_ros.estimation.payload`. Rows of joints slower than the reference's ``min_speed`` are left out
(static friction). Output: ``payload.yaml`` (both solutions, time, iterations) and ``payload_inertial.xml``
(the pseudo-inertia LMI solution as a URDF ``<inertial>`` in the link's frame).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.output_paths import PAYLOAD
from dynid_ros.dynamics.regressor import regressor_3d
from dynid_ros.errors import ConfigError
from dynid_ros.estimation.payload import (
    MASS_SHARE_MIN,
    BodyFit,
    body_columns,
    fit_body_lmi,
    fit_body_manifold,
    mass_share,
)
from dynid_ros.identification.linear_identification import fit_rows
from dynid_ros.identification.options import recorded_options
from dynid_ros.reporting.result_directory import atomic_directory, load_parameters
from dynid_ros.reporting.validate import load_result_model, processed_window
from dynid_ros.robot.urdf_writer import inertial_element
from dynid_ros.variants.frames_identification import frame_regressor, frames_data, load_frames_result

PAYLOAD_FILE = "payload.yaml"
INERTIAL_FILE = "payload_inertial.xml"


@dataclass
class PayloadResult:
    """Both solutions for the payload on ``link``, identified from ``n_samples`` of a loaded run."""

    link: str
    reference: str
    lmi: BodyFit
    manifold: BodyFit
    n_samples: int
    unexplained_before: float
    """RMS of the loaded run's torque that the reference robot does not explain [N m]."""
    mass_share: float = 1.0
    """:func:`dynid_ros.estimation.payload.mass_share` of the link's columns (the mass is identified above
    :data:`~dynid_ros.estimation.payload.MASS_SHARE_MIN`)."""

    @property
    def warnings(self) -> list[str]:
        """A warning when the motion does not identify the payload's mass (share below ``MASS_SHARE_MIN``)."""
        if self.mass_share >= MASS_SHARE_MIN:
            return []
        return [f"the payload's mass on {self.link} is not identified by this motion (mass share "
                f"{self.mass_share:.1e}): the masses written are arbitrary; attach it to another link"]

    def to_dict(self) -> dict:
        """The result for the output: link, reference, samples, mass share, warnings and both fits."""
        return {"link": self.link, "reference": self.reference, "n_samples": self.n_samples,
                "frame": f"{self.link}'s joint frame; inertia_com about the CoM",
                "unexplained_torque_rms": self.unexplained_before, "mass_share": self.mass_share,
                "warnings": self.warnings,
                "payload": self.lmi.to_dict(), "manifold": self.manifold.to_dict()}


def identify_payload(series: JointStateSeries, reference: Path, link: str, solver: str = "clarabel",
                     start: float | None = None, end: float | None = None) -> PayloadResult:
    """Identify the body attached to ``link`` from the loaded joint states ``series`` and the result directory
    ``reference`` of the unloaded robot."""
    parameters = load_parameters(Path(reference))
    model = load_result_model(Path(reference), parameters)
    opts = parameters["options"]
    options = recorded_options(opts, start, end)
    layout = model.layout_for(options.friction, options.armature)
    if link not in layout.links:
        raise ConfigError(f"--payload-link {link}: not an identified link of {reference} "
                          f"(links: {', '.join(layout.links)})")
    delta = np.asarray(parameters["parameter_vector"]["values"], dtype=float)
    processing = parameters.get("processing", {})
    data = processed_window(model, series, options, processing)
    y = regressor_3d(model, layout, data.q, data.dq, data.ddq)
    unexplained = (data.tau - y @ delta).reshape(-1)
    kept = fit_rows(data.dq, float(processing.get("min_speed", 0.0)))
    return _fit(body_columns(y, layout, link)[kept], unexplained[kept], link, reference, solver, data.q.shape[0])


def identify_frames_payload(series: JointStateSeries, reference: Path, link: str, solver: str = "clarabel"
                            ) -> PayloadResult:
    """As :func:`identify_payload` for a frames robot's result (:mod:`dynid_ros.variants.frames_identification`):
    the payload on the frame ``link``."""
    fit, _, processing = load_frames_result(Path(reference))
    if link not in fit.layout.links:
        raise ConfigError(f"--payload-link {link}: not a frame with inertia of {reference} "
                          f"(frames: {', '.join(fit.layout.links)})")
    data = frames_data(fit.robot, series, processing)
    y, _ = frame_regressor(fit.robot, fit.layout, data.q, data.dq, data.ddq)
    unexplained = (data.tau - fit.predict(data)).reshape(-1)
    return _fit(body_columns(y, fit.layout, link), unexplained, link, reference, solver, data.q.shape[0])


def _fit(w: np.ndarray, target: np.ndarray, link: str, reference: Path, solver: str, n_samples: int
         ) -> PayloadResult:
    """Both solvers on the payload's rows."""
    return PayloadResult(link, str(reference), fit_body_lmi(w, target, solver), fit_body_manifold(w, target),
                         int(n_samples), float(np.sqrt(np.mean(target ** 2))), mass_share(w))


def write_payload(result: PayloadResult, out: Path, inputs: tuple = ()) -> None:
    """Write ``payload.yaml`` and ``payload_inertial.xml`` into ``out`` (new, or an earlier payload result)."""

    def fill(tmp: Path) -> None:
        (tmp / PAYLOAD_FILE).write_text(yaml.safe_dump(result.to_dict(), sort_keys=False))
        (tmp / INERTIAL_FILE).write_text(inertial_xml(result.lmi, result.link) + "\n")

    atomic_directory(Path(out), fill, PAYLOAD, inputs)


def inertial_xml(body: BodyFit, link: str) -> str:
    """The body as a URDF ``<inertial>`` (CoM origin, inertia about the CoM in the link's axes)."""
    element = inertial_element(body.mass, np.asarray(body.com), np.asarray(body.inertia_com))
    ET.indent(element, space="  ")
    return (f"<!-- payload on {link}, identified by dynid_ros ({body.solver}) -->\n"
            + ET.tostring(element, encoding="unicode"))
