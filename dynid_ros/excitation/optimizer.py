"""Optimized excitation: minimize the base regressor's condition number under joint limits.

Wang et al. 2019 section IV (condition-number optimization of Fourier coefficients with joint and Cartesian
constraints), Sousa & Cortesão 2014 section 5.2.2 (Swevers series, eq. 78-80).

Variables per joint ``k``: ``[q_k0, a_k1..a_kL, b_k1..b_kL]``. Position, velocity and acceleration
on a time grid, and the start/end at rest (``sum_l a_kl = 0``, ``sum_l l b_kl = 0``), are linear in
them: SLSQP gets those constraints with constant Jacobians and only the objective is nonlinear. The grid is
coarse (:data:`SAMPLES_PER_HARMONIC`) and exact: each of ``q - center``, ``q'``, ``q''`` is a trigonometric
polynomial of degree L, which on N > 2 L evenly spaced samples bounded by ``cos(pi L / N)`` times a limit stays
within the limit at every time (the sampling inequality for trigonometric polynomials, Ehlich & Zeller 1964; tight
for one harmonic sampled midway between its peaks), so the rows the grid keeps imply the limits in continuous time. The
objective's gradient is exact: the regressor is linear in the parameters, so ``u^T dY v`` is the
derivative of the torques ``Y v`` of the parameter vector ``v`` along the singular vectors, which
pinocchio's RNEA derivatives give per sample (Coulomb ``sign(q')`` is piecewise constant).

Scale-free: the objective is the condition number of the base regressor with every column divided by
that column's norm at random states over the whole joint ranges (:func:`robot_column_scale`): each base parameter in
the robot's own unit, so a 0.6 kg arm (inertia columns 1e-5 of its mass columns in SI units) and a 30 kg arm are
optimized alike; a result is accepted when the condition number with unit-norm columns
(:func:`excitation_scaled_condition_number`, independent of units and size) is at most ``max_condition_number``.

The reported condition number is ``numpy.linalg.cond`` of the base regressor (rigid body, viscous,
Coulomb and offset friction per joint, no armature, SI units, no column scaling) stacked over one
period sampled at 50 Hz (``t = 0, 0.02, ... < T``), where velocities below 1e-9 rad/s count as zero
(``sign(0) = 0`` at the rest sample ``t = 0`` whatever the round-off): :func:`excitation_condition_number`.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
import scipy.optimize

from dynid_ros.dynamics.base_parameters import BaseParameters, compute_base_parameters, random_states
from dynid_ros.dynamics.conditioning import condition_number, scaled_condition_number
from dynid_ros.dynamics.regressor import regressor, regressor_3d
from dynid_ros.errors import CollisionError, ConfigError, ExcitationError, TrajectoryError
from dynid_ros.excitation.clearance import CLEARANCE_RATE_HZ, ClearanceRows, smallest_clearance
from dynid_ros.excitation.fourier import FourierTrajectory, basis_matrices
from dynid_ros.excitation.frames_columns import FramesBase, frames_base, frames_column_scale
from dynid_ros.excitation.limits import (
    CHECK_RATE_HZ,
    CoupledJointLimits,
    ExcitationLimits,
    check_coupled_joints,
    check_trajectory_limits,
    coupled_joint_limits,
    effort_bounds,
    limits_from_model,
    sample_trajectory,
)
from dynid_ros.excitation.torques import nominal_torque_jacobians, nominal_torques
from dynid_ros.excitation.trajectory_file import ExcitationTrajectory
from dynid_ros.robot.collision import load_collision_model
from dynid_ros.robot.frames import FramesRobot
from dynid_ros.robot.model import RobotModel, rnea_derivatives
from dynid_ros.robot.workcell import CollisionSettings

CONDITION_RATE_HZ = 50.0
"""Sampling rate of the condition number's definition."""
CONDITION_FRICTION = ("viscous", "coulomb", "offset")
OBJECTIVES = ("cond", "logdet")
GRID_SHRINK = 0.995
"""The optimizer's grid uses this fraction of the limits (times ``cos(pi L / N)``, module docstring): round-off room
for the 1 kHz check."""
SAMPLES_PER_HARMONIC = 12
"""Joint-limit grid points per harmonic (N = 12 L per period): the limits on the grid are ``cos(pi / 12)`` = 0.966 of
the limits (module docstring), the price of 3.3 times fewer rows than the 40 L points kept before, which made SLSQP's
dense step 46 % of a start's CPU on example-robot-data's UR10 (7200 rows, 66 variables; 55 % measured again with
``benchmarks/bench_excite_start.py``)."""
DEFAULT_FREQUENCY_HZ = 0.1
TORQUE_MARGIN = 0.05
"""The optimizer keeps the nominal torques within ``1 - TORQUE_MARGIN`` of the effort bounds on its coarse grid
(20 points per harmonic), so that the 1 kHz check of the executed motion (against the bounds themselves) passes."""
SHRINK_STEP, SHRINK_STEPS = 0.97, 40
"""A trajectory over an effort bound on the 1 kHz grid is shrunk about ``q0`` by this factor, at most this often."""
MAX_SCALED_CONDITION_NUMBER = 100.0
"""Default acceptance of an excitation: its condition number with unit-norm columns at most this. Measured at
random states over the whole joint ranges it is 4.9 to 7.6 for example-robot-data's SO-100 (0.6 kg), Z1, Kinova,
xArm7, Panda, UR5 and UR10 (29 kg) alike; an optimized trajectory within the limits reaches 5.7 (UR10), 7.3 (Panda),
22 (SO-100, 20 s budget)."""
BOX_RATE_HZ = 100.0
"""Cartesian boxes are checked, and kept by the optimizer, at this rate."""
REST_VELOCITY = 1e-9
"""Velocities [rad/s] below this count as zero in the Coulomb column (the samples at rest, t = k T)."""
CLEARANCE_PENALTY = 1000.0
"""[1/m]: once a start's run has ended too deep in a collision to restore, the objective (the log of the condition
number) pays this per metre a clearance row is below its bound, summed over the rows; zero on the feasible set, so
the optimum does not move. SLSQP's line search weighs a
constraint by its multipliers so far: a row far from its bound at the start (capped, multiplier zero) does not stop
a long first step deep into a collision (example-robot-data's UR10, joints of +-2 pi: wrist 12 cm into the upper
arm after one step, then "Inequality constraints incompatible"). With the penalty 1 mm inside a row costs what a
factor e of condition number gains (Nocedal & Wright 2006, section 17.2, exact penalty functions)."""
STALL_ITERATIONS = 10
"""An SLSQP run whose iterates have been outside the clearance rows for this many iterations in a row is stopped
and its point restored to feasibility (:meth:`ExcitationProblem.restore`) before it goes on."""
RESTORATION_ITERATIONS = 60
"""Iterations of one feasibility restoration (least squares of the nonlinear constraints' violation)."""
RESTORATION_ROOM = 1e-3
"""A restoration aims this far inside the nonlinear rows (in their units: m, N m) and stops at the first
feasible iterate."""


@dataclass
class ExcitationOptions:
    """Options of :func:`optimize_excitation`.

    Attributes:
        harmonics: L; frequency_hz or wf: fundamental frequency (default 0.1 Hz);
        seed: seeds the starts (start ``i`` uses ``default_rng([seed, i])``);
        time_budget_s: wall-time budget; the best feasible result so far is returned when it runs out;
        n_starts: number of seeded starts; max_iterations: SLSQP iterations per start;
        objective: ``cond`` (condition number) or ``logdet`` (D-optimality, maximize log det Y^T Y);
        config: the ``excitation:`` config section, for :func:`limits_from_model`;
        margins: overrides of the config's ``margins``; limits: explicit limits (skip the model's);
        torque_limits: require effort limits for every joint (the nominal model's torques are bounded wherever the
            description or config gives one, always: :func:`dynid_ros.excitation.limits.effort_bounds`, the bound
            of the execution check, kept with :data:`TORQUE_MARGIN` on the optimizer's grid);
        cartesian_boxes: ``{frame: [[xlo, xhi], [ylo, yhi], [zlo, zhi]]}`` in the base frame (Wang et al. 2019);
        grid_rate_hz: objective sampling rate (50 Hz is the condition number's definition);
        constraint_points: joint-limit grid points per period, more than 2 L (default
            :data:`SAMPLES_PER_HARMONIC` per harmonic; the limits on the grid are ``cos(pi L / N)`` of the limits);
        max_condition_number: a best result whose condition number with unit-norm columns
            (:func:`excitation_scaled_condition_number`) is above this is an :class:`ExcitationError`;
        exclude_frames: a frames robot's frames whose inertia the objective leaves out
            (:mod:`dynid_ros.excitation.frames_columns`);
        collision: the robot's collision geometry and workcell (the config's ``collision:`` section; default:
            its own links and the table z = 0, 2 cm kept); None: no clearance kept
            (:mod:`dynid_ros.excitation.clearance`); clearance_rate_hz: the grid of the clearance rows.
    """

    harmonics: int = 5
    frequency_hz: float | None = None
    wf: float | None = None
    seed: int = 0
    time_budget_s: float = 120.0
    n_starts: int = 8
    max_iterations: int = 150
    objective: str = "cond"
    config: dict = field(default_factory=dict)
    margins: dict = field(default_factory=dict)
    limits: ExcitationLimits | None = None
    torque_limits: bool = False
    cartesian_boxes: dict = field(default_factory=dict)
    grid_rate_hz: float = CONDITION_RATE_HZ
    constraint_points: int | None = None
    max_condition_number: float = MAX_SCALED_CONDITION_NUMBER
    exclude_frames: tuple[str, ...] = ()
    collision: CollisionSettings | None = field(default_factory=CollisionSettings)
    clearance_rate_hz: float = CLEARANCE_RATE_HZ

    @property
    def pulsation(self) -> float:
        """``wf`` [rad/s] from ``wf`` or ``frequency_hz``."""
        if self.wf is not None:
            return float(self.wf)
        return 2.0 * math.pi * float(self.frequency_hz if self.frequency_hz is not None else DEFAULT_FREQUENCY_HZ)

    def check(self) -> None:
        """Raise :class:`ConfigError` on an invalid option."""
        if self.wf is not None and self.frequency_hz is not None:
            raise ConfigError("give the excitation frequency as frequency_hz or wf, not both")
        if not (isinstance(self.harmonics, int) and self.harmonics >= 1):
            raise ConfigError(f"harmonics must be a positive integer, got {self.harmonics!r}")
        if not self.pulsation > 0 or not math.isfinite(self.pulsation):
            raise ConfigError(f"the excitation frequency must be positive, got wf = {self.pulsation}")
        if self.objective not in OBJECTIVES:
            raise ConfigError(f"objective must be one of {', '.join(OBJECTIVES)}, got {self.objective!r}")
        if not self.time_budget_s > 0:
            raise ConfigError(f"time budget must be positive, got {self.time_budget_s}")
        if self.n_starts < 1 or self.max_iterations < 1:
            raise ConfigError("n_starts and max_iterations must be >= 1")
        if self.constraint_points is not None and not (
                isinstance(self.constraint_points, int) and self.constraint_points > 2 * self.harmonics):
            raise ConfigError(f"constraint_points must be an integer above 2 x harmonics ({2 * self.harmonics}), got "
                              f"{self.constraint_points!r}")
        if not self.grid_rate_hz > 0:
            raise ConfigError(f"grid rate must be positive, got {self.grid_rate_hz}")
        for frame, box in self.cartesian_boxes.items():
            array = np.asarray(box, dtype=float) if isinstance(box, (list, tuple)) else np.zeros(0)
            if array.shape != (3, 2) or np.any(array[:, 1] <= array[:, 0]):
                raise ConfigError(f"cartesian box of {frame}: expected [[xlo, xhi], [ylo, yhi], [zlo, zhi]], "
                                  f"got {box!r}")

    @classmethod
    def from_config(cls, section: dict | None, **overrides: object) -> ExcitationOptions:
        """Options from an ``excitation:`` config section; keyword overrides that are not None win (``collision``:
        the settings of the config's ``collision:`` section, :class:`~dynid_ros.robot.workcell.CollisionSettings`)."""
        section = dict(section or {})
        known = {"harmonics", "frequency_hz", "wf", "seed", "time_budget_s", "n_starts", "max_iterations",
                 "objective", "torque_limits", "cartesian_boxes", "grid_rate_hz", "constraint_points",
                 "max_condition_number", "exclude_frames", "clearance_rate_hz"}
        values = {k: v for k, v in section.items() if k in known}
        values.update({k: v for k, v in overrides.items() if v is not None})
        if "frequency_hz" in overrides and overrides["frequency_hz"] is not None:
            values.pop("wf", None)
        try:
            options = cls(config=section, **values)
        except TypeError as err:
            raise ConfigError(f"excitation options: {err}") from err
        options.check()
        return options


def condition_times(period: float, rate_hz: float = CONDITION_RATE_HZ) -> np.ndarray:
    """Sample times of one period at ``rate_hz``: ``k / rate`` for every ``k`` with ``k / rate < period``."""
    return np.arange(int(math.ceil(period * rate_hz - 1e-9))) / rate_hz


def box_times(period: float) -> np.ndarray:
    """The samples of one period where Cartesian boxes are checked (:data:`BOX_RATE_HZ`); the optimizer keeps the
    boxes on the same samples, so a point it finds feasible passes the check (a coarser grid let the hand leave
    its box between two of its samples)."""
    return np.arange(int(math.ceil(period * BOX_RATE_HZ))) / BOX_RATE_HZ


def condition_base(model: RobotModel) -> BaseParameters:
    """Base parameters of the condition number's layout (viscous, Coulomb, offset; no armature)."""
    return compute_base_parameters(model, model.layout_for(CONDITION_FRICTION, armature=False))


def excitation_condition_number(model: RobotModel, trajectory: FourierTrajectory,
                                base: BaseParameters | None = None) -> float:
    """``numpy.linalg.cond`` of the base regressor over one period at 50 Hz (module docstring)."""
    if tuple(trajectory.joints) != tuple(model.joints):
        raise TrajectoryError(f"trajectory joints {list(trajectory.joints)} differ from the model's "
                              f"{list(model.joints)}")
    base = base or condition_base(model)
    q, dq, ddq = trajectory.evaluate(condition_times(trajectory.period))
    w = regressor_3d(model, base.layout, q, _snap_rest(dq), ddq)[:, :, base.independent]
    return condition_number(w.reshape(-1, base.n_base))


def robot_column_scale(model: RobotModel, base: BaseParameters, seed: int = 0) -> np.ndarray:
    """``1 / ||column||`` of the base regressor at random states over the whole joint ranges (positions, and
    velocities and accelerations up to the description's scale): the robot's own unit of each base parameter."""
    states = random_states(model, max(200, 4 * base.n_base), np.random.default_rng(seed))
    norms = np.linalg.norm(base.project(regressor(model, base.layout, *states)), axis=0)
    return 1.0 / np.where(norms > 0, norms, 1.0)


def excitation_scaled_condition_number(model: RobotModel, trajectory: FourierTrajectory,
                                       base: BaseParameters | None = None) -> float:
    """The condition number of the same base regressor with unit-norm columns: independent of the parameters'
    units and of the robot's size (a 0.6 kg arm's inertia columns are 1e-5 of its mass columns in SI units, a
    30 kg arm's are not), so one acceptance threshold fits every robot (:data:`MAX_SCALED_CONDITION_NUMBER`)."""
    base = base or condition_base(model)
    q, dq, ddq = trajectory.evaluate(condition_times(trajectory.period))
    w = regressor_3d(model, base.layout, q, _snap_rest(dq), ddq)[:, :, base.independent].reshape(-1, base.n_base)
    return scaled_condition_number(w)


def _snap_rest(dq: np.ndarray) -> np.ndarray:
    """Velocities below :data:`REST_VELOCITY` set to zero, so ``sign(q')`` at rest does not depend on round-off."""
    return np.where(np.abs(dq) < REST_VELOCITY, 0.0, dq)


class _BudgetExhausted(Exception):
    """Raised inside SLSQP's callbacks when the time budget runs out."""


class ExcitationProblem:
    """The optimization problem: variables, objective with gradient, linear and nonlinear constraints."""

    def __init__(self, model: RobotModel, options: ExcitationOptions, limits: ExcitationLimits,
                 base: BaseParameters, effort_bound: np.ndarray | None = None) -> None:
        self.model, self.options, self.limits, self.base = model, options, limits, base
        self.n, self.harmonics, self.wf = model.n_dof, options.harmonics, options.pulsation
        self.width = 2 * self.harmonics + 1
        period = 2 * math.pi / self.wf
        self.t_obj = condition_times(period, options.grid_rate_hz)
        self.b_obj = basis_matrices(self.t_obj, self.wf, self.harmonics)
        points = options.constraint_points or SAMPLES_PER_HARMONIC * self.harmonics
        self.t_con = np.arange(points) * period / points
        self.grid_factor = GRID_SHRINK * math.cos(math.pi * self.harmonics / points)  # the sampling inequality
        self.b_con = basis_matrices(self.t_con, self.wf, self.harmonics)
        self.a_ub, self.b_ub = self._linear_inequalities()
        self.joint_map = coupled_joint_limits(model, options.config)
        if self.joint_map is not None:
            a_joint, b_joint = self._joint_inequalities(self.joint_map)
            self.a_ub, self.b_ub = np.vstack([self.a_ub, a_joint]), np.concatenate([self.b_ub, b_joint])
        self.a_eq = np.kron(np.eye(self.n), self._rest_rows())
        layout = base.layout
        self.fv = (np.array([layout.joint_index(j, "fv") for j in range(self.n)]) if "viscous" in layout.friction
                   else None)
        self.pm = pin.Model(model.expanded if model.expanded is not None else model.pin_model)  # mimic: expanded
        self.pm.armature[:] = 0.0
        self.pdata = self.pm.createData()
        self.p0 = [np.array(self.pm.inertias[k + 1].toDynamicParameters()) for k in range(model.n_bodies)]
        self.p0 = [p if p[0] > 1e-3 else p + np.array([1.0, 0, 0, 0, 1, 0, 1, 0, 0, 1]) for p in self.p0]
        if effort_bound is None:
            effort_bound = np.full(self.n, np.inf)
        self.effort = np.minimum(effort_bound, limits.effort) if limits.effort is not None else effort_bound
        self.effort_joints = np.flatnonzero(np.isfinite(self.effort))
        self.nonlinear = self.effort_joints.size > 0
        self.frames = {name: _frame_id(model, name) for name in options.cartesian_boxes}
        self.column_scale = self._column_scale()
        self.t_nl = np.arange(max(100, 20 * self.harmonics)) * period / max(100, 20 * self.harmonics)
        self.b_nl = basis_matrices(self.t_nl, self.wf, self.harmonics)
        self.b_box = basis_matrices(box_times(period), self.wf, self.harmonics)  # the boxes' own check grid
        self.clearance: ClearanceRows | None = None
        self.collision = None
        if options.collision is not None and options.collision.enabled and not isinstance(base, FramesBase):
            self.collision = load_collision_model(model, options.collision)
            if self.collision is not None and self.collision.rows:
                self.clearance = ClearanceRows(self.collision, self.n, self.harmonics, self.wf,
                                               options.clearance_rate_hz)

    # --- the base regressor (a frames robot's problem overrides these) ---------------------------------
    def _column_scale(self) -> np.ndarray:
        if isinstance(self.base, FramesBase):
            return frames_column_scale(self.base, self.limits)
        return robot_column_scale(self.model, self.base)

    def columns(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(N, n, n_base) base regressor at the states (velocities at rest already snapped to zero)."""
        if isinstance(self.base, FramesBase):
            return self.base.columns(q, dq, ddq)
        return regressor_3d(self.model, self.base.layout, q, dq, ddq)[:, :, self.base.independent]

    def condition_numbers(self, trajectory: FourierTrajectory) -> tuple[float, float]:
        """The condition number of the base regressor over one period at 50 Hz and the same with unit-norm columns
        (:func:`excitation_condition_number`, :func:`excitation_scaled_condition_number`)."""
        q, dq, ddq = trajectory.evaluate(condition_times(trajectory.period))
        w = self.columns(q, _snap_rest(dq), ddq).reshape(-1, self.base.n_base)
        return condition_number(w), scaled_condition_number(w)

    # --- variables ---------------------------------------------------------------------------------
    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The variables ``x`` as per-joint offsets ``q0`` (n,) and Fourier coefficients ``[a, b]`` (n, 2L)."""
        blocks = x.reshape(self.n, self.width)
        return blocks[:, 0], blocks[:, 1:]

    def trajectory(self, x: np.ndarray) -> FourierTrajectory:
        """The Fourier trajectory of the variables ``x``."""
        q0, c = self.split(x)
        return FourierTrajectory(self.model.joints, self.wf, q0, c[:, :self.harmonics], c[:, self.harmonics:])

    def states(self, x: np.ndarray, bases: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions, velocities and accelerations (N, n) of ``x`` on the time grid of ``bases``."""
        q0, c = self.split(x)
        return q0 + bases[0] @ c.T, bases[1] @ c.T, bases[2] @ c.T

    def _rest_rows(self) -> np.ndarray:
        """Per joint: ``sum_l a_l = 0`` and ``sum_l l b_l = 0`` (velocity and acceleration zero at t = 0)."""
        rows = np.zeros((2, self.width))
        rows[0, 1:1 + self.harmonics] = 1.0
        rows[1, 1 + self.harmonics:] = np.arange(1, self.harmonics + 1)
        return rows

    def project_rest(self, x: np.ndarray) -> np.ndarray:
        """Nearest point satisfying the rest equalities exactly."""
        rows = self._rest_rows()
        blocks = x.reshape(self.n, self.width).copy()
        blocks -= (np.linalg.solve(rows @ rows.T, rows @ blocks.T)).T @ rows
        return blocks.reshape(-1)

    def _linear_inequalities(self) -> tuple[np.ndarray, np.ndarray]:
        """``A x <= b``: position, velocity, acceleration on the constraint grid, one block per joint, each within
        ``grid_factor`` of its limit (of the half range about the range's centre for positions): within the limits at
        every time (module docstring)."""
        bq, bdq, bddq = self.b_con
        m = len(self.t_con)
        one, zero = np.ones((m, 1)), np.zeros((m, 1))
        block = np.vstack([np.hstack([one, bq]), np.hstack([-one, -bq]), np.hstack([zero, bdq]),
                           np.hstack([zero, -bdq]), np.hstack([zero, bddq]), np.hstack([zero, -bddq])])
        lim = self.limits
        center, half = lim.position.mean(axis=1), self.grid_factor * 0.5 * (lim.position[:, 1] - lim.position[:, 0])
        rhs = [np.concatenate([np.full(m, center[k] + half[k]), np.full(m, -(center[k] - half[k])),
                               np.full(2 * m, self.grid_factor * lim.velocity[k]),
                               np.full(2 * m, self.grid_factor * lim.acceleration[k])]) for k in range(self.n)]
        return np.kron(np.eye(self.n), block), np.concatenate(rhs)

    def _joint_inequalities(self, joint_map: CoupledJointLimits) -> tuple[np.ndarray, np.ndarray]:
        """``A x <= b``: the description's joints ``C q_m + o`` within their position and velocity limits on the
        constraint grid (a model in motor coordinates: the URDF still bounds its joints)."""
        bq, bdq, _ = self.b_con
        m = len(self.t_con)
        one, zero = np.ones((m, 1)), np.zeros((m, 1))
        rows, rhs = [], []
        for j in range(joint_map.matrix.shape[0]):
            c = joint_map.matrix[j][None, :]
            lower, upper = joint_map.position[j]
            center, half = 0.5 * (lower + upper) - joint_map.offset[j], self.grid_factor * 0.5 * (upper - lower)
            position = np.kron(c, np.hstack([one, bq]))
            velocity = np.kron(c, np.hstack([zero, bdq]))
            rows += [position, -position, velocity, -velocity]
            rhs += [np.full(m, center + half), np.full(m, -(center - half)),
                    np.full(2 * m, self.grid_factor * joint_map.velocity[j])]
        return np.vstack(rows), np.concatenate(rhs)

    def linear_violation(self, x: np.ndarray) -> float:
        """Largest violation of the linear inequality and equality constraints at ``x``."""
        return float(max(np.max(self.a_ub @ x - self.b_ub), np.max(np.abs(self.a_eq @ x))))

    # --- objective ---------------------------------------------------------------------------------
    def objective(self, x: np.ndarray, gradient: bool = True) -> tuple[float, np.ndarray | None]:
        """``log cond`` (or ``-log det / 2``) of the base regressor on the objective grid, and its gradient."""
        q, dq, ddq = self.states(x, self.b_obj)
        dq = _snap_rest(dq)
        w = self.columns(q, dq, ddq)
        flat = w.reshape(-1, self.base.n_base) * self.column_scale  # each base parameter in the robot's own unit
        eigenvalues, vectors = np.linalg.eigh(flat.T @ flat)
        if eigenvalues[0] <= 1e-300:
            return 1e3, np.zeros_like(x) if gradient else None
        sigma = np.sqrt(eigenvalues)
        if self.options.objective == "cond":
            value = float(np.log(sigma[-1] / sigma[0]))
            terms = [(-1.0 / sigma[0], vectors[:, 0], sigma[0]), (1.0 / sigma[-1], vectors[:, -1], sigma[-1])]
        else:
            value = float(-np.sum(np.log(sigma)))
            terms = [(-1.0 / s, vectors[:, i], s) for i, s in enumerate(sigma)]
        if not gradient:
            return value, None
        # d sigma_i = u_i^T dY v_i with u_i = Y v_i / sigma_i; d value = sum weight_i d sigma_i.
        covectors = [(weight / s) * (w @ (self.column_scale * v)) for weight, v, s in terms]
        gq, gdq, gddq = self._torque_gradient([self.column_scale * v for _, v, _ in terms], covectors, q, dq, ddq)
        return value, self._chain(gq, gdq, gddq, self.b_obj)

    def _torque_gradient(self, directions: list[np.ndarray], covectors: list[np.ndarray], q: np.ndarray,
                         dq: np.ndarray, ddq: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``sum_i sum_s c_is^T d tau_s(v_i)`` by q, q', q'' per sample, each (N, n).

        The rigid-body torques of an arbitrary parameter vector ``v`` are those of ``v + p0`` minus
        those of ``p0`` (nominal inertias, mass > 0), which pinocchio's inertias can represent.
        """
        full = np.zeros((len(directions), self.base.n_parameters))
        full[:, self.base.independent] = np.array(directions)
        gq, gdq, gddq = (np.zeros_like(q) for _ in range(3))
        passes = [(full[i], covectors[i]) for i in range(len(directions))]
        passes.append((np.zeros(self.base.n_parameters), -np.sum(covectors, axis=0)))
        for parameters, covector in passes:
            for k in range(len(self.p0)):
                self.pm.inertias[k + 1] = pin.Inertia.FromDynamicParameters(parameters[10 * k:10 * k + 10]
                                                                           + self.p0[k])
            by_q, by_v, mass = (np.empty((len(q), self.n, self.n)) for _ in range(3))
            for s in range(len(q)):
                by_q[s], by_v[s], mass[s] = rnea_derivatives(self.model, self.pm, self.pdata, q[s], dq[s], ddq[s])
            gq += np.einsum("si,sij->sj", covector, by_q)
            gdq += np.einsum("si,sij->sj", covector, by_v)
            if self.fv is not None:
                gdq += covector * parameters[self.fv]  # viscous friction
            gddq += np.einsum("si,sij->sj", covector, mass)  # Coulomb and offset friction have no slope
            if isinstance(self.base, FramesBase):  # a frames robot's per-frame friction, rotor inertia, springs
                terms = self.base.term_gradient(parameters, covector, q, dq, ddq)
                gq, gdq, gddq = gq + terms[0], gdq + terms[1], gddq + terms[2]
        return gq, gdq, gddq

    def _chain(self, gq: np.ndarray, gdq: np.ndarray, gddq: np.ndarray, bases: tuple[np.ndarray, ...]
               ) -> np.ndarray:
        """Gradient by the variables from gradients by the states on a grid."""
        out = np.empty((self.n, self.width))
        out[:, 0] = gq.sum(axis=0)
        out[:, 1:] = gq.T @ bases[0] + gdq.T @ bases[1] + gddq.T @ bases[2]
        return out.reshape(-1)

    # --- nonlinear constraints (torques, Cartesian boxes) ------------------------------------------
    def nonlinear_constraints(self, x: np.ndarray) -> np.ndarray:
        """Values that must be >= 0: effort margins and Cartesian box margins on the coarse grid."""
        q, dq, ddq = self.states(x, self.b_nl)
        parts = []
        if self.nonlinear:
            k = self.effort_joints
            tau = nominal_torques(self.model, q, dq, ddq)[:, k]
            bound = (1.0 - TORQUE_MARGIN) * self.effort[k]
            parts += [(bound - tau).reshape(-1), (bound + tau).reshape(-1)]
        q_box = self.states(x, self.b_box)[0] if self.frames else None
        for name, frame in self.frames.items():
            box = np.asarray(self.options.cartesian_boxes[name], dtype=float)
            p = self._frame_positions(q_box, frame)
            parts += [(p - box[:, 0]).reshape(-1), (box[:, 1] - p).reshape(-1)]
        if self.clearance is not None:
            parts.append(self.clearance.values(x))
        return np.concatenate(parts) if parts else np.zeros(0)

    def nonlinear_jacobian(self, x: np.ndarray) -> np.ndarray:
        """Jacobian of :meth:`nonlinear_constraints` with respect to ``x``."""
        q, dq, ddq = self.states(x, self.b_nl)
        rows = []
        if self.nonlinear:
            k = self.effort_joints
            dq_, dv_, da_ = nominal_torque_jacobians(self.model, q, dq, ddq)
            jac = self._state_jacobian(dq_[:, k], dv_[:, k], da_[:, k])
            rows += [-jac, jac]
        q_box = self.states(x, self.b_box)[0] if self.frames else None
        for frame in self.frames.values():
            jq = self._frame_jacobians(q_box, frame)
            jac = self._state_jacobian(jq, np.zeros_like(jq), np.zeros_like(jq), self.b_box)
            rows += [jac, -jac]
        if self.clearance is not None:
            rows.append(self.clearance.jacobian(x))
        return np.vstack(rows)

    def _state_jacobian(self, dq_: np.ndarray, dv_: np.ndarray, da_: np.ndarray,
                        bases: tuple[np.ndarray, ...] | None = None) -> np.ndarray:
        """(N * r, n_var) Jacobian of per-sample outputs (N, r) from their (N, r, n) state Jacobians on the grid of
        ``bases`` (default: the coarse grid of the torques)."""
        bq, bdq, bddq = self.b_nl if bases is None else bases
        n_samples, r, _ = dq_.shape
        out = np.zeros((n_samples, r, self.n, self.width))
        out[:, :, :, 0] = dq_
        out[:, :, :, 1:] = (dq_[..., None] * bq[:, None, None, :] + dv_[..., None] * bdq[:, None, None, :]
                            + da_[..., None] * bddq[:, None, None, :])
        return out.reshape(n_samples * r, -1)

    def _frame_positions(self, q: np.ndarray, frame: int) -> np.ndarray:
        pm, data = self.model.pin_model, self.model.pin_model.createData()
        out = np.zeros((len(q), 3))
        for s, qs in enumerate(self.model.configuration(q)):
            pin.framesForwardKinematics(pm, data, qs)
            out[s] = data.oMf[frame].translation
        return out

    def _frame_jacobians(self, q: np.ndarray, frame: int) -> np.ndarray:
        pm, data = self.model.pin_model, self.model.pin_model.createData()
        out = np.zeros((len(q), 3, self.n))
        for s, qs in enumerate(self.model.configuration(q)):
            out[s] = pin.computeFrameJacobian(pm, data, qs, frame, pin.LOCAL_WORLD_ALIGNED)[:3]
        return out

    @property
    def has_nonlinear(self) -> bool:
        """Whether there are nonlinear constraints: efforts, Cartesian boxes or clearance."""
        return self.nonlinear or bool(self.frames) or self.clearance is not None

    def penalty(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """:data:`CLEARANCE_PENALTY` times the clearance rows' total violation at ``x`` and its gradient."""
        if self.clearance is None:
            return 0.0, np.zeros_like(x)
        values = self.clearance.values(x)
        bad = values < 0
        if not bad.any():
            return 0.0, np.zeros_like(x)
        return (-CLEARANCE_PENALTY * float(values[bad].sum()),
                -CLEARANCE_PENALTY * self.clearance.jacobian(x)[bad].sum(axis=0))

    def restore(self, x: np.ndarray, linear: list[dict], *, feasible: object, deadline: float) -> np.ndarray | None:
        """Feasibility restoration (the restoration phase of Fletcher & Leyffer 2002's filter SQP): from ``x``,
        minimize ``1/2 sum min(0, g_i - room)^2`` over the nonlinear rows ``g`` (torques, boxes, clearance) within
        the linear constraints, and return the first iterate ``feasible`` accepts (None if none within
        :data:`RESTORATION_ITERATIONS`)."""
        def violation(z: np.ndarray) -> tuple[float, np.ndarray]:
            if time.perf_counter() > deadline:
                raise _BudgetExhausted
            short = np.minimum(self.nonlinear_constraints(z) - RESTORATION_ROOM, 0.0)
            if not short.any():
                return 0.0, np.zeros_like(z)
            return 0.5 * float(short @ short), self.nonlinear_jacobian(z).T @ short

        found: list[np.ndarray] = []

        def stop_when_feasible(z: np.ndarray) -> None:
            if feasible(z):
                found.append(z.copy())
                raise StopIteration

        if feasible(x):
            return x
        result = scipy.optimize.minimize(violation, x, jac=True, method="SLSQP", constraints=linear,
                                         callback=stop_when_feasible,
                                         options={"maxiter": RESTORATION_ITERATIONS, "ftol": 1e-12})
        if found:
            return found[0]
        return result.x if feasible(result.x) else None

    def shortfall(self, x: np.ndarray) -> str | None:
        """What keeps the start ``x`` out of the feasible set, in words: the pair of its pose at rest furthest
        below the clearance it keeps (or, when every pair keeps it, the clearance row furthest below its bound:
        the row's smooth minimum lies up to ``SHARPNESS log(samples)`` below the distance and keeps
        :data:`~dynid_ros.excitation.clearance.GRID_SLACK` more), and the joint whose nominal torque is furthest
        over the optimizer's bound (``1 - TORQUE_MARGIN`` of the effort bound); None when none is."""
        found = []
        q0 = self.split(x)[0]
        if self.collision is not None and self.collision.rows:
            worst = min(self.collision.scan(q0[None, :], np.zeros((1, self.n)), 1.0, floor=0.0),
                        key=lambda c: c.slack)
            where = (" (the workcell is the config's collision: environment; by default a table z = 0 under the "
                     "base)") if worst.row.obstacle else ""
            if worst.slack < 0 and worst.distance < 0:
                found.append(f"at rest at its pose {worst.row.name} are {-100 * worst.distance:.2g} cm into each "
                             f"other{where}")
            elif worst.slack < 0:
                found.append(f"at rest at its pose {worst.row.name} are {100 * worst.distance:.2g} cm apart, less "
                             f"than the {100 * worst.row.margin:.2g} cm kept{where}")
            elif self.clearance is not None and np.min(self.clearance.values(x)) < 0:
                values = self.clearance.values(x)
                pair = int(np.argmin(values)) // self.clearance.windows  # rows by pair, then window
                row = self.collision.rows[pair]
                at_rest = self.collision.scan(q0[None, :], np.zeros((1, self.n)), 1.0, floor=None, rows=[pair])
                distance = at_rest[0].distance
                found.append(f"{row.name} are {100 * distance:.2g} cm apart at its pose, {100 * row.margin:.2g} cm "
                             f"kept, and its clearance row is {-100 * float(np.min(values)):.2g} cm short (the rows "
                             "keep a grid slack and a smooth minimum below the distance)")
        if self.nonlinear:
            k = self.effort_joints
            tau = nominal_torques(self.model, *self.states(x, self.b_nl))[:, k]
            ratio = np.max(np.abs(tau), axis=0) / ((1.0 - TORQUE_MARGIN) * self.effort[k])
            if ratio.max() > 1.0:
                j = int(k[np.argmax(ratio)])
                found.append(f"the nominal torque of {self.model.joints[j]} is {100 * ratio.max():.0f} % of "
                             f"{100 * (1 - TORQUE_MARGIN):.0f} % of its effort bound")
        return "; ".join(found) or None

    # --- starts --------------------------------------------------------------------------------------
    def start(self, rng: np.random.Generator) -> np.ndarray:
        """A random feasible start: random coefficients at rest, each joint scaled to 70 % of its room; with
        clearance rows, about a pose clear of everything and scaled down until the motion is clear too."""
        x = np.zeros((self.n, self.width))
        lim = self.limits
        center, half = lim.position.mean(axis=1), 0.5 * (lim.position[:, 1] - lim.position[:, 0])
        band = np.stack([center - self.grid_factor * half, center + self.grid_factor * half], axis=1)  # the grid's
        x[:, 0] = center
        if self.clearance is not None:  # a pose within the grid's position rows: the start is feasible for them
            x[:, 0] = self.clearance.clear_pose(np.clip(self.collision.reference, band[:, 0], band[:, 1]),
                                                dataclasses.replace(lim, position=band), rng)
        x[:, 1:] = rng.uniform(-1.0, 1.0, (self.n, 2 * self.harmonics))
        x = self.project_rest(x.reshape(-1)).reshape(self.n, self.width)
        q0 = x[:, 0]
        q, dq, ddq = self.states(x.reshape(-1), self.b_con)
        room = np.minimum(band[:, 1] - q0, q0 - band[:, 0])
        scale = np.min([room / np.abs(q - q0).max(axis=0), lim.velocity / np.abs(dq).max(axis=0),
                        lim.acceleration / np.abs(ddq).max(axis=0)], axis=0)
        x[:, 1:] *= 0.7 * scale[:, None]
        if self.clearance is not None:
            x[:, 1:] *= self.clearance.clear_scale(x.reshape(-1))
        return x.reshape(-1)


def _frame_id(model: RobotModel, name: str) -> int:
    if not model.pin_model.existFrame(name):
        raise ConfigError(f"cartesian box: the robot has no frame {name!r}")
    return int(model.pin_model.getFrameId(name))


@dataclass
class _Best:
    value: float = math.inf
    x: np.ndarray | None = None


def optimize_excitation(model: RobotModel | FramesRobot, options: ExcitationOptions, progress: bool = True
                        ) -> ExcitationTrajectory:
    """Find an exciting trajectory within the limits (module docstring); deterministic for a seed
    when the time budget does not cut a start short.

    ``model`` may be in motor coordinates (:func:`dynid_ros.robot.coupling.apply_coupling`) or a frames robot
    (:func:`dynid_ros.robot.frames.load_frames_robot`): the trajectory is then in the motor coordinates (the names
    and order of the JointState messages, what the controller takes), the objective is the regressor the
    identification fits (motor-side friction and rotor inertia; a frames robot's links and per-frame terms), and
    the config's ``excitation:`` position and velocity limits of every motor are required (no description gives
    them). A coupled URDF's joints ``C q_m + o`` are still held within the URDF's position and velocity limits.

    Raises:
        ExcitationError: no start found a feasible trajectory, or the best one excites the robot too
            little (condition number above ``options.max_condition_number``): limits too tight for
            the frequency, Cartesian boxes that exclude the start, torques above the limits.
    """
    from threadpoolctl import threadpool_limits

    options.check()
    with threadpool_limits(limits=1, user_api="blas"):  # small matrices: threads only contend (2-core machines)
        return _optimize(model, options, progress)


def _problem(source: RobotModel | FramesRobot, options: ExcitationOptions) -> ExcitationProblem:
    """The problem of a URDF/DH model, a model in motor coordinates or a frames robot (limits from the config)."""
    frames = source if isinstance(source, FramesRobot) else None
    model = frames.model if frames is not None else source
    by_config = frames is not None or bool(model.description_joints)
    if by_config and options.cartesian_boxes:
        raise ConfigError("excitation.cartesian_boxes need a robot in its description's joint coordinates, not "
                          "robot.frames or a coupling: (motor coordinates)")
    if frames is None and options.exclude_frames:
        raise ConfigError("excitation.exclude_frames is for a robot described by frames (robot.frames)")
    if frames is not None and (options.torque_limits or (options.config or {}).get("effort") is not None):
        raise ConfigError("a frames robot (robot.frames) has no nominal parameters to bound its torques: remove "
                          "excitation torque_limits and effort")
    limits = options.limits
    if limits is None:
        config = dict(options.config)
        config["margins"] = {**(config.get("margins") or {}), **options.margins}
        if options.torque_limits:
            config["torque_limits"] = True
        limits = limits_from_model(model, config, from_config=by_config)
    if limits.n_dof != model.n_dof:
        raise ConfigError(f"limits have {limits.n_dof} joints, the model {model.n_dof}")
    if options.torque_limits and limits.effort is None:
        raise ConfigError("torque_limits needs effort limits")
    if frames is not None:
        base = frames_base(frames, limits, tuple(options.exclude_frames))
        return ExcitationProblem(model, options, limits, base, None)
    return ExcitationProblem(model, options, limits, condition_base(model), effort_bounds(model, options.config))


def _optimize(source: RobotModel | FramesRobot, options: ExcitationOptions, progress: bool) -> ExcitationTrajectory:
    started = time.perf_counter()
    deadline = started + options.time_budget_s
    problem = _problem(source, options)
    model, limits, base = problem.model, problem.limits, problem.base
    best = _Best()
    linear = [  # joint limits, rest at the period's ends: also kept by a feasibility restoration
        {"type": "ineq", "fun": lambda x: problem.b_ub - problem.a_ub @ x, "jac": lambda x: -problem.a_ub},
        {"type": "eq", "fun": lambda x: problem.a_eq @ x, "jac": lambda x: problem.a_eq},
    ]
    constraints = list(linear)
    if problem.has_nonlinear:
        constraints.append({"type": "ineq", "fun": problem.nonlinear_constraints,
                            "jac": problem.nonlinear_jacobian})

    def feasible(x: np.ndarray) -> bool:
        if problem.linear_violation(x) > 1e-9:
            return False
        return not problem.has_nonlinear or bool(np.min(problem.nonlinear_constraints(x)) >= -1e-9)

    finals: list[_Best] = []  # each start's best feasible point: the candidates of the final check
    penalized = [False]  # the objective pays for clearance violation (after a failed restoration in this start)

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        if time.perf_counter() > deadline:
            raise _BudgetExhausted
        value, grad = problem.objective(x)
        if value < finals[-1].value and feasible(x):
            finals[-1].value, finals[-1].x = value, x.copy()
            if value < best.value:
                best.value, best.x = value, x.copy()
        if not penalized[0]:
            return value, grad
        penalty, slope = problem.penalty(x)  # zero where feasible: guards SLSQP's steps (CLEARANCE_PENALTY)
        return value + penalty, grad + slope

    def run_start(x: np.ndarray) -> int:
        """SLSQP from ``x``; a run stalled outside the clearance rows is restored to feasibility and goes on with
        the iterations left (when it is too deep to restore: again from the start's best feasible point with
        :data:`CLEARANCE_PENALTY` in the objective), until a run from a restored point gains nothing on the start's
        best feasible point (UR10: 150 iterations, 84 s CPU, the last 50 s CPU restoring and leaving again with no
        gain). Returns the iterations made."""
        done, left = 0, options.max_iterations
        outside, penalized[0] = [0], False

        def watch(z: np.ndarray) -> None:
            outside[0] = 0 if feasible(z) else outside[0] + 1
            if outside[0] >= STALL_ITERATIONS:
                raise StopIteration

        restored_leg = False
        while left > 0:
            outside[0], before = 0, finals[-1].value
            result = scipy.optimize.minimize(fun, x, jac=True, method="SLSQP", constraints=constraints,
                                             callback=watch if problem.clearance is not None else None,
                                             options={"maxiter": left, "ftol": 1e-7})
            done += int(result.nit)
            left -= max(int(result.nit), 1)
            if problem.clearance is None or feasible(result.x) or left <= 0:
                break
            if restored_leg and not finals[-1].value < before:  # restored, left the rows again, nothing gained:
                break  # the start has converged to where SLSQP leaves the rows
            restored = problem.restore(result.x, linear, feasible=feasible, deadline=deadline)
            if restored is None and not penalized[0] and finals[-1].x is not None:
                penalized[0], restored_leg = True, False  # too deep to restore: again from the start's best
                x = finals[-1].x.copy()  # feasible point, the objective paying for any clearance violation
                continue
            if restored is None:
                break
            fun(restored)  # a candidate of this start
            x, restored_leg = restored, True
        return done

    from tqdm import tqdm

    bar = tqdm(total=options.n_starts, desc="excitation", unit="start", disable=not progress, file=sys.stderr)
    starts_done, iterations = 0, 0
    history: list[dict] = []
    try:
        for i in range(options.n_starts):
            x_start = problem.start(np.random.default_rng([options.seed, i]))
            finals.append(_Best())
            if best.x is None and feasible(x_start):  # the first feasible start is a result, whatever the budget
                finals[-1].value = best.value = problem.objective(x_start)[0]
                finals[-1].x, best.x = x_start.copy(), x_start.copy()
            try:
                iterations += run_start(x_start)
            except _BudgetExhausted:
                break
            starts_done += 1
            history.append({"start": i, "time_s": round(time.perf_counter() - started, 3),
                            "best": _readable(options.objective, best.value) if best.x is not None else None})
            bar.update(1)
            if best.x is not None:
                bar.set_postfix_str(f"{'cond' if options.objective == 'cond' else 'log det / 2'} "
                                    f"{_readable(options.objective, best.value):.4g}")
    finally:
        bar.close()
    elapsed = time.perf_counter() - started
    budget_cut = ExcitationError(
        f"no trajectory satisfies the limits yet: the time budget ({options.time_budget_s:g} s) ended before the first "
        "start of the optimization finished (a start takes longer on this robot: give a longer time budget, "
        "--time-budget or excitation: time_budget_s)")
    if best.x is None and starts_done == 0:
        raise budget_cut
    if best.x is None:
        why = problem.shortfall(x_start)
        raise ExcitationError(f"no trajectory satisfies the limits after {starts_done} start(s) in {elapsed:.0f} s "
                              + (f"(the last start: {why})" if why else
                                 "(torque limits, Cartesian boxes or obstacles that exclude every start?)"))
    trajectory, rejected = _clear_candidate(problem, sorted((f for f in finals if f.x is not None),
                                                            key=lambda f: f.value))
    condition, scaled = problem.condition_numbers(trajectory)
    if not scaled <= options.max_condition_number:
        if starts_done == 0:  # only the unoptimized first start: the budget, not the limits, is the problem
            raise budget_cut
        raise ExcitationError(
            f"the limits are too tight to excite the robot at wf = {problem.wf:.4g} rad/s: the best condition "
            f"number with unit-norm columns is {scaled:.3g} (accepted up to {options.max_condition_number:g}); allow "
            "larger acceleration/velocity/position ranges or change the frequency")
    margins = check_trajectory_limits(trajectory, limits, CHECK_RATE_HZ,
                                      model=model if limits.effort is not None else None)
    _check_cartesian(problem, trajectory)
    if problem.joint_map is not None:
        t, q, dq, _ = sample_trajectory(trajectory, CHECK_RATE_HZ)
        check_coupled_joints(problem.joint_map, t, q, dq)
    info = {
        "objective": options.objective, "seed": options.seed, "starts": starts_done, "iterations": iterations,
        "time_s": round(time.perf_counter() - started, 3), "frequency_hz": problem.wf / (2 * math.pi),
        "n_base": base.n_base, "margins": margins, "history": history, "condition_number_scaled": scaled,
    }
    if options.cartesian_boxes:
        info["cartesian_boxes"] = {k: np.asarray(v, dtype=float).tolist() for k, v in options.cartesian_boxes.items()}
    if problem.collision is not None:
        clearance, t = smallest_clearance(problem.collision, trajectory)
        info["collision"] = problem.collision.summary(clearance, t)
        if rejected:
            info["collision"]["rejected"] = rejected
    elif options.collision is not None and options.collision.enabled:
        info["collision"] = {"margin_m": options.collision.margin, "checked_pairs": 0,
                             "not_checked": ["every link (a robot described by its frames has no geometry)"]}
    else:
        info["collision"] = None
    return ExcitationTrajectory(trajectory, limits, condition, info)


def _clear_candidate(problem: ExcitationProblem, candidates: list[_Best]) -> tuple[FourierTrajectory, list[str]]:
    """The best candidate (each start's best point, best first) whose executed trajectory (rest projection, 1 kHz
    limit scaling, effort shrink) keeps every clearance on the execution check's 1 kHz grid; the others are
    rejected (their reasons returned), never trimmed. ExcitationError when every one collides."""
    rejected: list[str] = []
    for candidate in candidates:
        trajectory = _within_effort(problem, _verified(problem, problem.project_rest(candidate.x)))
        if problem.clearance is None:
            return trajectory, rejected
        try:
            problem.clearance.check(trajectory)
        except CollisionError as err:
            rejected.append(str(err))
            continue
        return trajectory, rejected
    raise ExcitationError(f"every optimized trajectory ({len(candidates)}) fails the 1 kHz collision check, e.g. "
                          f"{rejected[0]}")


def _readable(objective: str, value: float) -> float:
    """The optimizer's value as a condition number (``cond``) or ``log det(Y^T Y) / 2`` (``logdet``)."""
    return math.exp(min(value, 700.0)) if objective == "cond" else -value


def _verified(problem: ExcitationProblem, x: np.ndarray) -> FourierTrajectory:
    """The trajectory of ``x``, its motion about ``q0`` scaled down if the 1 kHz grid finds it over a limit."""
    trajectory = problem.trajectory(x)
    limits = problem.limits
    n = int(math.ceil(trajectory.period * CHECK_RATE_HZ))
    q, dq, ddq = trajectory.evaluate(np.linspace(0.0, trajectory.period, n + 1))
    offset = q - trajectory.q0
    with np.errstate(divide="ignore"):
        ratios = np.concatenate([(limits.position[:, 1] - trajectory.q0) / offset.max(axis=0),
                                 (trajectory.q0 - limits.position[:, 0]) / -offset.min(axis=0),
                                 limits.velocity / np.abs(dq).max(axis=0),
                                 limits.acceleration / np.abs(ddq).max(axis=0)])
    if problem.joint_map is not None:
        ratios = np.concatenate([ratios, _joint_ratios(problem.joint_map, trajectory.q0, q, dq)])
    ratios = ratios[ratios > 0]
    scale = float(np.min(ratios))
    return trajectory if scale >= 1.0 else trajectory.scaled(scale * (1 - 1e-9))


def _joint_ratios(joint_map: CoupledJointLimits, q0: np.ndarray, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
    """How far the motion about ``q0`` may be scaled before a coupled description joint reaches a limit."""
    center, qj = joint_map.joint_positions(q0), joint_map.joint_positions(q)
    offset = qj - center
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.concatenate([(joint_map.position[:, 1] - center) / offset.max(axis=0),
                               (center - joint_map.position[:, 0]) / -offset.min(axis=0),
                               joint_map.velocity / np.abs(dq @ joint_map.matrix.T).max(axis=0)])


def _within_effort(problem: ExcitationProblem, trajectory: FourierTrajectory) -> FourierTrajectory:
    """The trajectory whose nominal torques, on the 1 kHz grid of the execution check, are within the effort
    bounds (:func:`dynid_ros.excitation.limits.effort_bounds`): the optimizer kept them within
    ``1 - TORQUE_MARGIN`` of the bounds on its coarse grid; a peak between its points is removed by shrinking the
    motion about ``q0`` (by :data:`SHRINK_STEP` at a time). ExcitationError if that does not get there."""
    k = problem.effort_joints
    if not k.size:
        return trajectory
    for _ in range(SHRINK_STEPS):
        n = int(math.ceil(trajectory.period * CHECK_RATE_HZ))
        q, dq, ddq = trajectory.evaluate(np.linspace(0.0, trajectory.period, n + 1))
        tau = nominal_torques(problem.model, q, dq, ddq)[:, k]
        peak = float(np.max(np.abs(tau) / problem.effort[k]))
        if peak <= 1.0:
            return trajectory
        trajectory = trajectory.scaled(SHRINK_STEP)
    raise ExcitationError(f"the nominal torque stays {100 * (peak - 1):.1f} % above the effort limits (times the "
                          "effort margin) even with the motion shrunk: the robot cannot hold its own weight within "
                          "them in this range; narrow the position range or raise the effort margin")


def _check_cartesian(problem: ExcitationProblem, trajectory: FourierTrajectory) -> None:
    """Cartesian boxes at 100 Hz on the final trajectory."""
    if not problem.frames:
        return
    t = box_times(trajectory.period)
    q = trajectory.evaluate(t)[0]
    for name, frame in problem.frames.items():
        box = np.asarray(problem.options.cartesian_boxes[name], dtype=float)
        p = problem._frame_positions(q, frame)
        bad = np.argwhere((p < box[:, 0] - 1e-6) | (p > box[:, 1] + 1e-6))
        if bad.size:
            s, axis = bad[0]
            raise ExcitationError(f"frame {name}: {'xyz'[axis]} = {p[s, axis]:.4g} m at t = {t[s]:.2f} s leaves "
                                  f"its box [{box[axis, 0]:.4g}, {box[axis, 1]:.4g}]")
