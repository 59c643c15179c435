"""The bounds a user states on the parameters (link and total masses, CoM boxes, signs of friction and armature):
parsed from the ``bounds:`` mapping, refused with one line, turned into cvxpy constraints, checked on a result."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.dynamics import feasibility
from dynid_ros.dynamics.bounds import Bounds
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


def test_the_constraints_hold_the_solution_cvxpy_finds():
    """The nearest parameters to a point that breaks the bounds: every bound holds at the solution."""
    import cvxpy as cp

    target = np.concatenate([random_body(np.random.default_rng(3)), random_body(np.random.default_rng(4)),
                             [-0.2, 0.3, -0.01, 0.2, -0.1, 0.02]])
    bounds = Bounds.from_config({"link_mass": {"upper": [0.1, 0.2]}, "total_mass": [0.0, 2.0],
                                 "com_box": {"lower": [[0.0, 0.01], [-1, 1], [-1, 1]]}}, LAYOUT)
    scale = np.abs(target) + 1.0
    delta = cp.Variable(LAYOUT.n_parameters)
    cp.Problem(cp.Minimize(cp.sum_squares(delta - target)), bounds.constraints(delta, LAYOUT, scale)).solve()
    found = np.array(delta.value)
    assert bounds.violations(found, LAYOUT, tol=1e-6) == []
    assert 0.1 - 1e-6 <= found[LAYOUT.link_slice(0).start] <= 0.2 + 1e-6
    assert found[LAYOUT.indices("fv")].min() >= -1e-7 and found[LAYOUT.indices("Ia")].min() >= -1e-7
    assert bounds.violations(target, LAYOUT)  # the target broke them


def test_violations_name_each_bound():
    delta = np.concatenate([random_body(np.random.default_rng(5)), random_body(np.random.default_rng(6)),
                            [0.1, 0.1, -0.3, 0.2, 0.1, 0.01]])
    mass = delta[0]
    bounds = Bounds(link_mass={0: (mass + 1.0, mass + 2.0)}, total_mass=(0.0, 0.1),
                    com_box={1: np.array([[5.0, 6.0], [-1.0, 1.0], [-1.0, 1.0]])})
    found = bounds.violations(delta, LAYOUT)
    assert found[0].startswith(f"link upper: mass {mass:.6g} outside [{mass + 1.0}, {mass + 2.0}]")
    assert found[1].startswith("total mass ") and found[1].endswith("outside [0.0, 0.1]")
    assert found[2] == "link lower: CoM x outside [5.0, 6.0]"
    assert found[3] == "joint j1: Ia = -0.3 < 0"
    assert Bounds(armature_nonnegative=False).violations(delta, LAYOUT) == []
    assert Bounds(friction_nonnegative=False, armature_nonnegative=False).nonnegative_symbols(LAYOUT) == []
