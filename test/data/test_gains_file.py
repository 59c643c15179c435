"""The drive-gains file of ``dynid gains``: written whole and read back (by a YAML reader and by ``read_gains``),
recognised, refused when it is something else, and applied to recorded efforts by joint name."""

from __future__ import annotations

import re

import numpy as np
import pytest
import yaml

from dynid_ros.data.gains_file import GAINS_MARKER, is_gains_file, read_gains, scale_by_name, write_gains
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.errors import DataError

CONTENT = {GAINS_MARKER: 1, "joints": ["j1", "j2", "j3"], "effort_scale": [0.125, 2.5, 1.0e-3],
           "payload": {"link": "l3", "mass": 1.5, "com": [0.01, -0.02, 0.08]}, "status": "optimal"}


def _series() -> JointStateSeries:
    t = np.linspace(0.0, 1.0, 11)
    effort = np.c_[np.sin(t), np.cos(t), t ** 2]
    return JointStateSeries(["j3", "j1", "j2"], t, np.zeros((11, 3)), np.zeros((11, 3)), effort)


def test_round_trip(tmp_path):
    path = tmp_path / "sub" / "gains.yaml"
    write_gains(CONTENT, path)  # its folder made
    assert yaml.safe_load(path.read_text()) == CONTENT
    assert list(yaml.safe_load(path.read_text())) == list(CONTENT)  # the order written (sort_keys=False)
    assert read_gains(path) == {"j1": 0.125, "j2": 2.5, "j3": 1.0e-3}
    assert read_gains(str(path)) == read_gains(path)
    assert is_gains_file(path)
    assert sorted(p.name for p in path.parent.iterdir()) == ["gains.yaml"]  # no temporary left


def test_rewrite_replaces_the_whole_file(tmp_path):
    path = tmp_path / "gains.yaml"
    write_gains(CONTENT, path)
    write_gains({GAINS_MARKER: 1, "joints": ["a"], "effort_scale": [3.0]}, path)
    assert read_gains(path) == {"a": 3.0}


@pytest.mark.parametrize("text", ["joints: [j1]\neffort_scale: [1.0]\n", "- a\n- b\n", "just text\n", "a: [1, 2\n"])
def test_only_a_file_with_the_marker_is_a_gains_file(tmp_path, text):
    path = tmp_path / "other.yaml"
    path.write_text(text)
    assert not is_gains_file(path)


def test_binary_and_missing_files_are_not_gains_files(tmp_path):
    binary = tmp_path / "bag.db3"
    binary.write_bytes(b"\xff\xfe\x00\x81 not text")
    assert not is_gains_file(binary)
    assert not is_gains_file(tmp_path / "absent.yaml")
    assert not is_gains_file(tmp_path)  # a directory


SHAPE = "joints and effort_scale must have the same length, with finite gains > 0"


@pytest.mark.parametrize(("text", "match"), [
    ("joints: [j1]\n", "not a gains file \\(needs joints and effort_scale lists\\)"),
    ("joints: [j1]\neffort_scale: [x]\n", "not a gains file"),
    ("[1, 2\n", "not a gains file"),
    ("joints: [j1, j2]\neffort_scale: [1.0]\n", SHAPE),
    ("joints: [j1]\neffort_scale: [0.0]\n", SHAPE),
    ("joints: [j1]\neffort_scale: [-2.0]\n", SHAPE),
    ("joints: [j1]\neffort_scale: [.nan]\n", SHAPE),
])
def test_read_gains_names_the_file_for_anything_else(tmp_path, text, match):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(DataError, match=f"^{re.escape(str(path))}: {match}"):
        read_gains(path)


def test_read_gains_of_a_missing_file(tmp_path):
    with pytest.raises(DataError, match="no such gains file"):
        read_gains(tmp_path / "absent.yaml")


def test_scale_by_name_scales_the_named_joints_whatever_their_order():
    series = _series()
    scaled = scale_by_name(series, {"j1": 2.0, "j3": -0.5}, "gains.yaml")  # j2 not named: unchanged
    np.testing.assert_array_equal(scaled.effort[:, 0], -0.5 * series.effort[:, 0])  # j3
    np.testing.assert_array_equal(scaled.effort[:, 1], 2.0 * series.effort[:, 1])  # j1
    np.testing.assert_array_equal(scaled.effort[:, 2], series.effort[:, 2])  # j2
    np.testing.assert_array_equal(scaled.position, series.position)
    assert scaled.names == series.names
    np.testing.assert_array_equal(series.effort[:, 1], np.cos(series.t))  # the input is not changed


def test_scale_by_name_refuses_a_joint_the_states_lack():
    with pytest.raises(DataError, match="^gains.yaml: joint\\(s\\) j9, j8 are not in the joint states$"):
        scale_by_name(_series(), {"j1": 1.0, "j9": 2.0, "j8": 1.0}, "gains.yaml")


def test_scale_by_name_without_effort_is_an_error():
    series = _series()
    series.effort = None
    with pytest.raises(DataError, match="no effort"):
        scale_by_name(series, {"j1": 2.0}, "gains.yaml")
