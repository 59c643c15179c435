"""The force/torque sensor of the standard simulator (``Simulator(ft_sensor_frame=...)``, ``dynid simulate
--ft-sensor-frame``, ``sim_node`` ``ft_sensor_frame``): a MuJoCo force/torque site at a URDF frame on the last link.
Simulated (offline, and by the nodes: excited, recorded), ``dynid identify-body`` recovers the body beyond the sensor
(the last link and a 1.5 kg payload with an offset CoM) to 2 % in mass (Traversaro et al. 2016 eq. 4, 17, 22)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node
from std_msgs.msg import String

from dynid_ros.cli.main import main
from dynid_ros.data.wrench_io import WRENCH_TOPIC, read_wrenches
from dynid_ros.sim import Simulator

from support.payload_arm import ARM_WITH_SENSOR, BODY_COM, BODY_MASS
from support.ros_helpers import Latest, node_process, status_qos, wait_for, write_test_trajectory

GRAVITY = 9.81


def excitation_file(path, urdf, period: float = 6.0, harmonics: int = 4, fraction: float = 0.6, seed: int = 2):
    """A random Fourier motion of the arm at rest at both ends, using ``fraction`` of its limits."""
    return write_test_trajectory(path, period=period, harmonics=harmonics, fraction=fraction, seed=seed, urdf=urdf)


def test_the_sensor_at_rest_measures_the_weight_beyond_it(tmp_path):
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(ARM_WITH_SENSOR)
    sim = Simulator(urdf, ft_sensor_frame="ft_sensor")
    assert sim.ft_sensor.link == "l4" and sim.ft_sensor.name == "ft_sensor"
    for _ in range(200):
        sim.step(np.zeros(4), np.zeros(4), np.zeros(4))
    assert np.linalg.norm(sim.last_wrench[:3]) == pytest.approx(BODY_MASS * GRAVITY, rel=1e-3)


def test_simulate_record_identify_body(tmp_path, capsys):
    """``dynid simulate --ft-sensor-frame ft_sensor`` -> one bag with joint states and wrenches -> ``dynid
    identify-body``: the body's mass within 2 %, its CoM within 5 mm."""
    urdf, trajectory, bag, out = (tmp_path / name for name in ("arm.urdf", "traj.yaml", "bag", "body"))
    urdf.write_text(ARM_WITH_SENSOR)
    excitation_file(trajectory, urdf)
    assert main(["simulate", "--urdf", str(urdf), "--trajectory", str(trajectory), "--bag", str(bag),
                 "--ft-sensor-frame", "ft_sensor", "--no-progress"]) == 0, capsys.readouterr().err
    t, wrench, frame = read_wrenches(bag, WRENCH_TOPIC)
    assert frame == "ft_sensor" and len(t) > 5000
    assert main(["identify-body", "--bag", str(bag), "--wrench-topic", WRENCH_TOPIC, "--sensor-frame", "ft_sensor",
                 "--urdf", str(urdf), "--out", str(out)]) == 0, capsys.readouterr().err
    found = yaml.safe_load((out / "body.yaml").read_text())
    for fit in (found["body"], found["manifold"]):
        assert abs(fit["mass"] - BODY_MASS) <= 0.02 * BODY_MASS, fit["mass"]
        assert np.linalg.norm(np.array(fit["com"]) - BODY_COM) <= 0.005, fit["com"]
    # simulated again into the same bag (dynid simulate's own): replaced whole
    assert main(["simulate", "--urdf", str(urdf), "--trajectory", str(trajectory), "--bag", str(bag),
                 "--ft-sensor-frame", "ft_sensor", "--no-progress"]) == 0
    assert len(read_wrenches(bag, WRENCH_TOPIC)[0]) == len(t)


def test_sim_node_publishes_the_wrench(spinner, tmp_path):
    """The real sim_node with ``ft_sensor_frame``: WrenchStamped on /ft_sensor/wrench in the sensor's frame, holding
    the start pose: the force is the weight of the body beyond the sensor."""
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(ARM_WITH_SENSOR)
    helper = spinner.add(Node("wrench_listener", context=spinner.context))
    wrenches = Latest(helper, WrenchStamped, WRENCH_TOPIC)
    with node_process("sim_node", {"urdf_path": str(urdf), "ft_sensor_frame": "ft_sensor", "truth": "nominal"},
                      tmp_path / "sim.log") as process:
        wait_for(lambda: len(wrenches.messages) > 500 or process.poll() is not None, timeout=60, what="wrenches")
    assert len(wrenches.messages) > 500, (tmp_path / "sim.log").read_text()
    last = wrenches.last
    assert last.header.frame_id == "ft_sensor" and last.header.stamp.sec > 0
    force = np.array([last.wrench.force.x, last.wrench.force.y, last.wrench.force.z])
    assert np.linalg.norm(force) == pytest.approx(BODY_MASS * GRAVITY, rel=0.01)


def test_sim_node_excited_recorded_identify_body(spinner, tmp_path, capsys):
    """The nodes as separate processes: sim_node (``ft_sensor_frame``), recorder_node (joint states and wrenches),
    excitation_node (topic mode) and orchestrator_node (no identification); ``dynid identify-body`` on the recorded
    bag recovers the body beyond the sensor to 2 % in mass."""
    urdf, trajectory, bag, out = (tmp_path / name for name in ("arm.urdf", "traj.yaml", "bag", "body"))
    urdf.write_text(ARM_WITH_SENSOR)
    excitation_file(trajectory, urdf, period=5.0)
    helper = spinner.add(Node("ft_listener", context=spinner.context))
    orchestrator = Latest(helper, String, "/orchestrator_node/status", status_qos(), as_json=True)
    nodes = [
        ("sim_node", {"urdf_path": str(urdf), "ft_sensor_frame": "ft_sensor", "truth": "nominal"}),
        ("recorder_node", {"bag_path": str(bag), "topics": ["/joint_states", WRENCH_TOPIC]}),
        ("excitation_node", {"urdf_path": str(urdf), "trajectory_file": str(trajectory), "mode": "topic"}),
        ("orchestrator_node", {"settle_time": 0.5, "identify": False, "shutdown_when_done": True}),
    ]
    processes = [node_process(name, values, tmp_path / f"{name}.log") for name, values in nodes]
    running = [p.__enter__() for p in processes]
    try:
        wait_for(lambda: running[-1].poll() is not None or any(p.poll() is not None for p in running[:-1]),
                 timeout=120, what="the orchestrator's own exit")
    finally:
        for p in reversed(processes):
            p.__exit__(None, None, None)
    logs = "\n".join(f"--- {name}\n{(tmp_path / f'{name}.log').read_text()}" for name, _ in nodes)
    assert (orchestrator.last or {}).get("state") == "done", logs
    assert main(["identify-body", "--bag", str(bag), "--wrench-topic", WRENCH_TOPIC, "--sensor-frame", "ft_sensor",
                 "--urdf", str(urdf), "--out", str(out)]) == 0, capsys.readouterr().err + logs
    found = yaml.safe_load((out / "body.yaml").read_text())
    for fit in (found["body"], found["manifold"]):
        assert abs(fit["mass"] - BODY_MASS) <= 0.02 * BODY_MASS, fit["mass"]
