"""Drive gains from a known payload: ``tau = K i`` per joint (Pennese et al. 2021 eq. 2), estimated jointly with the
robot's parameters from an unloaded and a loaded run.

With ``e`` the recorded effort (e.g. motor current) and ``K = diag(k)`` the unknown per-joint scales::

    unloaded:  Y_u delta                        = diag(e_u) k
    loaded:    Y_l delta + Y_l,link pi_payload  = diag(e_l) k

Without the payload the equations are homogeneous (k = 0, delta = 0 fits); its known mass fixes the scale. The
payload's CoM (when known) is fixed too; its other parameters are unknowns. Solved as feasibility-constrained
least squares (every link and the payload fully consistent, ``k > 0``), not as total least squares, which gives
negative gains on real data (Pennese et al. 2021). A tiny pull toward the nominal parameters picks one solution
in the directions the data do not identify.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.dynamics.feasibility import SOLVED, link_scales, lmi_constraints, scaled_basis, solve
from dynid_ros.errors import EstimationError
from dynid_ros.estimation.normal_equations import NormalEquations
from dynid_ros.robot.parameters import ParameterLayout

NOMINAL_PULL = 1e-6
"""Weight of ``||delta - nominal||`` (scaled) relative to the data: picks a solution, does not bias it."""
MIN_GAIN = 1e-6
"""Gains are at least this (positive)."""


@dataclass
class GainFit:
    """Per-joint scales ``k`` (torque = k * effort), the robot's parameters and the payload's."""

    gains: np.ndarray
    delta: np.ndarray
    payload: np.ndarray
    status: str


def fit_drive_gains(unloaded: tuple[np.ndarray, np.ndarray], loaded: tuple[np.ndarray, np.ndarray, np.ndarray],
                    layout: ParameterLayout, nominal: np.ndarray, payload_mass: float,
                    payload_com: np.ndarray | None = None, solver: str = "clarabel") -> GainFit:
    """Gains and parameters from ``unloaded = (Y_u, e_u)`` and ``loaded = (Y_l, Y_l,link, e_l)``: regressors
    (N, n_dof, n_parameters) and (N, n_dof, 10), efforts (N, n_dof). Rows are weighted per joint by the
    inverse RMS of the unloaded effort."""
    import cvxpy as cp  # heavy optional dependency of the estimators

    y_u, e_u = unloaded
    y_l, y_p, e_l = loaded
    n = layout.n_dof
    weight = 1.0 / np.maximum(np.sqrt(np.mean(e_u ** 2, axis=0)), 1e-12)
    blocks, target = _rows(y_u, e_u, y_l, y_p, e_l, weight, payload_mass, payload_com)
    r, rhs = NormalEquations.of(blocks, target).root()
    delta, k = cp.Variable(layout.n_parameters), cp.Variable(n)
    free = cp.Variable(blocks.shape[1] - layout.n_parameters - n)
    x = cp.hstack([delta, k, free])
    payload = _payload_expression(free, payload_mass, payload_com)
    scales = link_scales(nominal, layout)
    unit = np.repeat(1.0 / scales[:, 0], 10)
    pull = np.concatenate([unit, np.ones(layout.n_parameters - unit.size)])
    objective = cp.sum_squares(r @ x - rhs) + NOMINAL_PULL * float(np.sum(rhs ** 2) + 1.0) * cp.sum_squares(
        cp.multiply(pull, delta - nominal))
    basis = scaled_basis("full", payload_mass, 0.1)
    constraints = [*lmi_constraints(delta, layout, "full", 0.0, scales), k >= MIN_GAIN,
                   cp.reshape(basis @ payload, (4, 4), order="C") >> 0]
    problem = cp.Problem(cp.Minimize(objective), constraints)
    status, _ = solve(problem, solver)
    if status not in SOLVED or k.value is None:
        raise EstimationError(f"gains: the feasibility-constrained fit failed (solver status {status})")
    return GainFit(np.asarray(k.value, dtype=float), np.asarray(delta.value, dtype=float),
                   np.asarray(payload.value, dtype=float), status)


def _rows(y_u: np.ndarray, e_u: np.ndarray, y_l: np.ndarray, y_p: np.ndarray, e_l: np.ndarray, weight: np.ndarray,
          mass: float, com: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``A [delta; k; free] = b``: the weighted rows of both runs (``free``: the payload's unknown parameters)."""
    fixed = 4 if com is not None else 1
    known = np.zeros(10)
    known[0] = mass
    if com is not None:
        known[1:4] = mass * np.asarray(com, dtype=float)

    def block(y: np.ndarray, e: np.ndarray, yp: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        rows, n = y.shape[0], y.shape[1]
        gains = np.zeros((rows, n, n))
        gains[:, np.arange(n), np.arange(n)] = -e
        extra = np.zeros((rows, n, 10 - fixed)) if yp is None else yp[:, :, fixed:]
        a = np.concatenate([y, gains, extra], axis=2) * weight[None, :, None]
        b = np.zeros((rows, n)) if yp is None else -(yp @ known) * weight[None, :]
        return a.reshape(rows * n, -1), b.reshape(-1)

    a_u, b_u = block(y_u, e_u, None)
    a_l, b_l = block(y_l, e_l, y_p)
    return np.vstack([a_u, a_l]), np.concatenate([b_u, b_l])


def _payload_expression(free, mass: float, com: np.ndarray | None):
    """The payload's ten parameters: the known mass (and first moments), the free rest."""
    import cvxpy as cp  # heavy optional dependency of the estimators

    head = [mass] + ([] if com is None else [mass * float(c) for c in com])
    return cp.hstack([np.array(head), free])
