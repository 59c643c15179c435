"""A three-joint arm's joint states with known parameters (exact inverse dynamics plus sensor noise): quick, real
input for the direct tests of the identification and of what it writes.

The arm is ``serial_arms.serial_arm("fleet_arm", FLEET_LINKS, ...)`` (a base yaw, a shoulder pitch, an elbow); the
motion is a multi-sine per joint, at rest at both ends, sampled at ``rate`` Hz with analytic derivatives; the truth is
the URDF's inertials with viscous and Coulomb friction, an offset and armature (``TRUTH_JOINT_TERMS``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.dynamics.regressor import torques
from dynid_ros.robot.model import RobotModel, load_model, nominal_parameters
from dynid_ros.robot.parameters import ParameterLayout

from support.serial_arms import FLEET_LINKS, serial_arm

LIMITS = [(-2.5, 2.5, 60, 2.5)] * 2 + [(-2.5, 2.5, 30, 2.5)]
ARM = serial_arm("fleet_arm", FLEET_LINKS, LIMITS)
JOINTS = ("j1", "j2", "j3")
TRUTH_JOINT_TERMS = {"fv": (0.3, 0.25, 0.1), "fc": (0.5, 0.4, 0.2), "fo": (0.05, -0.1, 0.02),
                     "Ia": (0.05, 0.04, 0.01)}
"""Viscous [N m s/rad], Coulomb [N m], offset [N m] and armature [kg m^2] of j1-j3."""
T0 = 1_700_000_000.0
"""The stamp of the first sample [s since the epoch]."""


@dataclass
class ArmRun:
    """A recorded run and what produced it."""

    urdf: Path
    model: RobotModel
    layout: ParameterLayout
    truth: np.ndarray
    series: JointStateSeries


def write_arm(directory: Path) -> Path:
    """The arm's URDF as ``directory/arm.urdf``."""
    path = Path(directory) / "arm.urdf"
    path.write_text(ARM)
    return path


AMPLITUDE = np.array([[1.0, 0.5], [0.8, 0.4], [1.0, 0.6]])
"""Per joint, the amplitude [rad/s] of each harmonic of the velocity (two harmonics)."""
RICH = np.array([[1.0, 0.6, -0.5, 0.3], [0.8, -0.5, 0.4, 0.3], [1.2, 0.7, -0.6, 0.4]])
"""Four harmonics: a motion that excites every base parameter of the arm."""


def motion(t: np.ndarray, period: float, amplitude: np.ndarray = AMPLITUDE
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Harmonics of ``1 - cos`` per joint: at rest at ``t = 0`` and ``t = period`` (q, q', q''), and every joint
    at rest at once at ``t = period / 2`` too (where the sign of Coulomb friction is a coin flip: keep that instant
    off the sample grid when predictions are compared)."""
    w = 2 * np.pi / period
    q, dq, ddq = (np.zeros((t.size, 3)) for _ in range(3))
    for j in range(3):
        for h, a in enumerate(amplitude[j], start=1):
            q[:, j] += a / h * (1 - np.cos(h * w * t))
            dq[:, j] += a * w * np.sin(h * w * t)
            ddq[:, j] += a * h * w * w * np.cos(h * w * t)
    q[:, 1] -= 0.6
    return q, dq, ddq


def arm_run(directory: Path, seconds: float = 8.0, rate: float = 250.0, noise: float = 0.02, seed: int = 0, *,
            amplitude: np.ndarray = AMPLITUDE, extra: str = "",
            extra_torque: Callable[[np.ndarray], np.ndarray] | None = None) -> ArmRun:
    """The arm moving for ``seconds`` (one period of :func:`motion`) at ``rate`` Hz, its effort the exact inverse
    dynamics of the truth plus Gaussian noise of ``noise`` N m; stamps from :data:`T0`. ``extra``: URDF text of
    the recorded arm that the URDF written lacks (a payload: ``serial_arm``'s ``extra``); ``extra_torque(q)``: a
    torque the URDF cannot express (a spring), added to the effort. ``truth``: the parameters of the written URDF's
    layout (without ``extra``)."""
    urdf = write_arm(directory)
    model = load_model(urdf=urdf)
    layout = model.layout_for(("viscous", "coulomb", "offset"), True)
    truth = nominal_parameters(model, layout)
    for symbol, values in TRUTH_JOINT_TERMS.items():
        truth[layout.indices(symbol)] = values
    recorded, recorded_truth = model, truth
    if extra:
        path = Path(directory) / "recorded_arm.urdf"
        path.write_text(serial_arm("fleet_arm", FLEET_LINKS, LIMITS, extra))
        recorded = load_model(urdf=path)
        recorded_truth = nominal_parameters(recorded, layout)
        recorded_truth[layout.n_link_parameters:] = truth[layout.n_link_parameters:]
    t = np.arange(int(round(seconds * rate)) + 1) / rate
    q, dq, ddq = motion(t, seconds, amplitude)
    tau = torques(recorded, layout, recorded_truth, q, dq, ddq)
    tau += np.random.default_rng(seed).normal(0.0, noise, q.shape)
    if extra_torque is not None:
        tau += extra_torque(q)
    series = JointStateSeries(list(JOINTS), T0 + t, q, dq, tau)
    return ArmRun(urdf, model, layout, truth, series)
