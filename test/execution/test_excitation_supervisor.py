"""excitation_node's start / wait / supervise / abort logic and its joint-state merge, without ROS.

The supervisor runs the real trajectory file, robot limits and motion check; the controller is a
:class:`~support.manual_clock.RecordingLink` (a plain object recording what would be sent: the ROS transports are
tested in test_excitation_node.py) and time is a settable clock, so a slow start is reproduced exactly.
"""

import subprocess
import sys

import numpy as np
import pytest

from dynid_ros.errors import DataError
from dynid_ros.excitation.trajectory_file import load_trajectory
from dynid_ros.execution import excitation_supervisor as supervisor_module
from dynid_ros.execution.excitation_supervisor import (
    FOLLOW_LAG_S,
    MIN_PATH_TOLERANCE,
    START_POSE_TOLERANCE,
    ExcitationSupervisor,
    Phase,
    SupervisorSettings,
    path_tolerances,
)
from dynid_ros.execution.joint_state_cache import JointStateCache
from dynid_ros.execution.trajectory_execution import prepare_profile

from support.manual_clock import ManualClock, RecordingLink
from support.ros_helpers import robot_limits_of, write_test_trajectory

PANDA = robot_limits_of("panda")
FINGERS = ["panda_finger_joint1", "panda_finger_joint2"]


@pytest.fixture(scope="module")
def excitation(tmp_path_factory):
    return load_trajectory(write_test_trajectory(tmp_path_factory.mktemp("traj") / "t.yaml", period=0.5,
                                                 harmonics=2))


def make(excitation, clock, link=None, **settings):
    link = link or RecordingLink()
    sup = ExcitationSupervisor(SupervisorSettings(**{"mode": "topic", **settings}), lambda: (excitation, PANDA), link,
                               clock=clock)
    return sup, link


def publish(sup, q, names=PANDA.joints):
    sup.on_joint_state(list(names), list(q))


def test_no_ros_is_loaded():
    code = "import sys, dynid_ros.execution.excitation_supervisor; print('rclpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_joint_states_of_two_publishers_are_merged_by_name():
    cache = JointStateCache()
    cache.update(PANDA.joints, np.arange(7.0), received=1.0)
    cache.update(FINGERS, [0.01, 0.02], received=1.5)  # the gripper's message comes last
    np.testing.assert_array_equal(cache.positions(PANDA.joints, 1.4, 0.5), np.arange(7.0))
    assert cache.received([*PANDA.joints, *FINGERS]) == 1.0
    with pytest.raises(DataError, match="joint panda_joint1 last received 0.70 s ago"):
        cache.positions(PANDA.joints, 1.7, 0.5)
    with pytest.raises(DataError, match="3 names but 2 positions"):
        cache.update(["a", "b", "c"], [1.0, 2.0], received=2.0)


def test_a_slow_start_does_not_abort_the_motion_it_sent(excitation, monkeypatch):
    """Building and checking the motion takes 3 s during which no joint state arrives (a single-threaded executor
    busy with ~/start): the motion is sent, and the ticks after it do not find the joint states stale."""
    clock = ManualClock()
    sup, link = make(excitation, clock, state_timeout=0.5)
    publish(sup, excitation.limits.position.mean(axis=1))

    def slow_prepare(*args, **kwargs):
        clock.now += 3.0
        return prepare_profile(*args, **kwargs)

    monkeypatch.setattr(supervisor_module, "prepare_profile", slow_prepare)
    accepted, message = sup.start()
    assert accepted, message
    profile = link.sent[0]
    clock.now += 0.1
    sup.tick()  # the last joint state is 3.1 s old, but the motion started 0.1 s ago
    assert sup.run.active, sup.run.message
    t0 = sup.run.t_start
    for t in np.arange(0.1, profile.duration + 0.5, 0.05):  # the robot follows exactly
        clock.now = t0 + t
        publish(sup, profile.sample(np.array([min(t, profile.duration)]))[0][0])
        sup.tick()
    assert sup.run.state.value == "done", sup.run.message
    assert link.halts == 0


def test_joint_states_that_stop_after_the_start_stop_the_motion(excitation):
    clock = ManualClock()
    sup, link = make(excitation, clock, state_timeout=0.2)
    publish(sup, excitation.limits.position.mean(axis=1))
    assert sup.start()[0]
    clock.now += 1.1  # max(1 s, 4 x state_timeout) after the motion's start, none arrived
    sup.tick()
    assert sup.run.state.value == "aborted" and "/joint_states stopped arriving while moving" in sup.run.message
    assert link.halts == 1


def test_preparation_runs_without_the_lock_and_stop_during_it_prevents_the_send(excitation, monkeypatch):
    clock = ManualClock()
    sup, link = make(excitation, clock)
    publish(sup, excitation.limits.position.mean(axis=1))
    seen = {}

    def prepare_and_stop(*args, **kwargs):
        seen["phase"] = sup.phase
        seen["stop"] = sup.stop()  # ~/stop from another thread while the motion is being checked
        return prepare_profile(*args, **kwargs)

    monkeypatch.setattr(supervisor_module, "prepare_profile", prepare_and_stop)
    accepted, message = sup.start()
    assert seen["phase"] is Phase.PREPARING and seen["stop"] == (True, "stopped on request")
    assert not accepted and message == "stopped on request before moving"
    assert link.sent == [] and sup.run.state.value == "aborted"


def test_a_robot_still_moving_gets_its_motion_rebuilt_before_the_send(excitation, monkeypatch):
    clock = ManualClock()
    sup, link = make(excitation, clock)
    q0 = excitation.limits.position.mean(axis=1)
    publish(sup, q0)
    moved = q0 + 2 * START_POSE_TOLERANCE

    def prepare_while_moving(*args, **kwargs):
        publish(sup, moved)
        return prepare_profile(*args, **kwargs)

    monkeypatch.setattr(supervisor_module, "prepare_profile", prepare_while_moving)
    accepted, message = sup.start()
    assert accepted and "it must be at rest" in message and link.sent == []
    monkeypatch.setattr(supervisor_module, "prepare_profile", prepare_profile)
    sup.tick()
    assert len(link.sent) == 1
    np.testing.assert_allclose(link.sent[0].q_start, moved)


def test_a_motion_the_robot_does_not_follow_is_stopped_not_done(excitation):
    clock = ManualClock()
    sup, link = make(excitation, clock, wait_timeout=1.0)
    q0 = excitation.limits.position.mean(axis=1) + 0.2  # the approach moves every joint by 0.2 rad
    publish(sup, q0)
    assert sup.start()[0]
    profile = link.sent[0]
    for _ in range(int((profile.duration + 0.2 + 1.0 + FOLLOW_LAG_S) / 0.05) + 2):  # the arm stays where it was
        clock.now += 0.05
        publish(sup, q0)
        sup.tick()
        if not sup.run.active:
            break
    assert sup.run.state.value == "aborted"
    # the end may come up to FOLLOW_LAG_S late (a controller that started late): wait_timeout + that lag
    assert f"the robot did not reach the end pose within {1.0 + FOLLOW_LAG_S:g} s after the motion's end" in \
        sup.run.message
    assert link.halts == 1


def test_a_robot_that_stays_behind_for_longer_than_the_allowed_lag_is_stopped(excitation):
    """A long motion (approach of 1.5 rad) with the arm stuck at its start: stopped while moving."""
    clock = ManualClock()
    sup, link = make(excitation, clock)
    q0 = excitation.limits.position.mean(axis=1) + np.array([1.5, 0, 0, 0, 0, 0, 0])
    publish(sup, q0)
    assert sup.start()[0], sup.run.message
    for _ in range(400):
        clock.now += 0.05
        publish(sup, q0)
        sup.tick()
        if not sup.run.active:
            break
    assert sup.run.state.value == "aborted"
    assert "the robot does not follow the motion: joint panda_joint1" in sup.run.message
    assert clock.now - sup.run.t_start < link.sent[0].t_excitation_start + 2.5


def test_the_end_needs_joint_states_from_after_the_end(excitation):
    """Topic mode: past the end, but the last joint state is from before it: not done until one arrives."""
    clock = ManualClock()
    sup, link = make(excitation, clock)
    publish(sup, excitation.limits.position.mean(axis=1))
    assert sup.start()[0]
    profile = link.sent[0]
    t0 = sup.run.t_start
    clock.now = t0 + profile.duration - 0.01
    publish(sup, profile.sample(np.array([profile.duration - 0.01]))[0][0])
    clock.now = t0 + profile.duration + 0.5
    sup.tick()
    assert sup.run.active
    publish(sup, profile.sample(np.array([profile.duration]))[0][0])
    sup.tick()
    assert sup.run.state.value == "done"


def test_path_tolerances_are_finite_and_scale_with_speed(excitation):
    profile = prepare_profile(excitation, excitation.limits.position.mean(axis=1), 1, 1000.0, PANDA)
    tolerance = path_tolerances(profile)
    peak = np.abs(profile.sample_at_rate(1000.0)[2]).max(axis=0)
    assert np.all(np.isfinite(tolerance)) and np.all(tolerance >= MIN_PATH_TOLERANCE)
    np.testing.assert_allclose(tolerance, np.maximum(MIN_PATH_TOLERANCE, 0.1 * peak), rtol=0.05)


def run_stream(sup, link, clock, sent_until, robot_pose, ticks=200, step=0.05, on_tick=lambda: None):
    """Tick every ``step`` s; the stream has sent ``sent_until(elapsed)`` of the profile, the robot is at
    ``robot_pose(profile time sent)``. Returns the (elapsed, state) of every tick until the run ends."""
    profile, t0, seen = link.sent[0], sup.run.t_start, []
    for _ in range(ticks):
        clock.now += step
        link.until = sent_until(clock.now - t0)
        publish(sup, robot_pose(profile, min(link.until, profile.duration)))
        sup.tick()
        on_tick()
        seen.append((clock.now - t0, sup.run.state.value))
        if not sup.run.active:
            break
    return seen


def stream_link():
    link = RecordingLink()
    link.until = 0.0  # a stream has sent nothing when it starts
    return link


def at(profile, t):
    return profile.sample(np.array([t]))[0][0]


def test_a_stalled_stream_is_not_done_at_the_wall_clock_end_and_is_stopped_when_too_late(excitation):
    """Seen in CI: the stream played 0.05 s of a 2 s profile and stalled; the test trajectory ends where it starts,
    so at the wall-clock end the robot sat at the end pose. Not done: stopped once the stream is over FOLLOW_LAG_S
    late (it never sent the end)."""
    clock = ManualClock()
    sup, link = make(excitation, clock, stream_link(), mode="stream")
    publish(sup, excitation.limits.position.mean(axis=1))
    assert sup.start()[0]
    profile = link.sent[0]
    np.testing.assert_allclose(at(profile, 0.05), at(profile, profile.duration), atol=MIN_PATH_TOLERANCE)
    seen = run_stream(sup, link, clock, lambda elapsed: 0.05, at)
    assert "done" not in [state for _, state in seen]
    assert sup.run.state.value == "aborted" and link.halts == 1
    assert "the stream is 2.0" in sup.run.message and "late (it sent t = 0.05 s of the 2.00 s motion" in \
        sup.run.message
    assert FOLLOW_LAG_S < seen[-1][0] - 0.05 <= FOLLOW_LAG_S + 0.05  # stopped at the first tick past the limit


def test_a_late_stream_is_supervised_while_it_catches_up_and_done_after_its_end(excitation):
    """A stream 1 s late (a stall at its start) followed by the robot: the wall-clock end passes, the run stays
    active and supervised; done once the end was sent and the robot measured there after the settle time."""
    clock = ManualClock()
    sup, link = make(excitation, clock, stream_link(), mode="stream", settle_time=0.2)
    publish(sup, excitation.limits.position.mean(axis=1))
    assert sup.start()[0]
    profile = link.sent[0]
    progress = []
    seen = run_stream(sup, link, clock, lambda elapsed: max(elapsed - 1.0, 0.0), at,
                      on_tick=lambda: progress.append(sup.run.progress))
    assert sup.run.state.value == "done", sup.run.message
    done_at = seen[-1][0]
    at_wall_end = progress[int(round(profile.duration / 0.05)) - 1]  # the progress is what was sent: 1 s behind
    assert at_wall_end == pytest.approx((profile.duration - 1.0) / profile.duration, abs=0.03)
    assert profile.duration + 1.0 + 0.2 <= done_at <= profile.duration + 1.0 + 0.2 + 0.1
    assert link.halts == 0


def test_a_late_stream_the_robot_stops_following_is_stopped(excitation):
    """While the stream catches up, the following check goes on: the arm stuck at the approach's start while the
    stream (1 s late) moves on is stopped as not following, before the profile's end."""
    clock = ManualClock()
    sup, link = make(excitation, clock, stream_link(), mode="stream")
    q0 = excitation.limits.position.mean(axis=1) + np.array([1.5, 0, 0, 0, 0, 0, 0])  # a long approach
    publish(sup, q0)
    assert sup.start()[0]
    seen = run_stream(sup, link, clock, lambda elapsed: max(elapsed - 1.0, 0.0), lambda profile, t: q0)
    assert sup.run.state.value == "aborted" and link.halts == 1
    assert "the robot does not follow the motion: joint panda_joint1" in sup.run.message
    assert seen[-1][0] - 1.0 < link.sent[0].duration  # stopped while the stream was still sending the motion
