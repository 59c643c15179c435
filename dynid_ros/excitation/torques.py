"""Joint torques of the nominal model along a trajectory, for optional torque limits."""

from __future__ import annotations

import numpy as np

from dynid_ros.dynamics.regressor import torques
from dynid_ros.robot.model import RobotModel, nominal_parameters, rnea_derivatives


def nominal_torques(model: RobotModel, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    """(N, n) torques of the description's parameters: rigid body, damping, friction, armature."""
    layout = model.layout_for(("viscous", "coulomb"), armature=True)
    return torques(model, layout, nominal_parameters(model, layout), q, dq, ddq)


def nominal_torque_jacobians(model: RobotModel, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Derivatives of :func:`nominal_torques` by q, q', q'' per sample: three (N, n, n) arrays.

    Pinocchio's RNEA derivatives (its RNEA includes armature), plus viscous damping; Coulomb
    friction is piecewise constant and has no derivative.
    """
    pm = model.expanded if model.expanded is not None else model.pin_model
    data = pm.createData()
    out = np.zeros((3, len(q), model.n_dof, model.n_dof))
    damping = np.array(model.pin_model.damping)
    for s in range(len(q)):
        out[0, s], out[1, s], out[2, s] = rnea_derivatives(model, pm, data, q[s], dq[s], ddq[s])
        out[1, s] += np.diag(damping)
    return out[0], out[1], out[2]
