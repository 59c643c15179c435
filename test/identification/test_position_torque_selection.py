"""The choice of a position-dependent torque term by time-blocked cross-validation, on linear problems whose answer
is known: held-out predictions against numpy's least squares, a named joint kept without the test, no term without
evidence, the records and console lines of a choice and of a kept term."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.estimation.position_torque import PositionSeries
from dynid_ros.identification.cutoff_selection import BLOCKS
from dynid_ros.identification.position_torque_selection import (
    FitProblem,
    TermChoice,
    TermFit,
    choose_terms,
    terms_torque,
)


def _least_squares(w: np.ndarray, tau: np.ndarray, rows: np.ndarray) -> np.ndarray:
    w = np.asarray(w)
    return np.linalg.lstsq(w[rows], tau[rows], rcond=None)[0]


def _problem(stiffness: float, seed: int = 0, noise: float = 1.0) -> FitProblem:
    """Two joints, four base parameters, white noise; joint b's torque plus ``stiffness`` times its centred angle."""
    rng = np.random.default_rng(seed)
    n_samples, n_dof = 2000, 2
    t = np.linspace(0.0, 40.0, n_samples)
    q = np.column_stack([np.sin(0.7 * t), np.sin(1.3 * t + 1.0) + 0.3 * np.sin(0.23 * t)])
    w = rng.normal(size=(n_samples * n_dof, 4))
    tau = w @ np.array([1.0, -2.0, 0.5, 3.0]) + rng.normal(0.0, noise, n_samples * n_dof)
    centre = 0.5 * (q[:, 1].min() + q[:, 1].max())
    tau.reshape(-1, n_dof)[:, 1] += stiffness * (q[:, 1] - centre)
    return FitProblem(w, tau, tau, q, np.ones(tau.size, dtype=bool), _least_squares, np.full(n_dof, 10.0))


def test_prediction_without_a_term_is_the_fit_of_the_rows_given():
    problem = _problem(0.0)
    rows = np.ones(problem.tau.size, dtype=bool)
    rows[:1000] = False
    predicted = problem.predict(rows, [])
    beta = np.linalg.lstsq(problem.w_b[rows], problem.tau[rows], rcond=None)[0]
    np.testing.assert_allclose(predicted, (problem.w_b @ beta).reshape(-1, 2), rtol=1e-10, atol=1e-10)


def test_prediction_with_a_term_holds_the_spring_out_of_sample():
    problem = _problem(4.0, noise=0.05)
    rows = np.ones(problem.tau.size, dtype=bool)
    rows[: problem.tau.size // 2] = False  # fit the second half, predict the first
    term = PositionSeries.over("b", 1, problem.q[:, 1])
    truth = problem.tau.reshape(-1, 2)
    without = problem.predict(rows, [])[:1000, 1] - truth[:1000, 1]
    with_term = problem.predict(rows, [term])[:1000, 1] - truth[:1000, 1]
    assert np.sqrt(np.mean(with_term ** 2)) < 0.1  # the noise is 0.05 N m
    assert np.sqrt(np.mean(without ** 2)) > 10 * np.sqrt(np.mean(with_term ** 2))


def test_named_joints_are_kept_without_the_test_and_no_candidate_means_no_work():
    problem = _problem(0.0)
    calls = []

    def counting(w, tau, rows):
        calls.append(1)
        return _least_squares(w, tau, rows)

    problem.estimator = counting
    (named,) = choose_terms(problem, [], [0], ["a", "b"])
    assert named == TermChoice("a", True, True, False, None, None, None, None, None, None)
    assert calls == []  # nothing cross-validated
    choices = choose_terms(problem, [1], [0], ["a", "b"])
    assert [c.joint for c in choices] == ["a", "b"] and choices[0].named and not choices[1].named
    assert len(calls) == 2 * BLOCKS + BLOCKS  # each block without the term, and with it (estimated twice)


def test_a_kept_spring_has_errors_that_fall():
    (choice,) = choose_terms(_problem(2.0), [1], [], ["a", "b"])
    assert choice.kept and choice.flagged and not choice.named
    assert choice.joint_error_with < choice.joint_error_without and choice.error_with < choice.error_without
    assert choice.gain > choice.margin > 0
    assert set(choice.to_dict()) == {"joint", "kept", "named", "flagged", "joint_error_without", "joint_error_with",
                                     "error_without", "error_with", "gain", "margin"}


def test_the_lines_a_user_reads():
    choice = TermChoice("j4", False, False, True, 0.123, 0.121, 0.0456, 0.0455, 0.01, 0.05)
    assert choice.message() == ("j4: its residual is a function of its position, but a position-dependent torque "
                                "(spring/cable) is not kept: cross-validated error 12.3 % -> 12.1 % (mean log ratio "
                                "over the time blocks 0.01, margin 0.05; whole fit 4.56 % -> 4.55 %)")
    series = PositionSeries("j4", 3, 0.5, 1.0, 3)
    kept = TermFit(series, np.array([2.0, 0.0, 0.0]), np.array([0.1, 0.1, 0.1]),
                   TermChoice("j4", True, False, True, 0.2, 0.05, 0.04, 0.03, 1.0, 0.1))
    assert kept.amplitude == pytest.approx(2.0)  # P1 = x: 2 N m at both ends of the range
    assert kept.message().startswith("j4: a position-dependent torque (spring/cable) was modelled: "
                                     "cross-validated error 20.0 % -> 5.0 %; amplitude 2 N m")
    named = TermFit(series, np.array([2.0, 0.0, 0.0]), np.zeros(3),
                    TermChoice("j4", True, True, False, None, None, None, None, None, None))
    assert "named in model.position_torque (not cross-validated)" in named.message()
    record = kept.to_dict()
    assert record["basis"] == "legendre" and record["center"] == 0.5 and record["half_range"] == 1.0
    assert record["coefficients"] == [2.0, 0.0, 0.0] and record["amplitude"] == pytest.approx(2.0)
    assert record["cross_validation"]["joint_error_with"] == 0.05


def test_terms_torque_adds_each_term_on_its_joint():
    q = np.column_stack([np.linspace(-1, 1, 5), np.linspace(0, 2, 5)])
    assert not np.any(terms_torque([], q))
    series = PositionSeries("b", 1, 1.0, 1.0, 2)
    term = TermFit(series, np.array([3.0, 0.0]), np.zeros(2), TermChoice("b", True, True, False, *[None] * 6))
    torque = terms_torque([term], q)
    np.testing.assert_allclose(torque[:, 0], 0.0)
    np.testing.assert_allclose(torque[:, 1], 3.0 * (q[:, 1] - 1.0))


@pytest.mark.parametrize("stiffness", [0.0, 1.0])
def test_cross_validation_keeps_a_term_only_with_evidence(stiffness: float) -> None:
    """A candidate on a joint whose torque has no position-dependent part (white noise around a linear model) is
    not kept, whatever the noise draws (none of 200 draws measured); a spring of half the noise's standard
    deviation is."""
    kept = []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        n_samples, n_dof = 2000, 2
        t = np.linspace(0.0, 40.0, n_samples)
        q = np.column_stack([np.sin(0.7 * t), np.sin(1.3 * t + 1.0) + 0.3 * np.sin(0.23 * t)])
        w = rng.normal(size=(n_samples * n_dof, 4))
        tau = w @ np.array([1.0, -2.0, 0.5, 3.0]) + rng.normal(0.0, 1.0, n_samples * n_dof)
        tau.reshape(-1, n_dof)[:, 1] += stiffness * 0.5 * q[:, 1] / np.std(q[:, 1])
        problem = FitProblem(w, tau, tau, q, np.ones(tau.size, dtype=bool), _least_squares, np.ones(n_dof))
        (choice,) = choose_terms(problem, [1], [], ["a", "b"])
        assert choice.flagged and not choice.named
        kept.append(choice.kept)
    assert kept == [stiffness > 0] * 5, kept
