"""The collision model of a robot from its URDF and the ``collision:`` section: the geometry and the pairs checked.

Geometry: every link's ``<collision>`` elements (its ``<visual>`` ones when it has none), loaded by pinocchio
(:func:`pinocchio.buildGeomFromUrdfString`) on the kinematic model of the identified joints (locked joints fix
their links to their parent, as in :class:`~dynid_ros.robot.model.RobotModel`); meshes as
:mod:`dynid_ros.robot.meshes` resolves them, each its convex hull. A link with mass but no geometry is named in
one warning and in ``CollisionModel.not_checked``; a massless link without geometry is a frame (``tool0``).

Pairs. Two links on one rigid body (joined by fixed or locked joints) and a parent/child pair (joined by one
joint) are never checked. Without an SRDF, pairs already in contact at the start pose are not checked either
(``CollisionModel.disabled`` lists them), and a pair closer than the margin there keeps the clearance it
has there (the robot's own structure); with an SRDF, its ``<disable_collisions>`` pairs are the ones not
checked. Bodies that never move (the base and what is fixed to it) are not checked against the environment;
a moving link already touching it at the start pose is named (``CollisionModel.touching``), and checked.
"""

from __future__ import annotations

import logging
import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from dynid_ros.errors import ConfigError, ModelError
from dynid_ros.robot.clearance import Row
from dynid_ros.robot.collision_model import CollisionModel, Kinematics, Part
from dynid_ros.robot.meshes import bounding_points, collision_urdf, convex_hull, load_mesh
from dynid_ros.robot.model import RobotModel
from dynid_ros.robot.urdf_document import read_urdf, to_text
from dynid_ros.robot.workcell import CollisionSettings, start_pose

try:
    import coal
    import pinocchio as pin
except ImportError as _err:  # pragma: no cover - packaging problem
    raise ImportError("dynid_ros needs pinocchio with coal: pip install pin") from _err

LOG = logging.getLogger(__name__)

CONTACT = 0.005
"""Pairs of links at most this far apart [m] at the start pose are in contact (the convex hulls of two meshes that
touch overlap or nearly do)."""


def load_collision_model(model: RobotModel, settings: CollisionSettings | None = None,
                         reference: np.ndarray | None = None) -> CollisionModel | None:
    """The collision model of ``model`` (a URDF model) and its workcell; None when nothing is to be checked
    (``self: false`` and no environment). A model without a URDF (DH table) has no geometry: every link is
    named in a warning and nothing is checked.

    ``reference``: the start pose (n_dof,) where derived pairs are decided (default: the settings' start pose,
    else the middle of the joint ranges; 0 where a joint has none).
    """
    settings = settings or CollisionSettings()
    if not settings.enabled:
        return None
    kinematic = model.expanded if model.expanded is not None else model.pin_model
    reference = start_pose(model, settings) if reference is None else np.asarray(reference, dtype=float)
    if model.urdf_xml is None:
        links = tuple(dict.fromkeys(model.links))
        LOG.warning("not checked for collision: %s (a robot without a URDF has no geometry)", ", ".join(links))
        return CollisionModel(model, kinematic, [], settings.environment, [], settings.margin, links,
                              reference=reference, self_collision=settings.self_collision)
    parts, not_checked = _link_parts(model, kinematic, settings.package_dirs)
    if not_checked:
        LOG.warning("not checked for collision: %s (no <collision> or <visual> geometry)", ", ".join(not_checked))
    collision = CollisionModel(model, kinematic, parts, settings.environment, [], settings.margin, not_checked,
                               reference=reference, self_collision=settings.self_collision)
    collision.rows, collision.disabled = _self_rows(collision, settings) if settings.self_collision else ([], [])
    env_rows, touching = _environment_rows(collision)
    collision.rows += env_rows
    collision.touching = touching
    if touching:
        LOG.warning("at the start pose, within %.1f cm of the environment: %s", 100 * settings.margin,
                    ", ".join(touching))
    return collision



def collision_model(model: RobotModel, config: Mapping | None, *, config_path: str | Path | None = None,
                    package_dirs: Sequence[str | Path] = ()) -> CollisionModel | None:
    """The collision model of ``model`` from a whole config's ``collision:`` section (defaults without one)."""
    section = (config or {}).get("collision")
    settings = CollisionSettings.from_config(section, config_path=config_path, package_dirs=package_dirs)
    return load_collision_model(model, settings)



def geometry_parts(model: RobotModel, package_dirs: Sequence[str | Path] = (),
                   links: set[str] | None = None) -> list[Part]:
    """The convex pieces of every link of ``model`` (a URDF model; its ``<collision>``, else ``<visual>``, geometry),
    or of ``links`` only (the others' meshes are not read), on its kinematic model (``model.expanded`` when it has
    followers); ModelError naming the mesh not found."""
    if model.urdf_xml is None:
        return []
    kinematic = model.expanded if model.expanded is not None else model.pin_model
    return _link_parts(model, kinematic, package_dirs, links)[0]


def _link_parts(model: RobotModel, kinematic: object, package_dirs: Sequence[str | Path],
                links: set[str] | None = None) -> tuple[list[Part], tuple[str, ...]]:
    """The convex pieces of ``model``'s links (all, or ``links`` only: the others' geometry is dropped before any
    mesh is read) and the links without geometry (:func:`collision_urdf`)."""
    urdf_directory = model.urdf_path.resolve().parent if model.urdf_path is not None else None
    source = str(model.urdf_path or "robot_description")
    text = model.urdf_xml
    if links is not None:
        root = read_urdf(text, source).copy()
        for link in root.findall("link"):
            if link.get("name") not in links:
                for element in link.findall("collision") + link.findall("visual"):
                    link.remove(element)
        text = to_text(root)
    text, not_checked = collision_urdf(text, urdf_directory, package_dirs, source)
    return _parts(kinematic, text, source), not_checked


def _parts(kinematic: object, text: str, source: str) -> list[Part]:
    """The convex pieces of every link of ``text`` (:func:`collision_urdf`)."""
    try:
        geometry_model = pin.buildGeomFromUrdfString(kinematic, text, pin.COLLISION)
    except Exception as err:  # pinocchio/assimp: find the mesh it could not read
        _culprit(text, source)
        raise ModelError(f"{source}: its collision geometry cannot be loaded: {err}") from err
    parts = []
    for obj in geometry_model.geometryObjects:
        link = kinematic.frames[obj.parentFrame].name
        geometry = convex_hull(obj.geometry, f"{source}: {obj.meshPath or link}")
        points = bounding_points(geometry)
        placed = points @ np.array(obj.placement.rotation).T + np.array(obj.placement.translation)
        centre = 0.5 * (placed.min(axis=0) + placed.max(axis=0))
        radius = float(np.linalg.norm(placed - centre, axis=1).max())
        parts.append(Part(link, int(obj.parentJoint), geometry, np.array(obj.placement.rotation),
                          np.array(obj.placement.translation), centre, radius))
    return parts


def _culprit(text: str, source: str) -> None:
    root = read_urdf(text, source).root
    for mesh in root.iter("mesh"):
        path = Path(mesh.get("filename", ""))
        load_mesh(path, np.ones(3))


def _self_rows(collision: CollisionModel, settings: CollisionSettings) -> tuple[list[Row], list]:
    """Rows of pairs of links: not on one body, not parent/child, not disabled (by the SRDF; without one: in
    contact at the start pose); a pair the robot's structure holds close (never twice the margin apart over the
    sampled poses) keeps :func:`_kept` clearance, still checked for contact."""
    parents = collision.kinematic.parents
    links: dict[str, list[int]] = {}
    for i, part in enumerate(collision.parts):
        links.setdefault(part.link, []).append(i)
    names = list(links)
    srdf = srdf_disabled(settings.srdf) if settings.srdf is not None else None
    kin = collision.kinematics(_poses(collision))
    rows, disabled = [], []
    for x in range(len(names)):
        for y in range(x + 1, len(names)):
            a, b = names[x], names[y]
            body_a, body_b = collision.parts[links[a][0]].body, collision.parts[links[b][0]].body
            if body_a == body_b or parents[body_a] == body_b or parents[body_b] == body_a:
                continue
            pairs = tuple((i, j) for i in links[a] for j in links[b])
            if srdf is not None:
                reason = srdf.get(frozenset((a, b)))
                if reason is not None:
                    disabled.append((a, b, f"SRDF: {reason}"))
                else:
                    rows.append(Row(a, b, pairs, settings.margin))
                continue
            d = _distances(collision, kin, pairs, obstacle=False)
            if d[0] <= CONTACT:
                disabled.append((a, b, "in contact at the start pose"))
            else:
                rows.append(Row(a, b, pairs, _kept(settings.margin, d)))
    return rows, disabled


def _environment_rows(collision: CollisionModel) -> tuple[list[Row], tuple[str, ...]]:
    """Rows of every moving link and obstacle, each keeping :func:`_kept` clearance; and the links within the margin
    of an obstacle at the start pose (named: the start pose is a pose the robot must leave)."""
    links: dict[str, list[int]] = {}
    for i, part in enumerate(collision.parts):
        if part.body != 0:
            links.setdefault(part.link, []).append(i)
    kin = collision.kinematics(_poses(collision))
    rows, touching = [], []
    for k, obstacle in enumerate(collision.obstacles):
        for link, parts in links.items():
            pairs = tuple((i, k) for i in parts)
            d = _distances(collision, kin, pairs, obstacle=True)
            rows.append(Row(link, obstacle.name, pairs, _kept(collision.margin, d), obstacle=True))
            if d[0] < rows[-1].margin:
                touching.append(f"{link} ({obstacle.name}, {100 * d[0]:.1f} cm)")
    return rows, tuple(touching)


POSE_SAMPLES = 48
"""Poses (besides the start pose) sampled over the joint ranges to find how far apart a pair can be."""


def _poses(collision: CollisionModel) -> np.ndarray:
    """The start pose, then :data:`POSE_SAMPLES` poses drawn uniformly within the joint ranges (seeded)."""
    limits = np.asarray(collision.model.position_limits, dtype=float)
    finite = np.all(np.isfinite(limits), axis=1)
    low = np.where(finite, limits[:, 0], -math.pi)
    high = np.where(finite, limits[:, 1], math.pi)
    drawn = np.random.default_rng(0).uniform(low, high, (POSE_SAMPLES, len(low)))
    return np.vstack([collision.reference[None, :], drawn])


def _kept(margin: float, distances: np.ndarray) -> float:
    """The clearance a link keeps from an obstacle or another link: the margin, or half the most they are apart over
    the sampled poses when that is less than twice the margin (what the robot's structure holds close: a UR's
    shoulder over the table its base stands on, the Panda's wrist links around joint 6)."""
    return float(min(margin, max(0.5 * float(np.max(distances)), 0.0)))


def _distances(collision: CollisionModel, kin: Kinematics, pairs: Sequence[tuple[int, int]],
               obstacle: bool) -> np.ndarray:
    """The distance of a row's pairs of parts at every pose of ``kin`` (the smallest pair per pose)."""
    request, result = coal.DistanceRequest(), coal.DistanceResult()
    out = np.full(kin.rotation.shape[0], math.inf)
    for s in range(len(out)):
        for i, j in pairs:
            rotation, translation = collision.part_placement(kin, i, s)
            first = coal.Transform3s(rotation, translation)
            if obstacle:
                other = collision.obstacles[j]
                second = coal.Transform3s(other.placement.rotation, other.placement.translation)
                geometry = other.geometry
            else:
                rotation, translation = collision.part_placement(kin, j, s)
                second, geometry = coal.Transform3s(rotation, translation), collision.parts[j].geometry
            result.clear()
            out[s] = min(out[s], coal.distance(collision.parts[i].geometry, first, geometry, second, request, result))
    return out


def srdf_disabled(path: Path) -> dict[frozenset, str]:
    """``{frozenset({link1, link2}): reason}`` of an SRDF's ``<disable_collisions>``; ConfigError naming the file."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as err:
        raise ConfigError(f"{path}: not a readable SRDF: {err}") from err
    if root.tag != "robot":
        raise ConfigError(f"{path}: not an SRDF (root element <{root.tag}>, expected <robot>)")
    return {frozenset((e.get("link1", ""), e.get("link2", ""))): e.get("reason", "disabled")
            for e in root.iter("disable_collisions")}
