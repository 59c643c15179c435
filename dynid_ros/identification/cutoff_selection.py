"""The filter cutoff chosen from the data: the excitation's bandwidth gives the candidates, time-blocked
cross-validation on the identification data picks one (processing option ``cutoff_hz: auto``).

The fixed default (6 Hz, :class:`dynid_ros.data.signal_processing.ProcessingOptions`) was measured on one arm. A
cutoff must pass the motion (and the torque it causes) and stop the noise; where that lies depends on the excitation
and the robot. The candidates are multiples of the motion's bandwidth ``f_b`` (the frequency below which
:data:`BANDWIDTH_ENERGY` of the joint velocities' energy lies, the mean removed): ``f_b * 2^k`` for
:data:`MULTIPLES`, below :data:`NYQUIST_SHARE` of the sample rate. For each candidate the identification window is
processed, split into :data:`BLOCKS` contiguous time blocks, and each block is predicted by the least-squares fit of
the others (blocked cross-validation for dependent data: neighbouring samples are alike, so a random split would
score the noise as signal; Roberts et al. 2017, Bergmeir & Benítez 2012); the score is the relative error against
the recorded, unfiltered torque (Sousa & Cortesão 2014 eq. 84), as the held-out error is measured. The candidate
with the smallest score wins; ties (within :data:`TIE`) go to the lower cutoff. The decimation follows the cutoff:
at least ``DECIMATION_FACTOR`` times it (the default 100 Hz when that is more), never above the sample rate.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dynid_ros.data.bandwidth import BANDWIDTH_ENERGY, DECIMATION_FACTOR, position_bandwidth, velocity_bandwidth
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.signal_processing import ProcessingOptions, process
from dynid_ros.dynamics.base_parameters import BaseParameters
from dynid_ros.dynamics.regressor import regressor
from dynid_ros.errors import DataError
from dynid_ros.robot.model import RobotModel

MULTIPLES = (2, 4, 8, 16, 32, 64)
"""Candidate cutoffs, in multiples of the motion's bandwidth."""
NYQUIST_SHARE = 0.4
"""Candidates stay below this share of the sample rate."""
BLOCKS = 4
"""Contiguous time blocks of the cross-validation."""
TIE = 1e-3
"""Scores within this relative margin of the best are a tie (the lower cutoff wins)."""


@dataclasses.dataclass
class CutoffChoice:
    """The chosen cutoff [Hz], the motion's bandwidth [Hz], and the score of every candidate (cutoff -> relative
    cross-validated error)."""

    cutoff_hz: float
    bandwidth_hz: float
    scores: dict[float, float]

    def to_dict(self) -> dict:
        """The choice for the report: rule ``auto``, the cutoff, the bandwidth and every candidate's score."""
        return {"rule": "auto", "cutoff_hz": self.cutoff_hz, "bandwidth_hz": self.bandwidth_hz,
                "description": f"chosen by time-blocked cross-validation (bandwidth {self.bandwidth_hz:.3g} Hz)",
                "scores": {f"{k:.4g}": v for k, v in self.scores.items()}}


def time_blocks(n_samples: int) -> np.ndarray:
    """The block (0 .. ``BLOCKS - 1``) of each of ``n_samples`` samples: ``BLOCKS`` contiguous runs of equal length."""
    return np.minimum(np.arange(n_samples) * BLOCKS // max(n_samples, 1), BLOCKS - 1)


def motion_bandwidth(t: np.ndarray, velocity: np.ndarray, energy: float = BANDWIDTH_ENERGY) -> float:
    """The frequency [Hz] below which ``energy`` of the (mean-removed) joint velocities' energy lies."""
    return velocity_bandwidth(velocity, 1.0 / float(np.median(np.diff(t))), energy)


def with_cutoff(options: ProcessingOptions, cutoff_hz: float, rate_hz: float) -> ProcessingOptions:
    """``options`` with ``cutoff_hz`` and a decimation that keeps ``DECIMATION_FACTOR`` samples per cutoff period."""
    values = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
    values["cutoff_hz"] = float(cutoff_hz)
    if values["decimate_hz"] is not None:
        values["decimate_hz"] = float(min(max(values["decimate_hz"], DECIMATION_FACTOR * cutoff_hz), rate_hz))
    return ProcessingOptions(**values)


def choose_cutoff(series: JointStateSeries, options: ProcessingOptions, model: RobotModel, base: BaseParameters
                  ) -> tuple[ProcessingOptions, CutoffChoice]:
    """The processing options with the cutoff chosen by blocked cross-validation (module docstring)."""
    t = np.asarray(series.t, dtype=float)
    rate = options.rate_hz or 1.0 / float(np.median(np.diff(t)))
    if series.velocity is None or options.velocity_source == "differentiate":  # the motion seen by the filter
        bandwidth = position_bandwidth(t, series.position, options.order, rate, window_s=np.inf)
    else:
        bandwidth = motion_bandwidth(t, series.velocity)
    candidates = [bandwidth * m for m in MULTIPLES if bandwidth * m < NYQUIST_SHARE * rate]
    if not candidates:
        raise DataError(f"the motion's bandwidth {bandwidth:.3g} Hz is too close to half the sample rate "
                        f"({0.5 * rate:.3g} Hz) to filter; give processing cutoff_hz")
    scores = {c: _score(series, with_cutoff(options, c, rate), model, base) for c in candidates}
    best = min(scores.values())
    chosen = min(c for c, s in scores.items() if s <= best * (1.0 + TIE))
    return with_cutoff(options, chosen, rate), CutoffChoice(chosen, bandwidth, scores)


def _score(series: JointStateSeries, options: ProcessingOptions, model: RobotModel, base: BaseParameters) -> float:
    """Relative error of each time block predicted by the least-squares fit of the others, against the raw torque."""
    data = process(series, options)
    w_b = base.project(regressor(model, base.layout, data.q, data.dq, data.ddq))
    n_samples, n_dof = data.tau.shape
    block = time_blocks(n_samples)
    rows = np.repeat(block, n_dof)
    tau, raw = data.tau.reshape(-1), data.tau_raw.reshape(-1)
    error = 0.0
    for k in range(BLOCKS):
        fit = rows != k
        beta = np.linalg.lstsq(w_b[fit], tau[fit], rcond=None)[0]
        error += float(np.sum((raw[~fit] - w_b[~fit] @ beta) ** 2))
    return float(np.sqrt(error / max(float(raw @ raw), 1e-300)))
