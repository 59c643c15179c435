"""Robots described by frames in their config (``robot: frames:``): closed chains as a tree of DH frames whose joint
coordinate is a linear combination of the motor coordinates (Wang et al. 2019 section II: parallelograms, tendon
couplings, counterweights), plus per-frame friction, rotor inertia, springs and a known torque.

Schema (``config/dvrk_psm.yaml`` and ``config/dvrk_mtm.yaml`` are complete examples)::

    robot:
      convention: modified             # modified (Craig: RotX(alpha) TransX(a) RotZ(theta) TransZ(d)) | standard
      joints: [q1, q2, ...]            # the motor coordinates, as named (and ordered) in the JointState messages
      gravity: [0, 0, -9.81]           # base frame (default)
      frames:                          # parents before children; 'base' is the robot base
        - name: link2                  # unique
          parent: link1
          type: revolute               # revolute | prismatic | fixed
          a: 0.0                       # [m]; numbers or expressions of pi, e.g. -pi/2
          alpha: -pi/2
          d: 0.0                       # constant part of d (a prismatic frame adds its motion)
          theta: pi/2                  # constant part of theta (a revolute frame adds its motion)
          motion: {q2: 1.0, q3: -1.0}  # the frame's joint coordinate = sum of coefficient x motor coordinate
          inertia: true                # a rigid body: ten parameters, its own LMI (default true)
          friction: true               # Fc sign(w) + Fv w + Fo on the frame's rate w (default false)
          rotor_inertia: false         # Ia on the frame's acceleration (default false)
          spring: {kind: torsional, rest: 0.0, bounds: [0.0, 1.0]}   # K (theta - rest), K in the bounds
          # spring: {kind: gravity_spring, r_s: 0.0075, h_s: 0.1035, rest_length: 0.0613, q_o: 23deg, bounds: [..]}
          known_torque: [c_n, ..., c_1, c_0]   # tau(theta) polynomial, highest power first: subtracted before the fit

Every per-frame term acts on the motors through ``d theta_f / d q`` (virtual work). A counterweight is a prismatic
frame whose axis runs opposite to the stage it balances (its motion coefficient or its alpha says so). A frame
without inertia that carries frames with inertia is not allowed (give it ``inertia: true``); a frame without inertia
and without such children only carries its per-frame terms (e.g. a motor's rotor).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from dynid_ros.errors import ConfigError
from dynid_ros.robot.model import RobotModel, eval_number, joint_kinematics

FRAME_KEYS = frozenset({"name", "parent", "type", "a", "alpha", "d", "theta", "motion", "inertia", "friction",
                        "rotor_inertia", "spring", "known_torque"})
"""Keys of one entry of ``robot: frames:``."""
SPRING_KINDS = ("torsional", "gravity_spring")
FRAME_TYPES = ("revolute", "prismatic", "fixed")


@dataclass(frozen=True)
class Spring:
    """``kind`` torsional: torque ``K (theta - rest)``; gravity_spring: the MTM joint-5 spring of Wang et al. 2019
    eq. 18-20 (``K r_f (l - l_r)``, parameters ``r_s, h_s, rest_length, q_o``). ``K`` within ``bounds``."""

    kind: str
    parameters: dict
    bounds: tuple[float, float]

    def coordinate(self, theta: np.ndarray) -> np.ndarray:
        """The torque per unit K at the frame angle(s) ``theta`` (what the motor holds)."""
        if self.kind == "torsional":
            return theta - self.parameters.get("rest", 0.0)
        p = self.parameters
        angle = math.pi + p["q_o"] - theta
        length = np.sqrt(p["r_s"] ** 2 + p["h_s"] ** 2 - 2 * p["r_s"] * p["h_s"] * np.cos(angle))
        lever = p["r_s"] * p["h_s"] * np.sin(angle) / length
        return -lever * (length - p["rest_length"])


@dataclass(frozen=True)
class FrameSpec:
    """One frame of ``robot: frames:`` (see the module docstring); ``motion``: (n_motors,) coefficients."""

    name: str
    parent: str
    kind: str
    a: float
    alpha: float
    d: float
    theta: float
    motion: np.ndarray
    inertia: bool
    friction: bool
    rotor_inertia: bool
    spring: Spring | None
    known_torque: np.ndarray | None


@dataclass
class FramesRobot:
    """A frames robot: ``model`` (bodies = the frames with inertia, coordinates = the motors) and every frame."""

    model: RobotModel
    frames: list[FrameSpec]

    @property
    def motors(self) -> tuple[str, ...]:
        """The motors: the model's coordinates."""
        return self.model.joints


def frames_section(config: Mapping) -> list | None:
    """The ``robot: frames:`` list of a config mapping, or None."""
    robot = config.get("robot") or {}
    return robot.get("frames") if isinstance(robot, Mapping) else None


def load_frames_robot(config: Mapping, source: str = "config") -> FramesRobot:
    """The frames robot of a config mapping with a ``robot: frames:`` section; ConfigError naming the frame."""
    robot = config.get("robot")
    if not isinstance(robot, Mapping) or not isinstance(robot.get("frames"), list) or not robot["frames"]:
        raise ConfigError(f"{source}: robot.frames must be a non-empty list")
    motors = robot.get("joints")
    if not isinstance(motors, list) or not motors or len(set(motors)) != len(motors):
        raise ConfigError(f"{source}: robot.joints must list the motor coordinates (unique names)")
    convention = robot.get("convention", "modified")
    if convention not in ("modified", "standard"):
        raise ConfigError(f"{source}: robot.convention must be modified or standard, not {convention!r}")
    frames = [_frame(entry, k, [str(m) for m in motors], f"{source}: robot.frames[{k}]")
              for k, entry in enumerate(robot["frames"])]
    _check_tree(frames, source)
    model = _build(frames, tuple(str(m) for m in motors), convention == "modified", robot.get("gravity"), source)
    return FramesRobot(model, frames)


def _frame(entry: object, k: int, motors: list[str], where: str) -> FrameSpec:
    if not isinstance(entry, Mapping) or "name" not in entry:
        raise ConfigError(f"{where}: a frame is a mapping with at least a name")
    where = f"{where} ({entry['name']})"
    unknown = sorted(set(entry) - FRAME_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}")
    kind = entry.get("type", "revolute")
    if kind not in FRAME_TYPES:
        raise ConfigError(f"{where}: type must be one of {', '.join(FRAME_TYPES)}, not {kind!r}")
    motion = np.zeros(len(motors))
    for name, coefficient in dict(entry.get("motion") or {}).items():
        if name not in motors:
            raise ConfigError(f"{where}: motion names {name!r}, not a motor coordinate ({', '.join(motors)})")
        motion[motors.index(name)] = _number(coefficient, f"{where}: motion.{name}")
    if (kind == "fixed") != (not motion.any()):
        raise ConfigError(f"{where}: a {kind} frame needs {'no' if kind == 'fixed' else 'a'} motion")
    known = entry.get("known_torque")
    return FrameSpec(str(entry["name"]), str(entry.get("parent", "base")), kind,
                     *(_number(entry.get(key, 0.0), f"{where}: {key}") for key in ("a", "alpha", "d", "theta")),
                     motion, bool(entry.get("inertia", True)) and kind != "fixed", bool(entry.get("friction", False)),
                     bool(entry.get("rotor_inertia", False)), _spring(entry.get("spring"), where),
                     None if known is None else np.array([_number(c, f"{where}: known_torque") for c in known]))


def _spring(value: object, where: str) -> Spring | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or value.get("kind") not in SPRING_KINDS:
        raise ConfigError(f"{where}: spring needs kind: {' | '.join(SPRING_KINDS)}")
    bounds = value.get("bounds")
    if not isinstance(bounds, list) or len(bounds) != 2:
        raise ConfigError(f"{where}: spring.bounds must be [low, high]")
    low, high = (_number(b, f"{where}: spring.bounds") for b in bounds)
    if not low <= high:
        raise ConfigError(f"{where}: spring.bounds must have low <= high")
    needed = ("rest",) if value["kind"] == "torsional" else ("r_s", "h_s", "rest_length", "q_o")
    parameters = {key: _number(value.get(key, 0.0 if key == "rest" else None), f"{where}: spring.{key}")
                  for key in needed}
    return Spring(value["kind"], parameters, (low, high))


def _number(value: object, what: str) -> float:
    if isinstance(value, str) and value.strip().endswith("deg"):
        return math.radians(_number(value.strip()[:-3], what))
    try:
        return float(eval_number(value))
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{what} is not a number: {value!r}") from err


def _check_tree(frames: list[FrameSpec], source: str) -> None:
    """Unique names, parents first, no frame without inertia carrying frames with inertia."""
    seen: set[str] = {"base"}
    for f in frames:
        if f.name in seen:
            raise ConfigError(f"{source}: frame {f.name}: name used twice (or 'base')")
        if f.parent not in seen:
            raise ConfigError(f"{source}: frame {f.name}: parent {f.parent} is not an earlier frame or base")
        seen.add(f.name)
    carried = {f.name for f in frames if f.inertia}
    for f in reversed(frames):
        if f.name in carried:
            carried.add(f.parent)
    for f in frames:
        if f.kind != "fixed" and not f.inertia and f.name in carried:
            raise ConfigError(f"{source}: frame {f.name} has no inertia but frames with inertia hang from it: give it "
                              "inertia: true")


def depth_first(frames: list[FrameSpec]) -> list[FrameSpec]:
    """The frames in depth-first order from the base (siblings in config order): pinocchio's algorithms that work on
    subtrees (RNEA derivatives, CRBA) need every subtree's joints contiguous; a config lists parents before
    children, not necessarily depth first (the PSM's parallelogram links hang from one frame in turn)."""
    children: dict[str, list[FrameSpec]] = {}
    for f in frames:
        children.setdefault(f.parent, []).append(f)
    out: list[FrameSpec] = []
    stack = list(reversed(children.get("base", [])))
    while stack:
        f = stack.pop()
        out.append(f)
        stack.extend(reversed(children.get(f.name, [])))
    return out


def _build(frames: list[FrameSpec], motors: tuple[str, ...], modified: bool, gravity: object,
           source: str) -> RobotModel:
    """The pinocchio tree of the frames with inertia (fixed frames folded into their children's placements), its
    joints in depth-first order (:func:`depth_first`)."""
    pm = pin.Model()
    pm.name = "frames_robot"
    anchor: dict[str, tuple[int, pin.SE3]] = {"base": (0, pin.SE3.Identity())}
    names, rows = [], []
    for f in depth_first(frames):
        parent_joint, offset = anchor[f.parent]
        placement = offset * _placement(f, modified)
        if f.kind == "fixed":
            anchor[f.name] = (parent_joint, placement * _after(f, modified))
            continue
        if not f.inertia:  # carries only its per-frame terms (and frames like it): no body
            anchor[f.name] = anchor[f.parent]
            continue
        joint = pin.JointModelRZ() if f.kind == "revolute" else pin.JointModelPZ()
        jid = pm.addJoint(parent_joint, joint, placement, f.name)
        pm.appendBodyToJoint(jid, pin.Inertia.Zero(), pin.SE3.Identity())
        pm.addBodyFrame(f.name, jid, pin.SE3.Identity(), pm.addJointFrame(jid, -1))
        anchor[f.name] = (jid, _after(f, modified))
        names.append(f.name)
        rows.append(f.motion)
    if not names:
        raise ConfigError(f"{source}: robot.frames: no frame has inertia")
    if gravity is not None:
        pm.gravity.linear = np.array([_number(g, f"{source}: robot.gravity") for g in gravity])
    n = len(motors)
    infinite = np.full(n, np.inf)
    frames_of = {name: pm.getFrameId(name, pin.FrameType.BODY) for name in names}
    return RobotModel(pm, motors, tuple(names), joint_kinematics(pm), np.stack([-infinite, infinite], axis=1),
                      infinite.copy(), infinite.copy(), link_frames=frames_of,
                      joint_ids=tuple(range(1, min(n, len(names)) + 1)) + (1,) * max(n - len(names), 0),
                      coupling=np.array(rows), coupling_offset=np.zeros(len(names)), expanded=pm)


def _placement(f: FrameSpec, modified: bool) -> pin.SE3:
    """The frame's joint frame in its parent's coordinates, at zero motion."""
    rz = pin.SE3(pin.utils.rotate("z", f.theta), np.zeros(3))
    tz = pin.SE3(np.eye(3), np.array([0.0, 0.0, f.d]))
    if modified:
        return (pin.SE3(pin.utils.rotate("x", f.alpha), np.zeros(3)) * pin.SE3(np.eye(3), np.array([f.a, 0.0, 0.0]))
                * rz * tz)
    return rz if f.kind == "revolute" else rz * tz


def _after(f: FrameSpec, modified: bool) -> pin.SE3:
    """Standard DH: what follows the joint before the children (``TransZ(d) TransX(a) RotX(alpha)``, ``d`` only
    for a revolute frame); identity for modified DH."""
    if modified:
        return pin.SE3.Identity()
    tz = pin.SE3(np.eye(3), np.array([0.0, 0.0, f.d])) if f.kind != "prismatic" else pin.SE3.Identity()
    return tz * pin.SE3(np.eye(3), np.array([f.a, 0.0, 0.0])) * pin.SE3(pin.utils.rotate("x", f.alpha), np.zeros(3))
