"""``identified.xml``: the identified robot as an MJCF (MuJoCo) model, for simulation users.

URDF cannot hold every identified term (``urdf_omits``): a joint's ``<dynamics>`` has ``damping`` (viscous
``fv``) and ``friction`` (Coulomb ``fc``) but no rotor inertia (armature ``Ia``, Sousa & Cortesão 2014
eq. 27), no torque offset (``fo``) and no sigmoid friction (Gaz et al. 2019 eq. 25). MJCF holds the armature
too: the model is the identified URDF compiled by MuJoCo (inertials as written, no geometry, locked joints
fixed where they were locked) with each identified joint's ``armature``, ``damping`` and ``frictionloss``.
Its inverse dynamics (``mj_inverse``) reproduces the identified joint torques but for the offset and the
sigmoid (which stay in ``parameters.yaml``, named in ``report.json``'s ``urdf_omits``) and for MuJoCo's
friction-loss constraint near zero velocity (made nearly hard: ``FRICTION_IMPEDANCE``).
"""

from __future__ import annotations

import numpy as np

from dynid_ros.errors import ModelError
from dynid_ros.robot.model import RobotModel
from dynid_ros.robot.parameters import ParameterLayout
from dynid_ros.robot.urdf_source import fix_joints, parse_urdf, to_text, without_geometry

MJCF_TERMS = {"Ia": "armature", "fv": "damping", "fc": "frictionloss"}
"""Identified joint term -> MJCF joint attribute."""
URDF_TERMS = ("fv", "fc")
"""Joint terms a URDF ``<dynamics>`` holds (``damping``, ``friction``)."""
TERM_NAMES = {"Ia": "armature", "fo": "offset", "fv": "viscous", "fc": "coulomb"}

FRICTION_IMPEDANCE = (0.99, 0.999, 0.001, 0.5, 2.0)
"""``solimp`` of MuJoCo's friction-loss constraints (with ``solref`` time constant ``2 h``): nearly hard, so the
friction torque is ``-fc sign(q')`` as soon as a joint slides (the simulator's and ``identified.xml``'s)."""


def urdf_omits(layout: ParameterLayout, delta: np.ndarray, sigmoid: np.ndarray | None = None) -> dict[str, dict]:
    """Per joint, the identified terms a URDF cannot hold and their values: ``armature``, ``offset`` and
    ``sigmoid`` (``[phi1, phi2, phi3]``, Gaz et al. 2019 eq. 25); joints with none are left out."""
    out: dict[str, dict] = {}
    for j, joint in enumerate(layout.joints):
        terms = {TERM_NAMES[t]: float(delta[layout.joint_index(j, t)]) for t in layout.joint_terms
                 if t not in URDF_TERMS}
        if sigmoid is not None:
            terms["sigmoid"] = [float(v) for v in sigmoid[j]]
        if terms:
            out[joint] = terms
    return out


def identified_mjcf(model: RobotModel, urdf_text: str, layout: ParameterLayout, delta: np.ndarray) -> str:
    """The MJCF text of the identified URDF ``urdf_text`` with every identified joint's ``armature``,
    ``damping`` and ``frictionloss`` (module docstring)."""
    import mujoco  # MuJoCo's URDF import and MjSpec

    root = fix_joints(without_geometry(parse_urdf(urdf_text, "the identified URDF")), dict(model.locked_positions))
    try:
        spec = mujoco.MjSpec.from_string(to_text(root))
        for j, joint in enumerate(layout.joints):
            element = spec.joint(joint)
            if element is None:
                raise ModelError(f"joint {joint} is not in MuJoCo's model of the identified URDF")
            for term, attribute in MJCF_TERMS.items():
                value = float(delta[layout.joint_index(j, term)]) if term in layout.joint_terms else 0.0
                value = max(value, 0.0)
                if attribute == "damping":  # MuJoCo's damping polynomial: [linear, quadratic, cubic]
                    element.damping = [value, 0.0, 0.0]
                else:
                    setattr(element, attribute, value)
        for element in spec.joints:  # a nearly hard friction-loss constraint: -fc sign(q') once the joint slides
            element.solref_friction = [2.0 * spec.option.timestep, 1.0]
            element.solimp_friction = list(FRICTION_IMPEDANCE)
        spec.compile()
        return spec.to_xml()
    except ValueError as err:
        raise ModelError(f"MuJoCo cannot compile the identified URDF: {str(err).strip().splitlines()[-1]}") from err
