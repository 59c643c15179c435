"""Wall-clock time per named stage (``timings_s`` in ``report.json``): stages add up, a failing stage is timed too."""

from __future__ import annotations

import time

import pytest

from dynid_ros.identification.timing import StageTimer


def test_stages_are_timed_and_repeated_stages_add_up():
    timer = StageTimer()
    with timer.stage("read"):
        time.sleep(0.02)
    with timer.stage("fit"):
        pass
    first = timer.timings["read"]
    with timer.stage("read"):
        time.sleep(0.01)
    assert list(timer.timings) == ["read", "fit"]  # in the order first run
    assert first >= 0.02 and timer.timings["read"] >= first + 0.01  # no upper bound: the machine may be busy
    assert timer.timings["fit"] >= 0.0
    assert all(round(v, 4) == v for v in timer.timings.values())  # rounded to 0.1 ms


def test_a_stage_that_raises_is_timed_and_the_error_passes_through():
    timer = StageTimer()
    with pytest.raises(ValueError, match="bad"):
        with timer.stage("fit"):
            time.sleep(0.01)
            raise ValueError("bad")
    assert timer.timings["fit"] >= 0.01


def test_timers_are_independent():
    a, b = StageTimer(), StageTimer()
    with a.stage("x"):
        pass
    assert b.timings == {}
