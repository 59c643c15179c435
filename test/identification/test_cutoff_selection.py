"""The filter cutoff chosen from the data (processing ``cutoff_hz: auto``; the default is ``bandwidth``):
candidates from the motion's bandwidth, time-blocked cross-validation on the leading window's per-block sums picks
one, streamed; the choice is recorded and validation uses it; an explicit cutoff wins. On the real Panda it picks
about the hand-tuned 6 Hz and keeps the held-out error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from threadpoolctl import threadpool_limits

from dynid_ros.cli.main import main
from dynid_ros.data.bag_io import read_joint_states, write_joint_states
from dynid_ros.data.bandwidth import leading_bandwidth, passband_multiple
from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.data.signal_processing import ProcessingOptions, process
from dynid_ros.dynamics.base_parameters import compute_base_parameters
from dynid_ros.dynamics.regressor import regressor, torques
from dynid_ros.errors import ConfigError
from dynid_ros.identification.cutoff_selection import (
    BLOCKS,
    MULTIPLES,
    NYQUIST_SHARE,
    TIE,
    choose_cutoff,
    time_blocks,
    with_cutoff,
)
from dynid_ros.identification.linear_identification import cutoff_chooser_for
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.robot.model import load_model, nominal_parameters

from support.panda_data import JOINTS, write_panda_bag
from support.paths import REPO

PANDA_URDF = REPO / "urdf" / "panda.urdf"
SPLIT_S = 0.7 * 20.9991


@pytest.mark.parametrize("rule", ["auto", "checked"])
def test_checked_is_the_default_and_without_a_model_auto_and_checked_are_the_bandwidth_rule(rule):
    assert ProcessingOptions().cutoff_hz == "checked"
    assert ProcessingOptions(cutoff_hz=rule).cutoff_hz == rule
    with pytest.raises(ConfigError, match="processing option cutoff_hz must be a number"):
        ProcessingOptions(cutoff_hz="fast")
    t = np.arange(0.0, 20.0, 0.01)
    series = JointStateSeries(["a"], t, np.sin(t)[:, None], np.cos(t)[:, None], np.sin(t)[:, None])
    data = process(series, ProcessingOptions(cutoff_hz=rule))  # nothing to score a cutoff with
    assert data.cutoff_choice["rule"] == "bandwidth"
    assert data.options.cutoff_hz == process(series, ProcessingOptions(cutoff_hz="bandwidth")).options.cutoff_hz


def brute_force_scores(series: JointStateSeries, model, base) -> dict[float, float]:
    """Each candidate's cross-validated error the plain way: the window processed, the whole base regressor in
    memory, a least-squares fit of three blocks predicting the fourth (what the sums must reproduce)."""
    t = series.t
    rate = 1.0 / float(np.median(np.diff(t)))
    bandwidth = leading_bandwidth(t, series.velocity, rate)
    scores = {}
    for cutoff in [bandwidth * m for m in MULTIPLES if bandwidth * m < NYQUIST_SHARE * rate]:
        data = process(series, with_cutoff(ProcessingOptions(), cutoff, rate))
        w_b = base.project(regressor(model, base.layout, data.q, data.dq, data.ddq))
        rows = np.repeat(time_blocks(data.tau.shape[0]), data.tau.shape[1])
        tau, raw = data.tau.reshape(-1), data.tau_raw.reshape(-1)
        error = 0.0
        for k in range(BLOCKS):
            with threadpool_limits(limits=1, user_api="blas"):  # a shared machine: BLAS threads only contend
                beta = np.linalg.lstsq(w_b[rows != k], tau[rows != k], rcond=None)[0]
            error += float(np.sum((raw[rows == k] - w_b[rows == k] @ beta) ** 2))
        scores[cutoff] = float(np.sqrt(error / float(raw @ raw)))
    return scores


def test_the_sums_score_each_cutoff_as_least_squares_on_the_whole_window_does(tmp_path, monkeypatch):
    """The per-block sums give every candidate the score of the plain cross-validation (the window's regressor in
    memory, least squares per fold), so the choice is the same; a longer recording is scored on its leading window
    only (``BANDWIDTH_WINDOW_S``, here shortened to 15 s to keep the test short)."""
    series = read_joint_states(synthetic_panda_bag(tmp_path))
    model = load_model(urdf=PANDA_URDF)
    base = compute_base_parameters(model, model.layout_for())
    options, choice = choose_cutoff(series, ProcessingOptions(), model, base)
    expected = brute_force_scores(series, model, base)
    assert list(choice.scores) == pytest.approx(list(expected))
    assert list(choice.scores.values()) == pytest.approx(list(expected.values()), rel=1e-6)
    best = min(expected.values())
    assert options.cutoff_hz == choice.cutoff_hz == min(c for c, v in expected.items() if v <= best * (1 + TIE))
    monkeypatch.setattr("dynid_ros.data.signal_processing.BANDWIDTH_WINDOW_S", 15.0)
    span = series.t[-1] - series.t[0] + 5e-3
    copies = 2  # 24 s: past the leading window, the effort three times off
    longer = JointStateSeries(series.names, np.concatenate([series.t + k * span for k in range(copies)]),
                              np.tile(series.position, (copies, 1)), np.tile(series.velocity, (copies, 1)),
                              np.vstack([series.effort * (1.0 if k == 0 else 3.0) for k in range(copies)]))
    window = longer.window(None, 15.0)
    assert choose_cutoff(longer, ProcessingOptions(), model, base)[1].scores == \
        choose_cutoff(window, ProcessingOptions(), model, base)[1].scores


def test_a_motion_near_half_the_rate_gets_the_cap_as_the_bandwidth_rule_gives():
    """Sampled at 2.5 Hz, the motion's bandwidth (0.67 Hz) leaves no candidate below 0.4 x the rate: the one
    candidate is that cap, where the bandwidth rule's cutoff lies too (no error: the rule filters these data)."""
    series, model = synthetic_panda_series()
    coarse = JointStateSeries(series.names, series.t[::80], series.position[::80], series.velocity[::80],
                              series.effort[::80])
    base = compute_base_parameters(model, model.layout_for())
    options, choice = choose_cutoff(coarse, ProcessingOptions(), model, base)
    rate = 1.0 / float(np.median(np.diff(coarse.t)))
    assert 2 * choice.bandwidth_hz >= NYQUIST_SHARE * rate
    assert list(choice.scores) == [pytest.approx(NYQUIST_SHARE * rate)] and options.cutoff_hz == choice.cutoff_hz
    assert process(coarse, ProcessingOptions(cutoff_hz="bandwidth")).options.cutoff_hz == pytest.approx(
        NYQUIST_SHARE * rate)


def synthetic_panda_bag(tmp_path: Path) -> Path:
    """Synthetic Panda torques along three sines per joint (0.2, 0.4, 0.6 Hz; 200 Hz, 12 s, 1 % noise)."""
    return write_joint_states(tmp_path / "bag", synthetic_panda_series()[0])


def test_auto_cutoff_is_chosen_recorded_and_used_by_validate(tmp_path):
    """Synthetic Panda torques: the chosen cutoff is a multiple of the bandwidth, stored in parameters.yaml with
    every candidate's score, and validate processes the held-out data with it."""
    bag = synthetic_panda_bag(tmp_path)
    config = tmp_path / "auto.yaml"
    config.write_text("identification:\n  processing:\n    cutoff_hz: auto\n")
    out = tmp_path / "result"
    assert main(["identify", "--urdf", str(PANDA_URDF), "--bag", str(bag), "--end", "8", "--config", str(config),
                 "--out", str(out)]) == 0
    processing = yaml.safe_load((out / "parameters.yaml").read_text())["processing"]
    choice = processing["cutoff_choice"]
    assert 0.5 <= choice["bandwidth_hz"] <= 1.2, choice  # 0.6 Hz top sine, 8 s window (leakage)
    assert processing["cutoff_hz"] == choice["cutoff_hz"]
    assert any(np.isclose(processing["cutoff_hz"], m * choice["bandwidth_hz"]) for m in MULTIPLES), choice
    assert len(choice["scores"]) >= 4 and processing["decimate_hz"] >= 100.0
    report = tmp_path / "v.json"
    assert main(["validate", "--result", str(out), "--bag", str(bag), "--start", "8", "--report", str(report)]) == 0
    assert json.loads(report.read_text())["relative_error"] < 0.05


def test_real_panda_auto_cutoff_is_near_the_tuned_one_and_keeps_the_held_out_error(tmp_path):
    bag = write_panda_bag(tmp_path / "run1")
    config = tmp_path / "auto.yaml"
    config.write_text("identification:\n  processing:\n    cutoff_hz: auto\n")
    out = tmp_path / "result"
    assert main(["identify", "--urdf", str(PANDA_URDF), "--bag", str(bag), "--end", f"{SPLIT_S}",
                 "--joints", ",".join(JOINTS), "--config", str(config), "--out", str(out)]) == 0
    processing = yaml.safe_load((out / "parameters.yaml").read_text())["processing"]
    assert 5.0 <= processing["cutoff_hz"] <= 8.0, processing["cutoff_choice"]  # measured: 6.7 Hz
    report = tmp_path / "v.json"
    assert main(["validate", "--result", str(out), "--bag", str(bag), "--start", f"{SPLIT_S}",
                 "--report", str(report)]) == 0
    assert json.loads(report.read_text())["relative_error"] <= 0.0270


@pytest.mark.parametrize("rule", ["auto", "bandwidth"])
def test_default_and_bandwidth_cutoffs_stream_the_bag_record_the_choice_and_validate_uses_it(tmp_path, monkeypatch,
                                                                                               rule):
    """``cutoff_hz: auto`` (cross-validated) and the default ``cutoff_hz: bandwidth`` (16.9x the bandwidth, 0.6 Hz
    top sine): the bag is streamed (no fallback to memory), the cutoff recorded with how it was found, and validate
    uses the recorded number."""
    bag = synthetic_panda_bag(tmp_path)
    out = tmp_path / "result"
    config = tmp_path / "rule.yaml"
    config.write_text(f"identification:\n  processing:\n    cutoff_hz: {rule}\n")

    def whole_bag(*args, **kwargs):
        raise AssertionError("the bag was read whole: the streamed path fell back to memory")

    with monkeypatch.context() as patch:
        patch.setattr("dynid_ros.identification.identify.read_joint_states", whole_bag)
        assert main(["identify", "--urdf", str(PANDA_URDF), "--bag", str(bag), "--end", "8", "--out", str(out)]
                    + ["--config", str(config)]) == 0
    processing = yaml.safe_load((out / "parameters.yaml").read_text())["processing"]
    choice = processing["cutoff_choice"]
    if rule == "auto":
        assert choice["rule"] == "auto" and processing["cutoff_hz"] == choice["cutoff_hz"], choice
        assert any(np.isclose(processing["cutoff_hz"], m * choice["bandwidth_hz"]) for m in MULTIPLES), choice
        assert "time-blocked cross-validation" in (out / "report.md").read_text()
        return
    assert choice["rule"] == "bandwidth" and 0.6 <= choice["bandwidth_hz"] <= 0.85, choice  # 0.6 Hz, Hann +-2/8 s
    assert processing["cutoff_hz"] == pytest.approx(passband_multiple(4) * choice["bandwidth_hz"])
    assert choice["description"].startswith("derived from bandwidth")
    assert processing["decimate_hz"] == pytest.approx(max(100.0, 8 * processing["cutoff_hz"]))
    assert "derived from bandwidth" in (out / "report.md").read_text()
    report = tmp_path / "v.json"
    assert main(["validate", "--result", str(out), "--bag", str(bag), "--start", "8", "--report", str(report)]) == 0
    validated = json.loads(report.read_text())
    assert validated["relative_error"] < 0.05


def synthetic_panda_series(gains: np.ndarray | None = None) -> tuple[JointStateSeries, object]:
    """Synthetic Panda torques along three sines per joint (0.2, 0.4, 0.6 Hz; 200 Hz, 12 s, 1 % noise) as a series
    (its effort divided by ``gains``, each joint's torque per unit of effort, when given) and the model."""
    model = load_model(urdf=PANDA_URDF)
    layout = model.layout_for()
    t = np.arange(0.0, 12.0, 5e-3)
    rng = np.random.default_rng(0)
    w = 2 * np.pi * np.array([0.2, 0.4, 0.6])
    phase = rng.uniform(0, 2 * np.pi, (3, 7))
    q = model.position_limits.mean(axis=1) + 0.3 * np.sin(w[:, None, None] * t[None, :, None] + phase[:, None]).sum(0)
    dq = 0.3 * (w[:, None, None] * np.cos(w[:, None, None] * t[None, :, None] + phase[:, None])).sum(0)
    ddq = -0.3 * (w[:, None, None] ** 2 * np.sin(w[:, None, None] * t[None, :, None] + phase[:, None])).sum(0)
    tau = torques(model, layout, nominal_parameters(model, layout), q, dq, ddq)
    tau += 0.01 * tau.std(axis=0) * rng.standard_normal(tau.shape)
    effort = tau if gains is None else tau / gains
    return JointStateSeries(list(model.joints), t, q, dq, effort), model


def test_with_effort_gains_each_cutoff_is_scored_on_the_gains_it_keeps():
    """Two joints' effort off by 13 % and 18 % (a torque sensor's or a drive's gain): scored without the gains,
    every candidate's error is the gain error's; scored as the identification runs (it estimates the gains), each
    candidate keeps them and scores as on the data without the error, in the effort's units, and the choice is
    the same."""
    gains = np.ones(7)
    gains[[1, 5]] = 1.0 / 0.87, 1.0 / 1.18
    clean, model = synthetic_panda_series()
    off, _ = synthetic_panda_series(gains)
    base = compute_base_parameters(model, model.layout_for())
    options = ProcessingOptions(cutoff_hz="auto")
    reference = choose_cutoff(clean, options, model, base, gains=True)[1]
    assert reference.scores == choose_cutoff(clean, options, model, base)[1].scores  # no gain kept on clean data
    blind = choose_cutoff(off, options, model, base)[1]
    seen = choose_cutoff(off, options, model, base, gains=True)[1]
    assert reference.scores.keys() == blind.scores.keys() == seen.scores.keys()
    passing = sorted(reference.scores)[1:]  # the lowest candidate (2 x the bandwidth) filters the motion itself
    for c in passing:  # measured: 1.37-1.39 % blind, 0.75-0.82 % seen and clean
        assert blind.scores[c] > 1.5 * reference.scores[c], (c, blind.scores, reference.scores)
        assert seen.scores[c] == pytest.approx(reference.scores[c], rel=0.05), (c, seen.scores, reference.scores)
    assert seen.cutoff_hz == reference.cutoff_hz


def test_with_a_spring_named_each_cutoff_is_scored_with_the_position_term():
    """A linear spring on joint 4 (6 N m/rad, +-3 N m over its motion): scored without a position term, every
    candidate's error is the spring's misfit (measured 1.82 % against 0.75 %); with the joint named in ``model:
    position_torque`` (the identification then models it), each candidate is scored with the term and scores as on
    the data without the spring, and the choice is the same; ``auto`` scores none (``scored_terms``)."""
    clean, model = synthetic_panda_series()
    sprung, _ = synthetic_panda_series()
    q = sprung.position[:, 3]
    sprung.effort = sprung.effort.copy()
    sprung.effort[:, 3] += 6.0 * (q - float(np.median(q)))
    base = compute_base_parameters(model, model.layout_for())
    options = ProcessingOptions()
    reference = choose_cutoff(clean, options, model, base, position_torque="off")[1]
    blind = choose_cutoff(sprung, options, model, base, position_torque="off")[1]
    seen = choose_cutoff(sprung, options, model, base, position_torque=["panda_joint4"])[1]
    assert choose_cutoff(sprung, options, model, base, position_torque="auto")[1].scores == blind.scores
    assert seen.scores.keys() == reference.scores.keys() == blind.scores.keys()
    for c in sorted(reference.scores)[1:]:  # the lowest candidate (2 x the bandwidth) filters the motion itself
        assert blind.scores[c] > 2.0 * reference.scores[c], (c, blind.scores, reference.scores)
        assert seen.scores[c] == pytest.approx(reference.scores[c], rel=0.02), (c, seen.scores, reference.scores)
    assert seen.cutoff_hz == reference.cutoff_hz
    # the identification's own chooser: the posterior mean at the evidence's hyperparameters, the term profiled
    auto = ProcessingOptions(cutoff_hz="auto")
    named = IdentificationOptions(position_torque=["panda_joint4"])
    posterior = {name: process(series, auto, chooser=cutoff_chooser_for(model, named, auto)).cutoff_choice
                 for name, series in (("clean", clean), ("sprung", sprung))}
    assert posterior["sprung"]["estimator"].startswith("posterior mean")
    for c, score in posterior["clean"]["scores"].items():
        assert posterior["sprung"]["scores"][c] == pytest.approx(score, rel=0.02), posterior  # measured 0.2 % apart
