"""The one URDF reader: a robot description read once, checked, and cleaned the way urdfdom reads it.

Every module that reads a URDF reads it here: the model loader (:mod:`dynid_ros.robot.model`), the URDF and MJCF
writers, the simulator's truth, the launch helpers. Where the text comes from (a file, a ``.urdf.xacro`` with its
arguments, a ``robot_description``) is :mod:`dynid_ros.robot.urdf_source`.

What the reader does, and why:

- **Repeated elements** that urdfdom reads once (``TiXmlElement::FirstChildElement``: a joint's ``<origin>``,
  ``<axis>``, ``<limit>``..., a link's ``<inertial>``, an inertial's ``<mass>``...): urdfdom and pinocchio take the
  first and ignore the others, MuJoCo refuses the file ("repeated element"). Published descriptions have them
  (a xacro macro and its caller both writing an ``<origin>``). The reader keeps the first, as urdfdom, and says so
  (:attr:`UrdfDocument.notes`), so every consumer (pinocchio, MuJoCo, the identified URDF) sees one robot.
- **What urdfdom accepts silently but reads wrongly** is refused with one line naming the link or joint: an
  ``<inertial>`` whose ``<mass>`` or ``<inertia>`` is missing or not a finite number (urdfdom prints an error and
  goes on with a massless link: a wrong robot, not a warning), a negative mass, a link or joint defined twice, a
  joint whose parent or child is not a link, a link with two parents, an unknown joint type.
- Nothing else is changed: ``<visual>``, ``<collision>`` and their meshes, ``<gazebo>``, ``<transmission>``,
  ``<ros2_control>``, comments stay in :meth:`UrdfDocument.text` (collision checking needs the geometry;
  the identified URDF keeps what the user's file had). :meth:`UrdfDocument.dynamics_text` is the same robot
  without geometry and without the elements of other software: what a dynamics engine needs.
"""

from __future__ import annotations

import copy
import logging
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from dynid_ros.errors import ModelError

LOG = logging.getLogger(__name__)

READ_ONCE = {
    "joint": ("origin", "parent", "child", "axis", "calibration", "dynamics", "limit", "mimic", "safety_controller"),
    "link": ("inertial",),
    "inertial": ("origin", "mass", "inertia"),
    "visual": ("origin", "geometry", "material"),
    "collision": ("origin", "geometry"),
}
"""Children urdfdom reads once, by element: the first is read, a repeat is ignored (urdf_parser ``link.cpp``,
``joint.cpp``: ``FirstChildElement``)."""

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
"""The joint types of the URDF specification (urdfdom refuses any other)."""

GEOMETRY_ELEMENTS = ("visual", "collision")
SOFTWARE_ELEMENTS = ("gazebo", "transmission", "ros2_control", "mujoco")
"""Top-level elements that configure other software (a simulator, ros2_control, MuJoCo's compiler); no dynamics
engine of dynid_ros reads them. ``<mujoco>`` would change how MuJoCo compiles the robot (``balanceinertia``
alters inertias), so it never reaches MuJoCo."""

INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


@dataclass(frozen=True)
class Mimic:
    """``<mimic joint= multiplier= offset=>`` of a joint: ``q = multiplier * q_leader + offset``."""

    leader: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class UrdfDocument:
    """A URDF read by :func:`read_urdf`: the ``<robot>`` element, cleaned (module docstring); do not change
    :attr:`root` in place (documents are shared): change a :meth:`copy`.

    Attributes:
        root: the ``<robot>`` element.
        source: what the text is (a file, ``robot_description``), for messages.
        notes: one line per clean-up (which element of which link or joint was a repeat).
    """

    root: ET.Element
    source: str
    notes: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The robot's name (``<robot name=>``; empty when the file has none)."""
        return self.root.get("name", "")

    def copy(self) -> ET.Element:
        """A deep copy of the ``<robot>`` element, to change and write."""
        return copy.deepcopy(self.root)

    def text(self) -> str:
        """The whole cleaned description (geometry, meshes and extensions kept)."""
        return to_text(self.root)

    def dynamics_text(self) -> str:
        """The cleaned description without ``<visual>``, ``<collision>`` and the elements of other software."""
        return to_text(without_geometry(self.copy()))

    def links(self) -> list[ET.Element]:
        return self.root.findall("link")

    def joints(self) -> list[ET.Element]:
        return self.root.findall("joint")

    def link(self, name: str) -> ET.Element | None:
        return next((el for el in self.root.findall("link") if el.get("name") == name), None)

    def joint(self, name: str) -> ET.Element | None:
        return next((el for el in self.root.findall("joint") if el.get("name") == name), None)

    def child_link(self, joint: str) -> str | None:
        """The child link of ``joint``; None when there is no such joint."""
        element = self.joint(joint)
        return None if element is None else element.find("child").get("link")

    def mimic_joints(self) -> dict[str, Mimic]:
        """``{follower: Mimic}`` of every non-fixed joint with a ``<mimic>`` element."""
        out = {}
        for joint in self.root.findall("joint"):
            mimic = joint.find("mimic")
            if mimic is None or joint.get("type") == "fixed":
                continue
            where = f"{self.source}: invalid URDF: joint {joint.get('name')} <mimic>"
            out[joint.get("name", "")] = Mimic(mimic.get("joint", ""), _number(mimic.get("multiplier", "1"), where),
                                               _number(mimic.get("offset", "0"), where))
        return out

    def link_inertia(self, link: str) -> object:
        """The ``<inertial>`` of ``link`` as a ``pinocchio.Inertia`` in the link's frame (zero without one)."""
        import pinocchio as pin

        element = self.link(link)
        inertial = None if element is None else element.find("inertial")
        if inertial is None:
            return pin.Inertia.Zero()
        mass, lever, rotation, inertia = _inertial_values(inertial, link, self.source)
        return pin.Inertia(mass, lever, rotation @ inertia @ rotation.T)


def read_urdf(text: str, source: str | Path = "robot_description") -> UrdfDocument:
    """The :class:`UrdfDocument` of ``text`` (cached: reading the same text again is free); ModelError naming
    ``source`` and the element when it is not a URDF that every consumer reads the same way."""
    return _read(text, str(source))


def parse_xml(text: str, source: str | Path = "robot_description") -> ET.Element:
    """The ``<robot>`` element of ``text`` as written (comments kept, nothing checked or cleaned: that is
    :func:`read_urdf`); ModelError naming ``source`` when it is not URDF XML."""
    try:
        root = ET.fromstring(text, parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)))
    except ET.ParseError as err:
        raise ModelError(f"{source}: not valid XML: {err}") from err
    if root.tag != "robot":
        raise ModelError(f"{source}: not a URDF (root element <{root.tag}>, expected <robot>)")
    return root


@lru_cache(maxsize=16)
def _read(text: str, source: str) -> UrdfDocument:
    root = parse_xml(text, source)
    notes = _drop_repeats(root) + _complete_inertias(root)
    _check_names(root, source)
    _check_joints(root, source)
    for link in root.findall("link"):
        inertial = link.find("inertial")
        if inertial is not None:
            _inertial_values(inertial, link.get("name", ""), source)
    for note in notes:
        LOG.warning("%s: %s", source, note)
    return UrdfDocument(root, source, tuple(notes))


def _drop_repeats(root: ET.Element) -> list[str]:
    """Remove every repeat of an element urdfdom reads once (:data:`READ_ONCE`), a link's or joint's own children
    first, then those of the elements kept; one note per repeated element."""
    notes = []
    for owner in [*root.findall("link"), *root.findall("joint")]:
        notes += _drop_repeated_children(owner, f"{owner.tag} {owner.get('name')}")
        for tag in ("inertial", "visual", "collision"):
            for element in owner.findall(tag):
                notes += _drop_repeated_children(element, f"{owner.tag} {owner.get('name')} <{tag}>")
    return notes


def _drop_repeated_children(element: ET.Element, where: str) -> list[str]:
    notes = []
    for tag in READ_ONCE.get(element.tag, ()):
        found = element.findall(tag)
        for extra in found[1:]:
            element.remove(extra)
        if len(found) > 1:
            notes.append(f"{where} has {len(found)} <{tag}> elements: the first is used (as urdfdom and pinocchio "
                         "read it), the others are dropped")
    return notes


def _complete_inertias(root: ET.Element) -> list[str]:
    """Set each missing off-diagonal of an ``<inertia>`` to 0 (urdfdom would read the whole inertia as zero)."""
    notes = []
    for link in root.findall("link"):
        element = link.find("inertial/inertia")
        missing = [key for key in ("ixy", "ixz", "iyz") if element is not None and element.get(key) is None]
        for key in missing:
            element.set(key, "0")
        if missing:
            notes.append(f"link {link.get('name')} <inertia> has no {', '.join(missing)}: read as 0 (urdfdom would "
                         "read the whole inertia as zero)")
    return notes


def _check_names(root: ET.Element, source: str) -> None:
    for tag in ("link", "joint"):
        seen: set[str] = set()
        for element in root.findall(tag):
            name = element.get("name")
            if not name:
                raise ModelError(f"{source}: invalid URDF: a <{tag}> has no name")
            if name in seen:
                raise ModelError(f"{source}: invalid URDF: {tag} {name!r} is defined twice")
            seen.add(name)


def _check_joints(root: ET.Element, source: str) -> None:
    links = {link.get("name") for link in root.findall("link")}
    parents: dict[str, str] = {}
    for joint in root.findall("joint"):
        name = joint.get("name")
        kind = joint.get("type")
        if kind not in JOINT_TYPES:
            raise ModelError(f"{source}: invalid URDF: joint {name}: type {kind!r} is not a URDF joint type "
                             f"({', '.join(JOINT_TYPES)})")
        for role in ("parent", "child"):
            element = joint.find(role)
            link = None if element is None else element.get("link")
            if link is None:
                raise ModelError(f"{source}: invalid URDF: joint {name} has no <{role} link=...>")
            if link not in links:
                raise ModelError(f"{source}: invalid URDF: joint {name}: {role} link {link!r} is not a link of the "
                                 "robot")
        child = joint.find("child").get("link")
        if child in parents:
            raise ModelError(f"{source}: invalid URDF: link {child!r} has two parent joints ({parents[child]}, {name})")
        parents[child] = name
        for tag in ("origin", "axis"):
            element = joint.find(tag)
            if element is not None:
                for key in ("xyz", "rpy") if tag == "origin" else ("xyz",):
                    if element.get(key) is not None:
                        _vector(element.get(key), f"{source}: invalid URDF: joint {name} <{tag} {key}>")


def _inertial_values(inertial: ET.Element, link: str, source: str
                     ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """``(mass, centre of mass, rotation of the inertia frame, inertia about the CoM in that frame)`` of an
    ``<inertial>``; ModelError naming the link when urdfdom would not read it as written."""
    import pinocchio as pin

    where = f"{source}: invalid URDF: link {link}"
    mass_element = inertial.find("mass")
    if mass_element is None or mass_element.get("value") is None:
        raise ModelError(f"{where}: <inertial> without <mass value=...> (urdfdom would read the link as massless)")
    mass = _number(mass_element.get("value"), f"{where} <mass value>")
    if mass < 0:
        raise ModelError(f"{where}: mass {mass:g} kg is negative")
    inertia_element = inertial.find("inertia")
    if inertia_element is None:
        raise ModelError(f"{where}: <inertial> without <inertia> (urdfdom would read the link as massless)")
    missing = [key for key in ("ixx", "iyy", "izz") if inertia_element.get(key) is None]
    if missing:
        raise ModelError(f"{where}: <inertia> without {', '.join(missing)} (urdfdom would read a zero inertia)")
    values = {key: _number(inertia_element.get(key, "0"), f"{where} <inertia {key}>") for key in INERTIA_KEYS}
    origin = inertial.find("origin")
    xyz = _vector(origin.get("xyz", "0 0 0") if origin is not None else "0 0 0", f"{where} <inertial><origin xyz>")
    rpy = _vector(origin.get("rpy", "0 0 0") if origin is not None else "0 0 0", f"{where} <inertial><origin rpy>")
    inertia = np.array([[values["ixx"], values["ixy"], values["ixz"]], [values["ixy"], values["iyy"], values["iyz"]],
                        [values["ixz"], values["iyz"], values["izz"]]])
    return mass, xyz, pin.rpy.rpyToMatrix(*rpy), inertia


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError) as err:
        raise ModelError(f"{what}: {text!r} is not a number") from err
    if not math.isfinite(value):
        raise ModelError(f"{what}: {text!r} is not a finite number")
    return value


def _vector(text: str, what: str) -> np.ndarray:
    parts = str(text).split()
    if len(parts) != 3:
        raise ModelError(f"{what}: {text!r} is not three numbers")
    return np.array([_number(p, what) for p in parts])


def without_geometry(root: ET.Element) -> ET.Element:
    """``root`` (changed in place) without ``<visual>``, ``<collision>`` and :data:`SOFTWARE_ELEMENTS`."""
    for link in root.findall("link"):
        for tag in GEOMETRY_ELEMENTS:
            for element in link.findall(tag):
                link.remove(element)
    for tag in SOFTWARE_ELEMENTS:
        for element in root.findall(tag):
            root.remove(element)
    return root


def to_text(root: ET.Element) -> str:
    """The URDF text of a ``<robot>`` element."""
    return ET.tostring(root, encoding="unicode")
