"""What the robot actually runs: approach, N periods of the excitation, hold at rest.

Three phases, continuous in position, velocity and acceleration:

1. a quintic from the current position ``q_start`` (at rest) to the excitation's ``q(0)``, zero
   velocity and acceleration at both ends, as long as the velocity and acceleration limits require
   (a quintic over ``T`` peaks at ``1.875 |dq| / T`` and ``5.7735 |dq| / T^2``);
2. ``cycles`` periods of the Fourier trajectory, which starts and ends at rest at ``q(0)``;
3. a short hold at ``q(0)``, at rest.

Used by the ROS trajectory node and the simulator; sampled at any rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.errors import TrajectoryError
from dynid_ros.excitation.fourier import REST_TOLERANCE, FourierTrajectory, rest_residual
from dynid_ros.excitation.limits import ExcitationLimits

QUINTIC_PEAK_VELOCITY = 1.875
"""Peak of ``d/ds (10 s^3 - 15 s^4 + 6 s^5)`` on [0, 1]."""
QUINTIC_PEAK_ACCELERATION = 10.0 / np.sqrt(3.0)
"""Peak of ``d^2/ds^2 (10 s^3 - 15 s^4 + 6 s^5)`` on [0, 1] (at s = (3 -+ sqrt 3) / 6)."""

DEFAULT_APPROACH_VELOCITY = 0.5
"""Velocity bound [rad/s] of the approach when no limits are given."""
DEFAULT_APPROACH_ACCELERATION = 1.0
"""Acceleration bound [rad/s^2] of the approach when no limits are given."""
APPROACH_LIMIT_FRACTION = 0.5
"""The approach uses at most this fraction of the velocity and acceleration limits."""
MIN_APPROACH_S = 1.0
HOLD_S = 0.5


@dataclass(frozen=True)
class ExecutionProfile:
    """Approach, ``cycles`` periods of ``trajectory`` and a hold; times from the start of the approach.

    Attributes:
        trajectory: the excitation; q_start: (n,) position at the start, at rest;
        cycles: number of periods; approach_s: duration of the quintic approach; hold_s: final hold.
    """

    trajectory: FourierTrajectory
    q_start: np.ndarray
    cycles: int
    approach_s: float
    hold_s: float = HOLD_S

    @property
    def joints(self) -> tuple[str, ...]:
        """The trajectory's joints."""
        return self.trajectory.joints

    @property
    def t_excitation_start(self) -> float:
        """Time [s] the excitation starts: the end of the approach."""
        return self.approach_s

    @property
    def t_excitation_end(self) -> float:
        """Time [s] the last excitation cycle ends."""
        return self.approach_s + self.cycles * self.trajectory.period

    @property
    def duration(self) -> float:
        """Duration [s] of the whole profile: approach, cycles and hold."""
        return self.t_excitation_end + self.hold_s

    def sample(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, dq, ddq)`` at times ``t`` (N,), each (N, n); before 0 and after the end: at rest."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        n = self.trajectory.n_dof
        q, dq, ddq = (np.zeros((t.size, n)) for _ in range(3))
        q_first = self.trajectory.evaluate(np.zeros(1))[0][0]
        approach = t < self.t_excitation_start
        s = np.clip(t[approach] / self.approach_s, 0.0, 1.0)
        delta = q_first - self.q_start
        shape = 10 * s**3 - 15 * s**4 + 6 * s**5
        q[approach] = self.q_start + np.outer(shape, delta)
        dq[approach] = np.outer((30 * s**2 - 60 * s**3 + 30 * s**4) / self.approach_s, delta)
        ddq[approach] = np.outer((60 * s - 180 * s**2 + 120 * s**3) / self.approach_s**2, delta)
        dq[approach & (t < 0)] = 0.0
        ddq[approach & (t < 0)] = 0.0
        moving = (t >= self.t_excitation_start) & (t < self.t_excitation_end)
        q[moving], dq[moving], ddq[moving] = self.trajectory.evaluate(t[moving] - self.t_excitation_start)
        q[t >= self.t_excitation_end] = q_first
        return q, dq, ddq

    def sample_at_rate(self, rate_hz: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(t, q, dq, ddq)`` on ``0, 1/rate, ...`` up to and including the end."""
        if not rate_hz > 0:
            raise TrajectoryError(f"sampling rate must be positive, got {rate_hz}")
        t = np.arange(int(np.floor(self.duration * rate_hz + 1e-9)) + 1) / rate_hz
        if t[-1] < self.duration - 1e-12:
            t = np.append(t, self.duration)
        return (t, *self.sample(t))

    def progress(self, t: np.ndarray | float) -> np.ndarray | float:
        """Fraction of the whole profile done at ``t``, in [0, 1]."""
        out = np.clip(np.asarray(t, dtype=float) / self.duration, 0.0, 1.0)
        return float(out) if out.ndim == 0 else out


def approach_duration(delta: np.ndarray, limits: ExcitationLimits | None) -> float:
    """Shortest quintic duration [s] moving by ``delta`` within half the velocity and acceleration limits."""
    if limits is None:
        velocity = np.full(delta.shape, DEFAULT_APPROACH_VELOCITY)
        acceleration = np.full(delta.shape, DEFAULT_APPROACH_ACCELERATION)
    else:
        velocity = APPROACH_LIMIT_FRACTION * limits.velocity
        acceleration = APPROACH_LIMIT_FRACTION * limits.acceleration
    distance = np.abs(delta)
    by_velocity = QUINTIC_PEAK_VELOCITY * distance / velocity
    by_acceleration = np.sqrt(QUINTIC_PEAK_ACCELERATION * distance / acceleration)
    return float(max(MIN_APPROACH_S, by_velocity.max(initial=0.0), by_acceleration.max(initial=0.0)))


def build_execution_profile(trajectory: FourierTrajectory, q_start: np.ndarray, cycles: int = 1,
                            limits: ExcitationLimits | None = None) -> ExecutionProfile:
    """The profile the robot runs from ``q_start`` (at rest): approach, ``cycles`` periods, hold.

    Raises:
        TrajectoryError: wrong ``q_start`` size, ``cycles < 1``, or a trajectory that does not start
            at rest. A ``q_start`` outside the position limits is allowed: the approach moves inward.
    """
    q_start = np.asarray(q_start, dtype=float).reshape(-1)
    if q_start.shape != (trajectory.n_dof,) or not np.all(np.isfinite(q_start)):
        raise TrajectoryError(f"start position needs {trajectory.n_dof} finite values (joints "
                              f"{', '.join(trajectory.joints)}), got {q_start.tolist()}")
    if int(cycles) != cycles or cycles < 1:
        raise TrajectoryError(f"cycles must be a positive integer, got {cycles}")
    velocity, acceleration = rest_residual(trajectory)
    moving = np.flatnonzero((np.abs(velocity) > REST_TOLERANCE) | (np.abs(acceleration) > REST_TOLERANCE))
    if moving.size:
        k = int(moving[0])
        raise TrajectoryError(f"joint {trajectory.joints[k]}: the excitation does not start at rest (velocity "
                              f"{velocity[k]:.3g}, acceleration {acceleration[k]:.3g} at t = 0)")
    if limits is not None and limits.n_dof != trajectory.n_dof:
        raise TrajectoryError(f"limits have {limits.n_dof} joints, the trajectory {trajectory.n_dof}")
    q_first = trajectory.evaluate(np.zeros(1))[0][0]
    return ExecutionProfile(trajectory, q_start, int(cycles), approach_duration(q_first - q_start, limits))
