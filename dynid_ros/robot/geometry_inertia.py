"""Inertials from a link's geometry, for descriptions that give moving links no mass.

Many published industrial arm descriptions (ROS-Industrial's ABB, FANUC and Motoman packages among them) carry
geometry but no ``<inertial>``. The data determine only combinations of the link parameters (the base parameters),
so a method that keeps what the data do not determine at the description's values (FBPE, PBPR) needs a value for
every link. This module gives one: each convex piece of the link's collision geometry (its visual geometry when it
has none; :func:`~dynid_ros.robot.collision.geometry_parts`) as a solid of uniform density :data:`HULL_DENSITY`, its
mass, centre of mass and inertia from the hull's volume integrals (coal's ``computeVolume``, ``computeCOM``,
``computeMomentofInertiaRelatedToCOM``), moved to the body frame and summed with pinocchio's spatial inertia algebra.
Such a value is a guess to within a factor of about :data:`HULL_DENSITY_SPREAD`; it is the prior's centre, never a
claim, and the result says which links it concerns.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pinocchio as pin

from dynid_ros.errors import ModelError
from dynid_ros.robot.collision import geometry_parts
from dynid_ros.robot.model import RobotModel
from dynid_ros.robot.urdf_document import read_urdf, to_text

HULL_DENSITY = 1100.0
"""Mass per convex-hull volume of a robot arm's moving link [kg/m^3]: the median over the 124 moving links with a mass
and geometry of 18 published arm descriptions (example-robot-data's Panda, UR3/5/10, Kinova Gen3, Z1, xArm7, SO-100,
TALOS arm, Baxter, Finger EDU; the URDF zoo's UR5e, FR3, iiwa14, xArm7, WX250s, Sawyer, OpenArm): links are hollow
castings and tubes, far lighter than their solid hull in aluminium (2700). The robots' own medians range from 270 to
2300 (measured by ``benchmarks/hull_density.py``)."""

HULL_DENSITY_SPREAD = 2.1
"""One geometric standard deviation of a link's mass about :data:`HULL_DENSITY` times its hull volume, over the same
links (log-standard deviation 0.76)."""


@dataclass(frozen=True)
class GeometryInertia:
    """A URDF link's inertia from its geometry: hull ``volume`` [m^3], the ``body`` it belongs to (joint index of
    ``pin_model``) and the spatial inertia at :data:`HULL_DENSITY` in the link's frame (``in_link``, what its
    ``<inertial>`` holds) and in the body's joint frame (``in_body``, what ``pin_model.inertias`` adds)."""

    link: str
    body: int
    volume: float
    in_link: pin.Inertia
    in_body: pin.Inertia

    @property
    def mass(self) -> float:
        """The link's mass [kg]."""
        return float(self.in_link.mass)


def geometry_inertias(model: RobotModel, bodies: Sequence[int], links: set[str], *,
                      package_dirs: Sequence[str | Path] = (), density: float = HULL_DENSITY
                      ) -> dict[str, GeometryInertia]:
    """Per URDF link in ``links`` on a body of ``model.pin_model`` in ``bodies`` (joint indices) that has geometry:
    its :class:`GeometryInertia`. Links without geometry are left out; ModelError (from the geometry loader) for a
    mesh not found."""
    kinematic = model.expanded if model.expanded is not None else model.pin_model
    wanted = {kinematic.getJointId(model.pin_model.names[b]): b for b in bodies}
    sums: dict[str, tuple[int, float, pin.Inertia]] = {}
    for part in geometry_parts(model, package_dirs, links):
        body = wanted.get(part.body)
        if body is None or part.link not in links or not model.pin_model.existFrame(part.link, pin.BODY):
            continue
        hull = part.geometry
        volume = float(hull.computeVolume())
        if not (math.isfinite(volume) and volume > 0.0):
            continue
        local = pin.Inertia(density * volume, np.asarray(hull.computeCOM(), dtype=float),
                            density * np.asarray(hull.computeMomentofInertiaRelatedToCOM(), dtype=float))
        placed = pin.SE3(np.asarray(part.rotation, dtype=float), np.asarray(part.translation, dtype=float)).act(local)
        _, total_volume, total = sums.get(part.link, (body, 0.0, pin.Inertia.Zero()))
        sums[part.link] = (body, total_volume + volume, total + placed)
    out = {}
    for link, (body, volume, in_body) in sums.items():
        frame = model.pin_model.frames[model.pin_model.getFrameId(link, pin.BODY)].placement  # in its body's frame
        out[link] = GeometryInertia(link, body, volume, frame.actInv(in_body), in_body)
    return out


def with_geometry_inertials(model: RobotModel, found: dict[str, GeometryInertia]) -> RobotModel:
    """A copy of ``model`` as if its URDF gave each link of ``found`` that inertia: the bodies' inertias (the
    expanded model's too) and the URDF text's ``<inertial>`` elements (what the writers and
    :func:`~dynid_ros.robot.urdf_writer.attached_parameters` read)."""
    document = read_urdf(model.urdf_xml, model.urdf_path or "robot_description")
    pm = model.pin_model.copy()
    expanded = model.expanded.copy() if model.expanded is not None else None
    for g in found.values():  # the link's <inertial> (a massless one may hold a rotational inertia) replaced
        frame = model.pin_model.frames[model.pin_model.getFrameId(g.link, pin.BODY)].placement
        change = g.in_body.toDynamicParameters() - frame.act(document.link_inertia(g.link)).toDynamicParameters()
        pm.inertias[g.body] = pin.Inertia.FromDynamicParameters(pm.inertias[g.body].toDynamicParameters() + change)
        if expanded is not None:
            index = expanded.getJointId(pm.names[g.body])
            expanded.inertias[index] = pin.Inertia.FromDynamicParameters(
                expanded.inertias[index].toDynamicParameters() + change)
    root = document.copy()
    for link in root.findall("link"):
        g = found.get(link.get("name", ""))
        if g is None:
            continue
        for old in link.findall("inertial"):
            link.remove(old)
        inertial = ET.SubElement(link, "inertial")
        ET.SubElement(inertial, "origin", xyz=" ".join(f"{v:.17g}" for v in g.in_link.lever), rpy="0 0 0")
        ET.SubElement(inertial, "mass", value=f"{g.mass:.17g}")
        inertia = g.in_link.inertia
        ET.SubElement(inertial, "inertia", **{f"i{a}{b}": f"{inertia[i, j]:.17g}" for a, b, i, j in (
            ("x", "x", 0, 0), ("x", "y", 0, 1), ("x", "z", 0, 2), ("y", "y", 1, 1), ("y", "z", 1, 2),
            ("z", "z", 2, 2))})
    return replace(model, pin_model=pm, expanded=expanded, urdf_xml=to_text(root))


def massless_urdf_links(urdf_xml: str, source: str, at_most: float = 1e-6) -> set[str]:
    """The links of a URDF with no ``<inertial>`` or a mass of at most ``at_most`` [kg]."""
    out = set()
    for link in read_urdf(urdf_xml, source).root.findall("link"):
        mass = link.find("inertial/mass")
        try:
            value = float(mass.get("value", "0")) if mass is not None else 0.0
        except ValueError:
            value = 0.0
        if not value > at_most:
            out.add(link.get("name", ""))
    return out


NO_MASS_KG = 1e-6
"""A moving link's mass at or below this (a milligram) is the description's "no data" (no ``<inertial>``, ``mass
value="0"``, ``1e-08``), not a mass any link of a robot arm has."""


@dataclass
class CompletedMasses:
    """A model whose massless links got their geometry's inertia: the ``model``, what each link got (``found``) and
    the bodies still without any mass (``bare``, their first link: no geometry)."""

    model: RobotModel
    found: dict[str, GeometryInertia]
    bare: list[str]

    def summary(self) -> str:
        """``link 8.61 kg (7.83 L), ...``: what each link got."""
        return ", ".join(f"{g.link} {g.mass:.3g} kg ({1000 * g.volume:.3g} L)" for g in self.found.values())


def complete_massless_bodies(model: RobotModel, bodies: Sequence[int], *,
                             package_dirs: Sequence[str | Path] = ()) -> CompletedMasses:
    """``model`` with the massless URDF links of ``bodies`` (``pin_model`` joint indices) given their geometry's
    inertia (:func:`geometry_inertias`, :func:`with_geometry_inertials`); ModelError for a mesh not found. A model
    without a URDF has no geometry: every body is bare."""
    if model.urdf_xml is None:
        return CompletedMasses(model, {}, [model.links[b - 1] for b in bodies])
    links = massless_urdf_links(model.urdf_xml, str(model.urdf_path or "robot_description"), NO_MASS_KG)
    found = geometry_inertias(model, bodies, links, package_dirs=package_dirs)
    completed = with_geometry_inertials(model, found) if found else model
    bare = [model.links[b - 1] for b in bodies if not completed.pin_model.inertias[b].mass > NO_MASS_KG]
    return CompletedMasses(completed, found, bare)


def massless_bodies(model: RobotModel) -> list[int]:
    """The bodies (``pin_model`` joint indices) with no mass at all (:data:`NO_MASS_KG`)."""
    return [j for j in range(1, model.pin_model.njoints) if not model.pin_model.inertias[j].mass > NO_MASS_KG]


def torque_check_model(model: RobotModel, package_dirs: Sequence[str | Path] = ()) -> tuple[RobotModel, list[str]]:
    """The model whose inverse dynamics the effort limits are checked against, and what to tell the user: ``model``
    with its massless moving bodies given their geometry's inertia (:func:`complete_massless_bodies`), so that a
    description without inertials is checked against masses of about the right size, not against none; the bodies
    left without a mass (no geometry, meshes not found) are named."""
    use = "the torques checked against the effort limits"
    bodies = massless_bodies(model)
    if not bodies:
        return model, []
    source = model.urdf_path or "the robot description"
    try:
        completed = complete_massless_bodies(model, bodies, package_dirs=package_dirs)
    except ModelError as err:
        return model, [f"{source} gives no mass to {', '.join(model.links[b - 1] for b in bodies)} and their geometry "
                       f"cannot be read ({err}): their weight is not in {use}"]
    lines = []
    if completed.found:
        lines.append(f"{source} gives no mass to {', '.join(completed.found)}: {use} take their geometry as solids of "
                     f"{HULL_DENSITY:g} kg/m^3 ({completed.summary()}; a link's mass is within x/"
                     f"{HULL_DENSITY_SPREAD:g} of such a guess as a rule)")
    if completed.bare:
        lines.append(f"{source} gives no mass and no geometry to {', '.join(completed.bare)}: their weight is not in "
                     f"{use}")
    return completed.model, lines
