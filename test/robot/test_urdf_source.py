"""Any URDF as published: meshes (package://, file://, relative), xacro arguments, continuous, prismatic,
fixed and mimic joints, grippers. The robots are example-robot-data's URDFs as shipped, with meshes."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import yaml

from dynid_ros.cli.main import main
from dynid_ros.data.bag_io import read_joint_states
from dynid_ros.dynamics.regressor import torques
from dynid_ros.reporting.result_directory import URDF_FILE
from dynid_ros.robot.model import load_model
from dynid_ros.sim import GroundTruth, Simulator, simulate_profile

from support.robots import PANDA_ARM_JOINTS, PANDA_ERD, UR5_ERD, example_robot_urdf
from support.trajectories import write_short_panda_trajectory

SO100_ARM = ["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll"]

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


def assert_effort_is_truth_dynamics(sim: Simulator, q0: np.ndarray, tracking: float = 0.05,
                                    duration: float = 1.0) -> None:
    """The recorded effort equals the truth parameters' inverse dynamics on the truth acceleration; the
    tracking error stays under ``tracking`` [rad] (on :func:`reference` of ``duration``)."""
    series = simulate_profile(sim, *reference(q0, duration=duration), progress=False)
    layout = sim.model.layout_for(FRICTION, armature=True)
    delta = sim.truth_parameters(FRICTION, armature=True)
    predicted = torques(sim.model, layout, delta, series.position, series.velocity, series.info["acceleration"])
    sliding = ~series.info["static_friction"]
    residual = np.abs(series.effort - predicted)[sliding]
    assert residual.size > 0.9 * series.effort.size
    assert residual.max() < 1e-6 * max(1.0, np.abs(series.effort).max())
    assert np.all(series.info["tracking_rms"] < tracking)


def test_meshed_panda_with_fingers_simulates_as_shipped(caplog):
    """example-robot-data's panda.urdf: package:// meshes, prismatic fingers, a mimic finger."""
    path = example_robot_urdf(PANDA_ERD)
    text = path.read_text()
    assert "package://" in text and "<mimic" in text and "collision/link0.stl" in text
    with caplog.at_level(logging.WARNING, logger="dynid_ros"):
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
    """The short rest-to-rest excitation of test_sim_cli, for the meshed Panda's arm joints."""
    return write_short_panda_trajectory(example_robot_urdf(PANDA_ERD),
                                        tmp_path_factory.mktemp("traj") / "panda_erd.yaml")


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


def ur5_text() -> str:
    return example_robot_urdf(UR5_ERD).read_text()


def replace_joint(text: str, name: str, new_opening: str, limit: str | None = None) -> str:
    """``text`` with joint ``name``'s opening tag (and optionally its ``<limit>``) replaced."""
    start = text.index(f'<joint name="{name}"')
    end = text.index("</joint>", start)
    block = text[start:end]
    changed = new_opening + block[block.index(">") + 1:]
    if limit is not None:
        old = changed[changed.index("<limit"):changed.index("/>", changed.index("<limit")) + 2]
        changed = changed.replace(old, limit)
    return text[:start] + changed + text[end:]


XACRO_TOOL = """<xacro:arg name="tool_mass" default="0.5"/>
<xacro:arg name="prefix" default=""/>
<link name="$(arg prefix)tool"><inertial><origin xyz="0 0 0.05" rpy="0 0 0"/><mass value="$(arg tool_mass)"/>
<inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
<visual><geometry><mesh filename="package://my_tool_description/meshes/tool.dae"/></geometry></visual></link>
<joint name="$(arg prefix)tool_joint" type="fixed"><parent link="wrist_3_link"/><child link="$(arg prefix)tool"/>
</joint></robot>"""


@pytest.fixture()
def ur5_xacro(tmp_path):
    text = ur5_text()
    if "xmlns:xacro" not in text:
        text = text.replace("<robot ", '<robot xmlns:xacro="http://www.ros.org/wiki/xacro" ', 1)
    path = tmp_path / "ur5_tool.urdf.xacro"
    path.write_text(text.replace("</robot>", XACRO_TOOL))
    return path


def test_xacro_arguments_reach_the_model_and_the_simulator(ur5_xacro):
    default = load_model(urdf=ur5_xacro)
    heavy = load_model(urdf=ur5_xacro, xacro_args=["tool_mass:=2.5", "prefix:=my_"])
    wrist = len(default.joints)  # the tool is fixed to the last body
    assert heavy.pin_model.inertias[wrist].mass - default.pin_model.inertias[wrist].mass == pytest.approx(2.0)
    assert '<link name="my_tool"' in heavy.urdf_xml and "package://my_tool_description" in heavy.urdf_xml
    sim = Simulator(ur5_xacro, truth=TRUTH, xacro_args=["tool_mass:=2.5"])
    assert sim.model.pin_model.inertias[wrist].mass == pytest.approx(heavy.pin_model.inertias[wrist].mass)
    assert_effort_is_truth_dynamics(sim, np.array([0.0, -1.2, 1.0, -1.0, 0.5, 0.0]))


def test_xacro_arg_on_the_cli(ur5_xacro, capsys):
    import json

    assert main(["info", "--urdf", str(ur5_xacro), "--xacro-arg", "prefix:=left_", "--xacro-arg",
                 "tool_mass:=1", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["joints"][0] == "shoulder_pan_joint" and info["n_base"] > 0
    with pytest.raises(SystemExit) as exited:  # argparse: not name:=value
        main(["info", "--urdf", str(ur5_xacro), "--xacro-arg", "tool_mass"])
    assert exited.value.code == 2
    assert "name:=value" in capsys.readouterr().err
    assert main(["info", "--urdf", str(example_robot_urdf(UR5_ERD)), "--xacro-arg", "a:=1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "not a .xacro" in err and len(err.splitlines()) == 1
    bad = ur5_xacro.with_name("bad.urdf.xacro")
    bad.write_text(ur5_xacro.read_text().replace("$(arg tool_mass)", "$(arg no_such_arg)"))
    assert main(["info", "--urdf", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "xacro failed" in err and "bad.urdf.xacro" in err and len(err.splitlines()) == 1


def test_mesh_uris_of_every_kind_are_never_required(tmp_path, monkeypatch):
    """package:// (found or not), file:// and relative meshes: the model loads and simulates; relative URIs
    are made absolute so an URDF written elsewhere still finds them; package:// is resolved when it can be."""
    from dynid_ros.robot.urdf_source import resolve_mesh_uri

    text = ur5_text()
    text = text.replace("package://example-robot-data/robots/ur_description/meshes/ur5/visual/", "meshes/", 3)
    text = text.replace("package://example-robot-data/robots/ur_description/meshes/ur5/collision/",
                        "file:///nowhere/meshes/", 3)
    text = text.replace("package://example-robot-data", "package://not_installed_description")
    assert "package://example-robot-data" not in text
    path = tmp_path / "robot" / "urdf" / "ur5.urdf"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    model = load_model(urdf=path)
    absolute = "file://" + str(path.parent / "meshes")
    assert absolute in model.urdf_xml and 'filename="meshes/' not in model.urdf_xml
    assert "file:///nowhere/meshes/" in model.urdf_xml and "package://not_installed_description" in model.urdf_xml
    sim = Simulator(path, truth=TRUTH)
    assert sim.mujoco_model.ngeom == 0 and len(sim.joints) == 6
    # resolution, when the meshes are here: ROS_PACKAGE_PATH, the URDF's own package directory
    share = example_robot_urdf(UR5_ERD).parents[3]
    uri = "package://example-robot-data/robots/ur_description/meshes/ur5/collision/base.stl"
    assert resolve_mesh_uri(uri) is None or resolve_mesh_uri(uri).is_file()
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(share.parent))
    assert resolve_mesh_uri(uri) == share / "robots/ur_description/meshes/ur5/collision/base.stl"
    monkeypatch.setenv("ROS_PACKAGE_PATH", "")
    assert resolve_mesh_uri(uri, example_robot_urdf(UR5_ERD).parent) is not None
    assert resolve_mesh_uri("package://not_installed_description/x.stl", path.parent) is None
    assert resolve_mesh_uri("meshes/base.stl", path.parent) is None


def ur5_with_shoulder(tmp_path, joint_type: str, limit: str):
    """The meshed UR5 with its shoulder pan joint retyped to ``joint_type`` and given ``limit``: its model and
    simulator."""
    text = replace_joint(ur5_text(), "shoulder_pan_joint", f'<joint name="shoulder_pan_joint" type="{joint_type}">',
                         limit)
    path = tmp_path / f"ur5_{joint_type}.urdf"
    path.write_text(text)
    return load_model(urdf=path), Simulator(path, truth=TRUTH)


def test_continuous_joint_simulates_past_pi(tmp_path):
    model, sim = ur5_with_shoulder(tmp_path, "continuous", '<limit effort="150.0" velocity="3.15"/>')
    assert model.pin_model.nq == 7 and model.n_dof == 6
    assert np.isinf(model.position_limits[0]).all()
    assert_effort_is_truth_dynamics(sim, np.array([3.0, -1.2, 1.0, -1.0, 0.5, 0.0]))  # past pi on the way


def test_prismatic_joint_simulates(tmp_path):
    model, sim = ur5_with_shoulder(tmp_path, "prismatic",
                                   '<limit effort="500.0" lower="-0.3" upper="0.5" velocity="0.5"/>')
    assert model.kinematics[0].kind == "prismatic"
    np.testing.assert_allclose(model.position_limits[0], [-0.3, 0.5])
    assert_effort_is_truth_dynamics(sim, np.array([0.0, -1.2, 1.0, -1.0, 0.5, 0.0]))


def gripper_text(offset: float) -> str:
    """The UR5 with a two-finger gripper: a revolute finger and a finger that mimics it with an offset."""
    fingers = "".join(f"""
<link name="finger_{side}"><inertial><origin xyz="0.1 0 0.05" rpy="0 0 0"/><mass value="0.8"/>
<inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
<collision><geometry><mesh filename="package://gripper_description/meshes/finger.stl"/></geometry></collision></link>
<joint name="finger_{side}_joint" type="revolute"><parent link="wrist_3_link"/><child link="finger_{side}"/>
<origin xyz="0 0.1 0" rpy="0 0 0"/><axis xyz="1 0 0"/><limit effort="20" lower="-1" upper="1" velocity="1"/>
{mimic}</joint>""" for side, mimic in (("left", ""), ("right", f'<mimic joint="finger_left_joint" multiplier="-1" '
                                                                  f'offset="{offset}"/>')))
    return ur5_text().replace("</robot>", fingers + "</robot>")


def test_gripper_is_locked_with_a_warning_unless_named(caplog):
    path = example_robot_urdf(PANDA_ERD)
    every = [*PANDA_ARM_JOINTS, "panda_finger_joint1", "panda_finger_joint2"]
    with caplog.at_level(logging.WARNING, logger="dynid_ros"):
        model = load_model(urdf=path, available=every)  # the fingers are in the data: still locked
    assert model.joints == PANDA_ARM_JOINTS
    assert model.locked == ("panda_finger_joint1", "panda_finger_joint2")
    assert "panda_finger_joint1, panda_finger_joint2" in caplog.text and "--joints" in caplog.text
    named = load_model(urdf=path, joints=every)
    assert named.joints == tuple(every) and named.locked == ()
    leader = load_model(urdf=path, joints=[*PANDA_ARM_JOINTS, "panda_finger_joint1"])  # finger 2 follows it
    assert leader.joints == tuple(every[:-1]) and leader.followers == ("panda_finger_joint2",)
    assert leader.locked == ()


def test_info_locks_the_panda_fingers(capsys):
    import json

    assert main(["info", "--urdf", str(example_robot_urdf(PANDA_ERD)), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["joints"] == list(PANDA_ARM_JOINTS)
    assert info["locked_joints"] == ["panda_finger_joint1", "panda_finger_joint2"]


def test_mimic_follower_follows_its_locked_leader_in_pinocchio_and_mujoco(tmp_path):
    """The follower sits at multiplier * q_leader + offset in both engines: the gravity torques agree, and
    differ from those of a follower at 0."""
    import mujoco
    import pinocchio as pin

    q = np.array([0.3, -1.0, 1.2, -0.7, 0.9, 0.4])
    torques_by_offset = {}
    for offset in (0.0, 0.8):
        path = tmp_path / f"gripper_{offset}.urdf"
        path.write_text(gripper_text(offset))
        sim = Simulator(path, truth=GroundTruth())
        model = sim.model
        assert model.locked == ("finger_left_joint", "finger_right_joint")
        assert model.locked_positions["finger_right_joint"] == pytest.approx(offset)
        gravity = pin.rnea(model.pin_model, model.pin_model.createData(), q, np.zeros(6), np.zeros(6))
        data = mujoco.MjData(sim.mujoco_model)
        data.qpos[:] = q
        mujoco.mj_forward(sim.mujoco_model, data)
        np.testing.assert_allclose(data.qfrc_bias, gravity, atol=1e-9 * np.abs(gravity).max())
        torques_by_offset[offset] = gravity
    assert np.abs(torques_by_offset[0.8] - torques_by_offset[0.0]).max() > 0.05


@pytest.fixture(scope="module")
def panda_xacro(tmp_path_factory):
    """example-robot-data's meshed Panda as a .urdf.xacro with a tool whose mass is an argument."""
    text = example_robot_urdf(PANDA_ERD).read_text()
    if "xmlns:xacro" not in text:
        text = text.replace("<robot ", '<robot xmlns:xacro="http://www.ros.org/wiki/xacro" ', 1)
    tool = XACRO_TOOL.replace("wrist_3_link", "panda_hand")
    path = tmp_path_factory.mktemp("panda_xacro") / "panda_tool.urdf.xacro"
    path.write_text(text.replace("</robot>", tool))
    return path


def test_identify_takes_a_meshed_xacro_with_arguments(tmp_path, panda_xacro, capsys):
    from support.ros_helpers import simulated_bag

    args = ["--urdf", str(panda_xacro), "--xacro-arg", "tool_mass:=1.25", "--xacro-arg", "prefix:=gripper_"]
    bag = simulated_bag(tmp_path / "bag")  # the shipped Panda: the same joint names, franka_ros2's topic
    assert main(["identify", *args, "--bag", str(bag), "--topic", "/franka/joint_states",
                 "--out", str(tmp_path / "result")]) == 0
    out = capsys.readouterr().out
    assert "locked" in out and "panda_finger_joint1, panda_finger_joint2" in out
    identified = (tmp_path / "result" / URDF_FILE).read_text()
    assert '<link name="gripper_tool"' in identified and "package://example-robot-data" in identified
    tool = load_model(urdf=tmp_path / "result" / URDF_FILE)
    assert tool.joints == PANDA_ARM_JOINTS


@pytest.mark.parametrize(("relative", "n_dof"), [
    ("kinova_description/robots/kinova.urdf", 6),
    ("so_arm_description/urdf/so100.urdf", 6),  # a one-jaw gripper (no branching): driven like a joint
    ("ur_description/urdf/ur3_robot.urdf", 6),
])
def test_more_published_arms_simulate_exactly(relative, n_dof):
    sim = Simulator(example_robot_urdf(relative), truth=GroundTruth(damping=0.1, friction=0.3, armature=0.02))
    assert sim.model.n_dof == n_dof and sim.model.locked == ()
    limits = sim.model.position_limits
    assert_effort_is_truth_dynamics(sim, np.where(np.isfinite(limits).all(axis=1), limits.mean(axis=1), 0.0))


def test_baxter_one_arm_driven_the_rest_locked(caplog):
    """Baxter: a head, two arms, two mimic grippers. By default the head and both arms are identified and the
    grippers locked; driving one arm locks everything else (named in the warning) in both engines."""
    path = example_robot_urdf("baxter_description/urdf/baxter.urdf")
    default = load_model(urdf=path)
    assert default.n_dof == 15 and default.joints[0] == "head_pan"
    assert set(default.locked) == {f"{s}_gripper_{f}_finger_joint" for s in "lr" for f in "lr"}
    left = ("left_s0", "left_s1", "left_e0", "left_e1", "left_w0", "left_w1", "left_w2")
    with caplog.at_level(logging.WARNING, logger="dynid_ros"):
        sim = Simulator(path, truth=TRUTH, joints=left)
    assert sim.joints == left and len(sim.model.locked) == 15 - 7 + 4
    assert "head_pan" in caplog.text and "right_w2" in caplog.text and "r_gripper_r_finger_joint" in caplog.text
    assert sim.mujoco_model.njnt == 7
    # a reference the arm can follow: the truth's torque along it within the effort limits (left_s1 at 85 % of its
    # 50 N m; in 1 s instead of 2 it needs 121 %, and no controller tracks what the drives cannot give)
    q0 = sim.model.position_limits.mean(axis=1)
    _, q, dq, ddq = reference(q0, duration=2.0)
    layout = sim.model.layout_for(FRICTION, armature=True)
    needed = torques(sim.model, layout, sim.truth_parameters(FRICTION, armature=True), q, dq, ddq)
    assert np.all(np.abs(needed).max(axis=0) < 0.9 * sim.model.effort_limits)
    assert_effort_is_truth_dynamics(sim, q0, duration=2.0)


def test_named_fingers_are_driven_on_their_own(tmp_path):
    """--joints naming a mimic follower and its leader: both identified from their own data, both driven in
    MuJoCo without the equality constraint that would fight the controller."""
    every = (*PANDA_ARM_JOINTS, "panda_finger_joint1", "panda_finger_joint2")
    sim = Simulator(example_robot_urdf(PANDA_ERD), truth=TRUTH, joints=every)
    assert sim.joints == every and sim.mujoco_model.neq == 0
    assert_effort_is_truth_dynamics(sim, np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.7, 0.01, 0.01]), tracking=0.5)


def test_a_locked_joint_named_like_a_link_loads():
    """SO-100's gripper joint and link are both named ``gripper``: pinocchio refused to lock it (several frames
    match); the joint is locked with the arm's five joints driven, the link's body kept in the model."""
    model = load_model(urdf=example_robot_urdf("so_arm_description/urdf/so100.urdf"),
                       joints=["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll"])
    assert model.n_dof == 5 and model.locked == ("gripper",)
    assert model.pin_model.existFrame("gripper")  # the link


def test_the_excitation_criterion_does_not_depend_on_the_robots_size():
    """In SI units the base regressor's condition number at random states is 35-60 for a 5-29 kg arm but 6.8e5 for
    the 0.6 kg SO-100 (its inertia columns are 1e-5 of its mass columns); with unit-norm columns it is about 5 for
    all of them, so one threshold fits every robot and a derived config needs no allowance."""
    from dynid_ros.dynamics.base_parameters import random_states
    from dynid_ros.dynamics.conditioning import scaled_condition_number
    from dynid_ros.dynamics.regressor import regressor
    from dynid_ros.excitation.optimizer import MAX_SCALED_CONDITION_NUMBER, condition_base
    from dynid_ros.robot.robot_defaults import derive_config

    robots = {"so100": load_model(urdf=example_robot_urdf("so_arm_description/urdf/so100.urdf"), joints=SO100_ARM),
              "panda": load_model(urdf=example_robot_urdf(PANDA_ERD), joints=list(PANDA_ARM_JOINTS)),
              "ur10": load_model(urdf=example_robot_urdf("ur_description/urdf/ur10_robot.urdf"))}
    plain, scaled = {}, {}
    for name, model in robots.items():
        base = condition_base(model)
        w = base.project(regressor(model, base.layout, *random_states(model, 400, np.random.default_rng(0))))
        plain[name], scaled[name] = np.linalg.cond(w), scaled_condition_number(w)
        assert "max_condition_number" not in derive_config(model)["excitation"]
    assert plain["so100"] > 1e4 * plain["ur10"]  # SI units follow the size
    assert max(scaled.values()) < 2 * min(scaled.values()) < 20 < MAX_SCALED_CONDITION_NUMBER, scaled


@pytest.mark.parametrize("robot", ["so_arm_description/urdf/so100.urdf", "ur_description/urdf/ur10_robot.urdf"])
def test_excite_with_no_config_succeeds_on_a_small_and_a_large_arm(robot, tmp_path, capsys):
    """`dynid excite --urdf F` with no config: a 0.6 kg and a 29 kg arm of example-robot-data (one short start)."""
    out = tmp_path / "traj.yaml"
    args = ["excite", "--urdf", str(example_robot_urdf(robot)), "--starts", "1", "--harmonics", "3",
            "--time-budget", "60", "--no-progress", "--out", str(out)]  # one start, clear of the table
    if "so100" in robot:
        args[3:3] = ["--joints", ",".join(SO100_ARM)]
    assert main(args) == 0, capsys.readouterr().err
    assert out.is_file() and "with unit-norm columns" in capsys.readouterr().out
