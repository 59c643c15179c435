"""Driver profiles: what the vendors' drivers publish, named by a config or told by the joint names."""

from __future__ import annotations

import pytest

from dynid_ros.errors import ConfigError
from dynid_ros.identification.options import identification_options
from dynid_ros.robot.config import load_config
from dynid_ros.robot.drivers import DRIVERS, config_driver, driver_defaults, driver_profile, joint_states_topic
from dynid_ros.robot.resources import robot_file
from dynid_ros.ros.common import Param, config_implied_defaults, node_defaults

SCHEMA = (Param("topics", ["/joint_states"], "recorder_node's"), Param("joint_states_topic", "/joint_states",
                                                                       "sim_node's, excitation_node's"),
          Param("rate_hz", 1000.0, "not a topic"))


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


@pytest.mark.parametrize(("config", "topic"), [
    ({"robot": {"driver": "franka_ros2"}}, "/franka/joint_states"),  # the 1 kHz broadcaster, not the 30 Hz merge
    ({"robot": {"driver": "ur_robot_driver"}}, "/joint_states"),
    ({"robot": {"driver": "ros2_kortex"}}, "/joint_states"),
    ({"robot": {"joints": ["panda_joint1"]}}, "/joint_states"),  # told by the names only: a simulator's topic
    ({"robot": {"driver": "franka_ros2"}, "identification": {"topic": "/arm/joint_states"}}, "/arm/joint_states"),
    ({}, "/joint_states"),
])
def test_the_joint_state_topic_of_a_config_is_its_drivers_full_rate_topic(config, topic):
    assert joint_states_topic(config) == topic


def test_the_shipped_panda_config_records_identifies_and_simulates_frankas_full_rate_topic():
    """Every node and command of a Panda run uses /franka/joint_states: the recorder records it, sim_node publishes
    it, excitation_node supervises on it, identify reads it (franka_ros2's franka.launch.py remaps the 1 kHz
    joint_state_broadcaster there; /joint_states is joint_state_publisher's 30 Hz merge)."""
    config = load_config(robot_file("panda", "config"))
    implied = config_implied_defaults(config, SCHEMA)
    assert implied == {"topics": ["/franka/joint_states"], "joint_states_topic": "/franka/joint_states"}
    for node in ("recorder_node", "sim_node", "excitation_node"):
        assert not set(node_defaults(config, node)) & set(implied), node  # nothing in nodes: overrides it
    assert identification_options(config.get("identification"), topic=joint_states_topic(config)).topic == \
        "/franka/joint_states"
    assert config_implied_defaults(load_config(robot_file("ur5e", "config")), SCHEMA)["topics"] == ["/joint_states"]


@pytest.mark.parametrize(("config", "unit"), [
    ({"robot": {"driver": "ur_robot_driver"}}, "A"),  # RTDE actual_current
    ({"robot": {"driver": "ur_robot_driver"}, "identification": {"effort_unit": "N m"}}, "N m"),  # said: kept
    ({"robot": {"driver": "franka_ros2"}}, "N m"),
    ({"robot": {"driver": "ros2_kortex"}}, "N m"),
    ({"robot": {"joints": ["shoulder_pan_joint"]}}, "N m"),  # no driver named: a simulator's torque
    ({}, "N m"),
])
def test_the_effort_unit_of_a_config_is_its_named_drivers_unless_given(config, unit):
    options = identification_options(config.get("identification"), {}, **driver_defaults(config))
    assert options.effort_unit == unit
    if unit == "A":  # a flag or node parameter still overrides the driver's unit
        assert identification_options(config.get("identification"), {"effort_unit": "N m"},
                                      **driver_defaults(config)).effort_unit == "N m"
