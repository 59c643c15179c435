"""Robot configuration files: a mapping of sections read by a YAML reader; a missing file, invalid YAML or a
section that is not a mapping refused with one line naming the file."""

from __future__ import annotations

import pytest
import yaml

from dynid_ros.errors import ConfigError
from dynid_ros.robot.config import config_section, load_config
from dynid_ros.robot.resources import ROBOTS, robot_file


@pytest.mark.parametrize("robot", ROBOTS)
def test_shipped_configs_read_as_yaml_reads_them(robot):
    path = robot_file(robot, "config")
    content = load_config(path)
    assert content == yaml.safe_load(path.read_text())
    for section in ("identification", "excitation"):
        assert config_section(path, section) == (content.get(section) or {})
    assert config_section(path, "no_such_section") == {}


def test_no_config_is_an_empty_one():
    assert load_config(None) == {} and config_section(None, "identification") == {}


@pytest.mark.parametrize(("text", "match"), [
    ("identification: [1, 2\n", "invalid YAML"),
    ("- a\n- b\n", "a config file must be a mapping of sections"),
])
def test_bad_files_are_named(tmp_path, text, match):
    path = tmp_path / "robot.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=f"robot.yaml: {match}"):
        load_config(path)


def test_an_empty_file_is_an_empty_config(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing yet\n")
    assert load_config(path) == {}


def test_a_section_must_be_a_mapping(tmp_path):
    path = tmp_path / "robot.yaml"
    path.write_text("identification: fbpe\nexcitation:\n")
    with pytest.raises(ConfigError, match="section 'identification' must be a mapping"):
        config_section(path, "identification")
    assert config_section(path, "excitation") == {}  # an empty section is none
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "absent.yaml")
