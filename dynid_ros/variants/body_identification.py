"""One rigid body from a 6-axis force/torque sensor (Traversaro et al. 2016 eq. 4, 17, 22): ``dynid identify-body``.

The sensor measures the wrench ``w`` (in its frame ``S``, about its origin) that the robot applies through it to
the body beyond it. The joint states give, by forward kinematics, the body velocity ``v_S`` and spatial acceleration
``a_S`` of ``S``, gravity included as an acceleration of the base; then ``w = Y(v_S, a_S) pi + o`` (Newton-Euler,
eq. 4; pinocchio's ``bodyRegressor``) with ``pi`` the body's ten parameters about ``S`` and ``o`` the sensor's
constant offset. The offset is removed by centring rows and wrenches per axis (eq. 17: only the differences between
samples carry the body); ``pi`` then by the fully consistent solvers of :mod:`dynid_ros.estimation.payload` (eq. 22),
``o`` as the mean residual. Output: ``body.yaml`` (both solutions, the offset) and ``body_inertial.xml``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin
import yaml

from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.output_paths import BODY
from dynid_ros.data.signal_processing import ProcessingOptions, process
from dynid_ros.errors import ConfigError, DataError
from dynid_ros.estimation.payload import BodyFit, fit_body_lmi, fit_body_manifold, mass_share
from dynid_ros.reporting.result_directory import atomic_directory
from dynid_ros.robot.model import RobotModel
from dynid_ros.variants.payload_identification import inertial_xml

BODY_FILE = "body.yaml"
BODY_INERTIAL_FILE = "body_inertial.xml"


@dataclass
class BodyResult:
    """The body beyond the sensor ``frame``: both solutions and the sensor offset ``[f; tau]``."""

    frame: str
    lmi: BodyFit
    manifold: BodyFit
    offset: np.ndarray
    n_samples: int
    mass_share: float

    def to_dict(self) -> dict:
        """The result for the output: frames, samples, mass share, sensor offset and both fits."""
        return {"sensor_frame": self.frame, "frame": f"{self.frame}; inertia_com about the CoM",
                "n_samples": self.n_samples, "mass_share": self.mass_share,
                "sensor_offset": [float(v) for v in self.offset], "body": self.lmi.to_dict(),
                "manifold": self.manifold.to_dict()}


def sensor_regressor(model: RobotModel, frame: str, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    """(N, 6, 10) rows ``[f; tau]`` of a body's wrench in the sensor frame (Traversaro et al. 2016 eq. 4)."""
    pm = model.pin_model
    if model.coupling is not None:
        raise ConfigError("identify-body: robots with mimic joints or couplings are not supported yet")
    if not pm.existFrame(frame):
        names = sorted({f.name for f in pm.frames if f.name != "universe"})
        raise ConfigError(f"--sensor-frame {frame}: not a frame of the robot ({', '.join(names)})")
    fid = pm.getFrameId(frame)
    data = pm.createData()
    gravity = np.array(pm.gravity.linear)
    out = np.zeros((q.shape[0], 6, 10))
    for k, config in enumerate(model.configuration(q)):
        pin.forwardKinematics(pm, data, config, dq[k], ddq[k])
        placement = pin.updateFramePlacement(pm, data, fid)
        v = pin.getFrameVelocity(pm, data, fid, pin.LOCAL)
        a = pin.getFrameAcceleration(pm, data, fid, pin.LOCAL)
        a_g = pin.Motion(a.linear - placement.rotation.T @ gravity, a.angular)  # gravity as a base acceleration
        out[k] = pin.bodyRegressor(v, a_g)
    return out


def identify_body(series: JointStateSeries, t_wrench: np.ndarray, wrench: np.ndarray, model: RobotModel,
                  frame: str, processing: dict, solver: str = "clarabel") -> BodyResult:
    """The body beyond the sensor ``frame`` from joint states and the sensor's wrenches (module docstring)."""
    missing = [j for j in model.joints if j not in series.names]
    if missing:
        raise DataError(f"joint(s) {', '.join(missing)} of the model are not in the joint states")
    options = ProcessingOptions(**processing)
    data = process(series.select(list(model.joints)), options)
    if data.t[0] < t_wrench[0] or data.t[-1] > t_wrench[-1]:
        raise DataError(f"the wrenches ({t_wrench[0]:.3f}..{t_wrench[-1]:.3f} s) do not cover the joint states "
                        f"({data.t[0]:.3f}..{data.t[-1]:.3f} s)")
    measured = _filtered_at(t_wrench, wrench, data.t, data.options or options)  # a derived cutoff's numbers
    rows = sensor_regressor(model, frame, data.q, data.dq, data.ddq)
    centred_rows = rows - rows.mean(axis=0, keepdims=True)
    centred = measured - measured.mean(axis=0, keepdims=True)
    w, target = centred_rows.reshape(-1, 10), centred.reshape(-1)
    lmi, manifold = fit_body_lmi(w, target, solver), fit_body_manifold(w, target)
    offset = (measured - rows @ lmi.parameters).mean(axis=0)
    return BodyResult(frame, lmi, manifold, offset, int(data.t.size), mass_share(w))


def _filtered_at(t: np.ndarray, values: np.ndarray, at: np.ndarray, options: ProcessingOptions) -> np.ndarray:
    """``values`` low-passed like the joint torques (zero phase, at their own rate) and interpolated at ``at``."""
    from scipy.signal import butter, sosfiltfilt

    rate = 1.0 / float(np.median(np.diff(t)))
    cutoff = min(options.tau_cutoff_hz or options.cutoff_hz, 0.45 * rate)
    filtered = sosfiltfilt(butter(options.order, cutoff, fs=rate, output="sos"), values, axis=0)
    return np.column_stack([np.interp(at, t, filtered[:, i]) for i in range(values.shape[1])])


def write_body(result: BodyResult, out: Path, inputs: tuple = ()) -> None:
    """Write ``body.yaml`` and ``body_inertial.xml`` into ``out`` (new, or an earlier body result)."""

    def fill(tmp: Path) -> None:
        (tmp / BODY_FILE).write_text(yaml.safe_dump(result.to_dict(), sort_keys=False))
        (tmp / BODY_INERTIAL_FILE).write_text(inertial_xml(result.lmi, result.frame) + "\n")

    atomic_directory(Path(out), fill, BODY, inputs)
