"""The parameter convention, stated once: link parameters in pinocchio's order about the joint frame (checked
against pinocchio's Inertia), the parallel-axis theorem both ways, the layout's stacking, friction terms parsed."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from dynid_ros.errors import ConfigError
from dynid_ros.robot.parameters import (
    LINK_PARAMETER_NAMES,
    ParameterLayout,
    inertia_about_com,
    inertia_matrix,
    link_parameters,
    parse_friction,
    skew,
)

INERTIA = np.array([[0.03, 0.002, -0.001], [0.002, 0.02, 0.0005], [-0.001, 0.0005, 0.025]])


def test_link_parameters_are_pinocchios_dynamic_parameters():
    mass, com = 2.5, np.array([0.1, -0.05, 0.2])
    ours = link_parameters(mass, com, INERTIA)
    np.testing.assert_allclose(ours, pin.Inertia(mass, com, INERTIA).toDynamicParameters(), rtol=1e-14,
                               atol=1e-16)
    assert LINK_PARAMETER_NAMES == ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
    back_mass, back_com, back_inertia = inertia_about_com(ours)
    assert back_mass == mass
    np.testing.assert_allclose(back_com, com, rtol=1e-14)
    np.testing.assert_allclose(back_inertia, INERTIA, atol=1e-15)
    # about the joint frame: I_o = I_c + m (|c|^2 1 - c c^T) (parallel axis, by hand)
    np.testing.assert_allclose(inertia_matrix(ours), INERTIA + mass * (com @ com * np.eye(3) - np.outer(com, com)),
                               atol=1e-15)


def test_a_massless_link_has_its_inertia_about_the_origin():
    params = np.array([0.0, 0.0, 0.0, 0.0, 1.0, 0.1, 2.0, 0.2, 0.3, 3.0])
    mass, com, inertia = inertia_about_com(params)
    assert mass == 0.0 and not com.any()
    np.testing.assert_array_equal(inertia, inertia_matrix(params))


def test_skew_is_the_cross_product():
    a, b = np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.7, -1.1])
    np.testing.assert_allclose(skew(a) @ b, np.cross(a, b), atol=1e-15)
    np.testing.assert_array_equal(skew(a), -skew(a).T)


def test_the_layout_stacks_links_then_joint_terms():
    layout = ParameterLayout(("j1", "j2", "j3"), ("l1", "l2", "l3"), ("viscous", "offset"), True)
    assert layout.n_dof == 3 and layout.joint_terms == ("fv", "fo", "Ia") and layout.n_parameters == 30 + 9
    assert layout.link_slice(2) == slice(20, 30)
    assert layout.joint_index(0, "fv") == 30 and layout.joint_index(2, "Ia") == 38
    np.testing.assert_array_equal(layout.indices("m"), [0, 10, 20])
    np.testing.assert_array_equal(layout.indices("Izz"), [9, 19, 29])
    np.testing.assert_array_equal(layout.indices("fo"), [31, 34, 37])
    assert layout.indices("fc").size == 0  # not in the layout
    assert layout.names[:2] == ["l1.m", "l1.mx"] and layout.names[-1] == "j3.Ia"
    assert layout.symbols[10] == "m2" and layout.symbols[-3:] == ["fv3", "fo3", "Ia3"]
    assert len(layout.names) == len(layout.symbols) == layout.n_parameters
    bare = ParameterLayout(("j1",), ("l1",), (), False)
    assert bare.joint_terms == () and bare.n_parameters == 10


@pytest.mark.parametrize(("given", "parsed"), [
    ("viscous,coulomb", ("viscous", "coulomb")),
    ("Coulomb, viscous", ("viscous", "coulomb")),  # canonical order, case and spaces ignored
    (["offset", "sigmoid", "viscous"], ("viscous", "offset", "sigmoid")),  # sigmoid last
    ("none", ()), ("", ()), (None, ()), ([], ()),
])
def test_friction_terms_parsed(given, parsed):
    assert parse_friction(given) == parsed


def test_an_unknown_friction_term_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown friction term\\(s\\) \\['stribeck'\\]; choose from viscous"):
        parse_friction("viscous,stribeck")
