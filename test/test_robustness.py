"""The default identification where the truth is known and the world is not ideal (dynid_ros.sim.robustness).

First the simulator's departures from the identified model are checked against their definitions (Stribeck
friction, torque-sensor gain, exact inertial offsets); then each robustness case runs the default command on the
embedded Panda and must: succeed, keep every link mass within [0.5x, 2x] of the truth (times the sensor gain where
one is injected), and reach a held-out error within 1.1x that of the true parameters.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace

import numpy as np
import pytest

from dynid_ros.dynamics.regressor import torques
from dynid_ros.errors import ConfigError
from dynid_ros.robot.model import load_model, nominal_parameters
from dynid_ros.robot.urdf_writer import urdf_link_inertia
from dynid_ros.sim import GroundTruth, Simulator, simulate_profile
from dynid_ros.sim.robustness import CASES, run_case
from test_sim import PANDA, PANDA_HOME, TRUTH, fourier_reference

NOISELESS = replace(TRUTH, noise=0.0)


def _sliding_residual(truth: GroundTruth):
    """Recorded effort minus the identified model's torque (truth parameters) on sliding samples."""
    sim = Simulator(PANDA, truth, seed=3)
    t, q, dq, ddq = fourier_reference(7, PANDA_HOME, 3.0)
    series = simulate_profile(sim, t, q, dq, ddq, progress=False)
    layout = sim.model.layout_for(("viscous", "coulomb", "offset"), armature=True)
    predicted = torques(sim.model, layout, sim.truth_parameters(), series.position, series.velocity,
                        series.info["acceleration"])
    sliding = ~series.info["static_friction"]
    return sim, series, predicted, sliding


def test_stribeck_friction_is_static_above_coulomb_and_decays():
    fc = np.asarray(TRUTH.friction)
    truth = replace(NOISELESS, static_friction=tuple(1.6 * fc), stribeck_velocity=0.05)
    sim, series, predicted, sliding = _sliding_residual(truth)
    v = series.velocity
    extra = 0.6 * fc * np.exp(-(v / 0.05) ** 2) * np.sign(v)  # friction beyond fc sign(q')
    measured = series.effort - predicted
    assert np.abs(measured - extra)[sliding].max() < 1e-6
    assert np.abs(extra[sliding]).max() > 0.1  # the run does reach the Stribeck region
    assert np.allclose(sim.static_friction, 1.6 * fc)
    with pytest.raises(ConfigError, match="static_friction .* must be >= the Coulomb friction"):
        Simulator(PANDA, replace(NOISELESS, static_friction=0.1))


def test_effort_scale_multiplies_the_measured_torque():
    gain = (1.0, 1.15, 1.0, 1.0, 1.0, 0.85, 1.0)
    sim, series, _, _ = _sliding_residual(replace(NOISELESS, effort_scale=gain))
    expected = np.asarray(gain) * series.info["torque"] + np.asarray(TRUTH.bias)
    assert np.allclose(series.effort, expected, atol=1e-12)
    assert np.array_equal(sim.effort_scale, gain)
    with pytest.raises(ConfigError, match="effort_scale must be > 0"):
        GroundTruth(effort_scale=0.0)


def test_exact_offsets_move_every_mass_by_the_stated_fraction_and_com_by_the_stated_distance():
    model = load_model(urdf=PANDA)
    layout = model.layout_for((), armature=False)
    truth = GroundTruth(mass=0.3, com=0.03, exact=True, seed=2)
    root = ET.fromstring(model.urdf_xml)
    for link, inertia in truth.link_inertias(model).items():
        nominal = urdf_link_inertia(root, link)
        assert np.isclose(abs(inertia.mass / nominal.mass - 1.0), 0.3), link
        assert np.isclose(np.linalg.norm(np.array(inertia.lever) - np.array(nominal.lever)), 0.03), link
    assert not np.allclose(truth.parameter_vector(model, layout), nominal_parameters(model, layout))
    assert GroundTruth.from_config({"mass": 0.3, "exact": True}).exact


@pytest.fixture(scope="module", params=[("panda", c) for c in CASES] + [("ur5e", "barely_moving_joint")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def case(request):
    robot, name = request.param
    return run_case(name, robot=robot)


def test_default_identification_is_robust(case):
    """Issue criteria per case: succeeds, masses in [0.5x, 2x] of truth (x gain), held-out <= 1.1 x truth model."""
    ratios = case["link_mass_ratio_to_truth"]
    assert case["feasible"], case
    assert case["link_masses_within_half_to_double"], ratios
    assert all(0.5 <= r <= 2.0 for r in ratios.values()), ratios
    assert case["ratio_to_noise_floor"] <= 1.1, (case["case"], case["ratio_to_noise_floor"])
