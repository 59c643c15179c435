"""Driver profiles: what the vendors' drivers publish, named by a config or told by the joint names."""

from __future__ import annotations

import pytest

from dynid_ros.errors import ConfigError
from dynid_ros.robot.config import load_config
from dynid_ros.robot.drivers import DRIVERS, config_driver, driver_profile
from dynid_ros.robot.resources import robot_file


def test_the_franka_driver_is_named_by_the_panda_config_and_told_by_franka_joint_names():
    franka = DRIVERS["franka_ros2"]
    assert franka.joint_states_topic == "/franka/joint_states" and franka.merged_topic == "/joint_states"
    assert config_driver(load_config(robot_file("panda", "config"))) is franka
    assert driver_profile("", [f"fr3_joint{i}" for i in range(1, 8)]) is franka
    assert driver_profile("", ["shoulder_pan_joint", "elbow_joint"]) is None  # UR names tell no driver
    assert config_driver({"robot": {"driver": "ur_robot_driver"}}).effort_unit == "A"


def test_an_unknown_driver_is_refused_naming_the_known_ones():
    with pytest.raises(ConfigError, match="robot.driver 'franka' is not a known driver .*franka_ros2"):
        config_driver({"robot": {"driver": "franka"}})
