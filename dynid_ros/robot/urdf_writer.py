"""Write an identified URDF: the source URDF with new ``<inertial>`` and ``<dynamics>``.

Only the links moved by identified joints change (mass, CoM origin, inertia about the CoM);
viscous and Coulomb friction go into the joints' ``<dynamics damping friction>``. Everything
else (kinematics, limits, visuals, other links) is kept as it was.

A body in the model may be several URDF links (fixed children, locked joints). The
identified body minus the nominal inertia of those other links is written to the moved link,
so the URDF's total equals the identified body.

Simulators check the triangle inequality of principal moments (MuJoCo: "inertia must satisfy
A + B >= C"). The written inertia keeps a strict relative margin so that a fully consistent
estimate stays valid after rounding.
"""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from dynid_ros.errors import ModelError
from dynid_ros.robot.model import RobotModel
from dynid_ros.robot.parameters import TRIANGLE_MARGIN, ParameterLayout, inertia_about_com

LOG = logging.getLogger(__name__)


def link_inertial_parameters(model: RobotModel, layout: ParameterLayout, delta: np.ndarray
                             ) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
    """Ten parameters of each identified URDF link, about its own frame, and the links to merge.

    The model's body ``k`` is link ``k`` plus other rigidly attached links; their nominal inertia is
    subtracted from the identified body. When what remains is not a physical body (e.g. an identified
    wrist lighter than the nominal hand fixed to it), the whole identified body goes into link ``k`` and
    the attached links are returned in the second dict (``{link: [attached links]}``) so their
    ``<inertial>`` can be removed: the URDF's total then still equals the identified body.
    """
    import pinocchio as pin

    pm = model.pin_model
    root = ET.fromstring(model.urdf_xml) if model.urdf_xml else None
    out: dict[str, np.ndarray] = {}
    merged: dict[str, list[str]] = {}
    for k, link in enumerate(layout.links):
        body = np.asarray(delta[layout.link_slice(k)], dtype=float)
        frame_id = model.link_frames.get(link)
        if frame_id is None or root is None:
            out[link] = body
            continue
        frame = pm.frames[frame_id]
        own = frame.placement.act(urdf_link_inertia(root, link)).toDynamicParameters()
        others = pm.inertias[k + 1].toDynamicParameters() - own
        in_joint = body - others
        attached = [f.name for i, f in enumerate(pm.frames) if i != frame_id and f.parentJoint == k + 1
                    and f.type == pin.FrameType.BODY and root.find(f"link[@name='{f.name}']/inertial") is not None]
        if attached and not _is_physical(in_joint):
            in_joint = body
            merged[link] = attached
        # express in the link frame (identity placement for URDF child links)
        inertia = pin.Inertia.FromDynamicParameters(in_joint)
        out[link] = frame.placement.actInv(inertia).toDynamicParameters()
    return out, merged


def _is_physical(link_parameters: np.ndarray) -> bool:
    """Positive mass and a positive definite inertia about the CoM that satisfies the triangle inequality."""
    mass, _, i_com = inertia_about_com(link_parameters)
    if mass <= 0:
        return False
    values = np.linalg.eigvalsh(0.5 * (i_com + i_com.T))
    return bool(values[0] > 0 and values[0] + values[1] >= values[2])


def urdf_link_inertia(root: ET.Element, link: str):
    """The ``<inertial>`` of one URDF link as a ``pinocchio.Inertia`` in the link frame."""
    import pinocchio as pin

    element = root.find(f"link[@name='{link}']/inertial")
    if element is None:
        return pin.Inertia.Zero()
    origin = element.find("origin")
    xyz = np.array([float(v) for v in (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split()])
    rpy = np.array([float(v) for v in (origin.get("rpy", "0 0 0") if origin is not None else "0 0 0").split()])
    mass = float(element.find("mass").get("value"))
    i = element.find("inertia")
    get = (lambda key: float(i.get(key, 0.0)))  # noqa: E731
    inertia = np.array([[get("ixx"), get("ixy"), get("ixz")], [get("ixy"), get("iyy"), get("iyz")],
                        [get("ixz"), get("iyz"), get("izz")]])
    rot = pin.rpy.rpyToMatrix(*rpy)
    return pin.Inertia(mass, xyz, rot @ inertia @ rot.T)


def principal_with_margin(inertia_com: np.ndarray, margin: float = TRIANGLE_MARGIN) -> np.ndarray:
    """The inertia about the CoM with principal moments nudged to satisfy, strictly,
    ``A + B >= (1 + margin) C`` and ``A > margin * trace``. Unchanged when already satisfied."""
    sym = 0.5 * (inertia_com + inertia_com.T)
    values, vectors = np.linalg.eigh(sym)
    trace = max(float(values.sum()), 1e-12)
    fixed = np.maximum(values, margin * trace)
    for _ in range(3):
        order = np.argsort(fixed)
        a, b, c = fixed[order]
        if a + b < (1.0 + margin) * c:
            deficit = (1.0 + margin) * c - (a + b)
            fixed[order[0]] += 0.5 * deficit + 1e-15
            fixed[order[1]] += 0.5 * deficit + 1e-15
    if np.allclose(fixed, values, rtol=0, atol=0):
        return sym
    return vectors @ np.diag(fixed) @ vectors.T


def write_identified_urdf(model: RobotModel, layout: ParameterLayout, delta: np.ndarray, path: Path) -> list[str]:
    """Write the identified URDF to ``path``; returns warnings (e.g. adjusted inertias)."""
    if model.urdf_xml is None:
        raise ModelError("the robot was given as a DH table: there is no URDF to update (use --urdf)")
    try:
        root = ET.fromstring(model.urdf_xml)
    except ET.ParseError as err:
        raise ModelError(f"cannot parse the source URDF: {err}") from err
    warnings: list[str] = []
    links = {el.get("name"): el for el in root.findall("link")}
    joints = {el.get("name"): el for el in root.findall("joint")}
    per_link, merged = link_inertial_parameters(model, layout, delta)
    for link, attached in merged.items():
        for other in attached:
            inertial = links[other].find("inertial") if other in links else None
            if inertial is not None:
                links[other].remove(inertial)
        warnings.append(f"link {link}: identified body is lighter than the nominal links fixed to it "
                        f"({', '.join(attached)}); written whole to {link}, their <inertial> removed")
    for link, params in per_link.items():
        element = links.get(link)
        if element is None:
            warnings.append(f"link {link} not in the URDF: not written")
            continue
        mass, com, i_com = inertia_about_com(params)
        if mass <= 0:
            raise ModelError(f"identified mass of link {link} is {mass:.4g} kg: not physical, URDF not written")
        written = principal_with_margin(i_com)
        if not np.allclose(written, i_com, rtol=1e-6, atol=1e-12):
            warnings.append(f"link {link}: inertia adjusted to keep a strict triangle-inequality margin")
        _set_inertial(element, mass, com, written)
    for j, joint in enumerate(layout.joints):
        element = joints.get(joint)
        if element is None:
            continue
        dyn = {}
        if "fv" in layout.joint_terms:
            dyn["damping"] = max(float(delta[layout.joint_index(j, "fv")]), 0.0)
        if "fc" in layout.joint_terms:
            dyn["friction"] = max(float(delta[layout.joint_index(j, "fc")]), 0.0)
        if dyn:
            node = element.find("dynamics")
            if node is None:
                node = ET.SubElement(element, "dynamics")
            for key, value in dyn.items():
                node.set(key, _fmt(value))
    ET.indent(root, space="  ")
    text = ET.tostring(root, encoding="unicode")
    path.write_text('<?xml version="1.0"?>\n<!-- identified by dynid_ros: <inertial> of identified links and joint '
                    '<dynamics> updated -->\n' + text + "\n")
    return warnings


def _fmt(value: float) -> str:
    return f"{value:.10g}"


def _set_inertial(link: ET.Element, mass: float, com: np.ndarray, inertia: np.ndarray) -> None:
    old = link.find("inertial")
    index = list(link).index(old) if old is not None else len(link)
    if old is not None:
        link.remove(old)
    link.insert(index, inertial_element(mass, com, inertia))


def inertial_element(mass: float, com: np.ndarray, inertia: np.ndarray) -> ET.Element:
    """A URDF ``<inertial>``: the CoM as its origin, the inertia about the CoM in the link's axes, 10 significant
    digits (the one writer of ``<inertial>``: identified links, payloads, simulated truths)."""
    inertial = ET.Element("inertial")
    ET.SubElement(inertial, "origin", xyz=" ".join(_fmt(c) for c in com), rpy="0 0 0")
    ET.SubElement(inertial, "mass", value=_fmt(mass))
    ET.SubElement(inertial, "inertia", ixx=_fmt(inertia[0, 0]), ixy=_fmt(inertia[0, 1]), ixz=_fmt(inertia[0, 2]),
                  iyy=_fmt(inertia[1, 1]), iyz=_fmt(inertia[1, 2]), izz=_fmt(inertia[2, 2]))
    return inertial


def attached_parameters(model: RobotModel, layout: ParameterLayout) -> np.ndarray:
    """Nominal parameters of the parts rigidly attached to each identified link (fixed child links,
    links behind locked joints), in ``layout`` (joint terms zero): the identified body minus these is
    what :func:`link_inertial_parameters` writes to the link, so estimators keep that difference physical."""
    out = np.zeros(layout.n_parameters)
    if not model.urdf_xml:
        return out
    pm, root = model.pin_model, ET.fromstring(model.urdf_xml)
    for k, link in enumerate(layout.links):
        frame_id = model.link_frames.get(link)
        if frame_id is not None:
            own = pm.frames[frame_id].placement.act(urdf_link_inertia(root, link)).toDynamicParameters()
            out[layout.link_slice(k)] = pm.inertias[k + 1].toDynamicParameters() - own
    return out
