"""The collision model of a robot and its workcell: convex parts on the bodies of the kinematic model, obstacles,
the checked rows; the kinematics of the bodies over a motion, the clearance scan of a motion, its check, and
the distance gradients (witness points, joint axes). Built by :func:`dynid_ros.robot.collision.load_collision_model`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from dynid_ros.errors import CollisionError
from dynid_ros.robot.clearance import Clearance, Row, Witness, violation
from dynid_ros.robot.distance_scan import SampleWalk, has_support
from dynid_ros.robot.model import PRISMATIC, RobotModel, joint_kinematics
from dynid_ros.robot.workcell import Obstacle

try:
    import coal
except ImportError as _err:  # pragma: no cover - packaging problem
    raise ImportError("dynid_ros needs pinocchio with coal: pip install pin") from _err

REST_TOLERANCE = 1e-4
"""[m]: a pair closer than its margin where the robot rests keeps that clearance less this (numerical noise)."""
SPEED_SLACK = 1.05
"""Between two samples the bound on a pair's relative speed is the larger of its two sample values times this."""


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
        """Rotation and position (world) of part ``i`` at sample ``s`` of ``kin``."""
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
        walk = SampleWalk(n, windows, band)
        order = list(range(len(self.rows)) if rows is None else rows)
        best_slack = math.inf
        out: list[list[Clearance]] = []
        for r in order:
            row = self.rows[r]
            matters = row.margin + (best_slack if floor is None else floor)
            best = [Clearance(row, math.inf, -1) for _ in range(windows)]
            for i, j in row.pairs:
                if row.obstacle and isinstance(self.obstacles[j].geometry, coal.Halfspace) and \
                        has_support(self.parts[i].geometry):
                    walk.plane(best, row, i, j, self.parts[i].geometry, self.obstacles[j].geometry,
                               rotations[:, i], positions[:, i])
                else:
                    other = self.obstacles[j] if row.obstacle else self.parts[j]
                    walk.pair(best, row, i, j, (self.parts[i].geometry, other.geometry), rotations, positions,
                              self._bound(speeds, row, i, j, dt), matters,
                              placement=other.placement if row.obstacle else None)
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
