"""A MuJoCo arm driven through a motor-to-joint coupling, recorded in motor coordinates (the truth for
:mod:`dynid_ros.robot.coupling`).

Each motor is a rotor of its own (a hinge on a massless body at the world origin) with the rotor inertia as
MuJoCo ``armature``, Coulomb friction as ``frictionloss`` and viscous friction applied explicitly (as in
:mod:`dynid_ros.sim.mujoco_model`). Every URDF joint is tied to the rotors by a fixed tendon
``q_j - sum_i C_ji q_mi`` held at zero by a tendon equality constraint (as stiff as the integrator allows),
so MuJoCo, not dynid_ros, computes how the link torques reach the motors. The recorded effort is the
motor torque the controller applies (plus optional noise): ``tau_m = C^T tau_j + Ia q_m'' + fv q_m' + fc
sign(q_m')`` while the motors slide.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.dynamics.regressor import regressor_3d
from dynid_ros.errors import ModelError, SimulationError
from dynid_ros.robot.coupling import MotorCoupling, apply_coupling
from dynid_ros.robot.model import load_model, nominal_parameters, rnea_derivatives
from dynid_ros.robot.mujoco_spec import compile_spec, mujoco_spec
from dynid_ros.sim.mujoco_model import (  # ForceTorqueSite: the sensor of simulate_coupled
    EQUALITY_IMPEDANCE,
    FRICTION_IMPEDANCE,
    GRAVITY,
    ForceTorqueSite,
    add_force_torque_site,
)

ROTOR_INERTIA_FLOOR = 1e-9
"""Principal moments [kg m^2] of the rotor bodies themselves (MuJoCo needs a body inertia); the rotor
inertia is the armature."""


@dataclass
class MotorTruth:
    """Motor-side friction and rotor inertia, one value per motor, and the torque noise std [N m]."""

    damping: np.ndarray
    coulomb: np.ndarray
    rotor_inertia: np.ndarray
    noise: float = 0.0


def coupled_mujoco_model(urdf_text: str, coupling: MotorCoupling, truth: MotorTruth, timestep: float = 1e-3,
                         sensor: ForceTorqueSite | None = None) -> tuple[object, np.ndarray, np.ndarray]:
    """The MuJoCo model of the URDF driven by rotors through ``coupling`` (and the force/torque ``sensor``); returns
    the model and the qpos and dof addresses of the motors (in ``coupling.motors`` order)."""
    import mujoco  # heavy optional dependency (sim extra)

    spec = mujoco_spec(load_model(urdf_text=urdf_text, urdf="the coupled arm's URDF", joints=list(coupling.joints),
                                  quiet=True))
    if sensor is not None:
        add_force_torque_site(spec, sensor)
    for i, motor in enumerate(coupling.motors):
        body = spec.worldbody.add_body(name=f"rotor_{motor}", mass=ROTOR_INERTIA_FLOOR,
                                       inertia=[ROTOR_INERTIA_FLOOR] * 3)
        body.add_joint(name=f"rotor_{motor}", type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0.0, 0.0, 1.0],
                       armature=float(truth.rotor_inertia[i]), frictionloss=float(truth.coulomb[i]))
    for j, joint in enumerate(coupling.joints):
        tendon = spec.add_tendon(name=f"coupling_{joint}")
        tendon.wrap_joint(joint, 1.0)
        for i, motor in enumerate(coupling.motors):
            if coupling.matrix[j, i] != 0.0:
                tendon.wrap_joint(f"rotor_{motor}", -float(coupling.matrix[j, i]))
        equality = spec.add_equality(type=mujoco.mjtEq.mjEQ_TENDON, name1=f"coupling_{joint}")
        equality.data[:5] = 0.0
    try:
        model = compile_spec(spec, "MuJoCo cannot build the coupled arm")
    except ModelError as err:
        raise SimulationError(str(err)) from err
    ids = [model.joint(f"rotor_{m}").id for m in coupling.motors]
    model.opt.timestep = float(timestep)
    model.opt.gravity[:] = GRAVITY
    model.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    model.dof_damping[:] = 0.0
    model.dof_solref[:] = (2.0 * timestep, 1.0)
    model.dof_solimp[:] = FRICTION_IMPEDANCE
    model.eq_solref[:] = (2.0 * timestep, 1.0)
    model.eq_solimp[:] = EQUALITY_IMPEDANCE
    return model, np.array([model.jnt_qposadr[i] for i in ids]), np.array([model.jnt_dofadr[i] for i in ids])


def simulate_coupled(urdf_text: str, coupling: MotorCoupling, truth: MotorTruth, t: np.ndarray, q_ref: np.ndarray,
                     dq_ref: np.ndarray, ddq_ref: np.ndarray, seed: int = 0, bandwidth: float = 30.0,
                     sensor: ForceTorqueSite | None = None) -> JointStateSeries:
    """Track the motor reference (N, n) at the times ``t`` (uniform, the timestep) with inverse-dynamics
    feedforward of the URDF model plus PD (``bandwidth`` [rad/s], critically damped on the diagonal of the
    motor-side mass matrix at the start); returns the motor-coordinate joint states, with ``sensor`` the wrench
    it measured at every sample in ``info["wrench"]`` (N, 6) (noise-free, after the step's constraint forces)."""
    import mujoco  # heavy optional dependency (sim extra)

    dt = float(t[1] - t[0])
    mj, qadr, dadr = coupled_mujoco_model(urdf_text, coupling, truth, dt, sensor)
    model = apply_coupling(load_model(urdf_text=urdf_text, joints=list(coupling.joints)), coupling)
    layout = model.layout_for((), armature=True)
    nominal = nominal_parameters(model, layout)
    nominal[layout.indices("Ia")] = truth.rotor_inertia
    feedforward = np.einsum("njp,p->nj", regressor_3d(model, layout, q_ref, dq_ref, ddq_ref), nominal)
    pm = model.expanded
    inertia = np.diag(rnea_derivatives(model, pm, pm.createData(), q_ref[0], dq_ref[0] * 0, ddq_ref[0] * 0)[2])
    inertia = inertia + truth.rotor_inertia
    kp, kd = bandwidth ** 2 * inertia, 2.0 * bandwidth * inertia
    data = mujoco.MjData(mj)
    body_q = model.body_motion(q_ref[:1], dq_ref[:1], ddq_ref[:1])
    data.qpos[:] = 0.0
    data.qpos[qadr] = q_ref[0]
    data.qvel[dadr] = dq_ref[0]
    _set_joints(mj, data, model, body_q[0][0], body_q[1][0])
    rng = np.random.default_rng(seed)
    n = len(t)
    position, velocity, effort = (np.zeros((n, len(qadr))) for _ in range(3))
    wrench = np.zeros((n, 6))
    for k in range(n):
        q, dq = data.qpos[qadr].copy(), data.qvel[dadr].copy()
        tau = feedforward[k] + kp * (q_ref[k] - q) + kd * (dq_ref[k] - dq)
        data.qfrc_applied[:] = 0.0
        data.qfrc_applied[dadr] = tau - truth.damping * dq
        position[k], velocity[k], effort[k] = q, dq, tau
        mujoco.mj_step(mj, data)
        if sensor is not None:  # the sensors of the state at step k (mj_step evaluates them before integrating)
            wrench[k] = data.sensordata[:6]
        if not np.all(np.isfinite(data.qvel)) or np.max(np.abs(data.qvel)) > 1e3:
            raise SimulationError(f"the coupled simulation diverged at t = {t[k]:.3f} s")
    effort = effort + rng.normal(0.0, truth.noise, effort.shape) if truth.noise > 0 else effort
    info = {"wrench": wrench} if sensor is not None else {}
    return JointStateSeries(list(coupling.motors), np.asarray(t, dtype=float), position, velocity, effort, info)


def _set_joints(mj: object, data: object, model: object, q_body: np.ndarray, dq_body: np.ndarray) -> None:
    """Start the URDF joints where the coupling puts them (the equality constraints then hold at once)."""
    names = [model.expanded.names[b] for b in range(1, model.expanded.njoints)]
    for b, name in enumerate(names):
        joint = mj.joint(name)
        data.qpos[mj.jnt_qposadr[joint.id]] = q_body[b]
        data.qvel[mj.jnt_dofadr[joint.id]] = dq_body[b]
