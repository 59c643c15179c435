"""The workcell and what is checked: the ``collision:`` config section as :class:`CollisionSettings`, its obstacles.

The section::

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

The environment is in the robot's base frame; by default the plane z = 0 under the base (the table the robot
stands on); ``environment: []`` removes it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dynid_ros.errors import ConfigError
from dynid_ros.robot.meshes import convex_hull, find_package_file, load_mesh
from dynid_ros.robot.model import RobotModel
from dynid_ros.robot.resources import find_file

try:
    import coal
    import pinocchio as pin
except ImportError as _err:  # pragma: no cover - packaging problem
    raise ImportError("dynid_ros needs pinocchio with coal: pip install pin") from _err

DEFAULT_MARGIN = 0.02
"""Clearance kept [m] when the config gives none."""
TABLE = {"type": "plane", "name": "table", "normal": [0.0, 0.0, 1.0], "offset": 0.0}
"""The default environment: the plane z = 0 under the base, the table the robot stands on (solid below)."""
COLLISION_KEYS = ("self", "srdf", "margin", "environment", "start_pose")
OBSTACLE_TYPES = ("plane", "box", "cylinder", "sphere", "mesh")


@dataclass(frozen=True)
class Obstacle:
    """A fixed body of the workcell in the robot's base frame: ``geometry`` (coal) at ``placement``."""

    name: str
    kind: str
    geometry: object
    placement: object  # pin.SE3

    def describe(self) -> str:
        """Name and kind, for messages."""
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


def default_table() -> Obstacle:
    """The table the robot stands on: the plane z = 0 of its base frame, solid below."""
    return obstacle(TABLE, 0, None, (), "collision.environment[0]")



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
