"""The blocks of a cross-validation: contiguous time blocks, or, where the motion repeats (an excitation run for
several periods), the phases of its period, so that no held-out stretch has its twin from another period in the
training. The period is found on motions of many shapes, lengths and repeat counts, with an approach before and a
hold after, and none is found where the motion does not repeat."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.estimation.time_blocks import BLOCKS, repeat_curve, repeat_period, time_blocks, validation_split


def multisine(samples: int, period: int, joints: int, seed: int) -> np.ndarray:
    """A sum of 5 harmonics of ``period`` samples per joint, random amplitudes and phases."""
    rng = np.random.default_rng(seed)
    t = np.arange(samples)[:, None, None]
    harmonic = np.arange(1, 6)[None, None, :]
    a, phase = rng.normal(0.0, 1.0, (2, joints, 5))
    return np.sum(a / harmonic * np.sin(2 * np.pi * harmonic * t / period + phase), axis=2)


def excitation_run(period: int, repeats: int, joints: int, seed: int, noise: float = 0.01) -> np.ndarray:
    """An approach (a ramp to the start), ``repeats`` periods, a hold, with white noise."""
    rng = np.random.default_rng(seed + 100)
    cycles = multisine(period * repeats, period, joints, seed)
    approach = np.linspace(np.zeros(joints), cycles[0], period // 3)
    hold = np.repeat(cycles[-1:], period // 5, axis=0)
    q = np.concatenate([approach, cycles, hold])
    return q + noise * rng.standard_normal(q.shape)


CASES = [(period, repeats, joints, seed) for period, repeats, joints, seed in
         [(500, 2, 6, 0), (1000, 2, 7, 1), (730, 3, 3, 2), (2001, 2, 2, 3), (300, 5, 6, 4), (1200, 4, 1, 5)]]


@pytest.mark.parametrize("period, repeats, joints, seed", CASES)
def test_the_period_of_a_repeated_excitation_is_found(period, repeats, joints, seed):
    q = excitation_run(period, repeats, joints, seed)
    found = repeat_period(q)
    assert found is not None and abs(found - period) <= max(2, 0.005 * period), (found, period)


@pytest.mark.parametrize("period, repeats, joints, seed", CASES)
def test_phase_blocks_hold_out_the_same_phase_of_every_period(period, repeats, joints, seed):
    q = excitation_run(period, repeats, joints, seed)
    split = validation_split(q)
    blocks, found = split.block, split.period
    assert found == repeat_period(q)
    assert np.array_equal(blocks[:-found], blocks[found:])  # a sample and its twin a period later: the same block
    counts = np.bincount(blocks, minlength=BLOCKS)
    whole = q.shape[0] // found * found  # each block a quarter of every whole period
    assert counts.size == BLOCKS and counts.min() >= whole // BLOCKS - q.shape[0] // found
    assert split.to_dict() == {"blocks_by": "phase", "repeat_samples": found} and str(found) in split.words()


def smooth_noise(samples: int, joints: int, seed: int, width: int = 60) -> np.ndarray:
    """Gaussian-smoothed random walks: a motion that never repeats."""
    rng = np.random.default_rng(seed)
    kernel = np.exp(-0.5 * (np.arange(-3 * width, 3 * width + 1) / width) ** 2)
    steps = rng.standard_normal((samples + kernel.size, joints))
    return np.stack([np.convolve(np.cumsum(steps[:, j]), kernel / kernel.sum(), "valid")[:samples]
                     for j in range(joints)], axis=1)


@pytest.mark.parametrize("motion", [
    lambda: smooth_noise(3000, 6, 0), lambda: smooth_noise(1500, 2, 1), lambda: smooth_noise(5000, 7, 2, 200),
    lambda: multisine(1000, 1000, 6, 3),  # one period only: nothing to repeat
    lambda: np.cumsum(np.ones((800, 3)), axis=0),  # a ramp
    lambda: np.sin(np.linspace(0, 30, 2000) ** 2)[:, None] * np.ones((1, 2)),  # a chirp
], ids=["walk6", "walk2", "slow_walk7", "one_period", "ramp", "chirp"])
def test_a_motion_that_does_not_repeat_keeps_contiguous_time_blocks(motion):
    q = motion()
    assert repeat_period(q) is None
    split = validation_split(q)
    assert np.array_equal(split.block, time_blocks(q.shape[0])) and split.period is None
    assert split.to_dict() == {"blocks_by": "time"}


def test_the_repeat_curve_is_zero_at_an_exact_repeat_and_high_half_a_period_later():
    period = 400
    q = multisine(3 * period, period, 4, 7)
    lags, curve = repeat_curve(q)
    assert curve[lags == period][0] == pytest.approx(0.0, abs=1e-9)
    assert curve[lags == period // 2][0] > 0.3
    long = multisine(20 * period, period, 4, 7)  # a long run is looked at every k-th lag, then refined
    assert repeat_period(long) == period
    assert repeat_period(np.zeros((100, 2))) is None  # no motion: nothing to split by phase
