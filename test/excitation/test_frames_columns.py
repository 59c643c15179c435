"""``dynid excite`` on robots described by their config: a frames robot (``robot: frames:``, the dVRK PSM) and a
URDF arm recorded in motor coordinates (``coupling:``). The trajectory is in the motor coordinates; the config's
limits are the authority (refused when absent); a coupled URDF's joints stay within the URDF's limits."""

from __future__ import annotations

import numpy as np
import yaml

from dynid_ros.cli.main import main
from dynid_ros.excitation import ExcitationOptions, check_trajectory_limits, load_trajectory, optimize_excitation
from dynid_ros.excitation.frames_columns import frames_base
from dynid_ros.excitation.limits import coupled_joint_limits, limits_from_model, sample_trajectory
from dynid_ros.excitation.optimizer import ExcitationProblem
from dynid_ros.robot.coupling import apply_coupling
from dynid_ros.robot.frames import load_frames_robot
from dynid_ros.robot.model import load_model

from support.coupled_arm import ARM, COUPLING, JOINTS, SECTION  # the coupled-wrist arm of those tests
from support.gradient_check import directional_slope
from support.paths import REPO

PSM = REPO / "config" / "dvrk_psm.yaml"
SHORT = ["--time-budget", "120", "--starts", "1", "--no-progress"]
"""One start; the configs below cap its SLSQP iterations (a few seconds, and the same result on any machine: a
wall-time budget would stop a slow machine earlier)."""
ITERATIONS = 15
MOTOR_LIMITS = {"position": {m: [-1.2, 1.2] for m in SECTION["motors"]},
                "velocity": {m: 2.0 for m in SECTION["motors"]}, "acceleration": 6.0}


def test_frames_objective_gradient_matches_finite_differences():
    """The frames robot's objective (links and per-frame friction, rotor inertia, spring) has an exact gradient."""
    config = yaml.safe_load(PSM.read_text())
    robot = load_frames_robot(config)
    options = ExcitationOptions.from_config(config["excitation"])  # 6 harmonics: few harmonics leave cond ~1e9
    limits = limits_from_model(robot.model, options.config, from_config=True)
    problem = ExcitationProblem(robot.model, options, limits, frames_base(robot, limits, options.exclude_frames))
    x = problem.start(np.random.default_rng(1))
    _, gradient = problem.objective(x)
    direction = problem.project_rest(np.random.default_rng(2).normal(size=x.size))
    # the objective carries ~1e-7 of kernel-dependent round-off and jumps where a sign(q') column switches: a
    # single central difference is noise; the median of many, with its own uncertainty, is not
    slope = directional_slope(lambda y: problem.objective(y, False)[0], x, direction, span=1e-3)
    assert slope.agrees_with(gradient @ direction), (gradient @ direction, slope)


def test_excite_the_psm_from_its_config(tmp_path, capsys):
    """``dynid excite --config config/dvrk_psm.yaml``: no URDF; the trajectory is in the motors q1..q7, within the
    config's limits (Wang et al. 2019 Table IV), with a finite condition number on the frames regressor."""
    out, config = tmp_path / "psm.yaml", tmp_path / "dvrk_psm.yaml"
    shipped = yaml.safe_load(PSM.read_text())
    shipped["excitation"]["max_iterations"] = ITERATIONS
    config.write_text(yaml.safe_dump(shipped))
    assert main(["excite", "--config", str(config), *SHORT, "--out", str(out)]) == 0, capsys.readouterr().err
    result = load_trajectory(out)
    assert result.trajectory.joints == ("q1", "q2", "q3", "q4", "q5", "q6", "q7")
    table = yaml.safe_load(PSM.read_text())["excitation"]
    check_trajectory_limits(result.trajectory, result.limits)
    _, q, dq, _ = sample_trajectory(result.trajectory, 1000.0)
    for k, motor in enumerate(result.trajectory.joints):
        lower, upper = table["position"][motor]
        assert lower < q[:, k].min() and q[:, k].max() < upper
        assert np.abs(dq[:, k]).max() <= table["velocity"][motor]
    scaled = result.info["condition_number_scaled"]
    assert np.isfinite(scaled) and scaled <= table["max_condition_number"]
    assert np.isfinite(result.condition_number)


def test_excite_without_config_limits_is_refused(tmp_path, capsys):
    config = yaml.safe_load(PSM.read_text())
    del config["excitation"]["position"]["q3"]
    path = tmp_path / "psm.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["excite", "--config", str(path), *SHORT, "--out", str(tmp_path / "t.yaml")]) == 2
    assert "excitation.position has no range for q3" in capsys.readouterr().err
    assert not (tmp_path / "t.yaml").exists()


def test_excite_a_coupled_urdf_arm_in_motor_coordinates(tmp_path, capsys):
    """URDF + ``coupling:``: the trajectory is in the motors m1..m4 within the config's motor limits, and the
    URDF joints it drives (j4 = (m3 + m4) / 2 ...) stay within the URDF's limits."""
    urdf, config, out = tmp_path / "arm.urdf", tmp_path / "arm.yaml", tmp_path / "traj.yaml"
    urdf.write_text(ARM)
    config.write_text(yaml.safe_dump({"coupling": SECTION, "excitation": {
        **MOTOR_LIMITS, "harmonics": 3, "frequency_hz": 0.2, "max_iterations": ITERATIONS}}))
    assert main(["excite", "--urdf", str(urdf), "--config", str(config), *SHORT, "--out", str(out)]) == 0, \
        capsys.readouterr().err
    result = load_trajectory(out)
    assert result.trajectory.joints == tuple(SECTION["motors"])
    check_trajectory_limits(result.trajectory, result.limits)
    _, q, dq, _ = sample_trajectory(result.trajectory, 1000.0)
    assert np.abs(q).max() < 1.2 and np.abs(dq).max() <= 2.0
    assert np.abs(COUPLING.joint_positions(q)).max() < 2.5  # the URDF's limits of j1..j4
    assert np.isfinite(result.info["condition_number_scaled"]) and result.info["condition_number_scaled"] <= 100


def test_coupled_joint_limits_hold_when_the_motor_ranges_allow_more():
    """Motor ranges wider than the URDF allows for the coupled joint: the optimizer keeps j3 = m3 / 2 and
    j4 = (m3 + m4) / 2 within [-2.5, 2.5] (less the margin) although m3, m4 may reach +-6."""
    model = apply_coupling(load_model(urdf_text=ARM, joints=JOINTS), COUPLING)
    wide = {"position": {m: [-6.0, 6.0] for m in SECTION["motors"]}, "velocity": {m: 6.0 for m in SECTION["motors"]},
            "acceleration": 20.0, "margins": {"position": 0.05}}
    result = optimize_excitation(model, ExcitationOptions(config=wide, harmonics=3, frequency_hz=0.3, n_starts=1,
                                                          max_iterations=ITERATIONS, time_budget_s=120.0),
                                 progress=False)
    joint_map = coupled_joint_limits(model, wide)
    assert joint_map.names == tuple(JOINTS)
    np.testing.assert_allclose(joint_map.velocity, 0.9 * np.array([2.5, 2.5, 3.0, 3.0]))  # URDF x velocity margin
    _, q, dq, _ = sample_trajectory(result.trajectory, 1000.0)
    assert np.abs(COUPLING.joint_positions(q)).max() <= 2.45 * (1 + 1e-9)
    assert np.all(np.abs(dq @ COUPLING.matrix.T).max(axis=0) <= joint_map.velocity * (1 + 1e-9))
