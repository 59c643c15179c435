"""The bounds a user states on the parameters (link and total masses, CoM boxes, signs of friction and armature):
parsed from the ``bounds:`` mapping, refused with one line, turned into cvxpy constraints, checked on a result."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.dynamics import feasibility
from dynid_ros.errors import ConfigError

from support.rigid_bodies import TWO_LINK_LAYOUT as LAYOUT
from support.rigid_bodies import random_body


def test_bounds_from_config():
    bounds = feasibility.Bounds.from_config({
        "link_mass": {"default": [0.1, 10], "lower": [1, 2]},
        "total_mass": [2, 8],
        "com_box": {"upper": [[-0.1, 0.1], [-0.2, 0.2], [0.0, 0.5]]},
        "friction_nonnegative": False,
    }, LAYOUT)
    assert bounds.link_mass == {0: (0.1, 10.0), 1: (1.0, 2.0)}
    assert bounds.total_mass == (2.0, 8.0)
    assert np.allclose(bounds.com_box[0], [[-0.1, 0.1], [-0.2, 0.2], [0.0, 0.5]])
    assert not bounds.friction_nonnegative and bounds.armature_nonnegative
    assert feasibility.Bounds.from_config({"link_mass": [0, 3]}, LAYOUT).link_mass == {0: (0.0, 3.0), 1: (0.0, 3.0)}


@pytest.mark.parametrize("mapping, message", [
    ({"mass": [1, 2]}, "unknown key(s) mass"),
    ({"link_mass": {"forearm": [1, 2]}}, "unknown link 'forearm'"),
    ({"com_box": {"hand": [[0, 1], [0, 1], [0, 1]]}}, "unknown link 'hand'"),
    ({"total_mass": [5, 1]}, "lower bound 5.0 is above upper bound 1.0"),
    ({"total_mass": "heavy"}, "total_mass must be [lo, hi]"),
    ({"com_box": {"upper": [[0, 1], [0, 1]]}}, "com_box.upper must be"),
    ({"armature_nonnegative": "yes"}, "must be true or false"),
])
def test_bad_bounds_are_config_errors(mapping, message):
    with pytest.raises(ConfigError) as err:
        feasibility.Bounds.from_config(mapping, LAYOUT)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_bounds_are_parsed_in_their_own_module_and_checked_not_clipped():
    """The ``bounds:`` mapping lives in dynid_ros.dynamics.bounds (the LMI mathematics stay in feasibility); the
    non-negative terms are public; a violation is reported relative to each term's scale."""
    from dynid_ros.dynamics import bounds
    from dynid_ros.identification import options

    assert feasibility.Bounds is bounds.Bounds
    assert options.CONSISTENCIES is feasibility.CONSISTENCIES and options.SOLVERS is feasibility.SOLVERS
    b = bounds.Bounds()
    assert b.nonnegative_symbols(LAYOUT) == ["fv", "fc", "Ia"]
    delta = np.concatenate([random_body(np.random.default_rng(9)), random_body(np.random.default_rng(10)),
                            [0.1, -1e-7, 0.01, 0.3, 0.4, 0.02]])
    assert b.violations(delta, LAYOUT, tol=1e-6) == []
    assert b.violations(delta, LAYOUT, tol=1e-8) == ["joint j1: fc = -1e-07 < 0"]
