"""The estimator of an identification, chosen by name: one dispatch for the joint-torque identification, the
M(q)/g(q) stack and every other caller.

:class:`Method` names them (``--method``); :func:`estimate` runs the chosen one on a base regression
``tau = W_b beta`` and returns an :class:`Estimate`: the base and standard parameters, the solver status and the
standard deviations of the estimate returned.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from dynid_ros.dynamics import feasibility
from dynid_ros.dynamics.base_parameters import BaseParameters
from dynid_ros.dynamics.bounds import Bounds
from dynid_ros.dynamics.feasibility import DEFAULT_EPS, SolverStatus, solver_tolerance
from dynid_ros.dynamics.polish import polish
from dynid_ros.errors import EstimationError
from dynid_ros.estimation import estimators
from dynid_ros.estimation.penalty_retrieval import pbpr
from dynid_ros.estimation.prior import Prior


class Method(str, enum.Enum):
    """Estimators (``--method``; ``dynid identify --help`` says what each does)."""

    OLS = "ols"
    """Least squares on the base regressor (Sousa & Cortesão 2014 eq. 60)."""
    WLS = "wls"
    """Least squares, each joint weighted by 1/sigma of its residual (Sousa & Cortesão 2014 sec. 4.4)."""
    FBPE = "fbpe"
    """Feasible base parameter estimation, with a prior the constrained MAP (Sousa & Cortesão 2014 eq. 74-75)."""
    BPFC = "bpfc"
    """Least squares, then the closest feasible base parameters (Sousa & Cortesão 2014 eq. 55)."""
    PBPR = "pbpr"
    """Penalty-based parameter retrieval (Gaz et al. 2019 Alg. 1)."""


METHODS = tuple(m.value for m in Method)
"""The method names, in the order ``--help`` lists them."""
FEASIBLE_METHODS = (Method.FBPE, Method.BPFC)
"""Methods whose result must pass the physical-consistency check."""


@dataclass
class EstimatorSettings:
    """What a method needs beyond the rows: the consistency of its LMIs, the solver, the bounds, the parts attached
    to each link, the base parameters held at fixed values, the nominal parameters (what least squares' standard
    parameters stay closest to, PBPR's box and start), FBPE's prior (a :class:`Prior`, the nominal parameters with
    the default tolerances, or None: no prior) and PBPR's settings."""

    method: Method
    nominal: np.ndarray
    consistency: str = "full"
    solver: str = "clarabel"
    bounds: Bounds | None = None
    attached: np.ndarray | None = None
    fixed: dict[int, float] = field(default_factory=dict)
    prior: Prior | np.ndarray | None = None
    pbpr: Mapping | None = None


@dataclass
class Estimate:
    """One estimate: ``beta`` (base), ``delta`` (standard), the solver status, the standard deviations of this
    estimate (``delta_std`` only where the method gives them), the residual inflation and, for a MAP whose data
    are numerically noise-free, the data weight it was capped at."""

    beta: np.ndarray
    delta: np.ndarray
    status: str
    beta_std: np.ndarray
    delta_std: np.ndarray | None
    inflation: float
    capped_data_weight: float | None = None
    polish: dict | None = None
    """What was moved onto the feasible set, the answer having missed a constraint within the solver's tolerance
    (``report.json`` ``solver_polish``: solver, violation, allowance, moved; ``message``), or None."""


def estimate(w_b: np.ndarray, tau: np.ndarray, base: BaseParameters, settings: EstimatorSettings, *,
             rows: np.ndarray | None = None, weights: np.ndarray | None = None,
             joint_inflation: np.ndarray | None = None, joint_noise: np.ndarray | None = None) -> Estimate:
    """Run ``settings.method`` on the rows in the fit (``rows``; None: all). ``weights`` and ``joint_inflation``:
    FBPE's per-row weights (None: unweighted) and per-joint variance inflation (None: one inflation);
    ``joint_noise``: FBPE's per-joint row noise variance chosen by the evidence (it replaces both,
    :func:`dynid_ros.estimation.estimators.fbpe`)."""
    layout, n_dof, nominal = base.layout, base.layout.n_dof, settings.nominal
    if settings.method == Method.FBPE:
        fit = estimators.fbpe(w_b, tau, base.K, layout, consistency=settings.consistency, bounds=settings.bounds,
                              weights=weights, solver=settings.solver, attached=settings.attached,
                              fixed=settings.fixed, prior=settings.prior, rows=rows, joint_inflation=joint_inflation,
                              joint_noise=joint_noise)
        record = None if fit.polished is None else {**fit.polished.to_dict(fit.solver),
                                                    "message": fit.polished.message(fit.solver)}
        return Estimate(fit.beta, fit.delta, fit.status, fit.beta_std, fit.delta_std, fit.inflation,
                        fit.capped_data_weight, record)
    least_squares = estimators.wls if settings.method == Method.WLS else estimators.ols
    fit = least_squares(w_b, tau, n_dof, fixed=settings.fixed, rows=rows)
    if settings.method in (Method.OLS, Method.WLS):
        return Estimate(fit.beta, estimators.closest_standard(base.K, fit.beta, nominal),
                        SolverStatus.OPTIMAL.value, fit.std, None,
                        fit.inflation)
    if settings.method == Method.BPFC:
        corrected = feasibility.bpfc(base.K, fit.beta, consistency=settings.consistency, layout=layout,
                                     bounds=settings.bounds, solver=settings.solver, attached=settings.attached)
        if corrected.beta is None:
            raise EstimationError(f"bpfc: no parameters satisfy the {settings.consistency} consistency constraints "
                                  f"and the bounds (solver status {corrected.status})")
        polished = polish(corrected.delta, layout, consistency=settings.consistency, eps=DEFAULT_EPS,
                          bounds=settings.bounds or Bounds(), attached=settings.attached,
                          tolerance=solver_tolerance(corrected.solver, corrected.status), who="bpfc")
        record = None if not polished.moved else {**polished.to_dict(corrected.solver),
                                                   "message": polished.message(corrected.solver)}
        return Estimate(base.K @ polished.delta, polished.delta, corrected.status, fit.std, None, fit.inflation,
                        polish=record)
    w_fit, tau_fit, _ = estimators.in_fit(w_b, tau, rows)  # its residual sums: the rows in the fit only
    found = pbpr(np.asarray(w_fit), tau_fit, base.K, layout, fit.beta, settings=settings.pbpr, bounds=settings.bounds,
                 nominal=nominal, attached=settings.attached, use_nominal_start=settings.prior is not None)
    return Estimate(found.beta, found.delta, found.status, fit.std, None, fit.inflation)
