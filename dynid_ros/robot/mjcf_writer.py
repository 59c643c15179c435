"""``identified.xml``: the identified robot as an MJCF (MuJoCo) model, for simulation users.

URDF cannot hold every identified term (``urdf_omits``): a joint's ``<dynamics>`` has ``damping`` (viscous
``fv``) and ``friction`` (Coulomb ``fc``) but no rotor inertia (armature ``Ia``, Sousa & Cortesão 2014
eq. 27), no torque offset (``fo``) and no sigmoid friction (Gaz et al. 2019 eq. 25). MJCF holds the armature
too: the model is the identified URDF converted as the simulator converts a URDF (:mod:`dynid_ros.robot.mujoco_spec`:
one body per moving joint with the composite inertia of the links fixed to it, the fixed links as sites, no
geometry, locked joints fixed where they were locked) with each identified joint's ``armature``, ``damping`` and
``frictionloss``.
Its inverse dynamics (``mj_inverse``) reproduces the identified joint torques but for the offset and the
sigmoid (which stay in ``parameters.yaml``, named in ``report.json``'s ``urdf_omits``) and for MuJoCo's
friction-loss constraint near zero velocity (made nearly hard: ``FRICTION_IMPEDANCE``).
"""

from __future__ import annotations

import numpy as np

from dynid_ros.errors import ModelError
from dynid_ros.robot.model import RobotModel, load_model
from dynid_ros.robot.mujoco_spec import compile_spec, mujoco_spec
from dynid_ros.robot.parameters import ParameterLayout

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
    """The MJCF text of the identified URDF ``urdf_text`` (of ``model``'s robot) with every identified joint's
    ``armature``, ``damping`` and ``frictionloss`` (module docstring); ModelError with MuJoCo's reason when MuJoCo
    refuses the identified robot (e.g. an inertia that is not physical, from an unconstrained estimate)."""
    identified = load_model(urdf_text=urdf_text, urdf="the identified URDF", joints=list(model.joints),
                            locked_at=dict(model.locked_positions), quiet=True)
    spec = mujoco_spec(identified)
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
    compile_spec(spec, "MuJoCo cannot compile the identified URDF")
    return spec.to_xml()
