"""A MuJoCo model of the truth URDF whose joint torques are exactly known.

MuJoCo is an independent physics engine: it computes ``M(q)``, ``c(q, q')`` and ``g(q)`` from the
URDF with its own algorithms, so identifying its motion with dynid_ros's pinocchio-based regressor
is an honest test.

Choices:

- **Viscous friction is applied by the simulator**, as ``-fv q'`` in ``qfrc_applied`` at the state
  of the step, not as MuJoCo ``damping``: the Euler integrator treats damping implicitly, so the
  reported ``qacc`` would not be the acceleration that was integrated.
- **Coulomb friction is MuJoCo's ``frictionloss``** with a stiff constraint (``solref`` time
  constant ``2 h``, impedance 0.99-0.999). While a joint slides the friction torque is exactly
  ``-fc sign(q')``; while it sticks (velocity reversals the controller cannot push through) it is
  the static torque in ``[-fc, fc]`` that holds the joint, with no chattering. Applying
  ``-fc sign(q')`` explicitly instead makes the joints chatter at every reversal (hundreds of
  velocity sign changes in 20 s on the Panda wrist) and a smooth ``tanh`` is wrong at every low
  velocity. The applied friction torque is ``qfrc_constraint`` (contacts and limits are disabled),
  recorded by the simulator, so it is exactly known.
- **Armature** is MuJoCo's ``dof_armature`` (added to the diagonal of ``M``: exactly ``Ia q''``).
- **Integrator:** semi-implicit Euler (``mjINT_EULER``), explicit without damping:
  ``q'_{k+1} = q'_k + h q''_k``, ``q_{k+1} = q_k + h q'_{k+1}``, with ``q''_k`` computed at
  ``(q_k, q'_k)`` under the torque of step ``k``: every recorded sample satisfies the equation of
  motion to round-off. RK4 would evaluate the (discontinuous) friction at intermediate states.
- **The model** is the one conversion of :mod:`dynid_ros.robot.mujoco_spec`: the truth URDF as dynid_ros reads it
  (one body per moving joint with the composite inertia of everything fixed to it, no geometry), so MuJoCo simulates
  the robot that is identified, whatever the published file holds (meshes anywhere or nowhere, repeated elements,
  ``<gazebo>`` or ``<mujoco>`` extensions, fixed links with odd inertias). A link without ``<inertial>`` is massless
  as in pinocchio.
- **Locked joints** (not driven: a gripper) are fixed at their locked position, as in the reduced pinocchio model.
  A follower of a driven joint (``<mimic>``) moves with its leader by MuJoCo's joint equality constraint, as stiff
  as the integrator allows (``solref`` time constant ``2 h``, impedance 0.9999); the leader's recorded torque then
  matches the coupled model ``tau_leader + multiplier * tau_follower`` to about 1e-5 of its range (the constraint is
  soft, so not to round-off).
- Joint limits are disabled: their constraint forces are not part of the identified model (the excitation
  trajectory respects the limits itself). Contacts are on when the simulator is given the robot's collision model
  (its convex geometry, its workcell and the pairs it checks, :mod:`dynid_ros.robot.mujoco_spec`): a motion that
  hits the robot's own links or its table is seen (:mod:`dynid_ros.sim.contacts`) and pushed back as a real arm
  is; without one they are disabled.
- Timestep 1 ms by default; gravity ``[0, 0, -9.81]``.
- **Force/torque sensor** (optional, :class:`ForceTorqueSite`): a site on a moving link with MuJoCo ``force`` and
  ``torque`` sensors: the wrench the link's parent applies to the link and everything fixed to it, about the site,
  in the site's axes (``sensordata[:6]``, evaluated by ``mj_step`` at the state before it integrates). A URDF frame
  (e.g. a flange fixed to the last link) names the site: :func:`sensor_site` finds its moving link and placement
  (MuJoCo fuses the links of fixed joints into their parent).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from dynid_ros.errors import ModelError, SimulationError
from dynid_ros.robot.collision_model import CollisionModel
from dynid_ros.robot.mjcf_writer import FRICTION_IMPEDANCE
from dynid_ros.robot.model import RobotModel
from dynid_ros.robot.mujoco_spec import compile_spec, mujoco_spec
from dynid_ros.robot.urdf_document import read_urdf

GRAVITY = (0.0, 0.0, -9.81)



@dataclass(frozen=True)
class ForceTorqueSite:
    """A 6-axis force/torque sensor on the body of ``link`` at ``position`` with the orientation ``quaternion``
    (w, x, y, z) in the link's frame: it measures the wrench the link's parent applies to the link and everything
    fixed to it, about the site, in its axes. ``name``: the frame_id its wrenches carry."""

    link: str
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    quaternion: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
    name: str = "ft_sensor"


def sensor_site(model: RobotModel, urdf_text: str, frame: str) -> ForceTorqueSite:
    """The site of a force/torque sensor at the URDF frame ``frame`` (a link, e.g. a flange fixed to the last
    link): on the moving link it is fixed to, at its placement there."""
    pm = model.pin_model
    if not pm.existFrame(frame):
        raise SimulationError(f"force/torque sensor frame {frame!r} is not a frame of the robot")
    f = pm.frames[pm.getFrameId(frame)]
    if f.parentJoint == 0:
        raise SimulationError(f"force/torque sensor frame {frame!r} does not move (it is fixed to the base)")
    joint = pm.names[f.parentJoint]
    try:
        link = read_urdf(urdf_text, "the truth URDF").child_link(joint)
    except ModelError as err:
        raise SimulationError(str(err)) from err
    if link is None:
        raise SimulationError(f"force/torque sensor frame {frame!r}: no URDF joint {joint!r}")
    quaternion = pin.Quaternion(f.placement.rotation)
    return ForceTorqueSite(link, tuple(float(v) for v in f.placement.translation),
                           (quaternion.w, quaternion.x, quaternion.y, quaternion.z), frame)


def add_force_torque_site(spec: object, sensor: ForceTorqueSite) -> None:
    """Add the sensor's site and its ``force`` and ``torque`` sensors (the first six values of ``sensordata``) to
    a ``mujoco.MjSpec``."""
    import mujoco  # heavy optional dependency (sim extra)

    body = spec.body(sensor.link)
    if body is None:
        raise SimulationError(f"force/torque sensor: no body {sensor.link} in the MuJoCo model")
    body.add_site(name="ft_site", pos=list(sensor.position), quat=list(sensor.quaternion))
    for kind in (mujoco.mjtSensor.mjSENS_FORCE, mujoco.mjtSensor.mjSENS_TORQUE):
        spec.add_sensor(type=kind, objtype=mujoco.mjtObj.mjOBJ_SITE, objname="ft_site")


EQUALITY_IMPEDANCE = (0.9999, 0.9999, 0.001, 0.5, 2.0)
"""``solimp`` of the joint equality constraints of mimic followers: as hard as MuJoCo allows."""


def build_mujoco_model(truth: RobotModel, coulomb: np.ndarray, armature: np.ndarray, timestep: float = 1e-3,
                       sensor: ForceTorqueSite | None = None, *, collision: CollisionModel | None = None,
                       watch_m: float = 0.0) -> tuple[object, np.ndarray, np.ndarray]:
    """Compile the model of the truth URDF (``truth``: loaded with the simulated joints driven and the others locked
    where they are held) into a MuJoCo model for the simulator.

    ``coulomb`` (``fc``) and ``armature`` (``Ia``) are per joint of ``truth``; ``sensor``: a force/torque site (module
    docstring); ``collision``: the robot's collision model (contacts on, its pairs reported from ``watch_m``
    apart), None: contacts off. Returns ``(mj_model, qpos_index, dof_index)``: the model and, for each of
    ``truth.joints`` in order, its address in ``qpos`` and ``qvel``.
    """
    import mujoco  # deferred: MuJoCo loads only where a simulation runs

    if not timestep > 0:
        raise SimulationError(f"timestep must be > 0, got {timestep}")
    joints = truth.joints
    spec = mujoco_spec(truth, collision=collision, watch_m=watch_m)
    if sensor is not None:
        add_force_torque_site(spec, sensor)
    try:
        model = compile_spec(spec, "MuJoCo cannot load the truth URDF")
    except ModelError as err:
        raise SimulationError(str(err)) from err
    names = [model.joint(i).name for i in range(model.njnt)]
    missing = [j for j in joints if j not in names]
    if missing:
        raise SimulationError(f"joint(s) {missing} not in the MuJoCo model (has {', '.join(names)})")
    followers = {model.joint(int(model.eq_obj1id[e])).name for e in range(model.neq)
                 if model.eq_type[e] == mujoco.mjtEq.mjEQ_JOINT and model.eq_obj2id[e] >= 0}
    extra = [j for j in names if j not in joints and j not in followers]
    if extra:
        raise SimulationError(f"MuJoCo model has joints {extra} that the simulator does not drive")
    ids = [model.joint(j).id for j in joints]
    qpos_index = np.array([model.jnt_qposadr[i] for i in ids], dtype=int)
    dof_index = np.array([model.jnt_dofadr[i] for i in ids], dtype=int)
    model.opt.timestep = float(timestep)
    model.opt.gravity[:] = GRAVITY
    model.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_LIMIT
    if collision is None:
        model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    model.dof_damping[:] = 0.0
    model.dof_frictionloss[:] = 0.0
    model.dof_frictionloss[dof_index] = np.asarray(coulomb, dtype=float)
    model.dof_solref[:] = (2.0 * timestep, 1.0)
    model.dof_solimp[:] = FRICTION_IMPEDANCE
    model.eq_solref[:] = (2.0 * timestep, 1.0)  # mimic followers: as hard as the integrator allows
    model.eq_solimp[:] = EQUALITY_IMPEDANCE
    model.dof_armature[:] = 0.0
    model.dof_armature[dof_index] = np.asarray(armature, dtype=float)
    model.jnt_stiffness[:] = 0.0
    return model, qpos_index, dof_index
