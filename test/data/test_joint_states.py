"""The joint-state series every tool exchanges: selecting and reordering joints, the time window from the first
sample, where the data hold a joint, and each joint's fields as recorded."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.data.joint_states import JointStateSeries, complete_fields, held_positions
from dynid_ros.errors import DataError


def _series(velocity: bool = True) -> JointStateSeries:
    t = 100.0 + 0.5 * np.arange(9)
    q = np.column_stack([np.arange(9.0), 10 + np.arange(9.0), 20 + np.arange(9.0)])
    return JointStateSeries(["a", "b", "c"], t, q, -q if velocity else None, 2 * q, {"source": "test"})


def test_select_reorders_every_field():
    s = _series()
    picked = s.select(["c", "a"])
    assert picked.names == ["c", "a"] and len(picked) == 9
    np.testing.assert_array_equal(picked.position, s.position[:, [2, 0]])
    np.testing.assert_array_equal(picked.velocity, -s.position[:, [2, 0]])
    np.testing.assert_array_equal(picked.effort, 2 * s.position[:, [2, 0]])
    assert picked.info == {"source": "test"} and picked.info is not s.info
    assert _series(velocity=False).select(["b"]).velocity is None
    with pytest.raises(ValueError):
        s.select(["z"])


def test_window_counts_from_the_first_sample_with_both_ends_included():
    s = _series()
    w = s.window(1.0, 2.5)  # t - t0 in {1.0, 1.5, 2.0, 2.5}
    np.testing.assert_array_equal(w.t, [101.0, 101.5, 102.0, 102.5])
    np.testing.assert_array_equal(w.position[:, 0], [2.0, 3.0, 4.0, 5.0])
    np.testing.assert_array_equal(w.effort[:, 2], 2 * (20 + np.array([2.0, 3.0, 4.0, 5.0])))
    assert len(s.window()) == 9 and len(s.window(start=3.5)) == 2 and len(s.window(end=0.0)) == 1
    assert len(s.window(10.0, 20.0)) == 0


def test_held_positions_are_medians_of_the_finite_samples():
    s = _series()
    s.position[0, 1] = np.nan
    s.position[:, 2] = np.nan
    held = held_positions(s)
    assert held == {"a": 4.0, "b": float(np.median(10 + np.arange(1.0, 9.0)))}  # c: no finite sample, not held


def test_complete_fields_names_a_joint_whose_publisher_sends_nothing():
    s = _series()
    assert complete_fields(s).velocity is not None
    s.effort[:, 1] = np.nan
    with pytest.raises(DataError, match="^the bag: no effort for joint\\(s\\) b \\(their publisher sends none\\)$"):
        complete_fields(s, "the bag")
    s = _series()
    s.position[:, [0, 2]] = np.nan
    with pytest.raises(DataError, match="no position for joint\\(s\\) a, c"):
        complete_fields(s)


def test_complete_fields_drops_the_velocity_unless_every_joint_has_one():
    s = _series()
    s.velocity[:, 2] = np.nan  # a gripper publishing positions and efforts only
    done = complete_fields(s)
    assert done.velocity is None
    np.testing.assert_array_equal(done.position, s.position)
    s = _series()
    s.velocity[3, 2] = np.nan  # one sample missing: still a velocity
    assert complete_fields(s).velocity is not None
