"""Robot descriptions for tests: the URDFs shipped by example-robot-data and the repo's DH tables."""

from __future__ import annotations

from pathlib import Path

from support.paths import FILES

DATA = FILES


def example_robot_prefix() -> Path:
    """The install prefix of the ``example-robot-data`` wheel (``share/example-robot-data``, ``share/ament_index``):
    what a ROS install of the package puts on ``AMENT_PREFIX_PATH``."""
    import sysconfig

    return Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix"


def example_robot_urdf(relative: str) -> Path:
    """Path of a URDF shipped as data by the ``example-robot-data`` wheel."""
    path = example_robot_prefix() / "share" / "example-robot-data" / "robots" / relative
    if not path.is_file():
        raise FileNotFoundError(f"{path} (install the test extras: pip install -e '.[test]')")
    return path


PANDA_ERD = "panda_description/urdf/panda.urdf"
UR5_ERD = "ur_description/urdf/ur5_robot.urdf"
PANDA_ARM_JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))
FRANKA_STATES = "/franka/joint_states"
"""franka_ros2's full-rate JointState topic (franka_bringup/launch/franka.launch.py remaps joint_state_broadcaster's
joint_states there): the topic the shipped Panda config's nodes and commands use (robot.driver franka_ros2)."""
