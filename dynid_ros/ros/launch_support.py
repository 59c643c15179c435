"""Plain-Python helpers of the launch files in ``launch/`` (no ``launch`` import, so they are tested here).

:func:`given` drops launch arguments left empty, so a node falls back to its config file and
defaults; :func:`run_directory` names a fresh directory per run; :func:`gazebo_urdf` adds what
gz_ros2_control needs to a URDF (a ``<ros2_control>`` block with position commands and
position/velocity/effort states, the ``gz_ros2_control-system`` plugin with the controllers file,
and a fixed joint to the world).
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path

from dynid_ros.errors import ModelError


def given(parameters: Mapping[str, object]) -> dict:
    """The parameters whose value is not an empty string (empty launch arguments mean "default")."""
    return {name: value for name, value in parameters.items() if value != ""}


def run_directory(root: str = "dynid_runs") -> Path:
    """``<root>/<date>_<time>``: where one launch puts its bag and result."""
    return Path(root) / time.strftime("%Y%m%d_%H%M%S")


def as_bool(text: str) -> bool:
    return str(text).strip().lower() in ("1", "true", "yes", "on")


def gazebo_urdf(urdf_text: str, joints: Sequence[str], controllers_file: str | Path,
                initial_positions: Sequence[float] | None = None) -> str:
    """``urdf_text`` made ready for Gazebo (gz sim) with gz_ros2_control.

    Each of ``joints`` gets a position command interface and position, velocity and effort state
    interfaces (effort is the joint force Gazebo reports; unreliable before gz_ros2_control's 2025
    fix, see the README). The root link is fixed to ``world``.
    """
    try:
        root = ET.fromstring(urdf_text)
    except ET.ParseError as err:
        raise ModelError(f"robot description is not valid XML: {err}") from err
    if root.tag != "robot":
        raise ModelError("robot description: the root element must be <robot>")
    known = {j.get("name") for j in root.findall("joint")}
    missing = [j for j in joints if j not in known]
    if missing:
        raise ModelError(f"robot description has no joint(s) {', '.join(missing)}")
    for old in root.findall("ros2_control"):
        root.remove(old)
    children = {j.find("child").get("link") for j in root.findall("joint") if j.find("child") is not None}
    roots = [link.get("name") for link in root.findall("link") if link.get("name") not in children]
    if "world" not in roots:
        ET.SubElement(root, "link", name="world")
        fixed = ET.SubElement(root, "joint", name="world_fixed", type="fixed")
        ET.SubElement(fixed, "parent", link="world")
        ET.SubElement(fixed, "child", link=roots[0])
    control = ET.SubElement(root, "ros2_control", name="GazeboSimSystem", type="system")
    hardware = ET.SubElement(control, "hardware")
    ET.SubElement(hardware, "plugin").text = "gz_ros2_control/GazeboSimSystem"
    initial = list(initial_positions) if initial_positions is not None else [0.0] * len(joints)
    for name, q0 in zip(joints, initial):
        joint = ET.SubElement(control, "joint", name=name)
        ET.SubElement(joint, "command_interface", name="position")
        position = ET.SubElement(joint, "state_interface", name="position")
        ET.SubElement(position, "param", name="initial_value").text = f"{q0:.6f}"
        ET.SubElement(joint, "state_interface", name="velocity")
        ET.SubElement(joint, "state_interface", name="effort")
    gazebo = ET.SubElement(root, "gazebo")
    plugin = ET.SubElement(gazebo, "plugin", filename="gz_ros2_control-system",
                           name="gz_ros2_control::GazeboSimROS2ControlPlugin")
    ET.SubElement(plugin, "parameters").text = str(controllers_file)
    return ET.tostring(root, encoding="unicode")
