"""A single rigid body from a 6-axis force/torque sensor (Traversaro et al. 2016 eq. 4, 17, 22): the last link of a
simulated arm with a 1.5 kg payload, measured by a MuJoCo force/torque site at the flange, with a sensor offset."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from dynid_ros.cli.main import main
from dynid_ros.data.wrench_io import read_wrenches, write_joint_states_and_wrenches
from dynid_ros.robot.coupling import MotorCoupling
from dynid_ros.sim.coupled_drive import ForceTorqueSite, MotorTruth, simulate_coupled

from support.payload_arm import (
    ARM_WITH_SENSOR,
    BODY_COM,
    BODY_MASS,
    JOINTS,
    SENSOR,
    reference,
)

OFFSET = np.array([0.5, -0.3, 0.2, 0.02, -0.01, 0.015])


@pytest.fixture(scope="module")
def bag(tmp_path_factory):
    """Joint states and the sensor's wrenches (noise 0.05 N / 0.005 N m, a constant offset) in one bag."""
    root = tmp_path_factory.mktemp("ft")
    urdf = root / "arm.urdf"
    urdf.write_text(ARM_WITH_SENSOR)
    direct = MotorCoupling.from_config({"motors": list(JOINTS), "joints": list(JOINTS)})
    truth = MotorTruth(np.full(4, 0.05), np.full(4, 0.1), np.full(4, 0.01), noise=0.02)
    t, q, dq, ddq = reference(8.0, seed=3)
    series = simulate_coupled(ARM_WITH_SENSOR, direct, truth, t, q, dq, ddq, sensor=ForceTorqueSite("l4", SENSOR))
    rng = np.random.default_rng(0)
    wrench = series.info["wrench"] + OFFSET + rng.normal(0.0, 1.0, (len(t), 6)) * np.repeat([0.05, 0.005], 3)
    write_joint_states_and_wrenches(root / "bag", series, t, wrench, "ft_sensor")
    return root, urdf


def test_body_beyond_the_sensor_by_both_solvers(bag, capsys):
    root, urdf = bag
    out = root / "body"
    assert main(["identify-body", "--bag", str(root / "bag"), "--wrench-topic", "/ft_sensor/wrench",
                 "--sensor-frame", "ft_sensor", "--urdf", str(urdf), "--out", str(out)]) == 0, capsys.readouterr().err
    found = yaml.safe_load((out / "body.yaml").read_text())
    for fit in (found["body"], found["manifold"]):
        assert abs(fit["mass"] - BODY_MASS) <= 0.02 * BODY_MASS, fit["mass"]
        assert np.linalg.norm(np.array(fit["com"]) - BODY_COM) <= 0.005, fit["com"]
        assert fit["min_pseudo_inertia_eigenvalue"] >= -1e-9
    np.testing.assert_allclose(found["sensor_offset"], OFFSET, atol=0.05)
    assert "<inertial>" in (out / "body_inertial.xml").read_text()


def test_identify_body_bad_input(bag, capsys):
    root, urdf = bag
    assert main(["identify-body", "--bag", str(root / "bag"), "--wrench-topic", "/ft_sensor/wrench",
                 "--sensor-frame", "tool0", "--urdf", str(urdf), "--out", str(root / "x")]) == 2
    assert "--sensor-frame tool0: not a frame of the robot" in capsys.readouterr().err
    assert main(["identify-body", "--bag", str(root / "bag"), "--wrench-topic", "/wrench", "--sensor-frame",
                 "ft_sensor", "--urdf", str(urdf), "--out", str(root / "y")]) == 2
    assert "no topic /wrench" in capsys.readouterr().err
    assert not (root / "x").exists() and not (root / "y").exists()
    t, wrench, frame = read_wrenches(root / "bag", "/ft_sensor/wrench")
    assert frame == "ft_sensor" and wrench.shape == (t.size, 6)
