"""Which base parameters the data identify: the excitation SNR of each base parameter against a hand computation on
orthogonal columns, a weak column kept at the prior, an unexcited one refused without a prior, and the names in
words."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.dynamics.base_parameters import compute_base_parameters
from dynid_ros.errors import IdentifiabilityError
from dynid_ros.estimation.identifiability import (
    NOT_IDENTIFIED_SNR,
    check_excited,
    describe,
    describe_base,
    excitation_snr,
    not_identified,
)

from support.arm_runs import arm_run


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    run = arm_run(tmp_path_factory.mktemp("arm"))
    return run, compute_base_parameters(run.model, run.layout)


def _orthogonal(n_rows: int, norms: np.ndarray, seed: int) -> np.ndarray:
    """Columns orthogonal to each other, of the given norms (a random orthonormal basis scaled)."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(n_rows, norms.size)))
    return q * norms


def test_snr_on_orthogonal_columns_is_their_norm_over_the_noise(arm):
    _, base = arm
    n_base, n_dof = base.n_base, 3
    norms = np.geomspace(0.01, 100.0, n_base)
    w_b = _orthogonal(900 * n_dof, norms, seed=1)
    rng = np.random.default_rng(2)
    sigma = 0.5
    tau = w_b @ rng.normal(size=n_base) + rng.normal(0.0, sigma, w_b.shape[0])  # white noise: tau_int about 1
    snr = excitation_snr(w_b, tau, n_dof, np.ones(n_base))
    np.testing.assert_allclose(snr, norms / sigma, rtol=0.1)  # |R_ii| of orthogonal columns: their norms
    doubled = excitation_snr(w_b, tau, n_dof, np.full(n_base, 2.0))  # a prior twice as wide: twice the SNR
    np.testing.assert_allclose(doubled, 2 * snr, rtol=1e-9)
    rows = np.ones(tau.size, dtype=bool)
    rows[: tau.size // 2] = False  # half the rows are no observations: sqrt(1/2) of the column norms left
    half = excitation_snr(w_b, tau, n_dof, np.ones(n_base), rows)
    assert np.median(half / snr) == pytest.approx(np.sqrt(0.5), rel=0.15)


def test_a_weak_column_is_kept_at_the_prior(arm):
    run, base = arm
    n_base = base.n_base
    norms = np.full(n_base, 50.0)
    norms[4] = 1e-3  # the data barely see beta5
    w_b = _orthogonal(300 * 3, norms, seed=3)
    rng = np.random.default_rng(4)
    tau = w_b @ rng.normal(size=n_base) + rng.normal(0.0, 0.1, w_b.shape[0])
    mean = run.truth
    missing = not_identified(w_b, tau, base, mean, np.eye(mean.size))
    assert [m.name for m in missing] == ["beta5"]
    (m,) = missing
    assert m.index == 4 and m.value == pytest.approx(float(base.K[4] @ mean))
    assert m.expression == base.expressions[4] and m.description == describe_base(base, 4)
    assert m.to_dict() == {"name": "beta5", "expression": m.expression, "description": m.description, "value": m.value}
    assert 1e-3 / 0.1 < NOT_IDENTIFIED_SNR  # the weak column's SNR, by hand


def test_without_a_prior_every_base_parameter_must_be_excited(arm):
    _, base = arm
    w_b = _orthogonal(600, np.ones(base.n_base), seed=5)
    check_excited(w_b, base)  # all excited: no error
    w_b[:, 2] = 0.0
    w_b[:, 7] = w_b[:, 6] * 3.0  # a column that repeats another
    with pytest.raises(IdentifiabilityError, match="too little excitation: 2 base parameter\\(s\\) not "
                                                   "identifiable from this data: beta3 = "):
        check_excited(w_b, base)


def test_parameters_in_words(arm):
    run, base = arm
    layout = run.layout
    assert describe("Ia2", layout) == "rotor inertia of joint 2 (j2)"
    assert describe("m3", layout) == "mass of link 3 (l3)"
    assert describe("mx1", layout) == "first moment x of link 1 (l1)"
    assert describe("fo3", layout) == "torque offset of joint 3 (j3)"
    assert describe("beta1", layout) == "beta1" and describe("nonsense", layout) == "nonsense"
    for i in range(base.n_base):
        leading = layout.symbols[int(base.independent[i])]
        grouped = int(np.count_nonzero(base.K[i])) - 1
        text = describe_base(base, i)
        assert text.startswith(describe(leading, layout))
        assert text.endswith(f"combined with {grouped} other parameter(s)") == (grouped > 0)
