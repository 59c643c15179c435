"""Step-wise MuJoCo simulation of a joint-torque-sensing arm, and offline simulation of a whole profile.

Each :meth:`Simulator.step` is one control period: read the state ``(q_k, q'_k)`` at ``t_k``,
compute the controller torque ``tau_k``, apply it with the truth friction, integrate one timestep
(the choices that keep the torque exactly known are in :mod:`dynid_ros.sim.mujoco_model`).
The returned :class:`JointSample` is what a ros2_control robot publishes at ``t_k``: position,
velocity and the measured joint torque ``effort_k = tau_k + bias + noise``, where ``tau_k`` is the
actuator torque that produces the motion (see :mod:`dynid_ros.sim.ground_truth`). The truth
acceleration ``q''_k`` (MuJoCo's ``qacc``) and the friction torque ``f_k`` satisfy, to round-off::

    tau_k = M(q_k) q''_k + c(q_k, q'_k) + g(q_k) + fv q'_k + Ia q''_k - f_k

with ``f_k = -fc sign(q'_k)`` while the joint slides, which is dynid_ros's model (Sousa & Cortesão 2014 eq. 27);
while it sticks at a velocity reversal ``f_k`` is the static friction in ``[-fc, fc]``. With a Stribeck truth
(``GroundTruth.static_friction``) MuJoCo's friction loss is ``fs`` (static friction up to ``fs``) and the explicit
torque ``(fs - fc)(1 - exp(-(q'/vs)^2)) sign(q')`` gives back the decay to ``fc`` while sliding; with a sensor gain
``k`` (``effort_scale``) the effort is ``k tau_k + bias + noise``. A truth spring (``GroundTruth.spring``) is the
explicit torque ``-k (q - q0)``: the actuator torque then holds ``+ k (q - q0)`` beyond the model's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.errors import SimulationError
from dynid_ros.robot.collision import load_collision_model
from dynid_ros.robot.model import RobotModel, load_model
from dynid_ros.robot.workcell import CollisionSettings
from dynid_ros.sim.contacts import ContactMonitor, ContactReport, watch_distance
from dynid_ros.sim.controller import Gains, TrackingController
from dynid_ros.sim.ground_truth import GroundTruth
from dynid_ros.sim.mujoco_model import build_mujoco_model, sensor_site

DIVERGENCE_LIMIT = 1e3
"""A joint velocity above this [rad/s] means the simulation diverged."""


class JointSample(NamedTuple):
    """One published joint state: time [s], position, velocity, effort (measured torque), each (n,)."""

    t: float
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


class Simulator:
    """A MuJoCo arm with the truth dynamics, driven by the nominal-model tracking controller.

    Args:
        urdf_path: the robot's URDF (or xacro; meshes are not needed). The controller uses it as the
            nominal model; the simulated robot is this URDF with ``truth`` applied.
        truth: how the robot differs from the URDF; None: exactly the URDF, no sensor errors.
        timestep: control and integration period [s].
        seed: seed of the sensor noise (``reset`` restarts it, so runs repeat exactly).
        gains: controller gains (default :class:`~dynid_ros.sim.controller.Gains`).
        joints: the driven joints (e.g. those of the trajectory); the others are locked at neutral with a
            warning. Default: the robot's movable joints but mimic and end-effector (gripper) joints.
        xacro_args: ``name:=value`` arguments of a ``.urdf.xacro``.
        ft_sensor_frame: a URDF frame on a moving link (e.g. the flange) where a 6-axis force/torque sensor
            measures the wrench on everything beyond it (:mod:`dynid_ros.sim.mujoco_model`); each step's wrench
            ``[fx, fy, fz, tx, ty, tz]`` (noise-free, in the frame's axes) is in ``last_wrench``.
        collision: the ``collision:`` settings (robot geometry, workcell, pairs; the URDF's meshes are then needed):
            MuJoCo gets the geometry, contacts are on and every step's contacts and clearance go into
            ``contacts`` (:mod:`dynid_ros.sim.contacts`); None: no geometry, contacts off.

    Attributes:
        model: the nominal :class:`~dynid_ros.robot.model.RobotModel` of the driven joints.
        truth: the :class:`GroundTruth` in use.
        truth_urdf: text of the truth URDF that MuJoCo simulates.
        collision: the :class:`~dynid_ros.robot.collision.CollisionModel` in MuJoCo (None: contacts off).
    """

    def __init__(self, urdf_path: str | Path, truth: GroundTruth | None = None, timestep: float = 1e-3,
                 seed: int = 0, gains: Gains | None = None, joints: Sequence[str] | None = None,
                 xacro_args: Sequence[str] | None = None, ft_sensor_frame: str | None = None,
                 collision: CollisionSettings | None = None) -> None:
        import mujoco

        self.model: RobotModel = load_model(urdf=urdf_path, joints=list(joints) if joints else None,
                                            xacro_args=xacro_args)
        self.truth = truth or GroundTruth()
        values = self.truth.joint_values(self.model)
        self._fv, self._fc, self._noise, self._bias = values["fv"], values["fc"], values["noise"], values["bias"]
        self._armature = values["Ia"]
        self._fs, self._scale = values["fs"], values["scale"]
        self._vs = float(self.truth.stribeck_velocity)
        self._spring, self._spring_rest = values["spring"], values["spring_rest"]
        self.truth_urdf = self.truth.urdf_text(self.model)
        self.ft_sensor = sensor_site(self.model, self.truth_urdf, ft_sensor_frame) if ft_sensor_frame else None
        truth_model = load_model(urdf_text=self.truth_urdf, urdf="the truth URDF", joints=list(self.model.joints),
                                 locked_at=dict(self.model.locked_positions), quiet=True)
        if not sum(inertia.mass for inertia in truth_model.pin_model.inertias[1:]) > 0:
            raise SimulationError(f"{urdf_path}: no moving link has a mass (no <inertial>): there is no robot to "
                                  "simulate; simulate a URDF whose links have their <inertial>")
        self.collision = None if collision is None else load_collision_model(self.model, collision)
        watch = watch_distance(self.collision.margin) if self.collision is not None else 0.0
        self._mj_model, self._qpos, self._dof = build_mujoco_model(truth_model, self._fs, self._armature, timestep,
                                                                  self.ft_sensor, collision=self.collision,
                                                                  watch_m=watch)
        self._monitor = None if self.collision is None else ContactMonitor(self._mj_model, self.collision, watch)
        self._mj_data = mujoco.MjData(self._mj_model)
        self._mj_step = mujoco.mj_step
        bodies = [self._mj_model.joint(name).id for name in self.model.pin_model.names[1:]]
        self._body_qpos = np.array([self._mj_model.jnt_qposadr[i] for i in bodies], dtype=int)
        self._body_dof = np.array([self._mj_model.jnt_dofadr[i] for i in bodies], dtype=int)
        self._controller = TrackingController(self.model, gains, timestep, drive_inertia=self._armature)
        self._effort_limits = self.model.effort_limits.copy()
        self._seed = int(seed)
        self._rng = np.random.default_rng(self._seed)
        self.last_acceleration = np.zeros(self.model.n_dof)
        self.last_torque = np.zeros(self.model.n_dof)
        self.last_friction = np.zeros(self.model.n_dof)
        self.last_wrench = np.zeros(6)
        self.saturated_steps = 0
        self.reset(np.zeros(self.model.n_dof))

    @classmethod
    def from_config(cls, urdf_path: str | Path, section: dict | None, seed: int | None = None,
                    noise: float | None = None, joints: Sequence[str] | None = None,
                    xacro_args: Sequence[str] | None = None, ft_sensor_frame: str | None = None,
                    collision: CollisionSettings | None = None) -> Simulator:
        """A simulator from the ``simulation:`` section of a robot config (``timestep``, ``seed``,
        ``truth``, ``controller``); ``seed`` and ``noise`` (sensor noise std) override it; ``joints``,
        ``xacro_args``, ``ft_sensor_frame`` and ``collision`` as in the constructor."""
        from dataclasses import replace

        section = dict(section or {})
        truth = GroundTruth.from_config(section, seed=seed)
        if noise is not None:
            truth = replace(truth, noise=float(noise))
        try:
            timestep = float(section.get("timestep", 1e-3))
        except (TypeError, ValueError) as err:
            raise SimulationError(f"simulation.timestep must be a number, got {section.get('timestep')!r}") from err
        gains = Gains.from_config(section.get("controller"))
        return cls(urdf_path, truth=truth, timestep=timestep, seed=truth.seed, gains=gains, joints=joints,
                   xacro_args=xacro_args, ft_sensor_frame=ft_sensor_frame, collision=collision)

    @property
    def joints(self) -> tuple[str, ...]:
        """Joint names, in the order of every array."""
        return self.model.joints

    @property
    def timestep(self) -> float:
        """MuJoCo's timestep [s]."""
        return float(self._mj_model.opt.timestep)

    @property
    def seed(self) -> int:
        """Seed of the sensor noise."""
        return self._seed

    @property
    def coulomb(self) -> np.ndarray:
        """True Coulomb friction ``fc`` per joint [N m]."""
        return self._fc.copy()

    @property
    def static_friction(self) -> np.ndarray:
        """True static friction per joint [N m]: MuJoCo's friction loss (``fc`` unless Stribeck)."""
        return self._fs.copy()

    @property
    def effort_scale(self) -> np.ndarray:
        """True torque-sensor gain ``k`` per joint (effort = k * torque + bias + noise)."""
        return self._scale.copy()

    @property
    def time(self) -> float:
        """Simulation time [s] of the current state (0 after ``reset``)."""
        return float(self._mj_data.time)

    @property
    def contacts(self) -> ContactReport | None:
        """The contacts and the smallest clearance since the last ``reset`` (None: contacts off)."""
        return None if self._monitor is None else self._monitor.report

    def take_contacts(self) -> ContactReport | None:
        """The contacts and the smallest clearance since the last ``reset`` or ``take_contacts``; a new report
        starts now (a supervisor's report of one motion). None: contacts off."""
        return None if self._monitor is None else self._monitor.take()

    @property
    def mujoco_model(self) -> object:
        """The compiled ``mujoco.MjModel`` (read it; do not change it)."""
        return self._mj_model

    def reset(self, q: np.ndarray, dq: np.ndarray | None = None) -> None:
        """Set the state at time 0 and restart the sensor-noise generator from the seed."""
        import mujoco

        n = self.model.n_dof
        q = np.asarray(q, dtype=float)
        dq = np.zeros(n) if dq is None else np.asarray(dq, dtype=float)
        if q.shape != (n,) or dq.shape != (n,):
            raise SimulationError(f"reset needs q and dq of shape ({n},), got {q.shape} and {dq.shape}")
        mujoco.mj_resetData(self._mj_model, self._mj_data)
        qb, dqb, _ = self.model.body_motion(q, dq, dq)  # mimic followers start on their leader
        self._mj_data.qpos[self._body_qpos] = qb
        self._mj_data.qvel[self._body_dof] = dqb
        mujoco.mj_forward(self._mj_model, self._mj_data)
        self._controller.tune(q)  # the default gains: the joint-space inertia where the robot starts
        self._rng = np.random.default_rng(self._seed)
        self.saturated_steps = 0
        if self._monitor is not None:
            self._monitor.reset()

    def step(self, q_ref: np.ndarray, dq_ref: np.ndarray, ddq_ref: np.ndarray) -> JointSample:
        """Track the reference for one timestep; return the measured state at the start of the step.

        The sample's ``t`` is the time before the step (``time`` afterwards is ``t + timestep``);
        its effort is the torque applied during the step plus sensor bias and noise. The truth
        acceleration of the sample is in ``last_acceleration``, the noise-free torque in ``last_torque``,
        the Coulomb friction torque in ``last_friction``.
        """
        data = self._mj_data
        t = float(data.time)
        q = data.qpos[self._qpos].copy()
        dq = data.qvel[self._dof].copy()
        tau = self._controller.torque(q, dq, q_ref, dq_ref, ddq_ref)
        clipped = np.clip(tau, -self._effort_limits, self._effort_limits)
        if not np.array_equal(clipped, tau):
            self.saturated_steps += 1
        stribeck = (self._fs - self._fc) * (1.0 - np.exp(-(dq / self._vs) ** 2)) * np.sign(dq)
        spring = self._spring * (q - self._spring_rest)
        data.qfrc_applied[self._dof] = clipped - self._fv * dq + stribeck - spring
        self._mj_step(self._mj_model, data)
        acceleration = data.qacc[self._dof].copy()
        if not np.all(np.isfinite(acceleration)) or np.max(np.abs(data.qvel[self._dof])) > DIVERGENCE_LIMIT:
            raise SimulationError(f"simulation diverged at t = {t:.3f} s (joint velocity over "
                                  f"{DIVERGENCE_LIMIT:g} rad/s)")
        if self._monitor is not None:  # the contacts of the state at t (mj_step detects them before integrating)
            self._monitor.observe(data, t)
        self.last_acceleration = acceleration
        self.last_torque = clipped
        self.last_friction = self._friction_torque()
        if self.ft_sensor is not None:  # the sensors of the state at t (mj_step evaluates them before integrating)
            self.last_wrench = data.sensordata[:6].copy()
        effort = self._scale * clipped + self._bias + self._noise * self._rng.standard_normal(len(clipped))
        return JointSample(t, q, dq, effort)

    def _friction_torque(self) -> np.ndarray:
        """The friction-loss torque of each driven joint in the last step (``qfrc_constraint`` without the
        joint equality constraints of mimic followers and the contacts)."""
        import mujoco

        data = self._mj_data
        if self._mj_model.neq == 0 and data.ncon == 0:
            return data.qfrc_constraint[self._dof].copy()
        rows = np.flatnonzero(data.efc_type[:data.nefc] == mujoco.mjtConstraint.mjCNSTR_FRICTION_DOF)
        out = np.zeros(self._mj_model.nv)
        np.add.at(out, data.efc_id[rows], data.efc_force[rows])
        return out[self._dof]

    def truth_parameters(self, friction: tuple[str, ...] = ("viscous", "coulomb", "offset"),
                         armature: bool = True) -> np.ndarray:
        """The true parameter vector in the layout ``model.layout_for(friction, armature)``."""
        return self.truth.parameter_vector(self.model, self.model.layout_for(friction, armature))

    def write_truth_urdf(self, path: str | Path) -> Path:
        """Write the truth URDF that MuJoCo simulates (armature and sensor terms are not in it)."""
        return self.truth.write_urdf(self.model, path)


def simulate_profile(sim: Simulator, t: np.ndarray, q_ref: np.ndarray, dq_ref: np.ndarray, ddq_ref: np.ndarray,
                     progress: bool = True) -> JointStateSeries:
    """Simulate a whole reference (sampled at ``1 / sim.timestep``) from its first state.

    Returns the measured joint states at the reference times ``t`` (a last sample closer than one
    timestep to the previous one, as the exact end of a sampled profile, is dropped). ``info`` holds
    the truth of every sample:
    ``acceleration`` (MuJoCo's ``qacc``, (N, n)), ``torque`` (noise-free actuator torque),
    ``friction`` (MuJoCo's friction-loss torque applied), ``static_friction`` ((N, n) bool: the friction
    was static, not ``-fc sign(q')``), ``sticking`` (the fraction of such samples per joint),
    ``tracking_rms`` (per joint [rad]), ``saturated_steps``, ``timestep``, ``seed``; with contacts on ``contacts``
    (:meth:`~dynid_ros.sim.contacts.ContactReport.summary`: the number of contacts, the pairs, the smallest
    clearance); with a force/torque sensor
    ``wrench`` ((N, 6), noise-free, in the sensor frame ``sim.ft_sensor.name``).
    """
    from tqdm import tqdm

    t = np.asarray(t, dtype=float)
    q_ref, dq_ref, ddq_ref = (np.asarray(a, dtype=float) for a in (q_ref, dq_ref, ddq_ref))
    n = len(sim.joints)
    n_samples = t.shape[0]
    for name, array in (("q_ref", q_ref), ("dq_ref", dq_ref), ("ddq_ref", ddq_ref)):
        if array.shape != (n_samples, n):
            raise SimulationError(f"{name} has shape {array.shape}, expected ({n_samples}, {n}) for joints "
                                  f"{', '.join(sim.joints)}")
    if n_samples < 2:
        raise SimulationError("the reference needs at least two samples")
    if n_samples > 2 and 0 < t[-1] - t[-2] < sim.timestep * (1 - 1e-6):  # the exact end of a profile: drop it
        t, q_ref, dq_ref, ddq_ref = t[:-1], q_ref[:-1], dq_ref[:-1], ddq_ref[:-1]
        n_samples -= 1
    steps = np.diff(t)
    if not np.allclose(steps, sim.timestep, rtol=1e-6, atol=1e-9):
        raise SimulationError(f"the reference is sampled every {np.median(steps):.6g} s; the simulator steps every "
                              f"{sim.timestep:g} s (sample it at {1.0 / sim.timestep:g} Hz)")
    position = np.empty((n_samples, n))
    velocity = np.empty((n_samples, n))
    effort = np.empty((n_samples, n))
    acceleration = np.empty((n_samples, n))
    torque = np.empty((n_samples, n))
    friction = np.empty((n_samples, n))
    wrench = np.zeros((n_samples, 6))
    sim.reset(q_ref[0], dq_ref[0])
    chunk = 1000
    with tqdm(total=n_samples, desc="simulate", unit="step", unit_scale=True, disable=not progress,
              leave=False) as bar:
        for k in range(n_samples):
            sample = sim.step(q_ref[k], dq_ref[k], ddq_ref[k])
            position[k], velocity[k], effort[k] = sample.position, sample.velocity, sample.effort
            acceleration[k], torque[k], friction[k] = sim.last_acceleration, sim.last_torque, sim.last_friction
            wrench[k] = sim.last_wrench
            if k % chunk == chunk - 1:
                bar.update(chunk)
        bar.update(n_samples - bar.n)
    tracking = np.sqrt(np.mean((position - q_ref) ** 2, axis=0))
    sliding = -sim.static_friction * np.sign(velocity)
    static = np.abs(friction - sliding) > 1e-9 * np.maximum(sim.static_friction, 1.0)
    info = {"acceleration": acceleration, "torque": torque, "friction": friction, "static_friction": static,
            "sticking": static.mean(axis=0),
            "tracking_rms": tracking,
            "saturated_steps": sim.saturated_steps, "timestep": sim.timestep, "seed": sim.seed}
    if sim.ft_sensor is not None:
        info["wrench"] = wrench
    if sim.contacts is not None:
        info["contacts"] = sim.contacts.summary()
    return JointStateSeries(list(sim.joints), t.copy(), position, velocity, effort, info)

