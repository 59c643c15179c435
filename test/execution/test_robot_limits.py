"""The robot's own limits are the authority: a trajectory file's ``limits:`` can only narrow them.

Checked on the whole executed motion (approach, periods, hold) at 1 kHz by one core function
(dynid_ros.execution.robot_limits.check_motion), used by dynid simulate, excitation_node and sim_node.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from dynid_ros.cli.main import main
from dynid_ros.data.output_paths import MARKER, SIMULATED_BAG, output_kind
from dynid_ros.errors import CollisionError, TrajectoryError
from dynid_ros.excitation import (
    ExcitationLimits,
    ExcitationTrajectory,
    FourierTrajectory,
    check_trajectory_limits,
    load_trajectory,
)
from dynid_ros.execution.robot_limits import (
    RobotLimits,
    check_motion,
    checked_profile,
    effective_limits,
    robot_limits,
)
from dynid_ros.execution.trajectory_reference import TrajectoryReference
from dynid_ros.robot.collision import collision_model
from dynid_ros.robot.config import load_config
from dynid_ros.robot.model import load_model
from dynid_ros.robot.resources import robot_file

from support.direct_clearance import direct_clearance, resolved_urdf
from support.paths import FILES, REPO
from support.trajectories import write_short_panda_trajectory
from support.wide_limits import HOME, WIDE, outside_urdf_trajectory, write_wide

PANDA_URDF = robot_file("panda", "urdf")
PANDA_CONFIG = robot_file("panda", "config")
SHIPPED = sorted((REPO / "dynid_ros" / "robot" / "trajectories").glob("*.yaml"))


@pytest.fixture(scope="module")
def panda():
    return robot_limits(load_model(urdf=PANDA_URDF), load_config(PANDA_CONFIG))






def test_wide_file_limits_do_not_widen_the_robots(panda, tmp_path):
    path = write_wide(tmp_path / "wide.yaml", outside_urdf_trajectory())
    excitation = load_trajectory(path)  # the file is consistent with its own (wide) limits
    check_trajectory_limits(excitation.trajectory, excitation.limits)
    with pytest.raises(TrajectoryError, match=r"joint panda_joint4: position -0\.11\d+ at t = 1\.99\d s is outside the "
                                              r"limits \[-3\.0218, -0\.1198\] of the robot"):
        checked_profile(excitation, panda, HOME, cycles=1)


def test_file_limits_only_narrow(panda):
    joints = panda.joints
    position = HOME[:, None] + np.array([-0.5, 0.5])
    position[3] = [-2.0, -1.0]
    narrow = ExcitationLimits(position, np.full(7, 0.3), np.full(7, 1.0))
    np.testing.assert_allclose(effective_limits(panda, joints, narrow).velocity, 0.3)
    wide = effective_limits(panda, joints, ExcitationLimits(**WIDE))
    np.testing.assert_allclose(wide.position, panda.limits.position)
    np.testing.assert_allclose(wide.acceleration, panda.limits.acceleration)
    # within the robot's limits, beyond the file's narrower ones: refused, naming the file
    gentle = ExcitationTrajectory(outside_urdf_trajectory(amplitude_rad=0.8), narrow, 10.0)
    with pytest.raises(TrajectoryError, match="panda_joint4: .* of the trajectory file"):
        checked_profile(gentle, panda, HOME)


def test_limits_are_optional_in_the_file(panda, tmp_path):
    path = write_wide(tmp_path / "nolimits.yaml", outside_urdf_trajectory(amplitude_rad=0.8), limits=None)
    assert "limits" not in yaml.safe_load(path.read_text())
    excitation = load_trajectory(path)
    assert excitation.limits is None
    profile = checked_profile(excitation, panda, HOME + 0.1, cycles=2)
    assert profile.duration == pytest.approx(profile.t_excitation_start + 8.0 + profile.hold_s)


def test_unknown_joints_are_refused(panda):
    trajectory = outside_urdf_trajectory(amplitude_rad=0.5)
    renamed = FourierTrajectory((*trajectory.joints[:6], "gripper_joint"), trajectory.wf, trajectory.q0,
                                trajectory.a, trajectory.b)
    with pytest.raises(TrajectoryError, match="trajectory joint\\(s\\) gripper_joint are not joints of the robot"):
        checked_profile(ExcitationTrajectory(renamed, None, 1.0), panda, HOME)


def test_effort_is_checked_where_the_urdf_gives_it():
    """Nominal inverse-dynamics torque against effort x margin: holding the arm stretched out needs ~ 10 N m at
    panda_joint4; an effort limit of 5 N m (config override) refuses the motion, naming the joint."""
    model = load_model(urdf=PANDA_URDF)
    weak = robot_limits(model, {**load_config(PANDA_CONFIG)["excitation"], "effort": {"panda_joint4": 5.0}})
    assert weak.effort[3] == pytest.approx(4.0) and weak.effort[0] == pytest.approx(0.8 * 87.0)
    excitation = ExcitationTrajectory(outside_urdf_trajectory(amplitude_rad=0.5), None, 1.0)
    with pytest.raises(TrajectoryError, match="joint panda_joint4: nominal torque .* effort"):
        checked_profile(excitation, weak, HOME)
    unchecked = RobotLimits(model, weak.limits, np.full(7, np.inf), "a robot without effort limits")
    profile = checked_profile(excitation, unchecked, HOME)
    assert "effort" not in check_motion(unchecked, model.joints, *profile.sample_at_rate(1000.0))
    margins = check_motion(robot_limits(model, load_config(PANDA_CONFIG)), model.joints, *profile.sample_at_rate(1e3))
    assert 0.0 < margins["effort"] < 1.0


def test_a_controller_reference_is_checked_as_interpolated(panda):
    """sim_node's check: the reference it would follow, sampled at 1 kHz (here a 1 s cubic move too fast)."""
    start = TrajectoryReference.hold(panda.joints, 0.0, HOME)
    fast = start.replace(0.0, None, panda.joints, [0.3], [HOME + 0.8], [np.zeros(7)], [[]] * 1)
    t = np.arange(0.0, fast.end_time + 1e-9, 1e-3)
    with pytest.raises(TrajectoryError, match="joint panda_joint1: velocity .* of the robot"):
        check_motion(panda, panda.joints, t, *fast.sample_many(t))
    slow = start.replace(0.0, None, panda.joints, [3.0], [HOME + 0.8], [np.zeros(7)], [[]] * 1)
    t = np.arange(0.0, slow.end_time + 1e-9, 1e-3)
    q, dq, ddq = slow.sample_many(t)
    np.testing.assert_allclose(q[::250], [slow.sample(s)[0] for s in t[::250]])  # same as sampled one by one
    assert check_motion(panda, panda.joints, t, q, dq, ddq)["velocity"] > 0


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_trajectories_pass_their_robots_limits(path):
    robot = path.stem.split("_")[0]
    limits = robot_limits(load_model(urdf=robot_file(robot, "urdf")), load_config(robot_file(robot, "config")))
    excitation = load_trajectory(path)
    q_first = excitation.trajectory.evaluate(np.zeros(1))[0][0]
    profile = checked_profile(excitation, limits, q_first, cycles=1)  # raises on any violation
    assert profile.duration > excitation.trajectory.period


# --- dynid simulate --------------------------------------------------------------------------------------------

def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


def test_simulate_refuses_motion_outside_the_urdf_despite_wide_file_limits(tmp_path, capsys):
    path = write_wide(tmp_path / "wide.yaml", outside_urdf_trajectory())
    bag = tmp_path / "out" / "run"
    code = main(["simulate", "--urdf", str(PANDA_URDF), "--config", str(PANDA_CONFIG), "--trajectory", str(path),
                 "--bag", str(bag), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "joint panda_joint4: position" in err and "of the robot" in err
    assert not bag.exists() and not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_simulate_bag_onto_a_foreign_directory_is_refused_then_its_own_bag_is_rewritten(tmp_path, capsys):
    trajectory = write_wide(tmp_path / "ok.yaml", outside_urdf_trajectory(amplitude_rad=0.2, period=2.0), None)
    foreign = tmp_path / "D"
    foreign.mkdir()
    (foreign / "metadata.yaml").write_text("my own recording\n")
    (foreign / "run.mcap").write_bytes(b"\x89MCAP0\r\n precious")
    before = _tree(foreign)
    args = ["simulate", "--urdf", str(PANDA_URDF), "--config", str(PANDA_CONFIG), "--trajectory", str(trajectory),
            "--no-progress"]
    assert main([*args, "--bag", str(foreign)]) == 2
    assert "exists already" in capsys.readouterr().err
    assert _tree(foreign) == before
    bag = tmp_path / "sim"
    assert main([*args, "--bag", str(bag)]) == 0
    assert output_kind(bag) == SIMULATED_BAG and (bag / MARKER).is_file()
    assert main([*args, "--bag", str(bag), "--seed", "1"]) == 0  # its own simulated bag: rewritten
    assert output_kind(bag) == SIMULATED_BAG
    assert main([*args, "--bag", str(tmp_path / "x"), "--truth-out", str(foreign)]) == 2  # a foreign truth dir
    assert _tree(foreign) == before


def test_a_continuous_joint_reporting_unwrapped_angles_is_not_refused(tmp_path):
    """The Panda's joint 7 (panda_joint7) made continuous; the arm reports it at 4.0 rad (unwrapped), outside the +-pi
    design window: the excitation runs turned by one whole turn (same configuration), not refused; a revolute
    joint outside its range still is."""
    text = PANDA_URDF.read_text().replace('<joint name="panda_joint7" type="revolute">',
                                          '<joint name="panda_joint7" type="continuous">')
    urdf = tmp_path / "panda_continuous.urdf"
    urdf.write_text(text)
    model = load_model(urdf=urdf)
    assert model.continuous == (False,) * 6 + (True,)
    robot = robot_limits(model, load_config(PANDA_CONFIG))
    excitation = ExcitationTrajectory(outside_urdf_trajectory(amplitude_rad=0.5), None, 1.0)
    start = HOME.copy()
    start[6] = 4.0
    profile = checked_profile(excitation, robot, start)
    q = profile.sample(np.array([0.0, profile.t_excitation_start, profile.duration]))[0]
    assert q[0, 6] == pytest.approx(4.0)  # starts where the arm is
    assert q[1, 6] == pytest.approx(HOME[6] + 2 * np.pi) and q[2, 6] == pytest.approx(HOME[6] + 2 * np.pi)
    np.testing.assert_allclose(q[1, :6], HOME[:6])
    start[3] = 0.5  # panda_joint4 (revolute) outside its URDF range
    with pytest.raises(TrajectoryError, match="joint panda_joint4 is at 0.5000, outside the excitation limits"):
        checked_profile(excitation, robot, start)


# --- collisions are limits: the robot's links, its table and its workcell ----------------------------------------

COLLIDING = FILES / "panda_colliding_excitation.yaml"
"""The Panda validation trajectory shipped before collisions were checked: the hand goes 28 cm below the table."""
APPROACH_FROM = np.array([1.648, 1.638, -1.475, -2.663, 1.418, 2.535, -0.31])
"""A Panda pose clear of the table and of itself from which the straight joint-space way to PANDA_HOME dips the
fingers into the table."""


def _panda_geometry(config: dict) -> RobotLimits:
    model = load_model(urdf=PANDA_URDF)
    return robot_limits(model, config, collision=collision_model(model, config, config_path=PANDA_CONFIG))


def _direct(q: np.ndarray):
    """The clearance of the Panda poses ``q`` by pinocchio + coal directly (not through the package)."""
    text = resolved_urdf(PANDA_URDF, {"dynid_ros": REPO})
    return direct_clearance(text, [f"panda_joint{i}" for i in range(1, 8)], np.atleast_2d(q))


@pytest.fixture(scope="module")
def panda_geometry():
    return _panda_geometry(load_config(PANDA_CONFIG))


@pytest.fixture(scope="module")
def short_panda(tmp_path_factory):
    return load_trajectory(write_short_panda_trajectory(PANDA_URDF, tmp_path_factory.mktemp("t") / "short.yaml"))


def test_a_colliding_excitation_is_refused_in_one_line_naming_the_pair_the_time_and_the_depth(panda_geometry):
    excitation = load_trajectory(COLLIDING)
    t = np.arange(0.0, excitation.trajectory.period, 0.01)
    assert _direct(excitation.trajectory.evaluate(t)[0]).lowest < -0.1  # the input collides, measured directly
    q_start = excitation.trajectory.evaluate(np.zeros(1))[0][0]
    with pytest.raises(CollisionError) as err:
        checked_profile(excitation, panda_geometry, q_start, 1)
    message = str(err.value)
    assert re.fullmatch(r"collision in the motion: (panda_\w+) and (panda_\w+|table) intersect \d+\.\d cm deep at "
                        r"t = \d+\.\d{3} s \(period 1 of 1 of the excitation\)", message), message
    assert err.value.time_s is not None


def test_a_clear_excitation_passes_and_reports_its_clearance(panda_geometry, short_panda):
    q_start = short_panda.trajectory.evaluate(np.zeros(1))[0][0]
    profile = checked_profile(short_panda, panda_geometry, q_start, 1)
    t, q, dq, ddq = profile.sample_at_rate(1000.0)
    margins = check_motion(panda_geometry, short_panda.trajectory.joints, t, q, dq, ddq)
    assert margins["clearance_m"] > 0 and " and " in margins["clearance_between"]
    direct = _direct(q[::10])
    assert direct.in_collision == 0 and direct.lowest > 0.02 - 1e-3


def test_the_approach_from_the_measured_pose_is_checked(panda_geometry, short_panda):
    """Both ends of the approach are clear; the way between them is not: refused, the approach named."""
    q_start = short_panda.trajectory.evaluate(np.zeros(1))[0][0]
    way = np.linspace(APPROACH_FROM, q_start, 101)
    assert _direct(way[[0, -1]]).lowest > 0 and _direct(way).lowest < -0.01
    with pytest.raises(CollisionError) as err:
        checked_profile(short_panda, panda_geometry, APPROACH_FROM, 1)
    assert re.fullmatch(r"collision in the motion: panda_\w+ and table intersect \d+\.\d cm deep at t = \d+\.\d{3} s "
                        r"\(the approach from the current pose\)", str(err.value)), str(err.value)


def test_a_workcell_box_in_the_config_is_honoured(short_panda):
    """A 10 cm box where the hand passes at a third of the period: refused, the box named; moved 1 m up: clear."""
    import pinocchio as pin

    model = pin.buildModelFromUrdf(str(PANDA_URDF))
    data = model.createData()
    q = short_panda.trajectory.evaluate(np.array([short_panda.trajectory.period / 3]))[0][0]
    config_q = pin.neutral(model)
    config_q[:7] = q
    pin.framesForwardKinematics(model, data, config_q)
    hand = np.array(data.oMf[model.getFrameId("panda_hand")].translation)
    q_start = short_panda.trajectory.evaluate(np.zeros(1))[0][0]
    for lift, refused in ((0.0, True), (1.0, False)):
        config = load_config(PANDA_CONFIG)
        box = {"type": "box", "name": "fixture", "size": [0.1, 0.1, 0.1], "xyz": (hand + [0, 0, lift]).tolist()}
        config["collision"]["environment"].append(box)
        robot = _panda_geometry(config)
        assert [o.name for o in robot.collision.obstacles] == ["table", "fixture"]
        if not refused:
            checked_profile(short_panda, robot, q_start, 1)
            continue
        with pytest.raises(CollisionError) as err:
            checked_profile(short_panda, robot, q_start, 1)
        assert re.search(r"panda_\w+ and fixture intersect", str(err.value)), str(err.value)


def test_a_robot_resting_within_the_margin_may_move_away_but_not_from_inside_the_table(panda_geometry, short_panda):
    """Fingers 1 cm over the table (the margin is 2 cm): the approach takes them away, accepted; 1 cm lower they
    are in the table: refused at t = 0."""
    near = np.array([0.0, 1.6056, 0.0, -0.2, 0.0, 1.8, 0.7])
    assert _direct(near).lowest == pytest.approx(0.01, abs=1e-4)
    checked_profile(short_panda, panda_geometry, near, 1)
    inside = near + [0.0, 0.03, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert _direct(inside).lowest < 0
    with pytest.raises(CollisionError) as err:
        checked_profile(short_panda, panda_geometry, inside, 1)
    assert re.fullmatch(r"collision in the motion: panda_\w+ and table intersect \d+\.\d cm deep at t = 0\.000 s "
                        r"\(the approach from the current pose\)", str(err.value)), str(err.value)
