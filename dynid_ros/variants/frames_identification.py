"""Identification of a frames robot (:mod:`dynid_ros.robot.frames`; Wang et al. 2019 section IV): link parameters
of every frame with inertia (each its own pseudo-inertia LMI, Traversaro et al. 2016), per-frame friction, rotor
inertia and spring constants (within their bounds), by weighted least squares under these constraints (an SDP).

Rows: motor torques at the processed samples minus the frames' known torques; each motor weighted by
``1 / (max - min)`` of its filtered torque, as Wang et al. 2019. The parameters the data do not determine are
picked by a tiny pull toward zero; the prediction does not depend on that choice. ``base_count`` is the number of
independent regressor columns at random states (the base parameters).

``identification: processing: effort_delay_s``: per motor, how long the recorded effort lags the recorded position
and velocity (:mod:`dynid_ros.data.effort_delay`): a list in ``robot.joints`` order, a mapping motor -> seconds, or
``estimate``: each motor's lag minimizing its least-squares residual on the identification data, searched over
``[0, DELAY_SEARCH_S]`` in steps of one sample (:func:`estimate_effort_delays`); the result records the values, so
validation applies the same.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from dynid_ros.data.bag_io import read_joint_states
from dynid_ros.data.bag_stream import BagScan
from dynid_ros.data.csv_joint_states import read_csv_joint_states
from dynid_ros.data.effort_delay import advance_effort, advanced_rows
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.signal_processing import ProcessedData, ProcessingOptions, check_fields, process, process_rows
from dynid_ros.dynamics.base_parameters import RANK_TOLERANCE
from dynid_ros.dynamics.feasibility import SOLVED, is_feasible, lmi_constraints, solve
from dynid_ros.dynamics.frame_terms import TermColumns, known_torque, term_columns
from dynid_ros.dynamics.regressor import block_samples, regressor_3d
from dynid_ros.errors import ConfigError, DataError, EstimationError
from dynid_ros.estimation.fit_quality import relative_error
from dynid_ros.estimation.normal_equations import NormalEquations
from dynid_ros.identification.fit_series import FitSeries
from dynid_ros.robot.frames import FramesRobot, load_frames_robot
from dynid_ros.robot.parameters import ParameterLayout

PULL = 1e-8
"""Weight of ``||x||^2`` relative to the data's: picks one solution in the unidentified directions."""
LMI_MARGIN = 1e-9
"""Pseudo-inertia eigenvalues at least this (scaled by :data:`LMI_SCALES`)."""
LMI_SCALES = (0.1, 0.1)
"""Mass [kg] and length [m] scales of every link's LMI (the congruence of :mod:`dynid_ros.dynamics.feasibility`):
the size of a light arm's links, so that the SDP is well conditioned."""


@dataclass
class FramesFit:
    """Identified parameters of a frames robot and the fit on the identification data."""

    robot: FramesRobot
    layout: ParameterLayout
    delta: np.ndarray
    terms: dict[str, float]
    status: str
    feasible: bool
    base_count: int
    relative_error: float
    relative_error_per_joint: list[float]
    n_samples: int
    processing: dict = field(default_factory=dict)

    warnings: list[str] = field(default_factory=list)
    """Console notes (e.g. why the bag was read whole); ``report.json`` ``notes``."""
    written: list[str] = field(default_factory=list)
    """Warnings of writing the result (an optional output left out, one line each)."""
    solver: str = "clarabel"
    series: FitSeries | None = None
    """The processed motion, recorded and predicted motor torques the fit was made on (for the report); None when
    read back from a result."""

    def predict(self, data: ProcessedData) -> np.ndarray:
        """Motor torques (N, n) at processed samples, the known torques included (the regressor a block of samples
        at a time)."""
        out = np.empty_like(data.q)
        for rows, y, extra in regressor_blocks(self.robot, self.layout, data):
            values = np.array([self.terms[name] for name in extra.names])
            out[rows] = y @ self.delta + extra.columns @ values
        return out + known_torque(self.robot, data.q)


def frame_regressor(robot: FramesRobot, layout: ParameterLayout, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray
                    ) -> tuple[np.ndarray, TermColumns]:
    """The link regressor (N, n, 10 L) and the per-frame term columns at the motor states."""
    return regressor_3d(robot.model, layout, q, dq, ddq), term_columns(robot, q, dq, ddq)


def regressor_blocks(robot: FramesRobot, layout: ParameterLayout, data: ProcessedData
                     ) -> Iterator[tuple[slice, np.ndarray, TermColumns]]:
    """:func:`frame_regressor` of the processed samples a block at a time (``BLOCK_BYTES`` of the regressor): the
    samples' rows and their link and per-frame term columns. Memory does not grow with the recording's length."""
    n = len(robot.motors)
    step = block_samples(n, layout.n_parameters + 5 * len(robot.frames))
    for first in range(0, data.q.shape[0], step):
        rows = slice(first, first + step)
        yield (rows, *frame_regressor(robot, layout, data.q[rows], data.dq[rows], data.ddq[rows]))


EFFORT_DELAY = "effort_delay_s"
"""The processing key of the effort's delay per motor (module docstring)."""
DELAY_SEARCH_S = 0.1
"""Largest effort lag [s] :func:`estimate_effort_delays` tries: a residual still falling there is no delay's minimum
(the motor keeps 0)."""


def frames_data(robot: FramesRobot, series: JointStateSeries, processing: dict) -> ProcessedData:
    """``series`` (the motors, in the robot's order), its effort advanced by ``effort_delay_s``, processed with the
    other ``processing`` options."""
    missing = [m for m in robot.motors if m not in series.names]
    if missing:
        raise DataError(f"motor coordinate(s) {', '.join(missing)} of the robot are not in the joint states")
    options = {k: v for k, v in processing.items() if k != EFFORT_DELAY}
    selected = series.select(list(robot.motors))
    delays = processing.get(EFFORT_DELAY)
    if delays is not None:
        selected = advance_effort(selected, motor_delays(robot, delays))
    return process(selected, ProcessingOptions(**options))


def motor_delays(robot: FramesRobot, value: object) -> np.ndarray:
    """The ``effort_delay_s`` value as one delay per motor; ConfigError naming the problem."""
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(robot.motors))
        if unknown:
            raise ConfigError(f"processing.{EFFORT_DELAY} names {unknown}, not motors ({', '.join(robot.motors)})")
        value = [value.get(m, 0.0) for m in robot.motors]
    try:
        delays = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"processing.{EFFORT_DELAY} must be numbers, a mapping motor -> s or 'estimate', got "
                          f"{value!r}") from err
    if delays.size == 1:
        delays = np.full(len(robot.motors), float(delays[0]))
    if delays.shape != (len(robot.motors),) or not np.all(np.isfinite(delays)):
        raise ConfigError(f"processing.{EFFORT_DELAY}: expected {len(robot.motors)} finite values, got {value!r}")
    return delays


def estimate_effort_delays(robot: FramesRobot, series: JointStateSeries, processing: dict) -> list[float]:
    """Per motor, the effort lag in ``[0, DELAY_SEARCH_S]`` (one-sample steps) whose least-squares fit (links and
    per-frame terms, unconstrained) leaves that motor the smallest residual on ``series``; 0 where the smallest is
    at the end of the range (no minimum: not a delay). The kinematics do not depend on the delay: the regressor is
    built once, the filtered torque is shifted along it."""
    options = {k: v for k, v in processing.items() if k != EFFORT_DELAY}
    return effort_delays_of(robot, frames_data(robot, series, options))


def effort_delays_of(robot: FramesRobot, data: ProcessedData) -> list[float]:
    """:func:`estimate_effort_delays` on processed samples without delay (their whole regressor in memory: the
    projection onto its column space is taken once, every candidate delay's torque projected on it)."""
    layout = ParameterLayout(robot.motors, robot.model.links, (), False)
    y, extra = frame_regressor(robot, layout, data.q, data.dq, data.ddq)
    tau = data.tau - known_torque(robot, data.q)
    weight = 1.0 / np.maximum(np.ptp(tau, axis=0), 1e-12)
    a = np.concatenate([y, extra.columns], axis=2) * weight[None, :, None]
    a = a.reshape(-1, a.shape[2])
    u, singular, _ = np.linalg.svd(a, full_matrices=False)
    u = u[:, singular > RANK_TOLERANCE * singular[0]]
    step = 1.0 / data.rate_hz
    candidates = np.arange(round(DELAY_SEARCH_S / step) + 1) * step
    inside = data.t <= data.t[-1] - DELAY_SEARCH_S
    residuals = np.empty((candidates.size, len(robot.motors)))
    for i, d in enumerate(candidates):
        shifted = np.column_stack([np.interp(data.t + d, data.t, tau[:, j]) for j in range(tau.shape[1])])
        b = (shifted * weight).reshape(-1)
        r = (b - u @ (u.T @ b)).reshape(tau.shape)[inside]
        residuals[i] = np.linalg.norm(r, axis=0) / np.maximum(np.linalg.norm((shifted * weight)[inside], axis=0),
                                                              1e-300)
    best = np.argmin(residuals, axis=0)
    return [float(candidates[k]) if k < candidates.size - 1 else 0.0 for k in best]


def identify_frames(robot: FramesRobot, series: JointStateSeries, processing: dict, solver: str = "clarabel"
                    ) -> FramesFit:
    """Identify ``robot`` from motor-coordinate joint states (module docstring)."""
    if processing.get(EFFORT_DELAY) == "estimate":
        processing = {**processing, EFFORT_DELAY: estimate_effort_delays(robot, series, processing)}
    return fit_frames(robot, frames_data(robot, series, processing), processing, solver)


def frames_streams(path: str | Path) -> str | None:
    """None when :func:`identify_frames_scan` can stream the recording ``path`` (a rosbag2); else why it is read
    whole."""
    return "a CSV recording is read whole" if str(path).lower().endswith(".csv") else None


def frames_data_scan(robot: FramesRobot, scan: BagScan, processing: dict, start: float | None = None,
                     end: float | None = None) -> ProcessedData:
    """:func:`frames_data` of a bag read in chunks (:mod:`dynid_ros.data.bag_stream`), within ``start``/``end``
    [s from the first sample] as ``JointStateSeries.window``: ``chunk_s`` seconds processed at a time, the effort
    advanced by numeric ``effort_delay_s`` on the way (:func:`~dynid_ros.data.effort_delay.advanced_rows`), only the
    decimated samples kept."""
    missing = [m for m in robot.motors if m not in scan.names]
    if missing:
        raise DataError(f"motor coordinate(s) {', '.join(missing)} of the robot are not in the joint states")
    options = ProcessingOptions(**{k: v for k, v in processing.items() if k != EFFORT_DELAY})
    check_fields(scan.check_fields(list(robot.motors)), True, options)
    rows = scan.rows(list(robot.motors))
    first, stop = scan.window_rows(start, end)
    t, fetch = scan.t[first:stop], lambda a, b: rows.get(first + a, first + b)
    delays = processing.get(EFFORT_DELAY)
    if delays is not None:
        t, fetch = advanced_rows(t, fetch, motor_delays(robot, delays))
    return process_rows(t, fetch, options, options.chunk_s)


def identify_frames_scan(robot: FramesRobot, scan: BagScan, processing: dict, solver: str = "clarabel"
                         ) -> FramesFit:
    """:func:`identify_frames` from a bag streamed: the processed samples held, the regressor a block at a time
    (:func:`fit_frames`). ``effort_delay_s: estimate`` searches the delays on the processed samples without delay
    (read in one more pass; the search holds their regressor, :func:`effort_delays_of`)."""
    if processing.get(EFFORT_DELAY) == "estimate":
        plain = {k: v for k, v in processing.items() if k != EFFORT_DELAY}
        processing = {**processing, EFFORT_DELAY: effort_delays_of(robot, frames_data_scan(robot, scan, plain))}
    return fit_frames(robot, frames_data_scan(robot, scan, processing), processing, solver)


def normal_equations(robot: FramesRobot, layout: ParameterLayout, data: ProcessedData
                     ) -> tuple[NormalEquations, TermColumns]:
    """The normal equations of the weighted rows (module docstring), summed over blocks of samples, and the
    per-frame terms' names and bounds."""
    tau = data.tau - known_torque(robot, data.q)
    weight = 1.0 / np.maximum(np.ptp(tau, axis=0), 1e-12)
    b_all = tau * weight
    equations = extra = None
    for rows, y, extra in regressor_blocks(robot, layout, data):
        a = (np.concatenate([y, extra.columns], axis=2) * weight[None, :, None]).reshape(-1, y.shape[2]
                                                                                          + extra.columns.shape[2])
        block = NormalEquations.of(a, b_all[rows].reshape(-1))
        equations = block if equations is None else equations + block
    return equations, extra


def fit_frames(robot: FramesRobot, data: ProcessedData, processing: dict, solver: str = "clarabel") -> FramesFit:
    """The constrained weighted least squares of :func:`identify_frames` on processed data (module docstring)."""
    import cvxpy as cp  # heavy optional dependency of the estimators

    layout = ParameterLayout(robot.motors, robot.model.links, (), False)
    if data.q.shape[0] == 0:
        raise DataError("frames robot: no processed sample to identify from")
    equations, extra = normal_equations(robot, layout, data)
    r, rhs = equations.root()
    b2 = equations.b_norm2
    x = cp.Variable(equations.gram.shape[0])
    delta, terms = x[:layout.n_parameters], x[layout.n_parameters:]
    constraints = lmi_constraints(delta, layout, "full", LMI_MARGIN, np.tile(LMI_SCALES, (len(layout.links), 1)))
    for i in range(len(extra.names)):
        if np.isfinite(extra.low[i]):
            constraints.append(terms[i] >= extra.low[i])
        if np.isfinite(extra.high[i]):
            constraints.append(terms[i] <= extra.high[i])
    objective = cp.sum_squares(r @ x - rhs) + PULL * b2 * cp.sum_squares(x)
    problem = cp.Problem(cp.Minimize(objective), constraints)
    status, _ = solve(problem, solver)
    if status not in SOLVED or x.value is None:
        raise EstimationError(f"frames robot: the constrained fit failed (solver status {status})")
    values = np.asarray(x.value, dtype=float)
    delta_value = values[:layout.n_parameters]
    terms = dict(zip(extra.names, (float(v) for v in values[layout.n_parameters:])))
    feasible = bool(is_feasible(delta_value, layout, "full", tol=1e-9))
    fit = FramesFit(robot, layout, delta_value, terms, status, feasible, base_count(robot, layout), 0.0, [],
                    int(data.q.shape[0]), dict(processing), solver=solver)
    predicted = fit.predict(data)
    fit.relative_error, fit.relative_error_per_joint = relative_error(data.tau_raw, predicted)
    fit.series = FitSeries(list(robot.motors), data.t, data.q, data.dq, data.ddq, data.tau_raw, predicted)
    fit.warnings.extend(data.notes)
    return fit


def validate_frames(fit: FramesFit, series: JointStateSeries, processing: dict, first: int | None = None,
                    filtered: bool = False) -> tuple[float, list[float]]:
    """Relative error (Sousa & Cortesão 2014 eq. 84) of the prediction on other joint states, over all processed
    samples or the ``first`` ones, against the recorded torque or (``filtered``, as Wang et al. 2019 Table V) the
    torque filtered like the fit's."""
    return frames_errors(fit, frames_data(fit.robot, series, processing), first, filtered)


def frames_errors(fit: FramesFit, data: ProcessedData, first: int | None = None, filtered: bool = False
                  ) -> tuple[float, list[float]]:
    """:func:`validate_frames` on processed data (e.g. :func:`frames_data_scan` of a bag streamed)."""
    window = slice(0, first)
    measured = data.tau if filtered else data.tau_raw
    return relative_error(measured[window], fit.predict(data)[window])


def base_count(robot: FramesRobot, layout: ParameterLayout, n_samples: int = 200, seed: int = 0) -> int:
    """Independent columns of the full regressor (links and per-frame terms) at random states."""
    rng = np.random.default_rng(seed)
    n = len(robot.motors)
    q = rng.uniform(-1.0, 1.0, (n_samples, n))
    y, extra = frame_regressor(robot, layout, q, rng.normal(0, 1, (n_samples, n)), rng.normal(0, 3, (n_samples, n)))
    w = np.concatenate([y, extra.columns], axis=2).reshape(-1, y.shape[2] + extra.columns.shape[2])
    norms = np.linalg.norm(w, axis=0)
    scaled = w[:, norms > 1e-12] / norms[norms > 1e-12]
    singular = np.linalg.svd(scaled, compute_uv=False)
    return int(np.sum(singular > RANK_TOLERANCE * singular[0]))


FRAMES_FILE = "frames_result.yaml"
"""The result of a frames robot in an output directory (with the robot's config, to validate without it)."""


def read_motor_states(path: str | Path, config: Mapping, topic: str = "/joint_states") -> JointStateSeries:
    """Joint states of a frames robot: a CSV without stamps (``robot.csv_rate_hz``, the motors in
    ``robot.joints`` order; :mod:`dynid_ros.data.csv_joint_states`) or a rosbag2."""
    robot = config.get("robot") or {}
    if str(path).lower().endswith(".csv"):
        if "csv_rate_hz" not in robot:
            raise ConfigError(f"{path}: a CSV has no stamps: give robot.csv_rate_hz in the config")
        return read_csv_joint_states(path, list(robot["joints"]), float(robot["csv_rate_hz"]))
    return read_joint_states(path, topic=topic)


def frames_result_dict(fit: FramesFit, config: Mapping, processing: dict) -> dict:
    """What :data:`FRAMES_FILE` holds: the robot, the processing, every parameter, the fit."""
    links = {link: [float(v) for v in fit.delta[fit.layout.link_slice(k)]] for k, link in enumerate(fit.layout.links)}
    return {"robot": dict(config["robot"]), "processing": dict(processing),
            "convention": "links: [m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] about each frame's origin; "
                          "terms: per-frame Fc, Fv, Fo, Ia, K (dynid_ros.dynamics.frame_terms)",
            "links": links, "terms": dict(fit.terms), "status": fit.status, "feasible": fit.feasible,
            "base_parameters": fit.base_count, "n_samples": fit.n_samples,
            "relative_error": fit.relative_error, "relative_error_per_joint": fit.relative_error_per_joint}


def load_frames_result(result_dir: Path) -> tuple[FramesFit, dict, dict]:
    """``(fit, robot config, processing)`` of a frames result directory."""
    path = Path(result_dir) / FRAMES_FILE
    try:
        stored = yaml.safe_load(path.read_text())
        config = {"robot": stored["robot"]}
        robot = load_frames_robot(config, str(path))
        layout = ParameterLayout(robot.motors, robot.model.links, (), False)
        delta = np.concatenate([np.asarray(stored["links"][link], dtype=float) for link in layout.links])
        terms = {str(k): float(v) for k, v in stored["terms"].items()}
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as err:
        raise DataError(f"{path}: unreadable frames result: {err}") from err
    fit = FramesFit(robot, layout, delta, terms, stored.get("status", ""), bool(stored.get("feasible")),
                    int(stored.get("base_parameters", 0)), float(stored.get("relative_error", 0.0)),
                    list(stored.get("relative_error_per_joint", [])), int(stored.get("n_samples", 0)),
                    dict(stored.get("processing") or {}))
    return fit, config, dict(stored.get("processing") or {})
