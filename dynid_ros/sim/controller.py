"""Joint-space tracking controller of the simulated robot: PD plus nominal-model feedforward.

The feedforward is the inverse dynamics of the NOMINAL model (the URDF before perturbation,
pinocchio RNEA, plus the URDF's damping and friction) at the measured state and the reference
acceleration; the PD acts on the position and velocity errors at torque level, like the joint
impedance controllers of real arms::

    tau = RNEA_nom(q, q', q''_ref) + fv_nom q' + fc_nom sign(q') + Kp (q_ref - q) + Kd (q'_ref - q')
          + fc_ctrl sign(q'_ref)

The truth's different inertials, friction and armature leave a small tracking error, as on a real
robot. ``fc_ctrl`` is the controller's own Coulomb friction compensation (as in the firmware of
real arms; default 0): without it a joint sticks at a velocity reversal until the PD error
overcomes the static friction, and those samples do not follow ``fc sign(q')``. With
``urdf_friction: false`` the nominal ``fv_nom``, ``fc_nom`` terms are left out: a URDF whose
``<dynamics>`` are a simulator's stabilizer (far more friction than the simulated joint has) would
otherwise push the joints along their velocity (positive feedback).

Default gains: ``Kp = effort_limit / STIFF_ERROR`` (the full rated torque at 0.05 rad error;
``DEFAULT_OMEGA^2 M_jj`` without an effort limit) and ``Kd = 2 sqrt(Kp M_jj)`` (critical damping
of the nominal diagonal inertia ``M_jj`` at ``q = 0``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.errors import ConfigError
from dynid_ros.robot.model import RobotModel
from dynid_ros.sim.ground_truth import per_joint_array

STIFF_ERROR = 0.05
"""Position error [rad or m] at which the default PD gives the joint's rated effort."""

DEFAULT_OMEGA = 50.0
"""Closed-loop natural frequency [rad/s] of the default gains of joints without an effort limit."""


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

    def resolve(self, model: RobotModel) -> tuple[np.ndarray, np.ndarray]:
        """Per-joint ``(Kp, Kd)`` for ``model`` (the friction compensation: :meth:`compensation`)."""
        import pinocchio as pin

        n = model.n_dof
        pm = model.pin_model
        inertia = np.diag(pin.crba(pm, pm.createData(), pin.neutral(pm))).copy()
        inertia += np.array(pm.armature)[[pm.joints[j].idx_v for j in model.joint_ids]]
        limits = model.effort_limits
        default_kp = np.where(np.isfinite(limits), limits / STIFF_ERROR, DEFAULT_OMEGA**2 * inertia)
        kp = default_kp if self.kp is None else per_joint_array(self.kp, n, "controller gain kp")
        kd = (2.0 * np.sqrt(kp * inertia) if self.kd is None
              else per_joint_array(self.kd, n, "controller gain kd"))
        return kp, kd

    def compensation(self, n: int) -> np.ndarray:
        """Per-joint Coulomb friction compensation ``fc_ctrl`` [N m]."""
        if self.friction is None:
            return np.zeros(n)
        return per_joint_array(self.friction, n, "controller gain friction")


class TrackingController:
    """PD + feedforward from the nominal model; :meth:`torque` is called once per control step."""

    def __init__(self, model: RobotModel, gains: Gains | None = None) -> None:
        pm = model.pin_model
        self._model = model
        self._pin_model = pm
        self._data = pm.createData()
        gains = gains or Gains()
        self.kp, self.kd = gains.resolve(model)
        self.friction_compensation = gains.compensation(model.n_dof)
        iv = [pm.joints[j].idx_v for j in model.joint_ids]
        keep = 1.0 if gains.urdf_friction else 0.0
        self._fv = keep * np.array(pm.damping)[iv]
        self._fc = keep * np.array(pm.friction)[iv]
        self._plain = pm.nq == model.n_dof

    def torque(self, q: np.ndarray, dq: np.ndarray, q_ref: np.ndarray, dq_ref: np.ndarray,
               ddq_ref: np.ndarray) -> np.ndarray:
        """Joint torques (n,) for measured ``q, dq`` and reference ``q_ref, dq_ref, ddq_ref``."""
        import pinocchio as pin

        config = q if self._plain else self._model.configuration(q)
        tau = pin.rnea(self._pin_model, self._data, config, dq, ddq_ref)
        return (tau + self._fv * dq + self._fc * np.sign(dq) + self.kp * (q_ref - q) + self.kd * (dq_ref - dq)
                + self.friction_compensation * np.sign(dq_ref))
