"""The excitation's bandwidth and the cutoff and decimation derived from it: the bandwidth of known sines, the
first window only, no motion refused; the cutoff rule's numbers against the module's formulas by hand."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.data.bandwidth import (
    BANDWIDTH_WINDOW_S,
    DECIMATION_FACTOR,
    NYQUIST_SHARE,
    DerivedCutoff,
    derived_cutoff,
    leading_bandwidth,
    passband_multiple,
    velocity_bandwidth,
)
from dynid_ros.errors import DataError


def test_bandwidth_of_sines_is_their_top_frequency():
    rate = 500.0
    t = np.arange(0.0, 40.0, 1.0 / rate)
    v = np.column_stack([np.sin(2 * np.pi * 0.3 * t), 0.5 * np.sin(2 * np.pi * 1.2 * t)])
    assert velocity_bandwidth(v, rate) == pytest.approx(1.2, abs=0.1)  # 99 % of the energy lies below 1.2 Hz
    assert velocity_bandwidth(v[:, :1], rate) == pytest.approx(0.3, abs=0.1)
    assert velocity_bandwidth(v + 5.0, rate) == pytest.approx(velocity_bandwidth(v, rate))  # the mean removed


def test_the_motion_must_move():
    with pytest.raises(DataError, match="the joints do not move"):
        velocity_bandwidth(np.ones((200, 2)), 100.0)


def test_only_the_first_window_is_measured():
    """A slow first minute, a fast second one: the bandwidth of the first, whatever follows."""
    rate = 100.0
    t = np.arange(0.0, 2 * BANDWIDTH_WINDOW_S, 1.0 / rate)
    slow = np.sin(2 * np.pi * 0.2 * t)
    v = np.where(t < BANDWIDTH_WINDOW_S, slow, np.sin(2 * np.pi * 3.0 * t))[:, None]
    assert leading_bandwidth(t, v) == pytest.approx(velocity_bandwidth(slow[t < BANDWIDTH_WINDOW_S, None], rate),
                                                    rel=0.05)
    assert leading_bandwidth(t, v) < 0.5
    jittered = t + np.random.default_rng(0).uniform(-2e-3, 2e-3, t.size)  # stamps as recorded: resampled first
    assert leading_bandwidth(np.sort(jittered), v) == pytest.approx(leading_bandwidth(t, v), abs=0.05)


def test_the_cutoff_rule_by_hand():
    assert passband_multiple(4) == pytest.approx(4.0 * 1e-5 ** (-1.0 / 8.0))  # 16.9
    assert passband_multiple(2) == pytest.approx(4.0 * 1e-5 ** (-1.0 / 4.0))
    choice = derived_cutoff(0.5, 1000.0, 4, 100.0)
    assert choice.cutoff_hz == pytest.approx(0.5 * passband_multiple(4))
    assert choice.decimate_hz == pytest.approx(max(100.0, DECIMATION_FACTOR * choice.cutoff_hz))
    fast = derived_cutoff(20.0, 500.0, 4, 100.0)  # the cutoff stays below 40 % of the sample rate
    assert fast.cutoff_hz == pytest.approx(NYQUIST_SHARE * 500.0) and fast.decimate_hz == 500.0  # at most the rate
    assert derived_cutoff(0.1, 1000.0, 4, None).decimate_hz is None  # keep every sample
    assert derived_cutoff(0.1, 1000.0, 4, 250.0).decimate_hz == 250.0  # at least the configured rate


def test_the_record_of_a_derived_cutoff():
    record = DerivedCutoff(0.75, 1000.0, 12.7, 101.6).to_dict()
    assert record == {"rule": "bandwidth", "bandwidth_hz": 0.75, "cutoff_hz": 12.7, "decimate_hz": 101.6,
                      "window_s": BANDWIDTH_WINDOW_S,
                      "description": "derived from bandwidth 0.75 Hz: cutoff 12.7 Hz at 1000 Hz sampling"}
