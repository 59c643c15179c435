"""The embedded MuJoCo robot: ground truth, recorded effort vs truth inverse dynamics, tracking, bags, CLI."""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np
import pytest

from dynid_ros.dynamics.regressor import torques
from dynid_ros.errors import ConfigError, ModelError, SimulationError
from dynid_ros.robot.model import load_model, nominal_parameters
from dynid_ros.robot.parameters import inertia_about_com
from dynid_ros.robot.resources import robot_file
from dynid_ros.robot.urdf_document import read_urdf
from dynid_ros.sim import Gains, GroundTruth, Simulator, simulate_profile

from support.sim_panda import PANDA, PANDA_HOME, TRUTH, fourier_reference

UR5E = robot_file("ur5e", "urdf")




@pytest.fixture(scope="module")
def panda_run():
    sim = Simulator(PANDA, TRUTH, seed=7)
    t, q, dq, ddq = fourier_reference(7, PANDA_HOME, 4.0)
    return sim, (t, q, dq, ddq), simulate_profile(sim, t, q, dq, ddq, progress=False)


def test_ground_truth_is_deterministic_and_physically_consistent():
    model = load_model(urdf=PANDA)
    layout = model.layout_for(("viscous", "coulomb", "offset"), armature=True)
    strong = replace(TRUTH, mass=0.4, com=0.05, inertia=0.6)
    delta = strong.parameter_vector(model, layout)
    assert np.array_equal(delta, strong.parameter_vector(model, layout))
    nominal = nominal_parameters(model, layout)
    masses = delta[layout.indices("m")]
    assert not np.allclose(masses, nominal[layout.indices("m")], rtol=0.01)
    for link, inertia in strong.link_inertias(model).items():
        _, _, i_com = inertia_about_com(inertia.toDynamicParameters())
        moments = np.linalg.eigvalsh(i_com)
        assert moments.min() > 0, link
        assert moments[0] + moments[1] >= moments[2] * (1 - 1e-12), link  # triangle inequality
    assert np.allclose(delta[layout.indices("fc")], TRUTH.friction)
    assert np.allclose(delta[layout.indices("fo")], TRUTH.bias)
    assert np.allclose(delta[layout.indices("Ia")], TRUTH.armature)
    assert not np.allclose(delta, replace(strong, seed=5).parameter_vector(model, layout))


def test_truth_urdf_round_trip_and_idempotence(tmp_path):
    model = load_model(urdf=PANDA)
    layout = model.layout_for(("viscous", "coulomb", "offset"), armature=True)
    path = TRUTH.write_urdf(model, tmp_path / "truth.urdf")
    dynamics = read_urdf(path.read_text(), str(path)).dynamics_text()  # MuJoCo cannot resolve package:// meshes
    assert mujoco.MjModel.from_xml_string(dynamics).nv == 7
    reloaded = load_model(urdf=path)
    expected = TRUTH.parameter_vector(model, layout)
    without_joint_terms = slice(0, layout.n_link_parameters)
    assert np.allclose(nominal_parameters(reloaded, layout)[without_joint_terms], expected[without_joint_terms],
                       rtol=1e-8, atol=1e-10)
    assert np.allclose(nominal_parameters(reloaded, layout)[layout.indices("fv")], TRUTH.damping)
    # applying the same truth to its own URDF changes nothing: no double perturbation
    assert np.allclose(TRUTH.parameter_vector(reloaded, layout), expected, rtol=1e-8, atol=1e-10)


def test_from_config_reads_the_shipped_sections():
    from dynid_ros.robot.config import config_section

    for robot, n in (("panda", 7), ("ur5e", 6)):
        section = config_section(robot_file(robot, "config"), "simulation")
        truth = GroundTruth.from_config(section, seed=3)
        assert truth.seed == 3 and truth.noise > 0 and len(truth.friction) == n
        assert GroundTruth.from_config(section["truth"], seed=3) == truth
    with pytest.raises(ConfigError, match="unknown key"):
        GroundTruth.from_config({"truth": {"mas": 0.1}})
    with pytest.raises(ConfigError, match="3 values for 7 joints"):
        GroundTruth(friction=(0.1, 0.2, 0.3)).joint_values(load_model(urdf=PANDA))


def test_effort_matches_truth_inverse_dynamics(panda_run):
    sim, _, series = panda_run
    layout = sim.model.layout_for(("viscous", "coulomb", "offset"), armature=True)
    predicted = torques(sim.model, layout, sim.truth_parameters(), series.position, series.velocity,
                        series.info["acceleration"])
    residual = series.effort - predicted
    friction = series.info["friction"]
    sliding = np.isclose(friction, -np.asarray(TRUTH.friction) * np.sign(series.velocity), rtol=0, atol=1e-9)
    # while the joints slide (all but a few % of samples) the residual is exactly the sensor noise
    assert sliding.mean(axis=0).min() > 0.9
    assert np.array_equal(~sliding, series.info["static_friction"])
    assert np.allclose(1.0 - sliding.mean(axis=0), series.info["sticking"])
    noise = residual[sliding]
    assert abs(noise.std() / TRUTH.noise - 1) < 0.03
    assert abs(noise.mean()) < 3 * TRUTH.noise / np.sqrt(noise.size)
    # noise-free torque: round-off while sliding; static friction within [-fc, fc] while sticking
    exact = series.info["torque"] + np.asarray(TRUTH.bias) - predicted
    assert np.abs(exact[sliding]).max() < 1e-8
    assert np.all(np.abs(friction) <= np.asarray(TRUTH.friction) * (1 + 1e-9))
    # over all samples the truth still explains the torque to within the noise plus the static friction
    rms = np.sqrt(np.mean(residual**2, axis=0))
    assert np.all(rms < 2.0 * TRUTH.noise), rms


def test_acceleration_is_the_integrated_one(panda_run):
    _, _, series = panda_run
    dt = series.info["timestep"]
    assert np.allclose(np.diff(series.velocity, axis=0) / dt, series.info["acceleration"][:-1], atol=1e-8)
    assert np.allclose(np.diff(series.position, axis=0) / dt, series.velocity[1:], atol=1e-10)


def test_tracking_and_no_chattering(panda_run):
    _, (_, q, dq, _), series = panda_run
    assert np.all(series.info["tracking_rms"] < 5e-3), series.info["tracking_rms"]
    assert series.info["saturated_steps"] == 0
    changes = (np.diff(np.sign(series.velocity), axis=0) != 0).sum(axis=0)
    reference_changes = (np.diff(np.sign(dq), axis=0) != 0).sum(axis=0)
    assert np.all(changes <= reference_changes + 2), (changes, reference_changes)


def test_same_seed_same_data_and_step_api():
    t, q, dq, ddq = fourier_reference(7, PANDA_HOME, 0.3)
    first = simulate_profile(Simulator(PANDA, TRUTH, seed=1), t, q, dq, ddq, progress=False)
    sim = Simulator(PANDA, TRUTH, seed=1)
    again = simulate_profile(sim, t, q, dq, ddq, progress=False)
    other = simulate_profile(Simulator(PANDA, TRUTH, seed=2), t, q, dq, ddq, progress=False)
    assert np.array_equal(first.effort, again.effort) and np.array_equal(first.position, again.position)
    assert not np.array_equal(first.effort, other.effort)
    assert sim.joints == tuple(f"panda_joint{i}" for i in range(1, 8))
    sim.reset(q[0])
    assert sim.time == 0.0
    sample = sim.step(q[0], dq[0], ddq[0])
    assert sample.t == 0.0 and np.isclose(sim.time, 1e-3)
    assert np.array_equal(sample.position, q[0]) and sample.effort.shape == (7,)
    assert np.array_equal(sample.effort, first.effort[0])


def test_ur5e_runs_with_its_config():
    from dynid_ros.robot.config import config_section

    sim = Simulator.from_config(UR5E, config_section(robot_file("ur5e", "config"), "simulation"), seed=0)
    assert len(sim.joints) == 6
    t, q, dq, ddq = fourier_reference(6, np.array([0.0, -1.5, 1.5, -1.5, -1.5, 0.0]), 1.0)
    series = simulate_profile(sim, t, q, dq, ddq, progress=False)
    layout = sim.model.layout_for(("viscous", "coulomb", "offset"), armature=True)
    predicted = torques(sim.model, layout, sim.truth_parameters(), series.position, series.velocity,
                        series.info["acceleration"])
    sliding = series.info["friction"] == -sim.coulomb * np.sign(series.velocity)
    assert np.abs(series.info["torque"] + np.asarray(sim.truth.bias) - predicted)[sliding].max() < 1e-8
    assert np.all(series.info["tracking_rms"] < 5e-3)


def test_friction_compensation_reduces_sticking():
    t, q, dq, ddq = fourier_reference(7, PANDA_HOME, 3.0)
    plain = simulate_profile(Simulator(PANDA, TRUTH), t, q, dq, ddq, progress=False)
    gains = Gains(friction=tuple(0.9 * f for f in TRUTH.friction))
    compensated = simulate_profile(Simulator(PANDA, TRUTH, gains=gains), t, q, dq, ddq, progress=False)
    assert compensated.info["sticking"].sum() < 0.6 * plain.info["sticking"].sum()


def test_core_imports_without_rclpy():
    import subprocess
    import sys

    code = "import sys, dynid_ros.sim, dynid_ros.cli.simulate; assert 'rclpy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_bad_inputs(tmp_path):
    sim = Simulator(PANDA, TRUTH)
    t, q, dq, ddq = fourier_reference(7, PANDA_HOME, 0.05, rate=500.0)
    with pytest.raises(SimulationError, match="sample it at 1000 Hz"):
        simulate_profile(sim, t, q, dq, ddq, progress=False)
    with pytest.raises(SimulationError, match=r"q_ref has shape \(25, 6\), expected \(25, 7\)"):
        simulate_profile(sim, t, q[:, :6], dq, ddq, progress=False)
    with pytest.raises(SimulationError, match="reset needs"):
        sim.reset(np.zeros(6))
    with pytest.raises(ConfigError, match="kp must be > 0"):
        Gains(kp=-1.0)
    with pytest.raises(ModelError, match="no such URDF file"):
        Simulator(tmp_path / "missing.urdf")
