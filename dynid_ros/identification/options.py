"""The options of one identification, :class:`IdentificationOptions`, and the one way they are built.

A config file's ``identification:`` section, the ``dynid identify`` flags and the identification node's
parameters all describe the same options with the same names. :func:`identification_options` merges them:
explicit values (flags or parameters; ``None`` = not given) over the config section over the defaults.
The CLI passes its parsed flags, the node passes :func:`parameter_overrides` of its parameters, so both
get exactly the same options from the same inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dynid_ros.dynamics.feasibility import CONSISTENCIES, SOLVERS
from dynid_ros.errors import ConfigError
from dynid_ros.estimation.hyperparameters import given_scales
from dynid_ros.estimation.method import METHODS
from dynid_ros.identification.effort_unit import TORQUE, effort_unit
from dynid_ros.robot.parameters import FRICTION_TERMS, parse_friction

PRIORS = ("nominal", "none")
"""``--prior``: the nominal URDF as a prior, or none."""
SIMPLE_KEYS = ("joints", "friction", "armature", "method", "consistency", "solver", "topic", "effort_scale", "prior",
               "strict", "unmodelled_load", "effort_unit", "hyperparameters", "effort_gains")
"""Options given by the same name as a flag, a node parameter or a key of the config's ``identification:``."""
PBPR_KEYS = ("objective", "starts")
"""Keys of the config's ``pbpr:`` mapping that also exist as flags ``--pbpr-<key>`` (parameters ``pbpr_<key>``)."""


@dataclass
class IdentificationOptions:
    """Options of one identification; defaults suit a real robot (Sousa & Cortesão 2014 eq. 27 friction,
    armature, FBPE with full physical consistency, the nominal URDF as a prior).

    ``prior_tolerance``: the ``prior_tolerance:`` mapping (:class:`dynid_ros.estimation.prior.PriorTolerances`);
    ``strict``: fail when any base parameter is not identified instead of keeping it at the prior."""

    joints: list[str] | None = None
    friction: tuple[str, ...] = FRICTION_TERMS
    armature: bool = True
    method: str = "fbpe"
    consistency: str = "full"
    solver: str = "clarabel"
    topic: str = "/joint_states"
    topic_given: bool = True
    """Whether ``topic`` was named (a flag, a parameter, the config's ``identification: topic``); when it was only
    the default (the robot's driver's topic, else ``/joint_states``), a bag without it whose one JointState topic is
    another is read from that one, with a note (:func:`dynid_ros.identification.identify.bag_topic`)."""
    start: float | None = None
    end: float | None = None
    effort_scale: list[float] | None = None
    effort_unit: str = TORQUE
    """What the recorded effort is: ``N m`` (joint torque) or ``A`` (motor current, which needs ``effort_scale``
    or ``--effort-scale-file``; :mod:`dynid_ros.identification.effort_unit`)."""
    prior: str = "nominal"
    bounds: dict = field(default_factory=dict)
    processing: dict = field(default_factory=dict)
    prior_tolerance: dict = field(default_factory=dict)
    strict: bool = False
    pbpr: dict = field(default_factory=dict)
    unmodelled_load: bool = True
    """Model a tool or payload the URDF lacks as an extra body on the last link (estimation.unmodelled_load)."""
    hyperparameters: str = "evidence"
    """``hyperparameters:``: FBPE's prior scales per group and noise per joint chosen by the evidence (``evidence``,
    the default, :mod:`dynid_ros.estimation.hyperparameters`) or the stated tolerances and the residual variance
    (``stated``). Runs compared for drift share the scales (``hyperparameter_scales``): chosen per run, they moved
    link 2's mass to link 3 when a 0.5 kg payload came on (1.52 -> 0.78 kg, the mass scale x0.26 -> x1.92,
    test/fleet/test_drift.py), so ``dynid batch`` gives its bags the first bag's and ``dynid drift`` refuses runs
    that do not share them."""
    effort_gains: str = "auto"
    """``effort_gains:``: each joint's torque per unit of recorded effort estimated with the parameters and used where
    the data demand it and it predicts better (``auto``, :mod:`dynid_ros.estimation.effort_gains`), or the effort
    taken as recorded (``off``). FBPE with the nominal prior only (the prior fixes the gains' common scale)."""
    hyperparameter_scales: dict[str, float] | None = None
    """``hyperparameter_scales:`` the prior's scale per group given (``mass``, ``com``, ``inertia``, ``joint``, each
    times the stated tolerance) instead of chosen: the evidence then chooses the noise per joint only and the wide-prior
    check is not made. Runs compared for drift share them (``dynid batch`` gives every bag its reference bag's, see
    :mod:`dynid_ros.fleet.batch`); None: chosen per ``hyperparameters``."""
    position_torque: str | list[str] = "auto"
    """``model: position_torque``: a per-joint position-dependent torque (spring, cable) where cross-validation
    shows one (``auto``), never (``off``), or on the named joints (identification.position_torque_selection)."""

    def __post_init__(self) -> None:
        """The friction terms in their canonical order and the position-term setting checked, however given."""
        self.friction = parse_friction(self.friction)
        self.effort_unit = effort_unit(self.effort_unit)
        self.position_torque = position_torque_setting(self.position_torque)

    def check(self) -> None:
        """Raise ConfigError for an invalid choice; changes nothing."""
        for name, value, choices in (("method", self.method, METHODS), ("consistency", self.consistency, CONSISTENCIES),
                                     ("solver", self.solver, SOLVERS), ("prior", self.prior, ("nominal", "none")),
                                     ("hyperparameters", self.hyperparameters, HYPERPARAMETERS),
                                     ("effort-gains", self.effort_gains, EFFORT_GAINS)):
            if value not in choices:
                raise ConfigError(f"--{name} must be one of {', '.join(choices)}, not {value!r}")
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ConfigError(f"--end ({self.end}) must be after --start ({self.start})")



HYPERPARAMETERS = ("evidence", "stated")
"""``identification: hyperparameters:`` choices (:class:`IdentificationOptions`)."""
EFFORT_GAINS = ("auto", "off")
"""``identification: effort_gains:`` choices (:class:`IdentificationOptions`)."""
POSITION_TORQUE_CHOICES = ("auto", "off")
"""Values of ``model: position_torque`` besides a list of joint names."""


def position_torque_setting(value: object, joints: tuple[str, ...] | list[str] | None = None) -> str | list[str]:
    """The checked ``model: position_torque`` option: ``auto``, ``off``, or a list of joint names (of ``joints``,
    when given)."""
    if value is None:
        return "auto"
    if isinstance(value, str):
        if value not in POSITION_TORQUE_CHOICES:
            raise ConfigError(f"model.position_torque must be auto, off or a list of joint names, not {value!r}")
        return value
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"model.position_torque must be auto, off or a list of joint names, not {value!r}")
    unknown = [v for v in value if joints is not None and v not in joints]
    if unknown:
        raise ConfigError(f"model.position_torque: joint(s) {', '.join(unknown)} are not identified joints "
                          f"({', '.join(joints)})")
    return list(value)


def identification_options(config: Mapping[str, object] | None,
                           overrides: Mapping[str, object] | None = None, *,
                           topic: str = "/joint_states", effort_unit: str = TORQUE) -> IdentificationOptions:
    """The options of one identification: ``overrides`` (flags or node parameters; absent or ``None`` = not
    given) over ``config`` (the ``identification:`` section of a robot config) over the defaults; ``topic``,
    ``effort_unit``: the defaults the robot config's driver decides (:func:`dynid_ros.robot.drivers.driver_defaults`:
    a Franka's ``/franka/joint_states``, a UR's motor current ``A``).

    Keys of ``overrides``: :data:`SIMPLE_KEYS`, ``start``, ``end``, ``total_mass`` ([lo, hi] kg, into
    ``bounds``) and ``pbpr_objective``, ``pbpr_starts``. The result is checked (:meth:`IdentificationOptions.check`).
    """
    config = dict(config or {})
    given = {key: value for key, value in (overrides or {}).items() if value is not None}
    defaults = IdentificationOptions(topic=topic, effort_unit=effort_unit)
    chosen = {key: given.get(key, config.get(key, getattr(defaults, key))) for key in SIMPLE_KEYS}
    bounds = dict(config.get("bounds") or {})
    if "total_mass" in given:
        bounds["total_mass"] = list(given["total_mass"])
    pbpr = dict(config.get("pbpr") or {})
    pbpr.update({key: given[f"pbpr_{key}"] for key in PBPR_KEYS if f"pbpr_{key}" in given})
    options = IdentificationOptions(
        **chosen, start=given.get("start"), end=given.get("end"), bounds=bounds,
        processing=dict(config.get("processing") or {}), prior_tolerance=dict(config.get("prior_tolerance") or {}),
        pbpr=pbpr, position_torque=dict(config.get("model") or {}).get("position_torque", defaults.position_torque))
    options.topic_given = "topic" in given or bool(config.get("topic"))
    options.armature, options.strict = bool(options.armature), bool(options.strict)
    options.unmodelled_load = bool(options.unmodelled_load)
    scales = given.get("hyperparameter_scales", config.get("hyperparameter_scales"))
    options.hyperparameter_scales = None if scales is None else given_scales(scale_mapping(scales))
    options.check()
    return options


def scale_mapping(value: object) -> Mapping[str, object]:
    """``hyperparameter_scales`` as a mapping: a mapping as is, or the text ``mass=1.1,com=0.9,inertia=0.3,joint=0.2``
    (a flag, a node parameter); ConfigError naming the problem."""
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str):
        pairs = [item.split("=", 1) for item in value.split(",") if item.strip()]
        if pairs and all(len(p) == 2 for p in pairs):
            return {k.strip(): v.strip() for k, v in pairs}
    raise ConfigError(f"hyperparameter_scales must be mass=S,com=S,inertia=S,joint=S (or a result directory to take "
                      f"them from), not {value!r}")


def parameter_overrides(parameters: Mapping[str, object]) -> dict[str, object]:
    """Overrides from ROS parameters, where an empty string or list means "not set" and a negative ``start``
    or ``end`` means "from the beginning" / "to the end"; ``armature`` is the string ``true`` or ``false``."""

    def given(value: object) -> object:
        return None if value in ("", [], (), None) else value

    overrides = {key: given(parameters.get(key)) for key in (*SIMPLE_KEYS, "total_mass", "hyperparameter_scales")}
    armature = str(parameters.get("armature") or "").strip().lower()
    overrides["armature"] = None if not armature else armature in ("true", "1", "yes")
    overrides["strict"] = None
    for key in ("start", "end"):
        value = parameters.get(key)
        overrides[key] = None if value is None or float(value) < 0 else float(value)
    for key in ("effort_scale", "total_mass"):
        if overrides[key] is not None:
            overrides[key] = [float(v) for v in overrides[key]]
    return overrides


def recorded_options(recorded: Mapping[str, object], start: float | None = None,
                     end: float | None = None) -> IdentificationOptions:
    """The options a result was identified with, as far as they shape its model and its data (friction terms,
    armature, effort scale), from its ``parameters.yaml`` ``options``; ``start``, ``end``: a new window (validation,
    a payload run)."""
    options = IdentificationOptions(friction=tuple(recorded["friction"]), armature=bool(recorded["armature"]),
                                    start=start, end=end, effort_scale=recorded.get("effort_scale"))
    options.check()
    return options
