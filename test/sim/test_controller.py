"""The simulated joint controller tracks a foreign arm's own excitation: inverse-dynamics feedforward along the
reference plus PD gains derived from the arm's inertia at its start pose (no constant tuned to one robot).

The arms are 7-DOF vendor descriptions the package does not ship (example-robot-data's xArm7, the zoo's KUKA iiwa14),
their trajectory is what ``dynid excite --urdf`` makes for them with a short budget, and the tracking error must stay
within the path tolerance the execution supervisor derives for that motion.
"""

from __future__ import annotations

import numpy as np
import pytest

from dynid_ros.cli.main import main
from dynid_ros.excitation import load_trajectory
from dynid_ros.execution.excitation_supervisor import path_tolerances
from dynid_ros.execution.robot_limits import checked_profile, robot_limits
from dynid_ros.sim import GroundTruth, Simulator, simulate_profile
from dynid_ros.sim.controller import STABLE_FRACTION, Gains

from support.paths import REPO
from support.robots import example_robot_urdf
from support.serial_arms import MIDDLE_FOLLOWER
from support.urdf_zoo import zoo_robots

UR5E = REPO / "urdf" / "ur5e.urdf"
ARMATURE = (0.30, 0.30, 0.15, 0.04, 0.04, 0.04)  # kg m^2
NO_COLLISION = "collision: {self: false, environment: []}\n"  # the optimizer's clearance rows are not under test


def _foreign_arm(name: str) -> tuple:
    if name == "xarm7":
        return example_robot_urdf("xarm_description/urdf/xarm7.urdf"), ()
    robot = zoo_robots()[name]
    return robot.urdf, (str(robot.package_dir),)


@pytest.mark.parametrize("name", ["xarm7", "iiwa14"])
def test_a_foreign_7_dof_arm_follows_its_own_excitation_in_the_simulator(name, tmp_path, capsys):
    urdf, package_dirs = _foreign_arm(name)
    config = tmp_path / "config.yaml"
    config.write_text(NO_COLLISION)
    out = tmp_path / "excitation.yaml"
    argv = ["excite", "--urdf", str(urdf), "--config", str(config), "--time-budget", "8", "--starts", "1",
            "--no-progress", "--out", str(out)]
    for directory in package_dirs:
        argv += ["--package-dir", directory]
    assert main(argv) == 0, capsys.readouterr()
    excitation = load_trajectory(out)
    sim = Simulator(urdf, joints=excitation.trajectory.joints)
    assert sim.model.n_dof == 7
    profile = checked_profile(excitation, robot_limits(sim.model, {}),
                              excitation.trajectory.evaluate(np.zeros(1))[0][0], 1)
    t, q_ref, dq_ref, ddq_ref = profile.sample_at_rate(1.0 / sim.timestep)
    series = simulate_profile(sim, t, q_ref, dq_ref, ddq_ref, progress=False)  # it runs to the end
    error = np.abs(series.position - q_ref[: len(series)]).max(axis=0)
    tolerance = path_tolerances(profile)
    assert np.all(error < 0.5 * tolerance), dict(zip(sim.joints, error.round(4)))
    assert series.info["saturated_steps"] == 0


def test_the_default_gains_are_one_bandwidth_over_each_joints_own_inertia_at_the_start_pose():
    urdf, _ = _foreign_arm("xarm7")
    sim = Simulator(urdf)
    controller = sim._controller
    for q in (np.zeros(7), np.array([0.3, -0.5, 0.2, 0.8, -0.4, 0.6, 1.0])):
        sim.reset(q)
        inertia = controller.joint_inertia(q)
        omega = np.sqrt(controller.kp / inertia)
        assert np.allclose(omega * sim.timestep, STABLE_FRACTION)  # the same loop on every joint of any arm
        assert np.allclose(controller.kd, 2.0 * np.sqrt(controller.kp * inertia))  # critically damped
    slow = Gains().resolve(controller.joint_inertia(np.zeros(7)), timestep=0.01)  # a 100 Hz loop stays stable
    assert np.allclose(np.sqrt(slow[0] / controller.joint_inertia(np.zeros(7))) * 0.01, STABLE_FRACTION)


def test_the_controller_knows_its_drives_rotor_inertia():
    """The drives' rotor inertia (the truth's armature) is in the controller's model: each joint's inertia grows
    by exactly it, and the feedforward of an acceleration on the reference by armature x acceleration."""
    plain = Simulator(UR5E)
    drives = Simulator(UR5E, GroundTruth(armature=ARMATURE))
    q = np.array([0.0, -1.5, 1.5, -1.5, -1.5, 0.0])
    np.testing.assert_allclose(drives._controller.joint_inertia(q) - plain._controller.joint_inertia(q), ARMATURE)
    ddq = np.linspace(-1.0, 1.0, 6)
    zero = np.zeros(6)
    extra = drives._controller.torque(q, zero, q, zero, ddq) - plain._controller.torque(q, zero, q, zero, ddq)
    np.testing.assert_allclose(extra, np.asarray(ARMATURE) * ddq, atol=1e-9)


def test_a_mimic_follower_gets_the_same_controller_and_a_stable_inertia(tmp_path):
    """A robot with a mimic follower (test_mimic's prismatic follower between a revolute and a continuous joint) gets
    the default controller of every robot; its joint-space inertia is the same at every call (pinocchio 4.1's CRBA,
    reusing one Data, adds the follower's coupling again at each call: the loop diverged) and tracks the reference."""
    path = tmp_path / "middle.urdf"
    path.write_text(MIDDLE_FOLLOWER)
    sim = Simulator(path)
    assert sim.model.followers == ("j2",)
    controller = sim._controller
    config = sim.model.configuration(np.array([0.3, 0.5]))
    first = controller.mass_matrix(config)
    for _ in range(3):
        np.testing.assert_allclose(controller.mass_matrix(config), first, rtol=1e-12)
    assert np.all(np.linalg.eigvalsh(first) > 0)
    t = np.arange(1500) * 1e-3
    w = 2 * np.pi / 1.5
    reference = (np.outer(1 - np.cos(w * t), [0.4, 1.0]), np.outer(w * np.sin(w * t), [0.4, 1.0]),
                 np.outer(w * w * np.cos(w * t), [0.4, 1.0]))
    run = simulate_profile(sim, t, *reference, progress=False)
    assert run.info["saturated_steps"] == 0
    assert np.abs(run.position - reference[0]).max() < 1e-3


@pytest.mark.parametrize("robot", ["ur5e_drives", "mimic"])
def test_the_default_feedback_is_the_arms_inertia_at_the_reference_times_the_pd(robot, tmp_path):
    """The default law is RNEA along the reference plus M(q_ref) (omega^2 e + 2 omega e'): a position error e (the
    measured velocity equal to the reference's, so the friction terms are the same) adds M(q_ref) omega^2 e, with M
    built by CRBA here, the drives' rotor inertia and a mimic follower included."""
    if robot == "mimic":
        path = tmp_path / "middle.urdf"
        path.write_text(MIDDLE_FOLLOWER)
        sim = Simulator(path)
    else:
        sim = Simulator(UR5E, GroundTruth(armature=ARMATURE))
    controller = sim._controller
    n = sim.model.n_dof
    omega = STABLE_FRACTION / sim.timestep
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, q_ref, dq_ref, ddq_ref = (rng.uniform(-1.0, 1.0, n) for _ in range(4))
        inertia = controller.mass_matrix(sim.model.configuration(q_ref))
        added = (controller.torque(q, dq_ref, q_ref, dq_ref, ddq_ref)
                 - controller.torque(q_ref, dq_ref, q_ref, dq_ref, ddq_ref))
        np.testing.assert_allclose(added, inertia @ (omega**2 * (q_ref - q)), rtol=1e-9)
