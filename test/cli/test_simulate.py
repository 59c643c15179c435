"""``dynid simulate``: a trajectory file in, a rosbag2 out that rosbags and the identification core read."""

from __future__ import annotations

import re

import numpy as np
import pytest
import yaml

from dynid_ros.cli.main import main
from dynid_ros.data.bag_io import read_joint_states
from dynid_ros.dynamics.regressor import torques
from dynid_ros.robot.model import load_model
from dynid_ros.robot.resources import robot_file

from support.paths import FILES
from support.trajectories import write_short_panda_trajectory

PANDA = robot_file("panda", "urdf")
PANDA_CONFIG = robot_file("panda", "config")
FRANKA_STATES = "/franka/joint_states"
"""The Panda config names franka_ros2: its 1 kHz joint_state_broadcaster's topic, what a real Panda's run records."""
PANDA_HOME = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.7])




@pytest.fixture(scope="module")
def trajectory_file(tmp_path_factory):
    return write_short_panda_trajectory(PANDA, tmp_path_factory.mktemp("traj") / "panda_short.yaml")


def test_simulate_writes_a_bag_that_rosbags_and_the_core_read(tmp_path, trajectory_file, capsys):
    from rosbags.highlevel import AnyReader

    bag = tmp_path / "run"
    truth_dir = tmp_path / "truth"
    code = main(["simulate", "--urdf", str(PANDA), "--trajectory", str(trajectory_file), "--bag", str(bag),
                 "--cycles", "2", "--config", str(PANDA_CONFIG), "--seed", "3", "--truth-out", str(truth_dir),
                 "--no-progress"])
    assert code == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "simulated" in out and "tracking error" in out
    with AnyReader([bag]) as reader:
        assert [c.topic for c in reader.connections] == [FRANKA_STATES]
        connections = [c for c in reader.connections if c.topic == FRANKA_STATES]
        assert connections[0].msgtype == "sensor_msgs/msg/JointState"
        messages = list(reader.messages(connections=connections))
        first = reader.deserialize(messages[0][2], connections[0].msgtype)
    assert list(first.name) == [f"panda_joint{i}" for i in range(1, 8)]
    assert len(first.effort) == 7 and len(first.velocity) == 7
    series = read_joint_states(bag, topic=FRANKA_STATES)
    assert len(series) == len(messages)
    duration = series.t[-1] - series.t[0]
    assert 4.0 + 1.0 < duration < 4.0 + 10.0  # approach, 2 periods of 2 s, hold
    assert np.allclose(np.diff(series.t), 1e-3, atol=1e-9)
    # the truth written beside the bag explains the recorded effort (computed here on central differences)
    content = yaml.safe_load((truth_dir / "truth.yaml").read_text())
    delta = np.array(content["parameter_vector"]["values"])
    model = load_model(urdf=PANDA)
    layout = model.layout_for(("viscous", "coulomb", "offset"), armature=True)
    assert content["parameter_vector"]["names"] == layout.names
    ddq = np.gradient(series.velocity, series.t, axis=0)
    residual = series.effort - torques(model, layout, delta, series.position, series.velocity, ddq)
    noise = content["sensor"]["noise"][0]
    assert np.median(np.abs(residual)) < 2 * noise
    assert load_model(urdf=truth_dir / "truth.urdf").joints == model.joints


def test_same_seed_same_bag(tmp_path, trajectory_file):
    args = ["simulate", "--urdf", str(PANDA), "--trajectory", str(trajectory_file), "--config", str(PANDA_CONFIG),
            "--seed", "5", "--no-progress"]
    assert main([*args, "--bag", str(tmp_path / "a")]) == 0
    assert main([*args, "--bag", str(tmp_path / "b")]) == 0
    assert main([*args, "--bag", str(tmp_path / "c"), "--noise", "0"]) == 0
    a, b, c = (read_joint_states(tmp_path / name, topic=FRANKA_STATES) for name in "abc")
    assert np.array_equal(a.effort, b.effort) and np.array_equal(a.position, b.position)
    assert not np.allclose(a.effort, c.effort)


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--noise", "-1", "--noise must be >= 0"),
    ("--cycles", "0", "cycles must be a positive integer"),
    ("--trajectory", "missing.yaml", "no such trajectory file"),
    ("--urdf", "missing.urdf", "no such URDF file"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, trajectory_file, capsys, option, value, message):
    options = {"--urdf": str(PANDA), "--trajectory": str(trajectory_file), "--bag": str(tmp_path / "x"), option: value}
    assert main(["simulate", "--no-progress", *[item for pair in options.items() for item in pair]]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_existing_bag_is_refused(tmp_path, trajectory_file, capsys):
    (tmp_path / "x").mkdir()
    assert main(["simulate", "--urdf", str(PANDA), "--trajectory", str(trajectory_file), "--bag",
                 str(tmp_path / "x"), "--no-progress"]) == 2
    assert "exists already" in capsys.readouterr().err


def test_a_colliding_trajectory_is_refused_in_one_line_before_anything_is_simulated(tmp_path, capsys):
    """A trajectory made elsewhere whose hand goes through the table: exit 2, the pair and the time named, no bag."""
    bag = tmp_path / "x"
    assert main(["simulate", "--urdf", str(PANDA), "--config", str(PANDA_CONFIG), "--trajectory",
                 str(FILES / "panda_colliding_excitation.yaml"), "--bag", str(bag), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "panda_colliding_excitation.yaml: collision in the motion: " in err
    assert re.search(r"panda_\w+ and (panda_\w+|table) intersect \d+\.\d cm deep at t = \d+\.\d{3} s", err), err
    assert not bag.exists()
