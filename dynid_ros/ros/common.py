"""What every dynid_ros node shares: its parameter schema, defaults from the robot config, ``main``.

Parameters of a node are declared from one schema (a tuple of :class:`Param`) that the launch-file
test also reads. A node's value comes, in this order, from an explicit ROS parameter (command line,
launch file, parameter file), else the ``nodes: <node_name>:`` section of the robot config named by
the ``config_file`` parameter (or ``config/<robot>.yaml`` for the ``robot`` parameter), else what the config
implies (:func:`config_implied_defaults`: the JointState topic of its driver), else the schema's default.
Values are coerced to the default's type, so ``rate_hz:=500`` works for a double.
"""

from __future__ import annotations

import json
import signal
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from dynid_ros.errors import ConfigError, DynidError
from dynid_ros.robot.collision import load_collision_model
from dynid_ros.robot.collision_model import CollisionModel
from dynid_ros.robot.config import load_config
from dynid_ros.robot.drivers import joint_states_topic
from dynid_ros.robot.model import RobotModel, load_model
from dynid_ros.robot.resources import find_file, robot_file
from dynid_ros.robot.workcell import CollisionSettings

if TYPE_CHECKING:
    from rclpy.node import Node


@dataclass(frozen=True)
class Param:
    """One ROS parameter: name, default (its type is the parameter's type) and description.

    ``read_only`` (the default): the node reads it once, at start, so ``ros2 param set`` is refused;
    ``low``/``high``: its range (inclusive), declared in the descriptor and checked by rclpy.
    """

    name: str
    default: object
    description: str
    read_only: bool = True
    low: float | None = None
    high: float | None = None

    def descriptor(self) -> object:
        """The rcl_interfaces/ParameterDescriptor: description, read_only, range (fields Humble has too)."""
        from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor

        descriptor = ParameterDescriptor(description=self.description, read_only=self.read_only,
                                         dynamic_typing=True)
        if self.low is not None or self.high is not None:
            if isinstance(self.default, int) and not isinstance(self.default, bool):
                descriptor.integer_range = [IntegerRange(from_value=int(self.low if self.low is not None else -2**62),
                                                         to_value=int(self.high if self.high is not None else 2**62),
                                                         step=0)]
            else:
                descriptor.floating_point_range = [FloatingPointRange(
                    from_value=float(self.low if self.low is not None else -1e300),
                    to_value=float(self.high if self.high is not None else 1e300), step=0.0)]
        return descriptor


CONFIG_PARAMS = (
    Param("robot", "", "robot name (panda, ur5e): use the shipped config/<robot>.yaml when config_file is empty"),
    Param("config_file", "", "robot config YAML; its 'nodes: <node name>:' section gives this node's defaults"),
)


def config_path(robot: str, config_file: str) -> Path | None:
    """The robot config file to read, or None."""
    if config_file:
        return Path(config_file)
    if robot:
        return robot_file(robot, "config")
    return None


def node_defaults(config: dict, node_name: str) -> dict:
    """The ``nodes: <node_name>:`` mapping of a loaded robot config ({} when absent)."""
    nodes = config.get("nodes") or {}
    if not isinstance(nodes, dict):
        raise ConfigError("config section 'nodes' must be a mapping of node name -> parameters")
    section = nodes.get(node_name) or {}
    if not isinstance(section, dict):
        raise ConfigError(f"config 'nodes: {node_name}:' must be a mapping of parameters")
    return section


JOINT_STATE_TOPIC_PARAMS = {"joint_states_topic": str, "topics": list}
"""Node parameters that name the robot's JointState topic (sim_node, excitation_node) or topics (recorder_node)."""


def config_implied_defaults(config: dict, schema: Sequence[Param]) -> dict:
    """Defaults a robot config implies for ``schema``'s parameters: the JointState topic of the robot
    (:func:`dynid_ros.robot.drivers.joint_states_topic`; a Franka's ``/franka/joint_states``) for the parameters of
    :data:`JOINT_STATE_TOPIC_PARAMS`, so that the simulator publishes, the excitation supervises on, the recorder
    records and the identification reads the same topic."""
    topic = joint_states_topic(config)
    return {param.name: [topic] if JOINT_STATE_TOPIC_PARAMS[param.name] is list else topic
            for param in schema if param.name in JOINT_STATE_TOPIC_PARAMS}


def coerce(param: Param, value: object) -> object:
    """``value`` converted to the type of ``param.default``."""
    default = param.default
    try:
        if value is None:
            return list(default) if isinstance(default, (list, tuple)) else default
        if isinstance(default, bool):
            if isinstance(value, str):
                return value.strip().lower() in ("1", "true", "yes", "on")
            return bool(value)
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
        if isinstance(default, str):
            return str(value)
        if isinstance(default, (list, tuple)):
            items = list(value) if isinstance(value, (list, tuple)) else [value]
            kind = type(default[0]) if default else None
            return [kind(v) for v in items] if kind else items
    except (TypeError, ValueError) as err:
        raise ConfigError(f"parameter {param.name}: cannot use {value!r} as {type(default).__name__}") from err
    return value


def declare_parameters(node: Node, schema: Sequence[Param]) -> dict:
    """Declare ``CONFIG_PARAMS`` and ``schema`` on ``node``; return {name: value} (explicit > the config's
    ``nodes:`` section > what the config implies > default).

    Raises:
        ConfigError: a value outside the parameter's range, or of the wrong type.
    """
    from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException

    def declare(param: Param, default: object) -> object:
        try:
            return node.declare_parameter(param.name, default, param.descriptor()).value
        except (InvalidParameterValueException, InvalidParameterTypeException) as err:
            raise ConfigError(f"parameter {param.name}: {err}") from err

    values = {p.name: coerce(p, declare(p, p.default)) for p in CONFIG_PARAMS}
    path = config_path(values["robot"], values["config_file"])
    config = load_config(path) if path is not None else {}
    defaults = node_defaults(config, node.get_name())
    known = {p.name for p in schema} | {p.name for p in CONFIG_PARAMS}
    unknown = sorted(set(defaults) - known)
    if unknown:
        raise ConfigError(f"{path}: nodes: {node.get_name()}: unknown parameter(s) {', '.join(unknown)}")
    defaults = {**config_implied_defaults(config, schema), **defaults}
    for param in schema:
        default = coerce(param, defaults.get(param.name, param.default))
        values[param.name] = coerce(param, declare(param, default))
    values["_config"] = config
    values["_config_path"] = path
    return values


def latched_qos() -> object:
    """Reliable, transient-local, depth 1: late subscribers get the last message."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def json_message(content: dict) -> object:
    """A ``std_msgs/String`` carrying ``content`` as JSON."""
    from std_msgs.msg import String

    return String(data=json.dumps(content))


def trigger_service(node: Node, name: str, handler: Callable[[], tuple[bool, str]],
                    callback_group: object | None = None) -> object:
    """A ``std_srvs/Trigger`` service ``name`` answered by ``handler() -> (success, message)``."""
    from std_srvs.srv import Trigger

    def answer(request: object, response: object) -> object:
        response.success, response.message = handler()
        return response

    return node.create_service(Trigger, name, answer, callback_group=callback_group)


def run(make_node: Callable[[], Node], args: list[str] | None = None, multithreaded: bool = False) -> int:
    """``main`` of a node (ros2/demos' pattern): init, spin until Ctrl-C or shutdown, destroy, ``try_shutdown``.

    SIGINT (Ctrl-C) and SIGTERM (``ros2 launch`` escalating) end the spinning through a flag, not
    rclpy's handler, which would shut the context down under running callbacks (``RCLError: the given
    context is not valid``) and before the node can act: ``destroy_node`` runs with a valid context, so
    a node can still stop its motion (send a cancel and wait for the answer) or close its bag. Exit 0.
    The flag is set up before ``rclpy.init`` (a Ctrl-C while ROS starts ends the node cleanly too), and once
    the node is destroyed both signals are ignored: Python's exit restores their default action (death by
    the signal) for the time it tears its modules down, and ``ros2 launch`` sends its own SIGINT to every
    process right after the terminal's, which then killed a node that had already closed everything (-2).
    A DynidError while constructing the node (bad parameter, file) is logged on one line; exit code 2.
    A node that shut the context down itself (its job done) exits with its ``exit_code`` attribute (0 if none).
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    interrupted = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):  # a flag, not KeyboardInterrupt inside rclpy's C++ calls
        signal.signal(number, lambda *_: interrupted.set())
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = executor = None
    code = 0
    try:
        node = make_node()
        executor = MultiThreadedExecutor(num_threads=4) if multithreaded else SingleThreadedExecutor()
        executor.add_node(node)
        while rclpy.ok() and not interrupted.is_set():
            executor.spin_once(timeout_sec=0.1)
        code = int(getattr(node, "exit_code", 0))
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except DynidError as err:
        rclpy.logging.get_logger("dynid_ros").error(str(err))
        code = 2
    finally:
        if node is not None:
            node.destroy_node()
        if executor is not None:  # its guard condition goes before the context (rclpy 7.1.6's Executor.__del__
            executor.shutdown()  # destroys it, then too late: "Exception ignored ... InvalidHandle" at exit)
        rclpy.try_shutdown()
        for number in (signal.SIGINT, signal.SIGTERM):  # done: a late Ctrl-C must not kill the exit (see above)
            signal.signal(number, signal.SIG_IGN)
    return code


def resolve_file(path: str, what: str, config: str | Path | None = None) -> Path:
    """An existing file a parameter names (:func:`dynid_ros.robot.resources.find_file`)."""
    return find_file(path, what, config)


ROBOT_DESCRIPTION_PARAMS = (
    Param("xacro_args", [], "arguments name:=value of a urdf_path that is a .urdf.xacro"),
    Param("robot_description_topic", "", "topic (std_msgs/String, transient local) to read the URDF from when "
          "robot_description and urdf_path are empty ('': /robot_description when the config names no URDF either)"),
    Param("robot_description_timeout", 10.0, "seconds to wait for a message on robot_description_topic", low=0.0),
)
"""Where a node's robot description comes from, besides ``urdf_path`` and ``robot_description``."""


COLLISION_PARAMS = (
    Param("collision.self", "", "check the robot's links against each other: true | false ('': the config's "
          "collision.self, else true)"),
    Param("collision.srdf", "", "SRDF whose <disable_collisions> pairs are not checked ('': the config's "
          "collision.srdf, else pairs touching at the start pose)"),
    Param("collision.margin", -1.0, "clearance kept from the robot's links and the workcell [m] (negative: the "
          "config's collision.margin, else 0.02)"),
    Param("collision.environment", "", "the workcell as YAML, e.g. '[{type: plane}, {type: box, size: [0.4, 0.4, "
          "0.3], xyz: [0.6, 0, 0.15]}]' ('': the config's collision.environment, else the table z = 0; '[]': none)"),
    Param("package_dirs", [""], "folders where package:// meshes of the collision geometry are looked up first "
          "(then AMENT_PREFIX_PATH, ROS_PACKAGE_PATH, the URDF's folder)"),
)
"""The collision model a node checks motions with: the config's ``collision:`` section, overridden key by key."""


def node_collision(params: dict, model: RobotModel) -> CollisionModel | None:
    """The collision model of ``model`` from the config's ``collision:`` section and the node's ``collision.*``
    parameters (:data:`COLLISION_PARAMS`) that are set."""
    return load_collision_model(model, node_collision_settings(params))


def node_collision_settings(params: dict) -> CollisionSettings:
    """The config's ``collision:`` section overridden by the node's ``collision.*`` parameters that are set
    (:data:`COLLISION_PARAMS`), as settings."""
    section = dict(params["_config"].get("collision") or {})
    flag = str(params.get("collision.self", "")).strip().lower()
    if flag:
        if flag not in ("true", "false"):
            raise ConfigError(f"parameter collision.self: expected true or false, got {flag!r}")
        section["self"] = flag == "true"
    if params.get("collision.srdf"):
        section["srdf"] = params["collision.srdf"]
    if params.get("collision.margin", -1.0) >= 0:
        section["margin"] = params["collision.margin"]
    if str(params.get("collision.environment", "")).strip():
        try:
            section["environment"] = yaml.safe_load(params["collision.environment"])
        except yaml.YAMLError as err:
            raise ConfigError(f"parameter collision.environment: not YAML: {str(err).splitlines()[0]}") from err
    dirs = [d for d in params.get("package_dirs") or () if str(d).strip()]
    return CollisionSettings.from_config(section, config_path=params.get("_config_path"), package_dirs=dirs)


def xacro_args(params: dict) -> list[str]:
    """The node's ``xacro_args`` (``name:=value`` strings) without empty entries."""
    return [str(a) for a in params.get("xacro_args") or () if str(a).strip()]


DEFAULT_ROBOT_DESCRIPTION_TOPIC = "/robot_description"
"""Where ros2_control-based robots publish their URDF (robot_state_publisher, transient local)."""


def robot_urdf(params: dict, node: Node | None = None) -> Path:
    """The URDF file of the robot from, in this order: ``robot_description``, ``urdf_path``, a message on
    ``robot_description_topic``, the config's ``robot.urdf``, else a message on ``/robot_description``
    (as ROS users expect); the URDF may have meshes (they are not read)."""
    text = params["robot_description"]
    topic = params.get("robot_description_topic", "")
    from_config = (params["_config"].get("robot") or {}).get("urdf", "")
    if not text and not params["urdf_path"] and not topic and not from_config and node is not None:
        topic = DEFAULT_ROBOT_DESCRIPTION_TOPIC
    if not text and not params["urdf_path"] and topic and node is not None:
        text = _description_from_topic(node, topic, float(params.get("robot_description_timeout", 10.0)))
    if text:
        load_model(urdf="robot_description", urdf_text=text)  # a clear one-line error now, not at first use
        handle = tempfile.NamedTemporaryFile("w", suffix=".urdf", prefix="dynid_robot_", delete=False)
        with handle:
            handle.write(text)
        return Path(handle.name)
    if params["urdf_path"]:
        return resolve_file(params["urdf_path"], "urdf_path")
    if not from_config:
        raise ConfigError("no robot: set urdf_path, robot_description, robot_description_topic, robot or "
                          "config_file")
    return resolve_file(from_config, "robot.urdf", params["_config_path"])


def robot_source(params: dict, urdf: Path) -> str:
    """How errors name the robot: ``robot_description`` when its URDF came as text (parameter or topic)."""
    described = params["robot_description"] or (not params["urdf_path"] and params.get("robot_description_topic"))
    return "robot_description" if described or urdf.name.startswith("dynid_robot_") else str(urdf)


def _description_from_topic(node: Node, topic: str, timeout: float) -> str:
    """The URDF text of the first (latched) ``std_msgs/String`` on ``topic``."""
    from rclpy.wait_for_message import wait_for_message
    from std_msgs.msg import String

    received, message = wait_for_message(String, node, topic, qos_profile=latched_qos(), time_to_wait=timeout)
    if not received or not message.data.strip():
        hint = (" (the default robot source: set urdf_path, robot_description, robot or config_file otherwise)"
                if topic == DEFAULT_ROBOT_DESCRIPTION_TOPIC else "")
        raise ConfigError(f"no robot description on {topic} within {timeout:g} s{hint}")
    return message.data
