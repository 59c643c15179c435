"""One rigid body attached to a link, identified from the torque it adds (Traversaro et al. 2016).

A body rigidly attached to link k (a payload, a tool, an unmodelled load at the flange) adds its ten
parameters ``pi = [m, m c, I_o]`` (about link k's joint frame, :mod:`dynid_ros.robot.parameters`) to link k's:
its torque is ``Y_k(q, q', q'') pi`` with ``Y_k`` the ten columns of link k in the robot's regressor
(:func:`body_columns`). Given torques ``tau`` the rest of the robot does not explain, ``pi`` solves

    min ||Y_k pi - tau||^2   subject to pi fully physically consistent

by one of two solvers:

- :func:`fit_body_lmi`: the pseudo-inertia ``J(pi) >= 0`` as a linear matrix inequality (a convex SDP with
  cvxpy; Traversaro et al. 2016 section III);
- :func:`fit_body_manifold`: the parametrization ``theta = (m, c, Q, L)`` of Traversaro et al. 2016 eq. 17-22,
  ``I_c = Q diag(L2 + L3, L1 + L3, L1 + L2) Q^T`` with ``Q`` in SO(3) and ``L >= 0`` the second moments of the
  mass along the principal axes (so the triangle inequality always holds), ``m = exp(s) > 0`` and
  ``L_i = l_i^2``: every iterate is a physical body. Levenberg-Marquardt on the tangent space, with the
  retraction ``Q <- Q exp([w]x)`` after every step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dynid_ros.dynamics.feasibility import link_matrix, scaled_basis, solve
from dynid_ros.errors import EstimationError
from dynid_ros.estimation.normal_equations import NormalEquations
from dynid_ros.robot.parameters import ParameterLayout, inertia_about_com, link_parameters, skew

MANIFOLD_MAX_ITERATIONS = 500
"""Levenberg-Marquardt iterations of :func:`fit_body_manifold` at most."""
MANIFOLD_TOLERANCE = 1e-12
"""Stop when the cost decreases by less than this fraction (and the step is tiny)."""
SECOND_MOMENT_FLOOR = 1e-8
"""Smallest second moment [kg m^2] of a start point (an exactly flat start has a zero gradient in l)."""


@dataclass
class BodyFit:
    """One identified body: its ten parameters (about the link frame) and how the solver got there."""

    parameters: np.ndarray
    solver: str
    status: str
    iterations: int
    seconds: float
    residual_rms: float

    @property
    def mass(self) -> float:
        """Mass [kg]: the first of the ten parameters."""
        return float(self.parameters[0])

    @property
    def com(self) -> np.ndarray:
        """Centre of mass [m] in the link frame."""
        return inertia_about_com(self.parameters)[1]

    @property
    def inertia_com(self) -> np.ndarray:
        """Inertia [kg m^2] about the centre of mass, in the link frame's axes."""
        return inertia_about_com(self.parameters)[2]

    def to_dict(self) -> dict:
        """The fit for JSON, with the smallest eigenvalue of its pseudo-inertia matrix."""
        return {"solver": self.solver, "status": self.status, "mass": self.mass,
                "com": [float(v) for v in self.com],
                "inertia_com": [[float(v) for v in row] for row in self.inertia_com],
                "parameters": [float(v) for v in self.parameters], "iterations": self.iterations,
                "seconds": self.seconds, "residual_rms": self.residual_rms,
                "min_pseudo_inertia_eigenvalue": float(np.linalg.eigvalsh(link_matrix(self.parameters, "full"))[0])}


def body_columns(regressor_3d: np.ndarray, layout: ParameterLayout, link: str) -> np.ndarray:
    """The (N * n_dof, 10) columns of ``link`` in a regressor (N, n_dof, n_parameters): the regressor of a body
    rigidly attached to that link (its parameters about the link's joint frame)."""
    k = layout.links.index(link)
    return np.asarray(regressor_3d[:, :, layout.link_slice(k)]).reshape(-1, 10)


def mass_share(w: np.ndarray) -> float:
    """The part of the mass column of ``w`` that the other nine columns do not explain (0: the data cannot tell the
    payload's mass, e.g. on a link that moves only as its parent does along gravity; 1: fully distinct)."""
    mass, rest = w[:, 0], w[:, 1:]
    norm = float(np.linalg.norm(mass))
    if norm == 0.0:
        return 0.0
    coef = np.linalg.lstsq(rest, mass, rcond=None)[0]
    return float(np.linalg.norm(mass - rest @ coef) / norm)


MASS_SHARE_MIN = 1e-3
"""Below this :func:`mass_share`, the payload's mass is not identified by the data."""


def fit_body_lmi(w: np.ndarray, tau: np.ndarray, solver: str = "clarabel", eps: float = 0.0) -> BodyFit:
    """``min ||W pi - tau||`` with the pseudo-inertia of ``pi`` positive semidefinite (``>= eps`` after scaling
    to the body's mass and size), an SDP."""
    import cvxpy as cp  # heavy optional dependency of the estimators

    start = time.perf_counter()
    equations = NormalEquations.of(w, tau)
    gram, wt_tau = equations.gram, equations.projection
    root, target = equations.root()
    pi = cp.Variable(10)
    mass, length = _scales(gram, wt_tau)
    basis = scaled_basis("full", mass, length)
    constraint = cp.reshape(basis @ pi, (4, 4), order="C") >> eps * np.eye(4)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(root @ pi - target)), [constraint])
    status, _ = solve(problem, solver)
    if pi.value is None:
        raise EstimationError(f"payload: the pseudo-inertia SDP found no body (solver status {status})")
    value = np.asarray(pi.value, dtype=float)
    stats = problem.solver_stats
    iterations = int(stats.num_iters) if stats is not None and stats.num_iters is not None else -1
    return BodyFit(value, f"lmi ({solver})", status, iterations, time.perf_counter() - start,
                   _rms(value, equations))


def fit_body_manifold(w: np.ndarray, tau: np.ndarray, start: np.ndarray | None = None,
                      max_iterations: int = MANIFOLD_MAX_ITERATIONS) -> BodyFit:
    """``min ||W pi(theta) - tau||`` over ``theta = (m, c, Q, L)`` (module docstring), Levenberg-Marquardt from
    ``start`` (ten parameters; default the least-squares body made physical)."""
    began = time.perf_counter()
    equations = NormalEquations.of(w, tau)
    gram, wt_tau = equations.gram, equations.projection
    m, c, q, second = _chart_start(start if start is not None else np.linalg.lstsq(w, tau, rcond=None)[0])
    x = np.concatenate([[np.log(m)], c, np.sqrt(second)])  # s, c, l; the rotation lives in q
    cost = _cost(_parameters(x, q, np.zeros(3)), gram, wt_tau)
    damping, iterations, status = 1e-3, 0, "max_iterations"
    while iterations < max_iterations:
        iterations += 1
        jac = _chart_jacobian(x, q)
        pi = _parameters(x, q, np.zeros(3))
        grad = jac.T @ (gram @ pi - wt_tau)
        hess = jac.T @ gram @ jac
        improved = False
        while damping < 1e12:
            step = np.linalg.solve(hess + damping * np.diag(np.diag(hess) + 1e-12), -grad)
            x_new, w_new = _split_step(x, step)
            new_cost = _cost(_parameters(x_new, q, w_new), gram, wt_tau)
            if new_cost < cost:
                q = q @ _rotation(w_new)  # retraction on SO(3)
                decrease = (cost - new_cost) / max(abs(cost) + equations.b_norm2, 1e-300)
                x, cost, damping, improved = x_new, new_cost, max(damping / 3.0, 1e-9), True
                break
            damping *= 4.0
        if not improved or decrease < MANIFOLD_TOLERANCE:
            status = "converged"
            break
    value = _parameters(x, q, np.zeros(3))
    return BodyFit(value, "manifold (m, c, Q, L)", status, iterations, time.perf_counter() - began,
                   _rms(value, equations))


def _parameters(x: np.ndarray, q: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Ten parameters of the chart point ``x = (s, c, l)`` and rotation ``q exp([w]x)``."""
    m, c, second = np.exp(x[0]), x[1:4], x[4:7] ** 2
    rot = q @ _rotation(w)
    principal = np.array([second[1] + second[2], second[0] + second[2], second[0] + second[1]])
    return link_parameters(m, c, rot @ np.diag(principal) @ rot.T)


def _chart_jacobian(x: np.ndarray, q: np.ndarray, h: float = 1e-7) -> np.ndarray:
    """d pi / d(s, c, w, l) at ``(x, q)``, w = 0 (central differences; pi is smooth in all of them)."""
    jac = np.zeros((10, 10))
    for i in range(10):
        dx = np.zeros(10)
        dx[i] = h
        plus, minus = _split_step(x, dx), _split_step(x, -dx)
        jac[:, i] = (_parameters(*plus[:1], q, plus[1]) - _parameters(*minus[:1], q, minus[1])) / (2 * h)
    return jac


def _split_step(x: np.ndarray, step: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A tangent step ``(ds, dc[3], dw[3], dl[3])`` applied: the new ``(s, c, l)`` and the rotation ``dw``."""
    return np.concatenate([x[:4] + step[:4], x[4:7] + step[7:10]]), step[4:7]


def _rotation(w: np.ndarray) -> np.ndarray:
    """``exp([w]x)`` (Rodrigues)."""
    angle = float(np.linalg.norm(w))
    if angle < 1e-12:
        return np.eye(3) + skew(w)
    k = skew(w / angle)
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * k @ k


def _chart_start(pi: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """``(m, c, Q, L)`` nearest to ten parameters: mass at least 1e-3 of |m|, second moments clipped at zero."""
    m = float(pi[0])
    mass = m if m > 0 else max(abs(m), 1.0)
    c = np.asarray(pi[1:4], dtype=float) / mass
    inertia_com = inertia_about_com(_with_mass(pi, mass))[2]
    values, vectors = np.linalg.eigh(0.5 * (inertia_com + inertia_com.T))
    if np.linalg.det(vectors) < 0:
        vectors[:, 0] = -vectors[:, 0]
    second = 0.5 * (values.sum() - 2 * values)  # L_i = (tr I - 2 I_i) / 2
    return mass, c, vectors, np.maximum(second, SECOND_MOMENT_FLOOR * mass)


def _with_mass(pi: np.ndarray, mass: float) -> np.ndarray:
    out = np.asarray(pi, dtype=float).copy()
    out[0] = mass
    return out


def _cost(pi: np.ndarray, gram: np.ndarray, wt_tau: np.ndarray) -> float:
    """``||W pi - tau||^2 - ||tau||^2``."""
    return float(pi @ gram @ pi - 2 * wt_tau @ pi)


def _rms(pi: np.ndarray, equations: NormalEquations) -> float:
    """RMS residual of the body ``pi`` over the rows."""
    return float(np.sqrt(equations.residual_norm2(pi) / max(equations.rows, 1)))


def _scales(gram: np.ndarray, wt_tau: np.ndarray) -> tuple[float, float]:
    """Mass and length scales of the SDP's congruence from the least-squares body (1 kg, 0.1 m when absurd)."""
    pi = np.linalg.lstsq(gram, wt_tau, rcond=None)[0]
    mass = abs(float(pi[0])) if np.isfinite(pi[0]) and abs(pi[0]) > 1e-3 else 1.0
    return mass, 0.1
