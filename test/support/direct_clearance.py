"""The clearance of a motion computed with pinocchio and coal directly (not through dynid_ros.robot.collision): the
independent measure the collision tests hold the package's results to.

The robot's ``<collision>`` geometry is loaded by pinocchio on the full URDF model (every movable joint; the ones the
trajectory does not move stay at ``rest``), each mesh replaced by its convex hull; distances by
``pinocchio.computeDistances`` at every sample. Self pairs: two geometries on different bodies that are not parent
and child (bodies rigidly joined by a joint the trajectory does not move count as one), not in contact at the start
pose. Environment: the lowest point of every moving geometry above the table z = 0.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import coal
import numpy as np
import pinocchio as pin


@dataclass
class DirectClearance:
    """Per motion: the smallest self distance over every sample and pair (``self_pair``), the lowest point of any
    moving geometry (``lowest``, ``lowest_link``), the fraction of samples in self-collision and below the table,
    and the smallest distance of the pairs that have at least ``2 margin`` at the start pose (``regular``)."""

    self_distance: float
    self_pair: tuple[str, str] | None
    lowest: float
    lowest_link: str
    in_collision: float
    below_table: float
    regular: float
    regular_pair: tuple[str, str] | None


def resolved_urdf(urdf: Path, package_dirs: dict[str, Path]) -> str:
    """The URDF text with ``package://name/`` replaced by the folder given for ``name``."""
    text = Path(urdf).read_text()
    for name, folder in package_dirs.items():
        text = text.replace(f"package://{name}/", f"{Path(folder).resolve()}/")
    return text


def direct_clearance(urdf_text: str, joints: list[str], q: np.ndarray, rest: dict[str, float] | None = None,
                     start: np.ndarray | None = None, margin: float = 0.02) -> DirectClearance:
    """The clearance of the samples ``q`` (N, len(joints)) of the robot of ``urdf_text``."""
    model = pin.buildModelFromXML(urdf_text)
    geom = pin.buildGeomFromUrdfString(model, urdf_text, pin.COLLISION)
    for obj in geom.geometryObjects:
        if isinstance(obj.geometry, coal.BVHModelBase):
            obj.geometry.buildConvexHull(True, "Qt")
            obj.geometry = obj.geometry.convex
    moving = {model.getJointId(j) for j in joints}
    body = {}
    for j in range(model.njoints):  # a joint the motion does not move welds its child to its parent
        k = j
        while k > 0 and k not in moving:
            k = model.parents[k]
        body[j] = k
    objects = geom.geometryObjects
    links = [model.frames[o.parentFrame].name for o in objects]
    base = pin.neutral(model)
    for name, value in (rest or {}).items():
        base[model.joints[model.getJointId(name)].idx_q] = value
    columns = [model.joints[model.getJointId(j)].idx_q for j in joints]

    def configuration(sample: np.ndarray) -> np.ndarray:
        config = base.copy()
        config[columns] = sample
        return config

    candidates = []
    for a, b in itertools.combinations(range(len(objects)), 2):
        ba, bb = body[objects[a].parentJoint], body[objects[b].parentJoint]
        parent_a = body[model.parents[ba]] if ba > 0 else -1
        parent_b = body[model.parents[bb]] if bb > 0 else -1
        if ba != bb and parent_a != bb and parent_b != ba:
            candidates.append((a, b))
    for a, b in candidates:
        geom.addCollisionPair(pin.CollisionPair(a, b))
    data, gdata = model.createData(), geom.createData()
    start = q[0] if start is None else start
    pin.computeDistances(model, data, geom, gdata, configuration(start))
    at_start = np.array([r.min_distance for r in gdata.distanceResults])
    checked = at_start > 0.005  # pairs touching at the start pose are not checked (as MoveIt's "Default" pairs)
    regular = at_start >= 2 * margin
    vertices = [_vertices(o.geometry) for o in objects]
    moved = [i for i, o in enumerate(objects) if body[o.parentJoint] > 0]
    out = DirectClearance(np.inf, None, np.inf, "", 0.0, 0.0, np.inf, None)
    hits = below = 0
    for sample in q:
        pin.computeDistances(model, data, geom, gdata, configuration(sample))
        d = np.array([r.min_distance for r in gdata.distanceResults])
        d_checked = np.where(checked, d, np.inf)
        k = int(np.argmin(d_checked))
        if d_checked[k] < out.self_distance:
            out.self_distance, out.self_pair = float(d_checked[k]), (links[candidates[k][0]], links[candidates[k][1]])
        d_regular = np.where(regular, d, np.inf)
        k = int(np.argmin(d_regular))
        if d_regular[k] < out.regular:
            out.regular, out.regular_pair = float(d_regular[k]), (links[candidates[k][0]], links[candidates[k][1]])
        hits += bool(np.any(d_checked < 0))
        heights = [float((gdata.oMg[i].rotation[2] @ vertices[i].T).min() + gdata.oMg[i].translation[2])
                   for i in moved]
        k = int(np.argmin(heights))
        if heights[k] < out.lowest:
            out.lowest, out.lowest_link = heights[k], links[moved[k]]
        below += heights[k] < 0
    out.in_collision, out.below_table = hits / len(q), below / len(q)
    return out


def _vertices(geometry: object) -> np.ndarray:
    if isinstance(geometry, coal.ConvexBase):
        return np.array(geometry.points())
    if isinstance(geometry, coal.Box):
        h = np.array(geometry.halfSide)
        return np.array([[a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)]) * h
    if isinstance(geometry, coal.Sphere):
        return np.array([[0.0, 0.0, -geometry.radius]])
    if isinstance(geometry, coal.Cylinder):
        angles = np.linspace(0, 2 * np.pi, 64, endpoint=False)
        ring = np.stack([geometry.radius * np.cos(angles), geometry.radius * np.sin(angles), np.zeros(64)], 1)
        return np.vstack([ring + [0, 0, geometry.halfLength], ring - [0, 0, geometry.halfLength]])
    raise TypeError(f"no vertices for {type(geometry).__name__}")
