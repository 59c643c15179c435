"""The excitation's bandwidth and the filter cutoff and decimation derived from it and the sample rate
(``processing: cutoff_hz: bandwidth``; the default ``checked`` starts from it).

**The bandwidth** ``B`` is the frequency below which :data:`BANDWIDTH_ENERGY` of the joint velocities' energy lies
(mean removed, Hann-tapered: the edges of a window cut through a motion would leak energy as 1/f^2 and double ``B``
on a 15 s window of the real Panda; summed over the joints). It is measured on the first :data:`BANDWIDTH_WINDOW_S`
seconds of the identification window only: bounded memory and cost whatever the bag's length, and the same samples
whether the data are in memory or streamed from a bag (:func:`dynid_ros.data.signal_processing.process_rows` reads
them once, before processing, and keeps them for its first chunk), so the streamed result equals the in-memory
one. An excitation trajectory is periodic (Gaz et al. 2019; the shipped ones: 10 s periods), so the window holds
several periods; an idle lead-in only adds energy at 0 Hz. On a window of a few seconds the taper's main lobe
(``2 / T`` wide) raises ``B`` (a 0.6 Hz sine on 8 s reads 0.75 Hz): the cutoff errs high, towards passing the
torque.

**The cutoff** must pass the torque the model explains and stop the rest. Along a motion whose velocities lie below
``B``, the rigid-body torque ``M(q) q'' + C(q, q') q' + g(q)`` is a product of the motion (``q''`` below ``B``,
``q'_i q'_j`` below ``2B``) and of trigonometric functions of ``q`` (phase modulation: Carson's rule adds the peak
rate of change); measured on the embedded robots' excitations (analytic motion, nominal model), 99.99 % of each
joint's torque energy lies below :data:`TORQUE_HARMONICS` ``= 4`` times ``B`` (3.8 ``B`` on the Panda, 3.6 ``B`` on
the UR5e). The zero-phase Butterworth filter of order ``n`` (applied forward and backward: gain
``1 / (1 + (f / f_c)^(2n))``) changes that band by at most :data:`PASSBAND_LOSS` (below a torque sensor's
resolution) when ``f_c >= 4 B * PASSBAND_LOSS^(-1 / (2n))``: 16.9 ``B`` at order 4. The motion's own high-frequency
content (tracking transients of the joint controllers) passes with it; what lies above is sensor noise and
vibration. The cutoff stays below :data:`NYQUIST_SHARE` of the sample rate (the filter must still stop something).
Measured (``benchmarks/cutoff_rule.py``, held-out errors of the default identification): time-blocked
cross-validation picks 16 ``B`` on the real Panda of Gaz et al. 2019 (2.691 %; the rule 2.692 %; 33 ``B`` scores
0.13 points worse, 66 ``B`` 2.8 points) and on a simulated UR10 (1.203 %; the rule 1.206 %), and 64 ``B``, its
highest candidate, on the other simulated arms (0.6-30 kg, little sensor noise; the rule: 0.76-1.95 %, between the
cross-validated 0.64-1.54 % and the former fixed 6 Hz's 0.90-2.85 %, better than 6 Hz on every one). Noise,
which the bandwidth does not see, sets how much higher a cutoff pays: ``cutoff_hz: auto`` measures it by
cross-validation on the leading window, and the default ``checked`` moves to its pick where that predicts better in
every time block (:mod:`dynid_ros.identification.cutoff_selection`).

**The decimation** keeps :data:`DECIMATION_FACTOR` samples per cutoff period (the decimated Nyquist frequency 4
times the cutoff, where the forward-backward filter has attenuated by ``4^(2n)``), at least the configured rate
(default 100 Hz) and at most the sample rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynid_ros.errors import DataError

BANDWIDTH_ENERGY = 0.99
"""Share of the velocities' energy below the motion's bandwidth."""
BANDWIDTH_WINDOW_S = 60.0
"""The bandwidth is measured on the first this many seconds of the identification window."""
TORQUE_HARMONICS = 4.0
"""The rigid-body torque's content lies below this multiple of the velocities' bandwidth (module docstring)."""
PASSBAND_LOSS = 1e-5
"""The filter's gain at the top of the torque's band is at least ``1 - PASSBAND_LOSS``."""
NYQUIST_SHARE = 0.4
"""The cutoff stays below this share of the sample rate."""
DECIMATION_FACTOR = 8.0
"""The regression samples' rate is at least this many times the cutoff."""


def velocity_bandwidth(velocity: np.ndarray, rate_hz: float, energy: float = BANDWIDTH_ENERGY) -> float:
    """The frequency [Hz] below which ``energy`` of the (mean-removed) velocities' energy lies; ``velocity``
    (N, n) uniformly sampled at ``rate_hz``."""
    return _energy_quantile(*_power_spectrum(velocity, rate_hz), energy)


def _power_spectrum(values: np.ndarray, rate_hz: float) -> tuple[np.ndarray, np.ndarray]:
    """Frequencies [Hz] and the power of the (mean-removed, Hann-tapered) columns of ``values``, summed."""
    v = np.asarray(values, dtype=float)
    v = (v - v.mean(axis=0)) * np.hanning(v.shape[0])[:, None]  # tapered: a window's edges would leak (1/f^2)
    return np.fft.rfftfreq(v.shape[0], 1.0 / rate_hz), np.sum(np.abs(np.fft.rfft(v, axis=0)) ** 2, axis=1)


def _energy_quantile(freqs: np.ndarray, power: np.ndarray, energy: float) -> float:
    """The frequency below which ``energy`` of ``power`` lies (at least the first bin above 0 Hz)."""
    total = float(power.sum())
    if total <= 0 or freqs.size < 2:
        raise DataError("the joints do not move: no bandwidth to derive a filter cutoff from; give processing "
                        "cutoff_hz")
    index = int(np.searchsorted(np.cumsum(power) / total, energy))
    return float(max(freqs[min(index, freqs.size - 1)], freqs[1]))


def leading_bandwidth(t: np.ndarray, velocity: np.ndarray, rate_hz: float | None = None,
                      window_s: float = BANDWIDTH_WINDOW_S) -> float:
    """:func:`velocity_bandwidth` of the first ``window_s`` seconds of ``velocity`` (N, n) at stamps ``t``,
    interpolated on a uniform grid at ``rate_hz`` (default: the median rate)."""
    rate, uniform = _leading_uniform(t, velocity, rate_hz, window_s)
    return velocity_bandwidth(uniform, rate)


def _leading_uniform(t: np.ndarray, values: np.ndarray, rate_hz: float | None, window_s: float
                     ) -> tuple[float, np.ndarray]:
    """The rate and the first ``window_s`` seconds of ``values`` (N, n) at stamps ``t`` on a uniform grid."""
    t = np.asarray(t, dtype=float)
    rate = rate_hz or 1.0 / float(np.median(np.diff(t)))
    stop = int(np.searchsorted(t, t[0] + window_s, side="right"))
    grid = t[0] + np.arange(int(np.floor((t[stop - 1] - t[0]) * rate + 1e-9)) + 1) / rate
    v = np.asarray(values[:stop], dtype=float)
    return rate, np.column_stack([np.interp(grid, t[:stop], v[:, j]) for j in range(v.shape[1])])


FIXED_POINT_ROUNDS = 50
"""Most rounds of :func:`position_bandwidth`'s iteration (one or two on a simulated arm and the real Panda run)."""


def position_bandwidth(t: np.ndarray, position: np.ndarray, order: int, rate_hz: float | None = None,
                       window_s: float = BANDWIDTH_WINDOW_S, energy: float = BANDWIDTH_ENERGY) -> float:
    """The bandwidth of the motion [Hz] when only positions are recorded (``velocity_source: differentiate``, a
    bag without velocities): that of the velocity the rule's own filter passes.

    The velocity of raw positions is no measure of the motion: differentiating multiplies the positions' noise
    (encoder steps, stamp jitter) by the frequency, so on the real Panda run of Gaz et al. 2019 1-3 % of the
    differentiated velocity's energy is noise spread up to the Nyquist frequency, and its 99 % point lies at 214 Hz
    where the recorded velocity's lies at 0.41 Hz: the cutoff derived from it (the rule's cap, 0.4 of the sample rate)
    filters nothing, and the accelerations are noise. The bandwidth ``B`` is instead the fixed point of the rule
    itself: the ``energy`` point of the differentiated positions' spectrum seen through the filter the rule derives
    from ``B`` (order ``order``, cutoff :func:`passband_multiple` ``B``, the forward-backward gain squared),
    ``B_{k+1} = quantile(|H(f; c(B_k))|^2 P_v(f))``, from ``B_0`` = the positions' own bandwidth (at most the
    velocity's: differentiating weighs the spectrum by ``f^2``). Each step passes more of the spectrum, so the
    sequence rises to the smallest fixed point: the motion's bandwidth, as long as the noise below the cutoff is under
    ``1 - energy`` of the motion's energy -- the condition under which the recorded velocity's bandwidth is right too.
    (The Panda run: 0.41 Hz, as from its recorded velocity.)"""
    rate, q = _leading_uniform(t, position, rate_hz, window_s)
    freqs, power = _power_spectrum(np.gradient(q, 1.0 / rate, axis=0), rate)
    bandwidth = velocity_bandwidth(q, rate, energy)
    for _ in range(FIXED_POINT_ROUNDS):
        cutoff = min(passband_multiple(order) * bandwidth, NYQUIST_SHARE * rate)
        gain = 1.0 / (1.0 + (freqs / cutoff) ** (2 * order))  # forward-backward Butterworth: |H|^2 per pass
        following = _energy_quantile(freqs, power * gain**2, energy)
        if abs(following - bandwidth) <= 0.5 * freqs[1]:
            return following
        bandwidth = following
    return bandwidth


@dataclass
class DerivedCutoff:
    """The cutoff [Hz] and decimation [Hz] derived from the motion's bandwidth [Hz] and the sample rate [Hz]."""

    bandwidth_hz: float
    rate_hz: float
    cutoff_hz: float
    decimate_hz: float | None

    def to_dict(self) -> dict:
        """The record of ``processing.cutoff_choice`` (``parameters.yaml``, the report)."""
        return {"rule": "bandwidth", "bandwidth_hz": self.bandwidth_hz, "cutoff_hz": self.cutoff_hz,
                "decimate_hz": self.decimate_hz, "window_s": BANDWIDTH_WINDOW_S,
                "description": f"derived from bandwidth {self.bandwidth_hz:.3g} Hz: cutoff {self.cutoff_hz:.3g} Hz "
                               f"at {self.rate_hz:.4g} Hz sampling"}


def passband_multiple(order: int) -> float:
    """The cutoff in multiples of the bandwidth: ``TORQUE_HARMONICS * PASSBAND_LOSS^(-1 / (2 order))``."""
    return TORQUE_HARMONICS * PASSBAND_LOSS ** (-1.0 / (2.0 * order))


def derived_cutoff(bandwidth_hz: float, rate_hz: float, order: int, decimate_hz: float | None) -> DerivedCutoff:
    """The cutoff and decimation of the module docstring for a motion of ``bandwidth_hz`` sampled at ``rate_hz``,
    a Butterworth filter of ``order`` and a configured decimation ``decimate_hz`` (None: keep every sample)."""
    cutoff = float(min(passband_multiple(order) * bandwidth_hz, NYQUIST_SHARE * rate_hz))
    decimate = None if decimate_hz is None else float(min(max(decimate_hz, DECIMATION_FACTOR * cutoff), rate_hz))
    return DerivedCutoff(float(bandwidth_hz), float(rate_hz), cutoff, decimate)
