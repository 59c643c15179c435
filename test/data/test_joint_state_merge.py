"""Joint states merged by joint name across publishers: each source on one clock (its header stamps, or its receive
times moved by the stamped sources' median delay), the series at the stamps of the source with the most messages,
the other joints interpolated; non-finite and repeated samples dropped and counted, stamps going backwards an error."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.data.joint_state_merge import JointStateSource, describe_source, kept_samples, merge_by_name
from dynid_ros.errors import DataError

MS = 1_000_000


def _arm(n: int = 101, delay_ns: int = 2 * MS) -> JointStateSource:
    """Two joints at 100 Hz, header stamped from 1 s, received ``delay_ns`` later."""
    header = 1_000_000_000 + 10 * MS * np.arange(n)
    q = np.column_stack([np.linspace(0, 1, n), np.linspace(1, 2, n)])
    return JointStateSource(["j1", "j2"], header, header + delay_ns, [q, 2 * q, 3 * q], np.arange(n))


def _gripper(n: int = 11, stamped: bool = False) -> JointStateSource:
    """One joint at 10 Hz, no velocity; header stamps 0 (not stamped) unless ``stamped``."""
    header = 1_000_000_000 + 100 * MS * np.arange(n)
    receive = header + 5 * MS
    q = (0.01 * np.arange(n))[:, None]
    return JointStateSource(["f"], header if stamped else np.zeros(n, dtype=np.int64), receive, [q, None, 10 * q],
                            1000 + np.arange(n))


def test_the_busiest_source_gives_the_stamps_the_others_are_interpolated():
    merged = merge_by_name([_gripper(), _arm()])
    assert merged.names == ["j1", "j2", "f"]
    np.testing.assert_allclose(merged.t, 1.0 + 0.01 * np.arange(101))
    np.testing.assert_array_equal(merged.position[:, :2], _arm().fields[0])
    # the gripper's receive times minus the arm's 2 ms delay: its sample k at 1 s + 100 ms k + 3 ms
    gripper_t = 1.0 + 0.1 * np.arange(11) + 0.003
    np.testing.assert_allclose(merged.position[:, 2], np.interp(merged.t, gripper_t, 0.01 * np.arange(11)),
                               atol=1e-12)
    assert np.isnan(merged.velocity[:, 2]).all() and not np.isnan(merged.velocity[:, :2]).any()
    assert merged.info["interpolated_joints"] == ["f"]
    clocks = {tuple(s["joints"]): s["clock"] for s in merged.info["sources"]}
    assert clocks == {("f",): "receive - median delay", ("j1", "j2"): "header"}


def test_stamped_sources_keep_their_own_stamps():
    merged = merge_by_name([_arm(), _gripper(stamped=True)])
    gripper_t = 1.0 + 0.1 * np.arange(11)
    np.testing.assert_allclose(merged.position[:, 2], np.interp(merged.t, gripper_t, 0.01 * np.arange(11)),
                               atol=1e-12)


def test_a_source_that_never_stamps_is_on_its_receive_clock():
    arm = _arm()
    unstamped = JointStateSource(arm.names, np.zeros_like(arm.header_ns), arm.receive_ns, arm.fields, arm.samples)
    merged = merge_by_name([unstamped])
    np.testing.assert_allclose(merged.t, arm.receive_ns * 1e-9)
    assert merged.info["sources"][0]["clock"] == "receive"


def test_nonfinite_and_repeated_samples_are_dropped_and_counted():
    arm = _arm(10)
    q = arm.fields[0].copy()
    q[3, 1] = np.nan
    header = arm.header_ns.copy()
    header[6] = header[5]  # a repeated stamp
    merged = merge_by_name([JointStateSource(arm.names, header, arm.receive_ns, [q, arm.fields[1], arm.fields[2]],
                                             arm.samples)])
    assert len(merged) == 8 and merged.info["dropped_nonfinite"] == 1 and merged.info["dropped_duplicate"] == 1
    assert np.isfinite(merged.position).all()


def test_stamps_going_backwards_name_the_sample():
    arm = _arm(10)
    header = arm.header_ns.copy()
    header[7] = header[2]
    with pytest.raises(DataError, match="^bag: non-monotonic stamps at sample 7: t = 1.020000000 s after "
                                        "1.060000000 s$"):
        merge_by_name([JointStateSource(arm.names, header, arm.receive_ns, arm.fields, arm.samples)], "bag")
    with pytest.raises(DataError, match="joint states: no messages"):
        merge_by_name([])


def test_kept_samples_and_the_source_description():
    t = np.array([0, 10, 10, 20, 30]) * MS
    keep, nonfinite, repeated = kept_samples(t, np.array([True, True, True, False, True]), np.arange(5), ["a"], "x")
    np.testing.assert_array_equal(keep, [True, True, False, False, True])
    assert (nonfinite, repeated) == (1, 1)
    with pytest.raises(DataError, match="x: no finite samples of a, b among 2"):
        kept_samples(np.array([0, 1]), np.array([False, False]), np.arange(2), ["a", "b"], "x")
    described = describe_source(["a"], np.array([0, 500, 1000]) * MS, "header", ["position"])
    assert described == {"joints": ["a"], "messages": 3, "clock": "header", "rate_hz": 2.0, "fields": ["position"]}
    assert describe_source(["a"], np.array([5]), "header", [])["rate_hz"] is None
