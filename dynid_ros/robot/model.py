"""Robot model: a URDF (or ``.urdf.xacro``) or a DH table, reduced to the identified joints.

Pinocchio is the dynamics engine. The model keeps the identified joints movable and locks
every other movable joint at its neutral value (with a warning naming them), so its bodies are
merged into the identified links. By default the identified joints are the movable joints (those
in the data, when given) except:

- mimic joints (``<mimic>``): they follow their leader, they are never identified on their own. A follower
  of an identified joint moves with it (``q_f = multiplier * q_leader + offset``): its link is a body of the
  model, identified through its leader's torque ``tau_leader + multiplier * tau_follower`` (virtual work),
  and it has no friction or armature of its own. A locked leader locks its followers at
  ``multiplier * q_leader + offset``;
- end-effector (gripper) joints: the joints past the last branching of the kinematic tree, when the
  branches are shorter than the chain that carries them (the Panda's fingers). Naming them in
  ``joints`` identifies them.

The link parameters of joint ``k`` are those of the body it moves, about its joint frame
(see :mod:`dynid_ros.robot.parameters`). For DH tables that frame is DH frame ``k`` for the
modified convention, and DH frame ``k-1`` rotated by ``q_k`` for the standard one.

DH YAML schema::

    convention: standard | modified
    gravity: [0, 0, -9.81]          # optional, base frame
    joints:                          # one entry per joint, base to tip
      - {type: revolute | prismatic, alpha: rad, a: m, d: m, theta: rad, name: optional}
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dynid_ros.errors import ConfigError, ModelError
from dynid_ros.robot.parameters import ParameterLayout, parse_friction
from dynid_ros.robot.urdf_document import Mimic, read_urdf
from dynid_ros.robot.urdf_source import read_urdf_text

try:  # pinocchio is the one hard dependency of the core; fail with a readable line
    import pinocchio as pin
except ImportError as _err:  # pragma: no cover - packaging problem
    raise ImportError("dynid_ros needs pinocchio: pip install pin (PyPI 'pinocchio' is another package)") from _err

LOG = logging.getLogger(__name__)

REVOLUTE = "revolute"
PRISMATIC = "prismatic"


@dataclass
class JointKinematics:
    """Constant kinematics of one joint of the reduced model, for the vectorized regressor.

    ``rotation``/``translation``: placement of the joint frame in its parent joint frame.
    ``axis``: unit axis in the joint frame; ``kind``: revolute or prismatic; ``parent``: index
    of the parent identified joint (-1 for the base).
    """

    rotation: np.ndarray
    translation: np.ndarray
    axis: np.ndarray
    kind: str
    parent: int


@dataclass
class RobotModel:
    """A robot reduced to its identified joints.

    Attributes:
        pin_model: pinocchio model of the identified joints and of the mimic joints that follow them
            (``JointModelMimic``, no coordinate of their own); its joints ``1..`` are the model's bodies.
        joints: identified joint names (order of ``pin_model``).
        links: for each body (joint of ``pin_model``: identified or follower), the URDF link (or DH link) it
            moves; the first ``n_dof`` bodies are not always the identified joints (``joint_ids``).
        kinematics: per body, constants used by :mod:`dynid_ros.dynamics.regressor`.
        position_limits: (n, 2) [rad or m]; ``inf`` where the description has none.
        velocity_limits: (n,); effort_limits: (n,).
        urdf_path: source file, if any; urdf_xml: the URDF text (after xacro), if any.
        locked: names of movable joints locked (at ``locked_positions``).
        link_frames: frame id in ``pin_model`` of each moved link.
        locked_positions: the position [rad or m] each locked joint is locked at.
        mimic: the description's mimic joints, ``{follower: Mimic}``.
        joint_ids: the ``pin_model`` joint id of each identified joint (default ``1..n``).
        followers: names of the bodies that follow an identified joint (mimic joints, not identified).
        coupling: (n_bodies, n_dof) ``C`` and ``coupling_offset`` (n_bodies,) ``o``: the body coordinates are
            ``C q + o``, their rates ``C q'``, ``C q''``; None without followers (``C`` is the identity).
        expanded: the same bodies with the followers as ordinary joints (for algorithms pinocchio does not
            run on mimic joints, e.g. RNEA derivatives); None without followers.
        description_joints: the description's joints that the identified coordinates drive, when these are
            motors (:func:`dynid_ros.robot.coupling.apply_coupling`); empty otherwise (they are ``joints``).
        source: the DH table file of a model built from one (a URDF's file is ``urdf_path``).
    """

    pin_model: pin.Model
    joints: tuple[str, ...]
    links: tuple[str, ...]
    kinematics: list[JointKinematics]
    position_limits: np.ndarray
    velocity_limits: np.ndarray
    effort_limits: np.ndarray
    urdf_path: Path | None = None
    urdf_xml: str | None = None
    locked: tuple[str, ...] = ()
    link_frames: dict[str, int] = field(default_factory=dict)
    locked_positions: dict[str, float] = field(default_factory=dict)
    mimic: dict[str, Mimic] = field(default_factory=dict)
    joint_ids: tuple[int, ...] = ()
    followers: tuple[str, ...] = ()
    coupling: np.ndarray | None = None
    coupling_offset: np.ndarray | None = None
    expanded: pin.Model | None = None
    description_joints: tuple[str, ...] = ()
    source: Path | None = None

    def __post_init__(self) -> None:
        if not self.joint_ids:
            self.joint_ids = tuple(range(1, len(self.joints) + 1))

    @property
    def n_dof(self) -> int:
        """Number of identified joints."""
        return len(self.joints)

    @property
    def n_bodies(self) -> int:
        """Number of bodies (one per entry of ``kinematics``)."""
        return len(self.kinematics)

    def body_motion(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions, velocities, accelerations (..., n_bodies) of every body's joint from the identified
        joints' (..., n_dof): ``C q + o``, ``C q'``, ``C q''``."""
        if self.coupling is None:
            return q, dq, ddq
        c = self.coupling.T
        return q @ c + self.coupling_offset, dq @ c, ddq @ c

    def following(self) -> dict[str, dict[str, float | str]]:
        """``{follower: {leader, multiplier, offset}}`` of the followers of identified joints."""
        out: dict[str, dict[str, float | str]] = {}
        for name in self.followers:
            b = list(self.pin_model.names).index(name) - 1
            j = int(np.flatnonzero(self.coupling[b])[0])
            out[name] = {"leader": self.joints[j], "multiplier": float(self.coupling[b, j]),
                         "offset": float(self.coupling_offset[b])}
        return out

    @property
    def continuous(self) -> tuple[bool, ...]:
        """Per identified joint: True for a continuous (unlimited revolute) joint, whose angle wraps."""
        return tuple(self.pin_model.joints[jid].nq == 2 for jid in self.joint_ids)

    @property
    def gravity(self) -> np.ndarray:
        """The pinocchio model's gravity vector [m/s^2]."""
        return np.array(self.pin_model.gravity.linear)

    def layout_for(self, friction: str | tuple[str, ...] | list[str] | None = ("viscous", "coulomb", "offset"),
                   armature: bool = True) -> ParameterLayout:
        """The parameter layout of this model with the given per-joint terms."""
        return ParameterLayout(self.joints, self.links, parse_friction(friction), bool(armature))

    def configuration(self, q: np.ndarray) -> np.ndarray:
        """Pinocchio configuration vector(s) from joint coordinates (handles continuous joints)."""
        q = np.asarray(q, dtype=float)
        if self.pin_model.nq == self.n_dof:
            return q
        return _configuration(self.pin_model, self.joint_ids, q)


def _configuration(model: pin.Model, joint_ids: tuple[int, ...], q: np.ndarray) -> np.ndarray:
    """Configuration vector(s) of ``model`` from the coordinates of its joints ``joint_ids`` (in q order)."""
    out = []
    for k, j in enumerate(joint_ids):
        if model.joints[j].nq == 2:
            out += [np.cos(q[..., k]), np.sin(q[..., k])]
        else:
            out.append(q[..., k])
    return np.stack(out, axis=-1)


def rnea_derivatives(model: RobotModel, pm: pin.Model, data: pin.Data, q: np.ndarray, dq: np.ndarray,
                     ddq: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dtau/dq, dtau/dq', M)`` of the identified joints at one state, with pinocchio's RNEA derivatives.

    ``pm`` is ``model.pin_model`` (or a copy with other inertias), or ``model.expanded`` when the model has
    followers: then the derivatives of the bodies' joints are projected, ``C^T D C``.
    """
    if model.coupling is None:
        pin.computeRNEADerivatives(pm, data, model.configuration(q), dq, ddq)
        return np.array(data.dtau_dq), np.array(data.dtau_dv), _symmetric(data.M)
    qb, dqb, ddqb = model.body_motion(q, dq, ddq)
    config = _configuration(pm, tuple(range(1, pm.njoints)), qb) if pm.nq != pm.nv else qb
    pin.computeRNEADerivatives(pm, data, config, dqb, ddqb)
    c = model.coupling
    return c.T @ data.dtau_dq @ c, c.T @ data.dtau_dv @ c, c.T @ _symmetric(data.M) @ c


def _symmetric(upper: np.ndarray) -> np.ndarray:
    """The symmetric matrix whose upper triangle pinocchio filled (its ``data.M``); ``numpy.triu`` builds a mask
    per call, which made it most of the cost of the excitation optimizer's gradient."""
    m = np.array(upper)
    lower = _lower_indices(m.shape[0])
    m[lower] = m.T[lower]
    return m


@functools.lru_cache(maxsize=32)
def _lower_indices(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``numpy.tril_indices(n, -1)``, built once per size (building them was most of :func:`_symmetric`'s cost)."""
    return np.tril_indices(n, -1)


def load_model(*, urdf: str | Path | None = None, dh: str | Path | None = None,
               joints: list[str] | tuple[str, ...] | None = None,
               available: list[str] | None = None,
               xacro_args: dict[str, str] | list[str] | None = None,
               urdf_text: str | None = None,
               locked_at: dict[str, float] | Callable[[list[str]], dict[str, float]] | None = None,
               quiet: bool = False) -> RobotModel:
    """Load a robot from a URDF/xacro file, URDF text or a DH YAML file.

    Args:
        urdf: path to ``.urdf`` or ``.urdf.xacro`` (meshes are never needed).
        dh: path to a DH YAML table (see module docstring).
        joints: identified joints; default: the movable joints that are in ``available`` (e.g.
            the joints present in the bag), or all movable joints when ``available`` is None,
            without mimic and end-effector joints (module docstring).
        available: joint names present in the data, used for the default selection.
        xacro_args: ``name:=value`` arguments (or a mapping) of a ``.urdf.xacro``.
        urdf_text: the URDF itself (e.g. a ``robot_description``) instead of a file; ``urdf``, if given
            too, names it in messages.
        locked_at: ``{joint: position}`` where the data hold the joints that are locked (not identified), or a
            function of the locked joints' names that returns it (so the data are read only when some joint is
            locked); a locked joint not in it is locked at neutral (0), a locked mimic follower with its leader.
        quiet: no warning naming the locked joints (a model of a file dynid_ros wrote, e.g. the truth or the
            identified URDF, after the user's model announced them).
    """
    if (urdf is not None or urdf_text is not None) == (dh is not None):
        raise ConfigError("give exactly one robot description: --urdf or --dh")
    if urdf is not None or urdf_text is not None:
        path = Path(urdf) if urdf is not None else Path("robot_description")
        xml = read_urdf_text(path, xacro_args) if urdf_text is None else urdf_text
        if urdf_text is not None and "<robot" not in xml:
            raise ModelError(f"{path}: not a URDF (no <robot> element)")
        document = read_urdf(xml, path)
        try:
            full = pin.buildModelFromXML(document.dynamics_text())
        except (RuntimeError, ValueError) as err:
            raise ModelError(f"{path}: invalid URDF: {str(err).strip().splitlines()[0]}") from err
        model = _reduce(full, joints, available, path, xml, document.mimic_joints(), locked_at, quiet)
        if urdf is None:
            model.urdf_path = None  # text, not a file
        return model
    path = Path(dh)
    full = build_dh_model(read_dh_table(path))
    model = _reduce(full, joints, available, path, None, {}, locked_at, quiet)
    model.source = path
    return model


def read_dh_table(path: Path) -> dict:
    """Read and validate a DH YAML table."""
    import yaml

    if not path.is_file():
        raise ModelError(f"{path}: no such DH file")
    try:
        table = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ModelError(f"{path}: invalid YAML: {err}") from err
    if not isinstance(table, dict) or not isinstance(table.get("joints"), list) or not table["joints"]:
        raise ModelError(f"{path}: a DH table needs a non-empty 'joints' list")
    convention = table.get("convention", "standard")
    if convention not in ("standard", "modified"):
        raise ModelError(f"{path}: convention must be 'standard' or 'modified', not {convention!r}")
    for k, row in enumerate(table["joints"]):
        if not isinstance(row, dict):
            raise ModelError(f"{path}: joint {k + 1} must be a mapping with type, alpha, a, d, theta")
        if row.get("type", REVOLUTE) not in (REVOLUTE, PRISMATIC):
            raise ModelError(f"{path}: joint {k + 1}: type must be revolute or prismatic")
        for key in ("alpha", "a", "d", "theta"):
            try:
                float(eval_number(row.get(key, 0.0)))
            except (TypeError, ValueError) as err:
                raise ModelError(f"{path}: joint {k + 1}: {key} is not a number: {row.get(key)!r}") from err
    return table


def eval_number(value: object) -> float:
    """A float from a number or a simple expression like ``-pi/2``."""
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).replace("pi", repr(math.pi))
    if not set(text) <= set("0123456789.+-*/() e"):
        raise ValueError(value)
    return float(eval(text, {"__builtins__": {}}, {}))  # digits and operators only


def build_dh_model(table: dict) -> pin.Model:
    """A pinocchio chain from a DH table (standard or modified convention)."""
    model = pin.Model()
    model.name = "dh_robot"
    modified = table.get("convention", "standard") == "modified"
    previous = pin.SE3.Identity()  # standard DH: transform of the previous link still to apply
    parent = 0
    for k, row in enumerate(table["joints"]):
        alpha, a, d, theta = (eval_number(row.get(key, 0.0)) for key in ("alpha", "a", "d", "theta"))
        kind = row.get("type", REVOLUTE)
        if modified:
            placement = _rx(alpha) * _tx(a) * _rz(theta) * _tz(d)
        else:
            placement = previous * (_rz(theta) if kind == REVOLUTE else _rz(theta) * _tz(d))
        joint_model = pin.JointModelRZ() if kind == REVOLUTE else pin.JointModelPZ()
        name = str(row.get("name", f"joint{k + 1}"))
        parent = model.addJoint(parent, joint_model, placement, name)
        model.appendBodyToJoint(parent, pin.Inertia.Zero(), pin.SE3.Identity())
        link = f"link{k + 1}"
        joint_frame = model.addJointFrame(parent, -1)
        model.addBodyFrame(link, parent, pin.SE3.Identity(), joint_frame)
        if not modified:
            previous = (_tz(d) if kind == REVOLUTE else pin.SE3.Identity()) * _tx(a) * _rx(alpha)
    if "gravity" in table:
        model.gravity.linear = np.array([float(g) for g in table["gravity"]])
    return model


def _rz(angle: float) -> pin.SE3:
    return pin.SE3(pin.utils.rotate("z", angle), np.zeros(3))


def _rx(angle: float) -> pin.SE3:
    return pin.SE3(pin.utils.rotate("x", angle), np.zeros(3))


def _tz(d: float) -> pin.SE3:
    return pin.SE3(np.eye(3), np.array([0.0, 0.0, d]))


def _tx(a: float) -> pin.SE3:
    return pin.SE3(np.eye(3), np.array([a, 0.0, 0.0]))


def movable_joint_names(model: pin.Model) -> list[str]:
    """Names of the joints with one degree of freedom, in model order."""
    return [model.names[j] for j in range(1, model.njoints) if model.joints[j].nv == 1]


def _unique_frame_names(full: pin.Model, locked: list[str]) -> pin.Model:
    """``full`` with the joint frame of each locked joint renamed where a link has the same name (SO-100's
    ``gripper``): pinocchio cannot lock a joint whose frame name is not unique. Locked joints are not model
    joints afterwards, so their frame name is used nowhere else."""
    names = [frame.name for frame in full.frames]
    clashes = [i for i, frame in enumerate(full.frames)
               if frame.name in locked and frame.type == pin.FrameType.JOINT and names.count(frame.name) > 1]
    if not clashes:
        return full
    model = full.copy()
    for i in clashes:
        frame = model.frames[i]
        joint = model.getJointId(frame.name)
        frame.name = f"{frame.name}__locked_joint"
        model.frames[i] = frame
        model.names[joint] = frame.name
    return model


def _reduce(full: pin.Model, joints: list[str] | tuple[str, ...] | None, available: list[str] | None,
            path: Path, xml: str | None, mimic: dict[str, Mimic],
            locked_at: dict[str, float] | Callable[[list[str]], dict[str, float]] | None = None,
            quiet: bool = False) -> RobotModel:
    movable = movable_joint_names(full)
    unsupported = [full.names[j] for j in range(1, full.njoints) if full.joints[j].nv not in (0, 1)]
    if unsupported:
        raise ModelError(f"{path}: unsupported multi-DOF joint(s) {unsupported} (floating bases are not identified)")
    followers = {name: m for name, m in mimic.items() if name in movable}
    end_effector = end_effector_joints(full)
    selected = _select(movable, followers, end_effector, joints, available, path)
    following = _following(followers, selected, path)
    locked = [j for j in movable if j not in selected and j not in following]
    if callable(locked_at):
        locked_at = locked_at(locked) if locked else None
    positions = _locked_positions(locked, followers, locked_at or {})
    if locked and not quiet:
        ends = any(j in end_effector or j in followers for j in locked)
        LOG.warning("joints not identified, locked at %s: %s (at %s)%s",
                    "the position in the data" if locked_at else "their neutral value", ", ".join(locked),
                    ", ".join(f"{positions[j]:.4g}" for j in locked),
                    " (end-effector and mimic joints are locked unless named in --joints)" if ends else "")
    if locked:
        lock_ids = [full.getJointId(j) for j in locked]
        reduced = pin.buildReducedModel(_unique_frame_names(full, locked), lock_ids,
                                        _configuration_of(full, positions))
    else:
        reduced = full
    links, link_frames = _joint_links(reduced)
    kinematics = joint_kinematics(reduced)
    bodies = [reduced.names[j] for j in range(1, reduced.njoints)]
    names = tuple(b for b in bodies if b not in following)
    pin_model, coupling, offset, expanded = reduced, None, None, None
    if following:
        pin_model = _with_mimic_joints(reduced, names, following, path)
        coupling, offset = _coupling(bodies, names, following)
        expanded = reduced
    joint_ids = tuple(pin_model.getJointId(name) for name in names)
    lower = np.full(len(names), -np.inf)
    upper = np.full(len(names), np.inf)
    vel = np.full(len(names), np.inf)
    eff = np.full(len(names), np.inf)
    for k, jid in enumerate(joint_ids):
        joint = pin_model.joints[jid]
        iq, iv = joint.idx_q, joint.idx_v
        if joint.nq == 1:
            lo, hi = pin_model.lowerPositionLimit[iq], pin_model.upperPositionLimit[iq]
            if np.isfinite(lo) and np.isfinite(hi) and hi > lo and abs(hi) < 1e10:
                lower[k], upper[k] = lo, hi
        if 0 < pin_model.velocityLimit[iv] < 1e10:
            vel[k] = pin_model.velocityLimit[iv]
        if 0 < pin_model.effortLimit[iv] < 1e10:
            eff[k] = pin_model.effortLimit[iv]
    for follower, (leader, multiplier, shift) in following.items():  # a follower's range limits its leader's
        joint = reduced.joints[reduced.getJointId(follower)]
        lo, hi = reduced.lowerPositionLimit[joint.idx_q], reduced.upperPositionLimit[joint.idx_q]
        if joint.nq == 1 and np.isfinite(lo) and np.isfinite(hi) and hi > lo and abs(hi) < 1e10:
            ends = sorted(((lo - shift) / multiplier, (hi - shift) / multiplier))
            k = names.index(leader)
            lower[k], upper[k] = max(lower[k], ends[0]), min(upper[k], ends[1])
            if not lower[k] < upper[k]:
                raise ModelError(f"{path}: joint {follower} mimics {leader}: their position limits leave "
                                 f"{leader} no range")
    return RobotModel(pin_model, names, links, kinematics, np.stack([lower, upper], axis=1), vel, eff,
                      path if xml is not None else None, xml, tuple(locked), link_frames, positions,
                      dict(mimic), joint_ids, tuple(following), coupling, offset, expanded)


def _following(followers: dict[str, Mimic], selected: list[str], path: Path) -> dict[str, tuple[str, float, float]]:
    """The followers that move with an identified joint and are not identified themselves:
    ``{follower: (identified leader, multiplier, offset)}`` (a follower of a follower composes both)."""
    out: dict[str, tuple[str, float, float]] = {}
    changed = True
    while changed:
        changed = False
        for name, m in followers.items():
            if name in selected or name in out:
                continue
            if m.leader in selected:
                out[name] = (m.leader, m.multiplier, m.offset)
            elif m.leader in out:
                leader, multiplier, offset = out[m.leader]
                out[name] = (leader, m.multiplier * multiplier, m.multiplier * offset + m.offset)
            else:
                continue
            if out[name][1] == 0.0:
                raise ModelError(f"{path}: joint {name} mimics {m.leader} with multiplier 0")
            changed = True
    return out


def _with_mimic_joints(model: pin.Model, names: tuple[str, ...], following: dict[str, tuple[str, float, float]],
                       path: Path) -> pin.Model:
    """``model`` with each follower turned into a pinocchio mimic joint of its identified leader."""
    out = model
    for follower, (leader, multiplier, offset) in following.items():
        try:
            out = pin.transformJointIntoMimic(out, out.getJointId(leader), out.getJointId(follower), multiplier,
                                              offset)
        except (RuntimeError, ValueError) as err:
            raise ModelError(f"{path}: joint {follower} cannot follow {leader}: {str(err).strip()}") from err
    return out


def _coupling(bodies: list[str], names: tuple[str, ...], following: dict[str, tuple[str, float, float]]
              ) -> tuple[np.ndarray, np.ndarray]:
    """``(C, o)``: body coordinates ``C q + o`` from the identified joints' ``q``."""
    c = np.zeros((len(bodies), len(names)))
    o = np.zeros(len(bodies))
    for b, body in enumerate(bodies):
        if body in following:
            leader, multiplier, offset = following[body]
            c[b, names.index(leader)], o[b] = multiplier, offset
        else:
            c[b, names.index(body)] = 1.0
    return c, o


def _select(movable: list[str], followers: dict[str, Mimic], end_effector: list[str],
            joints: list[str] | tuple[str, ...] | None, available: list[str] | None, path: Path) -> list[str]:
    """The identified joints: ``joints``, else the independent (non-mimic, non-end-effector) movable joints that
    are in ``available`` (all of them when None)."""
    if joints:
        unknown = [j for j in joints if j not in movable]
        if unknown:
            raise ModelError(f"{path}: joint(s) {unknown} are not movable joints of this robot "
                             f"(movable: {', '.join(movable)})")
        return [j for j in movable if j in joints]
    candidates = [j for j in movable if j not in followers]
    if available is not None:
        candidates = [j for j in candidates if j in set(available)]
        if not candidates:
            raise ModelError(f"{path}: none of the robot's joints ({', '.join(movable)}) is in the data "
                             f"({', '.join(available)})")
    arm = [j for j in candidates if j not in end_effector]
    return arm or candidates


def end_effector_joints(model: pin.Model) -> list[str]:
    """The movable joints past a branching of the kinematic tree whose branches are all shorter than the chain
    that carries them (a gripper's fingers; not the two arms of a torso)."""
    children: dict[int, list[int]] = {j: [] for j in range(model.njoints)}
    for j in range(1, model.njoints):
        children[model.parents[j]].append(j)

    def subtree(j: int) -> list[int]:
        return [j] + [k for c in children[j] for k in subtree(c)]

    def height(j: int) -> int:
        return int(model.joints[j].nv == 1) + max((height(c) for c in children[j]), default=0)

    def depth(j: int) -> int:
        return 0 if j == 0 else int(model.joints[j].nv == 1) + depth(model.parents[j])

    out: set[int] = set()
    for branch in range(1, model.njoints):
        branches = [c for c in children[branch] if height(c) > 0]
        if len(branches) >= 2 and depth(branch) >= max(height(c) for c in branches):
            out.update(k for c in branches for k in subtree(c) if model.joints[k].nv == 1)
    return [model.names[j] for j in sorted(out)]


def _locked_positions(locked: list[str], followers: dict[str, Mimic],
                      locked_at: dict[str, float]) -> dict[str, float]:
    """Each locked joint where the data hold it (``locked_at``), else at neutral (0); a locked follower that is not
    in the data, of a locked leader, at ``multiplier * leader + offset``."""
    positions = {name: float(locked_at.get(name, 0.0)) for name in locked}
    for name in locked:
        m = followers.get(name)
        if m is not None and m.leader in positions and name not in locked_at:
            positions[name] = m.multiplier * positions[m.leader] + m.offset
    return positions


def _configuration_of(full: pin.Model, positions: dict[str, float]) -> np.ndarray:
    """The neutral configuration of ``full`` with ``positions`` (joint coordinates) set."""
    q = pin.neutral(full)
    for name, value in positions.items():
        joint = full.joints[full.getJointId(name)]
        if joint.nq == 2:  # continuous joint: (cos, sin)
            q[joint.idx_q:joint.idx_q + 2] = (math.cos(value), math.sin(value))
        else:
            q[joint.idx_q] = value
    return q


def _joint_links(model: pin.Model) -> tuple[tuple[str, ...], dict[str, int]]:
    """Name of the link each joint moves: the first body frame attached to the joint."""
    links: list[str] = []
    frames: dict[str, int] = {}
    for j in range(1, model.njoints):
        candidates = [i for i, f in enumerate(model.frames) if f.parentJoint == j and f.type == pin.FrameType.BODY]
        if candidates:
            best = min(candidates, key=lambda i: np.linalg.norm(model.frames[i].placement.translation)
                       + np.linalg.norm(model.frames[i].placement.rotation - np.eye(3)))
            links.append(model.frames[best].name)
            frames[model.frames[best].name] = best
        else:
            links.append(f"{model.names[j]}_link")
    return tuple(links), frames


def joint_kinematics(model: pin.Model) -> list[JointKinematics]:
    """Per joint of ``model`` (in order), the constants of :class:`JointKinematics` at the neutral configuration."""
    data = model.createData()
    pin.forwardKinematics(model, data, pin.neutral(model))
    out = []
    for j in range(1, model.njoints):
        s = np.array(data.joints[j].S).reshape(6)  # motion subspace: [linear; angular]
        if np.linalg.norm(s[3:]) > 1e-12:
            kind, axis = REVOLUTE, s[3:] / np.linalg.norm(s[3:])
        else:
            kind, axis = PRISMATIC, s[:3] / np.linalg.norm(s[:3])
        placement = model.jointPlacements[j]
        out.append(JointKinematics(np.array(placement.rotation), np.array(placement.translation), axis, kind,
                                   model.parents[j] - 1))
    return out


def nominal_parameters(model: RobotModel, layout: ParameterLayout) -> np.ndarray:
    """The description's parameters in ``layout`` (link inertials; damping, friction, armature)."""
    pm = model.pin_model
    delta = np.zeros(layout.n_parameters)
    for k in range(len(layout.links)):
        delta[layout.link_slice(k)] = pm.inertias[k + 1].toDynamicParameters()
    sources = {"fv": pm.damping, "fc": pm.friction, "Ia": pm.armature}
    for j in range(layout.n_dof):
        iv = pm.joints[model.joint_ids[j]].idx_v
        for symbol in layout.joint_terms:
            if symbol in sources:
                delta[layout.joint_index(j, symbol)] = float(sources[symbol][iv])
    return delta
