"""Files the package ships outside the Python package (urdf/, config/, launch/), found from a checkout, a pip
install or a ROS workspace; a file a user names, found where a user expects it, in a stated order."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dynid_ros.errors import ConfigError
from dynid_ros.robot.resources import ROBOTS, find_file, robot_file, share_directories, share_path

from support.paths import REPO


@pytest.mark.parametrize("robot", ROBOTS)
def test_every_shipped_robot_has_its_urdf_and_config(robot):
    urdf, config = robot_file(robot, "urdf"), robot_file(robot, "config")
    assert urdf.name == f"{robot}.urdf" and urdf.is_file() and urdf.read_text().lstrip().startswith("<")
    assert config.name == f"{robot}.yaml" and config.is_file()
    assert urdf.read_bytes() == (REPO / "urdf" / f"{robot}.urdf").read_bytes()  # this checkout's file


def test_share_path_looks_in_the_share_directories():
    assert share_directories()[0] == REPO  # the source tree first
    assert share_path("launch") == REPO / "launch"
    with pytest.raises(ConfigError, match="no_such_file.txt: not found in the dynid_ros share directories"):
        share_path("no_such_file.txt")
    with pytest.raises(KeyError):
        robot_file("panda", "mesh")


def test_find_file_in_order_cwd_config_folder_package_share(tmp_path, monkeypatch):
    here, there = tmp_path / "here", tmp_path / "configs"
    here.mkdir()
    there.mkdir()
    (there / "robot.yaml").write_text("robot: {urdf: arm.urdf}\n")
    (there / "arm.urdf").write_text("<robot name='beside the config'/>")
    monkeypatch.chdir(here)
    assert find_file("arm.urdf", "robot.urdf", there / "robot.yaml") == (there / "arm.urdf").resolve()
    (here / "arm.urdf").write_text("<robot name='in the working directory'/>")
    assert find_file("arm.urdf", "robot.urdf", there / "robot.yaml") == (here / "arm.urdf").resolve()  # cwd first
    assert find_file("urdf/panda.urdf", "--urdf") == (REPO / "urdf" / "panda.urdf").resolve()  # the share tree
    package = Path(__import__("dynid_ros").__file__).parent
    shipped = next(package.glob("robot/trajectories/*.yaml")).relative_to(package)
    assert find_file(shipped, "--trajectory") == (package / shipped).resolve()  # the Python package
    absolute = there / "arm.urdf"
    assert find_file(str(absolute), "--urdf") == absolute.resolve()


def test_find_file_names_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="^--urdf nowhere.urdf: no such file \\(looked in "):
        find_file("nowhere.urdf", "--urdf")
    with pytest.raises(ConfigError, match=f"^--urdf {tmp_path / 'x.urdf'}: no such file$"):
        find_file(tmp_path / "x.urdf", "--urdf")
    with pytest.raises(ConfigError, match="^no robot.urdf given$"):
        find_file("", "robot.urdf")
    (tmp_path / "folder.urdf").mkdir()  # a directory is not a file
    with pytest.raises(ConfigError, match="no such file"):
        find_file("folder.urdf", "--urdf")
    assert os.getcwd() == str(tmp_path)
