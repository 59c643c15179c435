"""A per-joint position-dependent torque: the term's columns, its exact profiling out of the MAP
problem, its cross-validated choice, streamed = in memory, and its way through parameters.yaml, report.json and
``dynid validate``. The simulated known answer (case f, a spring on the Panda's joint 4) is in test_robustness.py.

The bags are the short synthetic Panda multi-sine of test_streaming.py (torque from the model plus noise), with a
linear spring on joint 4 added to the effort: ``k (q4 - rest)``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from dynid_ros.cli.main import main
from dynid_ros.data.bag_io import read_joint_states, write_joint_states
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.dynamics.row_chunks import RowChunks
from dynid_ros.errors import ConfigError
from dynid_ros.estimation.normal_equations import NormalEquations
from dynid_ros.estimation.position_torque import (
    PositionSeries,
    profile,
    profiled_equations,
    profiled_rows,
    profiled_vector,
    terms_from_dict,
)
from dynid_ros.identification.identify import identify, identify_bag
from dynid_ros.identification.options import IdentificationOptions, identification_options
from dynid_ros.robot.model import load_model

from support.panda_streams import TINY, URDF, panda_series, relative

SPRING_JOINT = 3
STIFFNESS = 6.0
"""[N m/rad]: on the multi-sine's 0.5 rad amplitude, +-3 N m on joint 4 (whose gravity torque spans ~10 N m)."""


def spring_series(stiffness: float = STIFFNESS) -> JointStateSeries:
    series = panda_series()
    q = series.position[:, SPRING_JOINT]
    series.effort = series.effort.copy()
    series.effort[:, SPRING_JOINT] += stiffness * (q - float(np.median(q)))
    return series


@pytest.fixture(scope="module")
def spring_bag(tmp_path_factory) -> Path:
    return write_joint_states(tmp_path_factory.mktemp("spring") / "bag", spring_series())


def test_legendre_series_has_its_constant_zero_mean_degrees_and_unit_bound_over_the_motion() -> None:
    """The identified term carries its own constant (a spring's rest angle away from the motion's centre: the
    offset column's prior is not a spring's); degrees 1..3 have zero mean; a term of an older result (no
    ``constant`` key) reads back without it."""
    q = np.linspace(-0.4, 1.2, 2001)
    term = PositionSeries.over("j", 0, q)
    basis = term.basis(q)
    assert term.constant and term.columns == 4 and basis.shape == (q.size, 4)
    np.testing.assert_allclose(basis[:, 0], 1.0)
    np.testing.assert_allclose(basis[:, 1:].mean(axis=0), 0.0, atol=2e-3)
    assert np.abs(basis).max() == pytest.approx(1.0)
    np.testing.assert_allclose(basis[:, 1], (q - 0.4) / 0.8, atol=1e-15)  # P1 = x: a linear spring is one coefficient
    assert term.to_dict()["constant"] is True
    old = {"j": {"basis": "legendre", "order": 3, "center": 0.4, "half_range": 0.8, "coefficients": [1.0, 0.0, 0.0]}}
    series, coefficients = terms_from_dict(old, ["j"])
    assert not series[0].constant and series[0].basis(q).shape == (q.size, 3)
    np.testing.assert_allclose(series[0].torque(q, coefficients[0]), (q - 0.4) / 0.8, atol=1e-15)


def test_profiled_rows_give_the_joint_map_estimate_of_base_and_term() -> None:
    """Rows ``(I - P H P^T) [W tau]`` (row blocks, rows left out) give the same rigid-body estimate and term as the
    joint least squares of ``[W P]`` with the term's zero-mean Gaussian prior (ridge ``noise / prior_std^2``)."""
    rng = np.random.default_rng(1)
    n_samples, n_dof, width = 300, 3, 5
    q = rng.normal(size=(n_samples, n_dof))
    w = rng.normal(size=(n_samples * n_dof, width))
    tau = rng.normal(size=n_samples * n_dof)
    rows = rng.random(tau.size) > 0.1
    terms = [PositionSeries.over("a", 1, q[:, 1]), PositionSeries.over("b", 2, q[:, 2], order=2)]
    prior_std, noise = np.array([0.5, 2.0]), np.array([0.3, 0.1])
    chunks = RowChunks(lambda: (w[a:a + 99] for a in range(0, w.shape[0], 99)), w.shape)  # blocks across samples
    profiles = profile(chunks, tau, q, terms, prior_std, noise, rows)
    w_t, tau_t = np.asarray(profiled_rows(chunks, q, profiles, rows)), profiled_vector(tau, q, profiles, rows)
    beta = np.linalg.lstsq(w_t[rows], tau_t[rows], rcond=None)[0]

    p = np.zeros((tau.size, 7))  # with their constants: 4 and 3 columns
    p[1::n_dof, :4], p[2::n_dof, 4:] = terms[0].basis(q[:, 1]), terms[1].basis(q[:, 2])
    ridge = np.sqrt(np.repeat(noise / prior_std**2, [4, 3]))
    a = np.vstack([np.hstack([w, p])[rows], np.hstack([np.zeros((7, width)), np.diag(ridge)])])
    joint = np.linalg.lstsq(a, np.concatenate([tau[rows], np.zeros(7)]), rcond=None)[0]
    np.testing.assert_allclose(beta, joint[:width], atol=1e-12)
    np.testing.assert_allclose(np.concatenate([pr.coefficients(beta)[0] for pr in profiles]), joint[width:],
                               atol=1e-12)


def test_option_values(spring_bag: Path) -> None:
    assert IdentificationOptions().position_torque == "auto"
    config = {"model": {"position_torque": ["panda_joint4"]}}
    assert identification_options(config).position_torque == ["panda_joint4"]
    assert identification_options({"model": {"position_torque": "off"}}).position_torque == "off"
    with pytest.raises(ConfigError, match="model.position_torque must be auto, off or a list of joint names"):
        identification_options({"model": {"position_torque": "on"}})
    with pytest.raises(ConfigError, match="joint.s. nope are not identified joints"):
        identify_bag(spring_bag, identification_options({"model": {"position_torque": ["nope"]}}), urdf=URDF)


def test_streamed_term_equals_the_in_memory_one(spring_bag: Path) -> None:
    """The term named in the option: the streamed estimate (the term's columns per row block) equals the in-memory
    one; the term is the spring (mean removed) within 10 %. (The cross-validated choice, ``auto``, runs on the
    same row blocks in both paths; it is shown on the simulated spring of test_robustness.py, case f.)"""
    options = IdentificationOptions(start=0.8, end=6.1, processing=TINY, unmodelled_load=False,
                                    position_torque=["panda_joint4"])
    whole = identify(read_joint_states(spring_bag), options, urdf=URDF)
    streamed = identify_bag(spring_bag, options, urdf=URDF)
    assert list(whole.position_torque) == list(streamed.position_torque) == ["panda_joint4"]
    # 1e-7, not 1e-9: the default chooses the hyperparameters by the evidence, whose optimum moves by the round-off
    # of sums added in another order times the optimizer's stopping rule (measured 1.5e-9 on beta)
    assert relative(whole.beta, streamed.beta) < 1e-7 and relative(whole.delta, streamed.delta) < 1e-7
    a, b = (np.array(r.position_torque["panda_joint4"]["coefficients"]) for r in (whole, streamed))
    assert relative(a, b) < 1e-7
    assert streamed.warnings == whole.warnings
    choice = whole.position_torque["panda_joint4"]["cross_validation"]
    assert choice["kept"] and choice["named"] and choice["joint_error_with"] is None
    q = whole.fit.q[:, SPRING_JOINT]
    series, coefficients = terms_from_dict(whole.position_torque, load_model(urdf=URDF).joints)
    found = series[0].torque(q, coefficients[0])
    spring = STIFFNESS * q
    assert relative(spring - spring.mean(), found - found.mean()) < 0.1


def test_no_term_without_a_spring_and_none_when_off(spring_bag: Path, tmp_path: Path) -> None:
    plain = identify_bag(write_joint_states(tmp_path / "plain", panda_series()),
                         IdentificationOptions(start=0.8, end=6.1, processing=TINY), urdf=URDF)
    assert plain.position_torque is None
    assert not any("position-dependent" in w for w in plain.warnings)
    off = identify_bag(spring_bag, IdentificationOptions(start=0.8, end=6.1, processing=TINY,
                                                                       position_torque="off"), urdf=URDF)
    assert off.position_torque is None


def test_result_files_carry_the_term_and_validate_applies_it(spring_bag: Path, tmp_path: Path, capsys) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"identification": {"processing": TINY,
                                                         "model": {"position_torque": ["panda_joint4"]}}}))
    out = tmp_path / "result"
    assert main(["identify", "--bag", str(spring_bag), "--urdf", str(URDF), "--out", str(out), "--end", "5",
                 "--config", str(config)]) == 0
    console = capsys.readouterr()
    assert "panda_joint4: a position-dependent torque (spring/cable) was modelled: named in model.position_torque" in (
        console.out + console.err)
    report = json.loads((out / "report.json").read_text())
    parameters = yaml.safe_load((out / "parameters.yaml").read_text())
    assert list(report["position_torque"]) == ["panda_joint4"]
    term = parameters["position_torque"]["panda_joint4"]
    assert term["basis"] == "legendre" and term["order"] == 3 and term["constant"] and len(term["std"]) == 4
    assert report["urdf_omits"]["panda_joint4"]["position_torque_amplitude"] == pytest.approx(term["amplitude"])
    assert "position-dependent torque (spring/cable) was modelled" in (out / "report.md").read_text()

    with_term, without = tmp_path / "with.json", tmp_path / "without.json"
    assert main(["validate", "--result", str(out), "--bag", str(spring_bag), "--start", "5",
                 "--report", str(with_term)]) == 0
    del parameters["position_torque"]
    (out / "parameters.yaml").write_text(yaml.safe_dump(parameters, sort_keys=False))
    assert main(["validate", "--result", str(out), "--bag", str(spring_bag), "--start", "5",
                 "--report", str(without)]) == 0
    errors = [json.loads(p.read_text())["relative_error_per_joint"][SPRING_JOINT] for p in (with_term, without)]
    assert errors[0] < 0.5 * errors[1], errors


def test_profiled_equations_are_the_joint_map_of_base_and_term_from_the_sums() -> None:
    """One joint's normal equations over ``[W P]`` with the term profiled out: the same quadratic in ``beta`` as
    ``min_c ||tau - W beta - P c||^2 + ridge ||c||^2`` at every ``beta``, and the term's coefficients its minimizer."""
    rng = np.random.default_rng(2)
    w, p, tau = rng.normal(size=(200, 6)), rng.normal(size=(200, 4)), rng.normal(size=200)
    ridge = 0.7
    profiled, coefficients = profiled_equations(NormalEquations.of(np.hstack([w, p]), tau), 6, slice(6, 10), ridge)
    for beta in rng.normal(size=(3, 6)):
        r = tau - w @ beta
        c = np.linalg.solve(p.T @ p + ridge * np.eye(4), p.T @ r)
        np.testing.assert_allclose(coefficients(beta), c, atol=1e-12)
        assert profiled.residual_norm2(beta) == pytest.approx(float(np.sum((r - p @ c) ** 2) + ridge * c @ c),
                                                              rel=1e-10)
