"""A conic solver's answer moved onto the feasible set when it misses a constraint by no more than its tolerance.

A solver stops when its residuals are below its tolerance, not at zero (:class:`~dynid_ros.dynamics.feasibility.
Tolerance`: SCS's ``eps_abs``/``eps_rel``, O'Donoghue et al. 2016; Clarabel's ``tol_feas``, Goulart & Chen 2024;
its ``reduced_tol_feas`` for an ``optimal_inaccurate`` answer). So an ``optimal`` answer may leave a link matrix an
eigenvalue ``~ tol`` below its margin, or a friction coefficient or a rotor inertia ``~ -tol`` below zero: the
solver's rounding, not the data's verdict (SCS on the real Panda run: armatures of -1.5e-8 kg m^2, 1.7e-7 of their
scale, with ``eps = 1e-6``). :func:`polish` moves such an answer onto the feasible set by alternating projections onto
each constraint (von Neumann; Bregman 1965: onto the intersection of closed convex sets) -- a link matrix's
eigenvalues clipped to the margin and the parameters read back from it, a joint term clipped to zero, a bound's
half-space -- until every constraint holds; each move is of the size of the violation, and the result says what
moved. A violation beyond the tolerance is the solver's failure and stays an error.

Violations are measured where the solver's tolerance applies: in the problem's variables (the parameters divided by
their scale, :func:`~dynid_ros.dynamics.feasibility.parameter_scales`) and its link matrices (after their
congruence, :func:`~dynid_ros.dynamics.feasibility.scaled_basis`). An eigenvalue gap of a ``k x k`` matrix counts
``1 / k`` of itself: an entrywise residual ``r`` moves an eigenvalue by at most ``k r``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dynid_ros.dynamics.bounds import Bounds
from dynid_ros.dynamics.feasibility import Tolerance, scaled_basis
from dynid_ros.errors import EstimationError
from dynid_ros.robot.parameters import ParameterLayout

ROUNDOFF = 64 * np.finfo(float).eps
"""A link matrix eigenvalue this far below the margin (relative to the matrix) is round-off of the clipping itself."""
ROUNDS = 100
"""Most rounds of alternating projections (each constraint once a round; one round suffices unless two constraints
share a parameter)."""


@dataclass
class Polished:
    """A solver's answer on the feasible set: ``delta``, and each constraint the answer as returned missed (empty:
    it held every one) with the largest miss and what the solver's tolerance allows, in the problem's units.
    ``margin_only``: every miss was of the estimator's own safety margin (a link matrix's smallest eigenvalue a
    hair under ``eps`` but positive: physically consistent as returned, as an interior-point solver leaves an active
    margin), none of a physical sign or a user's bound."""

    delta: np.ndarray
    moved: list[str] = field(default_factory=list)
    violation: float = 0.0
    allowance: float = 0.0
    margin_only: bool = True

    def message(self, solver: str) -> str:
        """One line for the console and the report."""
        more = f"; and {len(self.moved) - 3} more" if len(self.moved) > 3 else ""
        return (f"the {solver} answer missed {len(self.moved)} constraint(s) by at most {self.violation:.2g}, within "
                f"the solver's tolerance {self.allowance:.2g}: polished onto the feasible set "
                f"({'; '.join(self.moved[:3])}{more})")

    def to_dict(self, solver: str) -> dict:
        """The ``report.json`` record (``solver_polish``)."""
        return {"solver": solver, "violation": self.violation, "allowance": self.allowance, "moved": list(self.moved),
                "margin_only": self.margin_only}


@dataclass(frozen=True)
class _Miss:
    amount: float
    """In the problem's units."""
    what: str
    margin_only: bool = False
    """Only the safety margin of a link matrix, which stays positive definite."""


@dataclass
class _Constraints:
    """The constraints of a problem on ``delta``: the link LMIs ``T M(delta_k - attached_k) T >= eps`` of
    ``consistency`` with the congruence ``scales``, and ``bounds``; ``size``: the scale of each variable."""

    layout: ParameterLayout
    consistency: str
    eps: float
    bounds: Bounds
    size: np.ndarray
    scales: np.ndarray
    attached: np.ndarray

    def link_matrix(self, delta: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Link ``k``'s scaled matrix and the basis that maps its ten parameters onto it."""
        part = self.layout.link_slice(k)
        basis = scaled_basis(self.consistency, *self.scales[k])
        n = int(round(np.sqrt(basis.shape[0])))
        return (basis @ (delta[part] - self.attached[part])).reshape(n, n), basis

    def violations(self, delta: np.ndarray) -> list[_Miss]:
        """Every constraint ``delta`` does not hold."""
        layout, size, bounds = self.layout, self.size, self.bounds
        out = []
        for k, link in enumerate(layout.links):
            matrix, _ = self.link_matrix(delta, k)
            lowest = float(np.linalg.eigvalsh(0.5 * (matrix + matrix.T))[0])
            if lowest < self.eps - ROUNDOFF * max(1.0, float(np.abs(matrix).max())):
                out.append(_Miss((self.eps - lowest) / matrix.shape[0],
                                 f"link {link}: smallest eigenvalue {lowest:.3g} below the margin {self.eps:g}",
                                 lowest > 0))
        for symbol in bounds.nonnegative_symbols(layout):
            for j, i in enumerate(layout.indices(symbol)):
                if delta[i] < 0:
                    out.append(_Miss(-delta[i] / size[i], f"joint {layout.joints[j]}: {symbol} = {delta[i]:.3g} < 0"))
        for k, (lo, hi) in bounds.link_mass.items():
            i = layout.link_slice(k).start
            if not lo <= delta[i] <= hi:
                out.append(_Miss(max(lo - delta[i], delta[i] - hi) / size[i],
                                 f"link {layout.links[k]}: mass {delta[i]:.6g} outside [{lo}, {hi}]"))
        if bounds.total_mass is not None:
            idx = layout.indices("m")
            total, (lo, hi) = float(delta[idx].sum()), bounds.total_mass
            if not lo <= total <= hi:
                out.append(_Miss(max(lo - total, total - hi) / float(size[idx].sum()),
                                 f"total mass {total:.6g} outside [{lo}, {hi}]"))
        for k, box in bounds.com_box.items():
            i = layout.link_slice(k).start
            for a in range(3):
                miss = max(box[a, 0] * delta[i] - delta[i + 1 + a], delta[i + 1 + a] - box[a, 1] * delta[i])
                if miss > 0:
                    out.append(_Miss(miss / size[i + 1 + a],
                                     f"link {layout.links[k]}: CoM {'xyz'[a]} outside [{box[a, 0]}, {box[a, 1]}]"))
        return out

    def projected(self, delta: np.ndarray) -> np.ndarray:
        """One round of projections, onto each constraint's set in turn."""
        delta, layout, bounds = delta.copy(), self.layout, self.bounds
        for k in range(len(layout.links)):
            matrix, basis = self.link_matrix(delta, k)
            values, vectors = np.linalg.eigh(0.5 * (matrix + matrix.T))
            if values[0] < self.eps:  # the nearest matrix with eigenvalues >= eps, read back as ten parameters
                clipped = (vectors * np.maximum(values, self.eps)) @ vectors.T
                part = layout.link_slice(k)
                delta[part] = self.attached[part] + np.linalg.lstsq(basis, clipped.reshape(-1), rcond=None)[0]
        for symbol in bounds.nonnegative_symbols(layout):
            idx = np.asarray(layout.indices(symbol), dtype=int)
            delta[idx] = np.maximum(delta[idx], 0.0)
        for k, (lo, hi) in bounds.link_mass.items():
            i = layout.link_slice(k).start
            delta[i] = min(max(delta[i], lo), hi)
        if bounds.total_mass is not None:
            idx = np.asarray(layout.indices("m"), dtype=int)
            total = float(delta[idx].sum())
            delta[idx] += (min(max(total, bounds.total_mass[0]), bounds.total_mass[1]) - total) / idx.size
        for k, box in bounds.com_box.items():
            i = layout.link_slice(k).start
            for a in range(3):
                for sign, limit in ((-1.0, box[a, 0]), (1.0, box[a, 1])):  # sign (first - limit mass) <= 0
                    normal = np.zeros_like(delta)
                    normal[i + 1 + a], normal[i] = sign, -sign * limit
                    excess = float(normal @ delta)
                    if excess > 0:
                        delta -= excess / float(normal @ normal) * normal
        return delta


def polish(delta: np.ndarray, layout: ParameterLayout, *, consistency: str, eps: float, bounds: Bounds,
           tolerance: Tolerance, size: np.ndarray | None = None, scales: np.ndarray | None = None,
           attached: np.ndarray | None = None, who: str = "the estimate") -> Polished:
    """``delta``, a solver's answer to a problem with the link LMIs ``T M(delta_k - attached_k) T >= eps`` of
    ``consistency`` (congruence ``scales`` per link, default ones) and ``bounds``, whose variables are ``delta /
    size`` (default ones), on the feasible set (module docstring). EstimationError naming ``who`` when it misses a
    constraint by more than ``tolerance`` allows (a real violation), or when the projections do not settle."""
    delta = np.asarray(delta, dtype=float)
    n_links = len(layout.links)
    problem = _Constraints(layout, consistency, float(eps), bounds,
                           np.ones(layout.n_parameters) if size is None else np.asarray(size, dtype=float),
                           np.ones((n_links, 2)) if scales is None else np.asarray(scales, dtype=float),
                           np.zeros(layout.n_parameters) if attached is None else np.asarray(attached, dtype=float))
    if not np.all(np.isfinite(delta)):
        raise EstimationError(f"{who}: the solver's answer is not finite")
    found = problem.violations(delta)
    if not found:
        return Polished(delta)
    allowance = tolerance.allowance(float(np.max(np.abs(delta / problem.size))))
    worst = max(miss.amount for miss in found)
    if worst > allowance:
        real = [miss.what for miss in found if miss.amount > allowance]
        raise EstimationError(f"{who}: the solver's answer violates its constraints beyond the solver's tolerance "
                              f"({allowance:.2g}): {'; '.join(real[:4])}")
    polished = delta
    for _ in range(ROUNDS):
        polished = problem.projected(polished)
        if not problem.violations(polished):
            return Polished(polished, [f"{miss.what} (by {miss.amount:.2g})" for miss in found], worst, allowance,
                            all(miss.margin_only for miss in found))
    left = "; ".join(miss.what for miss in problem.violations(polished)[:4])
    raise EstimationError(f"{who}: the solver's answer misses its constraints by no more than the solver's tolerance "
                          f"but cannot be moved onto them: {left}")
