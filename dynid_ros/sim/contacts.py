"""What the simulated robot touched: MuJoCo's contacts of the checked pairs and the smallest clearance of a run.

The MuJoCo model holds the robot's collision geometry and its workcell, and the pairs the collision model checks
(:mod:`dynid_ros.robot.mujoco_spec`), each reported by MuJoCo's collision detection from ``watch_m`` apart and
pushing only on contact. :class:`ContactMonitor` reads MuJoCo's contacts after every step (the state the step
started from): a contact is a pair of the collision model (two links, or a link and an obstacle) whose shapes
touch or intersect (MuJoCo's signed distance < 0); it counts one contact each time a pair starts touching, and keeps
per pair the first time and the deepest penetration, and the smallest clearance of any pair (exact where it is below
``watch_m``; beyond it, the run kept at least ``watch_m`` everywhere). The numbers are MuJoCo's own (its convex
collision detection on the same convex shapes), not the collision model's (pinocchio + coal).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dynid_ros.robot.collision_model import CollisionModel
from dynid_ros.robot.mujoco_spec import pair_row

WATCH_FACTOR = 2.0
"""The simulator reports clearances below this many times the collision margin (the margin itself is then seen)."""
WATCH_FLOOR = 0.01
"""[m] The least watch distance (a margin of 0 still shows how close the pairs came)."""


def watch_distance(margin: float) -> float:
    """The distance [m] from which the simulator reports a pair: :data:`WATCH_FACTOR` times ``margin``, at least
    :data:`WATCH_FLOOR`."""
    return max(WATCH_FACTOR * float(margin), WATCH_FLOOR)


@dataclass
class PairContact:
    """A pair that touched: ``first_s`` the time it first did, ``depth_m`` its deepest penetration, ``contacts``
    how many times it started touching."""

    pair: str
    first_s: float
    depth_m: float
    contacts: int = 1


@dataclass
class ContactReport:
    """The contacts and the smallest clearance of a run (module docstring). ``smallest_clearance_m`` None: no pair
    came within ``watch_m``."""

    watch_m: float
    margin_m: float
    contacts: int = 0
    pairs: dict[str, PairContact] = field(default_factory=dict)
    smallest_clearance_m: float | None = None
    between: str | None = None
    at_s: float | None = None
    kept_m: float | None = None

    def summary(self) -> dict:
        """The report as plain data (JSON/YAML): ``contacts``, ``contact_pairs``, ``smallest_clearance_m``
        (``null``: more than ``watch_m``), ``between``, ``at_s``, ``kept_m``, ``margin_m``, ``watch_m``."""
        return {"contacts": self.contacts,
                "contact_pairs": [{"pair": c.pair, "first_s": round(c.first_s, 4), "depth_m": round(c.depth_m, 5),
                                   "contacts": c.contacts} for c in self.pairs.values()],
                "smallest_clearance_m": None if self.smallest_clearance_m is None else round(
                    self.smallest_clearance_m, 5),
                "between": self.between, "at_s": None if self.at_s is None else round(self.at_s, 4),
                "kept_m": self.kept_m, "margin_m": self.margin_m, "watch_m": self.watch_m}

    def line(self) -> str:
        """One line for a console or a log (:func:`describe`)."""
        return describe(self.summary())


def describe(summary: dict) -> str:
    """One line of a :meth:`ContactReport.summary`: the number of contacts, the pairs, the smallest clearance."""
    if summary["smallest_clearance_m"] is None:
        clearance = f"smallest clearance more than {100 * summary['watch_m']:.1f} cm"
    else:
        clearance = (f"smallest clearance {100 * summary['smallest_clearance_m']:.2f} cm ({summary['between']} at "
                     f"t = {summary['at_s']:.3f} s)")
    if not summary["contacts"]:
        return f"contacts in MuJoCo: 0; {clearance}"
    pairs = "; ".join(f"{c['pair']} at t = {c['first_s']:.3f} s, {100 * c['depth_m']:.1f} cm deep"
                      for c in summary["contact_pairs"])
    return f"contacts in MuJoCo: {summary['contacts']} ({pairs}); {clearance}"


class ContactMonitor:
    """Reads MuJoCo's contacts of the collision model's pairs after each step (module docstring)."""

    def __init__(self, mj_model: object, collision: CollisionModel, watch_m: float) -> None:
        self.collision, self.watch_m = collision, float(watch_m)
        rows = {}
        for p in range(mj_model.npair):
            first, second = int(mj_model.pair_geom1[p]), int(mj_model.pair_geom2[p])
            rows[(min(first, second), max(first, second))] = pair_row(mj_model.pair(p).name)
        self._rows = rows
        self.reset()

    def reset(self) -> None:
        """Forget the run (a new one starts)."""
        self.report = ContactReport(self.watch_m, self.collision.margin)
        self._touching: set[int] = set()

    def take(self) -> ContactReport:
        """The report so far; a new one starts now (a pair touching now is not counted again in it)."""
        report, self.report = self.report, ContactReport(self.watch_m, self.collision.margin)
        return report

    def observe(self, data: object, t: float) -> None:
        """The contacts MuJoCo found for the state at ``t`` (call after ``mj_step``)."""
        n = int(data.ncon)
        if n == 0:
            self._touching = set()
            return
        geoms = np.sort(np.asarray(data.contact.geom[:n], dtype=int), axis=1)
        distances = np.asarray(data.contact.dist[:n], dtype=float)
        nearest: dict[int, float] = {}
        for (first, second), distance in zip(geoms.tolist(), distances.tolist()):
            row = self._rows.get((first, second))
            if row is not None and distance < nearest.get(row, math.inf):
                nearest[row] = distance
        report = self.report
        touching = {row for row, distance in nearest.items() if distance < 0}
        for row in touching:
            name, depth = self.collision.rows[row].name, -nearest[row]
            if name not in report.pairs:
                report.pairs[name] = PairContact(name, t, depth, 0)
            contact = report.pairs[name]
            contact.depth_m = max(contact.depth_m, depth)
            if row not in self._touching:
                contact.contacts += 1
                report.contacts += 1
        self._touching = touching
        if nearest:
            row, distance = min(nearest.items(), key=lambda item: item[1])
            if report.smallest_clearance_m is None or distance < report.smallest_clearance_m:
                report.smallest_clearance_m, report.at_s = distance, t
                report.between, report.kept_m = self.collision.rows[row].name, self.collision.rows[row].margin
