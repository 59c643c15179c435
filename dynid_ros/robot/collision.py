"""The robot's collision geometry and its workcell: clearance of a motion (pinocchio geometry + coal).

What is checked (the ``collision:`` config section)::

    collision:
      self: true                # pairs of the robot's own links
      srdf: panda.srdf          # the pairs MoveIt never checks (<disable_collisions>); default: derived
      margin: 0.02              # clearance kept [m]
      environment:              # in the robot's base frame; default: the table, [{type: plane}]
        - {type: plane, normal: [0, 0, 1], offset: 0.0, name: table}   # the solid side is n.x <= offset
        - {type: box, size: [0.6, 0.8, 0.05], xyz: [0.5, 0, 0.4], rpy: [0, 0, 0], name: shelf}
        - {type: cylinder, radius: 0.1, length: 1.0, xyz: [...], rpy: [...]}   # axis z, as in URDF
        - {type: sphere, radius: 0.1, xyz: [...]}
        - {type: mesh, file: fixture.stl, scale: 1.0, xyz: [...], rpy: [...]}  # its convex hull
      start_pose: [...]         # or {joint: value}: the pose the robot rests in (default: the middle of the
                                # joint ranges); pairs in contact there are not checked (without an SRDF)

Geometry. Every link's ``<collision>`` elements of the URDF (its ``<visual>`` ones when it has none), loaded by
pinocchio (:func:`pinocchio.buildGeomFromUrdfString`) on the kinematic model of the identified joints (locked
joints fix their links to their parent, as in :class:`~dynid_ros.robot.model.RobotModel`). Meshes are named by
``package://`` (looked up in ``--package-dir`` directories, then ``AMENT_PREFIX_PATH``, ``ROS_PACKAGE_PATH``
and the URDF's folder and its parents), ``file://`` or a path relative to the URDF; a mesh that cannot be found
or read is an error naming it. Each mesh is replaced by its convex hull (coal), as MuJoCo does and as
FloBaRoID's excitation optimizer does: the hull contains the mesh (a clearance of the hull is a clearance of
the mesh), and the signed distance between convex shapes (GJK, EPA in contact) is defined and differentiable
almost everywhere, with witness points for the gradient. A link with mass but no geometry is named in one
warning and in :attr:`CollisionModel.not_checked`; a massless link without geometry is a frame (``tool0``).

Pairs. Two links on one rigid body (joined by fixed or locked joints) and a parent/child pair (joined by one
joint) are never checked. Without an SRDF, pairs already in contact at the start pose are not checked either
(:attr:`CollisionModel.disabled` lists them), and a pair closer than the margin there keeps the clearance it
has there (the robot's own structure); with an SRDF, its ``<disable_collisions>`` pairs are the ones not
checked. Bodies that never move (the base and what is fixed to it) are not checked against the environment;
a moving link already touching it at the start pose is named (:attr:`CollisionModel.touching`), and checked.

Clearance of a motion. :meth:`CollisionModel.scan` gives, for every checked pair of links (or link and
obstacle), the smallest signed distance over the samples of a motion, exactly at every sample, without
evaluating every sample: between two samples the distance of two bodies changes by at most the speed of their
points relative to each other (joints they share move both rigidly and do not count), bounded by
``sum |q_j'| (|c - o_j| + r)`` over the other joints (``c``, ``r``: the body's bounding sphere, ``o_j`` a point
of joint ``j``'s axis); the scan evaluates a pair only where that bound lets it come below what matters (the
margin for a check, the smallest value so far for a minimum).
"""

from __future__ import annotations

import bisect
import copy
import logging
import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

import numpy as np

from dynid_ros.errors import CollisionError, ConfigError, ModelError
from dynid_ros.robot.model import PRISMATIC, RobotModel, joint_kinematics
from dynid_ros.robot.resources import PACKAGE, find_file, share_directories
from dynid_ros.robot.urdf_document import read_urdf, to_text
from dynid_ros.robot.urdf_source import MESH_SCHEMES, resolve_mesh_uri

try:
    import coal
    import pinocchio as pin
except ImportError as _err:  # pragma: no cover - packaging problem
    raise ImportError("dynid_ros needs pinocchio with coal: pip install pin") from _err

LOG = logging.getLogger(__name__)

DEFAULT_MARGIN = 0.02
"""Clearance kept [m] when the config gives none."""
TABLE = {"type": "plane", "name": "table", "normal": [0.0, 0.0, 1.0], "offset": 0.0}
"""The default environment: the plane z = 0 under the base, the table the robot stands on (solid below)."""
COLLISION_KEYS = ("self", "srdf", "margin", "environment", "start_pose")
OBSTACLE_TYPES = ("plane", "box", "cylinder", "sphere", "mesh")
CONTACT = 0.005
"""Pairs of links at most this far apart [m] at the start pose are in contact (the convex hulls of two meshes that
touch overlap or nearly do)."""
REST_TOLERANCE = 1e-4
"""[m]: a pair closer than its margin where the robot rests keeps that clearance less this (numerical noise)."""
SPEED_SLACK = 1.05
"""Between two samples the bound on a pair's relative speed is the larger of its two sample values times this."""


# --- settings -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Obstacle:
    """A fixed body of the workcell in the robot's base frame: ``geometry`` (coal) at ``placement``."""

    name: str
    kind: str
    geometry: object
    placement: object  # pin.SE3

    def describe(self) -> str:
        return f"{self.name} ({self.kind})"


@dataclass(frozen=True)
class CollisionSettings:
    """The ``collision:`` config section (module docstring), with the package directories of the command line.

    Attributes:
        self_collision: check pairs of the robot's links; srdf: an SRDF whose ``<disable_collisions>`` pairs are
            not checked (None: derived); margin: clearance kept [m]; environment: the obstacles;
        start_pose: ``{joint: position}`` of the pose the robot rests in (None: the middle of the joint ranges);
        package_dirs: where ``package://`` meshes are looked up first.
    """

    self_collision: bool = True
    srdf: Path | None = None
    margin: float = DEFAULT_MARGIN
    environment: tuple[Obstacle, ...] | None = None
    start_pose: Mapping[str, float] | Sequence[float] | None = None
    package_dirs: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        if self.environment is None:  # the default workcell: the table under the base
            object.__setattr__(self, "environment", (default_table(),))

    @property
    def enabled(self) -> bool:
        """Anything to check at all (self pairs or obstacles)."""
        return self.self_collision or bool(self.environment)

    @classmethod
    def from_config(cls, section: Mapping | None, *, config_path: str | Path | None = None,
                    package_dirs: Sequence[str | Path] = (), source: str = "collision") -> CollisionSettings:
        """Settings from a config's ``collision:`` section (None: the defaults); files named relative to the working
        directory, the folder of ``config_path``, the package or its share directories
        (:func:`~dynid_ros.robot.resources.find_file`), or by ``package://``. ConfigError naming the key for bad
        input."""
        if section is not None and not isinstance(section, Mapping):
            raise ConfigError(f"{source}: expected a mapping (self, srdf, margin, environment), got {section!r}")
        section = dict(section or {})
        base = config_path
        unknown = sorted(set(section) - set(COLLISION_KEYS))
        if unknown:
            raise ConfigError(f"{source}: unknown key(s) {', '.join(unknown)} (use {', '.join(COLLISION_KEYS)})")
        self_collision = section.get("self", True)
        if not isinstance(self_collision, bool):
            raise ConfigError(f"{source}.self must be true or false, got {self_collision!r}")
        margin = section.get("margin", DEFAULT_MARGIN)
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin < 1:
            raise ConfigError(f"{source}.margin must be a clearance in metres in [0, 1), got {margin!r}")
        srdf = section.get("srdf")
        if srdf is not None:
            if not isinstance(srdf, str) or not srdf:
                raise ConfigError(f"{source}.srdf must be a file name, got {srdf!r}")
            srdf = _local_file(srdf, base, package_dirs, f"{source}.srdf")
        environment = section.get("environment", [TABLE])
        if environment is None:
            environment = []
        if not isinstance(environment, list):
            raise ConfigError(f"{source}.environment must be a list of obstacles ([] for none), got {environment!r}")
        obstacles = tuple(obstacle(item, i, base, package_dirs, f"{source}.environment[{i}]")
                          for i, item in enumerate(environment))
        names = [o.name for o in obstacles]
        if len(set(names)) != len(names):
            twice = sorted(n for n in names if names.count(n) > 1)[0]
            raise ConfigError(f"{source}.environment: two obstacles named {twice!r}")
        start = section.get("start_pose")
        if start is not None and not isinstance(start, (list, tuple, Mapping)):
            raise ConfigError(f"{source}.start_pose must be a list of joint positions or a mapping joint -> "
                              f"position, got {start!r}")
        return cls(self_collision, srdf, float(margin), obstacles, start,
                   tuple(Path(d) for d in package_dirs))


def obstacle(item: object, index: int, base: str | Path | None, package_dirs: Sequence[str | Path],
             where: str) -> Obstacle:
    """One ``environment:`` entry as an :class:`Obstacle` (module docstring)."""
    if not isinstance(item, Mapping) or item.get("type") not in OBSTACLE_TYPES:
        raise ConfigError(f"{where}: expected {{type: {'|'.join(OBSTACLE_TYPES)}, ...}}, got {item!r}")
    kind = str(item["type"])
    allowed = {"type", "name", "xyz", "rpy"} | {
        "plane": {"normal", "offset"}, "box": {"size"}, "cylinder": {"radius", "length"}, "sphere": {"radius"},
        "mesh": {"file", "scale"}}[kind]
    unknown = sorted(set(item) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)} for a {kind} "
                          f"(use {', '.join(sorted(allowed))})")
    name = str(item.get("name") or ("table" if kind == "plane" and index == 0 else f"{kind} {index + 1}"))
    xyz = _vector(item.get("xyz", [0.0, 0.0, 0.0]), 3, f"{where}.xyz")
    rpy = _vector(item.get("rpy", [0.0, 0.0, 0.0]), 3, f"{where}.rpy")
    placement = pin.SE3(pin.rpy.rpyToMatrix(*rpy), xyz)
    if kind == "plane":
        normal = _vector(item.get("normal", [0.0, 0.0, 1.0]), 3, f"{where}.normal")
        if not np.linalg.norm(normal) > 0:
            raise ConfigError(f"{where}.normal must be a non-zero vector")
        offset = _number(item.get("offset", 0.0), f"{where}.offset")
        geometry = coal.Halfspace(normal / np.linalg.norm(normal), offset)
    elif kind == "box":
        size = _vector(item.get("size"), 3, f"{where}.size", positive=True)
        geometry = coal.Box(*size)
    elif kind == "cylinder":
        geometry = coal.Cylinder(_number(item.get("radius"), f"{where}.radius", positive=True),
                                 _number(item.get("length"), f"{where}.length", positive=True))
    elif kind == "sphere":
        geometry = coal.Sphere(_number(item.get("radius"), f"{where}.radius", positive=True))
    else:
        if not isinstance(item.get("file"), str):
            raise ConfigError(f"{where}.file: a mesh file (STL, DAE, OBJ) is required")
        path = _local_file(item["file"], base, package_dirs, f"{where}.file")
        scale = item.get("scale", 1.0)
        scale = np.full(3, _number(scale, f"{where}.scale", positive=True)) if not isinstance(scale, list) else \
            _vector(scale, 3, f"{where}.scale", positive=True)
        geometry = convex_hull(load_mesh(path, scale), str(path))
    return Obstacle(name, kind, geometry, placement)


def _local_file(name: str, config_path: str | Path | None, package_dirs: Sequence[str | Path], where: str) -> Path:
    """A file a config names: ``package://`` (:func:`find_package_file`), ``file://`` or a path
    (:func:`~dynid_ros.robot.resources.find_file`)."""
    if name.startswith("package://"):
        path = find_package_file(name, package_dirs, None)
        if path is None:
            raise ConfigError(f"{where} {name}: no such file (looked in --package-dir, AMENT_PREFIX_PATH, "
                              "ROS_PACKAGE_PATH)")
        return path
    return find_file(name[len("file://"):] if name.startswith("file://") else name, where, config_path)


def _vector(value: object, n: int, where: str, positive: bool = False) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        array = np.zeros(0)
    if array.shape != (n,) or not np.all(np.isfinite(array)) or (positive and not np.all(array > 0)):
        raise ConfigError(f"{where}: expected {n} {'positive ' if positive else ''}numbers, got {value!r}")
    return array


def _number(value: object, where: str, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or (
            positive and not value > 0):
        raise ConfigError(f"{where}: expected a {'positive ' if positive else ''}number, got {value!r}")
    return float(value)


# --- meshes ---------------------------------------------------------------------------------------------

def find_package_file(uri: str, package_dirs: Sequence[str | Path], urdf_directory: Path | None) -> Path | None:
    """The file of a ``package://pkg/rest`` URI: a ``--package-dir`` that is ``pkg`` or holds it, else
    :func:`~dynid_ros.robot.urdf_source.resolve_mesh_uri` (ament index, ``ROS_PACKAGE_PATH``, the URDF's
    folder and its parents)."""
    package, _, rest = uri[len("package://"):].partition("/")
    for directory in package_dirs:
        directory = Path(directory)
        for root in ((directory,) if directory.name == package else ()) + (directory / package,):
            if (root / rest).is_file():
                return root / rest
    found = resolve_mesh_uri(uri, urdf_directory)
    if found is None and package == PACKAGE:  # this package's own files, from a checkout or a pip install too
        found = next((root / rest for root in share_directories() if (root / rest).is_file()), None)
    return found


def collision_urdf(urdf_text: str, urdf_directory: Path | None, package_dirs: Sequence[str | Path],
                   source: str) -> tuple[str, tuple[str, ...]]:
    """``urdf_text`` with, per link, its ``<collision>`` elements, else its ``<visual>`` ones made collision
    elements (other visual elements dropped), every mesh named by an absolute path; and the links with mass and
    neither. ModelError naming the mesh, its link and where it was looked for when one is not found."""
    root = read_urdf(urdf_text, source).copy()  # edited below
    bare = []
    for link in root.findall("link"):
        collision, visual = link.findall("collision"), link.findall("visual")
        for element in visual:
            if collision:
                link.remove(element)
            else:
                element.tag = "collision"
        if not collision and not visual:
            mass = link.find("inertial/mass")
            if mass is not None and _positive(mass.get("value")):
                bare.append(link.get("name", ""))
        for element in link.findall("collision"):
            for mesh in element.iter("mesh"):
                uri = mesh.get("filename", "")
                path = _mesh_path(uri, urdf_directory, package_dirs)
                if path is None:
                    where = ("--package-dir, AMENT_PREFIX_PATH, ROS_PACKAGE_PATH and the URDF's folder"
                             if uri.startswith("package://") else "this machine")
                    raise ModelError(f"{source}: mesh {uri!r} of link {link.get('name')} "
                                     f"({'collision' if collision else 'visual'}): not found (looked in {where}); "
                                     "collision checks need it (give --package-dir DIR, or collision: {self: false, "
                                     "environment: []} to check nothing)")
                mesh.set("filename", str(path))
    return to_text(root), tuple(bare)


def _positive(text: str | None) -> bool:
    try:
        return float(text or 0) > 0
    except ValueError:
        return False


def _mesh_path(uri: str, urdf_directory: Path | None, package_dirs: Sequence[str | Path]) -> Path | None:
    if uri.startswith("package://"):
        return find_package_file(uri, package_dirs, urdf_directory)
    if uri.startswith(MESH_SCHEMES) and not uri.startswith("file://"):
        return None
    path = Path(uri[len("file://"):]) if uri.startswith("file://") else Path(uri)
    if not path.is_absolute():
        path = (urdf_directory or Path.cwd()) / path
    return path if path.is_file() else None


def load_mesh(path: Path, scale: np.ndarray) -> object:
    """A mesh file as a coal BVH model; ModelError naming the file when coal (assimp) cannot read it."""
    try:
        return coal.MeshLoader().load(str(path), np.asarray(scale, dtype=float))
    except Exception as err:  # assimp raises RuntimeError or ValueError with its own message
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelError(f"{path}: cannot read this mesh: {reason}") from err


def convex_hull(geometry: object, name: str) -> object:
    """The convex hull (qhull, through coal) of a coal BVH mesh; other shapes are returned as they are. (coal's
    ``buildConvexRepresentation`` only reinterprets the mesh's vertices as a convex shape: its support function then
    climbs the non-convex mesh and stops at local maxima, and distances come out wrong by decimetres.)"""
    if not isinstance(geometry, coal.BVHModelBase):
        return geometry
    if geometry.num_vertices < 4:
        raise ModelError(f"{name}: a mesh with fewer than 4 vertices has no volume")
    try:
        geometry.buildConvexHull(True, "Qt")  # returns whether the mesh was convex already
    except Exception as err:  # qhull: a flat or degenerate mesh
        raise ModelError(f"{name}: its convex hull cannot be built ({str(err).strip().splitlines()[0]})") from err
    if geometry.convex is None or geometry.convex.num_points < 4:
        raise ModelError(f"{name}: its convex hull cannot be built (a flat mesh?)")
    return geometry.convex


def _points(geometry: object) -> np.ndarray:
    """Points whose convex hull contains ``geometry`` (its local frame): the bounding sphere's input."""
    if isinstance(geometry, coal.ConvexBase):
        return np.array(geometry.points())
    if isinstance(geometry, coal.Box):
        h = np.array(geometry.halfSide)
        return np.array([[a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)]) * h
    if isinstance(geometry, coal.Sphere):
        return np.vstack([np.eye(3), -np.eye(3)]) * geometry.radius
    if isinstance(geometry, (coal.Cylinder, coal.Capsule, coal.Cone)):
        r = geometry.radius
        h = geometry.halfLength + (r if isinstance(geometry, coal.Capsule) else 0.0)
        return np.array([[a * r, b * r, c * h] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)])
    if isinstance(geometry, coal.Ellipsoid):
        return np.vstack([np.diag(geometry.radii), -np.diag(geometry.radii)])
    raise ModelError(f"collision geometry of type {type(geometry).__name__} is not supported")


# --- the model ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Part:
    """One convex piece of a link: on body ``body`` (joint of the kinematic model; 0: the fixed base) at the
    constant placement ``rotation``, ``translation`` in that body's frame, inside the sphere ``centre``,
    ``radius`` (body frame)."""

    link: str
    body: int
    geometry: object
    rotation: np.ndarray
    translation: np.ndarray
    centre: np.ndarray
    radius: float


@dataclass(frozen=True)
class Row:
    """A checked pair of a link and a link (``obstacle`` None) or an obstacle: its convex pieces' pairs
    (part indices; ``second`` indexes the obstacles when ``obstacle``) and the clearance it keeps."""

    first: str
    second: str
    pairs: tuple[tuple[int, int], ...]
    margin: float
    obstacle: bool = False

    @property
    def name(self) -> str:
        return f"{self.first} and {self.second}"


class Witness(NamedTuple):
    """One evaluated sample of a pair of parts (or a part and an obstacle): signed ``distance`` at sample ``index``
    between the witness points ``first`` and ``second`` (world) along ``normal`` (first to second)."""

    distance: float
    index: int
    part: int
    other: int
    first: np.ndarray
    second: np.ndarray
    normal: np.ndarray


@dataclass
class Clearance:
    """The smallest clearance of one row over a motion: ``distance`` [m] (negative: penetration depth) at sample
    ``index``, between ``points`` (world, on the first and second body) along ``normal`` (first to second)."""

    row: Row
    distance: float
    index: int
    part: int = -1
    other: int = -1
    points: tuple[np.ndarray, np.ndarray] | None = None
    normal: np.ndarray | None = None
    near: list[Witness] = field(default_factory=list)

    @classmethod
    def of(cls, row: Row, witness: Witness) -> Clearance:
        return cls(row, witness.distance, witness.index, witness.part, witness.other,
                   (witness.first, witness.second), witness.normal)

    @property
    def slack(self) -> float:
        """Distance minus the clearance the row keeps (negative: violated)."""
        return self.distance - self.row.margin


@dataclass
class Kinematics:
    """Placements of the bodies over ``N`` samples: rotations (N, nb + 1, 3, 3), origins (N, nb + 1, 3), joint
    axes in the world (N, nb + 1, 3) (index 0: the fixed base) and joint speeds (N, nb + 1)."""

    rotation: np.ndarray
    origin: np.ndarray
    axis: np.ndarray
    speed: np.ndarray


@dataclass
class CollisionModel:
    """The robot's convex pieces, the obstacles and the checked rows (module docstring).

    Attributes:
        model: the robot (identified coordinates); kinematic: the pinocchio model whose joints are the bodies;
        parts, obstacles, rows: as above; margin: the clearance kept;
        not_checked: links with mass but no geometry; disabled: ``(link, link, reason)`` of the pairs of links
            with geometry that are not checked besides same-body and parent/child ones; touching: links in contact
            with (or within the margin of) an obstacle at the start pose; reference: the start pose (n_dof,).
    """

    model: RobotModel
    kinematic: object
    parts: list[Part]
    obstacles: tuple[Obstacle, ...]
    rows: list[Row]
    margin: float
    not_checked: tuple[str, ...] = ()
    disabled: list[tuple[str, str, str]] = field(default_factory=list)
    touching: tuple[str, ...] = ()
    reference: np.ndarray | None = None
    self_collision: bool = True

    def __post_init__(self) -> None:
        self._kinematics = joint_kinematics(self.kinematic)
        self._prismatic = [b for b, k in enumerate(self._kinematics, start=1) if k.kind == PRISMATIC]
        self.ancestors = []
        for body in range(self.kinematic.njoints):
            chain, k = set(), body
            while k > 0:
                chain.add(k)
                k = self.kinematic.parents[k]
            self.ancestors.append(chain)
        self._index_parts()

    def _index_parts(self) -> None:
        self._bodies = np.array([p.body for p in self.parts], dtype=int)
        self._centres = np.array([p.centre for p in self.parts]).reshape(-1, 3)
        self._radii = np.array([p.radius for p in self.parts])
        self._local_r = np.array([p.rotation for p in self.parts]).reshape(-1, 3, 3)
        self._local_p = np.array([p.translation for p in self.parts]).reshape(-1, 3)
        self._moves = np.array([[b in self.ancestors[p.body] for b in range(len(self._kinematics) + 1)]
                                for p in self.parts], dtype=bool).reshape(len(self.parts), len(self._kinematics) + 1)

    # --- kinematics ------------------------------------------------------------------------------------
    def kinematics(self, q: np.ndarray, dq: np.ndarray | None = None) -> Kinematics:
        """Body placements at ``q`` (N, n_dof) of the identified joints (and their speeds ``dq``)."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        dq = np.zeros_like(q) if dq is None else np.atleast_2d(np.asarray(dq, dtype=float))
        qb, dqb, _ = self.model.body_motion(q, dq, dq)
        n, nb = q.shape[0], len(self._kinematics)
        rotation = np.empty((n, nb + 1, 3, 3))
        origin = np.empty((n, nb + 1, 3))
        axis = np.zeros((n, nb + 1, 3))
        rotation[:, 0], origin[:, 0] = np.eye(3), 0.0
        for b, k in enumerate(self._kinematics, start=1):
            parent_r, parent_p = rotation[:, k.parent + 1], origin[:, k.parent + 1]
            fixed = parent_r @ k.rotation
            origin[:, b] = parent_p + parent_r @ k.translation
            axis[:, b] = fixed @ k.axis
            if k.kind == PRISMATIC:
                rotation[:, b] = fixed
                origin[:, b] += axis[:, b] * qb[:, b - 1, None]
            else:
                rotation[:, b] = fixed @ _rotations(k.axis, qb[:, b - 1])
        speed = np.zeros((n, nb + 1))
        speed[:, 1:] = np.abs(dqb)
        return Kinematics(rotation, origin, axis, speed)

    def part_placement(self, kin: Kinematics, i: int, s: int) -> tuple[np.ndarray, np.ndarray]:
        part = self.parts[i]
        r = kin.rotation[s, part.body]
        return r @ part.rotation, kin.origin[s, part.body] + r @ part.translation

    def _speeds(self, kin: Kinematics) -> np.ndarray:
        """(N, parts, nb + 1): a bound of the speed every joint gives the points of every part: ``|q_j'|`` times
        the largest distance of a point of the part from a point of the joint's axis (1 for a prismatic joint)."""
        centres = kin.origin[:, self._bodies] + np.einsum("npij,pj->npi", kin.rotation[:, self._bodies],
                                                          self._centres)
        levers = (np.linalg.norm(centres[:, :, None, :] - kin.origin[:, None, :, :], axis=-1)
                  + self._radii[None, :, None])
        levers[:, :, self._prismatic] = 1.0
        return levers * kin.speed[:, None, :]

    def _bound(self, speeds: np.ndarray, row: Row, i: int, j: int, dt: float) -> list[float]:
        """How much the distance of parts ``i``, ``j`` (or part ``i`` and obstacle ``j``) can change from sample 0
        to each sample (cumulative, N values)."""
        first = self.ancestors[self.parts[i].body]
        second = set() if row.obstacle else self.ancestors[self.parts[j].body]
        speed = speeds[:, i, sorted(first - second)].sum(axis=1)
        if not row.obstacle:
            speed = speed + speeds[:, j, sorted(second - first)].sum(axis=1)
        step = SPEED_SLACK * dt * np.maximum(speed[:-1], speed[1:])
        return np.concatenate([[0.0], np.cumsum(step)]).tolist()

    # --- the scan ------------------------------------------------------------------------------------
    def placements(self, kin: Kinematics) -> tuple[np.ndarray, np.ndarray]:
        """Every part's world rotation (N, parts, 3, 3) and position (N, parts, 3)."""
        rotation = kin.rotation[:, self._bodies]
        return rotation @ self._local_r, kin.origin[:, self._bodies] + (rotation @ self._local_p[:, :, None])[..., 0]

    def scan(self, q: np.ndarray, dq: np.ndarray, dt: float, *, floor: float | None = 0.0,
             rows: Sequence[int] | None = None) -> list[Clearance]:
        """The smallest clearance of every row over the samples ``q``, ``dq`` (N, n_dof), ``dt`` apart.

        ``floor``: the clearance of a row matters below ``row.margin + floor``: where it is, the row's minimum is
        exact (to the sample), elsewhere it is the smallest value evaluated (at least ``margin + floor`` at every
        sample not evaluated; infinite when none was). ``floor = 0`` is the check; None: only the smallest slack
        over all rows is exact (rows are then scanned against the smallest found so far).
        """
        return [found[0] for found in self.scan_windows(q, dq, dt, floor=floor, rows=rows)[1]]

    def scan_windows(self, q: np.ndarray, dq: np.ndarray, dt: float, *, floor: float | None = 0.0,
                     windows: int = 1, band: float = 0.0, rows: Sequence[int] | None = None
                     ) -> tuple[Kinematics, list[list[Clearance]]]:
        """:meth:`scan` with the samples cut into ``windows`` consecutive windows: per row and window, its smallest
        clearance (where it is below ``margin + floor``). ``band`` > 0: each window's clearance also lists in
        ``near`` every sample (and pair of parts) within ``band`` of its minimum, with witness points (the samples a
        smooth minimum weighs). Returns the bodies' kinematics of the samples too (:meth:`distance_gradients`)."""
        kin = self.kinematics(q, dq)
        n = kin.rotation.shape[0]
        if not self.rows:
            return kin, []
        speeds = self._speeds(kin)
        rotations, positions = self.placements(kin)
        walk = _Walk(n, windows, band)
        order = list(range(len(self.rows)) if rows is None else rows)
        best_slack = math.inf
        out: list[list[Clearance]] = []
        for r in order:
            row = self.rows[r]
            matters = row.margin + (best_slack if floor is None else floor)
            best = [Clearance(row, math.inf, -1) for _ in range(windows)]
            for i, j in row.pairs:
                if row.obstacle and isinstance(self.obstacles[j].geometry, coal.Halfspace) and \
                        _has_support(self.parts[i].geometry):
                    walk.plane(best, row, i, j, self.parts[i].geometry, self.obstacles[j].geometry,
                               rotations[:, i], positions[:, i])
                else:
                    walk.pair(best, row, i, j, self, rotations, positions, self._bound(speeds, row, i, j, dt),
                              matters)
            for found in best:
                found.near = [c for c in found.near if c.distance < found.distance + band]
            out.append(best)
            best_slack = min(best_slack, min(c.slack for c in best))
            matters = row.margin + (best_slack if floor is None else floor)
        return kin, out

    def distance_gradients(self, witnesses: Sequence[Witness], kin: Kinematics, obstacle: bool) -> np.ndarray:
        """(K, n_dof): ``d distance / d q`` of witnessed samples (``kin``: the scan's kinematics; ``obstacle``: the
        second body is an obstacle): ``n . (v_second - v_first)`` of the witness points (joints both bodies share
        cancel)."""
        grad = np.zeros((len(witnesses), len(self._kinematics) + 1))
        if not witnesses:
            return grad[:, 1:]
        samples = np.array([c.index for c in witnesses])
        normal = np.array([c.normal for c in witnesses])
        sides = [(np.array([c.first for c in witnesses]), [c.part for c in witnesses], -1.0)]
        if not obstacle:
            sides.append((np.array([c.second for c in witnesses]), [c.other for c in witnesses], 1.0))
        for points, parts, sign in sides:
            moves = self._moves[np.array(parts)]
            for b in range(1, len(self._kinematics) + 1):
                moved = moves[:, b]
                if not moved.any():
                    continue
                a = kin.axis[samples, b]
                if self._kinematics[b - 1].kind == PRISMATIC:
                    velocity = a
                else:
                    velocity = _cross(a, points - kin.origin[samples, b])
                grad[:, b] += sign * moved * np.einsum("ki,ki->k", normal, velocity)
        grad_body = grad[:, 1:]
        c = self.model.coupling
        return grad_body if c is None else grad_body @ c

    # --- the check -----------------------------------------------------------------------------------
    def check(self, t: np.ndarray, q: np.ndarray, dq: np.ndarray, what: str = "the motion", *,
              from_rest: bool = True) -> Clearance | None:
        """The smallest clearance of the motion relative to its margin (None: nothing checked); CollisionError
        in one line naming the pair, the time and the depth where the clearance is below the margin.

        A pair already closer than its margin (but not touching) at the first sample, where the robot rests
        before it moves, keeps the clearance it has there instead: the motion may take it away, never closer
        (a robot parked near its table is not stuck there; ``from_rest`` False: not even there). A pair already in
        contact there is refused."""
        if not self.rows:
            return None
        t = np.asarray(t, dtype=float)
        q, dq = np.atleast_2d(q), np.atleast_2d(dq)
        dt = float(np.max(np.diff(t))) if t.size > 1 else 1.0
        model = self._from_rest(q[0]) if from_rest else self
        found = model.scan(q, dq, dt, floor=0.0)
        worst = min(found, key=lambda c: c.slack)
        if worst.slack < 0:
            raise CollisionError(violation(worst, t, what), float(t[worst.index]))
        return worst

    def _from_rest(self, q_rest: np.ndarray) -> CollisionModel:
        """This model, or a copy whose rows closer than their margin at ``q_rest`` (and not in contact) keep the
        clearance they have there (less :data:`REST_TOLERANCE`)."""
        at_rest = self.scan(q_rest[None, :], np.zeros((1, len(q_rest))), 1.0, floor=0.0)
        close = {id(c.row): c.distance for c in at_rest if c.slack < 0 and c.distance > REST_TOLERANCE}
        if not close:
            return self
        relaxed = copy.copy(self)
        relaxed.rows = [replace(row, margin=close[id(row)] - REST_TOLERANCE) if id(row) in close else row
                        for row in self.rows]
        return relaxed

    def summary(self, clearance: Clearance | None, t: np.ndarray | None = None) -> dict:
        """What the output states: the clearance nearest what its pair keeps, between what, when; the pairs that
        keep less than the margin; what was not checked."""
        out: dict = {"margin_m": self.margin}
        if clearance is not None:
            out.update({"smallest_clearance_m": round(clearance.distance, 5), "between": clearance.row.name,
                        "kept_m": round(clearance.row.margin, 5)})
            if t is not None:
                out["at_s"] = round(float(t[clearance.index]), 3)
        out["checked_pairs"] = len(self.rows)
        out["smaller_margins"] = [f"{row.name} ({100 * row.margin:.1f} cm: never more than {200 * row.margin:.1f} cm "
                                  "apart)" for row in self.rows if row.margin < self.margin]
        out["not_checked"] = list(self.not_checked)
        out["pairs_not_checked"] = [f"{a} and {b} ({reason})" for a, b, reason in self.disabled]
        out["environment"] = [o.describe() for o in self.obstacles]
        if self.touching:
            out["touching_at_start"] = list(self.touching)
        return out


def violation(clearance: Clearance, t: np.ndarray, what: str = "the motion") -> str:
    """The one line of a clearance below its row's margin."""
    at = float(t[clearance.index])
    row = clearance.row
    if clearance.distance < 0:
        return (f"collision in {what}: {row.name} intersect {100 * -clearance.distance:.1f} cm deep at "
                f"t = {at:.3f} s")
    return (f"collision in {what}: {row.name} come within {100 * clearance.distance:.1f} cm of each other at "
            f"t = {at:.3f} s (clearance kept: {100 * row.margin:.1f} cm)")


class _Walk:
    """One scan's loops over the samples of ``n`` (cut into ``windows``; ``band``: keep the samples near each
    window's minimum): a pair of parts by coal with the bound of :meth:`CollisionModel._bound` (skipping every
    sample that cannot matter), a part and a plane all at once (the part's support point)."""

    def __init__(self, n: int, windows: int, band: float) -> None:
        self.n, self.band = n, band
        self.ends = [((w + 1) * n) // windows for w in range(windows)]
        self.window = np.repeat(np.arange(windows), np.diff([0, *self.ends]))
        self.request, self.result = coal.DistanceRequest(), coal.DistanceResult()
        self.first, self.second = coal.Transform3s(), coal.Transform3s()

    def keep(self, best: list[Clearance], row: Row, w: int, witness: Witness) -> Clearance:
        """Record ``witness`` in window ``w``; returns the window's best."""
        here = best[w]
        if witness.distance < here.distance:
            near = here.near
            here = best[w] = Clearance.of(row, witness)
            here.near = near
        if self.band > 0:
            here.near.append(witness)
        return here

    def pair(self, best: list[Clearance], row: Row, i: int, j: int, model: CollisionModel, rotations: np.ndarray,
             positions: np.ndarray, bound: list[float], matters: float) -> None:
        first, second, result, ends, band = self.first, self.second, self.result, self.ends, self.band
        if row.obstacle:
            other = model.obstacles[j]
            second.setRotation(other.placement.rotation)
            second.setTranslation(other.placement.translation)
            second_geometry = other.geometry
        else:
            second_geometry = model.parts[j].geometry
        geometry = model.parts[i].geometry
        s, w = 0, 0
        while s < self.n:
            while s >= ends[w]:
                w += 1
            first.setRotation(rotations[s, i])
            first.setTranslation(positions[s, i])
            if not row.obstacle:
                second.setRotation(rotations[s, j])
                second.setTranslation(positions[s, j])
            result.clear()
            d = coal.distance(geometry, first, second_geometry, second, self.request, result)
            here = best[w]
            if d < here.distance + band:
                here = self.keep(best, row, w, Witness(d, s, i, j, np.array(result.getNearestPoint1()),
                                                       np.array(result.getNearestPoint2()), np.array(result.normal)))
            target = min(here.distance + band, matters)
            step = s + 1
            if d > target:
                step = max(step, bisect.bisect_left(bound, bound[s] + d - target))
                if step > ends[w] and d > matters:  # later windows: only what matters counts there
                    step = max(ends[w], bisect.bisect_left(bound, bound[s] + d - matters))
                elif step > ends[w]:
                    step = ends[w]
            s = step

    def plane(self, best: list[Clearance], row: Row, i: int, j: int, geometry: object, plane: object,
              rotations: np.ndarray, positions: np.ndarray) -> None:
        """Every sample at once: the signed distance of a convex part to the half-space ``n . x <= offset`` is that
        of its support point along ``-n``."""
        normal = np.asarray(plane.n, dtype=float)
        local = np.einsum("nji,j->ni", rotations, -normal)  # -n in the part's frame, per sample
        world = np.einsum("nij,nj->ni", rotations, _support(geometry, local)) + positions
        d = world @ normal - float(plane.d)
        away = -normal
        for w, (start, end) in enumerate(zip([0, *self.ends[:-1]], self.ends)):
            if end <= start:
                continue
            chunk = d[start:end]
            lowest = min(float(chunk.min()), best[w].distance)
            picks = [start + int(np.argmin(chunk))] if self.band <= 0 else start + np.flatnonzero(
                chunk < lowest + self.band)
            for k in picks:
                if d[k] < best[w].distance + self.band:
                    self.keep(best, row, w, Witness(float(d[k]), int(k), i, j, world[k], world[k] - d[k] * normal,
                                                    away))


def _has_support(geometry: object) -> bool:
    return isinstance(geometry, (coal.ConvexBase, coal.Box, coal.Sphere, coal.Capsule, coal.Cylinder))


def _support(geometry: object, directions: np.ndarray) -> np.ndarray:
    """(N, 3): the point of ``geometry`` (its frame) farthest along each of ``directions`` (N, 3)."""
    if isinstance(geometry, coal.ConvexBase):
        vertices = np.array(geometry.points())
        return vertices[np.argmax(directions @ vertices.T, axis=1)]
    if isinstance(geometry, coal.Box):
        return np.where(directions >= 0, 1.0, -1.0) * np.array(geometry.halfSide)
    unit = directions / np.maximum(np.linalg.norm(directions, axis=1, keepdims=True), 1e-300)
    if isinstance(geometry, coal.Sphere):
        return geometry.radius * unit
    axial = np.where(directions[:, 2:3] >= 0, 1.0, -1.0) * np.array([0.0, 0.0, geometry.halfLength])
    if isinstance(geometry, coal.Capsule):
        return axial + geometry.radius * unit
    radial = directions.copy()
    radial[:, 2] = 0.0
    length = np.linalg.norm(radial, axis=1, keepdims=True)
    return axial + geometry.radius * np.where(length > 1e-12, radial / np.maximum(length, 1e-300), 0.0)


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross products of (K, 3) arrays (numpy.cross is slow on small arrays)."""
    return np.stack([a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1], a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
                     a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]], axis=1)


def _rotations(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotations by ``angle`` (N,) about the unit ``axis`` (Rodrigues)."""
    x, y, z = axis
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    s, c = np.sin(angle)[:, None, None], np.cos(angle)[:, None, None]
    return np.eye(3) + s * k + (1.0 - c) * (k @ k)


# --- building it ----------------------------------------------------------------------------------------

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
    urdf_directory = model.urdf_path.resolve().parent if model.urdf_path is not None else None
    source = str(model.urdf_path or "robot_description")
    text, not_checked = collision_urdf(model.urdf_xml, urdf_directory, settings.package_dirs, source)
    parts = _parts(kinematic, text, source)
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


def default_table() -> Obstacle:
    """The table the robot stands on: the plane z = 0 of its base frame, solid below."""
    return obstacle(TABLE, 0, None, (), "collision.environment[0]")


def collision_model(model: RobotModel, config: Mapping | None, *, config_path: str | Path | None = None,
                    package_dirs: Sequence[str | Path] = ()) -> CollisionModel | None:
    """The collision model of ``model`` from a whole config's ``collision:`` section (defaults without one)."""
    section = (config or {}).get("collision")
    settings = CollisionSettings.from_config(section, config_path=config_path, package_dirs=package_dirs)
    return load_collision_model(model, settings)


def start_pose(model: RobotModel, settings: CollisionSettings) -> np.ndarray:
    """The settings' ``start_pose`` (list in the model's joint order, or {joint: position} over the middle of
    the ranges), else the middle of the joint ranges (0 where a joint has none)."""
    limits = np.asarray(model.position_limits, dtype=float)
    finite = np.all(np.isfinite(limits), axis=1)
    q = np.zeros(len(limits))
    q[finite] = limits[finite].mean(axis=1)
    given = settings.start_pose
    if given is None:
        return q
    if isinstance(given, Mapping):
        for joint, value in given.items():
            if joint not in model.joints:
                if joint in model.locked:
                    continue
                raise ConfigError(f"collision.start_pose names {joint!r}, not a joint of the robot "
                                  f"({', '.join(model.joints)})")
            q[model.joints.index(joint)] = _number(value, f"collision.start_pose.{joint}")
        return q
    values = _vector(given, model.n_dof, "collision.start_pose")
    return values


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
        points = _points(geometry)
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

