"""The blocks every data-driven choice cross-validates on: contiguous time blocks (the filter cutoff, position-dependent
terms, effort gains), blocked cross-validation for dependent data, where neighbouring samples are alike and a random
split would score the noise as signal (Roberts et al. 2017, Bergmeir & Benítez 2012); and, for the wide-prior check
and the comparison with least squares, :func:`validation_split`: by the phase of the period where the motion repeats
(an excitation run for several periods), else the same time blocks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BLOCKS = 4
"""Contiguous time blocks of the cross-validation."""


def time_blocks(n_samples: int) -> np.ndarray:
    """The block (0 .. ``BLOCKS - 1``) of each of ``n_samples`` samples: ``BLOCKS`` contiguous runs of equal length."""
    return np.minimum(np.arange(n_samples) * BLOCKS // max(n_samples, 1), BLOCKS - 1)


DECORRELATED = 0.3
""":func:`repeat_curve` above this: the motion has moved on from where it was (a repeat is looked for after the first
lag where it is)."""
REPEAT_TOLERANCE = 0.1
""":func:`repeat_curve` below this at a lag after the motion decorrelated: the motion repeats with that period
(sensor noise alone leaves 1e-3 on the simulated arms; a motion that does not repeat stays near its median of
independent values, 0.45 for one joint and above for several, as on the real Panda run)."""
LONGEST_LAG = 0.6
"""The longest period looked for, as a share of the run: two periods, less the samples the processing trims at the
ends (or a gap), still overlap on 40 % of the run."""
COARSE_SAMPLES = 1500
""":func:`repeat_curve` looks at most this many samples per lag (every k-th), then refines about its minimum."""


def _mismatch(x: np.ndarray, lags: np.ndarray, stride: int = 1) -> np.ndarray:
    """Per lag, the median over the overlap of ``|x(t + L) - x(t)|^2`` over twice the mean of ``|x|^2``."""
    energy = 2.0 * float(np.mean(np.sum(x**2, axis=1)))
    picked = x[::stride]
    out = np.ones(lags.size)
    for i, lag in enumerate(lags):
        if 0 < lag < x.shape[0]:
            ahead = x[lag:][::stride]
            out[i] = np.median(np.sum((ahead - picked[:ahead.shape[0]]) ** 2, axis=1)) / energy
    return out


def _normalised(q: np.ndarray) -> np.ndarray:
    """Each joint's position with its mean removed, over its standard deviation; the joints that do not move left
    out."""
    x = np.asarray(q, dtype=float)
    x = x - x.mean(axis=0)
    spread = x.std(axis=0)
    moving = spread > 1e-12 * max(float(spread.max(initial=0.0)), 1e-300)
    return x[:, moving] / spread[moving]


def repeat_curve(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lags, curve)``: per lag ``L`` (in samples, up to :data:`LONGEST_LAG` of the run: two repeats, nearly), how
    far the motion ``q`` (samples, n_dof) is from repeating after ``L``: the median over the overlap of ``|x(t + L)
    - x(t)|^2`` over twice the mean of ``|x|^2``, ``x`` each joint's position with its mean removed, over its
    standard deviation. 0: a repeat, noise apart; near 1: unrelated. The median, not the mean: an approach before
    the periods and a hold after them do not repeat, and must not hide the stretch that does. On every k-th lag and
    sample where the run is long (:data:`COARSE_SAMPLES`); :func:`repeat_period` refines about the minimum."""
    x = _normalised(q)
    if x.shape[1] == 0 or x.shape[0] < 8:
        return np.zeros(0, dtype=int), np.zeros(0)
    stride = max(1, int(np.ceil(x.shape[0] / COARSE_SAMPLES)))
    lags = np.arange(stride, int(LONGEST_LAG * x.shape[0]) + 1, stride)
    return lags, _mismatch(x, lags, stride)


def repeat_period(q: np.ndarray) -> int | None:
    """The period [samples] with which the motion ``q`` repeats at least twice (an excitation run for several
    periods), or None: the first dip of :func:`repeat_curve` below :data:`REPEAT_TOLERANCE` after it first rose above
    :data:`DECORRELATED`, at its minimum (refined to the sample)."""
    lags, curve = repeat_curve(q)
    moved = np.nonzero(curve > DECORRELATED)[0]
    if moved.size == 0:
        return None
    repeats = np.nonzero(curve[moved[0]:] < REPEAT_TOLERANCE)[0]
    if repeats.size == 0:
        return None
    k = int(moved[0] + repeats[0])
    while k + 1 < curve.size and curve[k + 1] < curve[k]:
        k += 1
    stride = int(lags[1] - lags[0]) if lags.size > 1 else 1
    if stride == 1:
        return int(lags[k])
    x = _normalised(q)
    fine = np.arange(max(1, lags[k] - stride), lags[k] + stride + 1)
    return int(fine[np.argmin(_mismatch(x, fine, stride))])


@dataclass(frozen=True)
class ValidationSplit:
    """The blocks of a cross-validation that judges what a fit predicts of motion it has not seen
    (:func:`validation_split`): the block (0 .. ``BLOCKS - 1``) of each sample, and the motion's period [samples]
    where they are by its phase (None: contiguous time blocks)."""

    block: np.ndarray
    period: int | None

    def to_dict(self) -> dict:
        """``report.json``: ``blocks_by`` ``phase`` (with ``repeat_samples``, the period in processed samples) or
        ``time``."""
        return {"blocks_by": "time"} if self.period is None else {"blocks_by": "phase", "repeat_samples": self.period}

    def words(self) -> str:
        """For a console line or the report."""
        return split_words(self.period)


def split_words(period: int | None) -> str:
    """How a window of a motion repeating every ``period`` samples (None: not repeating) is split, in words."""
    if period is None:
        return f"{BLOCKS} time blocks"
    return f"{BLOCKS} blocks by the phase of the motion's repeat ({period} samples)"


def validation_split(q: np.ndarray) -> ValidationSplit:
    """The blocks of the motion ``q`` (samples, n_dof) for a cross-validation that judges what a fit predicts of motion
    it has not seen: where the motion repeats (:func:`repeat_period`), the ``BLOCKS`` equal parts of its period, each
    held out in every repeat at once; else :func:`time_blocks`. Contiguous time blocks of a repeated excitation hold
    out a stretch whose twin from another period is in the training: the cross-validation then scores the noise, not
    the prediction of new motion (measured on the simulated arms, two periods in four blocks: the wide-prior check's
    errors within 0.5 % of each other at every prior width and no guide to the held-out run; by phase, the evidence's
    prior 0.6-12 % better than a 3-100x wider one; ``benchmarks/default_vs_ols.py``)."""
    n_samples = np.asarray(q).shape[0]
    period = repeat_period(q)
    if period is None:
        return ValidationSplit(time_blocks(n_samples), None)
    return ValidationSplit((np.arange(n_samples) % period) * BLOCKS // period, int(period))
