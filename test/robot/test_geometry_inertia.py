"""Inertials from geometry for the links a description leaves massless: exact for solids whose volume integrals are
known in closed form, placed as the URDF places them, written back as the URDF's own ``<inertial>`` would be."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from dynid_ros.cli.excite import with_guessed_masses
from dynid_ros.errors import ModelError
from dynid_ros.robot.geometry_inertia import HULL_DENSITY, complete_massless_bodies, massless_bodies
from dynid_ros.robot.model import load_model
from dynid_ros.robot.urdf_writer import attached_parameters

ARM = """<robot name="boxes">
  <link name="base"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="upper"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" velocity="2" effort="100"/></joint>
  <link name="upper"><collision><origin xyz="0.05 0 0.2" rpy="0 0.3 0.1"/><geometry><box size="0.1 0.2 0.4"/>
    </geometry></collision>{upper_inertial}</link>
  <joint name="j2" type="revolute"><parent link="upper"/><child link="lower"/><origin xyz="0 0 0.4" rpy="0.2 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" velocity="2" effort="100"/></joint>
  <link name="lower"><collision><origin xyz="0.15 0 0" rpy="0 1.5707963 0"/><geometry>
    <cylinder radius="0.04" length="0.3"/></geometry></collision></link>
  <joint name="fix" type="fixed"><parent link="lower"/><child link="flange"/><origin xyz="0.3 0 0" rpy="0 0 0.5"/>
  </joint>
  <link name="flange"><visual><origin xyz="0.01 0 0"/><geometry><box size="0.02 0.1 0.1"/></geometry></visual>
    {flange_inertial}</link>
</robot>"""
UPPER = ('<inertial><origin xyz="0 0 0.1"/><mass value="2.5"/><inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" '
         'izz="0.01"/></inertial>')
FLANGE = ('<inertial><origin xyz="0.01 0 0"/><mass value="0.3"/><inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" '
          'iyz="0" izz="1e-4"/></inertial>')


def box(size, xyz, rpy):
    """The solid box at the hull density, placed: pinocchio's closed form."""
    inertia = pin.Inertia.FromBox(HULL_DENSITY * float(np.prod(size)), *size)
    return pin.SE3(pin.rpy.rpyToMatrix(*rpy), np.array(xyz, dtype=float)).act(inertia)


def cylinder(radius, length, xyz, rpy):
    inertia = pin.Inertia.FromCylinder(HULL_DENSITY * np.pi * radius**2 * length, radius, length)
    return pin.SE3(pin.rpy.rpyToMatrix(*rpy), np.array(xyz, dtype=float)).act(inertia)


@pytest.mark.parametrize("upper, flange", [("", ""), (UPPER, ""), ("", FLANGE)],
                         ids=["nothing", "upper_has_its_mass", "flange_has_its_mass"])
def test_massless_links_get_their_solids_inertia_where_the_urdf_places_them(upper, flange):
    model = load_model(urdf_text=ARM.format(upper_inertial=upper, flange_inertial=flange), quiet=True)
    assert massless_bodies(model) == [b for b, mass in ((1, upper), (2, flange)) if not mass]  # the whole body's
    completed = complete_massless_bodies(model, [1, 2])  # a massless link on a body with mass is completed too
    assert completed.bare == []
    upper_solid = box((0.1, 0.2, 0.4), (0.05, 0, 0.2), (0, 0.3, 0.1))
    lower_solid = cylinder(0.04, 0.3, (0.15, 0, 0), (0, 1.5707963, 0))
    flange_frame = pin.SE3(pin.rpy.rpyToMatrix(0, 0, 0.5), np.array([0.3, 0, 0]))
    flange_solid = flange_frame.act(box((0.02, 0.1, 0.1), (0.01, 0, 0), (0, 0, 0)))
    flange_own = flange_frame.act(pin.Inertia(0.3, np.array([0.01, 0, 0]), 1e-4 * np.eye(3)))
    expected = {1: model.pin_model.inertias[1] if upper else upper_solid,
                2: lower_solid + (flange_own if flange else flange_solid)}
    for body, inertia in expected.items():
        np.testing.assert_allclose(completed.model.pin_model.inertias[body].toDynamicParameters(),
                                   inertia.toDynamicParameters(), rtol=1e-6, atol=1e-9)
    assert set(completed.found) == ({"lower"} | ({"upper"} if not upper else set()) | ({"flange"} if not flange else
                                                                                          set()))
    # the URDF text says the same: its reader and the parts attached to a link agree with the bodies
    again = load_model(urdf_text=completed.model.urdf_xml, quiet=True)
    for body in (1, 2):
        np.testing.assert_allclose(again.pin_model.inertias[body].toDynamicParameters(),
                                   completed.model.pin_model.inertias[body].toDynamicParameters(), rtol=1e-6,
                                   atol=1e-9)
    layout = model.layout_for(("viscous",), False)
    np.testing.assert_allclose(attached_parameters(completed.model, layout), attached_parameters(again, layout),
                               atol=1e-9)


def test_excite_checks_the_torque_limits_against_the_guessed_masses_and_names_what_it_could_not_guess(capsys):
    model = load_model(urdf_text=ARM.format(upper_inertial="", flange_inertial=""), quiet=True)
    q = np.array([0.0, 1.0])
    assert np.allclose(pin.rnea(model.pin_model, model.pin_model.createData(), q, 0 * q, 0 * q), 0.0)
    guessed = with_guessed_masses(model, [])
    gravity = pin.rnea(guessed.pin_model, guessed.pin_model.createData(), q, 0 * q, 0 * q)
    assert abs(gravity[1]) > 1.0  # the lower link's weight on j2 (about 3 kg at 0.15-0.3 m)
    said = capsys.readouterr().out
    assert said.count("\n") == 1 and "gives no mass to upper, lower, flange" in said and "1100 kg/m^3" in said, said
    bare = ARM.format(upper_inertial="", flange_inertial="").replace(
        '<collision><origin xyz="0.15 0 0" rpy="0 1.5707963 0"/><geometry>\n    <cylinder radius="0.04" '
        'length="0.3"/></geometry></collision>', "").replace("<visual>", "<!--").replace("</visual>", "-->")
    with_guessed_masses(load_model(urdf_text=bare, quiet=True), [])
    said = capsys.readouterr().out
    assert "gives no mass and no geometry to lower: their weight is not in the torques checked" in said, said


def test_a_mesh_not_found_is_one_line_naming_it():
    text = ARM.format(upper_inertial="", flange_inertial="").replace(
        '<box size="0.1 0.2 0.4"/>', '<mesh filename="package://nowhere_pkg/meshes/upper.stl"/>')
    model = load_model(urdf_text=text, quiet=True)
    with pytest.raises(ModelError) as err:
        complete_massless_bodies(model, massless_bodies(model))
    assert "\n" not in str(err.value) and "package://nowhere_pkg/meshes/upper.stl" in str(err.value)


def test_the_execution_checks_the_effort_limits_against_the_guessed_masses(caplog):
    """Where any trajectory runs (the sim node, the excitation node, simulate), the robot's limits check the effort
    with the same guessed masses as ``dynid excite``, and say so."""
    import logging

    from dynid_ros.execution.robot_limits import robot_limits

    model = load_model(urdf_text=ARM.format(upper_inertial="", flange_inertial=""), quiet=True)
    with caplog.at_level(logging.WARNING, logger="dynid_ros"):
        robot = robot_limits(model)
    assert robot.model.pin_model.inertias[2].mass > 1.0 and model.pin_model.inertias[2].mass == 0.0
    assert "gives no mass to upper, lower, flange" in caplog.text
