"""The one conversion of a robot to MuJoCo: a :class:`~dynid_ros.robot.model.RobotModel` as a ``mujoco.MjSpec``.

The simulator (:mod:`dynid_ros.sim.mujoco_model`, :mod:`dynid_ros.sim.coupled_drive`) and ``identified.xml``
(:mod:`dynid_ros.robot.mjcf_writer`) both build their MuJoCo model here, from the model dynid_ros identifies:
the URDF as the one reader (:mod:`dynid_ros.robot.urdf_document`) and pinocchio read it, reduced to its moving
joints. MuJoCo's own URDF parser is not used: it reads a file differently from urdfdom (it refuses repeated
elements, ignores none of its own ``<mujoco>`` extensions, checks every fixed link's inertia on its own although
only the bodies that move matter), so the robot MuJoCo simulated was not always the robot identified. MuJoCo is the
independent dynamics engine (its own ``M(q)``, ``c(q, q')``, ``g(q)``, integrator, friction and equality
constraints); the kinematics and inertials are the identified model's.

The model, body by body:

- one body per moving joint of the model (identified joints and the mimic followers that move with them), named
  after the link the joint moves, placed by the joint's placement in its parent; its inertia is the composite of
  that link and everything rigidly attached to it (fixed links, joints locked at their positions), as pinocchio
  computes with;
- its joint: a hinge or slide along the joint's axis, named as in the URDF, with the URDF's position range and
  effort limit (``actuatorfrcrange``); continuous joints have no range;
- a mimic follower's joint is tied to its leader by a joint equality constraint ``q_f = offset + multiplier q_l``;
- every other link of the description (flange, tool frames, sensor frames) is a site at its place on its body;
- gravity is the model's; without a collision model there is no geometry (``identified.xml`` holds dynamics).

With a collision model (:mod:`dynid_ros.robot.collision`: the robot's convex pieces, its workcell and the pairs it
checks) every convex piece is a geom on its body (a mesh is given as its hull's vertices, whose hull MuJoCo builds
again: the same convex shape), every obstacle a geom of the world (a plane, solid below, as the collision model's
half-space), and the checked pairs, and only those, are MuJoCo contact ``<pair>`` elements (every geom has
``contype = conaffinity = 0``): the pairs the collision model leaves out (same body, parent/child, an SRDF's
``disable_collisions``, in contact at the start pose) never touch in MuJoCo either. A pair is reported by MuJoCo's
collision detection from ``watch_m`` apart but pushes only when the shapes touch (MuJoCo 4 reports a pair
within ``margin + gap`` and makes it a constraint within ``margin``: here ``margin`` 0, ``gap`` ``watch_m``): the
simulator reads the clearance of the pairs within ``watch_m`` and the contacts, and the dynamics are those of the
robot until it hits something. Pair names are :func:`pair_name`; geoms carry no mass
(the bodies' inertials are explicit).

A moving body with no mass at all (a massless link between two joints, as some descriptions have for a
universal joint) gets :data:`MASS_FLOOR` and :data:`INERTIA_FLOOR` (MuJoCo's ``boundmass``/``boundinertia``):
MuJoCo refuses a massless moving body; the floors change joint torques by less than 1e-9 N m.
"""

from __future__ import annotations

import numpy as np

from dynid_ros.errors import ModelError
from dynid_ros.robot.collision_model import CollisionModel
from dynid_ros.robot.model import PRISMATIC, RobotModel, joint_kinematics

MASS_FLOOR = 1e-12
"""[kg] MuJoCo's ``boundmass``: the least mass of a body (MuJoCo refuses a moving body below ~1e-15)."""
INERTIA_FLOOR = 1e-12
"""[kg m^2] MuJoCo's ``boundinertia``: the least principal moment of a body."""


def mujoco_spec(model: RobotModel, *, collision: CollisionModel | None = None, watch_m: float = 0.0) -> object:
    """The ``mujoco.MjSpec`` of ``model`` (module docstring); compile it with :func:`compile_spec`.

    ``collision``: the collision model of ``model`` (its convex pieces, obstacles and checked pairs become geoms
    and contact pairs); ``watch_m``: the distance [m] from which MuJoCo reports a pair (no force before contact).
    """
    import mujoco  # deferred: MuJoCo loads only where a MuJoCo model is built
    import pinocchio as pin

    pm = model.expanded if model.expanded is not None else model.pin_model
    kinematics = joint_kinematics(pm)
    spec = mujoco.MjSpec()
    spec.modelname = str(pm.name or "robot")
    spec.compiler.degree = False  # joint ranges in radians, as the URDF
    spec.compiler.boundmass = MASS_FLOOR
    spec.compiler.boundinertia = INERTIA_FLOOR
    spec.option.gravity = [float(g) for g in pm.gravity.linear]
    bodies = {0: spec.worldbody}
    limits = _joint_limits(model)
    for j in range(1, pm.njoints):
        placement = pm.jointPlacements[j]
        rotation = pin.Quaternion(placement.rotation)
        inertia = pm.inertias[j]
        i_com = np.array(inertia.inertia)
        body = bodies[pm.parents[j]].add_body(name=model.links[j - 1] if j - 1 < len(model.links) else pm.names[j],
                                             pos=[float(v) for v in placement.translation],
                                             quat=[rotation.w, rotation.x, rotation.y, rotation.z])
        body.explicitinertial = True
        body.mass = float(inertia.mass)
        body.ipos = [float(v) for v in inertia.lever]
        body.fullinertia = [i_com[0, 0], i_com[1, 1], i_com[2, 2], i_com[0, 1], i_com[0, 2], i_com[1, 2]]
        kind = kinematics[j - 1]
        hinge = mujoco.mjtJoint.mjJNT_SLIDE if kind.kind == PRISMATIC else mujoco.mjtJoint.mjJNT_HINGE
        joint = body.add_joint(name=pm.names[j], axis=[float(v) for v in kind.axis], type=hinge)
        low, high, effort = limits.get(pm.names[j], (-np.inf, np.inf, np.inf))
        if np.isfinite(low) and np.isfinite(high):
            joint.range = [float(low), float(high)]
            joint.limited = mujoco.mjtLimited.mjLIMITED_TRUE
        if np.isfinite(effort):
            joint.actfrcrange = [-float(effort), float(effort)]
            joint.actfrclimited = mujoco.mjtLimited.mjLIMITED_TRUE
        bodies[j] = body
    _add_frame_sites(model, pm, bodies)
    if collision is not None:
        _add_collision_geometry(spec, pm, bodies, collision, watch_m)
    for follower, term in model.following().items():
        equality = spec.add_equality(type=mujoco.mjtEq.mjEQ_JOINT, name1=follower, name2=str(term["leader"]))
        equality.data[:5] = (float(term["offset"]), float(term["multiplier"]), 0.0, 0.0, 0.0)  # polynomial
    return spec


def pair_name(row: int, first: int, second: int) -> str:
    """Name of the MuJoCo contact pair of convex piece ``first`` and piece (or obstacle) ``second`` of
    ``collision.rows[row]``; :func:`pair_row` reads it back."""
    return f"row {row}: {first} {second}"


def pair_row(name: str) -> int:
    """The row index in a :func:`pair_name`."""
    return int(name.split(":")[0].split()[1])


def _add_collision_geometry(spec: object, pm: object, bodies: dict[int, object], collision: CollisionModel,
                            watch_m: float) -> None:
    """Geoms of the convex pieces and obstacles, and a contact pair per checked pair of them (module docstring)."""
    joint_ids = {name: j for j, name in enumerate(pm.names)}
    parts = []
    for i, part in enumerate(collision.parts):
        body = bodies[joint_ids[collision.kinematic.names[part.body]]] if part.body else spec.worldbody
        parts.append(_add_geom(spec, body, f"part {i} {part.link}", part.geometry, part.rotation, part.translation))
    obstacles = [_add_geom(spec, spec.worldbody, f"obstacle {k} {o.name}", o.geometry,
                           np.array(o.placement.rotation), np.array(o.placement.translation))
                 for k, o in enumerate(collision.obstacles)]
    for r, row in enumerate(collision.rows):
        for i, j in row.pairs:
            other = obstacles[j] if row.obstacle else parts[j]
            spec.add_pair(name=pair_name(r, i, j), geomname1=parts[i], geomname2=other, margin=0.0,
                          gap=float(watch_m))


def _add_geom(spec: object, body: object, name: str, geometry: object, rotation: np.ndarray,
              translation: np.ndarray) -> str:
    """A massless geom ``name`` of the coal shape ``geometry`` at ``rotation``, ``translation`` on ``body``, in no
    collision group (only explicit pairs collide); its name."""
    import coal
    import mujoco  # deferred: MuJoCo loads only where a MuJoCo model is built

    kind, size = None, [0.0, 0.0, 0.0]
    rotation, translation = np.asarray(rotation, dtype=float), np.asarray(translation, dtype=float)
    if isinstance(geometry, coal.Halfspace):  # MuJoCo's plane: solid below its frame's x-y plane
        normal = rotation @ np.asarray(geometry.n, dtype=float)
        translation = translation + normal * float(geometry.d)
        rotation, kind, size = _frame_with_z(normal), mujoco.mjtGeom.mjGEOM_PLANE, [0.0, 0.0, 1.0]
    elif isinstance(geometry, coal.Box):
        kind, size = mujoco.mjtGeom.mjGEOM_BOX, [float(v) for v in geometry.halfSide]
    elif isinstance(geometry, coal.Sphere):
        kind, size = mujoco.mjtGeom.mjGEOM_SPHERE, [float(geometry.radius), 0.0, 0.0]
    elif isinstance(geometry, coal.Capsule):
        kind, size = mujoco.mjtGeom.mjGEOM_CAPSULE, [float(geometry.radius), float(geometry.halfLength), 0.0]
    elif isinstance(geometry, coal.Cylinder):
        kind, size = mujoco.mjtGeom.mjGEOM_CYLINDER, [float(geometry.radius), float(geometry.halfLength), 0.0]
    elif isinstance(geometry, coal.Ellipsoid):
        kind, size = mujoco.mjtGeom.mjGEOM_ELLIPSOID, [float(v) for v in geometry.radii]
    elif isinstance(geometry, coal.ConvexBase):
        mesh = spec.add_mesh(name=name, uservert=np.asarray(geometry.points(), dtype=float).reshape(-1).tolist())
        mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL
        kind = mujoco.mjtGeom.mjGEOM_MESH
    else:
        raise ModelError(f"{name}: collision geometry of type {type(geometry).__name__} has no MuJoCo geom")
    quaternion = np.empty(4)
    mujoco.mju_mat2Quat(quaternion, rotation.reshape(-1))
    geom = body.add_geom(name=name, type=kind, size=size, pos=translation.tolist(), quat=quaternion.tolist(),
                         contype=0, conaffinity=0, mass=0.0, group=3)
    if kind == mujoco.mjtGeom.mjGEOM_MESH:
        geom.meshname = name
    return name


def _frame_with_z(normal: np.ndarray) -> np.ndarray:
    """A rotation whose z axis is ``normal`` (unit)."""
    z = normal / np.linalg.norm(normal)
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def _joint_limits(model: RobotModel) -> dict[str, tuple[float, float, float]]:
    """``{joint: (lower, upper, effort)}`` of the identified joints (inf where the description has none)."""
    return {joint: (float(model.position_limits[k, 0]), float(model.position_limits[k, 1]),
                    float(model.effort_limits[k])) for k, joint in enumerate(model.joints)}


def _add_frame_sites(model: RobotModel, pm: object, bodies: dict[int, object]) -> None:
    """A site for every body frame of the description that is not a body of the MuJoCo model (fixed links)."""
    import pinocchio as pin

    names = {body.name for body in bodies.values() if body is not None}
    for frame in pm.frames:
        if frame.type != pin.FrameType.BODY or frame.name in names or frame.parentJoint == 0:
            continue
        rotation = pin.Quaternion(frame.placement.rotation)
        bodies[frame.parentJoint].add_site(name=frame.name, pos=[float(v) for v in frame.placement.translation],
                                           quat=[rotation.w, rotation.x, rotation.y, rotation.z])
        names.add(frame.name)


def compile_spec(spec: object, what: str) -> object:
    """``spec.compile()``; ModelError ``"<what>: <MuJoCo's whole reason>"`` when MuJoCo refuses it."""
    try:
        return spec.compile()
    except ValueError as err:
        raise ModelError(f"{what}: {mujoco_reason(err)}") from err


def mujoco_reason(err: Exception) -> str:
    """MuJoCo's error as one line: the reason and the element it names (MuJoCo puts them on two lines:
    ``Error: <reason>`` then ``Element name '<body>', id <k>``)."""
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    reason = lines[0].removeprefix("Error:").strip() if lines else type(err).__name__
    element = next((line for line in lines[1:] if line.startswith("Element name")), "")
    if element:
        name = element.split("'")[1] if "'" in element else element
        return f"{reason} (MuJoCo; body or joint {name})"
    return reason + (f" ({'; '.join(lines[1:])})" if len(lines) > 1 else "")
