"""Joint-space tracking controller of the simulated robot: PD plus nominal-model feedforward.

Computed torque with the NOMINAL model (the URDF before perturbation, pinocchio RNEA)::

    tau = RNEA_nom(q, q', q''_ref + Kp (q_ref - q) + Kd (q'_ref - q')) + fv_nom q' + fc_nom sign(q')

With a perfect model this gives the error dynamics ``e'' + Kd e' + Kp e = 0``; the truth's
different inertials, friction and armature leave a small tracking error, as on a real robot. Gains
are acceleration-level: ``Kp = omega^2``, ``Kd = 2 zeta omega`` per joint.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.errors import ConfigError
from dynid_ros.model import RobotModel


@dataclass(frozen=True)
class Gains:
    """Closed-loop natural frequency ``omega`` [rad/s] and damping ratio ``zeta`` (scalars or per joint)."""

    omega: float | tuple[float, ...] = 50.0
    zeta: float | tuple[float, ...] = 1.0

    def __post_init__(self) -> None:
        if np.any(np.asarray(self.omega, dtype=float) <= 0) or np.any(np.asarray(self.zeta, dtype=float) <= 0):
            raise ConfigError(f"controller gains must be > 0, got omega={self.omega!r}, zeta={self.zeta!r}")

    @classmethod
    def from_config(cls, mapping: dict | None) -> Gains:
        """From the ``controller:`` mapping of the ``simulation:`` section (keys ``omega``, ``zeta``)."""
        mapping = dict(mapping or {})
        unknown = sorted(set(mapping) - {"omega", "zeta"})
        if unknown:
            raise ConfigError(f"simulation.controller: unknown key(s) {unknown}; use omega, zeta")
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in mapping.items()}
        return cls(**values)

    def kp_kd(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Per-joint ``(Kp [1/s^2], Kd [1/s])``."""
        omega = np.broadcast_to(np.asarray(self.omega, dtype=float), (n,))
        zeta = np.broadcast_to(np.asarray(self.zeta, dtype=float), (n,))
        return omega**2, 2.0 * zeta * omega


class ComputedTorqueController:
    """PD + feedforward from the nominal model; :meth:`torque` is called once per control step."""

    def __init__(self, model: RobotModel, gains: Gains | None = None) -> None:
        pm = model.pin_model
        self._model = model
        self._pin_model = pm
        self._data = pm.createData()
        self._kp, self._kd = (gains or Gains()).kp_kd(model.n_dof)
        iv = [pm.joints[j + 1].idx_v for j in range(model.n_dof)]
        self._fv = np.array(pm.damping)[iv]
        self._fc = np.array(pm.friction)[iv]
        self._plain = pm.nq == model.n_dof

    def torque(self, q: np.ndarray, dq: np.ndarray, q_ref: np.ndarray, dq_ref: np.ndarray,
               ddq_ref: np.ndarray) -> np.ndarray:
        """Joint torques (n,) for measured ``q, dq`` and reference ``q_ref, dq_ref, ddq_ref``."""
        import pinocchio as pin

        command = ddq_ref + self._kp * (q_ref - q) + self._kd * (dq_ref - dq)
        config = q if self._plain else self._model.configuration(q)
        tau = pin.rnea(self._pin_model, self._data, config, dq, command)
        return tau + self._fv * dq + self._fc * np.sign(dq)
