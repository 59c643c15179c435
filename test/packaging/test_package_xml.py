"""package.xml is what rosdep installs for a ROS user: every key resolves for Jazzy and Humble."""

import xml.etree.ElementTree as ET

import pytest

from support.launch_stack import ROOT
from support.rosdistro_index import resolves_on_ubuntu, rosdistro_dir, unresolved

DEPEND_TAGS = ("depend", "build_depend", "exec_depend", "test_depend", "build_export_depend", "buildtool_depend")


def package_keys() -> list[str]:
    root = ET.parse(ROOT / "package.xml").getroot()
    return [element.text.strip() for tag in DEPEND_TAGS for element in root.findall(tag)]


@pytest.mark.parametrize("distro", ["jazzy", "humble"])
def test_every_package_xml_key_resolves(distro):
    keys = package_keys()
    assert len(keys) >= 20
    assert unresolved(keys, rosdistro_dir(), distro) == []


def test_the_resolver_refuses_what_rosdep_refuses():
    root = rosdistro_dir()
    assert unresolved(["python3-threadpoolctl", "no_such_package", "rclpy", "python3-cvxpy-pip"], root,
                      "jazzy") == ["python3-threadpoolctl", "no_such_package"]
    assert resolves_on_ubuntu({"ubuntu": {"noble": None, "jammy": ["x"]}}, "jammy")
    assert not resolves_on_ubuntu({"ubuntu": {"noble": None, "jammy": ["x"]}}, "noble")


def test_pip_only_dependencies_are_named_for_colcon_users():
    """A Python dependency without a rosdep key must be installed by hand: package.xml and README say so."""
    text = (ROOT / "package.xml").read_text()
    assert "threadpoolctl" in text and "pip install" in text  # in a comment, not as a key
    assert "threadpoolctl" not in package_keys()
    assert "pip install threadpoolctl" in (ROOT / "README.md").read_text()
