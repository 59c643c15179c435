"""Feasibility LMIs, bounds, BPFT and BPFC (Sousa & Cortesão 2014 section 3-4.3; Traversaro et al. 2016)."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.dynamics import feasibility
from dynid_ros.dynamics.base_parameters import compute_base_parameters
from dynid_ros.errors import ConfigError
from dynid_ros.robot.model import load_model
from dynid_ros.robot.parameters import LINK_PARAMETER_NAMES, ParameterLayout, link_parameters

from support.rigid_bodies import TWO_LINK_LAYOUT as LAYOUT
from support.rigid_bodies import random_body

# Sousa & Cortesão 2014 Table 1 (Yoshida and Khalil 2000): base parameters of a 3-link robot, in the table's row order.
TABLE1_EXPRESSIONS = [
    {"Iyy1": 1, "Iyy2": 1, "Iyy3": 1, "m3": 1},
    {"Ixx2": 1, "Iyy2": -1, "m3": -1},
    {"Ixy2": 1},
    {"Ixz2": 1, "mz3": -1},
    {"Iyz2": 1},
    {"Izz2": 1, "m3": 1},
    {"mx2": 1, "m3": 1},
    {"my2": 1},
    {"Ixx3": 1, "Iyy3": -1},
    {"Ixy3": 1},
    {"Ixz3": 1},
    {"Iyz3": 1},
    {"Izz3": 1},
    {"mx3": 1},
    {"my3": 1},
]
BETA_T1 = np.array([6.4, -5.48, 0.072, -0.087, 0.051, 5.6, 6.5, -0.00075, -0.72, -0.0098, -0.0098, -0.00045, 0.72,
                    0.95, 0.015])
BETA_T2 = np.array([6.2, -5.48, 0.072, -0.087, 0.051, 5.6, 6.5, -0.00075, -0.72, -0.0098, -0.0098, -0.00045, 0.72,
                    0.95, 0.015])
BETA_T2_CORRECTED = np.array([6.200951, -5.479049, 0.071966, -0.086967, 0.050999, 5.600000, 6.500000, -0.000750,
                              -0.719049, -0.009819, -0.009817, -0.000450, 0.720000, 0.949999, 0.014966])
TABLE1_DISTANCE = 1.65e-3

# The robot behind Table 1: beta_7 = l2x + m3 and beta_6 = L2zz + m3 give a3 = 1; beta_1 groups the
# y-moments of links 2 and 3 with joint 1's axis, so joint 2 is at 90 degrees to joint 1.
TABLE1_DH = """
convention: modified
joints:
  - {type: revolute, alpha: 0, a: 0, d: 0, theta: 0}
  - {type: revolute, alpha: pi/2, a: 0, d: 0, theta: 0}
  - {type: revolute, alpha: 0, a: 1, d: 0, theta: 0}
"""


def table1_k(first_link_moment: str = "Iyy1") -> np.ndarray:
    """K of Table 1 written by hand in the parameter order of dynid_ros.robot.parameters."""
    symbols = [f"{p}{k}" for k in (1, 2, 3) for p in LINK_PARAMETER_NAMES]
    k = np.zeros((15, 30))
    for row, terms in enumerate(TABLE1_EXPRESSIONS):
        for name, coefficient in terms.items():
            k[row, symbols.index(first_link_moment if name == "Iyy1" else name)] = coefficient
    return k


def test_table1_bpft_and_bpfc_reproduce_seed_000():
    k = table1_k()
    assert feasibility.bpft(k, BETA_T1, consistency="physical", eps=1e-6).feasible
    infeasible = feasibility.bpft(k, BETA_T2, consistency="physical", eps=1e-6)
    assert not infeasible.feasible and infeasible.status == "infeasible" and infeasible.delta is None
    corrected = feasibility.bpfc(k, BETA_T2, consistency="physical", eps=1e-6)
    assert corrected.status == "optimal"
    assert corrected.distance == pytest.approx(TABLE1_DISTANCE, rel=0.03)
    assert np.max(np.abs(corrected.beta - BETA_T2_CORRECTED)) < 2e-5
    assert feasibility.bpft(k, corrected.beta, consistency="physical", eps=1e-6).feasible


def test_table1_k_is_the_numeric_base_parameters_of_the_dh_robot(tmp_path):
    path = tmp_path / "yoshida_khalil.yaml"
    path.write_text(TABLE1_DH)
    model = load_model(dh=path)
    base = compute_base_parameters(model, model.layout_for((), False))
    # rows of the numeric K in Table 1's order; joint 1 is about z, so the table's L1yy is Izz1 here
    order = [np.flatnonzero(np.all(np.abs(base.K - row) < 1e-9, axis=1)) for row in table1_k("Izz1")]
    assert all(len(match) == 1 for match in order)
    k = base.K[np.concatenate(order)]
    corrected = feasibility.bpfc(k, BETA_T2, consistency="physical", eps=1e-6)
    assert np.max(np.abs(corrected.beta - BETA_T2_CORRECTED)) < 2e-5
    assert not feasibility.bpft(k, BETA_T2).feasible and feasibility.bpft(k, BETA_T1).feasible


def test_bpft_returns_a_feasible_preimage():
    k = table1_k()
    result = feasibility.bpft(k, BETA_T1)
    layout = feasibility.default_layout(30)
    assert np.allclose(k @ result.delta, BETA_T1, atol=1e-7)
    assert feasibility.is_feasible(result.delta, layout, "physical")
    assert np.all(feasibility.min_eigenvalues(result.delta, layout, "physical") > 1e-6 - 1e-8)


def test_scs_gives_the_same_test_answers():
    k = table1_k()
    assert feasibility.bpft(k, BETA_T1, solver="scs").feasible
    assert not feasibility.bpft(k, BETA_T2, solver="scs").feasible


def test_pseudo_inertia_is_the_second_moment_matrix_of_point_masses():
    rng = np.random.default_rng(3)
    points, masses = rng.normal(size=(5, 3)), rng.uniform(0.1, 1.0, 5)
    second = sum(m * np.outer(np.append(p, 1.0), np.append(p, 1.0)) for p, m in zip(points, masses))
    inertia = sum(m * (p @ p * np.eye(3) - np.outer(p, p)) for p, m in zip(points, masses))
    first = masses @ points
    params = np.array([masses.sum(), *first, inertia[0, 0], inertia[0, 1], inertia[1, 1], inertia[0, 2],
                       inertia[1, 2], inertia[2, 2]])
    assert np.allclose(feasibility.link_matrix(params, "full"), second)


def test_triangle_inequality_separates_full_from_physical():
    # principal moments (1, 1, 3) about the CoM: positive definite, but 1 + 1 < 3
    params = link_parameters(2.0, np.array([0.1, 0.0, 0.2]), np.diag([1.0, 1.0, 3.0]))
    layout = feasibility.default_layout(10)
    assert feasibility.is_feasible(params, layout, "physical")
    assert not feasibility.is_feasible(params, layout, "full")
    rng = np.random.default_rng(0)
    for _ in range(20):
        body = random_body(rng)
        assert feasibility.is_feasible(body, layout, "full") and feasibility.is_feasible(body, layout, "physical")
    negative_mass = link_parameters(-1.0, np.zeros(3), np.eye(3))
    assert not feasibility.is_feasible(negative_mass, layout, "physical")


def test_is_feasible_checks_friction_and_armature():
    layout = ParameterLayout(("j1",), ("l1",), ("viscous", "coulomb", "offset"), True)
    delta = np.concatenate([random_body(np.random.default_rng(1)), [0.1, 0.2, -0.5, 0.01]])
    assert feasibility.is_feasible(delta, layout)  # the offset may be negative
    for symbol in ("fv", "fc", "Ia"):
        bad = delta.copy()
        bad[layout.joint_index(0, symbol)] = -1e-3
        assert not feasibility.is_feasible(bad, layout)
    delta[3] = np.nan
    assert not feasibility.is_feasible(delta, layout)


def test_scaled_margin_is_a_congruence():
    body = random_body(np.random.default_rng(5))
    for consistency in ("physical", "full"):
        raw = np.linalg.eigvalsh(feasibility.link_matrix(body, consistency))
        size = 6 if consistency == "physical" else 4
        scaled = (feasibility.scaled_basis(consistency, 3.0, 0.2) @ body).reshape(size, size)
        assert np.all(raw > 0) and np.all(np.linalg.eigvalsh(scaled) > 0)
        unscaled = (feasibility.scaled_basis(consistency) @ body).reshape(size, size)
        assert np.allclose(unscaled, feasibility.link_matrix(body, consistency))


def test_bounds_constrain_bpfc_and_are_checked():
    rng = np.random.default_rng(2)
    delta = np.concatenate([random_body(rng), random_body(rng), [0.1, 0.2, 0.01, 0.3, 0.4, 0.02]])
    k = np.eye(LAYOUT.n_parameters)  # every parameter is a "base parameter"
    masses = delta[LAYOUT.indices("m")]
    bounds = feasibility.Bounds.from_config({"total_mass": [0, 0.5 * masses.sum()],
                                             "com_box": {"upper": [[-0.01, 0.01], [-0.01, 0.01], [-0.01, 0.01]]}},
                                            LAYOUT)
    assert bounds.violations(delta, LAYOUT)
    assert feasibility.bpft(k, delta, consistency="full", layout=LAYOUT).feasible
    assert not feasibility.bpft(k, delta, consistency="full", layout=LAYOUT, bounds=bounds).feasible
    corrected = feasibility.bpfc(k, delta, consistency="full", layout=LAYOUT, bounds=bounds)
    assert corrected.status == "optimal" and corrected.distance > 0
    assert bounds.violations(corrected.delta, LAYOUT, tol=1e-6) == []
    assert corrected.delta[LAYOUT.indices("m")].sum() <= 0.5 * masses.sum() + 1e-6


def test_bad_arguments():
    k = table1_k()
    with pytest.raises(ConfigError, match="solver must be one of clarabel, scs"):
        feasibility.bpft(k, BETA_T1, solver="mosek")
    with pytest.raises(ConfigError, match="consistency must be one of physical, full"):
        feasibility.bpfc(k, BETA_T1, consistency="strict")
    with pytest.raises(ConfigError, match="links of 10 parameters"):
        feasibility.bpft(k[:, :25], BETA_T1)
    with pytest.raises(ConfigError, match="beta has 3 entries"):
        feasibility.bpfc(k, BETA_T1[:3])


def test_a_non_optimal_status_is_retried_with_the_other_solver():
    """``solve_until_optimal``: an attempt that does not reach ``optimal`` (here: the requested solver is handed
    an infeasible variant) is followed by the next one, and every attempt's status is reported."""
    import cvxpy as cp

    x = cp.Variable(2)

    def problem(scale: float) -> cp.Problem:
        upper = -1.0 if scale == 1.0 else 3.0  # the first attempt is infeasible
        return cp.Problem(cp.Minimize(scale * cp.sum_squares(x - 1.0)), [x >= 0.0, x <= upper])

    outcome = feasibility.solve_until_optimal(problem, "clarabel", x)
    assert outcome.status == "optimal" and np.allclose(x.value, 1.0, atol=1e-6) and outcome.seconds > 0
    assert outcome.attempts == {"clarabel x1": "infeasible", "clarabel x0.01": "optimal"}
    assert outcome.solver == "clarabel" and outcome.tolerance() == feasibility.SOLVER_TOLERANCE["clarabel"]
    none = feasibility.solve_until_optimal(
        lambda scale: cp.Problem(cp.Minimize(cp.sum(x)), [x >= 1.0, x <= 0.0]), "clarabel", x)
    assert none.status is None and list(none.attempts) == ["clarabel x1", "clarabel x0.01", "scs x1"]


def test_an_answer_off_its_constraints_is_no_solution_and_the_next_attempt_is_made():
    """``solve_until_optimal(accept=)``: an ``optimal`` answer the check refuses (an interior-point solver may stop
    outside its LMIs) is followed by the next attempt, its status says so; when every answer is refused, the first
    is kept, so that its check names the violation."""
    import cvxpy as cp

    x = cp.Variable(2)

    def problem(scale: float) -> cp.Problem:
        return cp.Problem(cp.Minimize(scale * cp.sum_squares(x - 1.0)), [x >= 0.0])

    seen = []

    def not_the_first_solver(value: np.ndarray, solver: str, status: str) -> bool:
        seen.append((solver, status))
        return solver != "clarabel"

    outcome = feasibility.solve_until_optimal(problem, "clarabel", x, accept=not_the_first_solver)
    assert outcome.solver == "scs" and outcome.status == "optimal" and np.allclose(x.value, 1.0, atol=1e-3)
    assert outcome.attempts == {"clarabel x1": "optimal (violates its constraints)",
                                "clarabel x0.01": "optimal (violates its constraints)", "scs x1": "optimal"}
    assert seen == [("clarabel", "optimal"), ("clarabel", "optimal"), ("scs", "optimal")]
    refused = feasibility.solve_until_optimal(problem, "clarabel", x, accept=lambda *_: False)
    assert refused.solver == "clarabel" and refused.status == "optimal"
    assert all(v.endswith("(violates its constraints)") for v in refused.attempts.values())
