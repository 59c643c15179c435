"""A MuJoCo model of the truth URDF whose joint torques are exactly known.

MuJoCo is an independent physics engine: it computes ``M(q)``, ``c(q, q')`` and ``g(q)`` from the
URDF with its own algorithms, so identifying its motion with dynid_ros's pinocchio-based regressor
is an honest test.

Choices (each keeps ``effort = inverse dynamics of the truth`` exact, up to the sensor terms):

- **Friction is applied by the simulator, not by MuJoCo.** MuJoCo's ``frictionloss`` is a soft
  constraint that is not ``fc sign(q')`` near zero velocity, and its ``damping`` is integrated
  implicitly by the Euler integrator (the reported ``qacc`` would not be the one integrated). So
  ``dof_damping`` and ``dof_frictionloss`` are zero and :mod:`dynid_ros.sim.simulator` adds
  ``-fv q' - fc sign(q')`` to ``qfrc_applied``, evaluated at the state of the step.
- **Armature** is MuJoCo's ``dof_armature`` (added to the diagonal of ``M``: exactly ``Ia q''``).
- **Integrator:** semi-implicit Euler (``mjINT_EULER``), fully explicit without damping:
  ``q'_{k+1} = q'_k + h q''_k``, ``q_{k+1} = q_k + h q'_{k+1}``. ``q''_k`` is computed at
  ``(q_k, q'_k)`` with the torque of step ``k``, so every recorded sample satisfies the equation
  of motion exactly. RK4 would evaluate the (discontinuous) friction at intermediate states.
- Joint limits, contacts and collisions are disabled: their constraint forces are not part of the
  identified model (the excitation trajectory respects the limits itself).
- Timestep 1 ms by default; gravity ``[0, 0, -9.81]``.
"""

from __future__ import annotations

import numpy as np

from dynid_ros.errors import SimulationError

GRAVITY = (0.0, 0.0, -9.81)


def build_mujoco_model(urdf_text: str, joints: tuple[str, ...], armature: np.ndarray,
                       timestep: float = 1e-3) -> tuple[object, np.ndarray, np.ndarray]:
    """Compile ``urdf_text`` into a MuJoCo model for the simulator.

    Returns ``(mj_model, qpos_index, dof_index)``: the model and, for each of ``joints`` in order,
    its address in ``qpos`` and in ``qvel``.
    """
    import mujoco

    if not timestep > 0:
        raise SimulationError(f"timestep must be > 0, got {timestep}")
    try:
        model = mujoco.MjModel.from_xml_string(urdf_text)
    except ValueError as err:
        raise SimulationError(f"MuJoCo cannot load the truth URDF: {str(err).strip().splitlines()[-1]}") from err
    names = [model.joint(i).name for i in range(model.njnt)]
    missing = [j for j in joints if j not in names]
    if missing:
        raise SimulationError(f"joint(s) {missing} not in the MuJoCo model (has {', '.join(names)})")
    extra = [j for j in names if j not in joints]
    if extra:
        raise SimulationError(f"MuJoCo model has joints {extra} that the simulator does not drive")
    ids = [model.joint(j).id for j in joints]
    qpos_index = np.array([model.jnt_qposadr[i] for i in ids], dtype=int)
    dof_index = np.array([model.jnt_dofadr[i] for i in ids], dtype=int)
    model.opt.timestep = float(timestep)
    model.opt.gravity[:] = GRAVITY
    model.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    model.opt.disableflags |= (mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
                               | mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS)
    model.dof_damping[:] = 0.0
    model.dof_frictionloss[:] = 0.0
    model.dof_armature[:] = 0.0
    model.dof_armature[dof_index] = np.asarray(armature, dtype=float)
    model.jnt_stiffness[:] = 0.0
    return model, qpos_index, dof_index
