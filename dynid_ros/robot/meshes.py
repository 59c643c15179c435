"""Collision meshes: the files a URDF names (``package://``, ``file://``, relative paths) and their convex hulls.

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
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dynid_ros.errors import ModelError
from dynid_ros.robot.resources import PACKAGE, share_directories
from dynid_ros.robot.urdf_document import read_urdf, to_text
from dynid_ros.robot.urdf_source import MESH_SCHEMES, resolve_mesh_uri

try:
    import coal
except ImportError as _err:  # pragma: no cover - packaging problem
    raise ImportError("dynid_ros needs pinocchio with coal: pip install pin") from _err


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
    except Exception:  # qhull's precision error on near-degenerate input (a facet nearly flat, points nearly equal)
        try:  # qhull's remedy for it: joggled input ("QJ", perturbations near the round-off, always simplicial)
            geometry.buildConvexHull(True, "QJ")
        except Exception as err:  # a flat or degenerate mesh
            raise ModelError(f"{name}: its convex hull cannot be built ({str(err).strip().splitlines()[0]})") from err
    if geometry.convex is None or geometry.convex.num_points < 4:
        raise ModelError(f"{name}: its convex hull cannot be built (a flat mesh?)")
    return geometry.convex


def bounding_points(geometry: object) -> np.ndarray:
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
