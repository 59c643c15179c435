"""The nominal model's torques along a trajectory (for torque limits) and their derivatives: against pinocchio's
RNEA with the description's damping and friction, and against finite differences."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from dynid_ros.excitation.torques import nominal_torque_jacobians, nominal_torques
from dynid_ros.robot.model import load_model

from support.arm_runs import ARM


def _arm(tmp_path):
    """The three-joint arm with damping and friction in its description (URDF has no armature: zero)."""
    text = ARM
    for k, (damping, friction) in enumerate(((0.3, 0.5), (0.2, 0.4), (0.1, 0.2)), 1):
        text = text.replace(f'<joint name="j{k}" type="revolute">',
                            f'<joint name="j{k}" type="revolute"><dynamics damping="{damping}" friction="{friction}"/>')
    path = tmp_path / "arm.urdf"
    path.write_text(text)
    return path


def _motion(n: int = 25, seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-2, 2, (n, 3)), rng.uniform(-1, 1, (n, 3)), rng.uniform(-3, 3, (n, 3))


def test_nominal_torques_are_rnea_plus_damping_and_friction(tmp_path):
    path = _arm(tmp_path)
    model = load_model(urdf=path)
    pm = pin.buildModelFromUrdf(str(path))
    data = pm.createData()
    q, dq, ddq = _motion()
    expected = np.array([pin.rnea(pm, data, *x) for x in zip(q, dq, ddq, strict=True)])
    expected += np.array([0.3, 0.2, 0.1]) * dq + np.array([0.5, 0.4, 0.2]) * np.sign(dq)
    np.testing.assert_allclose(nominal_torques(model, q, dq, ddq), expected, rtol=1e-10, atol=1e-10)


def test_the_derivatives_match_finite_differences_away_from_zero_velocity(tmp_path):
    model = load_model(urdf=_arm(tmp_path))
    q, dq, ddq = _motion(4, seed=1)
    dq = np.where(np.abs(dq) < 0.2, 0.5, dq)  # Coulomb friction is a step at zero velocity
    d_q, d_dq, d_ddq = nominal_torque_jacobians(model, q, dq, ddq)
    h = 1e-6
    for s in range(4):
        for which, analytic in ((0, d_q), (1, d_dq), (2, d_ddq)):
            for j in range(3):
                args = [q[s:s + 1].copy(), dq[s:s + 1].copy(), ddq[s:s + 1].copy()]
                plus, minus = [a.copy() for a in args], [a.copy() for a in args]
                plus[which][0, j] += h
                minus[which][0, j] -= h
                numeric = (nominal_torques(model, *plus) - nominal_torques(model, *minus))[0] / (2 * h)
                np.testing.assert_allclose(analytic[s][:, j], numeric, rtol=1e-5, atol=1e-6)
