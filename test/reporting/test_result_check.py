"""A result checks itself before it is written: better than no model and than the nominal one on its own window (or
as good as any fit can be), masses finite and positive, files that reproduce the fit; a failure is an error with
nothing written. Simulated 3-joint arm: once with friction the URDF lacks (the data improve on the URDF), once
exactly its URDF plus sensor noise (nothing to improve)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml

from dynid_ros.cli.main import main
from dynid_ros.data.output_paths import output_kind
from dynid_ros.dynamics.regressor import torques
from dynid_ros.estimation.fit_quality import relative_error
from dynid_ros.identification.identify import identify_bag
from dynid_ros.identification.options import identification_options
from dynid_ros.reporting.result_check import ResultCheckError, check_result
from dynid_ros.reporting.result_directory import PARAMETERS_FILE, write_result

from support.sim_bags import arm_urdf, simulate_bag


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    """The arm's URDF, a bag with friction the URDF lacks, and a bag of exactly the URDF (plus sensor noise)."""
    root = tmp_path_factory.mktemp("arm")
    urdf = arm_urdf(root)
    rubbing = simulate_bag(root / "rubbing", urdf, seed=0)
    exact = simulate_bag(root / "exact", urdf, seed=1, friction=(0.0, 0.0, 0.0), damping=(0.0, 0.0, 0.0))
    return urdf, rubbing, exact


def identified(urdf, bag, **config):
    return identify_bag(bag, identification_options(config), urdf=urdf)


def as_nominal(result):
    """The result with the nominal parameters as its estimate (its error recomputed on its own window)."""
    fit = result.fit
    predicted = torques(result.model, result.layout, result.nominal, fit.q, fit.dq, fit.ddq)
    error, per_joint = relative_error(fit.tau, predicted)
    return dataclasses.replace(result, delta=result.nominal.copy(), beta=result.base.K @ result.nominal,
                               relative_error=error, relative_error_per_joint=per_joint,
                               fit=dataclasses.replace(fit, tau_hat=predicted), position_torque=None)


def test_an_identification_passes_and_records_its_check(arm, tmp_path):
    urdf, rubbing, _ = arm
    result = identified(urdf, rubbing)
    out = tmp_path / "result"
    write_result(result, out, check=check_result)
    report = yaml.safe_load((out / "report.json").read_text())
    check = report["sanity_check"]
    assert check["passed"] and check["problems"] == []
    assert check["relative_error"] < check["nominal_relative_error"] < 1.0
    assert check["validation_relative_error"] == pytest.approx(result.relative_error, rel=1e-9)


def test_the_nominal_model_the_data_improve_on_fails_and_nothing_is_written(arm, tmp_path):
    """The URDF without the friction the arm has, handed back as the answer: the data allow better, an error."""
    urdf, rubbing, _ = arm
    result = as_nominal(identified(urdf, rubbing))
    out = tmp_path / "result"
    with pytest.raises(ResultCheckError, match="worse .* than the nominal model .*, and the data allow better"):
        write_result(result, out, check=check_result)
    assert not out.exists()


def test_the_nominal_model_that_is_right_passes_and_says_why(arm, tmp_path):
    """The URDF handed back when it is the truth: no fit could beat it beyond the noise; the report says so."""
    urdf, _, exact = arm
    result = as_nominal(identified(urdf, exact))
    out = tmp_path / "result"
    write_result(result, out, check=check_result)
    check = yaml.safe_load((out / "report.json").read_text())["sanity_check"]
    assert check["passed"] and "none could be" in check["explanations"][0], check
    assert check["least_squares_relative_error"] <= check["relative_error"]


def test_against_a_nominal_model_that_explains_nothing_the_fit_must_match_least_squares(arm, tmp_path):
    """A description without masses predicts no torque (100 %): beating it proves nothing. Least squares itself
    passes, saying so; a fit far from it (the estimate halved) fails, naming what the data allow."""
    urdf, rubbing, _ = arm
    result = identified(urdf, rubbing, method="ols")
    massless = dataclasses.replace(result, nominal=0.0 * result.nominal)
    out = tmp_path / "result"
    write_result(massless, out, check=check_result)
    check = yaml.safe_load((out / "report.json").read_text())["sanity_check"]
    assert check["passed"] and "explains nothing" in check["explanations"][0], check
    fit = result.fit
    half = 0.5 * result.delta
    predicted = torques(result.model, result.layout, half, fit.q, fit.dq, fit.ddq)
    error, per_joint = relative_error(fit.tau, predicted)
    poor = dataclasses.replace(massless, delta=half, beta=result.base.K @ half, relative_error=error,
                               relative_error_per_joint=per_joint, fit=dataclasses.replace(fit, tau_hat=predicted))
    with pytest.raises(ResultCheckError, match="where the data allow .* explains nothing to compare with"):
        write_result(poor, tmp_path / "poor", check=check_result)
    assert not (tmp_path / "poor").exists()


def test_a_mass_that_is_not_positive_fails(arm, tmp_path):
    urdf, rubbing, _ = arm
    result = identified(urdf, rubbing)
    delta = result.delta.copy()
    delta[result.layout.link_slice(1).start] = -0.2
    write_result(result, tmp_path / "result")  # the URDF writer itself refuses a negative mass
    check = check_result(dataclasses.replace(result, delta=delta), tmp_path / "result")
    assert any("mass not finite and positive: l2 -0.2 kg" in p for p in check.problems), check.problems


def test_files_that_do_not_reproduce_the_fit_fail(arm, tmp_path):
    urdf, rubbing, _ = arm
    result = identified(urdf, rubbing)
    out = tmp_path / "result"
    write_result(result, out)
    parameters = yaml.safe_load((out / PARAMETERS_FILE).read_text())
    values = parameters["parameter_vector"]["values"]
    parameters["parameter_vector"]["values"] = [1.5 * v for v in values]  # a file that does not hold the estimate
    (out / PARAMETERS_FILE).write_text(yaml.safe_dump(parameters))
    check = check_result(result, out)
    assert not check.passed and "the files as written predict its own window" in check.problems[0]


def test_identify_refuses_a_result_worse_than_the_urdf_in_one_line(arm, tmp_path, capsys):
    """Bounds that force every link to three times its URDF mass, on data that are exactly the URDF: the
    constrained fit is far worse than the URDF itself. Exit 2, one line, nothing written (it used to exit 0)."""
    urdf, _, exact = arm
    config = tmp_path / "heavy.yaml"
    config.write_text(yaml.safe_dump({"identification": {"bounds": {"link_mass": [6.0, 20.0]},
                                                        "model": {"position_torque": "off"}}}))
    out = tmp_path / "result"
    assert main(["identify", "--urdf", str(urdf), "--bag", str(exact), "--config", str(config), "--out",
                 str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "fails its own check" in err[0] and "nominal model" in err[0], err
    assert output_kind(out) is None and not out.exists()


def test_a_fit_worse_on_the_loud_joint_but_better_where_the_noise_is_small_passes_and_says_why(arm):
    """The MAP weighs each joint by the noise the evidence chose for it. A fit that improves the quiet joints and
    loses a little on the loudest one (whose noise is largest) is worse than the nominal model in plain relative error
    (the loudest torque carries it) but better in the residual the estimate minimizes: accepted, with both numbers.
    The same fit with the loud joint's noise as small as the others' is worse there too: refused."""
    from dynid_ros.reporting.result_check import ResultCheck, check_against_nominal, noise_weighted_errors

    urdf, rubbing, _ = arm
    result = identified(urdf, rubbing)
    fit = result.fit
    nominal = torques(result.model, result.layout, result.nominal, fit.q, fit.dq, fit.ddq)
    loud = int(np.argmax(np.sum(fit.tau**2, axis=0)))
    mixed = np.array(fit.tau_hat, dtype=float)
    mixed[:, loud] = nominal[:, loud] - 1.5 * (fit.tau[:, loud] - nominal[:, loud])  # 2.5x the nominal's miss there
    error, per_joint = relative_error(fit.tau, mixed)
    joints = list(result.model.joints)
    quiet = 0.1 * min(result.hyperparameters["noise_std"].values())

    def with_noise(loud_std):
        hyper = {**result.hyperparameters,
                 "noise_std": {j: (loud_std if k == loud else quiet) for k, j in enumerate(joints)},
                 "inflation": {j: 1.0 for j in joints}}
        return dataclasses.replace(result, relative_error=error, relative_error_per_joint=per_joint,
                                   fit=dataclasses.replace(fit, tau_hat=mixed), hyperparameters=hyper)

    accepted = with_noise(100.0 * quiet)
    check = ResultCheck(error)
    check_against_nominal(accepted, check)
    assert error > check.nominal_relative_error  # worse in plain relative error
    own, theirs, _, _ = noise_weighted_errors(accepted, nominal)
    assert own < theirs
    assert check.passed and "better in the noise-weighted residual the estimate minimizes" in check.explanations[0]
    refused = ResultCheck(error)
    check_against_nominal(with_noise(quiet), refused)
    assert not refused.passed and "and the data allow better" in refused.problems[0], refused.explanations
    assert noise_weighted_errors(dataclasses.replace(result, hyperparameters=None), nominal) is None  # no evidence
