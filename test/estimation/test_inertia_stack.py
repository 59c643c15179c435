"""Identification from M(q) and g(q) samples (Gaz et al. 2019 section IV-A): rank 43 for the Panda, end to end."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pinocchio as pin
import pytest
import yaml

from dynid_ros.cli.main import main
from dynid_ros.dynamics.base_parameters import compute_base_parameters, random_states
from dynid_ros.estimation.inertia_stack import MassMatrixSamples, informative_elements, stack_names, stack_regressor
from dynid_ros.robot.model import load_model, nominal_parameters

from support.panda_data import data_dir
from support.paths import REPO
from support.robots import DATA

PANDA_URDF = REPO / "urdf" / "panda.urdf"


def good_configurations() -> np.ndarray:
    """The 1010 static configurations of Gaz et al. 2019 (``GOOD_CONFS_1010.txt`` of the shared Panda data)."""
    return np.loadtxt(data_dir() / "GOOD_CONFS_1010.txt")  # skips (with the reason) when DYNID_PANDA_DATA is unset


def _ranks(model, q: np.ndarray) -> tuple[int, list[str], int, int]:
    """Rank of the stack regressor of the 10 n link parameters, the dropped elements, the rank of the M part
    alone, and the rank with a rotor inertia per joint (armature, on M's diagonal) added."""
    layout = model.layout_for((), True)  # armature columns last
    y = stack_regressor(model, layout, q)
    kept = informative_elements(y[..., :-model.n_dof])
    n_m = model.n_dof * (model.n_dof + 1) // 2
    dropped = [name for name, k in zip(stack_names(model.n_dof), kept) if not k]
    links = y[:, kept, :-model.n_dof].reshape(-1, layout.n_link_parameters)
    rank = np.linalg.matrix_rank(links)
    rank_m = np.linalg.matrix_rank(y[:, :n_m, :-model.n_dof].reshape(-1, layout.n_link_parameters))
    rank_armature = np.linalg.matrix_rank(y[:, kept].reshape(-1, layout.n_parameters))
    return int(rank), dropped, int(rank_m), int(rank_armature)


def test_panda_paper_setup_1010_configurations_rank_43():
    """Gaz et al. 2019 section V-A: modified DH of Fig. 1, pi_s = the 10 link parameters of 7 links (70, no friction,
    no motor inertia, eq. 17), g1 discarded (table-mounted), 1010 configurations: rank 43."""
    q = good_configurations()
    assert q.shape == (1010, 7)
    model = load_model(dh=DATA / "panda_mdh.yaml")
    assert model.layout_for((), False).n_parameters == 70
    rank, dropped, rank_m, rank_armature = _ranks(model, q)
    assert (rank, dropped) == (43, ["g1"])
    assert rank_m == 39  # M alone misses 4 gravity-only combinations: the stack needs both
    assert rank_armature == 48  # with rotor inertias on M's diagonal it would not be 43


def test_random_configurations_give_the_same_rank_43_and_the_torque_model_base():
    """Without the shared data: random configurations, same rank; it is the base of the rigid-body torque model."""
    model = load_model(dh=DATA / "panda_mdh.yaml")
    q = random_states(model, 150, np.random.default_rng(5))[0]
    rank, dropped, _, _ = _ranks(model, q)
    assert (rank, dropped) == (43, ["g1"])
    layout = model.layout_for((), False)
    assert compute_base_parameters(model, layout).n_base == 43


def _panda_truth(model, layout) -> np.ndarray:
    truth = nominal_parameters(model, layout)
    rng = np.random.default_rng(11)
    for k in range(7):  # scaling a link's parameters keeps it physically consistent
        truth[layout.link_slice(k)] *= rng.uniform(0.8, 1.2)
    return truth


def _mass_and_gravity(pin_model, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    data = pin_model.createData()
    mass = np.array([pin.crba(pin_model, data, c) for c in q])
    mass = np.triu(mass) + np.swapaxes(np.triu(mass, 1), 1, 2)
    return mass, np.array([pin.computeGeneralizedGravity(pin_model, data, c) for c in q])


def _model_with(model, layout, delta):
    pm = model.pin_model.copy()
    for k in range(7):
        pm.inertias[k + 1] = pin.Inertia.FromDynamicParameters(delta[layout.link_slice(k)])
    return pm


def test_cli_identifies_the_panda_from_m_and_g_of_the_1010_configurations(tmp_path):
    """M and g from a known Panda (pinocchio CRBA and gravity at the 1010 configurations) -> ``dynid identify
    --mass-matrix``: rank 43, the base parameters of the truth, a feasible URDF whose M and g match the truth
    at new configurations (M and g are functions of the base parameters only)."""
    q = good_configurations()
    model = load_model(urdf=PANDA_URDF)
    layout = model.layout_for((), False)
    truth = _panda_truth(model, layout)
    mass, gravity = _mass_and_gravity(_model_with(model, layout, truth), q)
    csv = MassMatrixSamples.from_matrices(q, mass, gravity).write_csv(tmp_path / "m_g.csv")
    out = tmp_path / "result"
    assert main(["identify", "--urdf", str(PANDA_URDF), "--mass-matrix", str(csv), "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    params = yaml.safe_load((out / "parameters.yaml").read_text())
    assert report["n_base"] == 43 and report["feasible"] is True and report["method"] == "fbpe"
    assert params["processing"]["rank"] == 43 and params["processing"]["dropped_elements"] == ["g1"]
    # noise-free data: the MAP estimate's data weight is capped (estimators.MAX_DATA_WEIGHT), so the fit is
    # exact to about 1e-5, not to round-off
    assert report["relative_error"] < 1e-4
    identified = pin.buildModelFromUrdf(str(out / "identified.urdf"))
    fresh = random_states(model, 20, np.random.default_rng(2))[0]
    m_true, g_true = _mass_and_gravity(_model_with(model, layout, truth), fresh)
    m_id, g_id = _mass_and_gravity(identified, fresh)
    np.testing.assert_allclose(m_id, m_true, atol=1e-4 * np.abs(m_true).max())
    np.testing.assert_allclose(g_id, g_true, atol=1e-4 * np.abs(g_true).max())


@pytest.mark.parametrize("case", ["header", "value", "friction"])
def test_mass_matrix_bad_input_is_one_line_exit_2(case, tmp_path):
    csv = tmp_path / "m_g.csv"
    model = load_model(dh=DATA / "panda_mdh.yaml")
    q = np.zeros((3, 7))
    MassMatrixSamples.from_matrices(q, np.tile(np.eye(7), (3, 1, 1)), np.zeros((3, 7))).write_csv(csv)
    extra, expected = [], {"header": "header", "value": "line 3", "friction": "no friction"}[case]
    lines = csv.read_text().splitlines()
    if case == "header":
        csv.write_text("\n".join([lines[0].replace("M2_1", "M1_2")] + lines[1:]))
    elif case == "value":
        csv.write_text("\n".join(lines[:2] + [lines[2].replace("0.0", "x", 1)] + lines[3:]))
    else:
        extra = ["--friction", "viscous"]
    assert model.n_dof == 7
    run = subprocess.run([sys.executable, "-m", "dynid_ros.cli", "identify", "--dh", str(DATA / "panda_mdh.yaml"),
                          "--mass-matrix", str(csv), "--out", str(tmp_path / "out"), *extra],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("dynid identify: error:")]
    assert len(errors) == 1 and expected in errors[0], run.stderr
    assert not (tmp_path / "out").exists()
