"""The normal equations of a tall least-squares problem, summed over blocks of rows, and their square root:
same minimizer and residual as the problem itself (numpy's lstsq on the whole rows is the independent reference)."""

from __future__ import annotations

from functools import reduce

import numpy as np
import pytest

from dynid_ros.estimation.normal_equations import NormalEquations

from support.synthetic import synthetic


def _problem(rank_deficient: bool = False):
    _, _, _, truth, _, w = synthetic("ur5")  # the full (rank-deficient) regressor of a real UR5
    rng = np.random.default_rng(3)
    a = w if rank_deficient else w[:, np.linalg.norm(w, axis=0) > 0][:, :20]
    b = (w @ truth) + rng.normal(0.0, 0.05, w.shape[0])
    return a, b


def test_of_holds_the_products_and_the_row_count():
    a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    b = np.array([1.0, -1.0, 2.0])
    equations = NormalEquations.of(a, b)
    np.testing.assert_array_equal(equations.gram, [[35.0, 44.0], [44.0, 56.0]])
    np.testing.assert_array_equal(equations.projection, [8.0, 10.0])
    assert equations.b_norm2 == 6.0 and equations.rows == 3


def test_blocks_sum_to_the_whole_problem():
    a, b = _problem()
    edges = [0, 7, 1000, 1001, 2500, a.shape[0]]
    blocks = [NormalEquations.of(a[i:j], b[i:j]) for i, j in zip(edges[:-1], edges[1:], strict=True)]
    total, whole = reduce(lambda x, y: x + y, blocks), NormalEquations.of(a, b)
    np.testing.assert_allclose(total.gram, whole.gram, rtol=1e-10, atol=1e-9 * np.abs(whole.gram).max())
    np.testing.assert_allclose(total.projection, whole.projection, rtol=1e-10,
                               atol=1e-9 * np.abs(whole.projection).max())
    assert total.b_norm2 == pytest.approx(whole.b_norm2, rel=1e-12) and total.rows == a.shape[0]


def test_residual_norm_matches_the_residual_of_the_rows():
    a, b = _problem()
    equations = NormalEquations.of(a, b)
    rng = np.random.default_rng(1)
    for x in (np.zeros(a.shape[1]), rng.normal(size=a.shape[1])):
        assert equations.residual_norm2(x) == pytest.approx(np.sum((a @ x - b) ** 2), rel=1e-8)
    x_ls = np.linalg.lstsq(a, b, rcond=None)[0]
    assert equations.residual_norm2(x_ls) == pytest.approx(np.sum((a @ x_ls - b) ** 2), rel=1e-6)
    exact = NormalEquations.of(a, a @ x_ls)
    assert exact.residual_norm2(x_ls) >= 0.0  # round-off never makes it negative


@pytest.mark.parametrize("rank_deficient", [False, True])
def test_root_has_the_minimizer_and_the_residual_up_to_a_constant(rank_deficient):
    a, b = _problem(rank_deficient)
    equations = NormalEquations.of(a, b)
    r, c = equations.root()
    assert r.shape == (a.shape[1], a.shape[1]) and c.shape == (a.shape[1],)
    rng = np.random.default_rng(2)
    xs = [rng.normal(size=a.shape[1]) for _ in range(3)]
    offsets = [np.sum((a @ x - b) ** 2) - np.sum((r @ x - c) ** 2) for x in xs]
    assert np.ptp(offsets) <= 1e-7 * max(abs(o) for o in offsets + [np.sum(b ** 2)])
    # a minimizer of the root problem minimizes the whole problem (its minimizers form an affine space when rank
    # deficient: compare the minimum, not a particular minimizer)
    x_root = np.linalg.lstsq(r, c, rcond=1e-10)[0]
    x_rows = np.linalg.lstsq(a, b, rcond=None)[0]
    best = np.sum((a @ x_rows - b) ** 2)
    assert np.sum((a @ x_root - b) ** 2) == pytest.approx(best, rel=1e-6)
    np.testing.assert_allclose(a @ x_root, a @ x_rows, atol=1e-5 * np.abs(b).max())
