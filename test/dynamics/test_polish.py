"""A solver's answer that misses a constraint within the solver's tolerance is moved onto the feasible set and says
what moved; one beyond it is an error. Constraints: the link LMIs (both consistencies), friction and armature signs,
link and total mass bounds, CoM boxes."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.dynamics.bounds import Bounds
from dynid_ros.dynamics.feasibility import SOLVER_TOLERANCE, min_eigenvalues
from dynid_ros.dynamics.polish import polish
from dynid_ros.errors import EstimationError
from dynid_ros.robot.parameters import ParameterLayout

from support.synthetic import random_feasible_delta

EPS = 1e-6
SCS = SOLVER_TOLERANCE["scs"]


@pytest.fixture
def arm() -> tuple[ParameterLayout, np.ndarray]:
    layout = ParameterLayout(("j1", "j2", "j3"), ("l1", "l2", "l3"), ("viscous", "coulomb", "offset"), True)
    return layout, random_feasible_delta(layout, np.random.default_rng(3))


def at_margin(delta: np.ndarray, layout: ParameterLayout, k: int, consistency: str, below: float) -> np.ndarray:
    """``delta`` with link ``k`` moved toward a massless one until its matrix's smallest eigenvalue is ``EPS -
    below`` (bisection on the segment: the eigenvalue is continuous along it)."""
    part = layout.link_slice(k)

    def lowest(t: float) -> float:
        moved = delta.copy()
        moved[part] = (1.0 - t) * delta[part] - t * delta[part]
        return float(min_eigenvalues(moved, layout, consistency)[k])

    lo, hi = 0.0, 1.0  # lowest(lo) > target > lowest(hi)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if lowest(mid) > EPS - below else (lo, mid)
    out = delta.copy()
    out[part] = (1.0 - hi) * delta[part] - hi * delta[part]
    return out


@pytest.mark.parametrize("consistency", ["full", "physical"])
def test_misses_within_the_tolerance_are_polished_and_named(arm, consistency):
    layout, truth = arm
    answer = at_margin(truth, layout, 1, consistency, below=SCS.absolute)  # the SCS case: just under the margin
    answer[layout.joint_index(2, "Ia")] = -0.5 * SCS.absolute  # and a rotor inertia a rounding below zero
    answer[layout.joint_index(0, "fv")] = -0.2 * SCS.absolute
    polished = polish(answer, layout, consistency=consistency, eps=EPS, bounds=Bounds(), tolerance=SCS, who="FBPE")
    assert min_eigenvalues(polished.delta, layout, consistency).min() >= EPS * (1 - 1e-9)
    assert polished.delta[layout.joint_index(2, "Ia")] == 0.0 and polished.delta[layout.joint_index(0, "fv")] == 0.0
    assert len(polished.moved) == 3 and "link l2" in polished.moved[0] and "Ia" in " ".join(polished.moved)
    assert 0 < polished.violation <= polished.allowance
    assert np.max(np.abs(polished.delta - answer)) < 10 * SCS.absolute  # moved by about the miss, no more
    moved = {*range(layout.link_slice(1).start, layout.link_slice(1).stop), layout.joint_index(2, "Ia"),
             layout.joint_index(0, "fv")}
    untouched = [i for i in range(layout.n_parameters) if i not in moved]
    np.testing.assert_array_equal(polished.delta[untouched], answer[untouched])
    message = polished.message("scs")
    assert "polished onto the feasible set" in message and "scs" in message and "\n" not in message
    assert not polished.margin_only  # a sign was missed: the console says so
    grazed = polish(at_margin(truth, layout, 1, consistency, below=0.1 * EPS), layout, consistency=consistency,
                    eps=EPS, bounds=Bounds(), tolerance=SCS)
    assert grazed.moved and grazed.margin_only  # only the safety margin, the link positive definite as returned


def test_a_miss_beyond_the_tolerance_is_an_error_naming_it(arm):
    layout, truth = arm
    answer = truth.copy()
    answer[layout.joint_index(1, "fc")] = -1e-3
    with pytest.raises(EstimationError, match=r"bpfc: .*beyond the solver's tolerance .*joint j2: fc"):
        polish(answer, layout, consistency="full", eps=EPS, bounds=Bounds(), tolerance=SCS, who="bpfc")
    with pytest.raises(EstimationError, match="link l1: smallest eigenvalue"):
        polish(at_margin(truth, layout, 0, "full", below=1e-2), layout, consistency="full", eps=EPS,
               bounds=Bounds(), tolerance=SCS)


def test_the_tolerance_is_in_the_problem_variables(arm):
    """A rotor inertia of -1.5e-8 kg m^2 on a link of scale 0.012 kg m^2 is 1.2e-6 of its variable: beyond SCS's
    1e-6 + 1e-6 max(1, |x|) only when the variables are large; the scale given decides."""
    layout, truth = arm
    answer = truth.copy()
    i = layout.joint_index(0, "Ia")
    answer[i] = -1.5e-8
    size = np.ones(layout.n_parameters)
    size[i] = 0.012
    polished = polish(answer, layout, consistency="full", eps=EPS, bounds=Bounds(), tolerance=SCS, size=size)
    assert polished.delta[i] == 0.0 and polished.violation == pytest.approx(1.5e-8 / 0.012)
    size[i] = 1e-4  # the same number on a variable of scale 1e-4: 1.5e-4 of it, a real violation
    with pytest.raises(EstimationError, match="beyond the solver's tolerance"):
        polish(answer, layout, consistency="full", eps=EPS, bounds=Bounds(), tolerance=SCS, size=size)


def test_bounds_missed_within_the_tolerance_are_polished_together_with_the_lmis(arm):
    layout, truth = arm
    masses = truth[layout.indices("m")]
    bounds = Bounds(link_mass={0: (0.0, float(masses[0]))}, total_mass=(0.0, float(masses.sum())),
                    com_box={2: np.array([[-1.0, 1.0], [-1.0, 1.0], [-1.0, float(truth[layout.link_slice(2)][3]
                                                                                   / masses[2])]])})
    answer = at_margin(truth, layout, 0, "full", below=SCS.absolute)
    answer[layout.link_slice(0).start] += 0.5 * SCS.absolute  # link 1's mass a rounding above its bound
    answer[layout.link_slice(2).start + 3] += 0.5 * SCS.absolute  # link 3's CoM z a rounding outside its box
    polished = polish(answer, layout, consistency="full", eps=EPS, bounds=bounds, tolerance=SCS)
    assert polished.moved
    assert bounds.violations(polished.delta, layout, tol=0.0) == []
    assert min_eigenvalues(polished.delta, layout, "full").min() >= EPS * (1 - 1e-9)
