"""Which joints look coupled: the share of one joint's residual that another joint's friction and rotor-inertia
signals explain beyond its own, both ways; a coupling is reported only when both shares are large."""

from __future__ import annotations

import numpy as np

from dynid_ros.estimation.coupling_diagnostic import coupled_pairs


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
