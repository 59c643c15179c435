"""From recorded joint states to the data of the regression: q, q', q'', filtered and raw torque.

``process`` resamples to a uniform grid (real stamps jitter: 0.7-8.8 ms steps on the Panda of
Gaz et al. 2019), low-passes q and q' with a zero-phase Butterworth filter (forward-backward, so no
phase lag between motion and torque), differentiates the filtered velocity by central
differences, trims the filter transients at both ends and decimates. The kept samples are
*recorded* samples (the recorded one nearest to each point of the decimated grid), so ``tau_raw``
is the recorded effort itself, unfiltered and not interpolated: the reference of the relative
error (Sousa & Cortesão 2014 eq. 84 and Table 8).

Defaults were chosen on the real Panda run of Gaz et al. 2019: OLS on the base
regressor of the first 70 %, relative error on the last 30 % against the raw torque (see
``ProcessingOptions``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

import numpy as np

from dynid_ros.data.bandwidth import (
    BANDWIDTH_WINDOW_S,
    DerivedCutoff,
    derived_cutoff,
    leading_bandwidth,
    position_bandwidth,
)
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.errors import ConfigError, DataError

VELOCITY_SOURCES = ("measured", "differentiate")
PAD_PERIODS = 3.0
"""Odd-extension padding of the forward-backward filter, in periods of the cutoff: with scipy's
default (15 samples) the transients cost 0.3 points of held-out error on the Panda run."""


def apply_effort_scale(series: JointStateSeries, scale: list[float] | tuple[float, ...] | np.ndarray
                       ) -> JointStateSeries:
    """Torque ``tau_j = k_j * effort_j`` per joint (motor current to torque, Pennese et al. 2021 eq. 2)."""
    k = effort_scale_vector(scale, series.names)
    if series.effort is None:
        raise DataError("cannot scale the effort: the joint states have no effort")
    return JointStateSeries(list(series.names), series.t, series.position, series.velocity, series.effort * k,
                            dict(series.info))


def effort_scale_vector(scale: list[float] | tuple[float, ...] | np.ndarray, names: list[str]) -> np.ndarray:
    """The per-joint factors of ``--effort-scale`` for the joints ``names``, checked."""
    k = np.asarray(scale, dtype=float).reshape(-1)
    if k.size != len(names):
        raise ConfigError(f"--effort-scale has {k.size} value(s) for {len(names)} joints ({', '.join(names)})")
    if not np.isfinite(k).all():
        raise ConfigError(f"--effort-scale must be finite numbers, got {k.tolist()}")
    return k


CUTOFF_AUTO = "auto"
"""The ``cutoff_hz`` chosen on the data by time-blocked cross-validation on the leading window
(:mod:`dynid_ros.identification.cutoff_selection`), where the caller can score a cutoff (a :data:`CutoffChooser`:
the identification, with its model); elsewhere the bandwidth rule's."""
CUTOFF_BANDWIDTH = "bandwidth"
"""The ``cutoff_hz`` derived from the excitation's bandwidth and the sample rate (:mod:`dynid_ros.data.bandwidth`)."""
CUTOFF_CHECKED = "checked"
"""The ``cutoff_hz`` of the bandwidth rule, checked by the identification's time-blocked cross-validation on the
leading window: the cutoff that cross-validation picks replaces it only where it predicts better overall and
significantly over the time blocks (a paired t-test, :mod:`dynid_ros.identification.cutoff_selection`); the
bandwidth rule's where nothing can score a cutoff. The default."""

CUTOFF_RULES = (CUTOFF_AUTO, CUTOFF_BANDWIDTH, CUTOFF_CHECKED)
"""The values of ``cutoff_hz`` that name how the cutoff is found (else it is a number [Hz])."""

CutoffChooser = Callable[[np.ndarray, "list[np.ndarray | None]", "ProcessingOptions", float,
                          "DerivedCutoff | None"], "tuple[ProcessingOptions, dict]"]
"""``choose(t, fields, options, rate, rule) -> (options, record)``: the processing options with a cutoff chosen on
the leading window's samples (stamps ``t``; position, velocity, effort ``fields``, None where not recorded; sample
``rate`` [Hz]) and the record of how (``processing.cutoff_choice``); ``rule``: the bandwidth rule's cutoff to check
(``checked``), None to choose freely (``auto``)."""


@dataclass(init=False)
class ProcessingOptions:
    """How joint states become regression data. Every field has a default; unknown keys raise ConfigError.

    The cutoff is derived from the excitation's bandwidth by default (``bandwidth``); ``auto`` chooses it by
    time-blocked cross-validation on the first minute, streamed (:mod:`dynid_ros.identification.cutoff_selection`;
    ``python benchmarks/cutoff_rule.py``). The other defaults were
    measured
    on the real Panda run (OLS on the first 70 %, relative error against the raw torque on the last 30 %,
    decimation 100 Hz; ``python benchmarks/tune_processing.py``): cutoff
    2 / 3 / 5 / 6 / 8 / 10 / 15 / 20 / 30 Hz gave 3.22 / 2.77 / 2.68 / 2.66 / 2.68 / 2.72 / 3.11 / 3.74 /
    5.24 %. The measured velocity beats the differentiated position (6 Hz: 2.66 vs 2.78 %); decimation
    to 100 / 200 Hz or none: 2.66 / 2.69 / 2.69 %; the torque cutoff and the order (2-6) change it by
    < 0.02 points. 6 Hz passes motion up to ~3 Hz unchanged (gain > 0.999), above the band of usual
    excitation trajectories (Gaz et al. 2019: 0.075 Hz fundamental, 5 harmonics).

    Attributes:
        rate_hz: rate of the uniform grid the data is resampled to [Hz]; None = the median rate of the data.
        cutoff_hz: Butterworth cutoff for q and q' [Hz]; ``"auto"`` (:data:`CUTOFF_AUTO`): chosen by
            the identification by time-blocked cross-validation on the data's first ``BANDWIDTH_WINDOW_S`` seconds
            (:mod:`dynid_ros.identification.cutoff_selection`; streamed, the decimation with it), the bandwidth
            rule's where nothing can score a cutoff; ``"bandwidth"`` (:data:`CUTOFF_BANDWIDTH`): derived from the
            excitation's bandwidth (measured on the same samples) and the sample rate (:mod:`dynid_ros.data.bandwidth`);
            ``"checked"`` (:data:`CUTOFF_CHECKED`, the default): the bandwidth rule's, replaced by the one the
            cross-validation picks where that predicts better, significantly over the time blocks. Either way the
            number used is stored (``cutoff_hz``, ``decimate_hz``) with how it was found (``cutoff_choice``).
        order: Butterworth order (applied forward and backward: the effective order is twice this).
        velocity_source: "measured" (the recorded velocity, filtered), "differentiate" (the derivative of the
            filtered position), or None (the default): measured when the joint states carry a velocity for every
            joint, else differentiated, and :attr:`ProcessedData.notes` says so (several drivers publish none).
        decimate_hz: rate of the regression samples [Hz]; None = keep every sample.
        trim_s: seconds removed at both ends (filter transients).
        tau_cutoff_hz: Butterworth cutoff of the torque used for the fit [Hz]; None = ``cutoff_hz``.
        min_speed: rows of joint j at samples where ``|q'_j| < min_speed`` [rad/s or m/s] are left out of the
            fit (not of the validation): while a joint sticks, Coulomb friction is not ``fc sign(q')``.
        gap_s: a step between stamps longer than this [s] is a gap that splits the data into segments processed
            separately; None = the larger of ``GAP_PERIODS`` median sample periods and ``GAP_CUTOFF_FRACTION`` of
            the cutoff period (:func:`gap_threshold`).
        chunk_s: seconds of recording processed at a time when a bag is streamed (``dynid identify``, ``dynid
            validate``: the bag is read in chunks, only the decimated samples are kept; the result equals that of
            a whole segment at once to round-off, :func:`process_rows`); None: each segment at once.
    """

    rate_hz: float | None = None
    cutoff_hz: float | str = CUTOFF_CHECKED
    order: int = 4
    velocity_source: str | None = None
    decimate_hz: float | None = 100.0
    trim_s: float = 0.1
    tau_cutoff_hz: float | None = None
    min_speed: float = 0.0
    gap_s: float | None = None
    chunk_s: float | None = 30.0

    def __init__(self, **values: object) -> None:
        names = [f.name for f in fields(self)]
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ConfigError(f"unknown processing option(s) {', '.join(unknown)}; known: {', '.join(names)}")
        for name in names:
            setattr(self, name, values.get(name, getattr(type(self), name)))
        self.check()

    @classmethod
    def from_dict(cls, values: dict | None) -> ProcessingOptions:
        """Options from a config mapping (e.g. the ``processing:`` section)."""
        return cls(**(values or {}))

    @classmethod
    def from_record(cls, record: dict | None) -> ProcessingOptions:
        """The options of a result's ``processing`` record, which also holds what processing found (e.g.
        ``segments``, ``torque_signs``): only the option keys are read."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (record or {}).items() if k in names})

    def check(self) -> None:
        """Raise ConfigError for invalid values (and normalise numbers)."""
        for name in ("rate_hz", "cutoff_hz", "decimate_hz", "tau_cutoff_hz", "trim_s", "min_speed", "gap_s", "chunk_s"):
            value = getattr(self, name)
            if value is None and name not in ("cutoff_hz", "trim_s", "min_speed"):
                continue
            if name == "cutoff_hz" and value in CUTOFF_RULES:
                continue
            try:
                number = float(value)
            except (TypeError, ValueError) as err:
                raise ConfigError(f"processing option {name} must be a number, got {value!r}") from err
            may_be_zero = name in ("trim_s", "min_speed")
            if not np.isfinite(number) or number < 0 or (number == 0 and not may_be_zero):
                raise ConfigError(f"processing option {name} must be {'>= 0' if may_be_zero else '> 0'}, "
                                  f"got {value!r}")
            setattr(self, name, number)
        if isinstance(self.order, bool) or not isinstance(self.order, (int, np.integer)) or not 1 <= self.order <= 12:
            raise ConfigError(f"processing option order must be an integer 1..12, got {self.order!r}")
        self.order = int(self.order)
        if self.velocity_source is not None and self.velocity_source not in VELOCITY_SOURCES:
            raise ConfigError(f"processing option velocity_source must be one of {', '.join(VELOCITY_SOURCES)}, "
                              f"got {self.velocity_source!r}")


@dataclass
class ProcessedData:
    """Regression data at N kept samples of n joints.

    Attributes:
        t: times of the kept samples [s], as in the input (N,).
        q, dq, ddq: filtered position, velocity and acceleration (N, n).
        tau: filtered effort, the fit target (N, n).
        tau_raw: recorded effort at the same samples, unfiltered (N, n).
        rate_hz: rate of the uniform grid the filters ran at.
        options: the options used, with the numbers of a derived cutoff and decimation and the velocity source.
        cutoff_choice: how a derived cutoff was found (:meth:`dynid_ros.data.bandwidth.DerivedCutoff.to_dict`).
        segments: the runs of samples between gaps in the stamps: ``start_s``, ``end_s`` (from the first
            sample), ``samples``, ``used`` (False, with ``reason``, for a segment too short to filter).
    """

    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    tau: np.ndarray
    tau_raw: np.ndarray
    rate_hz: float
    segments: list[dict] = field(default_factory=list)
    options: ProcessingOptions | None = None
    cutoff_choice: dict | None = None
    notes: list[str] = field(default_factory=list)
    """What the user may like to know about the processing (e.g. velocities differentiated by default)."""


def resample(t: np.ndarray, values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Linear interpolation of the columns of ``values`` (N, n) at times ``grid`` (M,), vectorized."""
    index = np.clip(np.searchsorted(t, grid, side="right") - 1, 0, t.size - 2)
    weight = ((grid - t[index]) / (t[index + 1] - t[index]))[:, None]
    return values[index] * (1.0 - weight) + values[index + 1] * weight


def _lowpass(values: np.ndarray, cutoff_hz: float, order: int, rate_hz: float, segment: int | None = None
             ) -> np.ndarray:
    """Zero-phase Butterworth low-pass of the columns; ``segment``: the length of the whole segment ``values``
    is a part of (the padding is that of the whole segment), default ``values``' own."""
    import scipy.signal

    sos = _butter(cutoff_hz, order, rate_hz)
    padlen = min((values.shape[0] if segment is None else segment) - 1, int(np.ceil(PAD_PERIODS * rate_hz / cutoff_hz)))
    return scipy.signal.sosfiltfilt(sos, values, axis=0, padlen=padlen)


def _butter(cutoff_hz: float, order: int, rate_hz: float) -> np.ndarray:
    import scipy.signal

    if cutoff_hz >= 0.5 * rate_hz:
        raise ConfigError(f"cutoff {cutoff_hz:g} Hz must be below half the sampling rate ({0.5 * rate_hz:g} Hz)")
    return scipy.signal.butter(order, cutoff_hz, fs=rate_hz, output="sos")


EDGE_TOLERANCE = 1e-12
"""Streamed processing: the filter's transient at a chunk's edge must have decayed below this (relative)."""
STATE_GAIN_MARGIN = 1e3
"""...allowing for a filter state up to this many times the signal (the transient starts from a wrong state)."""


def settle_samples(cutoff_hz: float, order: int, rate_hz: float, tolerance: float = EDGE_TOLERANCE) -> int:
    """Samples after which every mode of the Butterworth filter has decayed below ``tolerance / STATE_GAIN_MARGIN``:
    ``|p|^k`` for the slowest pole ``p`` (the forward and the backward pass each start a chunk from a wrong state;
    beyond this many samples from a chunk's edge its zero-phase output equals the whole segment's)."""
    import scipy.signal

    _, poles, _ = scipy.signal.sos2zpk(_butter(cutoff_hz, order, rate_hz))
    radius = float(np.max(np.abs(poles)))
    return int(np.ceil(np.log(tolerance / STATE_GAIN_MARGIN) / np.log(radius))) + 2  # + the central differences


def min_samples(order: int) -> int:
    """Fewest uniform samples ``sosfiltfilt`` needs for a Butterworth filter of ``order``."""
    sections = (order + 1) // 2
    return 3 * (2 * sections + 1) + 1


GAP_PERIODS = 5.0
"""A step between stamps longer than this many median sample periods may be a gap (see ``gap_threshold``)."""
GAP_CUTOFF_FRACTION = 0.1
"""...and only when it is also longer than this fraction of the cutoff period: linear interpolation across a step
``h`` errs by at most ``(2 pi f h)^2 / 8`` of a sine's amplitude at frequency ``f``, i.e. < 5 % at the cutoff and
< 1.3 % at half of it for ``h = 0.1 / cutoff`` (bridging such a step is harmless; a longer one is not)."""


def gap_threshold(t: np.ndarray, options: ProcessingOptions) -> float:
    """The shortest step between stamps [s] that splits the data into segments (``options.gap_s`` when set)."""
    if options.gap_s is not None:
        return float(options.gap_s)
    return max(GAP_PERIODS * float(np.median(np.diff(t))), GAP_CUTOFF_FRACTION / options.cutoff_hz)


def segments(t: np.ndarray, threshold: float) -> list[slice]:
    """The runs of samples between steps longer than ``threshold``."""
    cuts = (np.flatnonzero(np.diff(t) > threshold) + 1).tolist()
    return [slice(a, b) for a, b in zip([0] + cuts, cuts + [t.size])]


Fetch = Callable[[int, int], "list[np.ndarray | None]"]
"""``fetch(a, b)``: position, velocity, effort (None where not recorded) of samples ``[a, b)``; successive calls
never start before an earlier one (a bag read in order: :class:`dynid_ros.data.bag_stream.BagRows`)."""


def process(series: JointStateSeries, options: ProcessingOptions | None = None,
            chunk_s: float | None = None, chooser: CutoffChooser | None = None) -> ProcessedData:
    """Filtered q, q', q'' and torque at recorded samples, for the regression (module docstring).

    Gaps in the stamps (steps longer than :func:`gap_threshold`: a dropped connection, a paused recording) split
    the data into segments, each resampled, filtered, differentiated and trimmed on its own, never interpolated
    across; a segment too short to filter is left out. ``ProcessedData.segments`` reports them all.
    ``chunk_s``: process ``chunk_s`` seconds at a time (:func:`process_rows`), None: each segment at once;
    ``chooser``: how ``cutoff_hz: auto`` is chosen (:func:`process_rows`)."""
    options = options or ProcessingOptions()
    check_fields(series.velocity is not None, series.effort is not None, options)
    fields = [series.position, series.velocity, series.effort]
    return process_rows(np.asarray(series.t, dtype=float), lambda a, b: [None if f is None else f[a:b] for f in fields],
                        options, chunk_s, chooser)


def check_fields(velocity: bool, effort: bool, options: ProcessingOptions) -> None:
    """DataError when the joint states lack the effort, or the velocity the options ask for explicitly."""
    if not effort:
        raise DataError("the joint states have no effort (torque)")
    if options.velocity_source == "measured" and not velocity:
        raise DataError("the joint states have no velocity, but processing velocity_source: measured asks for it; "
                        "leave velocity_source unset (or differentiate) to differentiate the positions")


DIFFERENTIATED_NOTE = ("not every joint has a recorded velocity: the velocities are differentiated from the filtered "
                       "positions (processing velocity_source: differentiate)")
"""The note of a recording without velocities processed with the default velocity source."""


def resolved_velocity_source(options: ProcessingOptions, has_velocity: bool) -> tuple[ProcessingOptions, list[str]]:
    """``options`` with the default velocity source (None) resolved: measured when the joint states carry a
    velocity for every joint, else differentiate, with a note."""
    if options.velocity_source is not None:
        return options, []
    if has_velocity:
        return replace(options, velocity_source="measured"), []
    return replace(options, velocity_source="differentiate"), [DIFFERENTIATED_NOTE]


def process_rows(t: np.ndarray, fetch: Fetch, options: ProcessingOptions, chunk_s: float | None = None,
                 chooser: CutoffChooser | None = None) -> ProcessedData:
    """:func:`process` of the samples at stamps ``t`` whose values ``fetch`` returns, ``chunk_s`` seconds of each
    segment at a time (None: a segment at once).

    Each chunk is resampled, filtered and differentiated on the segment's grid with :func:`settle_samples` of
    the segment around it on both sides (the zero-phase filter's transient from the chunk's edges has decayed
    below ``EDGE_TOLERANCE`` there) and the segment's own padding at its ends: the kept samples are those of the
    whole segment processed at once (to round-off). Only the kept (decimated) samples are held.

    A cutoff not given as a number is found first, on the samples of the first ``BANDWIDTH_WINDOW_S`` seconds (read
    once; a streamed bag keeps them for the first chunk): ``auto`` by ``chooser`` (the identification's time-blocked
    cross-validation), ``checked`` by the bandwidth rule (:func:`with_derived_cutoff`) checked by ``chooser``, or,
    without a chooser, and for ``bandwidth``, by the bandwidth rule."""
    if t.size < 2 or not np.all(np.diff(t) > 0):
        raise DataError("sample times must be strictly increasing (at least 2 samples)")
    rate = options.rate_hz or 1.0 / float(np.median(np.diff(t)))
    first_velocity = fetch(0, 1)[1]  # a joint without a recorded velocity is a column of NaN
    options, notes = resolved_velocity_source(options, first_velocity is not None and
                                              bool(np.isfinite(first_velocity).all()))
    choice = None
    if options.cutoff_hz in (CUTOFF_AUTO, CUTOFF_CHECKED) and chooser is not None:
        stop = leading_samples(t)
        leading = fetch(0, stop)  # read once: the rule and the chooser see the same samples
        rule = cutoff_from_leading(t[:stop], leading, options, rate)[1] if options.cutoff_hz == CUTOFF_CHECKED \
            else None
        options, choice = chooser(t[:stop], leading, options, rate, rule)
    elif options.cutoff_hz in CUTOFF_RULES:
        options, derived = with_derived_cutoff(t, fetch, options, rate)
        choice = derived.to_dict()
    parts, report, reasons = [], [], []
    for part in segments(t, gap_threshold(t, options)):
        entry = {"start_s": float(t[part.start] - t[0]), "end_s": float(t[part.stop - 1] - t[0]),
                 "samples": part.stop - part.start, "used": True}
        try:
            parts.append(_process_segment(t, part, fetch, options, rate, chunk_s))
        except _TooShort as err:
            entry.update(used=False, reason=str(err))
            reasons.append(str(err))
        report.append(entry)
    if not parts:
        raise DataError(reasons[0] if len(reasons) == 1 else
                        f"no segment between the {len(reasons) - 1} gaps in the stamps is long enough: {reasons[0]}")
    keep = np.concatenate([k for k, _ in parts])
    values = parts[0][1] if len(parts) == 1 else np.vstack([v for _, v in parts])
    del parts
    n = values.shape[1] // 5
    return ProcessedData(t=t[keep], q=values[:, :n], dq=values[:, n:2 * n], ddq=values[:, 2 * n:3 * n],
                         tau=values[:, 3 * n:4 * n], tau_raw=values[:, 4 * n:], rate_hz=float(rate), segments=report,
                         options=options, cutoff_choice=choice, notes=notes)


def leading_samples(t: np.ndarray) -> int:
    """How many of the samples at stamps ``t`` lie in the first ``BANDWIDTH_WINDOW_S`` seconds (at least 2)."""
    return max(2, int(np.searchsorted(t, t[0] + BANDWIDTH_WINDOW_S, side="right")))


def with_derived_cutoff(t: np.ndarray, fetch: Fetch, options: ProcessingOptions, rate: float
                        ) -> tuple[ProcessingOptions, DerivedCutoff]:
    """``options`` with the cutoff and decimation derived from the bandwidth of the motion in the first
    ``BANDWIDTH_WINDOW_S`` seconds at stamps ``t`` (read with ``fetch`` from the first sample: a streamed bag keeps
    them for the first chunk) and the sample ``rate`` (:mod:`dynid_ros.data.bandwidth`)."""
    stop = leading_samples(t)
    return cutoff_from_leading(t[:stop], fetch(0, stop), options, rate)


def cutoff_from_leading(t: np.ndarray, leading: tuple, options: ProcessingOptions, rate: float
                        ) -> tuple[ProcessingOptions, DerivedCutoff]:
    """:func:`with_derived_cutoff` of the leading window's samples already read: stamps ``t`` and ``leading`` =
    (position, velocity, effort) as ``fetch`` returns them."""
    position, velocity, _ = leading
    differentiate = options.velocity_source == "differentiate" or velocity is None
    signal = np.asarray(position if differentiate else velocity, dtype=float)
    finite = np.isfinite(signal).all(axis=1)
    if finite.sum() < 2:
        raise DataError(f"no finite {'position' if differentiate else 'velocity'} in the data's first samples to "
                        "derive a filter cutoff from; give processing cutoff_hz")
    bandwidth = (position_bandwidth(t[finite], signal[finite], options.order, rate) if differentiate
                 else leading_bandwidth(t[finite], signal[finite], rate))
    choice = derived_cutoff(bandwidth, rate, options.order, options.decimate_hz)
    return replace(options, cutoff_hz=choice.cutoff_hz, decimate_hz=choice.decimate_hz), choice


class _TooShort(DataError):
    """A segment too short to filter."""


def _kept_samples(t: np.ndarray, grid_first: float, grid_last: float, options: ProcessingOptions) -> np.ndarray:
    """Indices (into the segment's ``t``) of the kept samples: the recorded samples nearest to the decimated grid
    inside the trimmed window."""
    step = 1.0 / (options.decimate_hz or 1.0)
    first, last = grid_first + options.trim_s, grid_last - options.trim_s
    targets = np.arange(first, last + 1e-12, step) if options.decimate_hz else t[(t >= first) & (t <= last)]
    nearest = np.clip(np.searchsorted(t, targets), 1, t.size - 1)
    nearest -= (targets - t[nearest - 1]) < (t[nearest] - targets)
    keep = np.unique(nearest)
    keep = keep[(t[keep] >= first) & (t[keep] <= last)]
    if keep.size < 2:
        raise _TooShort(f"too few samples left after trimming {options.trim_s:g} s at both ends: {keep.size}")
    return keep


def _process_segment(t_all: np.ndarray, part: slice, fetch: Fetch, options: ProcessingOptions, rate: float,
                     chunk_s: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Indices (into ``t_all``) of the kept samples of one segment and their [q, q', q'', tau, tau_raw] (N, 5n)."""
    t = t_all[part]
    n_grid = int(np.floor((t[-1] - t[0]) * rate + 1e-9)) + 1
    needed = max(min_samples(options.order), int(np.ceil(2 * options.trim_s * rate)) + 3)
    if n_grid < needed:
        raise _TooShort(f"too few samples to filter: {n_grid} at {rate:.1f} Hz ({t[-1] - t[0]:.3f} s), need at "
                        f"least {needed} (order {options.order}, trim {options.trim_s:g} s at both ends)")
    grid = t[0] + np.arange(n_grid) / rate
    keep = _kept_samples(t, grid[0], grid[-1], options)
    at = np.clip(np.searchsorted(grid, t[keep], side="right") - 1, 0, n_grid - 2)  # grid interval of each
    span = n_grid if chunk_s is None else max(1, int(chunk_s * rate))
    margin = settle_samples(min(options.cutoff_hz, options.tau_cutoff_hz or options.cutoff_hz), options.order, rate)
    bounds = np.searchsorted(at, np.arange(0, n_grid + span, span)).tolist()
    out = None
    for k0, k1 in zip(bounds[:-1], bounds[1:]):
        if k1 <= k0:
            continue
        a, b = (0, n_grid) if chunk_s is None else \
            (max(0, int(at[k0]) - margin), min(n_grid, int(at[k1 - 1]) + 2 + margin))
        values = _chunk_values(t, part.start, keep[k0:k1], grid[a:b], n_grid, fetch, options, rate)
        if out is None:
            out = np.empty((keep.size, values.shape[1]))
        out[k0:k1] = values
    return keep + part.start, out


def _chunk_values(t: np.ndarray, offset: int, keep: np.ndarray, grid: np.ndarray, n_grid: int, fetch: Fetch,
                  options: ProcessingOptions, rate: float) -> np.ndarray:
    """[q, q', q'', tau, tau_raw] at the kept samples ``keep`` (into the segment's ``t``), filtered on ``grid`` (a
    part of the segment's grid of ``n_grid`` points); ``offset``: the segment's first sample."""
    r0 = int(np.clip(np.searchsorted(t, grid[0], side="right") - 1, 0, t.size - 2))
    r1 = int(np.clip(np.searchsorted(t, grid[-1], side="right") - 1, 0, t.size - 2)) + 2
    r1 = max(r1, int(keep[-1]) + 1)
    position, velocity, effort = fetch(offset + r0, offset + r1)
    stacked = [position, effort] + ([velocity] if options.velocity_source == "measured" else [])
    uniform = resample(t[r0:r1], np.hstack(stacked), grid)
    n = position.shape[1]
    q = _lowpass(uniform[:, :n], options.cutoff_hz, options.order, rate, n_grid)
    tau = _lowpass(uniform[:, n:2 * n], options.tau_cutoff_hz or options.cutoff_hz, options.order, rate, n_grid)
    if options.velocity_source == "measured":
        dq = _lowpass(uniform[:, 2 * n:], options.cutoff_hz, options.order, rate, n_grid)
    else:
        dq = np.gradient(q, 1.0 / rate, axis=0)
    ddq = np.gradient(dq, 1.0 / rate, axis=0)
    filtered = resample(grid, np.hstack([q, dq, ddq, tau]), t[keep])
    return np.hstack([filtered, np.asarray(effort, dtype=float)[keep - r0]])
