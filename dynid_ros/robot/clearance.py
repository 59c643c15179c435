"""What a clearance check finds: the checked pair (:class:`Row`), an evaluated sample (:class:`Witness`), the smallest
clearance of a pair over a motion (:class:`Clearance`) and the one line of a violation (:func:`violation`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np


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
        """The pair, for messages: ``first and second``."""
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
        """The clearance of ``row`` at the sample of ``witness``."""
        return cls(row, witness.distance, witness.index, witness.part, witness.other,
                   (witness.first, witness.second), witness.normal)

    @property
    def slack(self) -> float:
        """Distance minus the clearance the row keeps (negative: violated)."""
        return self.distance - self.row.margin




def violation(clearance: Clearance, t: np.ndarray, what: str = "the motion") -> str:
    """The one line of a clearance below its row's margin."""
    at = float(t[clearance.index])
    row = clearance.row
    if clearance.distance < 0:
        return (f"collision in {what}: {row.name} intersect {100 * -clearance.distance:.1f} cm deep at "
                f"t = {at:.3f} s")
    return (f"collision in {what}: {row.name} come within {100 * clearance.distance:.1f} cm of each other at "
            f"t = {at:.3f} s (clearance kept: {100 * row.margin:.1f} cm)")
