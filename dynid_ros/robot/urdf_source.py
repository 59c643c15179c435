"""URDF text as published: read a file or an expanded ``.urdf.xacro`` (with arguments), resolve or drop meshes.

A real robot description has ``<visual>``/``<collision>`` meshes named by ``package://``, ``file://`` or
relative URIs, mimic joints and gripper joints. Dynamics need none of the meshes: pinocchio reads only
kinematics and inertials, and :mod:`dynid_ros.sim.mujoco_model` compiles the URDF without its geometry
(:func:`without_geometry`), so a mesh that cannot be found never stops a model from loading.
Relative mesh URIs of a file are made absolute (:func:`resolve_relative_meshes`), so a URDF written
elsewhere from its text (the identified URDF) still finds them.
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dynid_ros.errors import ConfigError, ModelError

MESH_SCHEMES = ("package://", "file://", "model://", "http://", "https://")
"""URI schemes a mesh ``filename`` may carry; anything else is a path relative to the URDF file."""

SIMULATION_FREE_ELEMENTS = ("gazebo", "transmission", "ros2_control")
"""Top-level URDF extensions that describe other software, dropped for MuJoCo."""


@dataclass(frozen=True)
class Mimic:
    """``<mimic joint= multiplier= offset=>`` of a joint: ``q = multiplier * q_leader + offset``."""

    leader: str
    multiplier: float = 1.0
    offset: float = 0.0


def parse_xacro_args(items: Sequence[str] | None) -> dict[str, str]:
    """``["name:=value", ...]`` (``--xacro-arg``, the ``xacro_args`` node parameter) as a mapping."""
    out: dict[str, str] = {}
    for item in items or ():
        name, sep, value = str(item).partition(":=")
        if not sep or not name.strip():
            raise ConfigError(f"xacro argument {item!r}: expected name:=value")
        out[name.strip()] = value
    return out


def read_urdf_text(path: str | Path, xacro_args: Mapping[str, str] | Sequence[str] | None = None) -> str:
    """The URDF text of ``path``: ``.xacro`` files expanded with ``xacro_args``; relative mesh URIs made absolute."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"{path}: no such URDF file")
    args = dict(xacro_args) if isinstance(xacro_args, Mapping) else parse_xacro_args(xacro_args)
    if path.suffix == ".xacro":
        text = _expand_xacro(path, args)
    else:
        if args:
            raise ConfigError(f"{path}: xacro arguments given ({', '.join(args)}) but the file is not a .xacro")
        text = path.read_text(encoding="utf-8", errors="replace")
    if "<robot" not in text:
        raise ModelError(f"{path}: not a URDF (no <robot> element)")
    return resolve_relative_meshes(text, path.resolve().parent, path)


def _expand_xacro(path: Path, args: dict[str, str]) -> str:
    try:
        import xacro
    except ImportError as err:  # pragma: no cover - packaging problem
        raise ModelError(f"{path}: expanding a .xacro needs the xacro package (pip install xacro)") from err
    try:
        return xacro.process_file(str(path), mappings=args).toxml()
    except Exception as err:  # xacro raises many types, including SystemExit-free XacroException
        message = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelError(f"{path}: xacro failed: {message}") from err


def parse_urdf(text: str, source: str | Path = "robot_description") -> ET.Element:
    """The ``<robot>`` element of ``text``; ModelError naming ``source`` when it is not URDF XML."""
    try:
        root = ET.fromstring(text, parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)))
    except ET.ParseError as err:
        raise ModelError(f"{source}: not valid XML: {err}") from err
    if root.tag != "robot":
        raise ModelError(f"{source}: not a URDF (root element <{root.tag}>, expected <robot>)")
    return root


def resolve_relative_meshes(text: str, directory: Path, source: str | Path = "robot_description") -> str:
    """``text`` with every relative mesh ``filename`` made an absolute ``file://`` URI against ``directory``.

    ``package://``, ``file://`` and other URIs are kept: they do not depend on where the URDF is written.
    The text is returned unchanged when it has no relative mesh URI.
    """
    root = parse_urdf(text, source)
    changed = False
    for mesh in root.iter("mesh"):
        filename = mesh.get("filename", "")
        if filename and not filename.startswith(MESH_SCHEMES) and not Path(filename).is_absolute():
            mesh.set("filename", "file://" + str((directory / filename).resolve()))
            changed = True
    return _to_text(root, text) if changed else text


def resolve_mesh_uri(uri: str, urdf_directory: Path | None = None) -> Path | None:
    """The file a mesh URI names, or None when it cannot be found here (meshes are never required).

    ``package://pkg/rest`` is looked up in the ament index, then ``ROS_PACKAGE_PATH`` (a directory
    named ``pkg`` in or under one of its entries), then the ancestors of ``urdf_directory``.
    """
    if uri.startswith("file://"):
        path = Path(uri[len("file://"):])
    elif uri.startswith("package://"):
        package, _, rest = uri[len("package://"):].partition("/")
        path = next((root / rest for root in _package_roots(package, urdf_directory) if (root / rest).exists()), None)
    elif uri.startswith(MESH_SCHEMES):
        return None
    else:
        path = (urdf_directory or Path.cwd()) / uri
    return path if path is not None and path.is_file() else None


def _package_roots(package: str, urdf_directory: Path | None) -> list[Path]:
    roots: list[Path] = []
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

        try:
            roots.append(Path(get_package_share_directory(package)))
        except (PackageNotFoundError, ValueError, LookupError, OSError):  # OSError: no AMENT_PREFIX_PATH
            pass
    except ImportError:
        pass
    for entry in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep):
        if entry:
            roots += [Path(entry) / package, Path(entry)] if Path(entry).name != package else [Path(entry)]
    if urdf_directory is not None:
        roots += [parent for parent in [urdf_directory, *urdf_directory.parents] if parent.name == package]
        roots += [parent / package for parent in [urdf_directory, *urdf_directory.parents]]
    return roots


def mimic_joints(root: ET.Element) -> dict[str, Mimic]:
    """``{follower: Mimic}`` of every non-fixed joint with a ``<mimic>`` element."""
    out = {}
    for joint in root.findall("joint"):
        mimic = joint.find("mimic")
        if mimic is None or joint.get("type") == "fixed":
            continue
        try:
            out[joint.get("name", "")] = Mimic(mimic.get("joint", ""), float(mimic.get("multiplier", 1.0)),
                                               float(mimic.get("offset", 0.0)))
        except ValueError as err:
            raise ModelError(f"joint {joint.get('name')}: <mimic> multiplier/offset is not a number") from err
    return out


def without_geometry(root: ET.Element) -> ET.Element:
    """``root`` (changed in place) without ``<visual>``, ``<collision>`` and the top-level simulator extensions."""
    for link in root.findall("link"):
        for tag in ("visual", "collision"):
            for element in link.findall(tag):
                link.remove(element)
    for tag in SIMULATION_FREE_ELEMENTS:
        for element in root.findall(tag):
            root.remove(element)
    return root


def fix_joints(root: ET.Element, positions: Mapping[str, float]) -> ET.Element:
    """``root`` (changed in place) with each joint of ``positions`` made ``fixed`` at that position.

    The joint's ``<origin>`` becomes ``origin * motion(axis, q)``; a ``<mimic>`` that refers to a fixed
    joint is dropped from its follower (which must then be fixed too, or is independent).
    """
    import pinocchio as pin

    fixed = set()
    for joint in root.findall("joint"):
        name = joint.get("name", "")
        if name not in positions:
            continue
        placement = _origin(joint) * _motion(joint, float(positions[name]))
        for tag in ("axis", "limit", "mimic", "dynamics", "safety_controller", "calibration"):
            for element in joint.findall(tag):
                joint.remove(element)
        origin = joint.find("origin")
        if origin is None:
            origin = ET.SubElement(joint, "origin")
        origin.set("xyz", " ".join(repr(float(v)) for v in placement.translation))
        origin.set("rpy", " ".join(repr(float(v)) for v in pin.rpy.matrixToRpy(placement.rotation)))
        joint.set("type", "fixed")
        fixed.add(name)
    for joint in root.findall("joint"):
        mimic = joint.find("mimic")
        if mimic is not None and mimic.get("joint") in fixed:
            joint.remove(mimic)
    return root


def _origin(joint: ET.Element) -> object:
    import pinocchio as pin

    origin = joint.find("origin")
    xyz = _floats(origin.get("xyz", "0 0 0") if origin is not None else "0 0 0", joint)
    rpy = _floats(origin.get("rpy", "0 0 0") if origin is not None else "0 0 0", joint)
    return pin.SE3(pin.rpy.rpyToMatrix(*rpy), np.array(xyz))


def _motion(joint: ET.Element, q: float) -> object:
    import pinocchio as pin

    axis_element = joint.find("axis")
    axis = np.array(_floats(axis_element.get("xyz", "1 0 0") if axis_element is not None else "1 0 0", joint))
    axis = axis / max(np.linalg.norm(axis), 1e-300)
    if q == 0.0 or joint.get("type") in ("fixed", "floating", "planar"):
        return pin.SE3.Identity()
    if joint.get("type") == "prismatic":
        return pin.SE3(np.eye(3), q * axis)
    return pin.SE3(pin.AngleAxis(q, axis).matrix(), np.zeros(3))


def _floats(text: str, joint: ET.Element) -> list[float]:
    try:
        values = [float(v) for v in text.split()]
    except ValueError as err:
        raise ModelError(f"joint {joint.get('name')}: {text!r} is not three numbers") from err
    if len(values) != 3 or not all(math.isfinite(v) for v in values):
        raise ModelError(f"joint {joint.get('name')}: {text!r} is not three numbers")
    return values


def to_text(root: ET.Element) -> str:
    """The URDF text of ``root``."""
    return ET.tostring(root, encoding="unicode")


def _to_text(root: ET.Element, original: str) -> str:
    declaration = '<?xml version="1.0"?>\n' if original.lstrip().startswith("<?xml") else ""
    return declaration + to_text(root)
