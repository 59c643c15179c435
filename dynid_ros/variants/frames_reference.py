"""A published parameter set of a frames robot as a :class:`FramesFit`: the ``params.json`` that the identification
package of Wang et al. 2019 writes (``write_parameters2json``), so that their estimate predicts through this
package's model, processing and error definition.

The file maps frame numbers ``"1"..`` to ``m`` [kg], ``r`` (centre of mass from the frame origin) and ``I``
(``[Ixx, Ixy, Ixz, Iyy, Iyz, Izz]`` about the centre of mass), both in axes parallel to the base frame at zero
motion, and the per-frame terms ``Fc``, ``Fv``, ``Fo`` (friction), ``Im`` (rotor inertia) and ``K`` (spring).
Frame ``k`` is the ``k``-th frame of ``robot.frames`` (the order of Wang et al. 2019 Tables I and II, as in
``config/dvrk_psm.yaml`` and ``config/dvrk_mtm.yaml``). The values are taken as they are: the result is not
checked for physical consistency (``FramesFit.feasible`` tells).

With the dVRK data this separates the model from the estimate: the published PSM parameters predict run two at
Table V within 0.4 points per motor through this package's frames model and processing (their MTM parameters
reproduce their notebook's saved errors when the stale rows are kept, as their processing does).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pinocchio as pin

from dynid_ros.dynamics.feasibility import is_feasible
from dynid_ros.dynamics.frame_terms import term_columns
from dynid_ros.errors import DataError
from dynid_ros.robot.frames import FramesRobot
from dynid_ros.robot.parameters import ParameterLayout, link_parameters
from dynid_ros.variants.frames_identification import FramesFit

TERM_KEYS = {"Fc": "Fc", "Fv": "Fv", "Fo": "Fo", "Ia": "Im", "K": "K"}
"""Per-frame term name (:mod:`dynid_ros.dynamics.frame_terms`) -> its key in ``params.json``."""
STATUS = "reference"
"""``FramesFit.status`` of a parameter set read from a file (not solved here)."""


def read_reference_fit(robot: FramesRobot, path: str | Path) -> FramesFit:
    """The parameters of ``path`` (module docstring) on ``robot``; DataError naming the file and the frame."""
    path = Path(path)
    try:
        stored = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise DataError(f"{path}: unreadable parameter file: {err}") from err
    if not isinstance(stored, dict) or len(stored) != len(robot.frames):
        raise DataError(f"{path}: expected {len(robot.frames)} frames (those of the robot), got "
                        f"{len(stored) if isinstance(stored, dict) else type(stored).__name__}")
    layout = ParameterLayout(robot.motors, robot.model.links, (), False)
    rotations = base_rotations(robot)
    delta = np.zeros(layout.n_parameters)
    per_frame = {}
    for k, frame in enumerate(robot.frames):
        entry = stored.get(str(k + 1))
        if not isinstance(entry, dict):
            raise DataError(f"{path}: no frame {k + 1} ({frame.name})")
        per_frame[frame.name] = entry
        if frame.name in layout.links:
            try:
                delta[layout.link_slice(layout.links.index(frame.name))] = link_in_frame(
                    entry, rotations[frame.name])
            except (KeyError, TypeError, ValueError) as err:
                raise DataError(f"{path}: frame {k + 1} ({frame.name}): bad m, r or I: {err}") from err
    n = len(robot.motors)
    names = term_columns(robot, np.zeros((1, n)), np.zeros((1, n)), np.zeros((1, n))).names
    terms = {}
    for name in names:
        frame, term = name.rsplit(".", 1)
        try:
            terms[name] = float(per_frame[frame][TERM_KEYS[term]])
        except (KeyError, TypeError, ValueError) as err:
            raise DataError(f"{path}: frame {frame}: no number {TERM_KEYS[term]}") from err
    feasible = bool(is_feasible(delta, layout, "full", tol=1e-9)) and all(
        terms[name] >= 0.0 for name in names if not name.endswith((".Fo", ".K")))
    return FramesFit(robot, layout, delta, terms, STATUS, feasible, 0, 0.0, [], 0, {})


def base_rotations(robot: FramesRobot) -> dict[str, np.ndarray]:
    """Orientation in the base frame of every frame with inertia, at zero motion."""
    model = robot.model.expanded if robot.model.expanded is not None else robot.model.pin_model
    data = model.createData()
    pin.framesForwardKinematics(model, data, pin.neutral(model))
    return {link: data.oMf[model.getFrameId(link, pin.FrameType.BODY)].rotation.copy() for link in robot.model.links}


def link_in_frame(entry: dict, rotation: np.ndarray) -> np.ndarray:
    """Ten link parameters in the frame's own axes from ``m``, ``r`` and ``I`` in base-parallel axes."""
    xx, xy, xz, yy, yz, zz = (float(v) for v in entry["I"])
    inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    com = np.asarray(entry["r"], dtype=float).reshape(3)
    return link_parameters(float(entry["m"]), rotation.T @ com, rotation.T @ inertia @ rotation)
