"""The linear identification (joint states -> processed data -> base regressor -> estimate), called directly on
a three-joint arm whose recorded effort is its exact inverse dynamics plus noise: the fit against the noise floor
and against numpy's least squares on the same rows, each method, the rows left out, the fit target, the parameters
kept at the prior, a payload and a spring the URDF lacks, bad input."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from dynid_ros.data.bag_io import read_joint_states, write_joint_states
from dynid_ros.data.bag_stream import scan_joint_states
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.signal_processing import ProcessingOptions, process
from dynid_ros.dynamics.base_parameters import compute_base_parameters
from dynid_ros.dynamics.feasibility import is_feasible
from dynid_ros.dynamics.regressor import regressor, torques
from dynid_ros.errors import ConfigError, DataError, IdentifiabilityError, ModelError
from dynid_ros.identification.linear_identification import (
    NO_MASS_KG,
    DescriptionCompletion,
    complete_description_masses,
    cutoff_chooser_for,
    fit_rows,
    identify_linear,
    identify_processed,
    prepare_series,
    processed_scan,
    segment_warnings,
)
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.identification.timing import StageTimer
from dynid_ros.robot.geometry_inertia import HULL_DENSITY, geometry_inertias, massless_urdf_links
from dynid_ros.robot.model import load_model, nominal_parameters
from dynid_ros.robot.urdf_writer import attached_parameters

from support.arm_runs import RICH, arm_run
from support.paths import REPO
from support.robots import UR5_ERD, example_robot_prefix, example_robot_urdf

PAYLOAD = """  <link name="payload"><inertial><origin xyz="0 0 0"/><mass value="1.0"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>
  <joint name="payload_mount" type="fixed"><parent link="l3"/><child link="payload"/><origin xyz="0.15 0 0"/></joint>
"""
"""A 1 kg point-like tool 0.15 m out on the last link, which the identified URDF lacks."""


@pytest.fixture(scope="module")
def rich(tmp_path_factory):
    """A motion that excites every base parameter of the arm."""
    return arm_run(tmp_path_factory.mktemp("rich"), amplitude=RICH)


def _floor(result, run) -> float:
    """The relative error of the truth itself on the result's processed window: the noise floor."""
    fit = result.fit
    truth = torques(run.model, run.layout, run.truth, fit.q, fit.dq, fit.ddq)
    return float(np.linalg.norm(fit.tau - truth) / np.linalg.norm(fit.tau))


def test_default_identification_fits_to_the_noise_floor_and_finds_the_joint_terms(rich):
    result = identify_linear(rich.series, IdentificationOptions(), rich.model, StageTimer())
    floor = _floor(result, rich)
    assert 0.9 * floor <= result.relative_error <= 1.05 * floor, (result.relative_error, floor)  # MAP: near it
    assert result.feasible and result.solver_status == "optimal" and result.not_identified == []
    assert is_feasible(result.delta, result.layout, "full")
    np.testing.assert_allclose(result.base.K @ result.delta, result.beta, rtol=1e-6, atol=1e-9)
    layout = result.layout
    for symbol in ("fv", "fc", "fo", "Ia"):
        np.testing.assert_allclose(result.delta[layout.indices(symbol)], rich.truth[layout.indices(symbol)],
                                   atol=0.03, err_msg=symbol)
    fit = result.fit
    np.testing.assert_allclose(fit.tau_hat, torques(rich.model, layout, result.delta, fit.q, fit.dq, fit.ddq),
                               rtol=1e-12, atol=1e-12)
    error = np.linalg.norm(fit.tau - fit.tau_hat) / np.linalg.norm(fit.tau)  # eq. 84 against the raw torque
    assert result.relative_error == pytest.approx(error, rel=1e-12)
    assert result.n_samples == fit.q.shape[0] and fit.joints == ["j1", "j2", "j3"]
    assert {"process", "base_parameters", "regressor", "identifiability", "estimate", "evaluate"} <= set(
        result.timings_s)
    rate = 1.0 / float(np.median(np.diff(rich.series.t)))  # the decimation follows the cutoff, the check's included
    assert result.processing["decimate_hz"] == pytest.approx(min(max(100.0, 8 * result.processing["cutoff_hz"]), rate))
    assert result.processing["segments"][0]["used"]


def test_ols_is_numpy_least_squares_on_the_processed_rows(rich):
    options = IdentificationOptions(method="ols", prior="none")
    result = identify_linear(rich.series, options, rich.model, StageTimer())
    chosen = {k: v for k, v in result.processing.items() if k not in ("segments", "cutoff_choice")}  # its cutoff
    data = process(prepare_series(rich.series, rich.model, options), ProcessingOptions(**chosen))
    base = compute_base_parameters(rich.model, rich.layout)
    w_b = base.project(regressor(rich.model, rich.layout, data.q, data.dq, data.ddq))
    np.testing.assert_allclose(result.beta, np.linalg.lstsq(w_b, data.tau.reshape(-1), rcond=None)[0],
                               rtol=1e-6, atol=1e-8)
    assert [w for w in result.warnings if not w.startswith("filter cutoff")] == [] and result.delta_std is None


@pytest.mark.parametrize("method", ["wls", "bpfc"])
def test_every_method_fits_to_the_noise_floor(rich, method):
    """(PBPR, a slower global search: estimation/test_method.py on a smaller problem.)"""
    options = IdentificationOptions(method=method)
    result = identify_linear(rich.series, options, rich.model, StageTimer())
    assert result.options.method == method
    assert result.relative_error <= 1.05 * _floor(result, rich)
    if method != "wls":
        assert result.feasible


def test_min_speed_leaves_slow_rows_out_of_the_fit_and_says_how_many(rich):
    options = IdentificationOptions(processing={"min_speed": 0.3})
    result = identify_linear(rich.series, options, rich.model, StageTimer())
    share = 100 * np.mean(np.abs(result.fit.dq) < 0.3)
    assert f"{share:.1f} % of the rows left out of the fit (|q'| < 0.3 rad/s)" in result.warnings
    assert result.relative_error <= 1.05 * _floor(result, rich)  # every sample is still evaluated


def test_fit_target_replaces_the_torque_rows(rich):
    """A fit target of twice the torque: the least-squares parameters double (they are linear in the torque). (A fit
    target, e.g. |tau| with signs estimated, gets the bandwidth rule's cutoff: there is no torque to cross-validate.)"""
    options = IdentificationOptions(method="ols", prior="none", processing={"cutoff_hz": "bandwidth"})
    once = identify_linear(rich.series, options, rich.model, StageTimer())

    def doubled(data, w_b, kept):
        assert w_b.shape == (data.tau.size, once.base.n_base)
        return 2.0 * data.tau.reshape(-1), kept

    twice = identify_linear(rich.series, options, rich.model, StageTimer(), fit_target=doubled)
    np.testing.assert_allclose(twice.beta, 2.0 * once.beta, rtol=1e-9, atol=1e-12)


def test_given_base_parameters_are_used_and_must_be_of_the_options_layout(rich):
    base = compute_base_parameters(rich.model, rich.layout)
    result = identify_linear(rich.series, IdentificationOptions(method="ols"), rich.model, StageTimer(), base=base)
    assert result.base is base and "base_parameters" not in result.timings_s
    other = compute_base_parameters(rich.model, rich.model.layout_for(("viscous",), False))
    with pytest.raises(ConfigError, match="base parameters are of another parameter layout"):
        identify_linear(rich.series, IdentificationOptions(), rich.model, StageTimer(), base=other)


def _held_joint(run) -> JointStateSeries:
    """The run with j3 held at 0.4 rad: the effort recomputed from the truth (nothing excites link 3's inertia)."""
    s = run.series
    q, dq = s.position.copy(), s.velocity.copy()
    q[:, 2], dq[:, 2] = 0.4, 0.0
    ddq = np.gradient(dq, s.t, axis=0)
    tau = torques(run.model, run.layout, run.truth, q, dq, ddq)
    tau += np.random.default_rng(1).normal(0.0, 0.02, tau.shape)
    return JointStateSeries(list(s.names), s.t, q, dq, tau)


def test_parameters_the_data_do_not_determine_stay_at_the_prior_and_are_named(rich):
    series = _held_joint(rich)
    result = identify_linear(series, IdentificationOptions(), rich.model, StageTimer())
    assert result.not_identified, "a joint held still identifies nothing of its link's inertia"
    names = [m["name"] for m in result.not_identified]
    assert any(w.startswith(f"{len(names)} base parameter(s) not identified by the data, kept at the prior")
               for w in result.warnings)
    prior_beta = result.base.K @ result.nominal
    for m in result.not_identified:
        index = int(m["name"][4:]) - 1
        assert result.beta[index] == pytest.approx(prior_beta[index], rel=1e-6, abs=1e-9)
    with pytest.raises(IdentifiabilityError, match="too little excitation"):
        identify_linear(series, IdentificationOptions(strict=True), rich.model, StageTimer())
    with pytest.raises(IdentifiabilityError):  # no prior to keep them at: every parameter must be excited
        identify_linear(series, IdentificationOptions(prior="none"), rich.model, StageTimer())


def test_a_tool_the_urdf_lacks_is_reported_as_a_load_on_the_last_link(tmp_path):
    run = arm_run(tmp_path, amplitude=RICH, extra=PAYLOAD)
    result = identify_linear(run.series, IdentificationOptions(), run.model, StageTimer())
    load = result.unmodelled_load
    assert load is not None and load["link"] == "l3"
    assert abs(load["mass"] - 1.0) < 3 * load["mass_std"] + 0.1, load
    assert result.relative_error <= 1.05 * np.linalg.norm(result.fit.tau - _exact(run, result)) / np.linalg.norm(
        result.fit.tau)
    without = identify_linear(run.series, IdentificationOptions(unmodelled_load=False), run.model, StageTimer())
    assert without.unmodelled_load is None


def _exact(run, result) -> np.ndarray:
    """The recorded arm's own torques (payload included) at the result's processed samples."""
    from dynid_ros.robot.model import nominal_parameters

    recorded = load_model(urdf=run.urdf.parent / "recorded_arm.urdf")
    truth = nominal_parameters(recorded, run.layout)
    truth[run.layout.n_link_parameters:] = run.truth[run.layout.n_link_parameters:]
    fit = result.fit
    return torques(recorded, run.layout, truth, fit.q, fit.dq, fit.ddq)


def test_a_strong_spring_is_modelled_as_a_position_dependent_torque(tmp_path):
    run = arm_run(tmp_path, amplitude=RICH, extra_torque=lambda q: np.c_[0 * q[:, 0], 8.0 * (q[:, 1] + 0.2),
                                                                         0 * q[:, 2]])
    result = identify_linear(run.series, IdentificationOptions(), run.model, StageTimer())
    assert result.position_torque is not None and list(result.position_torque) == ["j2"]
    assert any(w.startswith("j2: a position-dependent torque (spring/cable) was modelled") for w in result.warnings)
    off = identify_linear(run.series, IdentificationOptions(position_torque="off"), run.model, StageTimer())
    assert off.position_torque is None
    assert result.relative_error < 0.5 * off.relative_error


def test_a_moderate_spring_does_not_abort_the_identification(tmp_path):
    run = arm_run(tmp_path, amplitude=RICH, extra_torque=lambda q: np.c_[0 * q[:, 0], 4.0 * (q[:, 1] + 0.2),
                                                                         0 * q[:, 2]])
    result = identify_linear(run.series, IdentificationOptions(), run.model, StageTimer())
    assert result.feasible


def test_prepare_series_reorders_unwraps_scales_and_windows(rich):
    s = rich.series
    shuffled = JointStateSeries(["j3", "extra", "j1", "j2"], s.t, np.c_[s.position[:, 2], s.position[:, 0] * 0,
                                s.position[:, :2]], np.c_[s.velocity[:, 2], 0 * s.velocity[:, 0], s.velocity[:, :2]],
                                np.c_[s.effort[:, 2], 0 * s.effort[:, 0], s.effort[:, :2]])
    options = IdentificationOptions(effort_scale=[2.0, 1.0, 0.5], start=1.0, end=3.0)
    out = prepare_series(shuffled, rich.model, options)
    assert out.names == ["j1", "j2", "j3"]
    inside = (s.t - s.t[0] >= 1.0) & (s.t - s.t[0] <= 3.0)
    np.testing.assert_array_equal(out.t, s.t[inside])
    np.testing.assert_array_equal(out.position, s.position[inside])
    np.testing.assert_allclose(out.effort, s.effort[inside] * [2.0, 1.0, 0.5])


def test_prepare_series_unwraps_a_continuous_joint(tmp_path):
    from support.arm_runs import ARM

    path = tmp_path / "continuous.urdf"
    path.write_text(ARM.replace('name="j1" type="revolute"', 'name="j1" type="continuous"'))
    model = load_model(urdf=path)
    assert model.continuous == (True, False, False)
    t = np.linspace(0.0, 2.0, 201)
    turning = 4.0 * t  # 8 rad: wraps once past pi
    q = np.c_[np.angle(np.exp(1j * turning)), 0.1 * t, 0.2 * t]
    series = JointStateSeries(["j1", "j2", "j3"], t, q, np.ones_like(q), np.ones_like(q))
    out = prepare_series(series, model, IdentificationOptions())
    np.testing.assert_allclose(out.position[:, 0], turning, atol=1e-12)
    np.testing.assert_array_equal(out.position[:, 1:], q[:, 1:])


def test_prepare_series_bad_input_names_the_problem(rich):
    s = rich.series
    two = JointStateSeries(["j1", "j2"], s.t, s.position[:, :2], s.velocity[:, :2], s.effort[:, :2])
    with pytest.raises(DataError, match="joint\\(s\\) j3 of the model are not in the joint states"):
        prepare_series(two, rich.model, IdentificationOptions())
    with pytest.raises(DataError, match=r"only \d samples between --start 7.99 and --end 8.0 \(the data spans 8.000 s"):
        prepare_series(s, rich.model, IdentificationOptions(start=7.99, end=8.0))


def test_processed_scan_of_a_bag_equals_processing_the_series(rich, tmp_path):
    bag = write_joint_states(tmp_path / "bag", rich.series)
    options = IdentificationOptions(start=0.5, end=7.0)
    processing = ProcessingOptions(chunk_s=2.0)
    streamed = processed_scan(scan_joint_states(bag), rich.model, options, processing)
    read = read_joint_states(bag)  # the stamps as the bag holds them (integer nanoseconds)
    chooser = cutoff_chooser_for(rich.model, options, ProcessingOptions())  # the default cutoff is checked on the data
    whole = process(prepare_series(read, rich.model, options), ProcessingOptions(), chooser=chooser)
    assert streamed.cutoff_choice == whole.cutoff_choice
    np.testing.assert_array_equal(streamed.t, whole.t)
    for name in ("q", "dq", "ddq", "tau", "tau_raw"):
        np.testing.assert_allclose(getattr(streamed, name), getattr(whole, name), rtol=1e-9, atol=1e-9, err_msg=name)
    chosen = dataclasses.replace(processing, cutoff_hz=whole.options.cutoff_hz, decimate_hz=whole.options.decimate_hz)
    scaled = processed_scan(scan_joint_states(bag), rich.model, options, chosen, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(scaled.tau_raw, whole.tau_raw * [1.0, 2.0, 3.0], rtol=1e-12)
    with pytest.raises(DataError, match="only 0 samples between --start 9.0"):
        processed_scan(scan_joint_states(bag), rich.model, IdentificationOptions(start=9.0), processing)


def test_identify_processed_reports_the_segments_of_a_gap(rich):
    s = rich.series
    keep = (s.t - s.t[0] < 3.0) | (s.t - s.t[0] > 4.0)  # a second missing
    gapped = JointStateSeries(list(s.names), s.t[keep], s.position[keep], s.velocity[keep], s.effort[keep])
    options = IdentificationOptions(method="ols")
    data = process(prepare_series(gapped, rich.model, options), ProcessingOptions())
    result = identify_processed(data, options, rich.model, StageTimer())
    assert len(result.processing["segments"]) == 2
    assert result.warnings[0].startswith("1 gap(s) in the stamps: 2 segments processed separately: 0.000-")


def test_fit_rows_and_segment_warnings_by_hand():
    dq = np.array([[0.0, 0.5], [0.2, -0.05], [-0.3, 0.1]])
    np.testing.assert_array_equal(fit_rows(dq, 0.1), [False, True, True, False, True, True])
    assert fit_rows(dq, 0.0).all() and fit_rows(dq, 0.0).shape == (6,)
    assert segment_warnings([{"start_s": 0.0, "end_s": 5.0, "used": True}]) == []
    segments = [{"start_s": 0.0, "end_s": 2.5, "used": True}, {"start_s": 2.8, "end_s": 2.9, "used": False},
                {"start_s": 3.0, "end_s": 6.25, "used": True}]
    assert segment_warnings(segments) == ["2 gap(s) in the stamps: 3 segments processed separately: "
                                          "0.000-2.500 s, 2.800-2.900 s (left out: too short), 3.000-6.250 s"]


def test_continuous_joints_are_unwrapped_before_filtering(tmp_path):
    """A continuous joint turning at 2 rad/s, reported wrapped to [-pi, pi): the processed
    velocity is 2 rad/s throughout (no filtering across the wrap)."""

    urdf = tmp_path / "panda_continuous.urdf"
    source = REPO / "urdf" / "panda.urdf"
    urdf.write_text(source.read_text().replace('<joint name="panda_joint7" type="revolute">',
                                               '<joint name="panda_joint7" type="continuous">'))
    model = load_model(urdf=urdf)
    t = np.arange(0.0, 6.0, 1e-3)
    q = np.zeros((t.size, 7))
    q[:, 6] = np.mod(3.0 + 2.0 * t + np.pi, 2 * np.pi) - np.pi  # wraps about every 3.1 s
    series = JointStateSeries(list(model.joints), t + 10.0, q, None, np.zeros_like(q))
    data = process(prepare_series(series, model, IdentificationOptions()),
                   ProcessingOptions(velocity_source="differentiate"))
    np.testing.assert_allclose(data.dq[:, 6], 2.0, atol=1e-3)  # a wrap filtered would be off by radians
    np.testing.assert_allclose(data.q[:, 6], 3.0 + 2.0 * (data.t - 10.0) - 2 * np.pi * (q[0, 6] < 0), atol=1e-4)


STRIP_INERTIALS = {
    "no_inertials": (lambda text: re.sub(r"<inertial>.*?</inertial>", "", text, flags=re.S), 6),
    "zero_mass": (lambda text: re.sub(r'(<link name="upper_arm_link">.*?<mass value=")[^"]*', r"\g<1>0", text,
                                      flags=re.S), 1),
    "tiny_masses": (lambda text: re.sub(r'(<link name="wrist_[123]_link">.*?<mass value=")[^"]*', r"\g<1>1e-08",
                                        text, flags=re.S), 3),
}
"""Ways a description leaves moving links massless (of the UR5's), and how many links each leaves so."""


@pytest.fixture
def ros_packages(monkeypatch):
    """example-robot-data's packages found as a ROS install finds them (``AMENT_PREFIX_PATH``)."""
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(example_robot_prefix()))


@pytest.mark.parametrize("edit, links", STRIP_INERTIALS.values(), ids=STRIP_INERTIALS)
def test_a_moving_link_without_a_mass_gets_its_geometrys_inertia_as_the_prior(edit, links, ros_packages):
    """FBPE and PBPR keep what the data do not determine at the description's values: a massless moving link (no
    ``<inertial>``, 0 or 1e-8 kg) is given the inertia of its collision geometry as a solid of the hull density,
    named in one warning line; the links with a mass keep theirs; the methods without a prior are not concerned."""
    published = load_model(urdf=example_robot_urdf(UR5_ERD), quiet=True)
    model = load_model(urdf_text=edit(example_robot_urdf(UR5_ERD).read_text()), quiet=True)
    for method in ("fbpe", "pbpr"):
        options = IdentificationOptions(method=method)
        layout = model.layout_for(options.friction, options.armature)
        before = nominal_parameters(model, layout)[layout.indices("m")]
        completed, completion = complete_description_masses(model, layout, options)
        warnings = completion.warnings
        assert completion.guessed_links == tuple(link for link, mass in zip(layout.links, before)
                                                 if mass <= NO_MASS_KG)
        masses = nominal_parameters(completed, layout)[layout.indices("m")]
        assert len(warnings) == 1 and "\n" not in warnings[0] and warnings[0].count("_link (") == links, warnings
        assert warnings[0].count(" L)") >= links, warnings  # and the massless fixed links' on these bodies
        massless = before <= NO_MASS_KG
        assert massless.sum() == links and np.all(masses > 0.05), masses
        np.testing.assert_array_equal(masses[~massless], before[~massless])
        for k in np.flatnonzero(massless):
            body = completed.pin_model.inertias[int(k) + 1]
            assert np.all(np.linalg.eigvalsh(body.inertia) > 0), body  # a physical body about its CoM
            guesses = geometry_inertias(model, [int(k) + 1], massless_urdf_links(model.urdf_xml, "UR5")).values()
            assert body.mass == pytest.approx(HULL_DENSITY * sum(g.volume for g in guesses) + before[k])
        # as if the URDF gave these links their inertials: its text read again is the same robot
        again = load_model(urdf_text=completed.urdf_xml, quiet=True)
        np.testing.assert_allclose(nominal_parameters(again, layout), nominal_parameters(completed, layout),
                                   rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(attached_parameters(completed, layout), attached_parameters(again, layout),
                                   atol=1e-9)
        # a guess, not the truth: each within 4 x of the published mass (the hull density's spread is x/2.1)
        truth = nominal_parameters(published, layout)[layout.indices("m")]
        assert np.all(np.abs(np.log(masses / truth)) < np.log(4.0)), (masses, truth)
        assert nominal_parameters(model, layout)[layout.indices("m")].tolist() == before.tolist()  # not edited
    for options in (IdentificationOptions(method="ols"), IdentificationOptions(method="wls"),
                    IdentificationOptions(method="bpfc"), IdentificationOptions(prior="none")):
        assert complete_description_masses(model, model.layout_for(options.friction, options.armature),
                                           options) == (model, DescriptionCompletion())
    options = IdentificationOptions()
    assert complete_description_masses(published, published.layout_for(options.friction, options.armature),
                                       options) == (published, DescriptionCompletion())


def test_a_massless_link_without_geometry_or_whose_meshes_are_not_found_is_refused_in_one_line(ros_packages,
                                                                                              monkeypatch):
    text = STRIP_INERTIALS["zero_mass"][0](example_robot_urdf(UR5_ERD).read_text())
    bare = re.sub(r'(<link name="upper_arm_link">.*?)<visual>.*?</visual>\s*<collision>.*?</collision>', r"\g<1>",
                  text, count=1, flags=re.S)
    assert bare != text
    options = IdentificationOptions()
    for edited, words in ((bare, "upper_arm_link has no geometry to derive one from"),
                          (text, None)):
        if edited is text:
            monkeypatch.delenv("AMENT_PREFIX_PATH")  # the meshes are nowhere to be found
            words = "mesh 'package://example-robot-data/robots/ur_description/meshes/ur5/collision/upperarm.stl'"
        model = load_model(urdf_text=edited, quiet=True)
        with pytest.raises(ModelError) as err:
            complete_description_masses(model, model.layout_for(options.friction, options.armature), options)
        line = str(err.value)
        assert "\n" not in line and "gives no mass to the moving link(s) upper_arm_link (0 kg)" in line, line
        assert words in line and "give each moving link its mass" in line and "--package-dir" not in line, line


def test_a_failed_least_squares_comparison_never_loses_the_result(tmp_path, monkeypatch):
    """The comparison with plain least squares is beside the result (its cross-validation refits the constrained
    estimate per fold, which can fail where the estimate itself did not): its failure is one warning, the result
    stands, without the row."""
    from dynid_ros.errors import EstimationError
    from dynid_ros.identification import linear_identification

    def failing(*args, **kwargs):
        raise EstimationError("fold 2's constrained refit is not feasible: link l2's smallest eigenvalue -0.00108")

    run = arm_run(tmp_path, amplitude=RICH)
    monkeypatch.setattr(linear_identification, "compare_with_least_squares", failing)
    result = linear_identification.identify_linear(run.series, IdentificationOptions(), run.model, StageTimer())
    assert result.least_squares is None and result.relative_error < 0.05
    assert ["no comparison with plain least squares in this report: fold 2's constrained refit is not feasible: "
            "link l2's smallest eigenvalue -0.00108"] == [w for w in result.warnings if "least squares" in w]
