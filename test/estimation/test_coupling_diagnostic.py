"""Which joints look coupled: the share of one joint's residual that another joint's friction and rotor-inertia
signals explain beyond its own, both ways; a coupling is reported only when both shares are large."""

from __future__ import annotations

import numpy as np

from dynid_ros.estimation.coupling_diagnostic import COUPLED_SHARE, coupled_pairs, shares


def test_coupled_pairs_needs_both_directions():
    """A residual of joint 0 driven by joint 1's friction while joint 1's residual is noise is no coupling."""
    rng = np.random.default_rng(0)
    t = np.linspace(0.0, 10.0, 2000)
    dq = np.column_stack([np.sin(t), np.cos(1.7 * t), np.sin(0.6 * t + 1)])
    ddq = np.gradient(dq, t, axis=0)
    noise = rng.normal(0.0, 0.01, dq.shape)
    one_way = noise.copy()
    one_way[:, 0] += 0.3 * np.sign(dq[:, 1])
    assert coupled_pairs(one_way, dq, ddq, ["a", "b", "c"]) == []
    both = one_way.copy()
    both[:, 1] += 0.3 * np.sign(dq[:, 0])
    (pair,) = coupled_pairs(both, dq, ddq, ["a", "b", "c"])
    assert (pair.a, pair.b) == ("a", "b") and min(pair.share_a, pair.share_b) > 0.9


def _motion():
    t = np.linspace(0.0, 10.0, 3000)
    dq = np.column_stack([np.sin(t), np.cos(1.7 * t), np.sin(0.6 * t + 1)])
    return dq, np.gradient(dq, t, axis=0)


def test_shares_of_a_coupling_both_ways_and_of_noise():
    rng = np.random.default_rng(1)
    dq, ddq = _motion()
    residual = rng.normal(0.0, 0.01, dq.shape)
    residual[:, 0] += 0.2 * dq[:, 2] + 0.05 * ddq[:, 2]  # joint 2's viscous friction and rotor inertia on joint 0
    residual[:, 2] += 0.2 * dq[:, 0]
    share = shares(residual, dq, ddq)
    assert np.all(np.diag(share) == 0.0)
    assert share[0, 2] > 0.95 and share[2, 0] > 0.95
    uncoupled = [share[0, 1], share[1, 0], share[1, 2], share[2, 1]]  # signals overlap a little over 10 s
    assert max(uncoupled) < 0.5 * COUPLED_SHARE
    (pair,) = coupled_pairs(residual, dq, ddq, ["a", "b", "c"])
    assert (pair.a, pair.b) == ("a", "c")
    assert pair.message().startswith(f"joints a and c look coupled: their residuals are {100 * pair.share_a:.0f} % "
                                     f"and {100 * pair.share_b:.0f} % explained by each other's motion")
    assert coupled_pairs(residual, dq, ddq, ["a", "b", "c"], threshold=0.999) == []


def test_a_residual_its_own_signals_explain_has_no_share():
    dq, ddq = _motion()
    residual = np.column_stack([0.3 * np.sign(dq[:, 0]) + 0.1 * dq[:, 0], np.zeros(dq.shape[0]),
                                np.random.default_rng(2).normal(0, 0.01, dq.shape[0])])
    share = shares(residual, dq, ddq)
    assert np.all(share[0] == 0.0) and np.all(share[1] == 0.0)  # explained by itself, or nothing to explain


def test_pairs_are_sorted_by_their_smaller_share():
    rng = np.random.default_rng(3)
    dq, ddq = _motion()
    residual = rng.normal(0.0, 0.01, dq.shape)
    residual[:, 0] += 0.3 * np.sign(dq[:, 1])
    residual[:, 1] += 0.3 * np.sign(dq[:, 0])
    residual[:, 1] += 0.3 * np.sign(dq[:, 2])
    residual[:, 2] += 0.01 * np.sign(dq[:, 1]) + 0.02 * rng.normal(size=dq.shape[0])  # weakly coupled
    pairs = coupled_pairs(residual, dq, ddq, ["a", "b", "c"], threshold=0.05)
    smaller = [min(p.share_a, p.share_b) for p in pairs]
    assert smaller == sorted(smaller, reverse=True) and (pairs[0].a, pairs[0].b) == ("a", "b")
