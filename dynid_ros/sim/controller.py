"""Joint-space tracking controller of the simulated robot: nominal-model inverse dynamics plus PD.

The feedforward is the inverse dynamics of the NOMINAL model (the URDF before perturbation, pinocchio RNEA, plus
the URDF's damping and friction) along the REFERENCE, as the joint controllers of real arms compute it from the
trajectory they are given (a computed-torque feedforward: KUKA's, Franka's and the impedance controllers of
ros2_controllers take the model along the desired motion); the PD acts on the position and velocity errors at
torque level::

    tau = RNEA_nom(q_ref, q'_ref, q''_ref) + fv_nom q' + fc_nom sign(q'_ref)
          + Kp (q_ref - q) + Kd (q'_ref - q') + fc_ctrl sign(q'_ref)

The URDF's viscous friction is compensated at the MEASURED velocity: the simulator applies the truth's viscous
friction explicitly (:mod:`dynid_ros.sim.mujoco_model`), and a URDF's damping is often a Gazebo stabilizer
(10 N m s/rad on an iiwa wrist of 3e-4 kg m^2, a time constant of 30 us); compensated at the reference velocity it
would act uncompensated on every velocity error, beyond what a 1 kHz explicit step can integrate. Its Coulomb
friction is compensated in the direction of the REFERENCE velocity, as a drive pushes the way it is told to move:
at the measured one a joint that sticks (velocity 0) gets no compensation and a light joint with much friction
(xArm7's wrist: 1 N m on 1.4e-4 kg m^2) stays stuck.
The controller's model is the nominal URDF plus the rotor inertia of each drive (``drive_inertia``, the
simulator passes the truth's armature): a real arm's joint controller knows its own motors and gears (the rotor
inertia times the gear ratio squared is on the drive's data sheet, and the vendors' controllers feed it forward),
while the link inertials, payload and friction are what the identification finds. Without it, a UR5e wrist whose
rotor inertia (0.04 kg m^2, config/ur5e.yaml) is 40 times its link's, tracked with gains for the link alone,
lags 9.6 mrad rms (measured on the shipped config).
The truth's different inertials and friction leave a small tracking error, as on a real robot.
``fc_ctrl`` is the controller's own Coulomb friction compensation (as in the firmware of real arms; default 0):
without it a joint sticks at a velocity reversal until the PD error overcomes the static friction, and those samples
do not follow ``fc sign(q')``. With ``urdf_friction: false`` the nominal ``fv_nom``, ``fc_nom`` terms are left
out (a URDF whose ``<dynamics>`` are a simulator's stabilizer, far more friction than the simulated joint has).

Default gains, for any robot: every direction of the arm a critically damped second-order loop of the closed-loop
bandwidth ``omega``: the PD torque is ``M(q_ref) (omega^2 (q_ref - q) + 2 omega (q'_ref - q'))`` with the nominal
joint-space inertia (plus the drives' rotor inertia) along the reference, a computed-torque controller
(Khalil & Dombre, ch. 14).
The same dynamics whatever the arm's size, mass or effort limits: a gain from an effort limit, as before, made a
light wrist of 1e-4 kg m^2 a 3 kHz loop that a 1 kHz simulation cannot integrate, and a gain per joint from the
diagonal of ``M`` (``Kp_j = omega^2 M_jj(q_start)``, what :meth:`Gains.resolve` reports) drives the direction
of two aligned axes (xArm7's joints 1 and 3 near joint 2 = 0), whose inertia is far below either diagonal entry,
unstable. Given ``kp``/``kd`` are a PD per joint.

``omega`` is as high as the control rate integrates with a margin: ``omega = STABLE_FRACTION / dt``
(:data:`STABLE_FRACTION`; 300 rad/s, 48 Hz, at 1 kHz). A real drive's joint is stiff against what its model does
not know (friction, the payload) because its current and velocity loops run at several kHz; the simulation has one
torque loop at the control rate, which stands for them, so it is as stiff as that loop can be. The stiffness
``omega^2 M`` is what holds a joint against the friction the controller does not know: at a fixed ``omega`` it is
small on a light joint (a wrist of 0.015 kg m^2 at 15 Hz: 133 N m/rad), where the joint then lags several mrad and
sticks longer at each velocity reversal, samples the identification's ``fc sign(q')`` cannot explain (measured on
test/variants/test_gains.py's arm: 15 Hz loop, wrist lag 3.0 mrad rms and the torque predicted 3.7 % off; this
loop, 0.30 mrad and 1.7 %). The limit: the discrete loop (semi-implicit Euler, the torque held over the step) of a
critically damped joint is unstable from ``omega dt = 2 (sqrt 2 - 1) = 0.83``; 0.3 keeps a factor 2.8 in
frequency (7.6 in inertia) for a truth lighter than the controller's model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.errors import ConfigError
from dynid_ros.robot.model import RobotModel
from dynid_ros.sim.ground_truth import per_joint_array

STABLE_FRACTION = 0.3
"""The default gains' ``omega dt`` [rad]: ``omega`` [rad/s] at a control period ``dt`` [s] (module docstring)."""


@dataclass(frozen=True)
class Gains:
    """PD gains at torque level: ``kp`` [N m/rad], ``kd`` [N m s/rad], and the Coulomb friction
    compensation ``friction`` [N m]; one value or one per joint; None: the module docstring's default.
    ``urdf_friction``: the feedforward includes the URDF's ``<dynamics damping friction>``."""

    kp: float | tuple[float, ...] | None = None
    kd: float | tuple[float, ...] | None = None
    friction: float | tuple[float, ...] | None = None
    urdf_friction: bool = True

    def __post_init__(self) -> None:
        for name in ("kp", "kd"):
            value = getattr(self, name)
            if value is not None and np.any(~(np.asarray(value, dtype=float) > 0)):
                raise ConfigError(f"controller gain {name} must be > 0, got {value!r}")
        if self.friction is not None and np.any(~(np.asarray(self.friction, dtype=float) >= 0)):
            raise ConfigError(f"controller friction must be >= 0, got {self.friction!r}")

    @classmethod
    def from_config(cls, mapping: dict | None) -> Gains:
        """From the ``controller:`` mapping of the ``simulation:`` section (keys ``kp``, ``kd``, ``friction``,
        ``urdf_friction``)."""
        mapping = dict(mapping or {})
        unknown = sorted(set(mapping) - {"kp", "kd", "friction", "urdf_friction"})
        if unknown:
            raise ConfigError(f"simulation.controller: unknown key(s) {unknown}; use kp, kd, friction, urdf_friction")
        urdf_friction = mapping.pop("urdf_friction", True)
        if not isinstance(urdf_friction, bool):
            raise ConfigError(f"simulation.controller.urdf_friction must be true or false, got {urdf_friction!r}")
        try:
            values = {k: (tuple(float(x) for x in v) if isinstance(v, (list, tuple)) else float(v))
                      for k, v in mapping.items() if v is not None}
        except (TypeError, ValueError) as err:
            raise ConfigError(f"simulation.controller: gains must be numbers: {mapping}") from err
        return cls(**values, urdf_friction=urdf_friction)

    def resolve(self, inertia: np.ndarray, timestep: float = 1e-3) -> tuple[np.ndarray, np.ndarray]:
        """Per-joint ``(Kp, Kd)`` for joints of ``inertia`` (each joint's own, :meth:`TrackingController.
        joint_inertia`) at a control period ``timestep`` (module docstring; the friction compensation:
        :meth:`compensation`)."""
        inertia = np.asarray(inertia, dtype=float)
        n = len(inertia)
        omega = bandwidth(timestep)
        kp = omega**2 * inertia if self.kp is None else per_joint_array(self.kp, n, "controller gain kp")
        kd = (2.0 * np.sqrt(kp * inertia) if self.kd is None
              else per_joint_array(self.kd, n, "controller gain kd"))
        return kp, kd

    def compensation(self, n: int) -> np.ndarray:
        """Per-joint Coulomb friction compensation ``fc_ctrl`` [N m]."""
        if self.friction is None:
            return np.zeros(n)
        return per_joint_array(self.friction, n, "controller gain friction")


def bandwidth(timestep: float) -> float:
    """The default gains' closed-loop bandwidth [rad/s] at a control period ``timestep`` [s] (module docstring)."""
    return STABLE_FRACTION / float(timestep)


class TrackingController:
    """Feedforward from the nominal model along the reference plus PD; :meth:`torque` is called once per control
    step, :meth:`tune` at the pose the robot starts from."""

    def __init__(self, model: RobotModel, gains: Gains | None = None, timestep: float = 1e-3,
                 drive_inertia: np.ndarray | None = None) -> None:
        pm = model.pin_model.copy()  # the controller's own model: the URDF plus the drives' rotor inertia
        iv = [pm.joints[j].idx_v for j in model.joint_ids]
        if drive_inertia is not None:
            armature = np.array(pm.armature, dtype=float)
            armature[iv] = np.broadcast_to(np.asarray(drive_inertia, dtype=float), (len(iv),))
            pm.armature = armature
        self._model = model
        self._urdf_model, self._urdf_data = model.pin_model, model.pin_model.createData()
        self._pin_model = pm
        self._data = pm.createData()
        self._gains = gains or Gains()
        self._timestep = float(timestep)
        self.friction_compensation = self._gains.compensation(model.n_dof)
        self._iv = iv
        keep = 1.0 if self._gains.urdf_friction else 0.0
        self._fv = keep * np.array(pm.damping)[iv]
        self._fc = keep * np.array(pm.friction)[iv]
        self._plain = pm.nq == model.n_dof
        default = self._gains.kp is None and self._gains.kd is None
        self._omega = bandwidth(self._timestep) if default else None
        # pinocchio 4.1's CRBA adds a mimic follower's coupling onto what the previous call left in its Data (the
        # off-diagonal entry grows by it at every call: measured on test_mimic's middle follower, 0.040 -> 0.077 ->
        # 0.113 ...): a model with followers gets a fresh Data for each CRBA
        self._fresh_data = bool(model.followers)
        self.tune(np.zeros(model.n_dof))

    def tune(self, q_start: np.ndarray) -> None:
        """Derive the default gains from the inertia at ``q_start`` (given gains stay as they are)."""
        self.kp, self.kd = self._gains.resolve(self.joint_inertia(q_start), self._timestep)

    def mass_matrix(self, config: np.ndarray) -> np.ndarray:
        """The controller's joint-space inertia ``M`` (n, n) of the driven joints at the pinocchio configuration
        ``config`` (the nominal links plus the drives' rotor inertia; pinocchio's CRBA adds the model's armature)."""
        import pinocchio as pin

        data = self._pin_model.createData() if self._fresh_data else self._data
        inertia = pin.crba(self._pin_model, data, config)  # upper triangle
        inertia = np.triu(inertia) + np.triu(inertia, 1).T
        return inertia[np.ix_(self._iv, self._iv)]

    def joint_inertia(self, q: np.ndarray) -> np.ndarray:
        """Each joint's own inertia at ``q`` [kg m^2 or kg]: the diagonal of the controller's ``M(q)`` (the nominal
        links plus the drives' rotor inertia; pinocchio's CRBA adds the model's armature)."""
        q = np.asarray(q, dtype=float)
        config = q if self._plain else self._model.configuration(q)
        inertia = np.diag(self.mass_matrix(config)).copy()
        floor = 1e-9 * max(float(inertia.max()), 1e-9)  # a massless joint still gets a (tiny) loop
        return np.maximum(inertia, floor)

    def torque(self, q: np.ndarray, dq: np.ndarray, q_ref: np.ndarray, dq_ref: np.ndarray,
               ddq_ref: np.ndarray) -> np.ndarray:
        """Joint torques (n,) for measured ``q, dq`` and reference ``q_ref, dq_ref, ddq_ref``."""
        import pinocchio as pin

        error, rate = q_ref - q, dq_ref - dq
        if self._omega is None:  # given gains: the PD per joint, feedforward at the measured state
            config = q if self._plain else self._model.configuration(q)
            tau = pin.rnea(self._urdf_model, self._urdf_data, config, dq, ddq_ref)  # the URDF's (no rotor inertia)
            return (tau + self._fv * dq + self._fc * np.sign(dq) + self.kp * error + self.kd * rate
                    + self.friction_compensation * np.sign(dq_ref))
        # the default: along the reference, every direction of the arm one critically damped loop at omega,
        # M(q_ref) (ddq_ref + u) + C(q_ref, dq_ref) dq_ref + g(q_ref) in one RNEA (linear in the acceleration, rotor
        # inertia included: the inverse dynamics control of Siciliano et al. 2009 §8.5.2, without building M by CRBA)
        config = q_ref if self._plain else self._model.configuration(q_ref)
        outer = self._omega**2 * error + 2.0 * self._omega * rate
        tau = pin.rnea(self._pin_model, self._data, config, dq_ref, ddq_ref + outer)
        return (tau + self._fv * dq + self._fc * np.sign(dq_ref) + self.friction_compensation * np.sign(dq_ref))
