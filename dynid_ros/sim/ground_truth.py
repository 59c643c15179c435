"""The simulated robot's true dynamics: perturbed inertials, joint friction, armature, sensor errors.

A :class:`GroundTruth` describes how the simulated robot differs from its nominal URDF. It is a
recipe, applied to a :class:`~dynid_ros.robot.model.RobotModel` of that URDF:

- every link moved by a joint gets its own ``<inertial>`` perturbed from ``seed``: mass by a
  relative factor, centre of mass by an absolute shift, and the three principal *second moments of
  mass* (``sigma_i = tr(I)/2 - I_i``, the diagonal of the density's covariance, Traversaro et al. 2016) by
  relative factors. Positive second moments are exactly the triangle inequality of the principal
  moments, so every perturbed link stays fully physically consistent (Traversaro et al. 2016);
- per joint: viscous friction ``fv`` (URDF ``damping``), Coulomb friction ``fc`` (URDF
  ``friction``), armature ``Ia``; per joint torque-sensor noise (std) and bias.

The torque a joint reports is (:mod:`dynid_ros.robot.parameters`, Sousa & Cortesão 2014 eq. 27)::

    effort = k (M(q) q'' + c(q, q') + g(q) + fv q' + f(q') + Ia q'' ) + bias + noise

with ``f(q') = fc sign(q')`` while sliding, so the true parameter vector has ``fo = bias``. Two departures from
that model exist to test robustness, both off by default: a Stribeck friction shape (``static_friction`` ``fs >
fc``: ``f(q') = (fc + (fs - fc) exp(-(q'/vs)^2)) sign(q')``, static friction up to ``fs``; Armstrong-Hélouvry
1994) and a torque-sensor gain error ``k`` (``effort_scale``, like a wrong current-to-torque constant; Pennese et
al. 2021 eq. 2). Two more are model errors of the URDF itself, also off by default: a tool on the
last moved link that the URDF lacks (``tool_mass`` at ``tool_com`` in that link's frame: the truth URDF and the true
parameters hold it) and a spring on a joint (``spring``: stiffness ``k`` [N m/rad] per joint, rest position
``spring_rest``: the joint feels ``-k (q - q0)``, so ``effort = ... + k (q - q0)``, a torque no URDF describes).
``exact=True`` perturbs every link by exactly ``±mass`` and ``|com|`` (random signs and
directions) instead of normal draws: a nominal URDF off by a known amount. :meth:`GroundTruth.parameters`
returns it in any :class:`~dynid_ros.robot.parameters.ParameterLayout` of the model
(:meth:`GroundTruth.parameter_vector`);
:meth:`GroundTruth.write_urdf` writes the truth URDF (perturbed inertials and ``<dynamics damping
friction>``; armature and sensor terms have no URDF element, they are listed in a comment). The
truth URDF carries a marker comment: applying the same GroundTruth to it again leaves its inertials
unchanged, so ``Simulator(truth_urdf, truth)`` simulates the same robot as ``Simulator(urdf, truth)``
(only the controller's nominal model differs).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dynid_ros.errors import ConfigError
from dynid_ros.robot.model import RobotModel, nominal_parameters
from dynid_ros.robot.parameters import ParameterLayout
from dynid_ros.robot.urdf_document import UrdfDocument, read_urdf
from dynid_ros.robot.urdf_writer import write_updated_urdf

TRUTH_KEYS = frozenset({"mass", "com", "inertia", "damping", "friction", "armature", "noise", "bias",
                        "static_friction", "stribeck_velocity", "effort_scale", "exact", "tool_mass", "tool_com",
                        "spring", "spring_rest"})
"""Keys of the ``simulation.truth`` config mapping (the fields of :class:`GroundTruth` but ``seed``)."""

MARKER_PREFIX = "dynid_ros.sim ground truth applied:"

FACTOR_RANGE = (0.5, 1.5)
"""Relative perturbation factors are clipped to this range (a link never loses half its mass)."""

TOOL_GYRATION = 0.02
"""Radius of gyration [m] of the simulated tool about its centre of mass (a compact tool, e.g. a small gripper)."""

PerJoint = float | tuple[float, ...]
"""One value for every joint, or one value per joint in model order."""


@dataclass(frozen=True)
class GroundTruth:
    """How the simulated robot differs from its nominal URDF (see the module docstring).

    Attributes:
        mass: relative standard deviation of each moved link's mass.
        com: standard deviation of each moved link's centre-of-mass shift [m], per axis.
        inertia: relative standard deviation of each principal second moment of mass.
        damping: viscous friction ``fv`` [N m s/rad]; None: the URDF's ``<dynamics damping>``.
        friction: Coulomb friction ``fc`` [N m]; None: the URDF's ``<dynamics friction>``.
        armature: rotor inertia ``Ia`` [kg m^2]; None: the model's armature (0 from a URDF).
        noise: torque-sensor noise standard deviation [N m].
        bias: torque-sensor bias [N m] (the true ``fo``).
        static_friction: Stribeck static friction ``fs >= fc`` [N m]; None: none (pure Coulomb).
        stribeck_velocity: Stribeck velocity ``vs`` [rad/s or m/s].
        effort_scale: torque-sensor gain ``k`` (effort = k * torque); 1: exact.
        exact: perturb masses by exactly ``±mass`` and CoMs by exactly ``com`` (random signs, directions).
        tool_mass: mass [kg] of a tool on the last moved link that the URDF lacks (0: none).
        tool_com: the tool's centre of mass in that link's frame [m].
        spring: stiffness [N m/rad] of a spring on each joint (0: none); the URDF lacks it.
        spring_rest: the springs' rest positions [rad].
        seed: seed of the inertial perturbation.
    """

    mass: float = 0.0
    com: float = 0.0
    inertia: float = 0.0
    damping: PerJoint | None = None
    friction: PerJoint | None = None
    armature: PerJoint | None = None
    noise: PerJoint = 0.0
    bias: PerJoint = 0.0
    static_friction: PerJoint | None = None
    stribeck_velocity: float = 0.05
    effort_scale: PerJoint = 1.0
    exact: bool = False
    tool_mass: float = 0.0
    tool_com: tuple[float, float, float] = (0.0, 0.0, 0.0)
    spring: PerJoint = 0.0
    spring_rest: PerJoint = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("mass", "com", "inertia", "tool_mass"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
                raise ConfigError(f"simulation truth: {name} must be a number >= 0, got {value!r}")
        if np.asarray(self.tool_com, dtype=float).shape != (3,):
            raise ConfigError(f"simulation truth: tool_com must be [x, y, z], got {self.tool_com!r}")
        for name in ("damping", "friction", "armature", "noise", "static_friction", "spring"):
            value = getattr(self, name)
            if value is not None and np.any(np.asarray(value, dtype=float) < 0):
                raise ConfigError(f"simulation truth: {name} must be >= 0, got {value!r}")
        if not (np.isfinite(self.stribeck_velocity) and self.stribeck_velocity > 0):
            raise ConfigError(f"simulation truth: stribeck_velocity must be > 0, got {self.stribeck_velocity!r}")
        if np.any(np.asarray(self.effort_scale, dtype=float) <= 0):
            raise ConfigError(f"simulation truth: effort_scale must be > 0, got {self.effort_scale!r}")

    @classmethod
    def from_config(cls, mapping: Mapping | None, seed: int | None = None) -> GroundTruth:
        """From the ``simulation:`` section of a robot config (its ``truth:`` mapping and ``seed``), or
        from the ``truth:`` mapping itself. ``seed`` overrides the config's. Unknown keys are an error::

            simulation:
              seed: 0
              truth: {mass: 0.1, com: 0.01, inertia: 0.1, damping: [...], friction: [...],
                      armature: [...], noise: 0.05, bias: [...]}
        """
        mapping = dict(mapping or {})
        if TRUTH_KEYS.isdisjoint(mapping) or "truth" in mapping:  # the simulation section
            truth = dict(mapping.get("truth") or {})
            truth.setdefault("seed", mapping.get("seed", 0))
        else:
            truth = mapping
        unknown = sorted(set(truth) - TRUTH_KEYS - {"seed"})
        if unknown:
            raise ConfigError(f"simulation.truth: unknown key(s) {unknown}; use {', '.join(sorted(TRUTH_KEYS))}")
        values: dict[str, object] = {}
        for key in ("mass", "com", "inertia", "tool_mass"):
            if truth.get(key) is not None:
                values[key] = _number(truth[key], f"simulation.truth.{key}")
        if truth.get("tool_com") is not None:
            values["tool_com"] = tuple(_per_joint(truth["tool_com"], "simulation.truth.tool_com"))
        for key in ("damping", "friction", "armature", "noise", "bias", "static_friction", "effort_scale", "spring",
                    "spring_rest"):
            if truth.get(key) is not None:
                values[key] = _per_joint(truth[key], f"simulation.truth.{key}")
        if truth.get("stribeck_velocity") is not None:
            values["stribeck_velocity"] = _number(truth["stribeck_velocity"], "simulation.truth.stribeck_velocity")
        if truth.get("exact") is not None:
            values["exact"] = bool(truth["exact"])
        chosen = truth.get("seed", 0) if seed is None else seed
        try:
            values["seed"] = int(chosen)
        except (TypeError, ValueError) as err:
            raise ConfigError(f"simulation.seed must be an integer, got {chosen!r}") from err
        return cls(**values)

    @property
    def marker(self) -> str:
        """The comment that :meth:`write_urdf` puts in a truth URDF: applying this truth to that URDF
        again leaves its inertials unchanged (a GroundTruth is idempotent)."""
        exact = " exact" if self.exact else ""
        tool = f" tool={self.tool_mass!r}@{list(self.tool_com)!r}" if self.tool_mass > 0 else ""
        return (f"{MARKER_PREFIX} mass={self.mass!r} com={self.com!r} inertia={self.inertia!r}{exact}{tool} "
                f"seed={self.seed}")

    def already_applied(self, model: RobotModel) -> bool:
        """True when ``model`` was loaded from a URDF that :meth:`write_urdf` wrote with these inertials."""
        return model.urdf_xml is not None and f"<!-- {self.marker} -->" in model.urdf_xml

    # ------------------------------------------------------------------------------------------
    # Per-joint values

    def joint_values(self, model: RobotModel) -> dict[str, np.ndarray]:
        """Per-joint arrays ``fv``, ``fc``, ``Ia``, ``noise``, ``bias``, ``fs`` (static friction, ``fc`` without
        Stribeck) and ``scale`` (sensor gain) (shape (n_dof,)) for ``model``."""
        n = model.n_dof
        pm = model.pin_model
        iv = [pm.joints[j].idx_v for j in model.joint_ids]
        urdf = {"damping": np.array(pm.damping)[iv], "friction": np.array(pm.friction)[iv],
                "armature": np.array(pm.armature)[iv]}
        out = {}
        for key, symbol in (("damping", "fv"), ("friction", "fc"), ("armature", "Ia")):
            value = getattr(self, key)
            out[symbol] = (urdf[key].astype(float) if value is None
                           else per_joint_array(value, n, f"simulation: {key}"))
        out["noise"] = per_joint_array(self.noise, n, "simulation: noise")
        out["bias"] = per_joint_array(self.bias, n, "simulation: bias")
        out["fs"] = (out["fc"].copy() if self.static_friction is None
                     else per_joint_array(self.static_friction, n, "simulation: static_friction"))
        if np.any(out["fs"] < out["fc"]):
            raise ConfigError(f"simulation: static_friction {out['fs'].tolist()} must be >= the Coulomb friction "
                              f"{out['fc'].tolist()}")
        out["scale"] = per_joint_array(self.effort_scale, n, "simulation: effort_scale")
        out["spring"] = per_joint_array(self.spring, n, "simulation: spring")
        out["spring_rest"] = per_joint_array(self.spring_rest, n, "simulation: spring_rest")
        return out

    # ------------------------------------------------------------------------------------------
    # Inertials

    def link_inertias(self, model: RobotModel) -> dict[str, object]:
        """The true ``pinocchio.Inertia`` of each moved URDF link, in the link's own frame (the last one with
        the tool, when there is one).

        Deterministic: the same seed and model give the same values on every call. A model loaded
        from this truth's own URDF (:meth:`already_applied`) keeps its inertials.
        """
        import pinocchio as pin

        document = _urdf_document(model)
        rng = np.random.default_rng(self.seed)
        applied = self.already_applied(model)
        out = {}
        for link in model.links:
            nominal = document.link_inertia(link)
            draws = rng.standard_normal(7)  # always draw, so each link's values do not depend on the others
            if self.exact:
                draws = _exact_draws(draws)
            out[link] = nominal if applied else _perturbed(nominal, draws, self.mass, self.com, self.inertia)
        if self.tool_mass > 0 and not applied and model.links:
            last = model.links[-1]
            out[last] = out[last] + pin.Inertia(float(self.tool_mass), np.asarray(self.tool_com, dtype=float),
                                                TOOL_GYRATION**2 * float(self.tool_mass) * np.eye(3))
        return out

    def body_parameters(self, model: RobotModel) -> np.ndarray:
        """The true link parameters ``(n_links, 10)`` of the model's bodies, about their joint frames.

        A body is the moved link plus its rigidly attached links; only the moved link is perturbed.
        """

        document = _urdf_document(model)
        pm = model.pin_model
        out = np.zeros((len(model.links), 10))
        for k, (link, inertia) in enumerate(self.link_inertias(model).items()):
            body = pm.inertias[k + 1].toDynamicParameters()
            frame_id = model.link_frames.get(link)
            if frame_id is None:
                out[k] = inertia.toDynamicParameters()
                continue
            placement = pm.frames[frame_id].placement
            own = placement.act(document.link_inertia(link)).toDynamicParameters()
            out[k] = body - own + placement.act(inertia).toDynamicParameters()
        return out

    # ------------------------------------------------------------------------------------------
    # Outputs

    def parameter_vector(self, model: RobotModel, layout: ParameterLayout) -> np.ndarray:
        """The TRUE parameter vector in ``layout`` (:mod:`dynid_ros.robot.parameters`): perturbed links
        about their joint frames, then per joint ``fv``, ``fc``, ``fo`` (= sensor bias), ``Ia``."""
        if tuple(layout.joints) != tuple(model.joints):
            raise ConfigError(f"layout joints {list(layout.joints)} differ from the model's {list(model.joints)}")
        delta = nominal_parameters(model, layout)
        bodies = self.body_parameters(model)
        for k in range(len(layout.links)):
            delta[layout.link_slice(k)] = bodies[k]
        values = self.joint_values(model)
        values["fo"] = values["bias"]
        for j in range(layout.n_dof):
            for symbol in layout.joint_terms:
                delta[layout.joint_index(j, symbol)] = values[symbol][j]
        return delta

    def write_urdf(self, model: RobotModel, path: str | Path) -> Path:
        """Write the truth URDF: each moved link's true ``<inertial>`` (:meth:`link_inertias`; a massless link stays
        massless), each joint's ``<dynamics damping friction>``; everything else as the URDF has it.

        Armature and sensor terms have no URDF element; pass this GroundTruth to the simulator.
        """
        path = Path(path)
        inertials = {link: (float(inertia.mass), np.array(inertia.lever), np.array(inertia.inertia))
                     for link, inertia in self.link_inertias(model).items() if inertia.mass > 0}
        values = self.joint_values(model)
        dynamics = {joint: {"damping": float(values["fv"][j]), "friction": float(values["fc"][j])}
                    for j, joint in enumerate(model.joints)}
        comments = [self.marker, f"<inertial> of the moved links perturbed, joint <dynamics damping friction> set; "
                    f"armature {self._joint_text(model, 'Ia')}, sensor noise {self._joint_text(model, 'noise')}, bias "
                    f"{self._joint_text(model, 'bias')} are not URDF elements"]
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False) as tmp:
            temporary = Path(tmp.name)
        try:
            warnings = write_updated_urdf(model, temporary, inertials, dynamics, comments=comments)
            if warnings:
                raise ConfigError(f"truth URDF not exact: {'; '.join(warnings)}")
            temporary.replace(path)
        finally:
            temporary.unlink(missing_ok=True)
        return path

    def _joint_text(self, model: RobotModel, key: str) -> str:
        return "[" + ", ".join(f"{v:.6g}" for v in self.joint_values(model)[key]) + "]"

    def urdf_text(self, model: RobotModel) -> str:
        """The truth URDF as text (see :meth:`write_urdf`)."""
        with tempfile.TemporaryDirectory(prefix="dynid_truth_") as tmp:
            return self.write_urdf(model, Path(tmp) / "truth.urdf").read_text()


def _perturbed(nominal: object, draws: np.ndarray, mass_std: float, com_std: float, inertia_std: float) -> object:
    """One link's inertia with mass, CoM and principal second moments perturbed by ``draws`` (7 normals)."""
    import pinocchio as pin

    lo, hi = FACTOR_RANGE
    mass = float(nominal.mass)
    if mass <= 0.0:
        return nominal
    mass_factor = float(np.clip(1.0 + mass_std * draws[0], lo, hi))
    com = np.array(nominal.lever) + com_std * draws[1:4]
    moments, axes = np.linalg.eigh(np.array(nominal.inertia))
    second = np.maximum(0.5 * moments.sum() - moments, 0.0)  # sigma_i >= 0 <=> triangle inequality
    second = second * np.clip(1.0 + inertia_std * draws[4:7], lo, hi) * mass_factor
    new_moments = second.sum() - second
    inertia = axes @ np.diag(new_moments) @ axes.T
    return pin.Inertia(mass * mass_factor, com, 0.5 * (inertia + inertia.T))


def _exact_draws(draws: np.ndarray) -> np.ndarray:
    """Draws that perturb a mass by exactly one std (random sign) and a CoM by exactly one std in norm."""
    out = draws.copy()
    out[0] = 1.0 if draws[0] >= 0 else -1.0
    out[1:4] = draws[1:4] / max(float(np.linalg.norm(draws[1:4])), 1e-12)
    return out


def _urdf_document(model: RobotModel) -> UrdfDocument:
    if model.urdf_xml is None:
        raise ConfigError("the simulator needs a URDF robot description, not a DH table")
    return read_urdf(model.urdf_xml, model.urdf_path or "the URDF")


def _number(value: object, name: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{name} must be a number, got {value!r}") from err


def _per_joint(value: object, name: str) -> PerJoint:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return tuple(_number(v, name) for v in value)
    return _number(value, name)


def per_joint_array(value: PerJoint, n: int, what: str) -> np.ndarray:
    """``value`` (one number, or one per joint) as an (n,) array; ConfigError naming ``what`` otherwise."""
    array = np.asarray(value, dtype=float)
    if array.ndim == 0:
        return np.full(n, float(array))
    if array.shape != (n,):
        raise ConfigError(f"{what} has {array.size} values for {n} joints")
    return array.copy()
