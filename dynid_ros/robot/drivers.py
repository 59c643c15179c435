"""What the arm vendors' ROS 2 drivers publish: the driver profiles a config names (``robot: driver: <name>``).

Each profile is read from the driver's own launch and controllers files (Jazzy):

- ``franka_ros2`` (franka_bringup/launch/franka.launch.py): ``ros2_control_node`` runs with its ``joint_states``
  remapped to ``franka/joint_states``, where joint_state_broadcaster publishes at the controller manager's 1 kHz;
  ``/joint_states`` is joint_state_publisher's merge of it with the gripper at ``rate: 30``, stamped by that node;
  efforts are the measured joint torques [N m].
- ``ur_robot_driver`` (Universal_Robots_ROS2_Driver, ur_robot_driver/config/ur_controllers.yaml):
  joint_state_broadcaster on ``/joint_states`` at the controller manager's rate (500 Hz e-series, 125 Hz CB3);
  effort is the motor current [A] (``actual_current``); the driver starts ``scaled_joint_trajectory_controller``.
- ``ros2_kortex`` (Kinova Gen3, kortex_description's ros2_controllers.yaml): joint_state_broadcaster on
  ``/joint_states`` at 1 kHz; efforts are the joint torque sensors' [N m]; ``joint_trajectory_controller``.

A robot whose config names no driver is recognised by its joint names where a driver names them its own way
(``panda_joint1``, ``fr3_joint1``: franka_ros2).

The JointState topic of a config (:func:`joint_states_topic`) is the one every node and command uses by default:
the simulator publishes it, the excitation supervises on it, the recorder records it, the identification reads it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dynid_ros.errors import ConfigError


@dataclass(frozen=True)
class DriverProfile:
    """One driver: the JointState topic it publishes at full rate (``joint_states_topic``, ``rate_hz``), the lower
    rate topic it also offers where it has one (``merged_topic``), the unit of its efforts (``N m`` | ``A``), the
    trajectory controller it starts, the joint-name prefixes that recognise it."""

    name: str
    joint_states_topic: str
    rate_hz: float
    effort_unit: str
    controller_name: str
    merged_topic: str = ""
    joint_prefixes: tuple[str, ...] = ()

    def full_rate_hint(self) -> str:
        """``/franka/joint_states (franka_ros2's 1 kHz joint_state_broadcaster)``."""
        rate = f"{self.rate_hz / 1000:g} kHz" if self.rate_hz >= 1000 else f"{self.rate_hz:g} Hz"
        return f"{self.joint_states_topic} ({self.name}'s {rate} joint_state_broadcaster)"


DRIVERS = {profile.name: profile for profile in (
    DriverProfile("franka_ros2", "/franka/joint_states", 1000.0, "N m", "fr3_arm_controller",
                  merged_topic="/joint_states", joint_prefixes=("panda_joint", "fr3_joint")),
    DriverProfile("ur_robot_driver", "/joint_states", 500.0, "A", "scaled_joint_trajectory_controller"),
    DriverProfile("ros2_kortex", "/joint_states", 1000.0, "N m", "joint_trajectory_controller"),
)}
"""The known drivers by name (the config's ``robot: driver:``)."""


def driver_profile(name: str = "", joints: Iterable[str] = ()) -> DriverProfile | None:
    """The profile of driver ``name``; without a name, the driver recognised by ``joints`` (None: not known).

    Raises:
        ConfigError: ``name`` is not a known driver.
    """
    if name:
        if name not in DRIVERS:
            raise ConfigError(f"robot.driver {name!r} is not a known driver ({', '.join(DRIVERS)})")
        return DRIVERS[name]
    names = [str(joint) for joint in joints]
    return next((profile for profile in DRIVERS.values()
                 if any(joint.startswith(profile.joint_prefixes) for joint in names) and profile.joint_prefixes), None)


DEFAULT_JOINT_STATES_TOPIC = "/joint_states"
"""The JointState topic of a robot whose config names neither a topic nor a driver."""


def joint_states_topic(config: dict | None) -> str:
    """The JointState topic of a loaded robot config: its ``identification: topic:`` when set, else the full-rate
    topic of the driver it names (``robot: driver:``; franka_ros2: ``/franka/joint_states``), else
    ``/joint_states``. A driver recognised only by the joint names does not choose it: the same joints in a
    simulator or another driver publish ``/joint_states``.

    Raises:
        ConfigError: the config names an unknown driver.
    """
    config = config or {}
    topic = str(((config.get("identification") or {}).get("topic")) or "")
    if topic:
        return topic
    named = str(((config.get("robot") or {}).get("driver")) or "")
    return driver_profile(named).joint_states_topic if named else DEFAULT_JOINT_STATES_TOPIC


def named_effort_unit(config: dict | None) -> str:
    """The unit of the effort the config's named driver publishes (``robot: driver:``; ur_robot_driver: ``A``), the
    default of ``identification: effort_unit``; ``N m`` when no driver is named (a simulator, gz_ros2_control and
    franka_ros2 publish joint torque). Like the topic, a driver recognised only by joint names does not choose it.

    Raises:
        ConfigError: the config names an unknown driver.
    """
    named = str((((config or {}).get("robot") or {}).get("driver")) or "")
    return driver_profile(named).effort_unit if named else "N m"


def driver_defaults(config: dict | None) -> dict[str, str]:
    """What a loaded robot config's driver decides for an identification unless it is given: the JointState
    ``topic`` (:func:`joint_states_topic`) and the ``effort_unit`` (:func:`named_effort_unit`), as keywords of
    :func:`dynid_ros.identification.options.identification_options`."""
    return {"topic": joint_states_topic(config), "effort_unit": named_effort_unit(config)}


def config_driver(config: dict | None, joints: Iterable[str] = ()) -> DriverProfile | None:
    """The driver of a loaded robot config (``robot: driver:``), else recognised by ``joints`` or the config's
    ``robot: joints:``."""
    robot = (config or {}).get("robot") or {}
    return driver_profile(str(robot.get("driver") or ""), [*joints, *(robot.get("joints") or [])])
