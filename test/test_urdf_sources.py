"""Any URDF as published: meshes (package://, file://, relative), xacro arguments, continuous, prismatic,
fixed and mimic joints, grippers. The robots are example-robot-data's URDFs as shipped, with meshes."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import yaml

from dynid_ros.bag_io import read_joint_states
from dynid_ros.cli import main
from dynid_ros.excitation import ExcitationTrajectory, FourierTrajectory, limits_from_model, save_trajectory
from dynid_ros.model import load_model
from dynid_ros.regressor import torques
from dynid_ros.sim import GroundTruth, Simulator, simulate_profile

from robots import PANDA_ARM_JOINTS, PANDA_ERD, UR5_ERD, example_robot_urdf

UR10_ERD = "ur_description/urdf/ur10_robot.urdf"
TRUTH = GroundTruth(mass=0.1, com=0.01, inertia=0.1, damping=0.1, friction=0.3, armature=0.02, noise=0.0, seed=2)
FRICTION = ("viscous", "coulomb", "offset")


def reference(q0: np.ndarray, duration: float = 1.0, rate: float = 1000.0, amplitude: float = 0.3):
    """A smooth reference that starts at rest at ``q0``: q = q0 + A (1 - cos(2 pi t / T)) per joint."""
    t = np.arange(int(round(duration * rate))) / rate
    w = 2 * np.pi / duration
    gains = amplitude * np.linspace(1.0, 0.5, q0.size)
    q = q0 + np.outer(1 - np.cos(w * t), gains)
    dq = np.outer(w * np.sin(w * t), gains)
    ddq = np.outer(w * w * np.cos(w * t), gains)
    return t, q, dq, ddq


def assert_effort_is_truth_dynamics(sim: Simulator, q0: np.ndarray) -> None:
    """The recorded effort equals the truth parameters' inverse dynamics on the truth acceleration."""
    series = simulate_profile(sim, *reference(q0), progress=False)
    layout = sim.model.layout_for(FRICTION, armature=True)
    delta = sim.truth_parameters(FRICTION, armature=True)
    predicted = torques(sim.model, layout, delta, series.position, series.velocity, series.info["acceleration"])
    sliding = ~series.info["static_friction"]
    residual = np.abs(series.effort - predicted)[sliding]
    assert residual.size > 0.9 * series.effort.size
    assert residual.max() < 1e-6 * max(1.0, np.abs(series.effort).max())
    assert np.all(series.info["tracking_rms"] < 0.05)


def test_meshed_panda_with_fingers_simulates_as_shipped(caplog):
    """example-robot-data's panda.urdf: package:// meshes, prismatic fingers, a mimic finger."""
    path = example_robot_urdf(PANDA_ERD)
    text = path.read_text()
    assert "package://" in text and "<mimic" in text and "collision/link0.stl" in text
    with caplog.at_level(logging.WARNING):
        sim = Simulator(path, truth=TRUTH)
    assert sim.joints == PANDA_ARM_JOINTS
    assert "panda_finger_joint1" in caplog.text and "panda_finger_joint2" in caplog.text
    assert sim.mujoco_model.njnt == 7 and sim.mujoco_model.ngeom == 0
    assert_effort_is_truth_dynamics(sim, np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.7]))


@pytest.mark.parametrize("relative", [UR5_ERD, UR10_ERD])
def test_meshed_ur_arms_simulate(relative):
    sim = Simulator(example_robot_urdf(relative), truth=TRUTH)
    assert sim.joints[0] == "shoulder_pan_joint" and len(sim.joints) == 6
    assert_effort_is_truth_dynamics(sim, np.array([0.0, -1.2, 1.0, -1.0, 0.5, 0.0]))


@pytest.fixture(scope="module")
def panda_trajectory(tmp_path_factory):
    """A 2 s Fourier excitation of the meshed Panda's arm joints that starts at rest."""
    model = load_model(urdf=example_robot_urdf(PANDA_ERD))
    rng = np.random.default_rng(3)
    a = rng.normal(0.0, 0.1, (7, 3))
    b = rng.normal(0.0, 0.1, (7, 3))
    a[:, 2] = -a[:, :2].sum(axis=1)
    b[:, 2] = -(b[:, 0] + 2 * b[:, 1]) / 3
    wf = np.pi
    q0 = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.7]) + (b / (wf * np.arange(1, 4))).sum(axis=1)
    path = tmp_path_factory.mktemp("traj") / "panda_erd.yaml"
    save_trajectory(path, ExcitationTrajectory(FourierTrajectory(model.joints, wf, q0, a, b),
                                               limits_from_model(model), float("nan"), {}))
    return path


def test_dynid_simulate_takes_the_meshed_panda(tmp_path, panda_trajectory, capsys):
    urdf = example_robot_urdf(PANDA_ERD)
    bag, truth_dir = tmp_path / "bag", tmp_path / "truth"
    code = main(["simulate", "--urdf", str(urdf), "--trajectory", str(panda_trajectory), "--bag", str(bag),
                 "--noise", "0", "--seed", "1", "--truth-out", str(truth_dir), "--no-progress"])
    assert code == 0, capsys.readouterr().err
    series = read_joint_states(bag)
    assert tuple(series.names) == PANDA_ARM_JOINTS
    content = yaml.safe_load((truth_dir / "truth.yaml").read_text())
    model = load_model(urdf=urdf)
    layout = model.layout_for(FRICTION, armature=True)
    delta = np.array(content["parameter_vector"]["values"])
    ddq = np.gradient(series.velocity, series.t, axis=0)
    residual = series.effort - torques(model, layout, delta, series.position, series.velocity, ddq)
    assert np.median(np.abs(residual)) < 0.05
    truth_urdf = (truth_dir / "truth.urdf").read_text()
    assert "package://example-robot-data" in truth_urdf  # the user's meshes are kept in what is written
    assert load_model(urdf=truth_dir / "truth.urdf").joints == PANDA_ARM_JOINTS
