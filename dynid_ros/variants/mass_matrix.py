"""Identification of the link parameters from M(q) and g(q) at static configurations (Gaz et al. 2019
section IV-A, eq. 17-21): ``dynid identify --mass-matrix FILE``. The stacked regressor and its base
parameters are :mod:`dynid_ros.estimation.inertia_stack`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from dynid_ros.dynamics import feasibility
from dynid_ros.dynamics.base_parameters import BaseParameters
from dynid_ros.dynamics.bounds import Bounds
from dynid_ros.dynamics.conditioning import unit_column_singular_values
from dynid_ros.dynamics.feasibility import SolverStatus
from dynid_ros.dynamics.regressor import CACHE_BYTES, block_samples
from dynid_ros.dynamics.row_chunks import RowChunks, cached
from dynid_ros.errors import ConfigError, DataError
from dynid_ros.estimation import estimators
from dynid_ros.estimation.fit_quality import relative_norm
from dynid_ros.estimation.identifiability import check_excited
from dynid_ros.estimation.inertia_stack import (
    STACK_METHODS,
    MassMatrixSamples,
    informative_peaks,
    lower_triangle,
    stack_base_parameters,
    stack_names,
    stack_regressor,
)
from dynid_ros.estimation.method import EstimatorSettings, Method, estimate
from dynid_ros.identification.identification_result import IdentificationResult
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.identification.timing import StageTimer
from dynid_ros.robot.model import RobotModel, load_model, nominal_parameters
from dynid_ros.robot.parameters import ParameterLayout
from dynid_ros.robot.urdf_writer import attached_parameters

BLOCK_CONFIGURATIONS: int | None = None
"""Configurations per block of the stacked regressor (None: ``BLOCK_BYTES`` of it, as the torque regressor's)."""


def stack_chunks(model: RobotModel, layout: ParameterLayout, base: BaseParameters, q: np.ndarray,
                 kept: np.ndarray) -> RowChunks:
    """The base regressor of the kept stack elements at configurations ``q`` as :class:`RowChunks`, computed a block
    of configurations at a time (kept when small), padded with zero rows to a multiple of the joints (the
    estimators group rows per joint; a zero row is no equation)."""
    n_kept, n_conf, n = int(kept.sum()), q.shape[0], model.n_dof
    step = BLOCK_CONFIGURATIONS or block_samples(n_kept, layout.n_parameters)
    step = max(n, step - step % n)  # every block but the last a whole number of joint groups
    pad = (-n_conf * n_kept) % n

    def blocks() -> Iterator[np.ndarray]:
        for first in range(0, n_conf, step):
            y = stack_regressor(model, layout, q[first:first + step])
            block = base.project(y[:, kept].reshape(-1, layout.n_parameters))
            yield block if first + step < n_conf else np.vstack([block, np.zeros((pad, base.n_base))])

    small = 8.0 * n_conf * n_kept * base.n_base <= CACHE_BYTES
    return RowChunks(cached(blocks) if small else blocks, (n_conf * n_kept + pad, base.n_base))


def stack_survey(model: RobotModel, layout: ParameterLayout, q: np.ndarray) -> np.ndarray:
    """Per stack element, the largest regressor entry over all configurations (a block at a time)."""
    step = BLOCK_CONFIGURATIONS or block_samples(len(stack_names(model.n_dof)), layout.n_parameters)
    peak = np.zeros(len(stack_names(model.n_dof)))
    for first in range(0, q.shape[0], step):
        peak = np.maximum(peak, np.max(np.abs(stack_regressor(model, layout, q[first:first + step])), axis=(0, 2)))
    return peak


def stack_prediction(model: RobotModel, layout: ParameterLayout, q: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """(N, n(n+1)/2 + n) inertia stacks predicted by ``delta`` (eq. 20), a block of configurations at a time."""
    step = BLOCK_CONFIGURATIONS or block_samples(len(stack_names(model.n_dof)), layout.n_parameters)
    return np.vstack([stack_regressor(model, layout, q[first:first + step]) @ delta
                      for first in range(0, q.shape[0], step)])


def stack_rank(w_b: RowChunks, rows: int) -> tuple[int, np.ndarray]:
    """Numerical rank of the column-normalized base regressor (``rows`` equations) and its singular values, from
    the compressed ``R`` (``R^T R = W^T W``: the same singular values; Sousa & Cortesão 2014 eq. 64-70)."""
    factor = estimators.compress(w_b, np.zeros(w_b.shape[0]))[0]
    singular = unit_column_singular_values(factor)
    return int(np.sum(singular > singular[0] * max(rows, w_b.shape[1]) * np.finfo(float).eps)), singular


def identify_from_mass_matrix(samples: MassMatrixSamples, options: IdentificationOptions,
                              urdf: str | Path | None = None, dh: str | Path | None = None,
                              model: RobotModel | None = None, timer: StageTimer | None = None
                              ) -> IdentificationResult:
    """Identify the link parameters from M(q) and g(q) samples (Gaz et al. 2019 eq. 17-21).

    ``options`` is an :class:`~dynid_ros.identification.options.IdentificationOptions`; friction must be off (M and
    g have none), the time window and the signal processing do not apply. Returns an
    :class:`~dynid_ros.identification.identification_result.IdentificationResult` whose ``relative_error`` is
    ``||s - s_hat|| / ||s||`` over the kept stack elements and ``relative_error_per_joint[j]`` the same over
    row ``j`` of the lower triangle of M and ``g_j``; ``processing`` records the rank and the dropped elements.
    """
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
    with timer.stage("regressor"):  # in blocks of configurations: never the whole stacked regressor
        kept = informative_peaks(stack_survey(model, layout, samples.q))
        names = stack_names(model.n_dof)
        dropped = [name for name, k in zip(names, kept) if not k]
        if dropped:
            scale = max(float(np.abs(samples.stack).max()), 1e-300)
            residue = float(np.abs(samples.stack[:, ~kept]).max()) / scale
            warnings.append(f"stack element(s) {', '.join(dropped)} carry no information in this model and are "
                            f"dropped" + (f" (but the data is not zero there: {100 * residue:.2g} % of the largest "
                                          f"value; check the gravity direction)" if residue > 1e-6 else ""))
        w_fit = stack_chunks(model, layout, base, samples.q, kept)
        s = samples.stack[:, kept].reshape(-1)
        s_fit = np.concatenate([s, np.zeros(w_fit.shape[0] - s.size)])
        rank, singular = stack_rank(w_fit, s.size)
        check_excited(w_fit, base)
    nominal = nominal_parameters(model, layout)
    attached = attached_parameters(model, layout)
    bounds = Bounds.from_config(options.bounds, layout) if options.bounds else None
    with timer.stage("estimate"):
        stats = estimators.ols(w_fit, s_fit, model.n_dof)
        prior = nominal if options.prior == "nominal" and _has_mass(nominal, layout) else None
        settings = EstimatorSettings(Method(options.method), nominal, consistency=options.consistency,
                                     solver=options.solver, bounds=bounds, attached=attached, prior=prior)
        found = estimate(w_fit, s_fit, base, settings)  # unweighted: M and g carry no per-joint noise
        beta, delta, status = found.beta, found.delta, found.status
        if status != SolverStatus.OPTIMAL:
            warnings.append(f"solver status {status}: the estimate may be inaccurate")
    with timer.stage("evaluate"):
        s_hat = stack_prediction(model, layout, samples.q, delta)
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
    return relative_norm(diff, ref), [relative_norm(diff[:, owner[kept] == j], ref[:, owner[kept] == j])
                                      for j in range(n)]
