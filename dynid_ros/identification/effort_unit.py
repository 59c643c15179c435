"""The unit of the recorded effort: joint torque [N m], or motor current [A] that needs a current-to-torque gain.

Most drivers publish joint torque in ``/joint_states`` effort (franka_ros2, Kinova's kortex driver, gz_ros2_control,
the simulator here). The Universal Robots ROS 2 driver publishes each joint's motor current (``actual_current`` of
its RTDE interface) in amperes. The identification fits torques, so a robot whose effort is a current declares it
(``identification.effort_unit: A``) and gives the per-joint factors ``tau_j = k_j * i_j`` [N m/A] (motor torque
constant times gear ratio, Pennese et al. 2021 eq. 2) as ``identification.effort_scale``, or measures them with
``dynid gains`` (two runs, one with a known payload) and passes ``--effort-scale-file``; without either it is
refused (:func:`require_torque`).

A recording whose effort does not fit the URDF's gravity torques is named in a warning
(:func:`gravity_mismatch_warnings`): on each joint that carries gravity, the effort's component along the URDF's
gravity torque ``g_j(q)`` (least squares, ``c_j = <g_j, e_j> / <g_j, g_j>``; the rest of the torque, inertial and
friction, is not correlated with it over a motion) is far below 1 when the effort is a current (a UR5e's shoulder:
about 1 / 13 A per N m), far above 1 when it is in other units or scaled twice.
"""

from __future__ import annotations

import numpy as np

from dynid_ros.dynamics.regressor import torques
from dynid_ros.errors import ConfigError
from dynid_ros.robot.model import RobotModel, nominal_parameters

TORQUE = "N m"
CURRENT = "A"
EFFORT_UNITS = (TORQUE, CURRENT)
"""Values of ``identification.effort_unit``."""
_SPELLINGS = {"n m": TORQUE, "nm": TORQUE, "n*m": TORQUE, "n.m": TORQUE, "n·m": TORQUE, "a": CURRENT,
              "ampere": CURRENT, "amperes": CURRENT, "current": CURRENT, "torque": TORQUE}

MISMATCH_FACTOR = 3.0
"""The effort's fitted share of the gravity torque outside ``[1 / MISMATCH_FACTOR, MISMATCH_FACTOR]`` is named."""
GRAVITY_FLOOR_NM = 0.5
"""Joints whose gravity torque (rms over the motion) is below this [N m], or below a tenth of the most loaded
joint's, are not judged: their effort is mostly inertia and friction."""
SAMPLES = 400
"""The comparison uses at most this many samples, evenly spread over the window."""


def effort_unit(value: object) -> str:
    """The canonical ``effort_unit`` (``"N m"`` or ``"A"``) of a config value; ConfigError otherwise."""
    key = str(value).strip().lower() if value is not None else "n m"
    if key not in _SPELLINGS:
        raise ConfigError(f"identification.effort_unit must be 'N m' (joint torque) or 'A' (motor current), "
                          f"not {value!r}")
    return _SPELLINGS[key]


def require_torque(unit: str, effort_scale: object, gains_file: object = None) -> None:
    """Refuse to identify from motor currents without their current-to-torque gains."""
    if unit == CURRENT and effort_scale is None and gains_file is None:
        raise ConfigError("the joint states' effort is motor current [A] (identification.effort_unit: A, as the "
                          "Universal Robots driver publishes it): give each joint's current-to-torque gain [N m/A] "
                          "(motor torque constant x gear ratio) as identification.effort_scale or --effort-scale, "
                          "or measure them with `dynid gains` and pass --effort-scale-file")


def gravity_mismatch_warnings(model: RobotModel, q: np.ndarray, effort: np.ndarray) -> list[str]:
    """One warning per gravity-loaded joint whose effort (already scaled) does not fit the URDF's gravity torque
    over the motion ``q`` (N, n), ``effort`` (N, n) by more than :data:`MISMATCH_FACTOR`."""
    q, effort = np.atleast_2d(np.asarray(q, dtype=float)), np.atleast_2d(np.asarray(effort, dtype=float))
    if len(q) < 10:
        return []
    pick = np.unique(np.linspace(0, len(q) - 1, min(SAMPLES, len(q))).round().astype(int))
    layout = model.layout_for((), False)
    still = np.zeros((len(pick), q.shape[1]))
    g = torques(model, layout, nominal_parameters(model, layout), q[pick], still, still)
    e = effort[pick]
    rms_g = np.sqrt(np.mean(g ** 2, axis=0))
    judged = (rms_g >= GRAVITY_FLOOR_NM) & (rms_g >= 0.1 * rms_g.max(initial=0.0)) & np.isfinite(e).all(axis=0)
    out = []
    for j in np.flatnonzero(judged):
        share = float(g[:, j] @ e[:, j] / (g[:, j] @ g[:, j]))
        rms_e = float(np.sqrt(np.mean(e[:, j] ** 2)))
        numbers = (f"the URDF's gravity torque there (rms {rms_g[j]:.3g} N m over the motion) is "
                   f"{1 / share if share > 0 else float('inf'):.3g} x its component in the effort (rms {rms_e:.3g})")
        name = model.joints[j]
        if share < 0.0:
            out.append(f"effort of joint {name} opposes the URDF's gravity torque (rms {rms_g[j]:.3g} N m over the "
                       f"motion; fitted share {share:.3g}): check the effort's sign and effort_scale")
        elif share < 1.0 / MISMATCH_FACTOR:
            out.append(f"effort of joint {name} looks like a current: {numbers}; if the driver publishes motor "
                       f"current (the Universal Robots driver does), set identification.effort_unit: A and "
                       f"effort_scale [N m/A], or measure the gains with `dynid gains`; else check the URDF's masses")
        elif share > MISMATCH_FACTOR:
            out.append(f"effort of joint {name} is {share:.3g} x the URDF's gravity torque (rms {rms_g[j]:.3g} N m "
                       f"over the motion): check the effort's unit and effort_scale, and the URDF's masses")
    return out
