from pathlib import Path

import numpy as np

from dynid_ros.dynamics.base_parameters import compute_base_parameters, random_states
from dynid_ros.dynamics.regressor import regressor
from dynid_ros.robot.model import load_model
from dynid_ros.robot.resources import robot_file

from support.robots import DATA, UR5_ERD, example_robot_urdf


def test_wam_of_sousa2014_table2_has_69_base_parameters_of_98():
    model = load_model(dh=DATA / "wam7_dh.yaml")
    base = compute_base_parameters(model, model.layout_for())
    assert (base.n_base, base.n_parameters) == (69, 98)
    assert base.expressions[0] == "Ia1 + Iyy2 + Izz1"  # drive inertia groups with link inertias (Table 3)


def test_kr5_of_pennese2021_table1_has_36_base_parameters_of_60():
    model = load_model(dh=DATA / "kr5_dh.yaml")
    base = compute_base_parameters(model, model.layout_for(friction=(), armature=False))
    assert (base.n_base, base.n_parameters) == (36, 60)


def test_base_regressor_reproduces_full_torques():
    """H delta == H_b K delta (eq. 35-38) on states not used to compute the base."""
    model = load_model(urdf=example_robot_urdf(UR5_ERD))
    layout = model.layout_for()
    base = compute_base_parameters(model, layout, seed=0)
    rng = np.random.default_rng(7)
    w = regressor(model, layout, *random_states(model, 40, rng))
    delta = rng.normal(size=layout.n_parameters)
    np.testing.assert_allclose(base.project(w) @ base.beta(delta), w @ delta, atol=1e-8)
    assert np.linalg.matrix_rank(base.project(w)) == base.n_base
    np.testing.assert_allclose(base.K, base.P_b.T + base.K_d @ base.P_d.T)  # eq. 39


def test_rounded_angles_of_a_published_urdf_do_not_add_base_parameters(tmp_path):
    """Published URDFs round pi/2 (rpy="1.5708"): the base parameters are those of the exact description, not
    nearly-dependent extra columns (which made the excitation's condition number explode on Kinova's arm)."""
    exact = Path(robot_file("panda", "urdf")).read_text()
    rounded = exact.replace("1.5707963267948966", "1.5708")
    assert rounded != exact
    counts = []
    for name, text in (("exact.urdf", exact), ("rounded.urdf", rounded)):
        path = tmp_path / name
        path.write_text(text)
        model = load_model(urdf=path)
        counts.append(compute_base_parameters(model, model.layout_for(("viscous", "coulomb", "offset"), True)).n_base)
    assert counts[0] == counts[1]
