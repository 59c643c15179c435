"""The joint_trajectory_controller-like reference of sim_node (dynid_ros.execution.trajectory_reference)."""

import numpy as np
import pytest

from dynid_ros.errors import TrajectoryError
from dynid_ros.execution.trajectory_reference import TrajectoryReference, segment

JOINTS = ("a", "b")


def test_segments_match_their_end_points():
    rng = np.random.default_rng(1)
    p0 = tuple(rng.standard_normal(2) for _ in range(3))
    p1 = tuple(rng.standard_normal(2) for _ in range(3))
    for order, levels in ((5, 3), (3, 2), (1, 1)):
        start, end = segment(0.0, 0.7, p0, p1, order), segment(0.7, 0.7, p0, p1, order)
        for level in range(levels):
            np.testing.assert_allclose(start[level], p0[level], atol=1e-12)
            np.testing.assert_allclose(end[level], p1[level], atol=1e-10)
    # the quintic's velocity is the derivative of its position
    h = 1e-6
    q_plus, q_minus = segment(0.3 + h, 0.7, p0, p1, 5)[0], segment(0.3 - h, 0.7, p0, p1, 5)[0]
    np.testing.assert_allclose((q_plus - q_minus) / (2 * h), segment(0.3, 0.7, p0, p1, 5)[1], rtol=1e-6)


def test_follows_points_relative_to_the_start_and_holds_the_last():
    ref = TrajectoryReference.hold(JOINTS, 0.0, np.zeros(2))
    # joint names in another order than the controller's
    ref = ref.replace(1.0, None, ["b", "a"], [0.5, 1.0], [[2.0, 1.0], [4.0, 3.0]], [[], []], [[], []])
    np.testing.assert_allclose(ref.sample(1.0)[0], [0.0, 0.0])  # starts where it was held
    np.testing.assert_allclose(ref.sample(1.25)[0], [0.5, 1.0])  # linear: positions only
    np.testing.assert_allclose(ref.sample(1.5)[0], [1.0, 2.0])
    np.testing.assert_allclose(ref.sample(1.75)[0], [2.0, 3.0])
    q, dq, _ = ref.sample(5.0)
    np.testing.assert_allclose(q, [3.0, 4.0])
    np.testing.assert_allclose(dq, [0.0, 0.0])
    assert ref.end_time == pytest.approx(2.0)


def test_a_new_trajectory_replaces_the_old_from_the_current_reference():
    ref = TrajectoryReference.hold(JOINTS, 0.0, np.zeros(2))
    ref = ref.replace(0.0, None, JOINTS, [1.0], [[1.0, 1.0]], [[0.0, 0.0]], [[0.0, 0.0]])
    q_mid, dq_mid, _ = ref.sample(0.5)
    new = ref.replace(0.5, None, JOINTS, [1.0], [[-1.0, -1.0]], [[0.0, 0.0]], [[0.0, 0.0]])
    q, dq, _ = new.sample(0.5)
    np.testing.assert_allclose(q, q_mid)
    np.testing.assert_allclose(dq, dq_mid)  # continuous velocity (cubic from the current state)
    np.testing.assert_allclose(new.sample(1.5)[0], [-1.0, -1.0])


def test_stamped_start_in_the_future_holds_until_then_and_empty_trajectory_stops():
    ref = TrajectoryReference.hold(JOINTS, 0.0, np.array([0.2, 0.3]))
    ref = ref.replace(0.0, 2.0, JOINTS, [1.0], [[1.0, 1.0]], [[], ], [[], ])
    np.testing.assert_allclose(ref.sample(1.9)[0], [0.2, 0.3])
    np.testing.assert_allclose(ref.sample(3.0)[0], [1.0, 1.0])
    q_now = ref.sample(2.5)[0]
    stopped = ref.replace(2.5, None, JOINTS, [], [], [], [])
    np.testing.assert_allclose(stopped.sample(10.0)[0], q_now)


@pytest.mark.parametrize("names, times, positions, match", [
    (["a", "c"], [1.0], [[0.0, 0.0]], "unknown: c"),
    (["a"], [1.0], [[0.0]], "missing: b"),
    (["a", "b"], [1.0, 0.5], [[0.0, 0.0], [1.0, 1.0]], "increasing"),
    (["a", "b"], [1.0], [[0.0]], "every point needs 2 positions"),
    (["a", "b"], [1.0], [[np.nan, 0.0]], "finite"),
])
def test_bad_trajectories_are_refused(names, times, positions, match):
    ref = TrajectoryReference.hold(JOINTS, 0.0, np.zeros(2))
    with pytest.raises(TrajectoryError, match=match):
        ref.replace(0.0, None, names, times, positions, [[] for _ in times], [[] for _ in times])
