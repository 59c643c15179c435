"""Validation of an identified model on another recording: a three-joint arm identified on one motion and validated
on another (same arm, new noise); the error against a hand computation and the noise floor, the streamed bag equal to
the series, the report JSON and HTML written whole, bad results named."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import yaml

from dynid_ros.data.bag_io import write_joint_states
from dynid_ros.dynamics.regressor import torques
from dynid_ros.errors import DataError
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.reporting.report_html import is_own_html
from dynid_ros.reporting.result_directory import PARAMETERS_FILE, URDF_FILE, load_parameters
from dynid_ros.reporting.validate import (
    evaluate_parameters,
    html_path,
    load_result_model,
    processed_window,
    validate,
    validate_bag,
    write_report,
)
from dynid_ros.workflow.identify_run import RunInputs, identify_into

from support.arm_runs import RICH, arm_run


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """The arm identified (OLS) on a rich motion; a second recording of another motion, as a series and a bag (its
    period off the sample grid: every joint stops at half the period, where Coulomb friction's sign is a coin flip)."""
    root = tmp_path_factory.mktemp("validate")
    (root / "fit").mkdir()
    (root / "test").mkdir()
    fit = arm_run(root / "fit", amplitude=RICH)
    test = arm_run(root / "test", seconds=7.9, amplitude=RICH[::-1] * 0.8, seed=5)
    bag = write_joint_states(root / "fit_bag", fit.series)
    result = root / "result"
    identify_into(result, RunInputs(bag=bag, urdf=fit.urdf), options=IdentificationOptions(method="ols"))
    return root, result, test, write_joint_states(root / "test_bag", test.series)


def test_held_out_error_is_the_hand_computed_one_near_the_noise_floor(case):
    _, result, test, _ = case
    validated = validate(result, test.series)
    parameters = load_parameters(result)
    delta = np.array(parameters["parameter_vector"]["values"])
    fit = validated.fit
    predicted = torques(test.model, test.layout, delta, fit.q, fit.dq, fit.ddq)
    np.testing.assert_allclose(validated.tau_hat, predicted, rtol=1e-10, atol=1e-10)
    error = np.linalg.norm(validated.tau - predicted) / np.linalg.norm(validated.tau)  # eq. 84, by hand
    assert validated.relative_error == pytest.approx(error, rel=1e-12)
    floor = np.linalg.norm(validated.tau - torques(test.model, test.layout, test.truth, fit.q, fit.dq, fit.ddq)) \
        / np.linalg.norm(validated.tau)
    assert floor <= validated.relative_error < 1.3 * floor  # held-out: at the noise floor, never below it
    assert validated.joints == ["j1", "j2", "j3"] and validated.units == [("rad", "rad/s", "N m")] * 3
    assert {"load", "process", "predict"} <= set(validated.timings_s)


def test_a_window_and_the_streamed_bag_give_the_series_numbers(case):
    _, result, test, bag = case
    whole = validate(result, test.series, 1.0, 6.0)
    assert whole.t[0] - test.series.t[0] >= 1.0 and whole.t[-1] - test.series.t[0] <= 6.0
    streamed = validate_bag(result, bag, "/joint_states", 1.0, 6.0)
    np.testing.assert_allclose(streamed.t, whole.t, atol=1e-6)
    assert streamed.relative_error == pytest.approx(whole.relative_error, rel=1e-6)


def test_evaluate_parameters_of_the_truth(case):
    _, _, test, _ = case
    data = processed_window(test.model, test.series, IdentificationOptions(), {})
    truth = evaluate_parameters(test.model, test.layout, test.truth, data)
    noise = np.random.default_rng(5).normal(0.0, 0.02, test.series.position.shape)  # arm_run's noise, seed 5
    assert truth.relative_error == pytest.approx(np.linalg.norm(data.tau_raw - truth.tau_hat)
                                                 / np.linalg.norm(data.tau_raw), rel=1e-12)
    assert truth.relative_error < 2 * np.linalg.norm(noise) / np.linalg.norm(test.series.effort)
    shifted = evaluate_parameters(test.model, test.layout, test.truth, data,
                                  position=([], []))  # no position terms: the same torques
    np.testing.assert_array_equal(shifted.tau_hat, truth.tau_hat)


def test_the_report_json_and_html(case, tmp_path):
    _, result, test, _ = case
    validated = validate(result, test.series)
    path = tmp_path / "reports" / "validation.json"
    html = write_report(validated, path, {"command": "dynid validate", "inputs": {}})
    report = json.loads(path.read_text())
    assert report["relative_error"] == validated.relative_error and report["n_samples"] == validated.t.size
    np.testing.assert_allclose(report["rms_error_per_joint"],
                               np.sqrt(np.mean((validated.tau - validated.tau_hat) ** 2, axis=0)))
    assert len(report["joint_diagnostics"]) == 3
    assert html == tmp_path / "reports" / "validation.html" and is_own_html(html)
    assert sorted(p.name for p in path.parent.iterdir()) == ["validation.html", "validation.json"]
    validated.fit = None
    assert write_report(validated, tmp_path / "plain.json") is None  # no fit: the JSON only


def test_html_path_beside_the_report(tmp_path):
    assert html_path(tmp_path / "v.json") == tmp_path / "v.html"
    assert html_path(tmp_path / "v") == tmp_path / "v.html"
    assert html_path(tmp_path / "v.html") == tmp_path / "v.html.html"  # never the report itself


def test_a_result_that_does_not_fit_its_model_is_named(case, tmp_path):
    _, result, test, _ = case
    broken = tmp_path / "broken"
    shutil.copytree(result, broken)
    parameters = yaml.safe_load((broken / PARAMETERS_FILE).read_text())
    parameters["parameter_vector"]["values"] = parameters["parameter_vector"]["values"][:-1]
    (broken / PARAMETERS_FILE).write_text(yaml.safe_dump(parameters))
    with pytest.raises(DataError, match=f"{len(parameters['parameter_vector']['values'])} parameters in "
                                        "parameters.yaml but the model needs"):
        validate(broken, test.series)
    (broken / URDF_FILE).unlink()
    parameters["robot"]["source"] = str(tmp_path / "gone.urdf")
    with pytest.raises(DataError, match="no identified.urdf and the source description .*gone.urdf is not available"):
        load_result_model(broken, parameters)
