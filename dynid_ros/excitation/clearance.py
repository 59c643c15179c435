"""The clearance an excitation keeps from the robot's own links and its workcell, as the optimizer sees it.

:class:`ClearanceRows` turns a :class:`~dynid_ros.robot.collision_model.CollisionModel` into smooth nonlinear inequality
rows of the Fourier coefficients (Sousa & Cortesão 2014 eq. 78). Per checked pair of links (or link and obstacle)
and window of the period (:data:`ROW_WINDOWS`), the row is a smooth minimum (Kreisselmeier-Steinhauser) of the
pair's signed distance over the period's samples on a grid of :data:`CLEARANCE_RATE_HZ`::

    KS = d_min - log(sum_k exp(-(d_k - d_min) / SHARPNESS)) * SHARPNESS      <=  d_min

minus the clearance the pair keeps and :data:`GRID_SLACK`. The smooth minimum is never above the true minimum
of the grid (so a row that holds keeps the clearance at every grid sample) and, unlike the minimum itself, it is
differentiable: its gradient is the weighted sum of the gradients of the samples near the minimum, each the
relative velocity of the witness points along the contact normal. A row whose window stays more than
:data:`ROW_CAP` above its clearance is constant (gradient zero). FloBaRoID's excitation optimizer constrains the
minimum distance of each pair over the motion the same way, with finite-difference gradients.

The result is re-checked on the execution check's 1 kHz grid (:meth:`ClearanceRows.check`); the optimizer rejects a
result that fails it, never trims it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.optimize

from dynid_ros.excitation.fourier import FourierTrajectory, basis_matrices
from dynid_ros.excitation.limits import CHECK_RATE_HZ, ExcitationLimits
from dynid_ros.robot.clearance import Clearance
from dynid_ros.robot.collision_model import CollisionModel, Kinematics

CLEARANCE_RATE_HZ = 50.0
"""Grid of the optimizer's clearance rows [Hz]: between two samples 20 ms apart a smooth distance dips below its
sampled minimum by about ``|d''| (10 ms)^2 / 2``, a fraction of a millimetre at the arm's speeds."""
GRID_SLACK = 0.002
"""Clearance [m] the grid keeps above the margin (covers the dip between grid samples)."""
ROW_CAP = 0.05
"""A row more than this [m] above its clearance is inactive: its value is capped, its gradient zero."""
SHARPNESS = 0.001
"""[m]: samples more than a few of these above a window's minimum do not weigh in its smooth minimum."""
BAND = 5 * SHARPNESS
"""Samples within this [m] of a window's minimum enter its smooth minimum (the rest weigh less than 1 %)."""
ROW_WINDOWS = 10
"""Rows per checked pair: the period cut into this many windows, one smooth minimum each. Fewer rows make an SLSQP
iteration cheaper (Panda, 49 pairs, 10 s period, 15 iterations from one seeded start, CPU: 10 windows 21.7 s, one
window 9.2 s) but leave SLSQP one row per pair to restore feasibility from a start in contact: with one window the
corpus' short excitation of example-robot-data's UR5 (its middle-of-range start 4.4 cm into the table; one start,
40 iterations) ended with no feasible trajectory, with 10 it finds one (test/corpus, ur5_run)."""
START_ROOM = 0.005
"""A start keeps this much [m] more than its rows need: SLSQP begins inside the feasible set."""
SCALE_STEPS = 10
"""Bisection steps of the largest clear scale of a start's motion."""
FREE_POSE_SAMPLES = 64
"""Random poses tried when the start pose itself is not clear."""
PUSH_ITERATIONS = 100
"""Iterations of :meth:`ClearanceRows.push_apart` (each one scan of the pose)."""
PUSH_ROOM = 0.1
"""A pushed pose stays this fraction of each joint's range away from either end: a start scales each joint's motion
to the room its pose leaves, and a pose pushed onto a bound left none (example-robot-data's Z1: joint4 pushed onto
its bound, did not move, its friction columns zero, condition number inf)."""


@dataclass
class _Scan:
    key: bytes
    values: np.ndarray
    found: list[Clearance]
    kinematics: Kinematics


class ClearanceRows:
    """The optimizer's clearance rows of a problem with ``n`` joints, ``harmonics`` and pulsation ``wf``."""

    def __init__(self, collision: CollisionModel, n: int, harmonics: int, wf: float,
                 rate_hz: float = CLEARANCE_RATE_HZ) -> None:
        self.collision, self.n, self.harmonics, self.wf = collision, n, harmonics, wf
        self.width = 2 * harmonics + 1
        period = 2 * math.pi / wf
        self.t = np.arange(int(math.ceil(period * rate_hz - 1e-9))) / rate_hz
        self.dt = 1.0 / rate_hz
        self.bases = basis_matrices(self.t, wf, harmonics)
        self.windows = ROW_WINDOWS
        self._scan_cache: _Scan | None = None

    @property
    def count(self) -> int:
        """Number of clearance rows: one per checked pair and time window."""
        return len(self.collision.rows) * self.windows

    def states(self, x: np.ndarray, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """Positions and velocities (N, n) on the grid of the coefficients ``x`` (motion scaled about ``q0``)."""
        blocks = x.reshape(self.n, self.width)
        c = scale * blocks[:, 1:]
        return blocks[:, 0] + self.bases[0] @ c.T, self.bases[1] @ c.T

    def _scan(self, x: np.ndarray) -> _Scan:
        key = np.asarray(x, dtype=float).tobytes()
        if self._scan_cache is None or self._scan_cache.key != key:
            q, dq = self.states(x)
            kinematics, rows = self.collision.scan_windows(q, dq, self.dt, floor=GRID_SLACK + ROW_CAP,
                                                          windows=self.windows, band=BAND)
            found = [c for windows in rows for c in windows]
            values = np.array([min(_smooth_minimum(c) - c.row.margin - GRID_SLACK, ROW_CAP) for c in found])
            self._scan_cache = _Scan(key, values, found, kinematics)
        return self._scan_cache

    def values(self, x: np.ndarray) -> np.ndarray:
        """Per row: the window's smooth minimum clearance minus the margin and :data:`GRID_SLACK` (>= 0: clear), at
        most :data:`ROW_CAP`."""
        return self._scan(x).values.copy()

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """(rows, n * (2L + 1)) gradient of :meth:`values` by the coefficients ``[q_k0, a_k, b_k]`` per joint."""
        scan = self._scan(x)
        out = np.zeros((self.count, self.n, self.width))
        for r, (value, found) in enumerate(zip(scan.values, scan.found)):
            if value >= ROW_CAP or not found.near:
                continue
            weights = _weights(found)
            grads = self.collision.distance_gradients(found.near, scan.kinematics, found.row.obstacle)  # (K, n)
            samples = np.array([c.index for c in found.near])
            out[r, :, 0] = weights @ grads
            out[r, :, 1:] = np.einsum("k,kj,kl->jl", weights, grads, self.bases[0][samples])
        return out.reshape(self.count, -1)

    def scaled_values(self, x: np.ndarray, scale: float) -> np.ndarray:
        """:meth:`values` of the motion of ``x`` scaled about ``q0``."""
        blocks = x.reshape(self.n, self.width).copy()
        blocks[:, 1:] *= scale
        return self.values(blocks.reshape(-1))

    def clear_scale(self, x: np.ndarray) -> float:
        """The largest factor in [0, 1] of the motion about ``q0`` (bisection) whose rows hold with
        :data:`START_ROOM` to spare (or half what ``q0`` at rest has); 0 when ``q0`` at rest does not hold them."""
        at_rest = float(self.scaled_values(x, 0.0).min())
        need = min(START_ROOM, 0.5 * at_rest)
        if at_rest <= 0:
            return 0.0
        if self.scaled_values(x, 1.0).min() >= need:
            return 1.0
        low, high = 0.0, 1.0
        for _ in range(SCALE_STEPS):
            middle = 0.5 * (low + high)
            low, high = (middle, high) if self.scaled_values(x, middle).min() >= need else (low, middle)
        return low

    def clear_pose(self, around: np.ndarray, limits: ExcitationLimits, rng: np.random.Generator) -> np.ndarray:
        """``around`` if the robot at rest there keeps every clearance with :data:`ROW_CAP` to spare, else the pose
        with the largest smallest clearance (up to that) among random poses within the position limits, the
        nearest to ``around`` among equals; when that pose still leaves a pair too close for the start to move
        (less than :data:`GRID_SLACK` + :data:`START_ROOM` above what it keeps), pushed apart along the pairs'
        distance gradients (:meth:`push_apart`). A robot with many links has a close pair at nearly every random
        pose (example-robot-data's Baxter, 15 joints, 807 checked pairs: each of 64 poses had one within the 2 cm
        kept, e.g. torso and right_upper_elbow 1.3 cm apart at start 0's, and its start did not move)."""
        if self.pose_slack(around) >= ROW_CAP:
            return around
        candidates = rng.uniform(limits.position[:, 0], limits.position[:, 1], (FREE_POSE_SAMPLES, self.n))
        scores = [min(self.pose_slack(q), ROW_CAP) - 1e-3 * float(np.linalg.norm(q - around)) for q in candidates]
        best = candidates[int(np.argmax(scores))]
        best = best if self.pose_slack(best) > self.pose_slack(around) else around
        if self.pose_slack(best) >= GRID_SLACK + START_ROOM:
            return best
        pushed = self.push_apart(best, limits)
        return pushed if self.pose_slack(pushed) > self.pose_slack(best) else best

    def pose_slack(self, q: np.ndarray) -> float:
        """The smallest clearance of the robot at rest at ``q`` less what its pair keeps (exact up to
        :data:`ROW_CAP`)."""
        found = self.collision.scan(q[None, :], np.zeros((1, self.n)), 1.0, floor=ROW_CAP)
        return min((c.slack for c in found), default=math.inf)

    def push_apart(self, q: np.ndarray, limits: ExcitationLimits) -> np.ndarray:
        """The pose at rest reached from ``q`` by minimizing ``1/2 sum_r min(0, s_r - ROW_CAP)^2`` over the
        checked pairs' slacks ``s_r`` (distance less what the pair keeps) within the position limits less
        :data:`PUSH_ROOM` of each range at either end (L-BFGS-B,
        at most :data:`PUSH_ITERATIONS`); each slack's gradient is the relative velocity of its witness points
        along their normal (:meth:`~dynid_ros.robot.collision_model.CollisionModel.distance_gradients`). Stops at
        the first iterate whose every slack is :data:`ROW_CAP`."""
        last: dict[bytes, tuple[float, np.ndarray]] = {}

        def shortfall(z: np.ndarray) -> tuple[float, np.ndarray]:
            if z.tobytes() in last:
                return last[z.tobytes()]
            kinematics, rows = self.collision.scan_windows(z[None, :], np.zeros((1, self.n)), 1.0, floor=ROW_CAP,
                                                          band=BAND)
            value, grad = 0.0, np.zeros(self.n)
            for (found,) in rows:
                short = found.slack - ROW_CAP
                if short >= 0 or not found.near:
                    continue
                nearest = min(found.near, key=lambda c: c.distance)
                value += 0.5 * short**2
                grad += short * self.collision.distance_gradients([nearest], kinematics, found.row.obstacle)[0]
            last.clear()
            last[z.tobytes()] = value, grad
            return value, grad

        def stop_when_clear(z: np.ndarray) -> None:
            if shortfall(z)[0] == 0.0:
                raise StopIteration

        low, high = limits.position[:, 0], limits.position[:, 1]
        inner = np.stack([low + PUSH_ROOM * (high - low), high - PUSH_ROOM * (high - low)], axis=1)
        result = scipy.optimize.minimize(shortfall, np.clip(q, inner[:, 0], inner[:, 1]), jac=True,
                                         method="L-BFGS-B", bounds=inner, callback=stop_when_clear,
                                         options={"maxiter": PUSH_ITERATIONS})
        return np.clip(result.x, inner[:, 0], inner[:, 1])

    def check(self, trajectory: FourierTrajectory, rate_hz: float = CHECK_RATE_HZ) -> Clearance | None:
        """One period at ``rate_hz`` (the execution check's rate): the clearance nearest its margin; CollisionError
        naming the pair, the time and the depth when one is below its margin."""
        t = np.arange(int(math.ceil(trajectory.period * rate_hz - 1e-9)) + 1) / rate_hz
        q, dq, _ = trajectory.evaluate(t)
        return self.collision.check(t, q, dq, what="the excitation", from_rest=False)


def _smooth_minimum(found: Clearance) -> float:
    """Kreisselmeier-Steinhauser minimum of a window's near samples (module docstring); its minimum itself when
    none was kept (a window that stays far)."""
    if not found.near:
        return found.distance
    d = np.array([c.distance for c in found.near])
    return float(found.distance - SHARPNESS * np.log(np.sum(np.exp(-(d - found.distance) / SHARPNESS))))


def _weights(found: Clearance) -> np.ndarray:
    d = np.array([c.distance for c in found.near])
    w = np.exp(-(d - found.distance) / SHARPNESS)
    return w / w.sum()


def smallest_clearance(collision: CollisionModel, trajectory: FourierTrajectory, rate_hz: float = CHECK_RATE_HZ
                       ) -> tuple[Clearance | None, np.ndarray]:
    """The clearance of one period at ``rate_hz`` nearest its margin, over every row (exact for that row), and
    the times."""
    t = np.arange(int(math.ceil(trajectory.period * rate_hz - 1e-9)) + 1) / rate_hz
    if not collision.rows:
        return None, t
    q, dq, _ = trajectory.evaluate(t)
    found = collision.scan(q, dq, 1.0 / rate_hz, floor=None)
    return min(found, key=lambda c: c.slack), t
