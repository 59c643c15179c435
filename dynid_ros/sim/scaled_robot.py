"""A geometrically similar copy of a robot, smaller or larger: the same joint motion, another size.

Every length is multiplied by ``length`` (joint origins, centres of mass) and every mass by ``mass``; inertias scale
as mass times length squared; effort limits as the gravity torque, ``mass * length``; velocity limits (rad/s) are
kept. The shipped excitation runs unchanged on the copy, so robots of very different size can be identified with
the same relative URDF errors. Geometry is dropped (the simulator and the regressor need only
kinematics and inertials).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dynid_ros.errors import ConfigError
from dynid_ros.robot.urdf_document import read_urdf, to_text, without_geometry

INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def _scaled_xyz(element, length: float) -> None:
    origin = element.find("origin")
    if origin is not None and origin.get("xyz"):
        xyz = np.array([float(v) for v in origin.get("xyz").split()]) * length
        origin.set("xyz", " ".join(f"{v:.10g}" for v in xyz))


def scaled_urdf(text: str, length: float, mass: float) -> str:
    """The URDF ``text`` scaled by ``length`` and ``mass`` (module docstring)."""
    if not (length > 0 and mass > 0):
        raise ConfigError(f"scale factors must be > 0, got length {length} and mass {mass}")
    root = without_geometry(read_urdf(text, "the URDF to scale").copy())
    for joint in root.findall("joint"):
        _scaled_xyz(joint, length)
        limit = joint.find("limit")
        if limit is not None and limit.get("effort"):
            limit.set("effort", f"{float(limit.get('effort')) * mass * length:.10g}")
    for link in root.findall("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        _scaled_xyz(inertial, length)
        element = inertial.find("mass")
        if element is not None:
            element.set("value", f"{float(element.get('value')) * mass:.10g}")
        inertia = inertial.find("inertia")
        if inertia is not None:
            for key in INERTIA_KEYS:
                if inertia.get(key) is not None:
                    inertia.set(key, f"{float(inertia.get(key)) * mass * length**2:.10g}")
    return to_text(root)


def write_scaled_urdf(source: Path, target: Path, length: float, mass: float) -> Path:
    """Write the scaled copy of the URDF file ``source`` to ``target``."""
    target.write_text(scaled_urdf(Path(source).read_text(), length, mass))
    return target
