"""The small serial arms of the tests, as URDF text: one geometry (a base yaw, a shoulder pitch, an elbow, a wrist),
two sets of links, joint limits per use.

``serial_arm("wrist_arm", WRIST_LINKS, limits=...)``: four joints j1-j4 on links l1-l4 (the payload, gains, F/T and
coupling tests); ``serial_arm("fleet_arm", FLEET_LINKS, ...)``: three joints j1-j3 on l1-l3 (the fleet tests, the mimic
arm). ``extra``: URDF text inserted before ``</robot>`` (a payload, a sensor frame).
"""

from __future__ import annotations

WRIST_LINKS = (
    ("3.0", "0 0.01 0.1", 'ixx="0.03" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.01"'),
    ("2.0", "0.15 0 0.01", 'ixx="0.005" ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.03"'),
    ("0.8", "0.05 0.01 0", 'ixx="0.002" ixy="0" ixz="0.0003" iyy="0.004" iyz="0" izz="0.004"'),
    ("0.6", "0.0 0.02 0.06", 'ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0.0002" izz="0.001"'),
)
"""(mass [kg], CoM [m], inertia about the CoM [kg m^2]) of l1-l4 of the four-joint arm."""
FLEET_LINKS = (
    ("2.0", "0 0.01 0.1", 'ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.01"'),
    ("1.5", "0.15 0 0.01", 'ixx="0.005" ixy="0.001" ixz="0" iyy="0.02" iyz="0" izz="0.02"'),
    ("0.8", "0.1 0.02 0", 'ixx="0.002" ixy="0" ixz="0.0005" iyy="0.006" iyz="0" izz="0.006"'),
)
"""The same for l1-l3 of the three-joint arm."""
JOINT_ORIGINS = ('xyz="0 0 0.1"', 'xyz="0 0 0.2" rpy="1.5707963267948966 0 0"', 'xyz="0.3 0 0"',
                 'xyz="0.1 0 0" rpy="0 1.5707963267948966 0"')
"""Origin of joint j(k+1) in its parent link: yaw at the base, pitch, elbow, wrist."""


def links_xml(links: tuple) -> str:
    """The ``<link>`` elements ``base``, ``l1``, ... of ``links`` (to build other joint trees on them)."""
    text = ['  <link name="base"/>']
    for k, (mass, com, inertia) in enumerate(links, start=1):
        text.append(f'  <link name="l{k}"><inertial><origin xyz="{com}"/><mass value="{mass}"/>\n'
                    f'    <inertia {inertia}/></inertial></link>')
    return "\n".join(text) + "\n"


def serial_arm(name: str, links: tuple, limits: list[tuple[float, float, float, float]], extra: str = "",
               joint_tags: dict[int, str] | None = None) -> str:
    """The URDF of a serial arm with ``links`` and, per joint, ``(lower, upper, effort, velocity)`` ``limits``;
    ``joint_tags``: extra XML inside joint k's element (0-based, e.g. a ``<mimic>``)."""
    text = ['<?xml version="1.0"?>', f'<robot name="{name}">', links_xml(links).rstrip("\n")]
    for k, (lower, upper, effort, velocity) in enumerate(limits):
        parent = "base" if k == 0 else f"l{k}"
        tag = (joint_tags or {}).get(k, "")
        text.append(f'  <joint name="j{k + 1}" type="revolute"><parent link="{parent}"/><child link="l{k + 1}"/>\n'
                    f'    <origin {JOINT_ORIGINS[k]}/>\n'
                    f'    <axis xyz="0 0 1"/><limit lower="{lower:g}" upper="{upper:g}" effort="{effort:g}" '
                    f'velocity="{velocity:g}"/>{tag}</joint>')
    return "\n".join(text) + "\n" + extra + "</robot>\n"


_LINKS = links_xml(FLEET_LINKS)
MIDDLE_FOLLOWER = f"""<?xml version="1.0"?>
<robot name="middle_follower">
{_LINKS}  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="50" velocity="2"/></joint>
  <joint name="j2" type="prismatic"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0 0.2" rpy="1.5707963267948966 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-0.2" upper="0.2" effort="50" velocity="2"/>
    <mimic joint="j1" multiplier="-0.1" offset="0.05"/></joint>
  <joint name="j3" type="continuous"><parent link="l2"/><child link="l3"/><origin xyz="0.3 0 0"/>
    <axis xyz="0 1 0"/><limit effort="20" velocity="3"/></joint>
</robot>
"""
"""A prismatic mimic follower (j2) between a revolute leader (j1) and a continuous joint (j3)."""
