"""The launch files run for real with ``launch.LaunchService`` (what ``ros2 launch`` runs) and end by themselves.

Real nodes, real MuJoCo simulation, real bags, real identification; only sim_gazebo.launch.py runs with
stand-ins (no Gazebo here). Each run is shared by the assertions on it (launch status, every process's
exit code, the bag, the identified URDF). The matrix (about 3 minutes on 2 cores, short excitations of
2.5-3 s made by ``dynid excite``, passed as ``trajectory_file``):

| launch file | robot | robot from | mode |
| --- | --- | --- | --- |
| sim_mujoco | panda (shipped) | robot:=panda | topic |
| sim_mujoco | ur5e (shipped) | robot:=ur5e, default start_positions | action |
| sim_mujoco | example-robot-data UR5 (meshes) | urdf_path | action |
| identify (+ sim_node, ros2 topic pub) | example-robot-data UR5 (meshes) | /robot_description topic | topic |
| offline | panda | the bag of the first run | - |
| sim_mujoco, aborting | ur5e started outside its excitation limits | robot:=ur5e | action |
| sim_gazebo (stand-ins) | panda | robot:=panda | action |
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launch_stack import ROOT, ament_prefix, include, require_launch_stack, run_launch
from ros_helpers import assert_physically_consistent, isolate_ros_environment

from robots import UR5_ERD, example_robot_urdf

UR5_JOINTS = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
              "wrist_3_joint")
PANDA_JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))
DYNID_NODES = ("sim_node", "excitation_node", "recorder_node", "identification_node", "orchestrator_node")
RUN_TIMEOUT = 120.0


@pytest.fixture(scope="module")
def launch_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An isolated domain and an AMENT_PREFIX_PATH where dynid_ros is this checkout (see launch_stack)."""
    require_launch_stack()
    isolate_ros_environment()
    old = os.environ.get("AMENT_PREFIX_PATH")
    prefix = ament_prefix(tmp_path_factory.mktemp("ament") / "prefix")
    os.environ["AMENT_PREFIX_PATH"] = os.pathsep.join([str(prefix), old or sys.prefix])  # the venv: ros-jazzy index
    yield dict(os.environ)
    if old is None:
        os.environ.pop("AMENT_PREFIX_PATH", None)
    else:
        os.environ["AMENT_PREFIX_PATH"] = old


def excite(urdf: Path, out: Path, config: Path | None, frequency: float) -> subprocess.Popen:
    """``dynid excite``: a short (1 / frequency s), 3-harmonic trajectory from one start, however long that takes (a
    short wall-time budget fails on a loaded machine)."""
    command = [sys.executable, "-m", "dynid_ros.cli", "excite", "--urdf", str(urdf), "--out", str(out),
               "--frequency", str(frequency), "--harmonics", "3", "--starts", "1", "--time-budget", "90",
               "--no-progress", *(["--config", str(config)] if config else [])]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def trajectories(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Trajectories made by ``dynid excite`` for the Panda, the UR5e (their configs) and the meshed UR5."""
    folder = tmp_path_factory.mktemp("trajectories")
    jobs = {"panda": (ROOT / "urdf" / "panda.urdf", ROOT / "config" / "panda.yaml", 0.33),
            "ur5e": (ROOT / "urdf" / "ur5e.urdf", ROOT / "config" / "ur5e.yaml", 0.4),
            "ur5": (example_robot_urdf(UR5_ERD), None, 0.4)}
    running = {name: excite(urdf, folder / f"{name}.yaml", config, f) for name, (urdf, config, f) in jobs.items()}
    for process in running.values():
        output, _ = process.communicate(timeout=120)
        assert process.returncode == 0, output
    return {name: folder / f"{name}.yaml" for name in jobs}


def assert_job_done(run: object, processes: int) -> None:
    """The launch ended by itself with status 0 after orchestrator_node's ``done``; every process exited 0."""
    assert run.code == 0, run.tail()
    assert "[orchestrator_node]: done: " in run.output_of("orchestrator_node"), run.tail()
    assert len(run.exits) == processes, run.exits
    assert all(code == 0 for code in run.exits.values()), f"{run.exits}\n{run.tail()}"


def assert_result(bag: Path, out: Path, joints: tuple[str, ...], trajectory: Path) -> None:
    """The bag holds the whole excitation of ``joints``; the identified URDF is physically consistent."""
    import yaml

    from dynid_ros.data.bag_io import read_joint_states

    series = read_joint_states(bag)
    assert tuple(series.names) == joints
    period = yaml.safe_load(trajectory.read_text())["period_s"]
    assert series.t[-1] - series.t[0] >= period, (series.t[-1] - series.t[0], period)
    assert len(series.t) >= 500 * period  # 1 kHz simulation, some loss allowed on a loaded machine
    report = json.loads((out / "report.json").read_text())
    assert report["feasible"] is True and tuple(report["joints"]) == joints
    assert report["relative_error"] < 0.1  # torque prediction on the run itself (simulated sensor noise)
    assert_physically_consistent((out / "identified.urdf").read_text())


@pytest.fixture(scope="module")
def panda_run(launch_env, trajectories, tmp_path_factory):
    folder = tmp_path_factory.mktemp("panda")
    run = run_launch([include("sim_mujoco.launch.py", {
        "robot": "panda", "mode": "topic", "trajectory_file": str(trajectories["panda"]),
        "bag_path": str(folder / "bag"), "output_dir": str(folder / "result")})], RUN_TIMEOUT)
    return run, folder


def test_sim_mujoco_panda_topic_mode_runs_to_its_end(panda_run, trajectories):
    run, folder = panda_run
    assert_job_done(run, processes=5)
    assert_result(folder / "bag", folder / "result", PANDA_JOINTS, trajectories["panda"])


def test_sim_mujoco_ur5e_action_mode_starts_inside_its_limits(launch_env, trajectories, tmp_path):
    """Default start_positions: the middle of the config's excitation limits (shoulder_lift_joint -1.575)."""
    run = run_launch([include("sim_mujoco.launch.py", {
        "robot": "ur5e", "mode": "action", "trajectory_file": str(trajectories["ur5e"]),
        "bag_path": str(tmp_path / "bag"), "output_dir": str(tmp_path / "result")})], RUN_TIMEOUT)
    assert_job_done(run, processes=5)
    assert_result(tmp_path / "bag", tmp_path / "result", UR5_JOINTS, trajectories["ur5e"])


def test_sim_mujoco_meshed_urdf_by_path_action_mode(launch_env, trajectories, tmp_path):
    """example-robot-data's UR5 (package:// meshes, no shipped config: robot:='')."""
    run = run_launch([include("sim_mujoco.launch.py", {
        "robot": "", "urdf_path": str(example_robot_urdf(UR5_ERD)), "mode": "action",
        "trajectory_file": str(trajectories["ur5"]), "bag_path": str(tmp_path / "bag"),
        "output_dir": str(tmp_path / "result")})], RUN_TIMEOUT)
    assert_job_done(run, processes=5)
    assert_result(tmp_path / "bag", tmp_path / "result", UR5_JOINTS, trajectories["ur5"])
    assert "package://" in (tmp_path / "result" / "identified.urdf").read_text()  # the user's meshes are kept


def test_identify_launch_reads_robot_description_topic_topic_mode(launch_env, trajectories, tmp_path):
    """identify.launch.py as a ROS user runs it beside a robot: the meshed UR5 published on /robot_description
    (transient local) by ``ros2 topic pub`` -- a stand-in for robot_state_publisher, which has no wheel --
    and simulated by sim_node reading the same topic."""
    from launch.actions import ExecuteProcess
    from launch_ros.actions import Node

    text = example_robot_urdf(UR5_ERD).read_text()
    ros2 = str(Path(sys.executable).parent / "ros2")
    publisher = ExecuteProcess(name="robot_description_pub", cmd=[
        ros2, "topic", "pub", "--qos-durability", "transient_local", "--qos-reliability", "reliable",
        "--rate", "0.2", "/robot_description", "std_msgs/msg/String", json.dumps({"data": text})])
    sim = Node(package="dynid_ros", executable="sim_node", name="sim_node", output="screen",
               parameters=[{"robot_description_topic": "/robot_description", "robot_description_timeout": 30.0}])
    run = run_launch([publisher, sim, include("identify.launch.py", {
        "robot": "", "robot_description_topic": "/robot_description", "mode": "topic",
        "trajectory_file": str(trajectories["ur5"]), "bag_path": str(tmp_path / "bag"),
        "output_dir": str(tmp_path / "result")})], RUN_TIMEOUT)
    dynid = {name: code for name, code in run.exits.items() if not name.startswith("robot_description_pub")}
    assert run.code == 0, run.tail()
    assert len(dynid) == 5 and all(code == 0 for code in dynid.values()), f"{run.exits}\n{run.tail()}"
    assert_result(tmp_path / "bag", tmp_path / "result", UR5_JOINTS, trajectories["ur5"])


def test_offline_launch_identifies_the_recorded_bag_and_ends(panda_run, tmp_path):
    _, folder = panda_run
    run = run_launch([include("offline.launch.py", {
        "robot": "panda", "bag_path": str(folder / "bag"), "output_dir": str(tmp_path / "result")})], RUN_TIMEOUT)
    assert run.code == 0, run.tail()
    assert list(run.exits.values()) == [0], run.exits
    assert ", wrote " in run.output_of("identification_node"), run.tail()
    assert_physically_consistent((tmp_path / "result" / "identified.urdf").read_text())


def test_offline_launch_fails_with_the_reason(launch_env, tmp_path):
    run = run_launch([include("offline.launch.py", {
        "robot": "panda", "bag_path": str(tmp_path / "no_bag"), "output_dir": str(tmp_path / "result")})], 60)
    assert run.code == 1, run.tail()
    assert not (tmp_path / "result").exists()


def test_an_aborted_run_ends_the_launch_with_status_1(launch_env, trajectories, tmp_path):
    """The UR5e started at all zeros (shoulder_lift_joint outside [-2.95, -0.2]): the excitation is refused, the
    orchestrator aborts, the launch ends by itself with status 1; nothing is identified."""
    run = run_launch([include("sim_mujoco.launch.py", {
        "robot": "ur5e", "mode": "action", "start_positions": "0 0 0 0 0 0",
        "trajectory_file": str(trajectories["ur5e"]), "bag_path": str(tmp_path / "bag"),
        "output_dir": str(tmp_path / "result")})], RUN_TIMEOUT)
    assert run.code == 1, run.tail()
    assert "outside the excitation limits" in run.output_of("orchestrator_node"), run.tail()
    assert not (tmp_path / "result" / "identified.urdf").exists()
