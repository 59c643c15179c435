"""Linear bounds on the parameters (Sousa & Cortesão 2014 eq. 25, 26, 28) and the ``bounds:`` config mapping.

The LMI mathematics live in :mod:`dynid_ros.dynamics.feasibility`; this module holds the bounds a user states
(link masses, total mass, CoM boxes, sign of friction and armature): parsed from the config, turned
into cvxpy constraints, and checked on a result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from dynid_ros.errors import ConfigError
from dynid_ros.robot.parameters import ParameterLayout


def _range(value: object, what: str) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in value)  # type: ignore[union-attr]
    except (TypeError, ValueError) as err:
        raise ConfigError(f"bounds: {what} must be [lo, hi], not {value!r}") from err
    if not lo <= hi:
        raise ConfigError(f"bounds: {what}: lower bound {lo} is above upper bound {hi}")
    return lo, hi


@dataclass
class Bounds:
    """Optional linear bounds on the parameters (Sousa & Cortesão 2014 eq. 25, 26, 28).

    Attributes:
        link_mass: link index -> (lo, hi) [kg].
        total_mass: (lo, hi) on the sum of the identified links' masses [kg].
        com_box: link index -> (3, 2) CoM box ``[[xlo, xhi], [ylo, yhi], [zlo, zhi]]`` in the
            joint frame [m], imposed as ``m lo <= m c <= m hi`` (linear, Sousa & Cortesão 2014 eq. 26).
        friction_nonnegative: viscous and Coulomb friction >= 0 (Sousa & Cortesão 2014 eq. 27-28).
        armature_nonnegative: armature >= 0.
    """

    link_mass: dict[int, tuple[float, float]] = field(default_factory=dict)
    total_mass: tuple[float, float] | None = None
    com_box: dict[int, np.ndarray] = field(default_factory=dict)
    friction_nonnegative: bool = True
    armature_nonnegative: bool = True

    KEYS = ("link_mass", "total_mass", "com_box", "friction_nonnegative", "armature_nonnegative")

    @classmethod
    def from_config(cls, mapping: Mapping | None, layout: ParameterLayout) -> Bounds:
        """Bounds from the ``bounds:`` config mapping / CLI options.

        ``link_mass`` is ``[lo, hi]`` for every link, or ``{link_name: [lo, hi], default: [lo, hi]}``;
        ``total_mass: [lo, hi]``; ``com_box: {link_name: [[xlo, xhi], [ylo, yhi], [zlo, zhi]]}``;
        ``friction_nonnegative`` and ``armature_nonnegative``: booleans (default true).
        """
        mapping = dict(mapping or {})
        unknown = sorted(set(mapping) - set(cls.KEYS))
        if unknown:
            raise ConfigError(f"bounds: unknown key(s) {', '.join(map(str, unknown))}; "
                              f"allowed: {', '.join(cls.KEYS)}")
        out = cls()
        links = list(layout.links)

        def link_index(name: object, what: str) -> int:
            if name not in links:
                raise ConfigError(f"bounds: {what}: unknown link {name!r} (identified links: {', '.join(links)})")
            return links.index(name)

        masses = mapping.get("link_mass")
        if isinstance(masses, Mapping):
            default = masses.get("default")
            if default is not None:
                out.link_mass = dict.fromkeys(range(len(links)), _range(default, "link_mass.default"))
            for name, value in masses.items():
                if name != "default":
                    out.link_mass[link_index(name, "link_mass")] = _range(value, f"link_mass.{name}")
        elif masses is not None:
            out.link_mass = dict.fromkeys(range(len(links)), _range(masses, "link_mass"))
        if mapping.get("total_mass") is not None:
            out.total_mass = _range(mapping["total_mass"], "total_mass")
        boxes = mapping.get("com_box")
        if boxes is not None:
            if not isinstance(boxes, Mapping):
                raise ConfigError("bounds: com_box must map link names to [[xlo, xhi], [ylo, yhi], [zlo, zhi]]")
            for name, value in boxes.items():
                k = link_index(name, "com_box")
                try:
                    rows = list(value)
                except TypeError as err:
                    raise ConfigError(f"bounds: com_box.{name} must be [[xlo, xhi], [ylo, yhi], [zlo, zhi]]") from err
                if len(rows) != 3:
                    raise ConfigError(f"bounds: com_box.{name} must be [[xlo, xhi], [ylo, yhi], [zlo, zhi]]")
                out.com_box[k] = np.array([_range(r, f"com_box.{name}[{a}]") for a, r in zip("xyz", rows)])
        for key in ("friction_nonnegative", "armature_nonnegative"):
            if key in mapping:
                if not isinstance(mapping[key], bool):
                    raise ConfigError(f"bounds: {key} must be true or false, not {mapping[key]!r}")
                setattr(out, key, mapping[key])
        return out

    def constraints(self, delta, layout: ParameterLayout, scale: np.ndarray | None = None) -> list:
        """cvxpy constraints on the expression ``delta`` (rows divided by ``scale`` of their main parameter)."""
        import cvxpy as cp

        scale = np.ones(layout.n_parameters) if scale is None else scale
        out = []
        for k, (lo, hi) in self.link_mass.items():
            i = layout.link_slice(k).start
            out += [delta[i] / scale[i] >= lo / scale[i], delta[i] / scale[i] <= hi / scale[i]]
        if self.total_mass is not None:
            idx = layout.indices("m")
            s = float(np.sum(scale[idx]))
            total = cp.sum(delta[idx]) / s
            out += [total >= self.total_mass[0] / s, total <= self.total_mass[1] / s]
        for k, box in self.com_box.items():
            i = layout.link_slice(k).start
            for a in range(3):
                first = delta[i + 1 + a] / scale[i + 1 + a]
                mass = delta[i] / scale[i + 1 + a]
                out += [first >= box[a, 0] * mass, first <= box[a, 1] * mass]
        for symbol in self.nonnegative_symbols(layout):
            idx = layout.indices(symbol)
            out.append(delta[idx] / scale[idx] >= 0)
        return out

    def nonnegative_symbols(self, layout: ParameterLayout) -> list[str]:
        """Symbols of the joint terms these bounds keep non-negative (of those in ``layout``)."""
        symbols = ["fv", "fc"] if self.friction_nonnegative else []
        symbols += ["Ia"] if self.armature_nonnegative else []
        return [s for s in symbols if s in layout.joint_terms]

    def violations(self, delta: np.ndarray, layout: ParameterLayout, tol: float = 1e-9,
                   scale: np.ndarray | None = None) -> list[str]:
        """Readable list of the bounds ``delta`` violates (beyond ``tol``, relative where it applies; the
        sign of a joint term beyond ``tol * scale`` of that term, ``scale`` default 1)."""
        delta = np.asarray(delta, dtype=float)
        scale = np.ones(layout.n_parameters) if scale is None else np.asarray(scale, dtype=float)
        out = []
        for k, (lo, hi) in self.link_mass.items():
            m = delta[layout.link_slice(k).start]
            if not lo - tol * max(1.0, abs(lo)) <= m <= hi + tol * max(1.0, abs(hi)):
                out.append(f"link {layout.links[k]}: mass {m:.6g} outside [{lo}, {hi}]")
        if self.total_mass is not None:
            total = float(np.sum(delta[layout.indices("m")]))
            lo, hi = self.total_mass
            if not lo - tol * max(1.0, lo) <= total <= hi + tol * max(1.0, hi):
                out.append(f"total mass {total:.6g} outside [{lo}, {hi}]")
        for k, box in self.com_box.items():
            p = delta[layout.link_slice(k)]
            for a in range(3):
                slack = tol * max(1.0, abs(p[0]))
                if not box[a, 0] * p[0] - slack <= p[1 + a] <= box[a, 1] * p[0] + slack:
                    out.append(f"link {layout.links[k]}: CoM {'xyz'[a]} outside [{box[a, 0]}, {box[a, 1]}]")
        for symbol in self.nonnegative_symbols(layout):
            for j, i in enumerate(layout.indices(symbol)):
                if delta[i] < -tol * scale[i]:
                    out.append(f"joint {layout.joints[j]}: {symbol} = {delta[i]:.3g} < 0")
        return out
