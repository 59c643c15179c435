"""The condition number of a regressor, plain and with unit-norm columns (Sousa & Cortesão 2014 sec. 5.2.2),
against numpy's SVD, on a real robot's base regressor and on the rank-deficient and zero-column cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dynid_ros.dynamics.conditioning import condition_number, scaled_condition_number, unit_column_singular_values

from support.synthetic import synthetic


def _svd_ratio(w: np.ndarray) -> float:
    s = np.linalg.svd(w, compute_uv=False)
    return s.max() / s.min()


@pytest.mark.parametrize("robot", ["ur5", "panda"])
def test_condition_numbers_of_a_real_base_regressor_match_numpy(robot):
    _, _, _, _, w_b, _ = synthetic(robot)
    assert condition_number(w_b) == pytest.approx(_svd_ratio(w_b), rel=1e-9)
    assert condition_number(w_b) == pytest.approx(np.linalg.cond(w_b), rel=1e-9)
    unit = w_b / np.linalg.norm(w_b, axis=0)
    assert scaled_condition_number(w_b) == pytest.approx(_svd_ratio(unit), rel=1e-9)
    np.testing.assert_allclose(unit_column_singular_values(w_b), np.linalg.svd(unit, compute_uv=False), rtol=1e-9)


def test_scaled_number_does_not_depend_on_the_parameters_units():
    _, _, _, _, w_b, _ = synthetic("ur5")
    units = np.geomspace(1e-3, 1e3, w_b.shape[1])  # e.g. g instead of kg on some columns
    assert scaled_condition_number(w_b * units) == pytest.approx(scaled_condition_number(w_b), rel=1e-8)
    assert condition_number(w_b * units) != pytest.approx(condition_number(w_b), rel=1e-2)


def test_hand_computed_diagonal_case():
    w = np.array([[10.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    assert condition_number(w) == pytest.approx(5.0)
    assert scaled_condition_number(w) == pytest.approx(1.0)  # orthogonal columns: 1 once each has unit norm
    np.testing.assert_allclose(unit_column_singular_values(w), [1.0, 1.0])


def test_rank_deficient_and_zero_column_cases():
    rank_one = np.outer(np.arange(1.0, 5.0), [1.0, 2.0])
    assert condition_number(rank_one) > 1e12 or condition_number(rank_one) == math.inf
    w = np.array([[1.0, 0.0, 2.0], [3.0, 0.0, -1.0], [0.5, 0.0, 1.0], [2.0, 0.0, 0.0]])
    assert condition_number(w) == math.inf  # an exact zero column: sigma_min is exactly 0
    assert scaled_condition_number(w) == math.inf  # a parameter the motion does not excite
    values = unit_column_singular_values(w)
    assert values.shape == (3,) and values[-1] < 1e-12 * values[0]  # the zero column stays zero (to round-off)
    np.testing.assert_allclose(values[:2], np.linalg.svd(w[:, [0, 2]] / np.linalg.norm(w[:, [0, 2]], axis=0),
                                                         compute_uv=False), rtol=1e-12)
    assert np.all(np.diff(values) <= 0)  # largest first
