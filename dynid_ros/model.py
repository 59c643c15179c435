"""Robot model: a URDF (or ``.urdf.xacro``) or a DH table, reduced to the identified joints.

Pinocchio is the dynamics engine. The model keeps the identified joints movable and locks
every other movable joint at its neutral value (with a warning naming them), so its bodies are
merged into the identified links. By default the identified joints are the movable joints (those
in the data, when given) except:

- mimic joints (``<mimic>``): they follow their leader, they are never identified on their own; a
  locked leader locks its followers at ``multiplier * q_leader + offset``;
- end-effector (gripper) joints: the joints past the last branching of the kinematic tree, when the
  branches are shorter than the chain that carries them (the Panda's fingers). Naming them in
  ``joints`` identifies them.

The link parameters of joint ``k`` are those of the body it moves, about its joint frame
(see :mod:`dynid_ros.parameters`). For DH tables that frame is DH frame ``k`` for the
modified convention, and DH frame ``k-1`` rotated by ``q_k`` for the standard one.

DH YAML schema::

    convention: standard | modified
    gravity: [0, 0, -9.81]          # optional, base frame
    joints:                          # one entry per joint, base to tip
      - {type: revolute | prismatic, alpha: rad, a: m, d: m, theta: rad, name: optional}
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dynid_ros.errors import ConfigError, ModelError
from dynid_ros.parameters import ParameterLayout, parse_friction
from dynid_ros.urdf_source import Mimic, mimic_joints, parse_urdf, read_urdf_text

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
        pin_model: pinocchio model whose joints 1..n are the identified joints, in chain order.
        joints: identified joint names (order of ``pin_model``).
        links: for each joint, the name of the URDF link (or DH link) it moves.
        kinematics: per joint, constants used by :mod:`dynid_ros.regressor`.
        position_limits: (n, 2) [rad or m]; ``inf`` where the description has none.
        velocity_limits: (n,); effort_limits: (n,).
        urdf_path: source file, if any; urdf_xml: the URDF text (after xacro), if any.
        locked: names of movable joints locked at neutral.
        link_frames: frame id in ``pin_model`` of each moved link.
        locked_positions: the position [rad or m] each locked joint is locked at.
        mimic: the description's mimic joints, ``{follower: Mimic}``.
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

    @property
    def n_dof(self) -> int:
        return len(self.joints)

    @property
    def gravity(self) -> np.ndarray:
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
        out = []
        for k, joint in enumerate(self.pin_model.joints[1:]):
            if joint.nq == 2:
                out += [np.cos(q[..., k]), np.sin(q[..., k])]
            else:
                out.append(q[..., k])
        return np.stack(out, axis=-1)


def load_model(urdf: str | Path | None = None, dh: str | Path | None = None,
               joints: list[str] | tuple[str, ...] | None = None,
               available: list[str] | None = None,
               xacro_args: dict[str, str] | list[str] | None = None,
               urdf_text: str | None = None) -> RobotModel:
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
    """
    if (urdf is not None or urdf_text is not None) == (dh is not None):
        raise ConfigError("give exactly one robot description: --urdf or --dh")
    if urdf is not None or urdf_text is not None:
        path = Path(urdf) if urdf is not None else Path("robot_description")
        xml = read_urdf_text(path, xacro_args) if urdf_text is None else urdf_text
        if urdf_text is not None and "<robot" not in xml:
            raise ModelError(f"{path}: not a URDF (no <robot> element)")
        try:
            full = pin.buildModelFromXML(xml)
        except (RuntimeError, ValueError) as err:
            raise ModelError(f"{path}: invalid URDF: {str(err).strip().splitlines()[0]}") from err
        model = _reduce(full, joints, available, path, xml, mimic_joints(parse_urdf(xml, path)))
        if urdf is None:
            model.urdf_path = None  # text, not a file
        return model
    path = Path(dh)
    full = build_dh_model(read_dh_table(path))
    return _reduce(full, joints, available, path, None, {})


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
                float(_eval_number(row.get(key, 0.0)))
            except (TypeError, ValueError) as err:
                raise ModelError(f"{path}: joint {k + 1}: {key} is not a number: {row.get(key)!r}") from err
    return table


def _eval_number(value: object) -> float:
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
        alpha, a, d, theta = (_eval_number(row.get(key, 0.0)) for key in ("alpha", "a", "d", "theta"))
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


def _reduce(full: pin.Model, joints: list[str] | tuple[str, ...] | None, available: list[str] | None,
            path: Path, xml: str | None, mimic: dict[str, Mimic]) -> RobotModel:
    movable = movable_joint_names(full)
    unsupported = [full.names[j] for j in range(1, full.njoints) if full.joints[j].nv not in (0, 1)]
    if unsupported:
        raise ModelError(f"{path}: unsupported multi-DOF joint(s) {unsupported} (floating bases are not identified)")
    followers = {name: m for name, m in mimic.items() if name in movable}
    end_effector = end_effector_joints(full)
    selected = _select(movable, followers, end_effector, joints, available, path)
    locked = [j for j in movable if j not in selected]
    for follower, m in followers.items():
        if follower in locked and m.leader in selected:
            raise ModelError(f"{path}: joint {follower} mimics {m.leader}: a follower of an identified joint is not "
                             f"supported; name {follower} too (identified on its own, from its data) or leave "
                             f"{m.leader} out")
    positions = _locked_positions(locked, followers)
    if locked:
        ends = any(j in end_effector or j in followers for j in locked)
        LOG.warning("joints not identified, locked at their neutral value: %s%s", ", ".join(locked),
                    " (end-effector and mimic joints are locked unless named in --joints)" if ends else "")
        lock_ids = [full.getJointId(j) for j in locked]
        reduced = pin.buildReducedModel(full, lock_ids, _configuration_of(full, positions))
    else:
        reduced = full
    names = tuple(reduced.names[j] for j in range(1, reduced.njoints))
    links, link_frames = _joint_links(reduced)
    kinematics = _kinematics(reduced)
    lower = np.full(len(names), -np.inf)
    upper = np.full(len(names), np.inf)
    vel = np.full(len(names), np.inf)
    eff = np.full(len(names), np.inf)
    for k in range(len(names)):
        joint = reduced.joints[k + 1]
        iq, iv = joint.idx_q, joint.idx_v
        if joint.nq == 1:
            lo, hi = reduced.lowerPositionLimit[iq], reduced.upperPositionLimit[iq]
            if np.isfinite(lo) and np.isfinite(hi) and hi > lo and abs(hi) < 1e10:
                lower[k], upper[k] = lo, hi
        if 0 < reduced.velocityLimit[iv] < 1e10:
            vel[k] = reduced.velocityLimit[iv]
        if 0 < reduced.effortLimit[iv] < 1e10:
            eff[k] = reduced.effortLimit[iv]
    return RobotModel(reduced, names, links, kinematics, np.stack([lower, upper], axis=1), vel, eff,
                      path if xml is not None else None, xml, tuple(locked), link_frames, positions,
                      dict(mimic))


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


def _locked_positions(locked: list[str], followers: dict[str, Mimic]) -> dict[str, float]:
    """Neutral (0) for every locked joint; a locked follower of a locked leader at ``multiplier * 0 + offset``."""
    positions = {name: 0.0 for name in locked}
    for name in locked:
        m = followers.get(name)
        if m is not None and m.leader in positions:
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


def _kinematics(model: pin.Model) -> list[JointKinematics]:
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
        iv = pm.joints[j + 1].idx_v
        for symbol in layout.joint_terms:
            if symbol in sources:
                delta[layout.joint_index(j, symbol)] = float(sources[symbol][iv])
    return delta
