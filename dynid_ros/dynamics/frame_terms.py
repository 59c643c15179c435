"""Per-frame terms of a frames robot (:mod:`dynid_ros.robot.frames`; Wang et al. 2019 eq. 12-20), projected onto the
motors: a frame with rate ``w = c . q'`` contributes ``c (Fc sign(w) + Fv w + Fo)`` (friction), ``c Ia (c . q'')``
(rotor inertia) and ``c K s(theta)`` (spring, ``s`` its torque per unit K); its known torque ``c tau(theta)`` is
subtracted from the measured motor torque before the fit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.robot.frames import FramesRobot


@dataclass(frozen=True)
class TermColumns:
    """Regressor columns (N, n_motors, E) of the per-frame terms, their names and bounds (``low <= x <= high``)."""

    columns: np.ndarray
    names: list[str]
    low: np.ndarray
    high: np.ndarray


def term_columns(robot: FramesRobot, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> TermColumns:
    """The columns of every frame's friction (Fc, Fv, Fo), rotor inertia (Ia) and spring (K)."""
    columns, names, low, high = [], [], [], []

    def add(name: str, rate: np.ndarray, c: np.ndarray, bounds: tuple[float, float]) -> None:
        columns.append(rate[:, None] * c[None, :])
        names.append(name)
        low.append(bounds[0])
        high.append(bounds[1])

    for f in robot.frames:
        c, w = f.motion, dq @ f.motion
        if f.friction:
            add(f"{f.name}.Fc", np.sign(w), c, (0.0, np.inf))
            add(f"{f.name}.Fv", w, c, (0.0, np.inf))
            add(f"{f.name}.Fo", np.ones_like(w), c, (-np.inf, np.inf))
        if f.rotor_inertia:
            add(f"{f.name}.Ia", ddq @ c, c, (0.0, np.inf))
        if f.spring is not None:
            add(f"{f.name}.K", f.spring.coordinate(q @ c), c, f.spring.bounds)
    n = q.shape[0]
    stacked = np.stack(columns, axis=2) if columns else np.zeros((n, q.shape[1], 0))
    return TermColumns(stacked, names, np.array(low), np.array(high))


def known_torque(robot: FramesRobot, q: np.ndarray) -> np.ndarray:
    """(N, n_motors) motor torque of the frames' known torques (e.g. the MTM's cable, Wang et al. 2019 Sec. III-C)."""
    out = np.zeros_like(np.asarray(q, dtype=float))
    for f in robot.frames:
        if f.known_torque is not None:
            out += np.polyval(f.known_torque, q @ f.motion)[:, None] * f.motion[None, :]
    return out


SPRING_STEP = 1e-6
"""Step [rad or m] of the central difference of a spring's torque per unit K (closed form, smooth)."""


def term_gradient(robot: FramesRobot, values: np.ndarray, covector: np.ndarray, q: np.ndarray, dq: np.ndarray,
                  ddq: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Derivatives of ``sum_s covector_s . (columns_s @ values)`` by q, q', q'' per sample, each (N, n_motors).

    ``values`` are the term parameters in :func:`term_columns` order. A term ``c f(c . x)`` contributes
    ``(covector . c) f'(c . x) c`` to the derivative by ``x``: viscous friction by q', rotor inertia by q'', a
    spring by q (its ``s'`` by central difference); Coulomb and offset friction are piecewise constant."""
    gq, gdq, gddq = (np.zeros_like(np.asarray(x, dtype=float)) for x in (q, dq, ddq))
    k = 0
    for f in robot.frames:
        c = f.motion
        along = (covector @ c)[:, None] * c[None, :]
        if f.friction:
            gdq += values[k + 1] * along  # Fc, Fv, Fo
            k += 3
        if f.rotor_inertia:
            gddq += values[k] * along
            k += 1
        if f.spring is not None:
            theta = q @ c
            slope = (f.spring.coordinate(theta + SPRING_STEP) - f.spring.coordinate(theta - SPRING_STEP)) / (
                2 * SPRING_STEP)
            gq += values[k] * slope[:, None] * along
            k += 1
    return gq, gdq, gddq
