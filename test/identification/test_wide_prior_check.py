"""The evidence's prior checked against wider ones by blocked cross-validation: every factor's held-out error is
recorded with how the window was split; the kept prior is the best-predicting one whose links a mechanical engineer
would believe, the evidence's unless a wider one predicts strictly better; an excitation run for several periods is
split by the phase of its period, so no held-out block has its twin in the training."""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.data.joint_states import JointStateSeries
from dynid_ros.dynamics.regressor import torques
from dynid_ros.identification.identify import identify
from dynid_ros.identification.linear_identification import WIDER_PRIORS, distinct_percents
from dynid_ros.identification.options import IdentificationOptions
from dynid_ros.reporting.validate import processed_window

from support.arm_runs import JOINTS, LIMITS, RICH, T0, arm_run, motion
from support.serial_arms import FLEET_LINKS, serial_arm

OFF = (1.45, 0.6, 1.4)
"""Each link's mass in the URDF given, relative to the truth's: off by 40-45 %, within the realism check's
[0.5x, 2x]."""


def urdf_off(directory, factors=OFF):
    """The arm's URDF with every link's mass (and inertia) times ``factors``."""
    links = []
    for (mass, com, inertia), f in zip(FLEET_LINKS, factors, strict=True):
        scaled = " ".join(f'{part.split("=")[0]}="{f * float(part.split("=")[1].strip(chr(34))):.6g}"'
                          for part in inertia.split())
        links.append((f"{f * float(mass):.6g}", com, scaled))
    path = directory / "off.urdf"
    path.write_text(serial_arm("fleet_arm", tuple(links), LIMITS))
    return path


def repeated(run, periods: int, period: float = 6.0, rate: float = 250.0, noise: float = 0.05):
    """``run``'s arm and truth moving for ``periods`` periods of the rich motion (an excitation run several times)."""
    t = np.arange(int(round(periods * period * rate)) + 1) / rate
    q, dq, ddq = motion(t, period, RICH)
    tau = torques(run.model, run.layout, run.truth, q, dq, ddq)
    tau += np.random.default_rng(3).normal(0.0, noise, q.shape)
    return JointStateSeries(list(JOINTS), T0 + t, q, dq, tau)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    directory = tmp_path_factory.mktemp("wide")
    run = arm_run(directory, seconds=12.0, amplitude=RICH, noise=0.05)
    options = IdentificationOptions(joints=list(JOINTS))
    off = urdf_off(directory)
    twice = repeated(run, 2)
    return {"exact": (run.series, run.urdf, identify(run.series, options, urdf=run.urdf)),
            "off": (run.series, off, identify(run.series, options, urdf=off)),
            "repeated_off": (twice, off, identify(twice, options, urdf=off))}


@pytest.mark.parametrize("case", ["exact", "off", "repeated_off"])
def test_the_kept_prior_is_the_best_predicting_one_with_believable_links(runs, case):
    series, urdf, result = runs[case]
    check = result.hyperparameters["cross_validation"]
    curve = {float(k): v for k, v in check["curve"].items()}
    assert sorted(curve) == [1.0, *WIDER_PRIORS]
    assert curve[1.0] == check["evidence_error"]
    masses = [r["mass_ratio"] for r in result.realism]
    assert all(0.5 <= m <= 2.0 for m in masses), masses
    kept = check["wide_factor"] if check["chosen"] == "wide" else 1.0
    if kept > 1.0:  # strictly better than the evidence's, and what the report says it is
        assert curve[kept] < curve[1.0] and check["wide_error"] == curve[kept]
    scales = result.hyperparameters["scales"]
    for factor, error in curve.items():  # every prior that predicts better has links no one would believe
        if factor == kept or error >= curve[kept]:
            continue
        given = {group: scale * factor for group, scale in scales.items()}
        wider = identify(series, IdentificationOptions(joints=list(JOINTS), hyperparameter_scales=given), urdf=urdf)
        assert not all(0.5 <= r["mass_ratio"] <= 2.0 for r in wider.realism), (factor, curve)


@pytest.mark.parametrize("case", ["exact", "off", "repeated_off"])
def test_the_comparison_with_least_squares_is_split_as_the_check(runs, case):
    _, _, result = runs[case]
    check, row = result.hyperparameters["cross_validation"], result.least_squares
    assert check["blocks_by"] == row["blocks_by"] == ("phase" if case.startswith("repeated") else "time")
    if case.startswith("repeated"):  # the period: the processed samples of 6 s
        t = processed_window(result.model, runs[case][0], result.options, result.processing).t
        assert check["repeat_samples"] == row["repeat_samples"] == pytest.approx(np.sum(t < t[0] + 6.0), abs=2)


@pytest.mark.parametrize("better, worse", [(0.0290, 0.0291), (0.02901, 0.02904), (0.012, 0.456),
                                           (0.0266212, 0.0266249)])
def test_the_console_prints_the_two_errors_apart(better, worse):
    """A wider prior is kept for any strict gain: the console's two errors must differ as printed."""
    text = distinct_percents(better, worse)
    a, b = (float(part.strip(" %")) for part in text.split("vs"))
    assert a != b and a < b
    assert abs(a - 100 * better) < 0.006 and abs(b - 100 * worse) < 0.006
