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
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from dynid_ros.errors import ModelError
from dynid_ros.robot.model import RobotModel
from dynid_ros.robot.parameters import TRIANGLE_MARGIN, ParameterLayout, inertia_about_com
from dynid_ros.robot.urdf_document import read_urdf

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
    document = read_urdf(model.urdf_xml, model.urdf_path or "the URDF") if model.urdf_xml else None
    out: dict[str, np.ndarray] = {}
    merged: dict[str, list[str]] = {}
    for k, link in enumerate(layout.links):
        body = np.asarray(delta[layout.link_slice(k)], dtype=float)
        frame_id = model.link_frames.get(link)
        if frame_id is None or document is None:
            out[link] = body
            continue
        frame = pm.frames[frame_id]
        own = frame.placement.act(document.link_inertia(link)).toDynamicParameters()
        others = pm.inertias[k + 1].toDynamicParameters() - own
        in_joint = body - others
        attached = [f.name for i, f in enumerate(pm.frames) if i != frame_id and f.parentJoint == k + 1
                    and f.type == pin.FrameType.BODY and _has_inertial(document, f.name)]
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


def _has_inertial(document: object, link: str) -> bool:
    element = document.link(link)
    return element is not None and element.find("inertial") is not None


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
    warnings: list[str] = []
    per_link, merged = link_inertial_parameters(model, layout, delta)
    removed = [other for attached in merged.values() for other in attached]
    for link, attached in merged.items():
        warnings.append(f"link {link}: identified body is lighter than the nominal links fixed to it "
                        f"({', '.join(attached)}); written whole to {link}, their <inertial> removed")
    inertials = {}
    for link, params in per_link.items():
        mass, com, i_com = inertia_about_com(params)
        if mass <= 0:
            raise ModelError(f"identified mass of link {link} is {mass:.4g} kg: not physical, URDF not written")
        written = principal_with_margin(i_com)
        if not np.allclose(written, i_com, rtol=1e-6, atol=1e-12):
            warnings.append(f"link {link}: inertia adjusted to keep a strict triangle-inequality margin")
        inertials[link] = (mass, com, written)
    dynamics = {}
    for j, joint in enumerate(layout.joints):
        dyn = {}
        if "fv" in layout.joint_terms:
            dyn["damping"] = max(float(delta[layout.joint_index(j, "fv")]), 0.0)
        if "fc" in layout.joint_terms:
            dyn["friction"] = max(float(delta[layout.joint_index(j, "fc")]), 0.0)
        dynamics[joint] = dyn
    warnings += write_updated_urdf(model, path, inertials, dynamics, removed,
                                   ["identified by dynid_ros: <inertial> of identified links and joint <dynamics> "
                                    "updated"])
    return warnings


def write_updated_urdf(model: RobotModel, path: Path, inertials: Mapping[str, tuple[float, np.ndarray, np.ndarray]],
                       dynamics: Mapping[str, Mapping[str, float]], removed: Iterable[str] = (),
                       comments: Sequence[str] = ()) -> list[str]:
    """Write the model's URDF (as the one reader reads it) to ``path`` with new ``<inertial>`` elements
    (``{link: (mass, centre of mass, inertia about it)}``, in the link's frame), new ``<dynamics>`` attributes
    (``{joint: {damping: ..., friction: ...}}``), the ``<inertial>`` of the ``removed`` links taken out, and
    ``comments`` at the top; everything else as it was. Returns warnings (a link not in the URDF)."""
    document = read_urdf(model.urdf_xml, model.urdf_path or "the source URDF")
    root = _without_comments(document.copy())  # a comment of the source (a truth URDF's marker) is not about this file
    links = {el.get("name"): el for el in root.findall("link")}
    joints = {el.get("name"): el for el in root.findall("joint")}
    warnings = []
    for other in removed:
        inertial = links[other].find("inertial") if other in links else None
        if inertial is not None:
            links[other].remove(inertial)
    for link, (mass, com, inertia) in inertials.items():
        if link not in links:
            warnings.append(f"link {link} not in the URDF: not written")
            continue
        _set_inertial(links[link], mass, com, inertia)
    for joint, values in dynamics.items():
        element = joints.get(joint)
        if element is None or not values:
            continue
        node = element.find("dynamics")
        if node is None:
            node = ET.SubElement(element, "dynamics")
        for key, value in values.items():
            node.set(key, _fmt(value))
    ET.indent(root, space="  ")
    comments = [*comments, *(f"read as urdfdom reads it: {note}" for note in document.notes)]
    path.write_text('<?xml version="1.0"?>\n' + "".join(f"<!-- {c} -->\n" for c in comments)
                    + ET.tostring(root, encoding="unicode") + "\n")
    return warnings


def _without_comments(root: ET.Element) -> ET.Element:
    for parent in list(root.iter()):
        for child in list(parent):
            if child.tag is ET.Comment:
                parent.remove(child)
    return root


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


def attached_links(model: RobotModel, link: str) -> list[str]:
    """The URDF links with mass rigidly attached to the identified link ``link`` (fixed children, links behind locked
    joints; e.g. a hand and its fingers on the last link): the parts :func:`attached_parameters` holds, in model
    order; empty without a URDF."""
    import pinocchio as pin

    frame_id = model.link_frames.get(link)
    if not model.urdf_xml or frame_id is None:
        return []
    pm, document = model.pin_model, read_urdf(model.urdf_xml, model.urdf_path or "the URDF")
    joint = pm.frames[frame_id].parentJoint
    return [f.name for f in pm.frames if f.type == pin.FrameType.BODY and f.parentJoint == joint
            and f.name != link and document.link_inertia(f.name).mass > 0]


def attached_parameters(model: RobotModel, layout: ParameterLayout) -> np.ndarray:
    """Nominal parameters of the parts rigidly attached to each identified link (fixed child links,
    links behind locked joints), in ``layout`` (joint terms zero): the identified body minus these is
    what :func:`link_inertial_parameters` writes to the link, so estimators keep that difference physical."""
    out = np.zeros(layout.n_parameters)
    if not model.urdf_xml:
        return out
    pm, document = model.pin_model, read_urdf(model.urdf_xml, model.urdf_path or "the URDF")
    for k, link in enumerate(layout.links):
        frame_id = model.link_frames.get(link)
        if frame_id is not None:
            own = pm.frames[frame_id].placement.act(document.link_inertia(link)).toDynamicParameters()
            out[layout.link_slice(k)] = pm.inertias[k + 1].toDynamicParameters() - own
    return out
