"""Distances over the samples of a motion: the walk of one pair of parts (coal) that skips every sample a speed
bound says cannot matter, and a part against a plane at every sample at once (its support point).

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

import numpy as np

from dynid_ros.robot.clearance import Clearance, Row, Witness

try:
    import coal
except ImportError as _err:  # pragma: no cover - packaging problem
    raise ImportError("dynid_ros needs pinocchio with coal: pip install pin") from _err


class SampleWalk:
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

    def pair(self, best: list[Clearance], row: Row, i: int, j: int, geometries: tuple[object, object],
             rotations: np.ndarray, positions: np.ndarray, bound: list[float], matters: float, *,
             placement: object = None) -> None:
        """Parts ``i``, ``j`` (or part ``i`` and obstacle ``j`` at ``placement``, a pin.SE3), of ``geometries``, at
        the samples where ``bound`` lets their distance come below what matters (``matters``, or the window's
        smallest so far plus the band)."""
        first, second, result, ends, band = self.first, self.second, self.result, self.ends, self.band
        geometry, second_geometry = geometries
        if row.obstacle:
            second.setRotation(placement.rotation)
            second.setTranslation(placement.translation)
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
        world = np.einsum("nij,nj->ni", rotations, support_points(geometry, local)) + positions
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


def has_support(geometry: object) -> bool:
    """Whether :func:`support_points` knows ``geometry``'s shape."""
    return isinstance(geometry, (coal.ConvexBase, coal.Box, coal.Sphere, coal.Capsule, coal.Cylinder))


def support_points(geometry: object, directions: np.ndarray) -> np.ndarray:
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
