"""The stream's profile clock: wall-clock time between commands, but never more than two periods after a stall."""

import numpy as np

from dynid_ros.execution.stream_clock import MAX_STEP_PERIODS, StreamClock


def test_on_time_commands_follow_the_wall_clock():
    clock = StreamClock(rate_hz=500.0, duration=3.0, start=100.0)
    times = 100.0 + np.arange(1, 1001) / 500.0
    elapsed = [clock.tick(t) for t in times]
    np.testing.assert_allclose(elapsed, times - 100.0, atol=1e-9)
    assert clock.stalls == [] and clock.lag < 1e-9


def test_a_stall_continues_where_the_motion_was_and_runs_late():
    clock = StreamClock(rate_hz=1000.0, duration=5.0, start=0.0)
    for k in range(1, 501):
        clock.tick(k / 1000.0)
    before = clock.elapsed
    after = clock.tick(0.5 + 1.08)  # a 1.08 s stall of the node's process (seen at 500 Hz on a loaded machine)
    assert abs(after - before - MAX_STEP_PERIODS / 1000.0) < 1e-12  # a step of two periods, not 1.08 s of the motion
    assert len(clock.stalls) == 1 and abs(clock.stalls[0][1] - 1.08) < 1e-9
    assert abs(clock.lag - (1.08 - 0.002)) < 1e-9
    for k in range(1, 101):  # on time again: the profile advances with the wall clock, the lag stays
        clock.tick(1.58 + k / 1000.0)
    assert abs(clock.lag - 1.078) < 1e-9 and len(clock.stalls) == 1


def test_the_profile_time_ends_at_the_profile_duration():
    clock = StreamClock(rate_hz=100.0, duration=0.05, start=0.0)
    elapsed = [clock.tick(k / 100.0) for k in range(1, 20)]
    assert max(elapsed) == 0.05 and elapsed[-1] == 0.05 and clock.lag == 0.0
