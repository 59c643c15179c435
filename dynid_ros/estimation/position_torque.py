"""A per-joint position-dependent torque: a spring, a cable, a gravity compensator the URDF lacks.

The torque of joint ``j`` gains a low-order series in its own angle, ``sum_k c_k P_k(x)``, with ``x`` the angle
scaled to [-1, 1] over the identification motion and ``P_k`` the Legendre polynomials of degree ``k = 1 ..``
:data:`POSITION_ORDER` (the order of the series with which :mod:`dynid_ros.estimation.residual_structure` flags a
residual as a function of the position, so the term spans what the flag detected). Why a polynomial and not
``sin(k q), cos(k q)``: a spring is linear in the angle and a cable or a counterbalance smooth over a joint's
motion, which rarely spans a full turn; a Fourier series in ``q`` needs a full turn to be well conditioned and its
first harmonic is exactly what the gravity columns of the joint already hold. Why Legendre: ``P_k`` (k >= 1) has
zero mean over the range and ``|P_k| <= 1`` on it, so each ``c_k`` is a torque [N m] at the motion's ends.
The series also carries its own constant ``c_0 P_0`` (:attr:`PositionSeries.constant`): a spring ``k (q - q_0)``
whose rest angle lies away from the motion's centre adds a constant torque ``k (centre - q_0)`` as large as its
swing, and a cable or counterbalance one as large as its weight. Left to the offset-friction column, that constant
is judged by the offset's prior (a share of the joint's RMS torque, which the evidence narrows when the robot's
friction is small, :mod:`dynid_ros.estimation.hyperparameters`); the fit then explains it, and the spring's swing
with it, by the link's gravity columns (measured on a 3-link arm with an 8 N m/rad spring on the shoulder: the
link's mass at 4x its CAD value and the term at 0.67 N m of its 7.4 N m). With the constant the term's own, the
offset keeps its prior and the two share the constant by their prior variances (both Gaussian: a well-posed MAP).
A term read from an older result has no constant (``constant`` absent: False).

The columns act on joint ``j``'s rows only (block-structured like friction). The term still competes with the
gravity columns (they contain sin/cos of ``q_j``), so it gets a zero-mean Gaussian prior: each ``c_k`` with standard
deviation the joint's RMS measured torque (a term cannot be larger than all the torque the joint measures; the
width :func:`dynid_ros.estimation.prior.joint_term_scales` gives the offset friction). With noise variance
``s_j^2`` of the joint's rows, the term's coefficients can be profiled out of the MAP problem exactly (they are
unconstrained and Gaussian): for the joint's rows ``[W tau]``, with ``Q = P^T P`` and ridge ``lambda = s_j^2 /
prior_std^2``,

    min_c ||r - P c||^2 + lambda ||c||^2 = r^T (I - P (Q + lambda I)^-1 P^T) r = ||(I - P H P^T) r||^2,

``H = V diag(1 / ((d + lambda) (1 + sqrt(lambda / (d + lambda))))) V^T`` with ``Q = V diag(d) V^T`` (the square
root of the left matrix has the same eigenvectors). The estimator then runs unchanged on the rows ``(I - P H P^T)
[W tau]`` (per row block: :class:`~dynid_ros.dynamics.row_chunks.RowChunks`, so a long recording is never held
whole), and the coefficients follow from its estimate: ``c = (Q + lambda I)^-1 P^T (tau - W beta)``. Their
standard deviation is that of ``c`` given the rigid-body estimate: ``s_j sqrt(diag((Q + lambda I)^-1))``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from numpy.polynomial import legendre

from dynid_ros.dynamics.row_chunks import RowChunks, as_row_chunks
from dynid_ros.errors import DataError
from dynid_ros.estimation.normal_equations import NormalEquations
from dynid_ros.estimation.residual_model import integrated_autocorrelation_time
from dynid_ros.estimation.residual_structure import (
    SERIES_ORDER,
    SIGNIFICANCE,
    STRUCTURED_SHARE,
    explained_share,
    share_p_value,
)

POSITION_ORDER = SERIES_ORDER
"""Degree of the Legendre series of a position-dependent torque (that of the residual-structure flag)."""


@dataclass(frozen=True)
class PositionSeries:
    """The series of joint ``joint`` (index ``index`` in the model's joints): ``x = (q - center) / half_range``,
    Legendre polynomials of degree 1 .. ``order``."""

    joint: str
    index: int
    center: float
    half_range: float
    order: int = POSITION_ORDER
    constant: bool = False
    """Whether the series carries its own constant ``P_0`` (module docstring; every term identified now does)."""

    @classmethod
    def over(cls, joint: str, index: int, q: np.ndarray, order: int = POSITION_ORDER) -> PositionSeries:
        """The series of ``joint`` (with its constant) scaled to the range of its positions ``q`` (the
        identification motion)."""
        low, high = float(np.min(q)), float(np.max(q))
        if not high > low:
            raise DataError(f"joint {joint} does not move: no position-dependent torque to identify")
        return cls(joint, int(index), 0.5 * (low + high), 0.5 * (high - low), int(order), True)

    @property
    def columns(self) -> int:
        """Number of coefficients: ``order``, plus one with the constant."""
        return self.order + int(self.constant)

    def basis(self, q: np.ndarray) -> np.ndarray:
        """(samples, :attr:`columns`) columns ``P_k(x)`` at the joint's positions ``q`` (``k`` from 0 with the
        constant, else from 1)."""
        x = (np.asarray(q, dtype=float).reshape(-1) - self.center) / self.half_range
        return legendre.legvander(x, self.order)[:, 0 if self.constant else 1:]

    def torque(self, q: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
        """The term's torque at the joint's positions ``q``."""
        return self.basis(q) @ np.asarray(coefficients, dtype=float)

    def to_dict(self) -> dict:
        """The series' basis (Legendre), order, center and half range."""
        return {"basis": "legendre", "order": self.order, "constant": self.constant, "center": self.center,
                "half_range": self.half_range}


@dataclass
class JointProfile:
    """One joint's profiling: its series, ``Q = P^T P``, the ridge, ``H``, ``P^T W`` and ``P^T tau`` over the
    rows in the fit, and the joint's noise variance."""

    series: PositionSeries
    gram: np.ndarray
    ridge: float
    half: np.ndarray
    cross_w: np.ndarray
    cross_tau: np.ndarray
    noise: float

    def coefficients(self, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(c, std)`` of the term given the rigid-body estimate ``beta`` (module docstring)."""
        inverse = np.linalg.inv(self.gram + self.ridge * np.eye(self.gram.shape[0]))
        c = inverse @ (self.cross_tau - self.cross_w @ np.asarray(beta, dtype=float))
        return c, np.sqrt(self.noise * np.clip(np.diag(inverse), 0.0, None))


def half_matrix(gram: np.ndarray, ridge: float) -> np.ndarray:
    """``H`` with ``(I - P H P^T)^2 = I - P (Q + ridge I)^-1 P^T`` for ``Q = P^T P`` = ``gram`` (module docstring)."""
    d, v = np.linalg.eigh(gram)
    d = np.clip(d, 0.0, None)
    shrink = ridge / np.maximum(d + ridge, 1e-300)
    return (v / ((d + ridge) * (1.0 + np.sqrt(shrink)))) @ v.T


def _joint_rows(first: int, count: int, n_dof: int, joint: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions within a block of ``count`` rows starting at row ``first`` of ``joint``'s rows, and their samples."""
    rows = np.arange(first, first + count)
    local = np.flatnonzero(rows % n_dof == joint)
    return local, rows[local] // n_dof


def profile(w_b: np.ndarray | RowChunks, tau: np.ndarray, q: np.ndarray, terms: list[PositionSeries],
            prior_std: np.ndarray, noise: np.ndarray, rows: np.ndarray | None = None) -> list[JointProfile]:
    """The profiling of every term (module docstring) over the rows in the fit ``rows`` (None: all):
    ``prior_std`` [N m] and ``noise`` (variance [N^2 m^2]) per term, in ``terms``' order."""
    q = np.asarray(q, dtype=float)
    n_dof = q.shape[1]
    tau = np.asarray(tau, dtype=float).reshape(-1)
    keep = np.ones(tau.size, dtype=bool) if rows is None else np.asarray(rows, dtype=bool).reshape(-1)
    w = as_row_chunks(w_b)
    columns = [_masked_basis(t, q, keep, n_dof) for t in terms]
    cross = [np.zeros((t.columns, w.shape[1])) for t in terms]
    for first, block in w.chunks():
        for i, t in enumerate(terms):
            local, _ = _joint_rows(first, block.shape[0], n_dof, t.index)
            cross[i] += columns[i][(first + local) // n_dof].T @ block[local]
    out = []
    for i, t in enumerate(terms):
        p = columns[i]
        gram = p.T @ p
        ridge = float(noise[i]) / float(prior_std[i]) ** 2
        out.append(JointProfile(t, gram, ridge, half_matrix(gram, ridge), cross[i],
                                p.T @ tau.reshape(-1, n_dof)[:, t.index], float(noise[i])))
    return out


def _masked_basis(term: PositionSeries, q: np.ndarray, keep: np.ndarray, n_dof: int) -> np.ndarray:
    """The term's columns per sample, zero where the joint's row is not in the fit."""
    return term.basis(q[:, term.index]) * keep.reshape(-1, n_dof)[:, term.index, None]


def profiled_vector(vector: np.ndarray, q: np.ndarray, profiles: list[JointProfile],
                    rows: np.ndarray | None = None) -> np.ndarray:
    """``(I - P H P^T) vector`` for a (samples * n_dof,) vector of rows (e.g. the torques)."""
    q = np.asarray(q, dtype=float)
    n_dof = q.shape[1]
    keep = np.ones(q.size, dtype=bool) if rows is None else np.asarray(rows, dtype=bool).reshape(-1)
    out = np.array(vector, dtype=float).reshape(-1, n_dof)
    for p in profiles:
        columns = _masked_basis(p.series, q, keep, n_dof)
        out[:, p.series.index] -= columns @ (p.half @ (columns.T @ out[:, p.series.index]))
    return out.reshape(-1)


def profiled_rows(w_b: np.ndarray | RowChunks, q: np.ndarray, profiles: list[JointProfile],
                  rows: np.ndarray | None = None) -> RowChunks:
    """``(I - P H P^T) W`` block by block (each block from ``w_b``'s, the columns from ``q``)."""
    w = as_row_chunks(w_b)
    q = np.asarray(q, dtype=float)
    n_dof = q.shape[1]
    keep = np.ones(q.size, dtype=bool) if rows is None else np.asarray(rows, dtype=bool).reshape(-1)
    columns = [_masked_basis(p.series, q, keep, n_dof) for p in profiles]
    shifts = [p.half @ p.cross_w for p in profiles]

    def blocks() -> Iterator[np.ndarray]:
        for first, block in w.chunks():
            block = block.copy()
            for p, c, shift in zip(profiles, columns, shifts):
                local, samples = _joint_rows(first, block.shape[0], n_dof, p.series.index)
                block[local] -= c[samples] @ shift
            yield block

    return RowChunks(blocks, w.shape)


def profiled_equations(equations: NormalEquations, n_base: int, columns: slice, ridge: float
                       ) -> tuple[NormalEquations, Callable[[np.ndarray], np.ndarray]]:
    """One joint's normal equations over ``[W P]`` (``W``: the first ``n_base`` columns, ``P``: its term's
    ``columns``) with the term's coefficients profiled out (module docstring, here on the sums): with ``M = (Q +
    ridge I)^-1``, ``W^T W - C^T M C``, ``W^T tau - C^T M p``, ``tau^T tau - p^T M p`` (``C = P^T W``, ``p = P^T
    tau``), the exact ``min_c ||tau - W beta - P c||^2 + ridge ||c||^2`` as a quadratic in ``beta``; and the
    coefficients ``c = M (p - C beta)`` given ``beta``."""
    gram, projection = equations.gram, equations.projection
    cross, q, p = gram[columns, :n_base], gram[columns, columns], projection[columns]
    m = np.linalg.inv(q + ridge * np.eye(q.shape[0]))
    profiled = NormalEquations(gram[:n_base, :n_base] - cross.T @ m @ cross, projection[:n_base] - cross.T @ m @ p,
                               float(equations.b_norm2 - p @ m @ p), equations.rows)
    return profiled, lambda beta: m @ (p - cross @ np.asarray(beta, dtype=float))


def residual_noise(residual: np.ndarray, q: np.ndarray, term: PositionSeries, rows: np.ndarray | None = None
                   ) -> float:
    """Variance of joint ``term.index``'s residual (rows in the fit) once its series is fitted to it by least
    squares: the noise the joint's rows show with the term (the ridge's numerator)."""
    q = np.asarray(q, dtype=float)
    n_dof = q.shape[1]
    keep = np.ones(q.size, dtype=bool) if rows is None else np.asarray(rows, dtype=bool).reshape(-1, n_dof)
    keep = keep.reshape(-1, n_dof)[:, term.index]
    e = np.asarray(residual, dtype=float).reshape(-1, n_dof)[keep, term.index]
    p = term.basis(q[keep, term.index])
    if e.size <= p.shape[1] + 1:
        raise DataError(f"joint {term.joint}: too few samples in the fit for a position-dependent torque")
    left = e - p @ np.linalg.lstsq(p, e, rcond=None)[0]
    return max(float(left @ left) / (e.size - p.shape[1]), 1e-300)


def term_torques(terms: list[PositionSeries], coefficients: list[np.ndarray], q: np.ndarray) -> np.ndarray:
    """(samples, n_dof) torque of the terms at the positions ``q``."""
    q = np.asarray(q, dtype=float)
    out = np.zeros_like(q)
    for t, c in zip(terms, coefficients):
        out[:, t.index] += t.torque(q[:, t.index], c)
    return out


def amplitude(term: PositionSeries, coefficients: np.ndarray) -> float:
    """Half the peak-to-peak torque of the term over its range (x in [-1, 1])."""
    x = np.linspace(-1.0, 1.0, 201)
    return 0.5 * float(np.ptp(term.torque(term.center + term.half_range * x, coefficients)))


def flagged_by_position(residual: np.ndarray, q: np.ndarray, rows: np.ndarray | None = None) -> list[int]:
    """The joints whose (samples, n_dof) ``residual`` (against the recorded, unfiltered torque) is flagged as a
    function of their own position, as the report flags it (:mod:`dynid_ros.estimation.residual_structure`: a
    significant share of at least ``STRUCTURED_SHARE``), over the rows in the fit: the candidates for a term."""
    e = np.asarray(residual, dtype=float)
    keep = np.ones(e.shape, dtype=bool) if rows is None else np.asarray(rows, dtype=bool).reshape(e.shape)
    out = []
    for j in range(e.shape[1]):
        mask = keep[:, j]
        if mask.sum() < 8:
            continue
        share = explained_share(e[mask, j], np.asarray(q)[mask, j])
        n_effective = mask.sum() / integrated_autocorrelation_time(e[:, j], None if mask.all() else mask)
        if share >= STRUCTURED_SHARE and share_p_value(share, n_effective) < SIGNIFICANCE:
            out.append(j)
    return out


def terms_from_dict(terms: dict | None, joints: list[str] | tuple[str, ...], where: str = "position_torque"
                    ) -> tuple[list[PositionSeries], list[np.ndarray]] | None:
    """The series and coefficients of a ``position_torque`` mapping (joint -> ``center``, ``half_range``,
    ``order``, ``coefficients``: ``report.json`` / ``parameters.yaml``), or None when it is empty."""
    if not terms:
        return None
    try:
        series = [PositionSeries(joint, list(joints).index(joint), float(v["center"]), float(v["half_range"]),
                                 int(v["order"]), bool(v.get("constant", False))) for joint, v in terms.items()]
        coefficients = [np.asarray(v["coefficients"], dtype=float).reshape(t.columns)
                        for t, v in zip(series, terms.values())]
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise DataError(f"{where}: unreadable position_torque entry: {err}") from err
    return series, coefficients
