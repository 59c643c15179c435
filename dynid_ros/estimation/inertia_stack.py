"""Identification from samples of the inertia matrix M(q) and the gravity vector g(q) (Gaz et al. 2019 section IV-A).

Some controllers (the Panda's FCI) return their own M(q) and g(q) at the current configuration. Both
are linear in the link parameters, so static configurations alone identify the inertial model,
with no friction, no velocity and no differentiation (Gaz et al. 2019 eq. 17-21). Per configuration
the *inertia stack* ``s = [m~(q); g(q)]`` holds the ``n(n+1)/2`` lower-triangular elements of M,
row by row (``M11, M21, M22, M31, ...``), then ``g1..gn`` (eq. 17, 19); the stacks of all
configurations give ``s = Y_s delta`` (eq. 20).

The rows of ``Y_s`` come from the joint-torque regressor at rest, which is affine in ``q''``:
``Y(q, 0, 0) = Y_g(q)`` and ``Y(q, 0, e_i) - Y(q, 0, 0)`` is the regressor of column ``i`` of M.
This is exact (no finite difference). A stack element whose regressor row is zero at every
configuration carries no information and is dropped (e.g. ``g1`` of an arm whose first axis is
vertical, Gaz et al. 2019 section V-A).

M and g contain no friction; the rotor inertia (armature) adds to the diagonal of M only if the
controller's M includes it. Base parameters are those of the stack regressor
(:func:`dynid_ros.dynamics.base_parameters.base_parameters_from_regressor`); the estimate is the package's
convex estimator (FBPE, feasible parameters) by default, or OLS (Gaz et al. 2019 eq. 21).

Input file (CSV, comma separated, ``#`` starts a comment line), one configuration per row, a header
naming the columns::

    q1,...,qn, M1_1, M2_1, M2_2, M3_1, M3_2, M3_3, ..., Mn_n, g1,...,gn

``q`` in the model's joint order [rad or m], ``M`` [kg m^2, kg m or kg], ``g`` [N m or N].
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dynid_ros.errors import ConfigError, DataError

STACK_METHODS = ("ols", "fbpe", "bpfc")
"""Estimators available for the inertia stack (rows are not per-joint torques, so no per-joint WLS)."""

ZERO_ROW_TOLERANCE = 1e-10
"""A stack element whose regressor entries all stay below this (relative to the largest) is zero."""


def lower_triangle(n: int) -> list[tuple[int, int]]:
    """``(row, column)`` of the lower-triangular elements of an n x n matrix, row by row (Gaz et al. 2019 eq. 17)."""
    return [(i, j) for i in range(n) for j in range(i + 1)]


def stack_names(n: int) -> list[str]:
    """Names of the stack elements: ``M1_1, M2_1, M2_2, ..., g1..gn`` (1-based)."""
    return [f"M{i + 1}_{j + 1}" for i, j in lower_triangle(n)] + [f"g{i + 1}" for i in range(n)]


def column_names(n: int) -> list[str]:
    """The header of the input file: ``q1..qn`` then the stack names."""
    return [f"q{i + 1}" for i in range(n)] + stack_names(n)


@dataclass
class MassMatrixSamples:
    """M(q) and g(q) at N configurations of n joints.

    Attributes:
        q: (N, n) configurations; stack: (N, n(n+1)/2 + n) inertia stacks (module docstring).
        source: where they were read from (for messages).
    """

    q: np.ndarray
    stack: np.ndarray
    source: str = ""

    @property
    def n_dof(self) -> int:
        return int(self.q.shape[1])

    @classmethod
    def from_matrices(cls, q: np.ndarray, mass_matrices: np.ndarray, gravity: np.ndarray,
                      source: str = "") -> MassMatrixSamples:
        """Samples from full (N, n, n) inertia matrices and (N, n) gravity vectors."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        rows, cols = np.array(lower_triangle(q.shape[1])).T
        stack = np.hstack([np.asarray(mass_matrices, dtype=float)[:, rows, cols], np.asarray(gravity, dtype=float)])
        return cls(q, stack, source)

    def write_csv(self, path: Path) -> Path:
        """Write the samples in the input format (module docstring)."""
        path = Path(path)
        with path.open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(column_names(self.n_dof))
            writer.writerows(np.hstack([self.q, self.stack]).tolist())
        return path


def read_mass_matrix_csv(path: str | Path, n_dof: int) -> MassMatrixSamples:
    """Read an M(q)/g(q) file for a robot of ``n_dof`` joints (format: module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such M(q)/g(q) file")
    lines = [(k + 1, line) for k, line in enumerate(path.read_text(errors="replace").splitlines())
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise DataError(f"{path}: empty M(q)/g(q) file")
    expected = column_names(n_dof)
    header = [c.strip() for c in lines[0][1].split(",")]
    if header != expected:
        raise DataError(f"{path}: line {lines[0][0]}: header must be {len(expected)} columns "
                        f"{', '.join(expected[:3])}, ..., {expected[-1]} for a robot of {n_dof} joints "
                        f"(got {len(header)} columns starting {', '.join(header[:3])})")
    values = []
    for number, line in lines[1:]:
        cells = line.split(",")
        if len(cells) != len(expected):
            raise DataError(f"{path}: line {number}: {len(cells)} values, expected {len(expected)}")
        try:
            row = [float(c) for c in cells]
        except ValueError as err:
            raise DataError(f"{path}: line {number}: not a number: {err}") from err
        if not np.all(np.isfinite(row)):
            raise DataError(f"{path}: line {number}: NaN or Inf")
        values.append(row)
    if not values:
        raise DataError(f"{path}: no configurations after the header")
    table = np.array(values)
    return MassMatrixSamples(table[:, :n_dof], table[:, n_dof:], str(path))


def stack_regressor(model, layout, q: np.ndarray) -> np.ndarray:
    """(N, n(n+1)/2 + n, n_parameters): the regressor of the inertia stack at each configuration (eq. 19).

    Columns follow ``layout`` (friction columns are zero: M and g have no friction).
    """
    from dynid_ros.dynamics.regressor import regressor_3d

    q = np.atleast_2d(np.asarray(q, dtype=float))
    n_conf, n = q.shape
    ddq = np.vstack([np.zeros((1, n)), np.eye(n)])  # at rest, then a unit acceleration of each joint
    qq = np.repeat(q, n + 1, axis=0)
    y = regressor_3d(model, layout, qq, np.zeros_like(qq), np.tile(ddq, (n_conf, 1)))
    y = y.reshape(n_conf, n + 1, n, layout.n_parameters)
    gravity = y[:, 0]
    columns = y[:, 1:] - gravity[:, None]  # columns[:, c, r] = regressor of M[r, c]
    rows, cols = np.array(lower_triangle(n)).T
    return np.concatenate([columns[:, cols, rows], gravity], axis=1)


def informative_elements(y: np.ndarray) -> np.ndarray:
    """Mask of the stack elements whose regressor row is not zero at every configuration."""
    peak = np.max(np.abs(y), axis=(0, 2))
    return peak > ZERO_ROW_TOLERANCE * max(float(peak.max()), 1e-300)


def stack_base_parameters(model, layout, seed: int = 0, n_configurations: int = 100):
    """Base parameters of the stack regressor at random configurations within the limits (eq. 20-21)."""
    from dynid_ros.dynamics.base_parameters import base_parameters_from_regressor, random_states

    q = random_states(model, n_configurations, np.random.default_rng(seed))[0]
    return base_parameters_from_regressor(stack_regressor(model, layout, q).reshape(-1, layout.n_parameters), layout)


def _pad_rows(w: np.ndarray, s: np.ndarray, n_dof: int) -> tuple[np.ndarray, np.ndarray]:
    """Zero rows up to a multiple of ``n_dof`` (the estimators group rows per joint; a zero row is no equation)."""
    missing = (-s.size) % n_dof
    return np.vstack([w, np.zeros((missing, w.shape[1]))]), np.concatenate([s, np.zeros(missing)])


def identify_from_mass_matrix(samples: MassMatrixSamples, options, urdf: str | Path | None = None,
                              dh: str | Path | None = None, model=None, timer=None):
    """Identify the link parameters from M(q) and g(q) samples (Gaz et al. 2019 eq. 17-21).

    ``options`` is an :class:`~dynid_ros.pipeline.identify.IdentificationOptions`; friction must be off (M and
    g have none), the time window and the signal processing do not apply. Returns an
    :class:`~dynid_ros.pipeline.identify.IdentificationResult` whose ``relative_error`` is
    ``||s - s_hat|| / ||s||`` over the kept stack elements and ``relative_error_per_joint[j]`` the same over
    row ``j`` of the lower triangle of M and ``g_j``; ``processing`` records the rank and the dropped elements.
    """
    from dynid_ros.dynamics import feasibility
    from dynid_ros.dynamics.bounds import Bounds
    from dynid_ros.estimation import estimators
    from dynid_ros.estimation.identifiability import check_excited
    from dynid_ros.pipeline.identify import IdentificationResult, StageTimer, _closest_standard
    from dynid_ros.robot.model import load_model, nominal_parameters
    from dynid_ros.robot.urdf_writer import attached_parameters

    options.check()
    if options.friction:
        raise ConfigError("--mass-matrix: M(q) and g(q) contain no friction; use --friction none")
    if options.method not in STACK_METHODS:
        raise ConfigError(f"--mass-matrix supports --method {', '.join(STACK_METHODS)}, not {options.method!r}")
    timer = timer or StageTimer()
    warnings: list[str] = []
    with timer.stage("model"):
        if model is None:
            model = load_model(urdf=urdf, dh=dh, joints=options.joints)
        layout = model.layout_for((), options.armature)
    if samples.n_dof != model.n_dof:
        raise DataError(f"{samples.source}: {samples.n_dof} joints in the file, the model has {model.n_dof} "
                        f"({', '.join(model.joints)})")
    with timer.stage("base_parameters"):
        base = stack_base_parameters(model, layout)
    with timer.stage("regressor"):
        y = stack_regressor(model, layout, samples.q)
        kept = informative_elements(y)
        names = stack_names(model.n_dof)
        dropped = [name for name, k in zip(names, kept) if not k]
        if dropped:
            scale = max(float(np.abs(samples.stack).max()), 1e-300)
            residue = float(np.abs(samples.stack[:, ~kept]).max()) / scale
            warnings.append(f"stack element(s) {', '.join(dropped)} carry no information in this model and are "
                            f"dropped" + (f" (but the data is not zero there: {100 * residue:.2g} % of the largest "
                                          f"value; check the gravity direction)" if residue > 1e-6 else ""))
        w = y[:, kept].reshape(-1, layout.n_parameters)
        s = samples.stack[:, kept].reshape(-1)
        w_b = base.project(w)
        norms = np.linalg.norm(w_b, axis=0)
        singular = np.linalg.svd(w_b / np.where(norms > 0, norms, 1.0), compute_uv=False)
        rank = int(np.sum(singular > singular[0] * max(w_b.shape) * np.finfo(float).eps))
        check_excited(w_b, base)
        w_fit, s_fit = _pad_rows(w_b, s, model.n_dof)
    nominal = nominal_parameters(model, layout)
    attached = attached_parameters(model, layout)
    bounds = Bounds.from_config(options.bounds, layout) if options.bounds else None
    with timer.stage("estimate"):
        stats = estimators.ols(w_fit, s_fit, model.n_dof)
        if options.method == "ols":
            beta, delta, status = stats.beta, _closest_standard(base, stats.beta, nominal), "optimal"
        elif options.method == "bpfc":
            fix = feasibility.bpfc(base.K, stats.beta, consistency=options.consistency, layout=layout, bounds=bounds,
                                   solver=options.solver, attached=attached)
            beta, delta, status = fix.beta, fix.delta, fix.status
        else:
            prior = nominal if options.prior == "nominal" and _has_mass(nominal, layout) else None
            fit = estimators.fbpe(w_fit, s_fit, base.K, layout, consistency=options.consistency, bounds=bounds,
                                  solver=options.solver, attached=attached, prior=prior)
            beta, delta, status = fit.beta, fit.delta, fit.status
        if status != "optimal":
            warnings.append(f"solver status {status}: the estimate may be inaccurate")
    with timer.stage("evaluate"):
        s_hat = y @ delta
        err, per_joint = _stack_errors(samples.stack, s_hat, kept, model.n_dof)
        feasible = bool(feasibility.is_feasible(delta, layout, consistency=options.consistency, attached=attached))
    processing = {"source": "mass_matrix", "file": samples.source, "n_configurations": int(samples.q.shape[0]),
                  "stack_elements": int(kept.sum()), "dropped_elements": dropped, "rank": rank,
                  "condition_number": float(singular[0] / singular[-1])}
    return IdentificationResult(model, layout, base, delta, beta, stats.rel_std, nominal, feasible, status, err,
                                per_joint, int(samples.q.shape[0]), timer.timings, options, warnings, processing)


def _has_mass(delta: np.ndarray, layout) -> bool:
    """Whether every link of the nominal parameters has a mass (a DH table has none: no prior)."""
    return bool(np.all(delta[layout.indices("m")] > 0))


def _stack_errors(stack: np.ndarray, s_hat: np.ndarray, kept: np.ndarray, n: int) -> tuple[float, list[float]]:
    """Relative error over the kept elements, and per joint j over row j of M's lower triangle and g_j."""
    owner = np.array([i for i, _ in lower_triangle(n)] + list(range(n)))
    diff, ref = (stack - s_hat)[:, kept], stack[:, kept]
    total = float(np.linalg.norm(diff) / max(np.linalg.norm(ref), 1e-300))
    per_joint = []
    for j in range(n):
        cols = owner[kept] == j
        per_joint.append(float(np.linalg.norm(diff[:, cols]) / max(np.linalg.norm(ref[:, cols]), 1e-300)))
    return total, per_joint
